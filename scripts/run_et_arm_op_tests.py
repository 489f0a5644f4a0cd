"""ExecuTorch's own Arm operator tests (executorch/backends/arm/test/ops, shipped in the executorch wheel) run with
tosa_vk (issue 50): each test module's TOSA FP / INT test functions (`test_*_tosa_FP`, `test_*_tosa_INT`, and the
suffixed ones such as `test_convolution_2d_tosa_FP_depthwise`) are called with their test data, with ExecuTorch's
TosaPipelineFP / TosaPipelineINT swapped for a recorder that keeps the module, the inputs and the tolerances the test
gives (atol / rtol, qtol: the output steps Arm's own pipeline lets its reference model be off PyTorch's simulated
quantization); its other pipelines (Ethos-U, VGF, not-delegated checks) are stubbed, so nothing of ExecuTorch's
runs. Each case is then exported through tosa_vk's export path (tosa_vk/tools/torch_export.py: TOSA-1.0+FP, or
TOSA-1.0+INT with the Arm quantizer calibrated on the inputs), saved (torch_export.write_case's layout), loaded and
run on each backend from its files and compared with PyTorch eager (for INT: the quantized module) by
tests/helpers.py's run_saved, as tests/test_et_arm_ops.py runs the committed cases. Prints, and writes with --out, a
JSON summary: the counts per cause (exported / refused at export / load and run errors by message / mismatches /
matches) per flow and backend, and each case's result.

Run in an environment with the `torch` extra (scripts/test_torch.sh makes .venv-torch):

    .venv-torch/bin/python scripts/run_et_arm_op_tests.py [--per-function N] [--modules add,conv2d] [--out FILE]

The committed fixtures (tests/data/et_arm_ops.tar.xz, the first FP and INT case of every module) and summary
(benchmarks/et_arm_op_tests/summary.json) are made in three steps: export and save (two halves, side by side),
run the saved cases (no torch needed), pack:

    run_et_arm_op_tests.py --every 2 --offset 0 --one-per-flow --backends '' --save /tmp/et --out /tmp/even.json
    run_et_arm_op_tests.py --every 2 --offset 1 --one-per-flow --backends '' --save /tmp/et --out /tmp/odd.json
    run_et_arm_op_tests.py --replay --save /tmp/et --out benchmarks/et_arm_op_tests/summary.json /tmp/even.json \
        /tmp/odd.json
    run_et_arm_op_tests.py --pack tests/data/et_arm_ops.tar.xz --save /tmp/et benchmarks/et_arm_op_tests/summary.json
"""

from __future__ import annotations

import argparse
import collections
import importlib
import inspect
import json
import re
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the comparison tests/test_et_arm_ops.py makes on the saved cases

from helpers import run_saved  # noqa: E402

from tosa_vk.tools.torch_export import export_pte, write_case  # noqa: E402

PACKAGE = "executorch.backends.arm.test.ops"
FLOWS = {"TosaPipelineFP": "FP", "TosaPipelineINT": "INT"}
# test_<op>_tosa_FP / _INT, and the suffixed ones (test_convolution_2d_tosa_FP_depthwise, ..._tosa_INT_a16w8)
TEST_NAME = re.compile(r"^test_\w*?_tosa_(FP|INT)(?:_(\w+))?$")
# suffixes of a flow's other precisions and of tests that check what is not delegated: tried after the plain ones,
# so the first function per flow is the plain fp32 / int8 one where a module has it
OTHER_PRECISION = re.compile(r"a16w8|16a8w|a8w4|fp8|fp16|bf16|int16|not_delegated|qat|ptq", re.IGNORECASE)


class Recorded(Exception):
    """Raised by the recorder's run(): the case is recorded, ExecuTorch's pipeline never runs."""


class OtherPipeline(Exception):
    """Raised when a test builds a pipeline other than TOSA FP / INT (Ethos-U, VGF, not-delegated checks): nothing
    is recorded and nothing of ExecuTorch's runs."""


class Stub:
    def __class_getitem__(cls, _item):
        return cls

    def __init__(self, *_args, **_kwargs):
        raise OtherPipeline


