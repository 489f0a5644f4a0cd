"""The differential fuzzer of the model-GLSL gate (issue 46): no source that tosa_vk/abi/glsl_preprocessor.py passes
makes a compiler open a file.

Sources are drawn from a grammar of pieces — comments of both kinds (with quotes, `include`, unclosed), line splices,
CR / CRLF / LF line ends, strings that hide a comment opener (`#define X "/*"`, `#pragma message("/*")`), macros,
`#include "..."` / `#include <...>` / through a macro, `#line N "..."`, the include extensions, pragmas, `#if 0`,
control and non-ASCII characters — around a small compute shader. Each goes through the gate; the real compilers,
run the way the package runs them on a model's GLSL (vulkan/shaders.py `_glslc` in batches, `_glslang` one per
process: no include path, the private folder, the limits, the dependency check), then say whether they open a file:
every include target is a FIFO the fuzzer watches (a thread blocks opening it for writing; when that returns a
compiler opened it: counted, then closed, so the compiler reads an empty file and goes on) or a plain file (the
dependency check reports it). The package's temporary folders are made inside the watched folder, so `../f0.glsl`
from a source lands on a FIFO too.

Every accepted source is compiled by glslc (where installed) and by glslang; a sample of the refused ones is too,
to show that the generator does reach sources that open files ("opened / refused"). A finding: a source the gate
accepted and a compiler opened a file for, a gate that raised, a compile that was not a clean ShaderError.
"""

from __future__ import annotations

import os
import random
import tempfile
import threading
import time
from pathlib import Path

FIFOS = 16  # include targets per run (a source names one of them)
BATCH = 32  # accepted sources per glslc process (the package compiles a model's variants in one)
REFUSED_SAMPLE = 0.03  # the share of refused sources compiled too

BASE = (
    "#version 450\n@HEAD@\nlayout(local_size_x = 64) in;\n"
    "layout(set = 0, binding = 0) buffer In { float x[]; };\n"
    "layout(set = 0, binding = 1) buffer Out { float y[]; };\n"
    "void main() {\n  uint idx = gl_GlobalInvocationID.x;\n  y[idx] = x[idx] * 2.0 @BODY@;\n}\n"
)


class Watch:
    """FIFOs in `folder`, each with a thread that blocks opening it for writing and counts each time it returns."""

    def __init__(self, folder: Path, n: int):
        self.paths = [folder / f"f{i}.glsl" for i in range(n)]
        self.opened = 0
        self.lock = threading.Lock()
        self.stopping = False
        for p in self.paths:
            os.mkfifo(p, 0o600)
        self.threads = [threading.Thread(target=self._watch, args=(p,), daemon=True) for p in self.paths]
        for t in self.threads:
            t.start()

    def _watch(self, path: Path) -> None:
        while not self.stopping:
            fd = os.open(path, os.O_WRONLY)  # returns once a reader (a compiler) has it open
            if not self.stopping:
                with self.lock:
                    self.opened += 1  # before the close: the compiler's read waits for it
            os.close(fd)

    def close(self) -> None:
        self.stopping = True
        for p, t in zip(self.paths, self.threads):
            while t.is_alive():
                fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)  # lets the blocked writer's open return
                t.join(0.05)
                os.close(fd)


def _splice(text: str, rng: random.Random, p: float) -> str:
    """`text` with backslash-newlines (any line end) between its characters."""
    out = []
    for ch in text:
        if rng.random() < p:
            out.append("\\" + rng.choice(["\n", "\r\n", "\r"]))
        out.append(ch)
    return "".join(out)


def _target(work: Path, rng: random.Random) -> str:
    """A path the compiler may resolve: a watched FIFO or the plain file, absolute or relative to the source."""
    name = rng.choice([f"f{rng.randrange(FIFOS)}.glsl"] * 4 + ["plain.glsl"])
    return rng.choice(
        [
            str(work / name),
            "../" + name,
            "../" * rng.randint(1, 12) + str(work / name).lstrip("/"),
            name,
            "./../" + name,
        ]
    )


HIDERS = [  # text a reader that does not know strings (or the compiler) takes for an open comment
    '#define X "/*"',
    '#define X "//"',
    '#pragma message("/*")',
    '#pragma "/*"',
    '#error "/*"',
    "#define Y '/*'",
    "// \\",
    "/* unclosed",
    '/* " */',
    '// "',
    "/**/",
]


