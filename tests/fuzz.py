"""Mutation fuzzers for what tosa_vk reads from untrusted files (issue 15): .tosa graphs, .vgf containers (COMPUTE
segments, and GRAPH segments as Arm's model-converter writes them) and com.arm.VulkanCustomShader payloads.

    bash scripts/fuzz.sh tosa|vgf|graph|payload|glsl|cache|pte N [--seed S] [--hang-s T] [--json report.json]

`graph` mutates the SPIR-V words of GRAPH segments' modules (model-converter's and tosa_vk's exports), which
tosa_vk decodes into a graph (tosa_vk/formats/spirv_graph) before compiling it; `vgf` mutates the container's structure.

`glsl` writes model GLSL that tries to read a host file the way the GLSL preprocessor allows (`#include` spelled
with line continuations, comments, CR / CRLF / LFCR / mixed line ends, macros that build it, `#line` file names,
the include extensions, relative and absolute paths) or only looks like it (ordinary shaders with the same
noise), and runs it on each path a model's GLSL takes: a payload in a .tosa, a VGF COMPUTE module, a Program read
from bytes (what a program-cache entry holds). The files hold an identifier (an include shows in glslc's
messages) or a number (an include shows in the outputs); either in a message or an output is `wrong`.
TOSA_VK_FUZZ_GLSL_GATE=off switches the preprocessor gate off, to measure glslc's dependency check alone.
Before those route cases (the first GLSL_ROUTE_CASES of N), `glsl` runs the differential fuzzer of issue 46 over N
generated sources (tests/fuzz_glsl.py): no source the gate passes may make glslc or glslang open a file.

Each case mutates one seed file (seeded by case number: reproducible) and runs it as `tosa-vk run` would: load on
Vulkan, run with deterministic inputs, read the outputs. Outcomes:
  ok         ran, and the outputs match the oracle
  changed    ran, outputs differ from the seed's, and the mutation changed what the file computes (constant data,
             shader code, dispatch sizes: the file says so); the oracle cannot say more for VGFs and payloads
  error      a clean error (TosaError / VGFError / VulkanError / ShaderError: one message naming file and rule)
  wrong      ran and reported success, but the outputs disagree with the oracle
  traceback  any other exception (the CLI would print an internal error)
  crash      the worker process died (signal / abort)
  hang       no answer within --hang-s seconds
Oracles: .tosa — the reference backend on the same mutated file (both backends must agree, or both refuse);
.vgf / payload — the seed's outputs when the mutation left every field that defines the computation intact.

`cache` mutates a program-cache entry (issue 34) of a small graph — bytes, header JSON, consistent rewrites with
valid hashes (SPIR-V swapped or mutated, the Program or the pipeline data mutated, sections added or dropped, deep
nesting), the file replaced by a FIFO / a symlink to /dev/zero / a huge sparse file / a folder, a folder others may
write — and loads the model through that cache as `tosa_vk.load(path, cache_dir=...)` does. A load never fails
because of an entry (any exception from it is a traceback); outputs must be the uncached ones, except where a
consistent rewrite of the Program itself was run ("changed": the entry says to compute something else, which only
someone who may write the private folder can make it say; its run may then also fail cleanly: "error").

`pte` mutates the committed ExecuTorch programs (issue 46): schema-aware edits and bytes, each through `tosa-vk info`,
load and run on both backends (tests/fuzz_pte.py says how).

Cases run in a worker subprocess that is restarted after a crash or a hang; the parent only counts.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import math
import os
import random
import selectors
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

KINDS = ("tosa", "vgf", "graph", "payload", "glsl", "cache", "pte")
OUTCOMES = ("ok", "changed", "error", "wrong", "traceback", "crash", "hang")
MAX_ELEMENTS = 1 << 22  # a mutated graph with bigger tensors is loaded, not run (its feeds alone would be GBs)
INTERESTING = (0, 1, 2, 3, 4, 7, 8, 16, 64, 255, 256, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0x80000000,
               0xFFFFFFFF, 0xFFFFFFFE, 65535, 65536, 1 << 20, 1 << 24)  # fmt: skip


# ---- seeds ---------------------------------------------------------------------------------------------------------


def _seed_graphs(work: Path) -> dict:
    """Small graphs covering what the readers see: int8 convolution with zero points, fp32 matmul / tanh with a
    variable, control flow, data layout ops, and a custom GLSL payload."""
    import tosa_vk
    from tosa_vk import Builder

    sys.path.insert(0, str(Path(__file__).parent))
    from test_custom_ops import payload, single_custom_graph
    from test_vulkan_control_flow import branchy

    sys.path.insert(0, str(Path(__file__).parent.parent / "resources" / "examples"))
    import rnn_cell

    rng = np.random.default_rng(0)
    b = Builder()
    x = b.input("x", (1, 6, 6, 8), "int8")
    w = rng.integers(-128, 128, (4, 3, 3, 8)).astype(np.int8)
    y = b.conv2d(x, w, rng.integers(-100, 100, 4).astype(np.int32), np.int8(-3), np.int8(5), pad=[1, 1, 1, 1])
    y = b.op("ADD", y, b.const(rng.integers(-9, 9, (1, 1, 1, 4)).astype(np.int32)), name="y")
    assert not isinstance(y, tuple)
    b.output(y)
    conv = b.build()

    b = Builder()
    x = b.input("x", (2, 3, 4), "fp32")
    t = b.op("TRANSPOSE", x, perms=[2, 0, 1])
    r = b.op("REDUCE_SUM", t, axis=1)
    m = b.op("MAXIMUM", r, b.const(np.full((4, 1, 3), 0.5, np.float32)))
    z = b.op("CONCAT", [r, m], axis=1, name="z")
    assert not isinstance(z, tuple)
    b.output(z)
    layout = b.build()

    graphs = {
        "conv_int8": conv,
        "layout_fp32": layout,
        "rnn_cell": rnn_cell.build(),
        "branchy": branchy(),
        "custom_glsl": single_custom_graph(payload(), shape=(64,)),
    }
    for name, g in graphs.items():
        tosa_vk.save_graph(g, work / f"{name}.tosa")
    return graphs


def make_seeds(kind: str, work: Path) -> list[Path]:
    """The seed files of a kind, written into `work`."""
    if kind == "pte":  # the committed ExecuTorch programs (tests/fuzz_pte.py)
        import fuzz_pte

        return fuzz_pte.seeds()
    import tosa_vk
    from tosa_vk.formats.vgf_export import export_vgf

    graphs = _seed_graphs(work)
    if kind == "cache":  # (their entries are made by the worker: an entry is for one device and build)
        return [work / f"{n}.tosa" for n in ("conv_int8", "layout_fp32", "branchy")]
    if kind == "tosa":  # (the custom graph is the payload kind's: the reference backend cannot run it)
        return [work / f"{n}.tosa" for n in graphs if n != "custom_glsl"]
    if kind == "payload":
        return [work / "custom_glsl.tosa", _spirv_payload_seed(work)]
    if kind == "glsl":
        return _glsl_seeds(work)
    seeds = []
    if kind == "graph":
        from tosa_vk.formats.vgf_graph import export

        for name in ("conv_int8", "layout_fp32"):
            export(graphs[name], work / f"{name}.graph.vgf")
            seeds.append(work / f"{name}.graph.vgf")
            converted = _model_converter_seed(work, name)
            if converted is not None:
                seeds.append(converted)
        return seeds
    for name in ("conv_int8", "layout_fp32", "custom_glsl"):
        export_vgf(tosa_vk.compile(graphs[name], views=False), work / f"{name}.vgf")
        seeds.append(work / f"{name}.vgf")
    graph_vgf = _model_converter_seed(work, "layout_fp32")
    if graph_vgf is not None:
        seeds.append(graph_vgf)
    return seeds


def _spirv_payload_seed(work: Path) -> Path:
    from test_custom_ops import SCALE_ADD, payload, single_custom_graph

    import tosa_vk

    src, spv = work / "scale_add.comp", work / "scale_add.spv"
    src.write_text(SCALE_ADD)
    subprocess.run(["glslc", str(src), "-o", str(spv)], check=True, capture_output=True, timeout=120)
    code = base64.b64encode(spv.read_bytes()).decode()
    tosa_vk.save_graph(
        single_custom_graph(payload(shader_language="SPIR-V", shader_code=code), shape=(64,)), work / "spirv.tosa"
    )
    return work / "spirv.tosa"


def _model_converter_seed(work: Path, name: str) -> Path | None:
    """A VGF with a GRAPH segment, written by Arm's model-converter (None where the Arm SDK is not installed)."""
    try:
        from tosa_vk.tools.bench.anchors import arm_sdk

        exe = arm_sdk._tool("model_converter", "model-converter")
    except Exception:
        return None
    out = work / f"{name}.converted.vgf"
    done = subprocess.run(
        [exe, "-i", str(work / f"{name}.tosa"), "-o", str(out)], capture_output=True, text=True, timeout=300
    )
    return out if done.returncode == 0 and out.is_file() else None


