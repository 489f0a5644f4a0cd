"""`tosa-vk doctor`: what this machine offers tosa_vk, and each problem with the command that fixes it (the habit of
`flutter doctor`): Python and tosa_vk, the Vulkan loader, every device with its class and the kernel families it
takes, the GLSL compilers and the built-in kernels, the caches, the optional extras. Exit code 1 when no Vulkan
device is usable (the reference backend still runs), else 0. `--json`: the same facts, schema SCHEMA (keys are only
ever added). Nothing heavy is imported: extras are found by importlib.util.find_spec and importlib.metadata, and no
cache folder is created or changed."""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import stat
import sys
import time
from pathlib import Path
from typing import Any

from ...errors import TosaError
from ..torch_export import INSTALL as TORCH_INSTALL  # the CPU build of torch first: PyPI's default pulls CUDA

SCHEMA = 1
ERROR, WARNING = "error", "warning"  # an error: Vulkan is not usable (exit 1); a warning: something is missing

# The extras: (name, what it is for, what must be found: top-level modules and bin:executables (on PATH or beside
# this Python), the distribution whose version is shown, the command that installs it)
EXTRAS: tuple[tuple[str, str, tuple[str, ...], str, str], ...] = (
    ("torch", "tosa_vk.from_torch (PyTorch -> ExecuTorch -> TOSA)", ("torch", "executorch"), "torch",
     TORCH_INSTALL),
    ("mlir", "TOSA MLIR in (.mlir / .mlirbc): tosa-tools' tosa-opt", ("bin:tosa-opt",), "tosa-tools",
     "pip install 'tosa_vk[mlir]'"),
    ("tflite", "tosa-vk import model.tflite", ("tflite", "bin:tosa-converter-for-tflite", "bin:tosa-opt"), "tflite",
     "pip install 'tosa_vk[tflite]'"),
    ("ray", "tosa_vk.tools.ray.Predictor (Ray Data)", ("ray",), "ray", "pip install 'tosa_vk[ray]'"),
    ("iree", "tosa-vk bench --backends iree_vulkan,iree_cpu", ("iree",), "iree-base-runtime",
     "pip install 'tosa_vk[iree]'"),
    ("explorer", "Model Explorer for profile / compare --node-data", ("model_explorer",), "ai-edge-model-explorer",
     "pip install 'tosa_vk[explorer]'"),
    ("bench plots", "tosa-vk bench's results.png", ("matplotlib",), "matplotlib", "pip install 'tosa_vk[bench]'"),
    ("model-converter", "Arm ML SDK: TOSA -> VGF (bench anchor, interop tests)", ("model_converter",),
     "ai-ml-sdk-model-converter", "pip install ai-ml-sdk-model-converter"),
    ("scenario-runner", "Arm ML SDK: runs VGF files (bench anchor, interop tests)", ("scenario_runner_py",),
     "ai-ml-sdk-scenario-runner", "pip install ai-ml-sdk-scenario-runner ai-ml-sdk-vgf-library"),
    ("emulation layer", "Arm ML SDK: VK_ARM_data_graph on any Vulkan device", ("emulation_layer",),
     "ai-ml-emulation-layer-for-vulkan", "pip install ai-ml-emulation-layer-for-vulkan"),
    ("docs", "the documentation site (bash scripts/docs.sh)", ("mkdocs",), "mkdocs", "pip install 'tosa_vk[docs]'"),
)  # fmt: skip


def _problem(severity: str, what: str, detail: str, fix: str) -> dict[str, str]:
    """One problem as doctor reports it: ERROR (Vulkan is not usable) or WARNING, what, the detail, the fix."""
    return {"severity": severity, "what": what, "detail": detail, "fix": fix}


def _found(needed: str) -> bool:
    """Whether a top-level module can be imported, without importing it (a finder that raises: not found), or a
    bin:executable is there."""
    from ...paths import find_tool

    if needed.startswith("bin:"):
        return find_tool(needed.removeprefix("bin:")) is not None
    try:
        return importlib.util.find_spec(needed) is not None
    except (ImportError, ValueError):
        return False


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def extras() -> list[dict[str, Any]]:
    rows = []
    for name, purpose, needs, dist, fix in EXTRAS:
        missing = [m for m in needs if not _found(m)]
        rows.append({"name": name, "for": purpose, "installed": not missing, "missing": missing,
                     "version": None if missing else _version(dist), "install": fix})  # fmt: skip
    return rows