def _piece(work: Path, rng: random.Random) -> str:
    """One header piece of the grammar."""
    t = _target(work, rng)
    quoted = f'"{t}"' if rng.random() < 0.7 else f"<{t}>"
    gap = "".join(rng.choice(["", " ", "\t", "/**/", "/* x */", "\\\n"]) for _ in range(rng.randint(0, 2)))
    word = _splice("include", rng, 0.1)
    what = rng.randrange(16)
    if what == 0:
        return f"#{gap}{word} {quoted}"
    if what == 1:
        return "#extension " + _splice(rng.choice(["GL_GOOGLE_include_directive", "GL_ARB_shading_language_include"]),
                                       rng, 0.05) + " : " + rng.choice(["enable", "require", "warn"])  # fmt: skip
    if what == 2:
        return rng.choice(HIDERS)
    if what == 3:
        return f"#define F {quoted}\n#{word} F"
    if what == 4:
        return f"#line {rng.randint(1, 99)} " + rng.choice([f'"{t}"', "7", "X", f"<{t}>"])
    if what == 5:
        return "#pragma " + rng.choice(
            [
                "optimize(off)",
                "debug(on)",
                "once",
                f"include {quoted}",
                "message(x)",
                "STDGL invariant(all)",
                "shader_stage(compute)",
                "use_vulkan_memory_model",
                f"x {quoted}",
            ]  # fmt: skip
        )
    if what == 6:
        return "#if 0\n" + rng.choice([f"#include {quoted}", '"/*"', "garbage '"]) + "\n#endif"
    if what == 7:
        return rng.choice(["// include nothing", "/* #include is not used */", "// a \\\n comment", "// don't"])
    if what == 8:
        return rng.choice(["#define K 1.0", "#define ADD(a, b) ((a) + (b))", "#define CAT(a, b) a##b", "#undef K"])
    if what == 9:
        return rng.choice(["\x00", "\x01", "\x1b", "\x7f", "\v", "\f", "\x85", "\u2028", "\u00e9", "\ufeff"])
    if what == 10:
        return f"#define INC {word}\n#INC {quoted}"
    if what == 11:
        return f"#CAT(inc, lude) {quoted}"
    if what == 12:
        return "const float k" + str(rng.randrange(1000)) + " = 1.0;"
    if what == 13:
        return rng.choice(["#", "# ", "#ifdef K\n#endif", "#if 1\n#else\n#endif", "#error stop"])
    if what == 14:
        return f"#{gap}line {rng.randint(1, 9)} {rng.randint(0, 9)}"
    return ""


def generate(work: Path, rng: random.Random) -> str:
    """A source: 0-3 header pieces (an include after a hider often), a body piece, any line ends."""
    pieces = [_piece(work, rng) for _ in range(rng.randint(0, 3))]
    if rng.random() < 0.3:  # the shape: a string that hides a comment opener, then an include
        t = _target(work, rng)
        pieces += [rng.choice(HIDERS[:6]), "#extension GL_GOOGLE_include_directive : enable", f'#include "{t}"']
    body = rng.choice(["", "+ 1.0", "+ k0", '/* " */ + 1.0', "+ ADD(1.0, 2.0)"])
    source = BASE.replace("@HEAD@", "\n".join(pieces)).replace("@BODY@", body)
    if rng.random() < 0.2:
        source = _splice(source, rng, 0.01)
    ends = rng.choice(["\n", "\r\n", "\r", "mixed"])
    if ends == "mixed":
        return "".join(c if c != "\n" else rng.choice(["\n", "\r\n", "\r"]) for c in source)
    return source.replace("\n", ends)