# ---- mutations -----------------------------------------------------------------------------------------------------


def vgf_structure(data: bytes) -> list[tuple[int, int]]:
    """Byte ranges of a VGF that hold structure rather than SPIR-V code or constant values: the header, the
    model-sequence and model-resource sections, the constant section's table."""
    spans = [(0, 128)]
    for i in (1, 2, 3):
        offset, size = (
            int.from_bytes(data[16 + 16 * i : 24 + 16 * i], "little"),
            int.from_bytes(data[24 + 16 * i : 32 + 16 * i], "little"),
        )
        if i == 3:
            count = int.from_bytes(data[offset + 8 : offset + 16], "little") if size >= 16 else 0
            size = min(size, 16 + 24 * count)
        spans.append((offset, offset + size))
    return [(a, b) for a, b in spans if 0 <= a < b <= len(data)]


def mutate_graph_module(data: bytes, rng: random.Random) -> bytes:
    """The VGF with the SPIR-V of one GRAPH module mutated: words set to interesting values or to other ids,
    instructions' word counts changed, words deleted or duplicated (mutate_bytes on the code, aligned)."""
    from vgf import read_vgf, write_vgf

    vgf = read_vgf(data)
    module = rng.choice([m for m in vgf.modules if m.type == "GRAPH"])
    assert isinstance(module.code, bytes)
    code = bytearray(module.code)
    for _ in range(rng.randint(1, 3)):
        words = len(code) // 4
        if words <= 5:
            break
        at = 4 * rng.randrange(5, words)  # past the header: the decoder's rules, not the magic number's
        what = rng.random()
        if what < 0.5:  # an operand word: an interesting value or a nearby id
            word = int.from_bytes(code[at : at + 4], "little")
            value = rng.choice(INTERESTING) if rng.random() < 0.5 else word + rng.choice((-2, -1, 1, 2))
            code[at : at + 4] = (value & 0xFFFFFFFF).to_bytes(4, "little")
        elif what < 0.7:  # an instruction's word count or opcode
            code[at + rng.choice((0, 2))] ^= 1 << rng.randrange(8)
        elif what < 0.85:
            del code[at : at + 4 * rng.randint(1, 8)]
        else:
            code[at:at] = code[at : at + 4 * rng.randint(1, 8)]
    module.code = bytes(code)
    return write_vgf(vgf)


