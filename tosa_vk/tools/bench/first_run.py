"""One first run in a process of its own: `python -m tosa_vk.tools.bench.first_run model.tosa feeds.npz` loads the model
on Vulkan, runs it once and prints JSON {"seconds": load + first run, "import_seconds": importing tosa_vk, "cached":
whether the program cache had it}. The bench runs it with TOSA_VK_CACHE and MESA_SHADER_CACHE_DIR pointed at
folders of its own: empty for "cold", then again for "warm process" (Mesa reads its cache when the driver loads,
so only a new process sees either state)."""

from __future__ import annotations

import json
import sys
import time


def main(argv: list[str]) -> int:
    model, feeds_file = argv
    t = time.perf_counter()
    import numpy as np

    import tosa_vk

    imported = time.perf_counter() - t
    with np.load(feeds_file) as data:
        feeds = {name: data[name] for name in data.files}
    t = time.perf_counter()
    with tosa_vk.load(model, backend="vulkan") as m:
        m.run(feeds)
        seconds = time.perf_counter() - t
        print(json.dumps({"seconds": seconds, "import_seconds": imported, "cached": bool(getattr(m, "cached", 0))}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
