"""The `pte` kind of tests/fuzz.py (issue 46): mutants of the committed ExecuTorch programs (tests/data/pte), each
read by `tosa-vk info`, loaded and run on the reference backend and, where that loads, on Vulkan.

Structure-aware mutants (three in four) decode the program into the schema's object API (tosa_vk/formats/pte/fbs, flatc
--gen-object-api), change one thing the schema names and write it back: an integer field or list item (value
indices, operator / delegate indices, union tags, scalar types, sizes, dim orders, segment and buffer indices) set
to an edge value or another valid index, a list edited (items dropped, duplicated, swapped, emptied), one value
replaced by another of a different kind (an int where a tensor is needed), a name swapped (operators, delegate
ids). The rest are byte mutants of the file (fuzz.mutate_bytes). Outcomes as the other kinds: `error` (one
TosaError), `ok` (ran, Vulkan agreeing with the reference backend, or both refusing the run cleanly), `wrong`,
`traceback` (an internal error), `crash`, `hang`.

unpack / pack also serve tests that edit a committed program (tests/test_pte.py)."""

from __future__ import annotations

import contextlib
import io
import random
import struct
import traceback
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parent / "data" / "pte"
HEADER = struct.Struct("<4sIQQ")  # ExecuTorch's extended header at bytes 8..32: magic, its length, program size, base
HOST_NAMES = ("aten::add", "aten::permute_copy", "aten::cat", "aten::view_copy", "aten::squeeze_copy", "aten::relu",
              "quantized_decomposed::dequantize_per_channel", "quantized_decomposed::quantize_per_tensor",
              "aten::unsqueeze_copy", "aten::_to_dim_order_copy", "aten::nonexistent")  # fmt: skip
OVERLOADS = ("out", "dims_out", "dim_out", "", "Tensor_out")
BACKENDS = ("TOSABackend", "VgfBackend", "XNNPACKBackend", "")


def seeds() -> list[Path]:
    return sorted(DATA.glob("*/model.pte"))


def unpack(data: bytes) -> tuple[Any, bytes]:
    """A .pte's Program as the schema's object API (ProgramT) and the bytes of its data segments."""
    from tosa_vk.formats.pte.fbs.Program import ProgramT

    program = ProgramT.InitFromBuf(data, int.from_bytes(data[:4], "little"))
    segments = b""
    if data[8:12] == b"eh00":
        segments = data[HEADER.unpack_from(data, 8)[3] :]
    return program, segments