def mutate_bytes(data: bytes, rng: random.Random, spans: list[tuple[int, int]] | None = None) -> bytes:
    """1-4 of: bit flip, random byte, an interesting 32-bit little-endian word at an aligned offset, truncation,
    a deleted or duplicated chunk; at positions in `spans` three times in four when given."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if not buf:
            break
        what = rng.random()
        at = rng.randrange(len(buf))
        if spans and rng.random() < 0.75:
            a, b = rng.choice(spans)
            at = rng.randrange(a, min(b, len(buf))) if a < min(b, len(buf)) else at
        if what < 0.3:
            buf[at] ^= 1 << rng.randrange(8)
        elif what < 0.5:
            buf[at] = rng.randrange(256)
        elif what < 0.85:
            at -= at % 4
            word = rng.choice(INTERESTING) if rng.random() < 0.7 else int.from_bytes(buf[at : at + 4], "little") + 1
            buf[at : at + 4] = (word & 0xFFFFFFFF).to_bytes(4, "little")
        elif what < 0.92:
            del buf[at:]
        elif what < 0.96:
            del buf[at : at + rng.randint(1, 64)]
        else:
            buf[at:at] = buf[at : at + rng.randint(1, 64)]
    return bytes(buf)


PAYLOAD_VALUES: tuple[object, ...] = (
    0, 1, 2, -1, 8, 31, 100000, 2**31 - 1, 2**31, 2**32, 2**63, -(2**63), 1.5, 1e308, True, None, "",
    "x" * 4096, [], {}, [1], [1, 1, 1], [65535, 65535, 1], [2**31, 1, 1], [0, 1, 1], "Buffer", "Image",
    "Tensor", "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE", "VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER",
    "VK_DESCRIPTOR_TYPE_TENSOR_ARM", "VK_FORMAT_R32G32B32A32_SFLOAT", "VK_FORMAT_R8_SINT",
    "scale: 4", "a: 4, b: 4", "a: 4096", "main", "other", "GLSL", "SPIR-V", "HLSL",
)  # fmt: skip
GLSL_SNIPPETS = ("#include \"/etc/hostname\"\n", "while (true) {}\n", "y[idx + 1000000]", "x[idx]", "1.0 / 0.0",
                 "layout(set = 7, binding = 9) buffer Z { float z[]; };\n", "}", "{", ";", "binding = 2", "set = 1",
                 "local_size_x = 1024", "local_size_x = 0", "#define A A A\n", "uint", "gl_GlobalInvocationID.y",
                 "layout(push_constant) uniform P { float s[64]; } p;\n", "\0")  # fmt: skip


def mutate_payload(attrs: bytes, rng: random.Random) -> tuple[bytes, set[str]]:
    """A mutated payload (JSON-aware) and the keys it touched."""
    data = json.loads(attrs)
    if rng.random() < 0.1:
        raw = mutate_bytes(attrs, rng)
        try:  # which keys the byte-level change reached, where it still parses
            after = json.loads(raw)
            return raw, {k for k in set(data) | set(after) if data.get(k) != after.get(k)}
        except (ValueError, TypeError, AttributeError):
            return raw, {"*bytes*"}
    touched: set[str] = set()
    for _ in range(rng.randint(1, 3)):
        key = rng.choice(sorted(data))
        what = rng.random()
        touched.add(key)
        if key == "shader_code" and what < 0.6:
            data[key] = _mutate_code(data[key], data.get("shader_language"), rng)
        elif what < 0.85:
            data[key] = rng.choice(PAYLOAD_VALUES)
        elif what < 0.95:
            del data[key]
        else:
            data[rng.choice(["input_1_binding", "output_1_type", "input_0_sampler", "extra"])] = rng.choice(
                PAYLOAD_VALUES
            )
    return json.dumps(data, sort_keys=True).encode(), touched


def _mutate_code(code, language, rng: random.Random):
    if not isinstance(code, str):
        return code
    if language == "SPIR-V":
        try:
            spirv = base64.b64decode(code)
        except ValueError:
            return code
        return base64.b64encode(mutate_bytes(spirv, rng)).decode()
    at = rng.randrange(len(code) + 1)
    if rng.random() < 0.5:
        return code[:at] + rng.choice(GLSL_SNIPPETS) + code[at:]
    return code[:at] + code[at + rng.randint(1, 8) :]


# ---- model GLSL that tries to read host files ----------------------------------------------------------------------

SECRET_WORD, SECRET_VALUE = "host_secret_7f3a", 31337.0
GLSL_BASE = """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer In { float x[]; };
layout(set = 0, binding = 1) buffer Out { float y[]; };
void main() {
  uint idx = gl_GlobalInvocationID.x;
  if (idx >= y.length()) { return; }
  y[idx] = x[idx] * 2.0 + 5.0
@SLOT@;
}
"""
GLSL_ROUTES = ("payload", "vgf", "program")


def _glsl_seeds(work: Path) -> list[Path]:
    """The secret files, a payload graph and a VGF of one COMPUTE segment (their GLSL is replaced per case)."""
    import tosa_vk
    from tosa_vk.abi import custom_payload
    from tosa_vk.formats.vgf_export import export_vgf

    (work / "secrets").mkdir()
    (work / "secrets" / "word.glsl").write_text(f"+ {SECRET_WORD}\n")
    (work / "secrets" / "number.glsl").write_text(f"+ {SECRET_VALUE}\n")
    sys.path.insert(0, str(Path(__file__).parent))
    from test_custom_ops import payload, single_custom_graph

    data = json.loads(payload(shader_code=GLSL_BASE.replace("@SLOT@", ""), workgroup_sizes=[1, 1, 1]))
    graph = single_custom_graph(json.dumps(data, sort_keys=True).encode(), shape=(64,))
    assert custom_payload.parse(graph.main.operators[0].attrs["implementation_attrs"], 1, 1, "seed")
    tosa_vk.save_graph(graph, work / "glsl_payload.tosa")
    export_vgf(tosa_vk.compile(graph, views=False), work / "glsl_compute.vgf")
    return [work / "glsl_payload.tosa", work / "glsl_compute.vgf"]


def _obfuscate(word: str, rng: random.Random) -> str:
    """`word` with line splices (any line end), and between tokens nothing else the preprocessor would see."""
    out = []
    for ch in word:
        while rng.random() < 0.25:
            out.append("\\" + rng.choice(["\n", "\r\n", "\r"]))
        out.append(ch)
    return "".join(out)


def _gap(rng: random.Random) -> str:
    """What may stand between `#` and a directive's name: spaces, tabs, comments, splices."""
    parts = [""]
    for _ in range(rng.randint(0, 3)):
        parts.append(rng.choice([" ", "\t", "/**/", "/* include */", "\\\n", "\\\r\n", " \\\r", "\v", "\f"]))
    return "".join(parts)