def differential(n: int, seed: int = 0, start: int = 0, log=None) -> dict:
    """Generates sources start..start+n-1; returns the table and the findings."""
    from tosa_vk.abi.glsl_preprocessor import refusal
    from tosa_vk.vulkan import glsl_compiler, shaders
    from tosa_vk.vulkan.variant import Variant

    t0 = time.perf_counter()
    compilers = ["glslc"] if glsl_compiler.glslc() else []
    compilers += ["glslang"] if glsl_compiler.glslang() else []
    table = {k: 0 for k in ("cases", "clean errors", "runs", "internal errors", "hangs", "crashes", "opened")}
    table.update({"compiled": 0, "refused compiled": 0, "refused opened": 0})
    findings: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="tosa_vk_fuzz_glsl_") as tmp:
        work = Path(tmp).resolve()
        (work / "plain.glsl").write_text("+ 1.0\n")
        watch = Watch(work, FIFOS)
        old_tempdir, tempfile.tempdir = tempfile.tempdir, str(work)  # the package's folders: work/tosa_vk-glslc-*
        try:

            def opened(compiler: str, variants: list) -> tuple[bool, str]:
                """(whether the compiler opened a file while compiling them, how it ended)."""
                before = watch.opened
                try:
                    if compiler == "glslc":
                        shaders._glslc(variants, includes=False)
                    else:
                        for v in variants:
                            try:
                                shaders._glslang([v])
                            except shaders.ShaderError as err:
                                if "read one" in str(err):
                                    return True, "read"
                                if "did not finish" in str(err):
                                    return False, "hang"
                    end = "ok"
                except shaders.ShaderError as err:
                    if "read one" in str(err):
                        return True, "read"
                    end = "hang" if "did not finish" in str(err) else "error"
                except Exception as err:  # noqa: BLE001 - a compile that is no clean error is a finding
                    return False, f"internal: {type(err).__name__}: {str(err)[:200]}"
                return watch.opened != before, end

            accepted: list[tuple[int, Variant]] = []

            def compile_accepted() -> None:
                for compiler in compilers:
                    hit, end = opened(compiler, [v for _, v in accepted])
                    singles = list(accepted) if hit or end not in ("ok", "error") else []
                    for i, v in singles:  # which source (a batch's error stops nothing, but names one)
                        one, how = opened(compiler, [v])
                        if one:
                            table["opened"] += 1
                            findings.append({"case": i, "outcome": "wrong", "detail": f"the gate passed it and "
                                             f"{compiler} opened a file", "source": v.text})  # fmt: skip
                        if how == "hang":
                            table["hangs"] += 1
                            findings.append({"case": i, "outcome": "hang", "detail": f"{compiler} timed out"})
                        if how.startswith("internal"):
                            table["internal errors"] += 1
                            findings.append({"case": i, "outcome": "traceback", "detail": f"{compiler}: {how}"})
                table["compiled"] += len(accepted)
                accepted.clear()

            for i in range(start, start + n):
                rng = random.Random(seed * 1_000_003 + i)
                source = generate(work, rng)
                table["cases"] += 1
                try:
                    why = refusal(source)
                except Exception as err:  # noqa: BLE001 - the gate must answer every text
                    table["internal errors"] += 1
                    findings.append({"case": i, "outcome": "traceback", "detail": f"gate: {type(err).__name__}"})
                    continue
                v = Variant(f"custom:fuzz{i}", (), text=source, op=f"case {i}")
                if why:
                    table["clean errors"] += 1
                    if rng.random() < REFUSED_SAMPLE:
                        table["refused compiled"] += 1
                        if any(opened(c, [v])[0] for c in compilers):
                            table["refused opened"] += 1
                else:
                    table["runs"] += 1
                    accepted.append((i, v))
                    if len(accepted) >= BATCH:
                        compile_accepted()
                if log is not None:
                    print(f"glsl source {i}: {'refused: ' + why if why else 'accepted'}", file=log, flush=True)
            compile_accepted()
        finally:
            tempfile.tempdir = old_tempdir
            watch.close()
    return {"table": table, "compilers": compilers, "findings": findings, "seconds": round(time.perf_counter() - t0, 1)}


def table_text(report: dict) -> str:
    t = report["table"]
    head = ("cases", "clean errors", "runs", "internal errors", "hangs", "crashes", "opened")
    return (
        "| " + " | ".join(head[:-1]) + " | files opened by a compiler (accepted) | opened / refused sampled |\n"
        "|" + "---|" * (len(head) + 1) + "\n"
        "| " + " | ".join(str(t[k]) for k in head) + f" | {t['refused opened']} / {t['refused compiled']} |\n"
        f"({', '.join(report['compilers'])}; {report['seconds']} s)"
    )
