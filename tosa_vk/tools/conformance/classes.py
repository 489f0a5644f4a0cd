"""Correctness with every device class forced (issue 38): Arm's TOSA 1.0 conformance selection (positive tests) and
the model graphs (the shipped models, the Builder-made transformer / RNN / CNN graphs of the bench suite) compiled
for each GPU class on this device and run strict, as `load(..., target=NAME, strict=True)` runs them.

Affordable because most Programs repeat: each test is compiled for lavapipe and for every class first, and a class
runs only when its Program differs from every one already judged for that test. Identical Program bytes and
identical SPIR-V sources (the variants' source digests: full source, includes, glslc flags) give identical results
on one device, so a class whose Program equals one judged is reported with that one's verdict. A conformance test's
lavapipe Program is judged by the default tier (tests/test_conformance_vulkan.py), so it is compiled here, not run
(`baseline=True` runs it too); a model's is run (there are few). Programs of a forced class may hold shader
variants that are not shipped compiled (shaders/builtin/): the runtime compiles those with glslc at load, once per
machine (the SPIR-V cache keeps them).

`python -m tosa_vk.tools.conformance.classes [-j 2] [--classes nvidia,mali,nvidia-shared] [--ops ...] [--no-models]
[--baseline]` (scripts/test_classes.sh) prints one line per failure and "N tests x 6 classes + K kill-switch cases:
M distinct programs run"; exit 1 on any failure. A case CLASS-FEATURE.. runs the class with those kernel features
off (DISABLE_CASES by default); TOSA_VK_DISABLE applies to every case.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ... import device_class
from ...errors import TosaError
from ...ir import Graph, load_graph
from ...program import Program
from ...session import load
from ...stages import compiler
from ...target import Target
from .run import run_test, shared_device

GPU_CLASSES = tuple(name for name in device_class.CLASSES if name != "lavapipe")
# kill-switch cases, CLASS-FEATURE[-FEATURE..]: the class with those kernel features off (as TOSA_VK_DISABLE), so
# each family's fallback runs too: no shared memory (no tiled kernels), no subgroup arithmetic, no fp16 / int8 dots
DISABLE_CASES = ("nvidia-shared", "nvidia-subgroup", "mali-fp16-int8dot")
MODEL_TIMEOUT_S = 1800.0  # a model's runs on a forced class (lavapipe runs GPU-shaped kernels slowly)
BASE = "lavapipe"  # the device's own class here: the Program every class is compared with


def parse_case(case: str) -> tuple[str, frozenset[str]]:
    """A class case -> (class name, the kernel features it switches off); a TosaError for an unknown name."""
    name, *off = case.split("-")
    return device_class.get(name).name, device_class.disabled(",".join(off))


@contextmanager
def _switched_off(case: str) -> Iterator[str]:
    """TOSA_VK_DISABLE for a case's run (load() reads it); yields the class name to force."""
    name, off = parse_case(case)
    before = os.environ.get(device_class.ENV_DISABLE)
    if off:
        os.environ[device_class.ENV_DISABLE] = ",".join(sorted(device_class.disabled() | off))
    try:
        yield name
    finally:
        if before is None:
            os.environ.pop(device_class.ENV_DISABLE, None)
        else:
            os.environ[device_class.ENV_DISABLE] = before


def fingerprint(program: Program) -> str:
    """What a Program's results on one device depend on: its bytes and its shader variants' SPIR-V sources."""
    from ...vulkan.variant import program_variants, source_digest

    h = hashlib.sha256(program.to_bytes())
    for v in program_variants(program):
        if not v.spirv:  # ready SPIR-V is in the Program's bytes already
            h.update(source_digest(v).encode())
    return h.hexdigest()


def class_target(base: Target, case: str) -> Target:
    """`base` (a device's target) compiled for a class case (parse_case), TOSA_VK_DISABLE's features off too: what
    load(target=) uses."""
    name, off = parse_case(case)
    return base.with_class(name, device_class.disabled() | off)


def class_programs(graph: Graph, base: Target, classes: Iterable[str], file: str | None = None) -> dict[str, str]:
    """Class -> the fingerprint of the strict Program load(..., target=class, strict=True) compiles on the device
    of `base` (lavapipe's first); a graph a class cannot compile gets its error as the key (compared like a Program:
    run, it fails with that error)."""
    from ...vulkan.builtin import shipped_only

    kernels = shipped_only()  # as VulkanModel.compile: without glslc, only fusions shipped compiled
    keys = {}
    for name in dict.fromkeys((BASE, *classes)):
        try:
            program = compiler.compile(graph, class_target(base, name), strict=True, kernels=kernels, file=file)
        except TosaError as err:
            keys[name] = f"error: {err}"
            continue
        keys[name] = fingerprint(program)
    return keys


@dataclass
class ClassOutcome:
    item: str  # a test folder's or a model's name
    kind: str  # "conformance" | "model"
    cls: str
    status: str  # "pass" | "fail" | "error" | "judged" (lavapipe's Program: judged by the default tier)
    detail: str = ""
    ran: bool = False  # this class's Program was run here (else it equals `same_as`'s)
    same_as: str = ""
    seconds: float = 0.0