def mutate_glsl(work: Path, rng: random.Random) -> tuple[str, bool]:
    """(GLSL source, whether it tries to read a host file)."""
    target = work / "secrets" / rng.choice(["word.glsl", "number.glsl"])
    depth = rng.randint(0, 12)
    path = rng.choice([str(target), "../" * depth + str(target).lstrip("/"), target.name, f"secrets/{target.name}"])
    quoted = f'"{path}"' if rng.random() < 0.8 else f"<{path}>"
    hostile = rng.random() < 0.75
    lines: list[str] = []
    if hostile:
        trick = rng.randrange(9)
        if trick == 0:  # the directive itself, obfuscated
            slot = "#" + _gap(rng) + _obfuscate("include", rng) + _gap(rng) + " " + quoted
        elif trick == 1:  # a `//` comment continued onto the directive's line (a directive before GLSL 4.20)
            slot = "// note " + rng.choice(["\\\n", "\\\r\n", "\\\r"]) + "#include " + quoted
        elif trick == 2:  # a block comment whose end is spliced
            slot = "/* *" + rng.choice(["\\\n", "\\\r"]) + "/ #include " + quoted
        elif trick == 3:  # a macro names the directive (directive names are never expanded)
            lines.append("#define INC include")
            slot = "#INC " + quoted
        elif trick == 4:  # token pasting builds it
            lines.append("#define CAT(a, b) a##b")
            slot = "#CAT(inc, lude) " + quoted
        elif trick == 5:  # the include extensions
            lines.append("#extension " + rng.choice(["GL_GOOGLE_include_directive", "GL_ARB_shading_language_include"])
                         + " : enable")  # fmt: skip
            slot = "#include " + quoted
        elif trick == 6:  # a file name in #line
            slot = "#line 9 " + quoted
        elif trick == 7:  # a NUL or another control character before the directive
            slot = rng.choice(["\x00", "\x01", "\x1b", "\x7f"]) + "\n#include " + quoted
        else:  # an include inside a disabled region
            slot = "#if 0\n#include " + quoted + "\n#endif"
    else:  # ordinary GLSL with the same noise: comments that mention include, continued comments, spaces
        slot = rng.choice(["", "// include nothing here", "/* #include is not used */", "// a \\\n comment", "+ 0.0"])
    source = GLSL_BASE.replace("@SLOT@", "\n".join(lines) + ("\n" if lines else "") + slot + "\n")
    if lines:  # the #define / #extension lines must follow #version
        head, rest = source.split("\n", 1)
        source = head + "\n" + "\n".join(lines) + "\n" + rest.replace("\n".join(lines) + "\n", "", 1)
    ends = rng.choice(["\n", "\r\n", "\r", "\n\r", "mixed"])
    if ends == "mixed":
        source = "".join(c if c != "\n" else rng.choice(["\n", "\r\n", "\r"]) for c in source)
    elif ends != "\n":
        source = source.replace("\n", ends)
    return source, hostile


def run_glsl(worker, source: str, route: str) -> dict:
    """Runs model GLSL on one route; the outputs (x = 0..63)."""
    import dataclasses

    from tosa_vk.program import Kernel, Program
    from tosa_vk.vulkan.runtime import Runtime

    feeds = {"x": np.arange(64, dtype=np.float32)}
    path = worker.work / "case"
    if route == "payload":
        graph = worker.tosa_vk.load_graph(worker.work / "glsl_payload.tosa")
        op = graph.main.operators[0]
        data = json.loads(bytes(op.attrs["implementation_attrs"]))
        data["shader_code"] = source
        op.attrs["implementation_attrs"] = json.dumps(data, sort_keys=True).encode()
        worker.tosa_vk.save_graph(graph, path.with_suffix(".tosa"))
        with worker.tosa_vk.load(path.with_suffix(".tosa"), backend="vulkan", device=worker.device, timeout_s=20) as m:
            return m.run(feeds)
    if route == "vgf":
        from vgf import Module, read_vgf, save_vgf

        vgf = read_vgf(worker.work / "glsl_compute.vgf")
        i = next(i for i, m in enumerate(vgf.modules) if m.type == "COMPUTE")
        vgf.modules[i] = Module(vgf.modules[i].name, code=source, language="GLSL")
        save_vgf(vgf, path.with_suffix(".vgf"))
        with worker.tosa_vk.load(path.with_suffix(".vgf"), device=worker.device, timeout_s=20) as m:
            return m.run(feeds)
    program = worker.tosa_vk.compile(worker.tosa_vk.load_graph(worker.work / "glsl_payload.tosa"))
    steps = [dataclasses.replace(k, source=source) if isinstance(k, Kernel) and k.source else k for k in program.steps]
    program = Program.from_bytes(dataclasses.replace(program, steps=steps).to_bytes())  # as a cache entry holds it
    runtime = Runtime(program, worker.device, timeout_s=20)
    try:
        return runtime.run(feeds)
    finally:
        runtime.close()


def glsl_case(worker, rng: random.Random, i: int) -> tuple[str, str]:
    if os.environ.get("TOSA_VK_FUZZ_GLSL_GATE") == "off":  # the compiler's own line of defence, measured alone
        from tosa_vk.abi import custom_payload
        from tosa_vk.formats import vgf_run
        from tosa_vk.vulkan import shaders

        for module in (custom_payload, vgf_run, shaders):
            module.refusal = lambda source: None  # type: ignore[attr-defined]
    source, hostile = mutate_glsl(worker.work, rng)
    route = GLSL_ROUTES[i % len(GLSL_ROUTES)]
    try:
        got = run_glsl(worker, source, route)
    except worker.errors as err:
        if SECRET_WORD in str(err) or str(SECRET_VALUE) in str(err):
            return "wrong", f"{route}: a host file's content in the message: {str(err)[:200]}"
        return "error", f"{route}: {type(err).__name__}: {str(err).splitlines()[0][:200]}"
    except Exception as err:
        frame = traceback.extract_tb(err.__traceback__)[-1]
        return "traceback", f"{route}: {type(err).__name__}: {str(err)[:200]} at {frame.filename}:{frame.lineno}"
    y = np.asarray(next(iter(got.values())), np.float64)
    if np.any(np.abs(y - (np.arange(64) * 2 + 5)) > 1000):
        return "wrong", f"{route}: a host file's content in the outputs"
    if hostile:
        return "ok", f"{route}: ran without reading the file"
    return "ok", f"{route}: ordinary GLSL ran"


# ---- the worker: one case at a time --------------------------------------------------------------------------------