def recorder(flow: str, cases: list):
    class Pipeline:
        def __class_getitem__(cls, _item):  # TosaPipelineFP[input_t](...)
            return cls

        def __init__(self, module, test_data, *_args, **kwargs):
            self.case = {"flow": flow, "module": module, "inputs": test_data, "kwargs": kwargs, "changed": False}

        def run(self):
            cases.append(self.case)
            raise Recorded

        def __getattr__(self, name):  # quantizer.set_io, add_stage_after, change_args, pop_stage ...: the test
            self.case["changed"] = True  # customises the pipeline in a way this run does not follow: noted

            class Anything:
                def __call__(self, *a, **k):
                    return self

                def __getattr__(self, _name):
                    return self

            return Anything()

    return Pipeline


def collect(modules: list[str] | None, per_function: int, every: int = 1, one_per_flow: bool = False, offset: int = 0):
    """(test module, function, data id, case) per recorded case, and the modules that did not import."""
    import executorch.backends.arm.test.ops as ops

    sys.path.insert(0, str(Path(list(ops.__path__)[0]).parent))  # some modules `import conftest` (Arm's test dir's)

    found = sorted(p.stem for p in Path(list(ops.__path__)[0]).glob("test_*.py"))[offset::every]
    broken = {}
    for stem in found:
        if modules and stem.removeprefix("test_") not in modules:
            continue
        try:
            mod = importlib.import_module(f"{PACKAGE}.{stem}")
        except Exception as err:  # noqa: BLE001 (a module this environment cannot import: counted)
            broken[stem] = f"{type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}"
            continue
        cases: list = []
        for name, value in list(vars(mod).items()):
            if isinstance(value, type) and "Pipeline" in name:
                setattr(mod, name, recorder(FLOWS[name], cases) if name in FLOWS else Stub)
        seen: set[str] = set()
        if not test_functions(mod):
            yield stem, "", "", {"error": "no TOSA FP / INT test function (Ethos-U or VGF pipelines only)"}
        for fname, func, flow, suffix in test_functions(mod):
            if not callable(func) or (one_per_flow and flow in seen):
                continue
            marks = [m for m in getattr(func, "pytestmark", []) if m.name == "parametrize"]
            params = inspect.signature(func).parameters
            if not marks:
                runs = [("", {})] if not params else []
            else:
                names = [n.strip() for n in marks[0].args[0].split(",")] if isinstance(marks[0].args[0], str) else []
                runs = []
                for value in marks[0].args[1][:per_function] if per_function else marks[0].args[1]:
                    values = getattr(value, "values", (value,))
                    ident = getattr(value, "id", None) or str(len(runs))
                    runs.append((ident, dict(zip(names, values))))
            for ident, kwargs in runs:
                if set(params) - set(kwargs):
                    seen.add(flow)
                    yield stem, fname, ident, {"error": "needs pytest fixtures"}
                    continue
                before = len(cases)
                try:
                    func(**kwargs)
                except (Recorded, OtherPipeline):
                    pass
                except Exception as err:  # noqa: BLE001 (the test itself failed before its pipeline ran)
                    seen.add(flow)
                    yield stem, fname, ident, {"error": f"test body: {type(err).__name__}"}
                    continue
                for case in cases[before:]:
                    seen.add(flow)  # a function that builds no TOSA pipeline does not use up its flow's sample
                    yield stem, fname, ident, {**case, "suffix": suffix}
    for stem, why in broken.items():
        yield stem, "", "", {"error": f"module import: {why}"}


def test_functions(mod) -> list[tuple[str, Any, str, str]]:
    """A test module's TOSA FP / INT test functions (name, function, flow, name suffix): the plain ones first, the
    suffixed ones next, those of other precisions (a16w8, fp8, ...) or not-delegated checks last; by name within."""
    found = []
    for fname, func in vars(mod).items():
        match = TEST_NAME.match(fname)
        if match:
            found.append((fname, func, match.group(1), match.group(2) or ""))
    return sorted(found, key=lambda f: (bool(f[3]), bool(OTHER_PRECISION.search(f[3])), f[0]))


class Timeout(Exception):
    pass


def _alarm(_signum, _frame):
    raise Timeout


def _flat(x: Any) -> list:
    if isinstance(x, (tuple, list)):
        return [a for o in x for a in _flat(o)]
    return [x]