def _checked(judge: Callable[[str], tuple[str, str]]) -> Callable[[str], tuple[str, str]]:
    """`judge`, failing a run the validation layer spoke during (TOSA_VK_VALIDATION=1, as the conformance tier); a
    crash (a ShaderError: glslc refused a forced class's kernel; a VulkanError) is that case's error, not the test's."""

    def checked(cls: str) -> tuple[str, str]:
        try:
            status, detail = judge(cls)
        except Exception as err:
            status, detail = "error", f"{type(err).__name__}: {err}"
        messages = shared_device().validation_messages
        if messages:
            status, detail = "fail", "validation layer: " + " | ".join(messages[:3])
            messages.clear()
        return status, detail

    return checked


def _share(keys: dict[str, str], classes: Sequence[str], judge: Callable[[str], tuple[str, str]], baseline: bool,
           item: str, kind: str) -> list[ClassOutcome]:  # fmt: skip
    """Runs `judge(class)` once per distinct Program (lavapipe's only with `baseline`); the other classes take the
    verdict of the class whose Program theirs equals."""
    judged: dict[str, ClassOutcome] = {}
    if not baseline:
        judged[keys[BASE]] = ClassOutcome(item, kind, BASE, "judged", "lavapipe's Program, judged by the default tier")
    out = []
    for name in dict.fromkeys(((BASE,) if baseline else ()) + tuple(classes)):
        first = judged.get(keys[name])
        if first is None:
            start = time.perf_counter()
            status, detail = judge(name)
            first = ClassOutcome(item, kind, name, status, detail, True, "", time.perf_counter() - start)
            judged[keys[name]] = first
            out.append(first)
        else:
            out.append(ClassOutcome(item, kind, name, first.status, first.detail, False, first.cls))
    return out


def run_test_classes(test: Path, classes: Sequence[str] = GPU_CLASSES, baseline: bool = False) -> list[ClassOutcome]:
    """One conformance test (a generated folder) with each class forced, strict; judged by Arm's verifier."""
    desc = json.loads((test / "desc.json").read_text())
    file = test / desc["tosa_file"]
    keys = class_programs(load_graph(file), shared_device().info.target, classes, str(file))

    def judge(name: str) -> tuple[str, str]:
        with _switched_off(name) as cls:
            outcome = run_test(test, "vulkan", strict=True, target=cls)
        return outcome.status, outcome.detail

    return _share(keys, classes, _checked(judge), baseline, test.name, "conformance")


def model_names() -> list[str]:
    """The shipped models (resources/models) and the bench suite's Builder graphs."""
    from ..bench import graphs as built
    from ..bench.cases import default_models

    return [p.parent.name for p in default_models()] + list(built.GRAPHS)


def model_graph(name: str) -> tuple[Graph, dict[str, np.ndarray]]:
    """A model of model_names() with its inputs: a shipped model's desc.json's, a Builder graph's seeded ones."""
    from ...ir.dtype import from_npy
    from ..bench import graphs as built
    from ..bench.cases import MODELS_DIR

    if name in built.GRAPHS:
        return built.build(name)
    folder = MODELS_DIR / name
    desc = json.loads((folder / "desc.json").read_text())
    graph = load_graph(folder / desc["tosa_file"])
    feeds = {n: from_npy(np.load(folder / f), graph.main.tensors[n].dtype)
             for n, f in zip(desc["ifm_name"], desc["ifm_file"])}  # fmt: skip
    return graph, feeds


def run_model_classes(name: str, classes: Sequence[str] = GPU_CLASSES, baseline: bool = True) -> list[ClassOutcome]:
    """One model graph with each class forced, strict; every output judged against the reference backend's
    (tosa_vk/tools/compare.py: integers exact, floats within the dtype's bound)."""
    from ..compare import judge as judge_output

    graph, feeds = model_graph(name)
    keys = class_programs(graph, shared_device().info.target, classes)
    want = load(graph, backend="reference").run(feeds)

    def judge(case: str) -> tuple[str, str]:
        try:
            with (
                _switched_off(case) as cls,
                # the first run compiles each kernel's LLVM inside the device's time limit (lavapipe: seconds for a
                # tiled kernel on a loaded machine), so a limit well past a model's cold run
                load(graph, "vulkan", device=shared_device(), strict=True, target=cls, timeout_s=MODEL_TIMEOUT_S) as m,
            ):
                got = m.run(feeds)
        except TosaError as err:
            return "fail", f"raised {err}"
        for out, value in want.items():
            verdict = judge_output(got[out], value, graph.main.tensors[out].dtype)
            if not verdict.ok:
                return "fail", f"output '{out}': {verdict.how}"
        return "pass", ""

    return _share(keys, classes, _checked(judge), baseline, name, "model")


