"""The tosa_vk benchmark suite; the same engine as `tosa-vk bench` (tosa_vk/bench.py), for a source checkout.

    python benchmarks/run.py --suite ops --quick
    python benchmarks/run.py resources/models/resnet_int8/model.tosa --device 0 --out results/
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tosa_vk.bench import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
