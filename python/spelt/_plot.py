"""A picture of an execution summary: the pipeline graph and per-stage time bars (matplotlib).

matplotlib is an optional dependency (``pip install spelt-ml[plot]``), imported on the first
call. Used by ``spelt.experimental.plot_execution_summary`` and ``spelt profile``.
"""

from __future__ import annotations

import html
import io
import os
from typing import Any, Sequence

from spelt import _summary

_BUSY, _WAIT, _HOT = "#4C72B0", "#C0C0C0", "#D62728"


def _depths(summary: _summary.ExecutionSummary) -> dict[int, int]:
    depth = {0: 0}
    for stage in summary.stages:  # output first; parents come after their children
        for parent in stage.inputs:
            depth[parent] = max(depth.get(parent, 0), depth[stage.id] + 1)
    return depth


def _draw(summary: _summary.ExecutionSummary, title: str) -> Any:
    import matplotlib  # pylint: disable=import-outside-toplevel

    matplotlib.use("Agg", force=False)
    from matplotlib import pyplot as plt  # pylint: disable=import-outside-toplevel

    stages = summary.stages
    hot = summary.bottleneck
    height = max(3.0, 0.55 * len(stages) + 1.5)
    fig, (graph, bars) = plt.subplots(
        1, 2, figsize=(13, height), gridspec_kw={"width_ratios": [1, 1.4]}
    )
    fig.suptitle(f"{title}\n{summary.bottleneck_line()}", fontsize=9, x=0.01, ha="left")

    # The pipeline graph: the output on top, each stage one row lower than its lowest child.
    depth = _depths(summary)
    columns: dict[int, int] = {}
    where = {}
    for stage in stages:
        d = depth[stage.id]
        where[stage.id] = (columns.get(d, 0), -d)
        columns[d] = columns.get(d, 0) + 1
    for stage in stages:
        x, y = where[stage.id]
        for parent in stage.inputs:
            px, py = where[parent]
            graph.annotate(
                "",
                xy=(x, y - 0.18),
                xytext=(px, py + 0.18),
                arrowprops={"arrowstyle": "->", "color": "#555555"},
            )
        color = _HOT if hot is not None and stage.id == hot.id else _BUSY
        label = f"{stage.id}: {stage.name[:40]}\n{stage.kind}"
        if stage.worker_utilization is not None:
            label += f", {stage.parallelism} workers {stage.worker_utilization:.0%} busy"
        graph.text(
            x,
            y,
            label,
            ha="center",
            va="center",
            fontsize=7,
            color="white",
            bbox={"boxstyle": "round", "facecolor": color, "edgecolor": "none"},
        )
    graph.set_xlim(-0.7, max(columns.values()) - 0.3)
    graph.set_ylim(-max(depth.values()) - 0.6, 0.6)
    graph.axis("off")
    graph.set_title("pipeline (output on top)", fontsize=9)

    # Time bars: own work per thread and time waiting on parents, in ms.
    names = [f"{s.id}: {s.name[:30]}" for s in stages]
    busy = [s.busy_ns / 1e6 for s in stages]
    wait = [
        0.0 if s.in_workers else s.wait_share * s.total_time_ns / 1e6 / s.parallelism
        for s in stages
    ]
    rows = range(len(stages))
    colors = [_HOT if hot is not None and s.id == hot.id else _BUSY for s in stages]
    bars.barh(rows, busy, color=colors, label="own work per thread")
    bars.barh(rows, wait, left=busy, color=_WAIT, label="waiting on parents")
    bars.set_yticks(list(rows), names, fontsize=7)
    bars.invert_yaxis()
    bars.set_xlabel("ms (summed over threads, divided by their number)", fontsize=8)
    bars.legend(fontsize=7, loc="lower right")
    bars.set_title(f"per-stage time over {summary.wall_time_s:.2f} s", fontsize=9)
    fig.tight_layout()
    return fig


def plot_execution_summary(
    summary: _summary.ExecutionSummary | Sequence[_summary.ExecutionSummary],
    path: str | os.PathLike[str],
    *,
    titles: Sequence[str] | None = None,
) -> None:
    """Writes the pipeline graph and per-stage time bars of ``summary`` to ``path``.

    Args:
        summary: an ``ExecutionSummary`` (``spelt.experimental.get_execution_summary``), or a
            sequence of them (one picture each).
        path: ``*.html``: a page with each picture (inline SVG) and its table; any other
            suffix matplotlib knows (``.png``, ``.svg``, ``.pdf``): the first summary's
            picture.
        titles: a heading per summary (default "pipeline 1", ...).

    Raises:
        ImportError: matplotlib is not installed (``pip install spelt-ml[plot]``).
        ValueError: an empty sequence of summaries.
    """
    summaries = [summary] if isinstance(summary, _summary.ExecutionSummary) else list(summary)
    if not summaries:
        raise ValueError("plot_execution_summary: no summary to plot")
    titles = (
        list(titles) if titles is not None else [f"pipeline {i + 1}" for i in range(len(summaries))]
    )
    from matplotlib import pyplot as plt  # pylint: disable=import-outside-toplevel

    path = os.fspath(path)
    if not path.lower().endswith((".html", ".htm")):
        fig = _draw(summaries[0], titles[0])
        fig.savefig(path, dpi=120)
        plt.close(fig)
        return
    sections = []
    for s, title in zip(summaries, titles):
        fig = _draw(s, title)
        svg = io.StringIO()
        fig.savefig(svg, format="svg")
        plt.close(fig)
        sections.append(
            f"<h2>{html.escape(title)}</h2>\n{svg.getvalue()}\n<pre>{html.escape(s.table())}</pre>"
        )
    page = (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>Spelt execution summary"
        "</title></head>\n<body>\n<h1>Spelt execution summary</h1>\n"
        + "\n".join(sections)
        + "\n</body></html>\n"
    )
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
