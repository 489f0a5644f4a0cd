"""mkdocs hooks (mkdocs.yml): the Benchmarks page's tables and plots, made at build time from the committed bench
results, benchmarks/results/NAME.json (a `tosa-vk bench` run's results.json), by the bench's own report code, so the
page holds no number typed by hand. A page asks for one with the comment `<!-- bench: NAME -->`."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

from mkdocs.structure.files import File

from tosa_vk.tools.bench import report

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
MARK = re.compile(r"<!-- bench: (\w+) -->")
PLOTS: dict[str, str | None] = {}  # result name -> None (plotted into plots/NAME.png) or why there is no plot


def results(name: str) -> dict:
    return json.loads((RESULTS / f"{name}.json").read_text())


def on_files(files, config):
    for path in sorted(RESULTS.glob("*.json")):
        with tempfile.TemporaryDirectory(prefix="tosa_vk-docs-") as folder:
            png = Path(folder) / "plot.png"
            PLOTS[path.stem] = report.plot(results(path.stem), png)
            if PLOTS[path.stem] is None:
                files.append(File.generated(config, f"plots/{path.stem}.png", content=png.read_bytes()))
    return files


def on_page_markdown(markdown, page, config, files):
    def tables(match: re.Match) -> str:
        name = match.group(1)
        if not (RESULTS / f"{name}.json").is_file():
            raise ValueError(f"{page.file.src_path}: no benchmarks/results/{name}.json for <!-- bench: {name} -->")
        plot = PLOTS.get(name, "no plot")
        up = "../" * page.file.src_uri.count("/")
        figure = f"![{name}]({up}plots/{name}.png)" if plot is None else f"({plot})"
        return f"{report.markdown(results(name))}\n\n{figure}\n"

    return MARK.sub(tables, markdown)
