"""Plots as PNG bytes: written beside report.md and embedded as data URIs in report.html.

Matplotlib's Agg backend draws without a display, so reports build on headless machines.
Figures are made with `matplotlib.figure.Figure` directly, not pyplot: no global figure
manager to register with and close, so nothing leaks between plots and setup is cheaper.
"""

from __future__ import annotations

import base64
import io
import re
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure as MplFigure
from matplotlib.ticker import FuncFormatter, NullFormatter

from tdebench.report.records import (BASELINE, HEADLINES, QUERY_TESTS, SummaryRecord,
                                     headline_records, is_query)

WIDTH_INCHES = 11.0
DPI = 100
LOG_SPAN = 20.0
"""A per-query plot whose medians span more than this factor gets a log y-axis, so the
short queries do not shrink to invisible bars beside one long query."""
ROTATE_LABELS_ABOVE = 24
"""More groups than this and their labels are turned upright so they cannot overlap."""


@dataclass(frozen=True)
class Figure:
    title: str
    name: str  # file name, safe for every file system
    png: bytes

    @property
    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


def _file_name(*parts: object) -> str:
    return re.sub(r"[^A-Za-z0-9.-]+", "_", "-".join(str(part) for part in parts)) + ".png"


def _new_figure(height_inches: float) -> tuple[MplFigure, Axes]:
    figure = MplFigure(figsize=(WIDTH_INCHES, height_inches), dpi=DPI)
    FigureCanvasAgg(figure)
    return figure, figure.add_subplot()


def _png(figure: MplFigure) -> bytes:
    buffer = io.BytesIO()
    figure.tight_layout()
    figure.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


def _grouped_bars(axes: Axes, groups: list[str], series: dict[str, list[tuple[float, float, float]]]) -> None:
    """One bar per series within each group; each value is (height, err_below, err_above).
    Missing values are NaN and simply not drawn."""
    width = 0.8 / max(len(series), 1)
    positions = np.arange(len(groups))
    for index, (name, values) in enumerate(series.items()):
        heights, below, above = (np.array(column, dtype=float) for column in zip(*values))
        axes.bar(positions + (index - (len(series) - 1) / 2) * width, heights, width, label=name,
                 yerr=np.vstack([below, above]), capsize=2, error_kw={"linewidth": 0.8})
    if len(groups) > ROTATE_LABELS_ABOVE:
        axes.set_xticks(positions, groups, rotation=90, fontsize="small")
    else:
        axes.set_xticks(positions, groups)
    axes.set_xlim(-0.6, len(groups) - 0.4)
    axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))  # outside: never hides a bar
    axes.grid(axis="y", alpha=0.3)


def overhead_plots(records: list[SummaryRecord]) -> list[Figure]:
    """Per engine and workload: each headline figure's overhead per encryption, CI as error bars."""
    per_config: dict[tuple, dict[str, dict[str, tuple[float, float, float]]]] = defaultdict(lambda: defaultdict(dict))
    for headline, record in headline_records(records):
        compared = record.overhead
        if compared is None:
            continue
        cell = record.cell
        per_config[(cell.engine, cell.workload, cell.scale)][cell.encryption][headline.label] = (
            compared.pct, compared.pct - compared.ci_low, compared.ci_high - compared.pct)
    figures = []
    for (engine, workload, scale), by_encryption in sorted(per_config.items()):
        labels = [h.label for h in HEADLINES if any(h.label in v for v in by_encryption.values())]
        missing = (np.nan, np.nan, np.nan)
        series = {enc: [values.get(label, missing) for label in labels]
                  for enc, values in sorted(by_encryption.items())}
        figure, axes = _new_figure(3.6)
        _grouped_bars(axes, labels, series)
        axes.axhline(0, color="black", linewidth=0.8)
        axes.set_ylabel("overhead vs none (%)")
        title = f"{engine} · {workload} sf{scale:g}: overhead vs {BASELINE} (95% CI)"
        axes.set_title(title)
        figures.append(Figure(title, _file_name("overhead", engine, workload, f"sf{scale:g}"), _png(figure)))
    return figures


def needs_log_scale(medians: list[float]) -> bool:
    """True when the positive medians of one plot span more than LOG_SPAN times."""
    positive = [value for value in medians if value > 0 and np.isfinite(value)]
    return bool(positive) and max(positive) > LOG_SPAN * min(positive)


def query_plots(records: list[SummaryRecord]) -> list[Figure]:
    """Per engine, workload and query test: median elapsed ms per query per encryption."""
    per_config: dict[tuple, dict[str, dict[str, tuple[float, float, float]]]] = defaultdict(lambda: defaultdict(dict))
    for record in records:
        cell, summary = record.cell, record.summary
        if cell.test in QUERY_TESTS and is_query(cell.step) and cell.metric == "elapsed_s":
            per_config[(cell.engine, cell.workload, cell.scale, cell.test)][cell.encryption][cell.step] = (
                summary.median * 1000, (summary.median - summary.ci_low) * 1000,
                (summary.ci_high - summary.median) * 1000)
    figures = []
    for (engine, workload, scale, test), by_encryption in sorted(per_config.items()):
        queries = list(dict.fromkeys(step for values in by_encryption.values() for step in values))
        missing = (np.nan, np.nan, np.nan)
        series = {enc: [values.get(query, missing) for query in queries]
                  for enc, values in by_encryption.items()}
        figure, axes = _new_figure(3.8 if len(queries) <= ROTATE_LABELS_ABOVE else 4.4)
        _grouped_bars(axes, queries, series)
        if needs_log_scale([height for values in series.values() for height, _, _ in values]):
            axes.set_yscale("log")
            # plain numbers (0.1, 1, 10, 100), not 10^x: easier to read, and no mathtext to typeset
            axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.10g}"))
            axes.yaxis.set_minor_formatter(NullFormatter())
            axes.set_ylabel("median elapsed (ms, log scale)")
        else:
            axes.set_ylabel("median elapsed (ms)")
        title = f"{engine} · {workload} sf{scale:g} · {test} test: per query (95% CI)"
        axes.set_title(title)
        figures.append(Figure(title, _file_name("queries", engine, workload, f"sf{scale:g}", test), _png(figure)))
    return figures
