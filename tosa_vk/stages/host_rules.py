"""Host rules: the operators a caller puts on the host (compile(host_ops=..., partition=...), load(..., host_ops=...)).

After NNAdapter's custom subgraph partition (Paddle Lite's NNAdapter hardware adaptation guide,
set_nnadapter_subgraph_partition_config_path: "one record per line, op type : input tensor names : output tensor
names, the names separated by commas; names may be left out; a type alone is every operator of that type"). A rule is
one of:

- a TOSA operator name, in any case ("conv2d" = "CONV2D"): every operator of that type, in every region;
- an output tensor name ("conv_1"): the operator that writes it (an operator name wins over a tensor of that name;
  write "OP::name" for the tensor then);
- an NNAdapter rule "OP:in1,in2:out1,out2" (TOSA operator names, tensor names as in the graph): the operators of
  type OP that read every input named and write every output named; a list left out or empty ("OP::out", "OP:in")
  matches any tensors.

A partition file holds such rules one per line; "#" starts a comment (at the start of a line or after a blank), blank
lines are skipped. `tosa-vk placement --format rules` writes every operator of a model as such a line: NNAdapter's
way to find a faulty operator is to put everything on the host, then delete lines until the fault comes back.

Nothing is silently ignored: a malformed rule, or one that matches no operator of the graph the partition sees (the
graph after the compile's passes, tosa_vk/stages/passes/), is a TosaError naming the rule (and the file and line).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..errors import TosaError
from ..ir.graph import Graph, Operator


@dataclass(frozen=True)
class Rule:
    """One rule: `op` (a TOSA operator name, or None for any) with every tensor of `inputs` among the operator's
    inputs and every one of `outputs` among its outputs. `where` names it in placements and errors."""

    text: str
    where: str
    op: str | None
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()

    def matches(self, op: Operator) -> bool:
        return (
            (self.op is None or op.op == self.op)
            and all(n in op.inputs for n in self.inputs)
            and all(n in op.outputs for n in self.outputs)
        )


def parse(text: str, where: str) -> Rule:
    """One rule (`where`: how placements and errors name it)."""
    if not isinstance(text, str):
        raise TosaError(f"a host rule is a string (an operator name, a tensor name or 'OP:in,...:out,...'), got "
                        f"{type(text).__name__} {text!r}")  # fmt: skip
    from ..ir.ops import OPS  # (the catalogue: only when there is a rule to parse, not at every load)

    rule = text.strip()
    if not rule:
        raise TosaError(f"{where}: an empty rule")
    if ":" not in rule:
        if rule.upper() in OPS:
            return Rule(text, where, rule.upper())
        return Rule(text, where, None, outputs=(rule,))
    fields = [f.strip() for f in rule.split(":")]
    if fields[0].upper() not in OPS:  # perhaps a tensor name with a colon; if not, unmatched() says what is wrong
        return Rule(text, where, None, outputs=(rule,))
    if len(fields) > 3:
        raise TosaError(f"{where}: malformed, more than 3 fields; a rule is OP:in1,in2:out1,out2")
    lists: list[tuple[str, ...]] = []
    for kind, field in zip(("input", "output"), [*fields[1:], "", ""]):
        names = tuple(n.strip() for n in field.split(",")) if field else ()
        if any(not n for n in names):
            raise TosaError(f"{where}: malformed, an empty {kind} tensor name in {field!r}")
        lists.append(names)
    return Rule(text, where, fields[0].upper(), lists[0], lists[1])


def read_file(path: str | Path) -> list[Rule]:
    """The rules of a partition file, one per line; blank lines skipped, and comments: a line whose first character
    (after blanks) is "#", and the rest of a line from a "#" after a blank."""
    name = str(path)
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as err:
        raise TosaError(f"cannot read the partition file: {err.strerror or err}", file=name) from None
    except UnicodeDecodeError as err:
        raise TosaError(f"the partition file is not UTF-8 text ({err})", file=name) from None
    rules = []
    for number, line in enumerate(lines, 1):
        text = "" if line.lstrip().startswith("#") else re.split(r"\s#", line, maxsplit=1)[0].strip()
        if text:
            rules.append(parse(text, f"partition file {name} line {number}: {text!r}"))
    return rules


def collect(host_ops: str | Iterable[str | Rule] = (), partition: str | Path | None = None) -> list[Rule]:
    """The rules of compile()'s options: `host_ops` (a rule, or a list of rules or Rule records), then the
    partition file's."""
    if isinstance(host_ops, str):
        host_ops = [host_ops]
    try:
        given = list(host_ops)
    except TypeError:
        raise TosaError(f"host_ops takes a list of rules, got {type(host_ops).__name__}") from None
    rules = [r if isinstance(r, Rule) else parse(r, f"host_ops rule {r!r}") for r in given]
    if partition is not None:
        rules += read_file(partition)
    return rules


def unmatched(rule: Rule, graph: Graph) -> TosaError:
    """The error for a rule that matched no operator of `graph`, saying what the graph has instead."""
    ops = [op for _, block in graph.blocks() for op in block.operators]
    if rule.op is None:
        name = rule.outputs[0]
        why = f"no operator writes a tensor {name!r}"
        head = name.split(":", 1)[0].strip()
        if ":" in name:
            why += f", and it is no NNAdapter rule OP:inputs:outputs either ({head!r} is not a TOSA operator)"
    elif not any(op.op == rule.op for op in ops):
        kinds = sorted({op.op for op in ops})
        why = f"the graph has no {rule.op} operator (it has {', '.join(kinds)})"
    else:
        reads = f"reads {', '.join(map(repr, rule.inputs))}" if rule.inputs else ""
        writes = f"writes {', '.join(map(repr, rule.outputs))}" if rule.outputs else ""
        why = f"no {rule.op} operator {' and '.join(filter(None, (reads, writes)))}"
        writers = {op.op for op in ops for n in rule.outputs if n in op.outputs}
        if writers:  # after the compile's passes (tosa_vk/stages/passes/), e.g. batched projections, SLICEs write them
            why += f" ({', '.join(map(repr, rule.outputs))}: written by {' / '.join(sorted(writers))})"
    return TosaError(f"{rule.where} matches no operator: {why}")


def rule_line(op: Operator) -> str:
    """An operator as an NNAdapter rule line, `OP:in1,in2:out1` (names as in the graph; see `writable`)."""
    return f"{op.op}:{','.join(op.inputs)}:{','.join(op.outputs)}"


def writable(op: Operator) -> bool:
    """Whether rule_line(op) reads back as a rule for `op`: no tensor name with ",", ":" or "#" in it, or blanks
    around it."""
    return all(n and n == n.strip() and not any(c in n for c in ",:#") for n in (*op.inputs, *op.outputs))
