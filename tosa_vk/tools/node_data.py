"""Model Explorer node data from a profile or a comparison (`tosa-vk profile --node-data`, `tosa-vk compare
--node-data`): one value per TOSA operator, keyed the way Arm's TOSA adapter for Model Explorer
(tosa-adapter-model-explorer) names a .tosa file's nodes, so that `model-explorer model.tosa
--extensions=tosa_adapter_model_explorer --node_data_paths=times.json` colours the graph by it.

Node ids: the adapter makes one graph per block, its id the region's name ("main"), and names operator N of the
block "<region>/op<N>" — the N of tosa_vk's labels ("CONV2D #36"), the operator's index in the file's block.
The file is Model Explorer's ModelNodeData JSON (model_explorer/node_data_builder.py; a test reads it back with
those classes where the `explorer` extra is installed):
    {graph id: {"name": str, "results": {node id: {"value": number, "bgColor"?: css}}, "gradient" | "thresholds"}}

- profile: each operator's milliseconds, the median over the measured runs. A fused kernel's median is shared
  evenly among the operators it covers (its label lists them), so the values add up to the kernel time; an
  operator lowered to several kernels sums its shares. A gradient colours the slowest red.
- compare: each operator's error ratio, its worst output element's |got - want| over the bound of that output's
  dtype (compare.judged: <= 1 passes; exact dtypes' bound is half a step, so one step off reads 2; an infinite
  ratio is written as 1e30, JSON having no infinity). Thresholds colour <= 0.5 green, <= 1 yellow, beyond red; the
  first tensor out of bounds (where the backends part) marks its operator magenta, and the data's name says which.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..ir.graph import Graph
from ..store.files import write_atomic
from . import compare, profile

# One operator of a kernel or placement label: "CONV2D #58 'x'", "body::ADD #3 'y'" (region prefix, op, index, the
# first output's name)
_LABEL = re.compile(r"^(?:(?P<region>.+?)::)?(?P<op>[A-Z][A-Z0-9_]*) #(?P<index>\d+)(?: '(?P<out>.*)')?$")
INFINITE = 1e30  # what an infinite ratio is written as (JSON has no infinity; Model Explorer reads numbers)
FIRST = {"bgColor": "#e040fb", "textColor": "#000000"}  # the first divergence


def node_id(region: str, index: int) -> str:
    """The TOSA adapter's id of operator `index` of `region`'s block: "main/op36"."""
    return f"{region}/op{index}"


def locate(graph: Graph, label: str) -> str | None:
    """The node id of one operator label, in `graph` (the file's graph): by the label's index where the operator
    there matches (op and first output), else by the output's name (the compile stages may have added operators
    before it); None for an operator the file does not have (one a compile pass made)."""
    m = _LABEL.match(label.strip())
    if m is None:
        return None
    name = m["region"] or graph.regions[0].name
    region = next((r for r in graph.regions if r.name == name), None)
    if region is None or not region.blocks:
        return None
    ops = region.blocks[0].operators
    index, out = int(m["index"]), m["out"]
    if index < len(ops) and ops[index].op == m["op"] and (out is None or out in ops[index].outputs[:1]):
        return node_id(region.name, index)
    if out is not None:
        found = next((i for i, op in enumerate(ops) if op.op == m["op"] and out in op.outputs), None)
        if found is not None:
            return node_id(region.name, found)
    return None


def times(graph: Graph, rows: list[profile.Row], runs: int, delegate: str | None = None) -> dict[str, Any]:
    """Node data of a profile (profile.rows of the measured runs): each operator's median ms. `delegate`: a .pte's
    delegate whose graph `graph` is; its kernels are labelled "delegate_0::CONV2D #3 ..." among the program's."""
    if delegate is not None:
        rows = [replace(r, op=r.op[len(delegate) + 2 :]) for r in rows if r.op.startswith(f"{delegate}::")]
    values: dict[str, dict[str, float]] = {}
    for row in rows:
        ops = profile.operators(row.op)
        share = row.median_ms / len(ops)
        for op in ops:
            found = locate(graph, op)
            if found is not None:
                bucket = values.setdefault(found.rsplit("/", 1)[0], {})
                bucket[found] = bucket.get(found, 0.0) + share
    gradient = [
        {"stop": 0, "bgColor": "#e8f5e9"},
        {"stop": 0.5, "bgColor": "#ffeb3b"},
        {"stop": 1, "bgColor": "#f44336"},
    ]
    name = f"ms per operator (median of {runs} runs; a fused kernel's time shared evenly among its operators)"
    return {
        graph_id: {
            "name": name,
            "results": {node: {"value": round(ms, 6)} for node, ms in each.items()},
            "gradient": gradient,
        }
        for graph_id, each in values.items()
    }


def errors(graph: Graph, rows: list[compare.Row], delegate: str | None = None) -> dict[str, Any]:
    """Node data of a comparison (compare.compare's rows): each operator's worst error ratio over its outputs, the
    first divergence marked. Graph inputs (identical on both sides) have no node of their own. `delegate`: a .pte's
    delegate whose graph `graph` is; its tensors are "delegate_0/<tensor>" among the program's (the first divergence
    marked is the delegate's own)."""
    if delegate is not None:
        rows = [replace(r, tensor=r.tensor[len(delegate) + 1 :]) for r in rows if r.tensor.startswith(f"{delegate}/")]
    producer = {n: node_id(graph.regions[0].name, i) for i, op in enumerate(graph.main.operators) for n in op.outputs}
    ratio: dict[str, float] = {}
    for row in rows:
        found = producer.get(row.tensor)
        if found is not None:
            ratio[found] = max(ratio.get(found, 0.0), row.ratio)
    first = compare.first_failure(rows)
    marked = producer.get(first.tensor) if first is not None else None
    results: dict[str, dict[str, Any]] = {}
    for node, value in ratio.items():
        results[node] = {"value": round(value, 6) if math.isfinite(value) else INFINITE}
        if node == marked:
            results[node].update(FIRST)
    if first is None:
        name = f"error / bound per operator (all {len(rows)} tensors within bounds)"
    else:
        name = f"error / bound per operator (first divergence: {first.producer}, tensor '{first.tensor}')"
    thresholds = [
        {"value": 0.5, "bgColor": "#a5d6a7"},
        {"value": 1, "bgColor": "#fff59d"},
        {"value": INFINITE, "bgColor": "#ef5350"},
    ]
    return {graph.regions[0].name: {"name": name, "results": results, "thresholds": thresholds}}


def write(path: Path | str, data: dict[str, Any], *, overwrite: bool = True) -> int:
    """Writes node data as JSON (files.write_atomic); returns the number of nodes it gives a value."""
    text = json.dumps(data, indent=1, allow_nan=False)
    write_atomic(path, text.encode(), overwrite=overwrite, what="the node data")
    return sum(len(g["results"]) for g in data.values())
