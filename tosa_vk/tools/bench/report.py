"""The report: its environment header (machine, packages, Vulkan device and driver) and its outputs, results.json
(every sample), results.md (the two tables `tosa-vk bench` prints) and results.png (when matplotlib is there)."""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ...store.files import write_atomic
from .runners import BACKENDS, LABELS, short


def environment(device) -> dict[str, Any]:
    from importlib import metadata

    import tosa_vk

    machine = {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
    }
    env: dict[str, Any] = {"machine": machine, "packages": {"tosa_vk": tosa_vk.__version__}}
    for dist in (
        "numpy",
        "ml_dtypes",
        "vulkan",
        "tosa-tools",
        "matplotlib",
        "ai-ml-sdk-model-converter",
        "ai-ml-sdk-vgf-library",
        "ai-ml-sdk-scenario-runner",
        "ai-ml-emulation-layer-for-vulkan",
        "iree-base-compiler",
        "iree-base-runtime",
    ):
        try:
            env["packages"][dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            env["packages"][dist] = None
    src, dst = np.ones(32 << 20, np.uint8), np.empty(32 << 20, np.uint8)
    copies = []
    for _ in range(5):
        t = time.perf_counter()
        np.copyto(dst, src)
        copies.append(time.perf_counter() - t)
    env["machine"]["memcpy_GBps"] = 2 * src.nbytes / min(copies) / 1e9  # bytes read + written, best of 5
    try:
        from ...vulkan import enumerate_devices, select
        from ...vulkan.shaders import glslc_version

        devices = enumerate_devices()
        chosen = select(devices, device)
        env["device"] = {
            **{
                k: getattr(chosen, k)
                for k in (
                    "index",
                    "name",
                    "type",
                    "api_version",
                    "driver_version",
                    "vendor_id",
                    "device_id",
                    "subgroup_size",
                )
            },
            **_driver(chosen.index),
            "features": chosen.features,
        }
        env["devices"] = [d.name for d in devices]
        env["packages"]["glslc"] = glslc_version().splitlines()[0]
    except Exception as err:  # noqa: BLE001
        env["device"] = {"error": short(err)}
    return env


def _driver(index: int) -> dict:
    """VkPhysicalDeviceDriverProperties of device `index`: e.g. llvmpipe, "Mesa 22.3.6 (LLVM 15.0.6)"."""
    import vulkan as vk

    from ...vulkan.device import create_instance

    instance, _ = create_instance()
    try:
        drv = vk.VkPhysicalDeviceDriverProperties(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES)
        props = vk.VkPhysicalDeviceProperties2(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, pNext=drv)
        vk.vkGetPhysicalDeviceProperties2(vk.vkEnumeratePhysicalDevices(instance)[index], props)
        return {
            "driver_name": vk.ffi.string(drv.driverName).decode(),
            "driver_info": vk.ffi.string(drv.driverInfo).decode(),
        }
    finally:
        vk.vkDestroyInstance(instance, None)


def _ms(stats: dict) -> str:
    return f"{stats['median'] * 1e3:.3g} ({stats['min'] * 1e3:.3g}–{stats['max'] * 1e3:.3g})" if stats else "—"


def cell(res: dict | None) -> str:
    if not res or res.get("status") != "ok":
        return "—"
    return _ms(res["wall"]) + ("" if res.get("ok", True) else " ✗")


def markdown(report: dict) -> str:
    s, env = report["settings"], report["environment"]
    dev = env.get("device", {})
    lines = [
        f"tosa_vk benchmark, {report['created']}, {dev.get('name', '?')} ("
        f"{dev.get('driver_info', '?')}), {env['machine']['processor']} x{env['machine']['cpus']} "
        f"(memcpy {env['machine'].get('memcpy_GBps', 0):.1f} GB/s); "
        f"median (min–max) of {s['repeats']} interleaved runs, ms. "
        f"Ratios: anchor median / tosa_vk Vulkan wall median (> 1: tosa_vk faster). ✗: outputs differ from the "
        f"reference backend beyond tolerance.",
        "",
        "| case | Vulkan wall | Vulkan device | tosa_vk reference | tosa_reference_model | numpy | Arm SDK | "
        "x refmodel | x numpy | x Arm SDK | ref x refmodel |" + _iree_cells(report, None),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + "---:|" * 4 * bool(_iree_cells(report, None)),
    ]
    notes = []
    for row in report["cases"]:
        r = row["results"]
        if "error" in row:
            notes.append(f"{row['case']}: could not build: {row['error']}")
            continue
        vk = r.get("vulkan", {})
        base = vk.get("wall", {}).get("median") if vk.get("status") == "ok" else None

        def ratio(anchor, over=base, r=r):
            a = r.get(anchor, {})
            med = a.get("wall", {}).get("median") if a.get("status") == "ok" else None
            return f"{med / over:.2f}" if med and over else "—"

        ref = r.get("reference", {})
        ref_med = ref.get("wall", {}).get("median") if ref.get("status") == "ok" else None
        dev_cell = _ms(vk.get("device", {})) if vk.get("status") == "ok" else "—"
        lines.append(
            f"| {row['case']} | {cell(vk)} | {dev_cell} | {cell(ref)} | {cell(r.get('refmodel'))} | "
            f"{cell(r.get('numpy'))} | {cell(r.get('arm_sdk'))} | {ratio('refmodel')} | "
            f"{ratio('numpy')} | {ratio('arm_sdk')} | {ratio('refmodel', ref_med)} |" + _iree_cells(report, r, base)
        )
        for name, res in r.items():
            if res.get("status") != "ok" and not (name == "numpy" and "numpy equivalent" in res.get("note", "")):
                notes.append(f"{row['case']} / {name}: {res['status']}: {res.get('note', '')}")
            elif res.get("status") == "ok" and not res.get("ok", True):
                notes.append(
                    f"{row['case']} / {name}: max |diff| {res.get('max_abs_diff')} vs reference {res.get('why', '')}"
                )
    lines += [
        "",
        "| case | Vulkan first run cold / warm process / warm in-process | reference first | refmodel first | "
        "Arm SDK first (convert + load + run) | Vulkan peak RSS | Vulkan kernels / host ops | Vulkan GB/s | "
        "max abs diff vs reference |" + _iree_cells(report, None, first=True),
        "|---|---:|---:|---:|---:|---:|---:|---:|---|" + "---|" * bool(_iree_cells(report, None)),
    ]
    for row in report["cases"]:
        r = row["results"]
        if "error" in row:
            continue
        vk = r.get("vulkan", {})

        def first(name, r=r):
            res = r.get(name, {})
            return f"{res['first_run_s'] * 1e3:.0f} ms" if res.get("status") == "ok" else "—"

        cold = "".join(f"{vk[k] * 1e3:.0f} / " for k in ("first_run_cold_s", "first_run_warm_process_s") if k in vk)
        mem = vk.get("peak_mem", {}).get("bytes")
        place = vk.get("placement")
        dev_med = vk.get("device", {}).get("median")
        gbps = f"{row['bytes_io'] / dev_med / 1e9:.2f}" if dev_med else "—"
        diffs = ", ".join(
            f"{n} {res['max_abs_diff']:.2g}{'' if res['ok'] else ' ✗'}"
            for n, res in r.items()
            if res.get("status") == "ok" and n != "reference" and res.get("max_abs_diff") is not None
        )
        lines.append(
            f"| {row['case']} | {cold + first('vulkan') if vk.get('status') == 'ok' else '—'} | "
            f"{first('reference')} | {first('refmodel')} | {first('arm_sdk')} | "
            f"{f'{mem / 2**20:.1f} MiB' if mem is not None else '—'} | "
            f"{'{vulkan} / {host}'.format(**place) if place else '—'} | {gbps} | {diffs or '—'} |"
            + _iree_cells(report, r, first=True)
        )
    lines += [
        "",
        "First runs are load + first run: cold in a new process with tosa_vk's SPIR-V and program caches and "
        "Mesa's shader cache (MESA_SHADER_CACHE_DIR) empty, warm process in another new process on those "
        "caches, warm in-process the same model loaded again in the benchmark's process. Peak RSS: growth of "
        "the process peak over load + first run (memory the allocator kept from earlier cases is not counted). "
        "GB/s: graph input + output bytes / Vulkan device time.",
    ]
    lines += _spread_table(report)
    if notes or report["notes"]:
        lines += ["", "Notes:"] + [f"- {n}" for n in report["notes"] + notes]
    return "\n".join(lines) + "\n"


def _spread_table(report: dict) -> list[str]:
    """Steady-time spread per case and backend (--batch N > 1): max / min of the rounds' medians."""
    batch = report["settings"].get("batch", 1)
    names = [b for b in BACKENDS if any("spread" in r.get("results", {}).get(b, {}) for r in report["cases"])]
    if batch < 2 or not names:
        return []
    lines = [
        "",
        f"Steady-time spread: max / min of the medians of {report['settings']['repeats']} rounds of {batch} runs "
        "in a row (1.00: every round alike).",
        "",
        "| case | " + " | ".join(LABELS[n] for n in names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for row in report["cases"]:
        r = row.get("results", {})
        cells = [f"{r[n]['spread']:.2f}" if "spread" in r.get(n, {}) else "—" for n in names]
        lines.append(f"| {row['case']} | " + " | ".join(cells) + " |")
    return lines


def _iree_cells(report: dict, r: dict | None, base: float | None = None, first: bool = False) -> str:
    """The IREE anchors' columns, appended to both tables when the bench ran iree_vulkan / iree_cpu ("" otherwise);
    r None: the header cells. Table 1: wall medians and "x IREE" = IREE's median / tosa_vk Vulkan's (> 1: tosa_vk
    faster); table 2 (first): first runs (MLIR + compile, or the cached .vmfb, + load + first run). A graph IREE
    cannot compile shows — (the notes say why)."""
    names = ("iree_vulkan", "iree_cpu")
    if not any(n in report["settings"].get("backends", ()) for n in names):
        return ""
    if r is None:
        return (
            " IREE first Vulkan / llvm-cpu (compile) |"
            if first
            else " IREE Vulkan | IREE llvm-cpu | x IREE | x IREE CPU |"
        )
    res = [r.get(n, {}) if r.get(n, {}).get("status") == "ok" else {} for n in names]
    if first:
        runs = []
        for x in res:
            compiled = "cached" if x.get("compile_cached") else f"{x.get('compile_s', 0):.1f} s"
            runs.append(f"{x['first_run_s'] * 1e3:.0f} ms ({compiled})" if x else "—")
        return f" {' / '.join(runs)} |"
    ratios = [f"{m / base:.2f}" if (m := x.get("wall", {}).get("median")) and base else "—" for x in res]
    return f" {cell(r.get(names[0]))} | {cell(r.get(names[1]))} | {ratios[0]} | {ratios[1]} |"


def plot(report: dict, path: Path) -> str | None:
    """A PNG of median wall times per case and backend (log scale, min–max whiskers); None or why not."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib not installed: no plot (bash scripts/setup.sh installs it; or pip install -e '.[bench]')"
    rows = [r for r in report["cases"] if "results" in r and "error" not in r]
    names = [b for b in BACKENDS if any(r["results"].get(b, {}).get("status") == "ok" for r in rows)]
    fig, ax = plt.subplots(figsize=(10, 0.1 * len(rows) * max(1, len(names)) + 1.5))
    height = 0.8 / max(1, len(names))
    for j, name in enumerate(names):
        ys: list[float] = []
        meds: list[float] = []
        errs: list[list[float]] = [[], []]  # below and above the median
        for i, r in enumerate(rows):
            st = r["results"].get(name, {}).get("wall") if r["results"].get(name, {}).get("status") == "ok" else None
            if st:
                ys.append(i + j * height)
                meds.append(st["median"] * 1e3)
                errs[0].append((st["median"] - st["min"]) * 1e3)
                errs[1].append((st["max"] - st["median"]) * 1e3)
        ax.barh(ys, meds, height, xerr=errs, label=LABELS[name], capsize=2)
    ax.set_yticks([i + 0.4 - height / 2 for i in range(len(rows))], [r["case"] for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("wall time per run, ms (median, min–max)")
    ax.legend(fontsize=7)
    ax.set_title(f"tosa_vk bench — {report['environment'].get('device', {}).get('name', '?')}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


# ------------------------------------------------------------------------------------------------------------------


def write(report: dict, out: Path) -> list[str]:
    """results.json, results.md and results.png (when matplotlib is importable) into `out`; notes."""
    out.mkdir(parents=True, exist_ok=True)
    why = plot(report, out / "results.png")
    if why:
        report["notes"].append(why)
    write_atomic(out / "results.json", json.dumps(report, indent=1, default=str).encode(), overwrite=True)
    write_atomic(out / "results.md", markdown(report).encode(), overwrite=True)
    return [why] if why else []
