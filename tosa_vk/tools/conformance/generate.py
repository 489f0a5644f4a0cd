"""Generate TOSA conformance tests with Arm's generator (`tosa_verif_build_tests` from tosa-tools).

A selection is of one TOSA version. The 1.0 selection is every 1.0 operator's tests as the 1.0 profiles and
extensions generate them; the 1.1 selection is what TOSA 1.1 (draft) adds: the generator's tests (with
`--tosa-version 1.1`) of the 25 new operators, and of 1.0 operators those whose types only a 1.1 row has (INT64,
MX block-scaled, mixed precision) — a test a 1.0 graph could hold belongs to the 1.0 selection.

Tests are generated once per (tosa-tools version, selection, seed) into a cache folder and reused: a folder is only
published (renamed into place) after the generator finished, so an interrupted run never leaves a half cache. The
operator list is part of a selection's key: a selection of some operators is generated (and cached) on its own, and
a cache of some operators is never taken for one of all (`selected_tests` reuses a complete cache of all operators
for a selection of some, filtering it, rather than generating them again).
"""

from __future__ import annotations

import difflib
import fcntl
import hashlib
import importlib.metadata
import json
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from ...errors import TosaError
from ...paths import cache_root

# The 70 TOSA 1.0 operators: cts-config_v1.0.json entries without a `from_version`.
TOSA_1_0_OPS = (
    "abs add argmax arithmetic_right_shift avg_pool2d bitwise_and bitwise_not bitwise_or bitwise_xor cast ceil clamp "
    "clz concat cond_if const conv2d conv3d cos depthwise_conv2d equal erf exp fft2d floor gather greater "
    "greater_equal identity intdiv log logical_and logical_left_shift logical_not logical_or logical_right_shift "
    "logical_xor matmul max_pool2d maximum minimum mul negate pad pow reciprocal reduce_all reduce_any reduce_max "
    "reduce_min reduce_product reduce_sum rescale reshape resize reverse rfft2d rsqrt scatter select sigmoid sin "
    "slice sub table tanh tile transpose transpose_conv2d while_loop"
).split()


# The 25 operators TOSA 1.1 adds: cts-config_v1.0.json entries with `"from_version": "1.1.0"`.
TOSA_1_1_NEW_OPS = (
    "add_shape assert_equal_shape avg_pool2d_adaptive cast_from_block_scaled cast_to_block_scaled concat_shape "
    "conv2d_block_scaled dim div_ceil_shape div_floor_shape exp2_shape log2_ceil_shape log2_floor_shape matmul_t "
    "matmul_t_block_scaled max_pool2d_adaptive max_shape min_shape mod_shape mul_shape reshape_block_scaled "
    "row_gather row_gather_block_scaled slice_shape sub_shape"
).split()
TOSA_1_1_OPS = (*TOSA_1_0_OPS, *TOSA_1_1_NEW_OPS)
VERSION_OPS = {"1.0": tuple(TOSA_1_0_OPS), "1.1": TOSA_1_1_OPS}


def operator_names(names, version: str = "1.0") -> tuple[str, ...]:
    """Operator names as given (spec names, any case) -> the lower-case names of TOSA `version`'s operators, in the
    order given; an unknown name is a TosaError naming the close matches (or every valid name)."""
    known = VERSION_OPS[version]
    chosen: list[str] = []
    for name in names:
        op = name.lower()
        if op not in known:
            close = difflib.get_close_matches(op, known, n=3)
            hint = f"did you mean {', '.join(close)}?" if close else f"the TOSA {version} operators: {' '.join(known)}"
            raise TosaError(f"unknown operator {name!r}: {hint}")
        if op not in chosen:
            chosen.append(op)
    return tuple(chosen)


def test_operator(test_name: str) -> str | None:
    """The operator a generated test folder's name starts with (the longest match: `greater_equal_...` is
    GREATER_EQUAL, not GREATER), or None."""
    ops = [op for op in TOSA_1_1_OPS if test_name.startswith(op + "_")]
    return max(ops, key=len) if ops else None