def vulkan_facts(problems: list[dict]) -> tuple[dict, list[dict]]:
    """The loader (loader.loader_facts) and the devices this process may use: each with its class and the kernel
    family each operator takes on it (what `load` compiles for: TOSA_VK_TARGET and TOSA_VK_DISABLE applied)."""
    from ... import device_class
    from ...vulkan import loader

    facts = loader.loader_facts()
    if not facts["found"]:
        problems.append(_problem(ERROR, "no Vulkan loader", f"{loader.library()} cannot be opened", loader.install()))
        return facts, []
    from ...vulkan import device as vk_device

    try:
        found = vk_device.enumerate_devices(all_devices=True)
    except TosaError as err:  # vkCreateInstance failed (its error, the context of ours): a loader, no driver
        cause = err.__context__
        detail = loader.driver_missing(cause) if cause is not None else str(err)
        problems.append(_problem(ERROR, "no Vulkan driver", detail, loader.install()))
        return facts, []
    rows: list[dict] = []
    try:
        devices = vk_device.visible(found)
        chosen = vk_device.select(devices).index if devices else None
        forced, disabled = device_class.forced(), device_class.disabled()
    except TosaError as err:  # TOSA_VK_VISIBLE_DEVICES / TOSA_VK_DEVICE / TOSA_VK_TARGET / TOSA_VK_DISABLE
        problems.append(
            _problem(
                ERROR,
                "the device settings are wrong",
                str(err),
                "correct or unset the variable it names (tosa-vk devices lists the devices)",
            )
        )
        devices, chosen, forced, disabled = [], None, None, frozenset()
    for d in devices:
        target = d.target.with_class(forced, disabled)
        rows.append({
            "index": d.index, "name": d.name, "kind": d.kind, "uuid": d.uuid, "driver": d.driver,
            "api_version": d.api_version, "device_class": d.device_class, "compiles_for": target.device_class,
            "default": d.index == chosen, "subgroup_size": d.subgroup_size,
            "kernel_features": [f for f in device_class.FEATURES if target.uses(f)],
            "families": {op: target.family(op) for op in device_class.OPERATORS},
        })  # fmt: skip
    if not found:
        problems.append(_problem(ERROR, "no Vulkan device", "the loader found no device", loader.install()))
    elif not devices and not problems:
        problems.append(
            _problem(
                ERROR,
                "no Vulkan device visible",
                f"{vk_device.VISIBLE}={os.environ.get(vk_device.VISIBLE)!r} hides every device",
                f"unset {vk_device.VISIBLE} or name a device in it (tosa-vk devices)",
            )
        )
    return facts, rows


def compilers(problems: list[dict]) -> dict:
    """The GLSL compilers (glslc on PATH, the package's glslang) and the built-in kernels shipped compiled."""
    from ...vulkan import builtin, glsl_compiler

    found = [{"kind": c.kind, "path": c.exe, "version": c.version.splitlines()[0]}
             for c in (glsl_compiler.glslc(), glsl_compiler.glslang()) if c is not None]  # fmt: skip
    library = builtin.library().info()
    if not found:
        shipped = library.get("modules", 0)
        problems.append(
            _problem(
                WARNING if shipped else ERROR,
                "no GLSL compiler",
                f"only the {shipped} built-in kernels run (no fused kernels, no custom ops' GLSL)"
                if shipped
                else "and no built-in kernels: no kernel can be compiled",
                glsl_compiler.GET_ONE,
            )
        )
    return {"glsl": found, "builtin_kernels": library}


def _folder(path: Path, suffixes: tuple[str, ...]) -> dict:
    """A cache folder as it is: never created or changed here."""
    from ...store.cache_files import untrusted

    row: dict[str, Any] = {"path": str(path), "exists": path.is_dir(), "entries": 0, "bytes": 0, "mode": None,
                           "trusted": not untrusted(path), "why_not": untrusted(path) or None}  # fmt: skip
    if row["exists"]:
        row["mode"] = f"{stat.S_IMODE(path.stat().st_mode):04o}"
        try:
            with os.scandir(path) as entries:
                for e in entries:
                    if e.name.endswith(suffixes) and e.is_file(follow_symlinks=False):
                        row["entries"] += 1
                        row["bytes"] += e.stat(follow_symlinks=False).st_size
        except OSError as err:
            row["why_not"] = row["why_not"] or f"it cannot be read ({err.strerror})"
    return row


def caches(problems: list[dict]) -> dict:
    """$TOSA_VK_CACHE: its root, the program cache (with its budget) and the SPIR-V cache."""
    from ...paths import cache_root
    from ...store import program_cache
    from ...store.cache_files import RULE
    from ...vulkan.shaders import default_cache_dir

    root = cache_root()
    folders = {"root": _folder(root, ()), "programs": _folder(program_cache.default_dir(), (program_cache.SUFFIX,)),
               "spirv": _folder(default_cache_dir(), (".spv",))}  # fmt: skip
    for name, row in folders.items():
        if row["why_not"]:
            fix = (f"chmod go-w {row['path']}" if "may write" in row["why_not"]
                   else f"remove or move {row['path']}, or set TOSA_VK_CACHE to a folder of your own")  # fmt: skip
            problems.append(
                _problem(WARNING, f"the {name} cache is not used", f"{row['path']}: {row['why_not']} ({RULE})", fix)
            )
    ancestor = next((p for p in (root, *root.parents) if p.exists()), None)
    if ancestor is not None and not os.access(ancestor, os.W_OK):
        problems.append(
            _problem(
                WARNING,
                "the cache cannot be written",
                f"{ancestor} is not writable by this user",
                "set TOSA_VK_CACHE to a folder of your own",
            )
        )
    return {"variable": "TOSA_VK_CACHE", "budget": program_cache.budget_from_env(), **folders}


