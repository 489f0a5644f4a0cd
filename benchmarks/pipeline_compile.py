"""What the driver's compiler costs per kernel family: every shader variant of the model graphs (the shipped
ExecuTorch exports and the Builder-made ones of `tosa-vk bench --built`) made into a compute pipeline one at a time
in a new process whose Mesa shader cache is empty (lavapipe compiles LLVM at vkCreateComputePipelines), timed per
pipeline, summed by shader family. Issue 17's measurement of where cold-start time goes.

    .venv/bin/python benchmarks/pipeline_compile.py [--fuse 0|1] [models.tosa ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def measure(paths: list[str], fuse: bool) -> list[dict]:
    """In this process (Mesa's cache as the environment says): one record per distinct pipeline."""
    import tosa_vk
    from tosa_vk.program import Kernel, walk
    from tosa_vk.vulkan import Device
    from tosa_vk.vulkan.pipelines import Pipelines, kernel_layout
    from tosa_vk.vulkan.shaders import ShaderCache
    from tosa_vk.vulkan.variant import variant_of

    device, shaders, records, seen = Device(), ShaderCache(), [], set()
    pipelines = Pipelines(device)
    for path in paths:
        program = tosa_vk.compile(tosa_vk.load_graph(path), device.info.target, fuse=fuse)
        for k in (s for s in walk(program.steps) if isinstance(s, Kernel)):
            spirv = shaders.get(variant_of(k))
            key = (spirv, kernel_layout(k), len(k.push_constants))
            if key in seen:
                continue
            seen.add(key)
            t = time.perf_counter()
            pipelines.get(spirv, len(k.bindings), len(k.push_constants), kernel_layout(k), k.entry)
            ms = (time.perf_counter() - t) * 1e3
            records.append({"model": Path(path).parent.name, "family": k.shader, "ms": ms, "spirv_bytes": len(spirv)})
    pipelines.close()
    device.close()
    return records


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*")
    ap.add_argument("--fuse", type=int, default=1)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(measure(args.models, bool(args.fuse))))
        return 0
    paths = args.models
    if not paths:
        from tosa_vk.tools.bench import graphs

        built = graphs.write(tempfile.mkdtemp(prefix="tosa_vk_graphs_"))
        paths = [str(p) for p in sorted((ROOT / "resources" / "models").glob("*/model.tosa"))] + list(map(str, built))
    with tempfile.TemporaryDirectory() as mesa:
        env = {**os.environ, "MESA_SHADER_CACHE_DIR": mesa}
        cmd = [sys.executable, __file__, "--worker", "--fuse", str(args.fuse), *paths]
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    records = json.loads(done.stdout)
    families: dict[str, list[float]] = defaultdict(list)
    models: dict[str, list[float]] = defaultdict(list)
    for r in records:
        families[r["family"]].append(r["ms"])
        models[r["model"]].append(r["ms"])
    print(f"{len(records)} distinct pipelines, {sum(r['ms'] for r in records) / 1e3:.2f} s of vkCreateComputePipelines"
          " (one at a time, empty Mesa cache)\n")  # fmt: skip
    print("| kernel family | pipelines | total ms | mean ms | max ms |\n|---|---:|---:|---:|---:|")
    for family, ms in sorted(families.items(), key=lambda kv: -sum(kv[1])):
        print(f"| {family} | {len(ms)} | {sum(ms):.0f} | {sum(ms) / len(ms):.0f} | {max(ms):.0f} |")
    print("\n| model (pipelines not shared with an earlier one) | pipelines | total ms |\n|---|---:|---:|")
    for model, ms in models.items():
        print(f"| {model} | {len(ms)} | {sum(ms):.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
