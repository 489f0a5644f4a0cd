"""The `tosa-vk` command line. Errors are one line on stderr (`tosa-vk: error: ...`) and exit code 2; anything
else that escapes a command is a bug in tosa_vk: `tosa-vk: internal error, please report: ...` and exit code 3
(--debug shows the traceback).

One module per command group: info.py (info, devices, targets, inspect, cache), run.py (run), diagnose.py (compare,
profile, placement), convert.py (export, vgf2tosa, import), extract.py (extract), develop.py (conformance, plan,
bench), doctor.py (doctor); common.py and options.py what they share. This module: the parser (COMMANDS) and main()."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from typing import Any, NoReturn

from ...errors import TosaError
from .common import EXIT_ERROR, EXIT_INTERNAL, EXIT_OUTPUT_CLOSED
from .convert import cmd_export, cmd_import, cmd_vgf2tosa, export_arguments, import_arguments, vgf2tosa_arguments
from .develop import bench_arguments, cmd_bench, cmd_conformance, cmd_plan, conformance_arguments, plan_arguments
from .diagnose import cmd_compare, cmd_placement, cmd_profile, compare_arguments, placement_arguments, profile_arguments
from .doctor import cmd_doctor, doctor_arguments
from .extract import cmd_extract, extract_arguments
from .info import (
    cache_arguments,
    cmd_cache,
    cmd_devices,
    cmd_info,
    cmd_inspect,
    cmd_targets,
    devices_arguments,
    info_arguments,
    inspect_arguments,
    targets_arguments,
)
from .options import DEBUG, HelpFormatter
from .run import cmd_run, run_arguments

# (name, one-line summary, its options, its handler): build_parser makes one subcommand of each
COMMANDS: tuple[tuple[str, str, Callable[[argparse.ArgumentParser], None], Callable[[Any], int]], ...] = (
    (
        "info",
        "inputs, outputs, op counts, dtypes and profiles of a .tosa file (or a .pte's plan)",
        info_arguments,
        cmd_info,
    ),
    ("run", "run a graph (drop-in for tosa_reference_model --test_desc)", run_arguments, cmd_run),
    (
        "compare",
        "run on Vulkan and on the reference backend, judge every tensor in execution order; exit 1 if one is out "
        "of bounds",
        compare_arguments,
        cmd_compare,
    ),
    (
        "profile",
        "time each kernel of a graph over several runs: a table in ms, and a Perfetto trace",
        profile_arguments,
        cmd_profile,
    ),
    (
        "conformance",
        "run Arm's conformance tests on a backend, judged by tosa_verify",
        conformance_arguments,
        cmd_conformance,
    ),
    ("export", "write a .tosa graph as a VGF container for Arm's ML SDK", export_arguments, cmd_export),
    (
        "vgf2tosa",
        "the TOSA graph a .vgf holds (GRAPH segments decoded), as a .tosa file",
        vgf2tosa_arguments,
        cmd_vgf2tosa,
    ),
    (
        "import",
        "a TFLite model as a .tosa file, through tosa-converter-for-tflite and tosa-opt",
        import_arguments,
        cmd_import,
    ),
    (
        "extract",
        "an ExecuTorch program's delegates as .tosa files with desc.json, and (given inputs) what each received and "
        "produced in the program's run",
        extract_arguments,
        cmd_extract,
    ),
    ("inspect", "print a .vgf container: modules, segments, resources, constants", inspect_arguments, cmd_inspect),
    ("plan", "where every tensor lives: descriptor, format, offset, live range, aliases", plan_arguments, cmd_plan),
    (
        "placement",
        "where every operator runs (Vulkan, fused, host, alias, constant) and why",
        placement_arguments,
        cmd_placement,
    ),
    ("devices", "list Vulkan devices (* marks the default)", devices_arguments, cmd_devices),
    (
        "targets",
        "list the device classes (kernel families and tiles per kind of GPU; the first word of each line its name)",
        targets_arguments,
        cmd_targets,
    ),
    (
        "doctor",
        "what this machine offers tosa_vk (Vulkan loader, devices, compilers, caches, extras) and how to fix what "
        "is missing; exit 1 when no Vulkan device is usable",
        doctor_arguments,
        cmd_doctor,
    ),
    ("cache", "the compiled-model and SPIR-V caches ($TOSA_VK_CACHE): info or clear", cache_arguments, cmd_cache),
    (
        "bench",
        "benchmark ops and models on every installed backend (JSON, table, plot); one model with --random SEED / "
        "--input: latency percentiles, runs/s, device time",
        bench_arguments,
        cmd_bench,
    ),
)


def build_parser() -> argparse.ArgumentParser:
    from ... import __version__

    ap = argparse.ArgumentParser(
        prog="tosa-vk", description="Run TOSA 1.0 graphs on Vulkan.", formatter_class=HelpFormatter
    )
    ap.add_argument("--version", action="version", version=f"tosa-vk {__version__}")
    ap.add_argument("--debug", action="store_true", help=DEBUG)
    ap.set_defaults(main=main)  # what `conformance --via-cli` runs each test through
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, summary, arguments, handler in COMMANDS:
        p = sub.add_parser(name, help=summary, description=summary, formatter_class=HelpFormatter)
        # also after the command; SUPPRESS: not given here keeps what was given before it
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG)
        arguments(p)
        p.set_defaults(func=handler)
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
    args = build_parser().parse_args(argv)
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
