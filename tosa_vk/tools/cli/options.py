"""The options several commands take (model, host placement, quantized I/O, time limits, node data), read
the one way."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ...errors import TosaError


def timeout_options(args) -> dict[str, Any]:
    """load()'s timeout_s from --timeout (only when given: each backend has its own default)."""
    return {} if args.timeout is None else {"timeout_s": args.timeout}


def _seconds(text: str) -> float:
    """--timeout's type: a finite number of seconds above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not (0 < value < float("inf")):
        raise argparse.ArgumentTypeError(f"takes a number of seconds above 0, got {text!r}")
    return value


def _qparams(items: list[str] | None, option: str) -> dict[str, tuple[float, int]]:
    """--input-qparams / --output-qparams NAME=SCALE,ZP items -> load()'s input_qparams / output_qparams."""
    given: dict[str, tuple[float, int]] = {}
    for item in items or []:
        name, _, numbers = item.rpartition("=")
        scale, _, zero_point = numbers.partition(",")
        try:
            if not name or not zero_point:
                raise ValueError
            given[name] = (float(scale), int(zero_point))
        except ValueError:
            raise TosaError(f"{option} takes NAME=SCALE,ZERO_POINT (e.g. x=0.0309,-2), got {item!r}") from None
    return given


def qparams_options(args) -> dict[str, Any]:
    """load()'s input_qparams / output_qparams from --input-qparams / --output-qparams (only those given)."""
    options = {
        "input_qparams": _qparams(args.input_qparams, "--input-qparams"),
        "output_qparams": _qparams(args.output_qparams, "--output-qparams"),
    }
    return {k: v for k, v in options.items() if v}


def qparams_arguments(p: argparse.ArgumentParser) -> None:
    """--input-qparams / --output-qparams (Model.quantize_io), for `run`."""
    p.add_argument(
        "--input-qparams",
        action="append",
        metavar="NAME=SCALE,ZP",
        help="this integer input takes float data, quantized with this scale and zero point before the run "
        "(round half to even, saturating; repeat for each input)",
    )
    p.add_argument(
        "--output-qparams",
        action="append",
        metavar="NAME=SCALE,ZP",
        help="this integer output is dequantized with this scale and zero point: written and compared as float32 "
        "(repeat for each output)",
    )


NODE_DATA_HINT = "model-explorer MODEL.tosa --extensions=tosa_adapter_model_explorer --node_data_paths=FILE"


def explorer_hint(model_path: Path, node_data: Path | str, delegate: str | None = None) -> str:
    """The Model Explorer command that shows a --node-data file on the model (Arm's TOSA adapter reads .tosa; a
    .pte's delegate: the delegate_N.tosa that `tosa-vk extract` writes)."""
    if delegate is not None:
        model = f"DIR/{delegate}.tosa (tosa-vk extract {model_path} -o DIR)"
    else:
        model = str(model_path) if model_path.suffix == ".tosa" else "MODEL.tosa"
    return f"view: model-explorer {model} --extensions=tosa_adapter_model_explorer --node_data_paths={node_data}"


def node_data_argument(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--node-data",
        metavar="FILE",
        help=f"also write {what} per operator as Model Explorer node data (JSON keyed by the TOSA adapter's node "
        "ids, main/op<N>; a .pte: one file per delegate, FILE with .delegate_N before its suffix): " + NODE_DATA_HINT,
    )


def host_options(args) -> dict[str, Any]:
    """load()'s host_ops / partition options from --host-ops / --partition (only those given)."""
    options: dict[str, Any] = {}
    if args.host_ops:
        options["host_ops"] = list(args.host_ops)
    if args.partition:
        options["partition"] = args.partition
    return options


def plan_target(name: str | None):
    """`tosa-vk plan`'s target and how it was chosen: --target NAME a named one, --target device the Vulkan device
    (TOSA_VK_DEVICE picks one; an error without a device), no --target the device where there is one, else the
    named target lavapipe."""
    from ...session import vulkan_devices
    from ...target import named

    if name not in (None, "device"):
        return named(name), "named target"
    devices = list(vulkan_devices())
    if devices or name == "device":
        from ...vulkan import select

        info = select(devices)
        return info.target, f"Vulkan device #{info.index}"
    return named("lavapipe"), "named target: no Vulkan device found (--target chooses)"


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows "(default: ...)" after an option's help, unless the default is None / False (their help says what
    happens without the option) or the help already names it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def model_arguments(p: argparse.ArgumentParser, model: str, desc: str) -> None:
    """The model and its inputs, for `run`, `profile` and `compare` (read by model_and_feeds), and --timeout."""
    p.add_argument("model", nargs="?", help=f"{model} (with -i name=file.npy inputs)")
    p.add_argument("--test-desc", "--test_desc", dest="test_desc", help=f"a conformance-style desc.json naming {desc}")
    p.add_argument(
        "-i",
        "--input",
        action="append",
        help="graph input as name=file.npy, or made up: name=SHAPExTYPE=VALUE (x=1x8x8x3xf32=0.5, a splat), "
        "SHAPExTYPE=VALUE for a model of one input, name=VALUE (repeat for each input)",
    )
    p.add_argument(
        "--random",
        type=int,
        metavar="SEED",
        help="every input no -i gives: seeded random values in its type's range (as tosa-vk bench --random)",
    )
    p.add_argument(
        "--timeout",
        type=_seconds,
        metavar="SECONDS",
        help="the longest one run may take (tosa_vk.load's timeout_s); a run past it is an error (default: the "
        "backend's, 300 s on Vulkan)",
    )


def overwrite_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="write over files that are already there (without it, a command refuses before any work)",
    )


def host_arguments(p: argparse.ArgumentParser) -> None:
    """--host-ops and --partition (tosa_vk/stages/host_rules.py), for `run` and `placement`."""
    p.add_argument(
        "--host-ops",
        nargs="+",
        action="extend",
        metavar="RULE",
        help="run these operators on the host (vulkan backend): operator names (any case), output tensor names, "
        "or NNAdapter rules OP:in1,in2:out1,out2; a rule that matches no operator is an error (give the model "
        "before this option)",
    )
    p.add_argument(
        "--partition",
        metavar="FILE",
        help="a file of such rules, one per line ('#' comments; `tosa-vk placement --format rules` writes one)",
    )


DEBUG = "show the traceback of an error (an internal error, exit code 3, is a bug to report)"