def pack(program: Any, segments: bytes = b"") -> bytes:
    """The .pte of `program` (a ProgramT) followed by `segments` (the segment table's offsets count from them),
    with ExecuTorch's extended header saying where they start."""
    import flatbuffers

    builder = flatbuffers.Builder(1 << 16)
    builder.Finish(program.Pack(builder), file_identifier=b"ET12")
    fb = bytes(builder.Output())
    if not segments:
        return fb
    size = len(fb) + HEADER.size
    base = -(-size // 16) * 16
    root = int.from_bytes(fb[:4], "little") + HEADER.size  # the only offset that crosses the inserted header
    head = root.to_bytes(4, "little") + fb[4:8] + HEADER.pack(b"eh00", HEADER.size, size, base)
    return head + fb[8:] + bytes(base - size) + segments


# ---- structure-aware mutations -------------------------------------------------------------------------------------


def _slots(obj: Any, path: str, out: list) -> None:
    """Every integer field and list of the object tree: (owner, attribute, list index or None, path)."""
    for name, value in vars(obj).items():
        here = f"{path}.{name}"
        if isinstance(value, np.ndarray):
            value = value.tolist()
            setattr(obj, name, value)
        if isinstance(value, bool) or value is None or isinstance(value, (str, bytes, float)):
            continue
        if isinstance(value, int):
            out.append((obj, name, None, here))
        elif isinstance(value, list):
            out.append((obj, name, "list", here))
            for i, item in enumerate(value):
                if isinstance(item, int) and not isinstance(item, bool):
                    out.append((obj, name, i, f"{here}[{i}]"))
                elif hasattr(item, "__dict__"):
                    _slots(item, f"{here}[{i}]", out)
        elif hasattr(value, "__dict__"):
            _slots(value, here, out)


def _edge(old: int, n_values: int, rng: random.Random) -> int:
    return rng.choice((0, 1, -1, -2, 2, 3, 4, 5, 6, 11, 255, 256, n_values - 1, n_values, n_values + 1,
                       rng.randrange(max(n_values, 1)), rng.randrange(max(n_values, 1)), old + 1, old - 1,
                       2**31 - 1, -(2**31), 2**15, 1 << 20, 4 * old, 0x7F))  # fmt: skip


def mutate_structure(program: Any, rng: random.Random) -> str:
    """One schema-aware edit of `program` in place; returns what it did (for the report)."""
    plan = program.executionPlan[0] if program.executionPlan else None
    n_values = len(plan.values or []) if plan is not None else 0
    slots: list = []
    _slots(program, "program", slots)
    what = rng.random()
    if what < 0.45:  # one integer: an index, a union tag, a scalar type, a size, a dim order entry, ...
        ints = [s for s in slots if s[2] != "list"]
        index_like = [s for s in ints if any(k in s[3] for k in ("args", "Index", "items", "inputs", "outputs",
                                                                   "Type", "dimOrder", "sizes", "index"))]  # fmt: skip
        obj, name, i, path = rng.choice(index_like if index_like and rng.random() < 0.8 else ints)
        if i is None:
            old = getattr(obj, name)
            setattr(obj, name, _edge(old, n_values, rng))
        else:
            items = getattr(obj, name)
            old = items[i]
            items[i] = _edge(old, n_values, rng)
        return f"{path}: {old} -> {getattr(obj, name) if i is None else getattr(obj, name)[i]}"
    if what < 0.7:  # a list edited
        lists = [s for s in slots if s[2] == "list" and getattr(s[0], s[1])]
        obj, name, _, path = rng.choice(lists)
        items = list(getattr(obj, name))
        how = rng.choice(("drop", "duplicate", "swap", "truncate", "empty", "none", "grow"))
        i = rng.randrange(len(items))
        if how == "drop":
            del items[i]
        elif how == "duplicate":
            items.insert(rng.randrange(len(items) + 1), items[i])
        elif how == "swap":
            j = rng.randrange(len(items))
            items[i], items[j] = items[j], items[i]
        elif how == "truncate":
            items = items[:i]
        elif how == "grow":
            items = items + items[: rng.randint(1, 8)]
        elif how == "empty":
            items = []
        setattr(obj, name, None if how == "none" else items)
        return f"{path}: {how}"
    if plan is None or not plan.values:
        return "no plan"
    if what < 0.88:  # a value replaced by one of another kind (an int where a tensor is needed, ...)
        i, j = rng.randrange(n_values), rng.randrange(n_values)
        if rng.random() < 0.7:
            plan.values[i] = plan.values[j]
            return f"values[{i}] := values[{j}]"
        plan.values[i] = _int_value(rng)
        return f"values[{i}] := an Int"
    if plan.operators and rng.random() < 0.6:  # a name swapped
        op = rng.choice(plan.operators)
        if rng.random() < 0.6:
            op.name = rng.choice(HOST_NAMES)
        else:
            op.overload = rng.choice(OVERLOADS)
        return f"operator {op.name}.{op.overload}"
    if plan.delegates:
        d = rng.choice(plan.delegates)
        d.id = rng.choice(BACKENDS)
        return f"delegate id {d.id}"
    return "nothing"


def _int_value(rng: random.Random) -> Any:
    from tosa_vk.formats.pte.fbs.EValue import EValueT
    from tosa_vk.formats.pte.fbs.Int import IntT
    from tosa_vk.formats.pte.fbs.KernelTypes import KernelTypes

    value, number = EValueT(), IntT()
    number.intVal = rng.choice((0, 1, -1, 7, 2**40))
    value.valType, value.val = KernelTypes.Int, number
    return value


def mutant(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A mutated .pte of `data` and what was done to it."""
    if rng.random() < 0.25:
        from fuzz import mutate_bytes

        return mutate_bytes(data, rng), "bytes"
    for _ in range(20):
        program, segments = unpack(data)
        done = [mutate_structure(program, rng) for _ in range(rng.choice((1, 1, 1, 2, 3)))]
        try:
            return pack(program, segments), "; ".join(done)
        except (struct.error, OverflowError, TypeError, ValueError, AttributeError):
            continue  # a value out of its field's type: draw another edit
    from fuzz import mutate_bytes

    return mutate_bytes(data, rng), "bytes"


# ---- the worker's case -----------------------------------------------------------------------------------------------


class PteWorker:
    """Runs each mutant as `tosa-vk info`, `load` + `run` on the reference backend, then on Vulkan."""

    def __init__(self, work: Path, seed_files: list[Path], seed: int):
        from fuzz import clean_errors

        import tosa_vk
        from tosa_vk.vulkan import Device

        self.tosa_vk, self.work, self.seed = tosa_vk, work, seed
        self.device = Device()
        self.errors = clean_errors()
        self.seeds = [(p, p.read_bytes()) for p in seed_files]

    def case(self, i: int) -> tuple[str, str]:
        rng = random.Random(self.seed * 1_000_003 + i)
        seed_path, data = self.seeds[i % len(self.seeds)]
        path = self.work / "case.pte"
        mutated, what = mutant(data, rng)
        path.write_bytes(mutated)
        label = f"{seed_path.parent.name}: {what}"[:300]
        stage = "info"
        try:
            self.info(path)
            stage = "load (reference)"
            want, feeds = self.run(path, "reference", i)
            if feeds is None:
                return "ok", f"{label}: loaded; too big to run"
            stage = "load (vulkan)"
            got, _ = self.run(path, "vulkan", i, feeds)
        except self.errors as err:
            if stage == "load (vulkan)":  # the reference backend ran it: Vulkan must too (its outputs compared below)
                return "wrong", f"{label}: Vulkan refused what the reference ran: {str(err).splitlines()[0][:200]}"
            return "error", f"{label}: {stage}: {type(err).__name__}: {str(err).splitlines()[0][:300]}"
        except Exception as err:
            frame = traceback.extract_tb(err.__traceback__)[-1]
            return "traceback", (
                f"{label}: {stage}: {type(err).__name__}: {str(err)[:200]} at {frame.filename}:{frame.lineno}"
            )
        from fuzz import same

        if isinstance(want, Exception) or isinstance(got, Exception):
            if isinstance(want, Exception) and isinstance(got, Exception):
                return "error", f"{label}: run: {type(want).__name__}: {str(want).splitlines()[0][:300]}"
            return "wrong", f"{label}: one backend ran, the other refused: {want if got is None else got}"[:400]
        return ("ok", label) if same(got, want) else ("wrong", f"{label}: Vulkan and reference outputs differ")

    def info(self, path: Path) -> None:
        """`tosa-vk info` and `--json`, its exceptions raised (cli.main would print them)."""
        from tosa_vk.tools.cli import build_parser

        for extra in ([], ["--json"]):
            args = build_parser().parse_args(["info", str(path), *extra])
            with contextlib.redirect_stdout(io.StringIO()):
                args.func(args)

    def run(self, path: Path, backend: str, case: int, feeds: dict | None = None) -> tuple[Any, dict | None]:
        """(outputs, or the clean error the run raised; the feeds, None when too big to run)."""
        from fuzz import feeds_for

        options: dict[str, Any] = {"device": self.device, "timeout_s": 20} if backend == "vulkan" else {}
        with self.tosa_vk.load(path, backend=backend, **options) as model:
            if feeds is None:
                feeds = feeds_for(model.inputs, case)
                if feeds is None:
                    return None, None
            try:
                return model.run(feeds), feeds
            except self.errors as err:
                if "did not finish within" in str(err):
                    raise
                return err, feeds