def collect() -> dict:
    """Every fact doctor reports, with the problems found and how long it took."""
    from ... import __version__

    start = time.perf_counter()
    problems: list[dict] = []
    loader, devices = vulkan_facts(problems)
    report = {
        "schema": SCHEMA,
        "python": {"version": sys.version.split()[0], "executable": sys.executable},
        "tosa_vk": {"version": __version__, "location": str(Path(__file__).resolve().parents[2])},
        "vulkan_loader": loader,
        "devices": devices,
        "compilers": compilers(problems),
        "caches": caches(problems),
        "extras": extras(),
        "problems": problems,
        "usable": bool(devices) and not any(p["severity"] == ERROR for p in problems),
    }
    report["elapsed_ms"] = round((time.perf_counter() - start) * 1e3, 1)
    return report


def _mark(ok: bool | None) -> str:
    return {True: "[ok]", False: "[xx]", None: "[!!]"}[ok]


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def render(r: dict) -> str:
    lines = [f"{_mark(True)} Python {r['python']['version']} ({r['python']['executable']})",
             f"{_mark(True)} tosa_vk {r['tosa_vk']['version']} ({r['tosa_vk']['location']})"]  # fmt: skip
    lo = r["vulkan_loader"]
    if lo["found"]:
        lines.append(f"{_mark(True)} Vulkan loader {lo['version']} ({lo['library'] or 'found'}; vulkan package "
                     f"{lo['package']})")  # fmt: skip
    else:
        lines.append(f"{_mark(False)} Vulkan loader: not found")
    lines.append(f"{_mark(bool(r['devices']))} Vulkan devices: {len(r['devices'])}")
    for d in r["devices"]:
        forced = f", compiles for {d['compiles_for']}" if d["compiles_for"] != d["device_class"] else ""
        lines.append(f"    {'*' if d['default'] else ' '} #{d['index']} {d['name']} ({d['kind']}, Vulkan "
                     f"{d['api_version']}, class {d['device_class']}{forced}, driver {d['driver']})")  # fmt: skip
        lines.append("        kernels: " + ", ".join(f"{op} {fam}" for op, fam in d["families"].items())
                     + f"; features: {','.join(d['kernel_features']) or '-'}")  # fmt: skip
    c = r["compilers"]
    glsl = "; ".join(f"{g['kind']} {g['version']} ({g['path']})" for g in c["glsl"]) or "none"
    lines.append(f"{_mark(bool(c['glsl']) or None)} GLSL compilers: {glsl}")
    lines.append(f"     built-in kernels: {c['builtin_kernels'].get('modules', 0)} ({c['builtin_kernels']['path']})")
    ca = r["caches"]
    ok = all(ca[k]["trusted"] for k in ("root", "programs", "spirv"))
    lines.append(f"{_mark(ok or None)} caches ($TOSA_VK_CACHE: {ca['root']['path']}, mode {ca['root']['mode'] or '-'})")
    lines.append(f"     compiled models: {ca['programs']['entries']} in {ca['programs']['path']} "
                 f"({_mib(ca['programs']['bytes'])} of {_mib(ca['budget'])})")  # fmt: skip
    lines.append(f"     SPIR-V modules:  {ca['spirv']['entries']} in {ca['spirv']['path']} "
                 f"({_mib(ca['spirv']['bytes'])})")  # fmt: skip
    have = [e for e in r["extras"] if e["installed"]]
    lacking = [e for e in r["extras"] if not e["installed"]]
    lines.append(f"{_mark(not lacking or None)} extras: "
                 + (", ".join(f"{e['name']} {e['version'] or ''}".rstrip() for e in have) or "none"))  # fmt: skip
    for e in lacking:
        lines.append(f"     not installed: {e['name']} ({e['for']}): {e['install']}")
    if r["problems"]:
        lines.append("")
        for p in r["problems"]:
            lines.append(f"{p['severity']}: {p['what']}: {p['detail']}")
            lines.append(f"    fix: {p['fix']}")
    verdict = "Vulkan is usable" if r["usable"] else "no Vulkan device is usable (the reference backend runs)"
    lines.append(f"\n{verdict}; doctor took {r['elapsed_ms']:.0f} ms")
    return "\n".join(lines)


def cmd_doctor(args) -> int:
    report = collect()
    print(json.dumps(report, indent=1) if args.json else render(report))
    return 0 if report["usable"] else 1


def doctor_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help=f"machine-readable output (schema {SCHEMA})")
