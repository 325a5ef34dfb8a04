"""Plots as PNG bytes: written beside report.md and embedded as data URIs in report.html.

Matplotlib's Agg backend draws without a display, so reports build on headless machines.
"""

from __future__ import annotations

import base64
import io
import re
from collections import defaultdict
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import numpy as np  # noqa: E402

from tdebench.report.records import (BASELINE, HEADLINES, QUERY_TESTS, SummaryRecord,  # noqa: E402
                                     headline_records, is_query)

WIDTH_INCHES = 11.0
DPI = 100


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


def _png(figure: plt.Figure) -> bytes:
    buffer = io.BytesIO()
    figure.tight_layout()
    figure.savefig(buffer, format="png", dpi=DPI)
    plt.close(figure)
    return buffer.getvalue()


def _grouped_bars(axes: plt.Axes, groups: list[str], series: dict[str, list[tuple[float, float, float]]]) -> None:
    """One bar per series within each group; each value is (height, err_below, err_above).
    Missing values are NaN and simply not drawn."""
    width = 0.8 / max(len(series), 1)
    positions = np.arange(len(groups))
    for index, (name, values) in enumerate(series.items()):
        heights, below, above = (np.array(column, dtype=float) for column in zip(*values))
        axes.bar(positions + (index - (len(series) - 1) / 2) * width, heights, width, label=name,
                 yerr=np.vstack([below, above]), capsize=2, error_kw={"linewidth": 0.8})
    axes.set_xticks(positions, groups)
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
        figure, axes = plt.subplots(figsize=(WIDTH_INCHES, 3.6))
        _grouped_bars(axes, labels, series)
        axes.axhline(0, color="black", linewidth=0.8)
        axes.set_ylabel("overhead vs none (%)")
        title = f"{engine} · {workload} sf{scale:g}: overhead vs {BASELINE} (95% CI)"
        axes.set_title(title)
        figures.append(Figure(title, _file_name("overhead", engine, workload, f"sf{scale:g}"), _png(figure)))
    return figures


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
        figure, axes = plt.subplots(figsize=(WIDTH_INCHES, 3.8))
        _grouped_bars(axes, queries, series)
        axes.set_ylabel("median elapsed (ms)")
        title = f"{engine} · {workload} sf{scale:g} · {test} test: per query (95% CI)"
        axes.set_title(title)
        figures.append(Figure(title, _file_name("queries", engine, workload, f"sf{scale:g}", test), _png(figure)))
    return figures