def _reason(err: BaseException) -> str:
    """An error's kind and first line with its numbers and names of values blanked, so like causes count as one."""
    text = str(err).splitlines()[0] if str(err) else ""
    text = re.sub(r"\d+", "N", text)
    return f"{type(err).__name__}: {text[:160]}"


def tolerance(case: dict) -> dict[str, float]:
    """The atol / rtol / qtol the test gives its pipeline (compare_to_pytorch's defaults for those it does not)."""
    return {k: case["kwargs"][k] for k in ("atol", "rtol", "qtol") if k in case["kwargs"]}


def save(folder: Path, case: dict, pte: bytes, inputs: list, want: list, max_bytes: int) -> str:
    """The exported case as a fixture (torch_export.write_case's layout, desc.json with the flow, the tolerances and
    each method input's type): 'saved', or why not."""
    import torch

    kinds = {type(x).__name__ for x in inputs if not (x is None or torch.is_tensor(x) or type(x) in (int, float, bool))}
    if kinds:
        return f"not saved: a method input of type {', '.join(sorted(kinds))}"
    size = len(pte) + sum(x.numel() * x.element_size() for x in inputs if torch.is_tensor(x))
    size += sum(np.asarray(w).nbytes for w in want)
    if size > max_bytes:
        return f"not saved: {size / 2**20:.1f} MiB of program and arrays (over {max_bytes / 2**20:.1f} MiB)"
    write_case(folder, inputs, want, pte, fresh=True, input_types=True, flow=case["flow"], tolerance=tolerance(case),
               test=case["test"], data=case["data"])  # fmt: skip
    return "saved"


def case_folder(row: dict) -> str:
    """A summary row's --save folder: <module>__<flow>__<data id>; a suffixed test function's suffix joins its flow
    (conv_combos__FP_meandim__0)."""
    match = TEST_NAME.match(row["test"])
    flow = f"{row['flow']}_{match.group(2)}" if match and match.group(2) else row["flow"]
    return re.sub(r"[^\w.-]+", "_", f"{row['module'].removeprefix('test_')}__{flow}__{row['data'] or 'case'}")


def run_case(
    case: dict, backends: list[str], timeout_s: int, save_to: Path | None = None, max_bytes: int = 0
) -> dict[str, str]:
    """backend -> 'match' / 'match (bit-exact)' / 'mismatch: ...' / 'load: ...' / 'run: ...'; or 'export' -> why;
    'saved' -> 'saved' or why not, with save_to."""
    import torch

    inputs = case["inputs"]
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    tensors = [x for x in _flat(inputs) if torch.is_tensor(x)]
    if any(t.dtype == torch.bfloat16 for t in tensors):  # (fp16 is in TOSA-1.0+FP: exported and run)
        return {"skip": "bf16 test data (TOSA-1.0+FP without the bf16 extension)"}
    signal.alarm(timeout_s)
    try:
        quantize = [inputs] if case["flow"] == "INT" else None
        exported = export_pte(case["module"], inputs, quantize=quantize)
        with torch.no_grad():
            result = _flat(exported.eager(*(x.clone() if torch.is_tensor(x) else x for x in inputs)))
        want = [w.detach().contiguous().numpy() if torch.is_tensor(w) else np.asarray(w) for w in result]
    except Timeout:
        return {"export": f"export took over {timeout_s} s"}
    except Exception as err:  # noqa: BLE001
        cause = err.__cause__ or err
        return {"export": _reason(cause)}
    finally:
        signal.alarm(0)
    if save_to is not None:
        saved = save(save_to, case, exported.pte, _flat(inputs), want, max_bytes)
        return {"saved": saved, **(run_backends(save_to, backends, timeout_s) if saved == "saved" else {})}
    with tempfile.TemporaryDirectory() as folder:  # the case run as the saved ones are, from its files
        saved = save(Path(folder) / "case", case, exported.pte, _flat(inputs), want, 2**62)
        return run_backends(Path(folder) / "case", backends, timeout_s) if saved == "saved" else {"saved": saved}