def _work(item: tuple[str, str], classes: tuple[str, ...], baseline: bool) -> list[ClassOutcome]:
    kind, what = item
    try:
        if kind == "conformance":
            return run_test_classes(Path(what), classes, baseline)
        return run_model_classes(what, classes)
    except Exception as err:  # a crash is a result to report, not a reason to stop the run
        name = Path(what).name
        return [ClassOutcome(name, kind, c, "error", f"{type(err).__name__}: {err}", True) for c in classes]


def run_tier(items: list[tuple[str, str]], classes: Sequence[str] = GPU_CLASSES, jobs: int = 1, baseline: bool = False,
             progress: Callable[[int, int], None] | None = None) -> list[ClassOutcome]:  # fmt: skip
    """`items`: ("conformance", test folder) or ("model", a name of model_names()), each in a worker process."""
    classes = tuple(classes)
    results: list[ClassOutcome] = []
    if jobs <= 1:
        for n, item in enumerate(items, 1):
            results += _work(item, classes, baseline)
            if progress:
                progress(n, len(items))
        return results
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(jobs) as pool:
        args = ([classes] * len(items), [baseline] * len(items))
        for n, outs in enumerate(pool.map(_work, items, *args, chunksize=4), 1):
            results += outs
            if progress:
                progress(n, len(items))
    return results


def summary(results: list[ClassOutcome], classes: Sequence[str], seconds: float) -> list[str]:
    """Per kind: "N tests x C classes: M distinct programs run", the verdicts, the time per Program run."""
    lines = []
    for kind, noun in (("conformance", "tests"), ("model", "models")):
        mine = [r for r in results if r.kind == kind]
        if not mine:
            continue
        items = len({r.item for r in mine})
        forced = [r for r in mine if r.cls != BASE]
        run = [r for r in forced if r.ran]
        base = [r for r in mine if r.cls == BASE and r.ran]
        equal = sum(r.same_as == BASE for r in forced)
        bad = [r for r in forced + base if r.status not in ("pass", "judged")]
        took = sum(r.seconds for r in run + base)
        cases = sum("-" in c for c in classes)
        what = f"{len(classes) - cases} classes" + (f" + {cases} kill-switch cases" if cases else "")
        line = f"{kind}: {items} {noun} x {what}: {len(run)} distinct programs run"
        line += f" ({equal} equal lavapipe's"
        line += f"; lavapipe's {len(base)} run too)" if base else ", judged by the default tier)"
        line += f"; {len(bad)} failed" if bad else "; all pass"
        if run or base:
            line += f"; {took / len(run + base):.2f} s per program run (one worker's time)"
        lines.append(line)
    lines.append(f"classes: {', '.join(classes)}; {seconds:.0f} s wall")
    return lines


def main(argv: list[str] | None = None) -> int:
    from .generate import FFT_SELECTION, VERSION_OPS, Selection, operator_names, selected_tests

    p = argparse.ArgumentParser(
        prog="python -m tosa_vk.tools.conformance.classes", description=__doc__.split("\n\n")[0]
    )
    p.add_argument(
        "--classes",
        default=",".join(GPU_CLASSES + DISABLE_CASES),
        help="comma-separated classes, or CLASS-FEATURE[-FEATURE..] to run a class with kernel features off "
        f"(default: every GPU class, and {', '.join(DISABLE_CASES)})",
    )
    p.add_argument("--ops", nargs="*", metavar="OP", help="conformance operators (default: the whole 1.0 selection)")
    p.add_argument("--no-conformance", action="store_true", help="the models only")
    p.add_argument("--no-models", action="store_true", help="the conformance selection only")
    p.add_argument("--baseline", action="store_true", help="run each conformance test's lavapipe Program too")
    p.add_argument("--shard", default="1/1", metavar="I/N", help="run every N-th item from the I-th (CI jobs)")
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPUs)")
    args = p.parse_args(argv)
    try:
        index, count = (int(n) for n in args.shard.split("/"))
        if not 1 <= index <= count:
            raise ValueError(args.shard)
    except ValueError:
        print(f"error: --shard {args.shard}: want I/N with 1 <= I <= N", file=sys.stderr)
        return 2
    try:
        classes = [c.strip() for c in args.classes.split(",") if c.strip()]
        for case in classes:
            parse_case(case)
        items: list[tuple[str, str]] = []
        if not args.no_conformance:
            ops = operator_names(args.ops, "1.0") if args.ops else VERSION_OPS["1.0"]
            tests = selected_tests(Selection(ops))
            fft = tuple(op for op in FFT_SELECTION.ops if op in ops)
            if fft:
                from dataclasses import replace

                tests += selected_tests(replace(FFT_SELECTION, ops=fft), superset=FFT_SELECTION)
            items += [("conformance", str(t)) for t in tests]
        if not args.no_models:
            items += [("model", name) for name in model_names()]
        items = items[index - 1 :: count]
    except TosaError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    results = run_tier(items, classes, args.jobs, args.baseline)
    for r in results:
        if r.status not in ("pass", "judged") and r.ran:
            print(f"{r.status.upper()} {r.kind} {r.item} [{r.cls}]: {r.detail}")
    for line in summary(results, classes, time.perf_counter() - start):
        print(line)
    return 1 if any(r.status not in ("pass", "judged") for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