# The profiles and extensions tosa_vk implements (no EXT-DYNAMIC, no TOSA 1.1 extensions).
PROFILES = ("tosa-pro-int", "tosa-pro-fp")
EXTENSIONS = (
    "tosa-ext-int16",
    "tosa-ext-int4",
    "tosa-ext-bf16",
    "tosa-ext-fp8e4m3",
    "tosa-ext-fp8e5m2",
    "tosa-ext-fft",
    "tosa-ext-doubleround",
    "tosa-ext-inexactround",
    "tosa-ext-controlflow",
)
# Dtypes of TOSA 1.0 (the generator also emits TOSA 1.1 types even with --tosa-version 1.0).
DTYPES = ("bool", "int4", "int8", "int16", "int32", "int48", "fp32", "fp16", "bf16", "fp8e4m3", "fp8e5m2", "shape")
# What TOSA 1.1 adds (EXT-DYNAMIC stays out: tosa_vk runs graphs of static shapes and constant zero points)
EXTENSIONS_1_1 = (
    "tosa-ext-int64",
    "tosa-ext-shape",
    "tosa-ext-mx-common",
    "tosa-ext-mx-fp4e2m1",
    "tosa-ext-mx-fp6e2m3",
    "tosa-ext-mx-fp6e3m2",
    "tosa-ext-mx-fp8e4m3",
    "tosa-ext-mx-fp8e5m2",
    "tosa-ext-mx-int8",
    "tosa-ext-mxfp-conv",
)
DTYPES_1_1 = (
    "fp6e2m3 fp6e3m2 fp4e2m1 fp8ue8m0 int64 mxint8 bs32_fp8ue8m0_fp8e4m3 bs32_fp8ue8m0_fp8e5m2 bs32_fp8ue8m0_fp6e3m2 "
    "bs32_fp8ue8m0_fp6e2m3 bs32_fp8ue8m0_fp4e2m1 bs32_fp8ue8m0_mxint8"
).split()
# Ops whose accumulator type is a test dimension of its own.
ACC_TYPE_OPS = {
    "conv2d",
    "conv3d",
    "depthwise_conv2d",
    "transpose_conv2d",
    "matmul",
    "avg_pool2d",
    "reduce_sum",
    "fft2d",
    "rfft2d",
    "matmul_t",
    "avg_pool2d_adaptive",
}
# FFT / RFFT produce no DOT_PRODUCT tests at the default random shapes: widen their sizes.
EXTRA_ARGS = {"fft2d": ["--tensor-dim-range", "10,31"], "rfft2d": ["--tensor-dim-range", "10,31"]}


@dataclass(frozen=True)
class Selection:
    """Which tests to generate: every (op, rank, dtype[, acc_type]) class `per_class` times, special tests included."""

    ops: tuple[str, ...] = tuple(TOSA_1_0_OPS)
    per_class: int = 1
    test_type: str = "positive"  # or "negative"
    seed: int = 42
    extra: tuple[str, ...] = ()  # generator arguments for every op of this selection (replacing EXTRA_ARGS)
    tosa_version: str = "1.0"  # "1.1": what TOSA 1.1 adds (module docstring)

    @property
    def extensions(self) -> tuple[str, ...]:
        return EXTENSIONS + (EXTENSIONS_1_1 if self.tosa_version == "1.1" else ())

    @property
    def dtypes(self) -> tuple[str, ...]:
        return DTYPES + (tuple(DTYPES_1_1) if self.tosa_version == "1.1" else ())

    def config(self) -> dict:
        def entry(op):
            permutes = ["rank", "type"] + (["acc_type"] if op in ACC_TYPE_OPS else [])
            return {"selection": {"tosa_vk": {"permutes": permutes, "maximum": self.per_class}}}

        return {op: entry(op) for op in self.ops}

    def key(self) -> str:
        text = json.dumps(
            [tools_version(), self.config(), self.test_type, self.seed, PROFILES, EXTENSIONS, DTYPES, EXTRA_ARGS]
            + ([list(self.extra)] if self.extra else [])
            + ([self.tosa_version, EXTENSIONS_1_1, DTYPES_1_1] if self.tosa_version != "1.0" else []),
            sort_keys=True,
        )
        prefix = self.test_type if self.tosa_version == "1.0" else f"{self.test_type}-{self.tosa_version}"
        return f"{prefix}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