def run_backends(folder: Path, backends: list[str], timeout_s: int) -> dict[str, str]:
    """A saved case run on each backend (helpers.run_saved, as tests/test_et_arm_ops.py runs it): backend ->
    'match' / 'match (bit-exact)' / 'mismatch: ...' / 'load: ...' / 'run: ...' (numbers blanked)."""
    out = {}
    for backend in backends:
        signal.alarm(timeout_s)
        try:
            result = run_saved(folder, backend)
            out[backend] = re.sub(r"\d+", "N", result)[:170] if result.startswith(("load: ", "run: ")) else result
        except Timeout:
            out[backend] = f"run: took over {timeout_s} s"
        finally:
            signal.alarm(0)
    return out


def pack(save: Path, archive: Path, summaries: list[Path]) -> None:
    """The summaries' saved cases as one tar.xz (sorted, no owners or times: the same cases give the same bytes), and
    next to it <archive stem>_left_out.txt: each sampled case the archive lacks, and why."""
    import io
    import lzma
    import tarfile

    import executorch.backends.arm.test.ops as ops

    rows = [row for summary in summaries for row in json.loads(summary.read_text())["cases_detail"]]
    folders = sorted(case_folder(row) for row in rows if row["result"].get("saved") == "saved")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path in (p for folder in folders for p in [save / folder, *sorted((save / folder).iterdir())]):
            info = tar.gettarinfo(str(path), str(path.relative_to(save)))
            info.uid = info.gid = info.mtime = 0
            info.uname = info.gname = ""
            info.mode = 0o755 if path.is_dir() else 0o644
            if path.is_file():
                with open(path, "rb") as data:
                    tar.addfile(info, data)
            else:
                tar.addfile(info)
    archive.write_bytes(lzma.compress(buffer.getvalue(), preset=9 | lzma.PRESET_EXTREME))
    lines = [f"ExecuTorch Arm operator test cases not in {archive.name} ({__file__.rsplit('/', 1)[-1]}), and why"]
    for row in rows:
        result = row["result"]
        why = result.get("collect") or result.get("skip") or result.get("export") or result.get("saved")
        if why and why != "saved":
            lines.append(f"{row['module']} {row.get('flow', '-')} {row['test']} {row['data']}: {why}")
    tried = {row["module"] for row in rows}
    for stem in sorted(p.stem for p in Path(list(ops.__path__)[0]).glob("test_*.py")):
        if stem not in tried:
            lines.append(
                f"{stem}: no case (its TOSA tests build only other pipelines, e.g. MXFP; or no run reached it)"
            )
    archive.with_name(archive.name.split(".")[0] + "_left_out.txt").write_text("\n".join(lines) + "\n")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-function", type=int, default=1, help="test data per test function (0: all)")
    parser.add_argument("--modules", default="", help="comma-separated operator names (add,conv2d); all if empty")
    parser.add_argument("--every", type=int, default=1, help="every N-th test module (a sample; 1: all)")
    parser.add_argument("--offset", type=int, default=0, help="with --every: start at the N-th module")
    parser.add_argument("--one-per-flow", action="store_true", help="one FP and one INT test function per module")
    parser.add_argument("--backends", default="reference,vulkan")
    parser.add_argument("--timeout-s", type=int, default=120, help="per export and per run")
    parser.add_argument("--budget-s", type=float, default=0, help="stop collecting after this long (0: no limit)")
    parser.add_argument("--out", type=Path, help="write the JSON summary here")
    parser.add_argument("--save", type=Path, help="write each exported case here: <module>__<flow>__<data id>/")
    parser.add_argument("--save-max-mb", type=float, default=2.0, help="with --save: leave out larger cases")
    parser.add_argument("--pack", type=Path, help="pack --save's folder into this .tar.xz (no run) ...")
    parser.add_argument("--replay", action="store_true", help="run --save's cases on --backends (no export) ...")
    parser.add_argument("summaries", nargs="*", type=Path, help="... with the runs' JSON summaries (--out)")
    args = parser.parse_args(argv)
    backends = [b for b in args.backends.split(",") if b]  # none: export and --save only (--replay runs them)
    signal.signal(signal.SIGALRM, _alarm)
    if args.pack:
        pack(args.save, args.pack, args.summaries)
        return
    if args.replay:
        replay(args.save, args.summaries, backends, args.timeout_s, args.out)
        return
    start = time.monotonic()
    rows = []
    for stem, fname, ident, case in collect(
        [m for m in args.modules.split(",") if m] or None, args.per_function, args.every, args.one_per_flow, args.offset
    ):
        if args.budget_s and time.monotonic() - start > args.budget_s:
            break
        row = {"module": stem, "test": fname, "data": ident}
        if "error" in case:
            row["result"] = {"collect": case["error"]}
        else:
            row["flow"] = case["flow"]
            if case["changed"]:
                row["customised"] = True
            case = {**case, "test": fname, "data": ident}
            save_to = args.save / case_folder(row) if args.save else None
            row["result"] = run_case(case, backends, args.timeout_s, save_to, int(args.save_max_mb * 2**20))
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    summary = {
        "executorch_ops_modules": len({r["module"] for r in rows}),
        "cases": len(rows),
        "sample": {
            "per_function": args.per_function,
            "every": args.every,
            "offset": args.offset,
            "one_per_flow": args.one_per_flow,
            "modules": args.modules,
            "budget_s": args.budget_s,
        },
        "seconds": round(time.monotonic() - start),
        "counts": counts(rows, backends),
        "cases_detail": rows,
    }
    write_summary(summary, args.out)


