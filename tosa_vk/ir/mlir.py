"""TOSA MLIR (text or bytecode, as tosa-converter-for-tflite, IREE's tooling or `tosa-opt` write it) -> the bytes
of a TOSA flatbuffer, through Arm's serializer: tosa-tools' `tosa-opt --tosa-serialize`.

- `kind(data)`: "MLIR bytecode" (the magic b"ML\\xefR"), "MLIR text" (after blank lines and // comments, a
  `module`, `func.func`, their generic forms or an attribute alias `#name =`), or None;
- `serialize(data, file=...)`: runs the tool on the bytes (standard input) in a private temporary folder that is
  removed afterwards (nothing is written beside the user's file), within SERIALIZE_TIMEOUT_S, keeping the graph's
  input / output names (`tosa.tensor_name`, retain-graph-input-output-names). Its refusal is a TosaFormatError
  naming the file and quoting the tool's first error line; no tool, a TosaUnsupportedError saying what to install.
  SIGTERM while it runs removes the folder as Ctrl-C does (then ends the process as SIGTERM would);
- the constants' declared sizes are checked first (`check_constants`): the serializer writes every element of a
  splat `dense<0.0> : tensor<...>`, so a few bytes of text could make it write and read gigabytes. Like the .tosa
  reader, which visits at most one element per byte of the file, MLIR text may declare one constant element per byte
  of the file plus CONSTANT_ALLOWANCE ($TOSA_VK_MLIR_CONSTANT_ELEMENTS raises it). Bytecode is not checked: reading
  its constants' types needs MLIR's own reader (the serializer still bounds the time: SERIALIZE_TIMEOUT_S).

`tosa-opt` is found on PATH, else beside the running Python (a virtual environment's bin/, not activated).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .. import paths
from ..errors import TosaError, TosaFormatError, TosaUnsupportedError

# the tosa-tools release this was tested with (constraints.txt pins the same; the `mlir` extra installs it)
TOSA_TOOLS_VERSION = "2026.8.0"
TOOL = "tosa-opt"
# the longest one serialization may take (the shipped models take ~0.4 s; a large LLM's constants take longer)
SERIALIZE_TIMEOUT_S = 600.0

# constant elements MLIR text may declare beyond one per byte of itself (splats of zeros, say): 64 MiB of fp32
CONSTANT_ALLOWANCE = 1 << 24
CONSTANT_ENV = "TOSA_VK_MLIR_CONSTANT_ELEMENTS"
# a dense / dense_resource attribute (its body holds no `<`) and the tensor type after it: dims, element type
_CONSTANT = re.compile(rb'dense(?:_resource)?<(?:[^<>"]|"[^"]*")*>\s*:\s*tensor<((?:[0-9?]+x)*)')
# the SSA name a constant's value is bound to (`%w = ...` before it on the same line), for the message
_BOUND = re.compile(rb"(%[\w.$-]+)\s*(?::\d+\s*)?=[^\n]*$")

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


def find_tool() -> str | None:
    """The tosa-opt executable (on PATH, else beside this Python: paths.find_tool)."""
    return paths.find_tool(TOOL)


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


def show_messages(stderr: str, tool: str, verbose: bool) -> None:
    """A tool's standard error, captured: shown (each line prefixed with the tool's name) only when verbose; else
    the caller's TosaError quotes its first error line on failure, and a success says nothing."""
    if verbose and stderr.strip():
        for line in stderr.rstrip().splitlines():
            print(f"{tool}: {line}", file=sys.stderr)


def serialize(data: bytes, *, file: str | None = None, timeout_s: float | None = None, verbose: bool = False) -> bytes:
    """TOSA MLIR text or bytecode -> TOSA flatbuffer bytes (read_graph parses them)."""
    where = file or "<buffer>"
    what = kind(data) or "MLIR"
    if what == "MLIR text":
        check_constants(data, where)
    tool = find_tool()
    if tool is None:
        raise missing_tool(what).located(file=where)
    timeout = SERIALIZE_TIMEOUT_S if timeout_s is None else timeout_s
    with _sigterm_unwinds(), tempfile.TemporaryDirectory(prefix="tosa_vk-mlir-") as folder:
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
        show_messages(stderr, TOOL, verbose)
        if done.returncode != 0 or not out.is_file():
            raise TosaFormatError(
                f"{what} that {TOOL} --tosa-serialize refuses (exit code {done.returncode}): {first_error(stderr)}",
                file=where,
            )
        return out.read_bytes()


def constant_budget() -> int:
    """CONSTANT_ALLOWANCE, or $TOSA_VK_MLIR_CONSTANT_ELEMENTS."""
    text = os.environ.get(CONSTANT_ENV, "")
    if not text:
        return CONSTANT_ALLOWANCE
    if not text.isdigit():
        raise TosaError(f"${CONSTANT_ENV} takes a count of elements (a non-negative integer), got {text!r}")
    return int(text)


def check_constants(data: bytes, where: str) -> None:
    """Refuses MLIR text whose constants declare more elements in total than one per byte of the text plus
    constant_budget(), naming the constant that passes it."""
    allowed = len(data) + constant_budget()
    total = 0
    for m in _CONSTANT.finditer(data):
        elements = 1
        for dim in m.group(1).split(b"x")[:-1]:
            elements *= int(dim) if dim.isdigit() else 1
        total += elements
        if total > allowed:
            line = data.count(b"\n", 0, m.start()) + 1
            bound = _BOUND.search(data, data.rfind(b"\n", 0, m.start()) + 1, m.start())
            name = f"constant {bound.group(1).decode('utf-8', 'replace')} " if bound else "a constant "
            raise TosaError(
                f"{name}(line {line}) declares {elements} elements, {total} with the constants before it: more than "
                f"the {allowed} this {len(data)}-byte MLIR may declare (one per byte plus {allowed - len(data)}; "
                f"${CONSTANT_ENV} raises the allowance)",
                file=where,
            )


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so `with` blocks unwind (the temporary folder is removed)."""


@contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """While the block runs, SIGTERM unwinds it like KeyboardInterrupt, then ends the process as SIGTERM would.
    Only where SIGTERM has its default action (a program with its own handler keeps it) and in the main thread."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        yield
        return

    def handler(signum, frame):
        raise _Terminated

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    except _Terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.raise_signal(signal.SIGTERM)  # the default action: the process ends here
        raise
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
