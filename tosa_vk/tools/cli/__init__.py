"""The `tosa-vk` command line. Errors are one line on stderr (`tosa-vk: error: ...`) and exit code 2; anything
else that escapes a command is a bug in tosa_vk: `tosa-vk: internal error, please report: ...` and exit code 3
(--debug shows the traceback).

One module per command group: info.py (info, devices, targets, inspect, cache), run.py (run), diagnose.py (compare,
profile, placement), convert.py (export, vgf2tosa, import), extract.py (extract), develop.py (conformance, plan,
bench), doctor.py (doctor); common.py and options.py what they share. This module: the parser (COMMANDS) and main()."""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
import time
import traceback
import warnings
from typing import NoReturn

from ...errors import TosaError
from .common import EXIT_ERROR, EXIT_INTERNAL, EXIT_OUTPUT_CLOSED
from .options import DEBUG, HelpFormatter

# (name, one-line summary, the module (tosa_vk/tools/cli/MODULE.py) holding its NAME_arguments and cmd_NAME):
# build_parser makes one subcommand of each. Modules by name so that a command imports only its own module: `tosa-vk
# run` does not pay for the .pte reader, the doctor's package metadata or the bench (issue 49: ~0.3 s).
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("info", "inputs, outputs, op counts, dtypes and profiles of a .tosa file (or a .pte's plan)", "info"),
    ("run", "run a graph (drop-in for tosa_reference_model --test_desc)", "run"),
    (
        "compare",
        "run on Vulkan and on the reference backend, judge every tensor in execution order; exit 1 if one is out "
        "of bounds",
        "diagnose",
    ),
    ("profile", "time each kernel of a graph over several runs: a table in ms, and a Perfetto trace", "diagnose"),
    ("conformance", "run Arm's conformance tests on a backend, judged by tosa_verify", "develop"),
    ("export", "write a .tosa graph as a VGF container for Arm's ML SDK", "convert"),
    ("vgf2tosa", "the TOSA graph a .vgf holds (GRAPH segments decoded), as a .tosa file", "convert"),
    ("import", "a TFLite model as a .tosa file, through tosa-converter-for-tflite and tosa-opt", "convert"),
    (
        "extract",
        "an ExecuTorch program's delegates as .tosa files with desc.json, and (given inputs) what each received and "
        "produced in the program's run",
        "extract",
    ),
    ("inspect", "print a .vgf container: modules, segments, resources, constants", "info"),
    ("plan", "where every tensor lives: descriptor, format, offset, live range, aliases", "develop"),
    ("placement", "where every operator runs (Vulkan, fused, host, alias, constant) and why", "diagnose"),
    ("devices", "list Vulkan devices (* marks the default)", "info"),
    (
        "targets",
        "list the device classes (kernel families and tiles per kind of GPU; the first word of each line its name)",
        "info",
    ),
    (
        "doctor",
        "what this machine offers tosa_vk (Vulkan loader, devices, compilers, caches, extras) and how to fix what "
        "is missing; exit 1 when no Vulkan device is usable",
        "doctor",
    ),
    ("cache", "the compiled-model and SPIR-V caches ($TOSA_VK_CACHE): info or clear", "info"),
    (
        "bench",
        "benchmark ops and models on every installed backend (JSON, table, plot); one model with --random SEED / "
        "--input: latency percentiles, runs/s, device time",
        "develop",
    ),
)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; given the command line `argv`, only the command it names gets its options (and
    only its module is imported): the others are listed by name and summary, as `--help` shows them."""
    from ... import __version__

    ap = argparse.ArgumentParser(
        prog="tosa-vk", description="Run TOSA 1.0 graphs on Vulkan.", formatter_class=HelpFormatter
    )
    ap.add_argument("--version", action="version", version=f"tosa-vk {__version__}")
    ap.add_argument("--debug", action="store_true", help=DEBUG)
    ap.set_defaults(main=main)  # what `conformance --via-cli` runs each test through
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # the top-level options take no value: the first other word is the command
    chosen = next((word for word in argv if not word.startswith("-")), None) if argv is not None else None
    for name, summary, module in COMMANDS:
        p = sub.add_parser(name, help=summary, description=summary, formatter_class=HelpFormatter)
        if argv is not None and name != chosen:
            continue
        commands = importlib.import_module(f".{module}", __name__)
        # also after the command; SUPPRESS: not given here keeps what was given before it
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG)
        getattr(commands, f"{name}_arguments")(p)
        p.set_defaults(func=getattr(commands, f"cmd_{name}"))
    return ap


# How long the main thread has to act on Ctrl-C before the process ends without it.
INTERRUPT_GRACE_S = 2.0


def _interrupted() -> NoReturn:
    """Leaves at once: the device may still run the interrupted work, and the interpreter's teardown would wait
    for it (the operating system frees the device's memory)."""
    print("tosa-vk: interrupted", file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(130)


def _watch_interrupts() -> None:
    """Ctrl-C raises KeyboardInterrupt in the main thread, between two bytecodes: a main thread inside a long C call
    (a driver compiling a pipeline, a Vulkan wait) acts on it only when the call returns, and one that gets it inside
    a finalizer or a C callback loses it (Python prints it and goes on), so a runaway shader would keep the process.
    The signal also wakes this thread (signal.set_wakeup_fd), which ends the process if the main thread has not
    within INTERRUPT_GRACE_S. Set up by the command's entry point, not by main(), which callers may run in-process."""
    read, write = os.pipe()
    os.set_blocking(write, False)
    signal.set_wakeup_fd(write, warn_on_full_buffer=False)

    def watch() -> None:
        while signal.SIGINT not in os.read(read, 64):
            pass
        time.sleep(INTERRUPT_GRACE_S)
        _interrupted()

    threading.Thread(target=watch, name="tosa-vk-interrupt", daemon=True).start()


def _warning_line(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning a command meets, as one line on stderr (not Python's file:line and source)."""
    print(f"tosa-vk: warning: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Runs one command: its exit code, or EXIT_ERROR with one line on stderr for what the user can act on (a
    TosaError: every error tosa_vk raises on purpose; an OSError: a file, the disk, the machine; MemoryError: a
    model too big for this machine), or EXIT_INTERNAL for anything else, which is a bug in tosa_vk. --debug adds
    the traceback."""
    args = build_parser(sys.argv[1:] if argv is None else argv).parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _warning_line
            return args.func(args)
    except KeyboardInterrupt:
        _interrupted()
    except BrokenPipeError:  # the output's reader is gone: entry() leaves quietly (an in-process caller gets it)
        raise
    except (TosaError, OSError, MemoryError) as err:
        if args.debug:
            traceback.print_exc()
        text = str(err) if not isinstance(err, MemoryError) else f"out of memory ({err or 'MemoryError'})"
        print(f"tosa-vk: error: {text}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as err:  # not an error tosa_vk meant: a bug to report, not a message
        if args.debug:
            traceback.print_exc()
        hint = "" if args.debug else " (--debug shows the traceback)"
        print(f"tosa-vk: internal error, please report: {type(err).__name__}: {err}{hint}", file=sys.stderr)
        return EXIT_INTERNAL


def entry() -> int:
    """The `tosa-vk` command (and `python -m tosa_vk.tools.cli`): main() in a process of its own."""
    _watch_interrupts()
    try:
        code = main()
        sys.stdout.flush()  # here, where a closed pipe is caught, not at exit (Python's "Exception ignored")
        return code
    except BrokenPipeError:
        return _output_closed()


def _output_closed() -> int:
    """`tosa-vk ... | head`: the reader closed the pipe, so the rest of the output is not wanted. No message, no
    traceback; stdout is pointed at os.devnull so that the interpreter's own flush at exit cannot fail again.
    EXIT_OUTPUT_CLOSED, as a command ended by SIGPIPE reports in the shell."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_OUTPUT_CLOSED


if __name__ == "__main__":
    sys.exit(entry())