_RUN_GENERATOR = "import sys; from generator.tosa_verif_build_tests import main; sys.exit(main())"


def tools_version() -> str:
    return importlib.metadata.version("tosa-tools")


def tools_root() -> Path:
    """site-packages folder holding tosa-tools' `bin/` and `tosa_reference_model/`."""
    import tosa_reference_model  # noqa: F401  (part of tosa-tools)

    return Path(tosa_reference_model.__path__[0]).parent


# FFT2D / RFFT2D give DOT_PRODUCT tests only from about 1024 elements up; larger shapes (Arm's 1x256x64,
# 1x4x4096) cost the reference model tens of seconds per expected result, so two 1024-element shapes, both
# inverse settings, both bounds, full-range values.
FFT_SELECTION = Selection(
    ops=("fft2d", "rfft2d"), per_class=8, extra=("--fp-values-range=-max,max", "--target-shape", "1,32,32", "1,16,64")
)


def _build_tests(ops: list[str], sel: Selection, out: Path) -> None:
    tools = tools_root()
    config = out.parent / f"{out.name}.selection.json"
    config.write_text(json.dumps({op: sel.config()[op] for op in ops}))
    by_args: dict[tuple, list[str]] = {}
    for op in ops:
        by_args.setdefault(sel.extra or tuple(EXTRA_ARGS.get(op, [])), []).append(op)
    for extra, group in by_args.items():
        cmd = [
            sys.executable,
            "-c",
            _RUN_GENERATOR,
            "--tosa-version",
            sel.tosa_version,
            "--seed",
            str(sel.seed),
            "--generate-lib-path",
            str(tools / "tosa_reference_model" / "libtosa_reference_generate_lib.so"),
            "--filter",
            "^(" + "|".join(group) + ")$",
            "--profile",
            *PROFILES,
            "--extension",
            *sel.extensions,
            "--target-dtype",
            *sel.dtypes,
            "--test-type",
            sel.test_type,
            "--test-selection-config",
            str(config),
            "--test-selection-criteria",
            "tosa_vk",
            *extra,
            "-o",
            str(out),
        ]
        if sel.test_type == "negative":
            cmd += ["--tensor-dim-range", "1,16"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        # tosa-tools 2026.8 cannot build a few of its own 1.1 ERROR_IF tests ("Invalid ERROR_IF test created:
        # concat_ERRORIF_ConcatInputDimMismatch_..._bs32-..."): it writes the others and exits 1 naming them
        invalid = re.findall(r"Invalid ERROR_IF test created: \S+ (\S+)", done.stderr)
        if done.returncode != 0 and not (invalid and sel.test_type == "negative"):
            raise RuntimeError(f"tosa_verif_build_tests failed for {group}:\n{done.stderr[-2000:]}")
        if invalid:
            out.mkdir(parents=True, exist_ok=True)
            with open(out / "generator_failures.txt", "a") as log:
                log.write("".join(name + "\n" for name in invalid))


def cache_folder(sel: Selection) -> Path:
    return cache_root() / "conformance" / sel.key()


def is_generated(sel: Selection) -> bool:
    """Whether the selection's cache folder is complete (published after its generator finished)."""
    return (cache_folder(sel) / "complete.json").exists()


def generate(sel: Selection = Selection(), jobs: int = 2) -> Path:
    """Folder holding the selected tests (one sub-folder per test, each with desc.json), generating if needed."""
    final = cache_folder(sel)
    final.parent.mkdir(parents=True, exist_ok=True)
    with open(final.parent / f".{sel.key()}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one generator per selection; other processes wait, then reuse it
        _sweep_builds(final.parent, sel.key())
        if (final / "complete.json").exists():
            return final
        return _generate_into(final, sel, jobs)


def _sweep_builds(folder: Path, key: str) -> None:
    """Work folders of this selection that a killed generator left (SIGKILL, a test timeout: hundreds of MiB
    each). Called under the selection's lock, so no live generator owns one."""
    for left in folder.glob(f".build-{key}-*"):
        shutil.rmtree(left, ignore_errors=True)


def _generate_into(final: Path, sel: Selection, jobs: int) -> Path:
    work = Path(tempfile.mkdtemp(prefix=f".build-{sel.key()}-", dir=final.parent))
    try:
        jobs = max(1, min(jobs, len(sel.ops)))  # no empty shard (a generator run for no operator)
        shards = [list(sel.ops[i::jobs]) for i in range(jobs)]
        with ThreadPoolExecutor(jobs) as pool:
            list(pool.map(lambda i: _build_tests(shards[i], sel, work / f"shard{i}"), range(jobs)))
        tests = work / "tests"
        tests.mkdir()
        for desc in sorted(work.glob("shard*/**/desc.json")):
            if sel.tosa_version == "1.0" or adds_to_1_0(desc.parent):
                desc.parent.rename(tests / desc.parent.name)
        failures = sorted(n for f in work.glob("shard*/generator_failures.txt") for n in f.read_text().split())
        for shard in work.glob("shard*"):
            shutil.rmtree(shard, ignore_errors=True)
        count = sum(1 for _ in tests.iterdir())
        (work / "complete.json").write_text(
            json.dumps(
                {
                    "tests": count,
                    "tosa_tools": tools_version(),
                    "selection": sel.config(),
                    "generator_failures": failures,  # tests Arm's generator could not build
                }
            )
        )
        try:
            work.rename(final)
        except OSError:  # another process published the same selection first
            shutil.rmtree(work, ignore_errors=True)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return final


def adds_to_1_0(test: Path) -> bool:
    """Whether a generated test needs TOSA 1.1: a 1.1 operator, element type or block-scaled tensor, or types
    that no 1.0 row of its operator has (a negative test: whether its positive twin would; it is kept when its
    graph cannot even be read as one)."""
    from ...ir import load_graph
    from ...ir import ops as catalogue

    desc = json.loads((test / "desc.json").read_text())
    try:
        graph = load_graph(test / desc["tosa_file"])
    except TosaError:
        return True
    return catalogue.needs_1_1(graph, rows=not desc.get("expected_failure"))


def selected_tests(sel: Selection = Selection(), superset: Selection | None = None) -> list[Path]:
    """Sorted test folders of a selection (generated on first use). A selection of some operators takes its tests
    from a complete cache of `superset` (default: the same selection of every operator) when there is one, else
    generates only its own operators."""
    superset = superset or replace(sel, ops=VERSION_OPS[sel.tosa_version])
    if set(sel.ops) < set(superset.ops) and replace(superset, ops=sel.ops) == sel and is_generated(superset):
        tests = (cache_folder(superset) / "tests").iterdir()
        return sorted(p for p in tests if (p / "desc.json").exists() and test_operator(p.name) in sel.ops)
    return sorted(p for p in (generate(sel) / "tests").iterdir() if (p / "desc.json").exists())


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--negative", action="store_true")
    ap.add_argument("--ops", nargs="*")
    ap.add_argument("--per-class", type=int, default=1)
    ap.add_argument("--tosa-version", default="1.0", choices=sorted(VERSION_OPS))
    args = ap.parse_args()
    ops = operator_names(args.ops or VERSION_OPS[args.tosa_version], args.tosa_version)
    kind = "negative" if args.negative else "positive"
    s = Selection(ops, args.per_class, kind, tosa_version=args.tosa_version)
    print(generate(s))
