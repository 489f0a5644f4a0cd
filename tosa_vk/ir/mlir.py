"""TOSA MLIR (text or bytecode, as tosa-converter-for-tflite, IREE's tooling or `tosa-opt` write it) -> the bytes
of a TOSA flatbuffer, through Arm's serializer: tosa-tools' `tosa-opt --tosa-serialize`.

- `kind(data)`: "MLIR bytecode" (the magic b"ML\\xefR"), "MLIR text" (after blank lines and // comments, a
  `module`, `func.func`, their generic forms or an attribute alias `#name =`), or None;
- `serialize(data, file=...)`: runs the tool on the bytes (standard input) in a private temporary folder that is
  removed afterwards (nothing is written beside the user's file), within SERIALIZE_TIMEOUT_S, keeping the graph's
  input / output names (`tosa.tensor_name`, retain-graph-input-output-names). Its refusal is a TosaFormatError
  naming the file and quoting the tool's first error line; no tool, a TosaUnsupportedError saying what to install.

`tosa-opt` is found on PATH, else beside the running Python (a virtual environment's bin/, not activated).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..errors import TosaError, TosaFormatError, TosaUnsupportedError

# the tosa-tools release this was tested with (constraints.txt pins the same; the `mlir` extra installs it)
TOSA_TOOLS_VERSION = "2026.8.0"
TOOL = "tosa-opt"
# the longest one serialization may take (the shipped models take ~0.4 s; a large LLM's constants take longer)
SERIALIZE_TIMEOUT_S = 600.0

BYTECODE_MAGIC = b"ML\xefR"
# what MLIR text starts with once blank lines and // comments are skipped
_TEXT_START = re.compile(rb'(module\b|func\.func\b|"builtin\.module"|"func\.func"|#[\w.$-]+\s*=)')
_SKIPPED = re.compile(rb"(\s+|//[^\n]*)*")


def kind(data: bytes) -> str | None:
    """ "MLIR bytecode", "MLIR text" or None (not MLIR: e.g. a TOSA flatbuffer)."""
    if data.startswith(BYTECODE_MAGIC):
        return "MLIR bytecode"
    head = data[:65536].lstrip(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark
    skipped = _SKIPPED.match(head)
    return "MLIR text" if _TEXT_START.match(head, skipped.end() if skipped else 0) else None


def find_executable(name: str) -> str | None:
    """A console tool a pip package installs: on PATH, else beside this Python (an unactivated virtual
    environment's bin/)."""
    found = shutil.which(name)
    if found:
        return found
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


def find_tool() -> str | None:
    """The tosa-opt executable (find_executable)."""
    return find_executable(TOOL)


def missing_tool(what: str) -> TosaUnsupportedError:
    return TosaUnsupportedError(
        f"{what} is turned into a TOSA flatbuffer by tosa-tools' {TOOL} --tosa-serialize, which is not installed "
        f"(not on PATH nor beside {sys.executable}): pip install tosa-tools=={TOSA_TOOLS_VERSION} "
        "(or tosa_vk's `mlir` extra)"
    )


def first_error(stderr: str) -> str:
    """A tool's first error line (`<stdin>:3:7: error: ...` -> `line 3:7: error: ...`): the first MLIR diagnostic
    (`error:`), else the first line that says error, else its first line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    line = next(
        (x for x in lines if "error:" in x),
        next((x for x in lines if "error" in x.lower()), lines[0] if lines else "no message"),
    )
    return re.sub(r"^<stdin>:(\d+):(\d+):", r"line \1:\2:", line)[:500]


def serialize(data: bytes, *, file: str | None = None, timeout_s: float | None = None) -> bytes:
    """TOSA MLIR text or bytecode -> TOSA flatbuffer bytes (read_graph parses them)."""
    where = file or "<buffer>"
    what = kind(data) or "MLIR"
    tool = find_tool()
    if tool is None:
        raise missing_tool(what).located(file=where)
    timeout = SERIALIZE_TIMEOUT_S if timeout_s is None else timeout_s
    with tempfile.TemporaryDirectory(prefix="tosa_vk-mlir-") as folder:
        out = Path(folder) / "model.tosa"
        command = [
            tool,
            # a relative name: the pass option parser takes no quoting, and the folder's path may hold spaces
            "--tosa-serialize=tosa-flatbuffer-filename=model.tosa retain-graph-input-output-names",
            "-o",
            os.devnull,  # the MLIR itself, echoed back: not wanted
        ]
        try:
            done = subprocess.run(command, input=data, capture_output=True, cwd=folder, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise TosaError(f"{TOOL} --tosa-serialize did not finish within {timeout:g} s", file=where) from None
        except OSError as err:
            raise TosaError(f"cannot run {tool}: {err.strerror or err}", file=where) from None
        stderr = done.stderr.decode("utf-8", "replace")
        if done.returncode != 0 or not out.is_file():
            raise TosaFormatError(
                f"{what} that {TOOL} --tosa-serialize refuses (exit code {done.returncode}): {first_error(stderr)}",
                file=where,
            )
        return out.read_bytes()