def clean_errors() -> tuple[type[Exception], ...]:
    from tosa_vk import TosaError
    from tosa_vk.vulkan import VulkanError
    from tosa_vk.vulkan.shaders import ShaderError
    from vgf import VGFError

    return (TosaError, VGFError, VulkanError, ShaderError)


def feeds_for(inputs: dict, seed: int) -> dict[str, np.ndarray] | None:
    """Deterministic feeds for a model's inputs (None: too big to run)."""
    from tosa_vk.ir import DType

    rng = np.random.default_rng(seed)
    out = {}
    for name, (shape, dtype_name) in inputs.items():
        if math.prod(abs(int(d)) for d in shape) > MAX_ELEMENTS:
            return None
        dtype = DType[dtype_name] if dtype_name in DType.__members__ else None
        np_dtype = np.dtype(dtype.numpy) if dtype is not None else np.dtype(dtype_name)
        if np_dtype.kind in "iu":
            info = np.iinfo(np_dtype)
            lo, hi = max(info.min, -100), min(info.max, 100)
            out[name] = rng.integers(lo, hi + 1, shape).astype(np_dtype)
        elif np_dtype.kind == "b":
            out[name] = rng.random(shape) < 0.5
        else:
            out[name] = (rng.random(shape) * 2 - 1).astype(np_dtype)
    return out


def same(a: dict, b: dict) -> bool:
    """Outputs equal in order (a renamed output is the same output), floats to a loose tolerance."""
    if len(a) != len(b):
        return False
    for x, y in zip(a.values(), b.values()):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if x.dtype.kind in "fc" or "float" in x.dtype.name:
            x64, y64 = x.astype(np.float64), y.astype(np.float64)
            if not np.allclose(x64, y64, rtol=1e-3, atol=1e-5, equal_nan=True):
                return False
        elif not np.array_equal(x, y):
            return False
    return True


def graph_too_big(path: Path) -> bool:
    """Any tensor with more elements than the harness runs (the reference backend would allocate it)."""
    import tosa_vk

    graph = tosa_vk.load_graph(path)
    for _, block in graph.blocks():
        for t in block.tensors.values():
            if math.prod(abs(int(d)) for d in t.shape) > MAX_ELEMENTS:
                return True
    return False


class Worker:
    def __init__(self, kind: str, work: Path, seeds: list[Path], seed: int):
        import tosa_vk
        from tosa_vk.vulkan import Device

        self.kind, self.work, self.seed = kind, work, seed
        self.tosa_vk = tosa_vk
        self.device = Device()
        self.errors: tuple[type[Exception], ...] = clean_errors()
        self.seeds = [(p, p.read_bytes()) for p in seeds]
        self.baseline = {p: self.baseline_of(p) for p, _ in self.seeds}
        self.signatures = {p: self.signature(p) for p, _ in self.seeds}

    def baseline_of(self, path: Path) -> dict | None:
        """The seed's outputs; None for a seed tosa_vk refuses."""
        try:
            return self.run_file(path, 0)[1]
        except self.errors:
            return None

    def run_file(self, path: Path, case: int) -> tuple[dict | None, dict | None]:
        """(outputs on Vulkan or None when too big to run, feeds)."""
        if path.suffix == ".vgf":
            from vgf import inspect, read_vgf

            inspect.describe(read_vgf(path), str(path))  # `tosa-vk inspect` reads every file it is given
            model: Any = self.tosa_vk.load(path, device=self.device, timeout_s=20)  # GRAPH segments: decoded
        else:
            if graph_too_big(path):
                self.tosa_vk.load(path, backend="vulkan", device=self.device, timeout_s=20).close()
                return None, None
            model = self.tosa_vk.load(path, backend="vulkan", device=self.device, timeout_s=20)
        with model:
            feeds = feeds_for(model.inputs, case)
            if feeds is None:
                return None, None
            return feeds, model.run(feeds)

    def signature(self, path: Path):
        """What defines a VGF's computation apart from data (constant bytes, shader code, dispatch sizes, declared
        shapes) and names: compared with the seed's to tell a legitimately changed output from a wrong one."""
        if path.suffix == ".vgf":
            from vgf import read_vgf

            v = read_vgf(path)
            return repr(
                (
                    [(m.type, m.entry_point, m.language) for m in v.modules],
                    [(s.type, s.set_infos, s.inputs, s.outputs) for s in v.segments],  # module_index: which code
                    [(r.category, r.descriptor_type, r.format, r.sampler) for r in v.resources],
                    _sharing(v),
                    [b.mrt_index for b in v.inputs],  # (their binding numbers mean nothing to a runtime)
                    [b.mrt_index for b in v.outputs],
                    [(c.mrt_index, len(c.data)) for c in v.constants],
                )
            )
        return None

    def case(self, i: int) -> tuple[str, str]:
        rng = random.Random(self.seed * 1_000_003 + i)
        seed_path, data = self.seeds[i % len(self.seeds)]
        path = self.work / f"case{seed_path.suffix}"
        touched: set[str] = set()
        if self.kind == "glsl":
            return glsl_case(self, rng, i)
        if self.kind == "payload":
            graph = self.tosa_vk.load_graph(seed_path)
            op = graph.main.operators[0]
            attrs, touched = mutate_payload(bytes(op.attrs["implementation_attrs"]), rng)
            op.attrs["implementation_attrs"] = attrs
            self.tosa_vk.save_graph(graph, path)
        elif self.kind == "graph":
            path.write_bytes(mutate_graph_module(data, rng))
        else:
            path.write_bytes(mutate_bytes(data, rng, vgf_structure(data) if self.kind == "vgf" else None))
        try:
            feeds, got = self.run_file(path, 0)
        except self.errors as err:
            return "error", f"{type(err).__name__}: {str(err).splitlines()[0][:300]}"
        except Exception as err:
            frame = traceback.extract_tb(err.__traceback__)[-1]
            return "traceback", f"{type(err).__name__}: {str(err)[:200]} at {frame.filename}:{frame.lineno}"
        if got is None:
            return "ok", "loaded; too big to run"
        if self.kind == "tosa":
            try:
                want = self.tosa_vk.load(path, backend="reference").run(feeds)
            except self.errors as err:
                if "REQUIRE(" in str(err):  # the mutated graph breaks a REQUIRE: the spec leaves results unpredictable
                    return "ok", "REQUIRE violated: any result conforms"
                return "wrong", f"Vulkan ran what the reference backend refuses: {str(err).splitlines()[0][:200]}"
            return ("ok", "") if same(got, want) else ("wrong", "Vulkan and reference outputs differ")
        baseline = self.baseline[seed_path]
        if baseline is None:
            return "wrong", "ran a file whose seed tosa_vk refuses"
        if same(got, baseline):
            return "ok", ""
        if self.kind == "vgf" and self.signature(path) == self.signatures[seed_path]:
            return "changed", "constant data / shader code / dispatch / declared shapes changed"
        if self.kind == "graph":  # a different module is a different graph: it must run or be refused, cleanly
            return "changed", "the graph module's code changed"
        if self.kind == "payload" and touched <= {"shader_code", "workgroup_sizes", "push_constants"}:
            return "changed", f"changed {sorted(touched)}"
        return "wrong", f"outputs changed; touched {sorted(touched) or 'structure'}"