def write_summary(summary: dict, out: Path | None) -> None:
    if out:
        out.write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "cases_detail"}, indent=1))


def counts(rows: list[dict], backends: list[str]) -> dict[str, dict[str, int]]:
    """The cases per flow and cause: not collected / skipped / refused at export (why) / on each backend (result)."""
    found: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for row in rows:
        result = row["result"]
        flow = row.get("flow", "-")
        if "collect" in result:
            found["not collected"][result["collect"]] += 1
        elif "skip" in result:
            found[f"{flow} skipped"][result["skip"]] += 1
        elif "export" in result:
            found[f"{flow} refused at export"][result["export"]] += 1
        else:
            found[f"{flow} exported"]["cases"] += 1
            if result.get("saved", "saved") != "saved":
                found[f"{flow} not saved"][result["saved"]] += 1
            for backend in backends:
                if backend in result:
                    found[f"{flow} on {backend}"][result[backend]] += 1
    return {k: dict(v.most_common()) for k, v in sorted(found.items())}


def _summary(path: Path) -> dict:
    """A run's --out summary; or, for a run stopped before it wrote one, its log (the rows it printed, one a line)."""
    text = path.read_text()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        rows = [json.loads(line) for line in text.splitlines() if line.startswith('{"module"')]
        return {"sample": {"log": path.name, "stopped_after": rows[-1]["module"] if rows else ""}, "seconds": 0,
                "cases_detail": rows}  # fmt: skip


def _export_seconds(summary: dict) -> int:
    """A run's export time: its whole time (an export-only run), or the export part of a replayed summary's."""
    seconds = summary["seconds"]
    return seconds["export"] if isinstance(seconds, dict) else seconds


def replay(save: Path, summaries: list[Path], backends: list[str], timeout_s: int, out: Path | None) -> None:
    """The runs' summaries (export only: --backends ''; or their logs) joined, each saved case run on each backend
    from its folder, as tests/test_et_arm_ops.py runs it (no torch), and the joined summary written to `out`."""
    start = time.monotonic()
    loaded = [_summary(path) for path in summaries]
    rows, seen = [], set()
    for row in (row for summary in loaded for row in summary["cases_detail"]):
        key = (row["module"], row["test"], row["data"], row.get("flow"))
        if key not in seen:  # runs over overlapping modules: each case once
            seen.add(key)
            rows.append(row)
    for row in rows:
        if row["result"].get("saved") != "saved":
            continue
        row["result"].update(run_backends(save / case_folder(row), backends, timeout_s))
        print(json.dumps(row), file=sys.stderr, flush=True)
    summary = {
        "executorch_ops_modules": len({r["module"] for r in rows}),
        "cases": len(rows),
        "sample": [x for s in loaded for x in (s["sample"] if isinstance(s["sample"], list) else [s["sample"]])],
        "seconds": {"export": sum(_export_seconds(s) for s in loaded), "runs": round(time.monotonic() - start)},
        "counts": counts(rows, backends),
        "cases_detail": sorted(rows, key=lambda r: (r["module"], r.get("flow", ""), r["test"])),
    }
    write_summary(summary, out)


if __name__ == "__main__":
    main(sys.argv[1:])
