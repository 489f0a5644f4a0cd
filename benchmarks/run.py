"""The tosa_vk benchmark suite; the same engine as `tosa-vk bench` (the installed package tosa_vk.tools.bench).

.venv/bin/python benchmarks/run.py --suite ops --quick          # or: python -m benchmarks.run ...
.venv/bin/python benchmarks/run.py resources/models/resnet_int8/model.tosa --device 0 --out results/
"""

from __future__ import annotations

import sys

from tosa_vk.tools.bench import main

if __name__ == "__main__":
    sys.exit(main())