def _sharing(v) -> list[tuple[int, ...]]:
    """Which resources share memory (alias groups of two or more; a group's number itself means nothing)."""
    groups: dict[int, list[int]] = {}
    for i, r in enumerate(v.resources):
        if r.alias_group is not None:
            groups.setdefault(r.alias_group, []).append(i)
    return sorted(tuple(g) for g in groups.values() if len(g) > 1)


# ---- the cache kind: program-cache entries --------------------------------------------------------------------------

ENTRY_MUTATIONS = ("bytes", "header", "swap-spirv", "spirv-words", "program", "program-bytes", "pipeline-data",
                   "sections", "deep", "fifo", "dev-zero", "sparse", "folder", "symlink", "open-folder",
                   "usage")  # fmt: skip


def mutate_program(data: bytes, rng: random.Random) -> bytes:
    """A Program (Program.to_bytes) with 1-3 fields of its kernels, buffers, constants or steps changed, re-encoded:
    what a consistent rewrite of an entry can make a cached program say."""
    from dataclasses import replace

    from tosa_vk.program import Buffer, Kernel, Program, walk

    program = Program.from_bytes(data)
    for _ in range(rng.randint(1, 3)):
        kernels = [s for s in walk(program.steps) if isinstance(s, Kernel)]
        what = rng.random()
        if what < 0.45 and kernels:
            k = rng.choice(kernels)
            field = rng.choice(["bindings", "push_constants", "groups", "defines", "shader", "specs", "entry",
                                "descriptors", "slots", "reads", "writes", "texels"])  # fmt: skip
            value: Any
            if field == "bindings":
                names = list(program.buffers)
                value = rng.choice([k.bindings[:-1], k.bindings + k.bindings[:1], tuple(reversed(k.bindings)),
                                    tuple(rng.choice(names) for _ in k.bindings)])  # fmt: skip
            elif field == "push_constants":
                value = mutate_bytes(k.push_constants, rng) if k.push_constants else b"\xff" * 16
            elif field == "groups":
                value = tuple(rng.choice((0, 1, 2, 3, 64, 1000, 65535, 65536, -1)) if rng.random() < 0.5 else g
                              for g in k.groups)  # fmt: skip
            elif field == "defines":
                value = tuple((n, rng.choice(("0", "1", "2", "16", "float", "int8_t", v + "x"))) for n, v in k.defines)
            elif field == "shader":
                value = rng.choice([kk.shader for kk in kernels] + ["elementwise_binary/binary", "nonexistent/x"])
            elif field == "specs":
                value = tuple((n, rng.choice(INTERESTING) if rng.random() < 0.5 else v) for n, v in k.specs)
            elif field == "entry":
                value = rng.choice(("main", "other", ""))
            elif field == "descriptors":
                value = ("VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER",) * len(k.bindings)
            elif field == "slots":
                value = tuple((rng.choice((0, 1, 4)), rng.randrange(8)) for _ in k.bindings)
            elif field == "texels":
                value = ("VK_FORMAT_R32_SFLOAT",) * len(k.bindings)
            else:
                value = ()
            program.steps = [replace(s, **{field: value}) if s is k else s for s in program.steps]
        elif what < 0.7 and program.buffers:
            name = rng.choice(sorted(program.buffers))
            b = program.buffers[name]
            field = rng.choice(["offset", "nbytes", "shape", "dtype"])
            value = {
                "offset": rng.choice((0, -16, b.offset + 4, program.arena_bytes, 1 << 40)),
                "nbytes": rng.choice((0, 4, b.nbytes * 2, 1 << 40)),
                "shape": rng.choice(((), (1 << 20,), tuple(reversed(b.shape)))),
                "dtype": np.dtype(rng.choice(("int8", "float64", "bool"))),
            }[field]
            program.buffers[name] = Buffer(**{**b.__dict__, field: value})
        elif what < 0.8 and program.constants:
            name = rng.choice(sorted(program.constants))
            c = program.constants[name]
            program.constants[name] = rng.choice([c * 0, c[..., :1] if c.ndim else c, np.zeros(1 << 10, c.dtype)])
        elif what < 0.9:
            program.arena_bytes = rng.choice((0, 16, program.arena_bytes // 2, 1 << 40))
        elif program.steps:
            at = rng.randrange(len(program.steps))
            step = program.steps[at]
            program.steps = rng.choice([program.steps[:at] + program.steps[at + 1 :],
                                        program.steps[:at] + [step, step] + program.steps[at + 1 :],
                                        [step] + program.steps[:at] + program.steps[at + 1 :]])  # fmt: skip
    return program.to_bytes()


class CacheWorker:
    """Loads the seed graphs through mutated program-cache entries (the `cache` kind)."""

    def __init__(self, work: Path, seeds: list[Path], seed: int):
        os.environ["TOSA_VK_CACHE"] = str(work / "root")  # the SPIR-V cache too: private to this run
        import tosa_vk
        from tosa_vk.store import program_cache
        from tosa_vk.tools.conformance.shipped import manifest
        from tosa_vk.vulkan import Device
        from tosa_vk.vulkan.builtin import library

        self.tosa_vk, self.pc, self.work, self.seed = tosa_vk, program_cache, work, seed
        self.device = Device()
        self.errors = clean_errors()
        self.foreign = [m for m in (library().get(v) for v in manifest()[:8]) if m]  # valid modules of other kernels
        self.seeds = []
        for path in seeds:
            folder = work / f"seed-{path.stem}"
            with tosa_vk.load(path, backend="vulkan", device=self.device, cache_dir=False) as model:
                feeds = feeds_for(model.inputs, 0)
                want = model.run(feeds)
            tosa_vk.load(path, backend="vulkan", device=self.device, cache_dir=folder).close()
            (entry,) = folder.glob(f"*{program_cache.SUFFIX}")
            self.seeds.append((path, entry.name, entry.read_bytes(), feeds, want))

    def mutate(self, data: bytes, target: Path, rng: random.Random) -> tuple[str, bool]:
        """Writes the mutated entry at `target`; (the mutation, whether it rewrote the Program consistently)."""
        pc = self.pc
        (n,) = pc._U32.unpack_from(data, len(pc.MAGIC))
        head = data[len(pc.MAGIC) + 4 : len(pc.MAGIC) + 4 + n]
        header = json.loads(head)
        entry = pc.decode(data, header)
        assert entry is not None
        what = rng.choice(ENTRY_MUTATIONS)
        program_changed = False

        def rewrite(program=entry.program, pipeline=entry.pipeline_data, spirv=entry.spirv) -> None:
            target.write_bytes(pc.encode(header, pc.Entry(program, pipeline, list(spirv))))

        if what == "bytes":
            target.write_bytes(mutate_bytes(data, rng))
        elif what == "header":
            edited = dict(header)
            key = rng.choice([*sorted(header), "extra"])
            edited[key] = rng.choice(PAYLOAD_VALUES)
            text = json.dumps(edited, sort_keys=rng.random() < 0.5).encode()
            if rng.random() < 0.2:
                text = b"[" * 100_000 + b"]" * 100_000
            target.write_bytes(pc.MAGIC + pc._U32.pack(len(text)) + text + data[len(pc.MAGIC) + 4 + n :])
        elif what == "swap-spirv":
            spirv = list(entry.spirv)
            if len(spirv) > 1 and rng.random() < 0.5:
                i, j = rng.sample(range(len(spirv)), 2)
                spirv[i], spirv[j] = spirv[j], spirv[i]
            else:
                spirv[rng.randrange(len(spirv))] = rng.choice(self.foreign)
            rewrite(spirv=spirv)
        elif what == "spirv-words":
            spirv = list(entry.spirv)
            i = rng.randrange(len(spirv))
            spirv[i] = _mutate_words(spirv[i], rng)
            rewrite(spirv=spirv)
        elif what == "program":
            program_changed = True
            rewrite(program=mutate_program(entry.program, rng))
        elif what == "program-bytes":
            program_changed = True
            rewrite(program=mutate_bytes(entry.program, rng))
        elif what == "pipeline-data":
            rewrite(pipeline=mutate_bytes(entry.pipeline_data, rng) if entry.pipeline_data else b"\x00" * 32)
        elif what == "sections":
            spirv = list(entry.spirv)
            if rng.random() < 0.5 and spirv:
                del spirv[rng.randrange(len(spirv))]
            else:
                spirv.insert(rng.randrange(len(spirv) + 1), rng.choice(self.foreign + [b"", b"\x03\x02\x23\x07"]))
            rewrite(spirv=spirv)
        elif what == "deep":
            text = b"[" * 200_000 + b"]" * 200_000
            nested = b"TOSAVK-DATA\x00\x00\x00\x00\x01" + struct.pack("<Q", len(text)) + text
            rewrite(program=nested)
        elif what == "fifo":
            os.mkfifo(target)
        elif what == "dev-zero":
            target.symlink_to("/dev/zero")
        elif what == "sparse":
            with open(target, "wb") as f:
                f.truncate(rng.choice((2 << 30, 30 << 30)))
        elif what == "folder":
            target.mkdir()
        elif what == "symlink":  # to a whole, valid entry: not a regular file of the folder
            real = self.work / "elsewhere.tvp"
            real.write_bytes(data)
            target.symlink_to(real)
        elif what == "open-folder":
            target.write_bytes(data)
            target.parent.chmod(rng.choice((0o770, 0o777, 0o722)))
        else:  # "usage": a valid entry, a usage total that is no count
            target.write_bytes(data)
            (target.parent / pc.USAGE).write_text(rng.choice(("-99999999999", "abc", "1e99", "", "9" * 40)))
        return what, program_changed

    def case(self, i: int) -> tuple[str, str]:
        import shutil

        rng = random.Random(self.seed * 1_000_003 + i)
        path, name, data, feeds, want = self.seeds[i % len(self.seeds)]
        folder = self.work / "case"
        if folder.exists():
            folder.chmod(0o700)
            shutil.rmtree(folder)
        folder.mkdir(mode=0o700)
        what, program_changed = self.mutate(data, folder / name, rng)
        try:
            model: Any = self.tosa_vk.load(path, backend="vulkan", device=self.device, cache_dir=folder, timeout_s=10)
        except Exception as err:  # the entry made the load fail
            frame = traceback.extract_tb(err.__traceback__)[-1]
            return (
                "traceback",
                f"{what}: load: {type(err).__name__}: {str(err)[:200]} at {frame.filename}:{frame.lineno}",
            )
        with model:
            used = program_changed and model.cached
            try:
                got = model.run(feeds)
            except self.errors as err:
                if used:
                    return "error", f"{what}: {type(err).__name__}: {str(err).splitlines()[0][:300]}"
                return "traceback", f"{what}: run: {type(err).__name__}: {str(err).splitlines()[0][:200]}"
            except Exception as err:
                frame = traceback.extract_tb(err.__traceback__)[-1]
                return (
                    "traceback",
                    f"{what}: run: {type(err).__name__}: {str(err)[:200]} at {frame.filename}:{frame.lineno}",
                )
        if same(got, want):
            return "ok", f"{what}: {'cached' if model.cached else 'rebuilt'}"
        if used:
            return "changed", f"{what}: the rewritten Program ran"
        return "wrong", f"{what}: outputs differ ({'cached' if model.cached else 'rebuilt'})"


def _mutate_words(module: bytes, rng: random.Random) -> bytes:
    """SPIR-V words past the header set to interesting values, nearby ids, or deleted / duplicated."""
    code = bytearray(module)
    for _ in range(rng.randint(1, 3)):
        words = len(code) // 4
        if words <= 5:
            break
        at = 4 * rng.randrange(5, words)
        what = rng.random()
        if what < 0.6:
            word = int.from_bytes(code[at : at + 4], "little")
            value = rng.choice(INTERESTING) if rng.random() < 0.5 else word + rng.choice((-2, -1, 1, 2))
            code[at : at + 4] = (value & 0xFFFFFFFF).to_bytes(4, "little")
        elif what < 0.8:
            del code[at : at + 4 * rng.randint(1, 8)]
        else:
            code[at:at] = code[at : at + 4 * rng.randint(1, 8)]
    return bytes(code)


def worker_main(kind: str, work: Path, seed: int) -> None:
    seeds = [Path(p) for p in json.loads((work / "seeds.json").read_text())]
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # stray prints must not corrupt the protocol
    if kind == "pte":
        from fuzz_pte import PteWorker

        worker: Any = PteWorker(work, seeds, seed)
    else:
        worker = CacheWorker(work, seeds, seed) if kind == "cache" else Worker(kind, work, seeds, seed)
    out.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        i = int(line)
        outcome, detail = worker.case(i)
        out.write(json.dumps({"case": i, "outcome": outcome, "detail": detail}) + "\n")
        if "did not finish within" in detail:
            break  # the timed-out work keeps the device's threads busy: the parent starts a fresh worker


# ---- the parent: counts, restarts, reports -------------------------------------------------------------------------


class Runner:
    def __init__(self, kind: str, work: Path, seed: int, hang_s: float):
        self.kind, self.work, self.seed, self.hang_s = kind, work, seed, hang_s
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", self.kind, str(self.work), "--seed", str(self.seed)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        reply = self.read(600)
        if reply is None or not reply.get("ready"):
            raise RuntimeError(f"the fuzz worker did not start (seeds failed?): {reply}")

    def read(self, timeout: float) -> dict | None:
        assert self.proc is not None and self.proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            if not sel.select(timeout):
                return None
            line = self.proc.stdout.readline()
            return json.loads(line) if line else {"eof": True}
        finally:
            sel.close()

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def case(self, i: int) -> tuple[str, str]:
        if self.proc is None:
            self.start()
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(f"{i}\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        reply = self.read(self.hang_s)
        if reply is None:
            self.stop()
            return "hang", f"no answer within {self.hang_s} s"
        if "eof" in reply:
            code = self.proc.wait()
            self.proc = None
            return "crash", f"worker exit status {code}"
        if "did not finish within" in reply["detail"]:
            self.stop()  # (the worker leaves after a timed-out run)
        return reply["outcome"], reply["detail"]


GLSL_ROUTE_CASES = 150  # end-to-end GLSL cases per `glsl` run (after its N differential sources)


def fuzz(kind: str, n: int, seed: int = 0, hang_s: float = 120.0, start: int = 0, log=None) -> dict:
    """Runs cases start..start+n-1 of a kind; returns {"counts": {outcome: n}, "findings": [...], "seconds"}; for
    `glsl` also "differential": fuzz_glsl's table over n sources, whose findings join the report's."""
    if kind != "glsl":
        return _fuzz(kind, n, seed, hang_s, start, log)
    from fuzz_glsl import differential

    diff = differential(n, seed, start, log)
    report = _fuzz(kind, min(n, GLSL_ROUTE_CASES), seed, hang_s, start, log)
    for f in diff["findings"]:
        report["counts"][f["outcome"]] += 1
    report["findings"] = diff["findings"] + report["findings"]
    report["differential"] = diff
    report["seconds"] = round(report["seconds"] + diff["seconds"], 1)
    return report


def _fuzz(kind: str, n: int, seed: int, hang_s: float, start: int, log) -> dict:
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"tosa_vk_fuzz_{kind}_") as tmp:
        work = Path(tmp)
        seeds = make_seeds(kind, work)
        (work / "seeds.json").write_text(json.dumps([str(p) for p in seeds]))
        runner = Runner(kind, work, seed, hang_s)
        counts: Counter = Counter()
        findings = []
        try:
            for i in range(start, start + n):
                outcome, detail = runner.case(i)
                counts[outcome] += 1
                if outcome not in ("ok", "changed", "error"):
                    findings.append({"case": i, "outcome": outcome, "detail": detail})
                if log is not None:
                    print(f"{kind} case {i}: {outcome} {detail}", file=log, flush=True)
        finally:
            runner.stop()
    return {
        "kind": kind,
        "cases": n,
        "seed": seed,
        "seeds": [p.name for p in seeds],
        "counts": {o: counts[o] for o in OUTCOMES},
        "findings": findings,
        "seconds": round(time.perf_counter() - t0, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=KINDS)
    ap.add_argument("n", type=int, nargs="?", default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0, help="first case number (to split a long run)")
    ap.add_argument("--hang-s", type=float, default=120.0, help="a case without an answer by then is a hang")
    ap.add_argument("--json", type=Path, help="write the report here")
    ap.add_argument("--log", action="store_true", help="print every case")
    ap.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker is not None:
        worker_main(args.kind, args.worker, args.seed)
        return 0
    report = fuzz(args.kind, args.n, args.seed, args.hang_s, args.start, sys.stderr if args.log else None)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    counts = report["counts"]
    if "differential" in report:
        from fuzz_glsl import table_text

        print(f"{args.kind}: {args.n} generated sources, the gate against glslc / glslang:")
        print(table_text(report["differential"]))
    print(
        f"{args.kind}: {report['cases']} cases in {report['seconds']} s: "
        + ", ".join(f"{counts[o]} {o}" for o in OUTCOMES)
    )
    for f in report["findings"][:50]:
        print(f"  case {f['case']}: {f['outcome']}: {f['detail']}")
    bad = sum(counts[o] for o in ("wrong", "traceback", "crash", "hang"))
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":  # --worker KIND WORK [--seed S]
        _, _, kind, work, *rest = sys.argv
        with contextlib.suppress(KeyboardInterrupt):
            main([kind, "--worker", work, *rest])
        sys.exit(0)
    sys.exit(main())
