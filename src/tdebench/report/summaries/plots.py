"""Plots as PNG bytes: written beside report.md and embedded as data URIs in report.html.

Matplotlib's Agg backend draws without a display, so reports build on headless machines.
Figures are made with `matplotlib.figure.Figure` directly, not pyplot: no global figure
manager to register with and close, so nothing leaks between plots and setup is cheaper.
A section gathers its figures' data; each figure is built and drawn later (`later`): `draw_all`
builds and draws a report's figures in a process per core, since they are most of its time.
"""

from __future__ import annotations

import base64
import functools
import gc
import io
import math
import multiprocessing
import os
import re
import signal
import textwrap
import threading
from collections import defaultdict
from collections.abc import Callable, Set
from typing import Any
from dataclasses import dataclass

import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure as MplFigure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter
from PIL import Image

from tdebench.report.data.declared import LABELLED
from tdebench.report.data.records import (BASELINE, PLACEBO, QUERY_TESTS, SummaryRecord, engine_label, headline_records,
                                          is_query, memory_order, resolution, scale_label)
from tdebench.report.summaries.tables import samples_by_config
from tdebench.report.data.units import MIB
from tdebench.results import Sample

WIDTH_INCHES = 11.0
DPI = 100
PALETTE = 256
"""Colours per plot: enough for every series and the anti-aliasing between them."""
LOG_SPAN = 20.0
"""A per-query plot whose medians span more than this factor gets a log y-axis, so the
short queries do not shrink to invisible bars beside one long query."""
ROTATE_LABELS_ABOVE = 24
"""More groups than this and their labels are turned upright so they cannot overlap."""
MIN_POINTS = 2
"""A line over time needs this many readings to show anything the tables do not: a single
reading is a dot that the resources table already gives as its mean and peak."""
FULL_DROP = 100.0
"""A time or a rate falls by at most all of it: no interval or floor band is drawn below -100%."""
MIN_SERIES = 2
"""An overhead plot compares encryptions: with a single one its few bars only repeat the
overhead table's rows, so it is not drawn."""


Drawing = Callable[[], bytes]
"""A figure's PNG, built and drawn when first asked for (`later`); `draw_all` draws a report's on every core."""


@dataclass(frozen=True)
class Figure:
    title: str
    name: str  # file name, safe for every file system
    draw: Drawing

    @functools.cached_property
    def png(self) -> bytes:
        return self.draw()

    @property
    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


_DRAWING: list[Figure] = []
"""The figures `draw_all` hands its worker processes, which inherit them (fork): a figure's data
need not be picklable, an index is."""


def _draw(index: int) -> bytes:
    return _DRAWING[index].draw()


def draw_all(figures: list[Figure]) -> None:
    """Build and draw every figure's PNG not yet drawn, a process per core (Agg draws on one thread:
    a report with dozens of plots waits on them most). Forked, the workers hold the figures' data
    as gathered here and send back only bytes. They are drawn here, one by one, when they are
    asked for: with one core or figure, where fork is not offered, or while another thread runs
    here (it might hold a lock a forked worker would wait on forever; a progress display's)."""
    pending = [figure for figure in figures if "png" not in figure.__dict__]
    workers = min(len(os.sched_getaffinity(0)), len(pending))
    if (workers < 2 or "fork" not in multiprocessing.get_all_start_methods()
            or threading.active_count() > 1):
        return
    _DRAWING[:] = pending
    # what exists now is never collected in a worker: no finalizer of an engine's object (whose
    # threads a fork does not copy) runs there; a caller's freeze (the report build's) stays
    frozen = gc.get_freeze_count() > 0
    gc.freeze()
    try:
        pool = multiprocessing.get_context("fork").Pool(workers, initializer=_as_a_new_process)
    finally:
        if not frozen:
            gc.unfreeze()
    try:
        drawn = pool.map(_draw, range(len(pending)), chunksize=1)
        pool.close()  # the workers finish and exit
    except BaseException:
        pool.terminate()  # Ctrl-C, an error in a worker: SIGTERM, which a worker does not catch
        raise
    finally:
        pool.join()
        _DRAWING.clear()
    for figure, png in zip(pending, drawn):
        figure.__dict__["png"] = png  # what the cached property would have drawn


def _as_a_new_process() -> None:
    """A forked worker's signals as a new process has them: it inherits this one's handlers (`tdebench
    run` catches SIGINT and SIGTERM to stop cleanly), with which the pool's SIGTERM would not end it."""
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, signal.SIG_DFL)


def _file_name(*parts: object) -> str:
    return re.sub(r"[^A-Za-z0-9.-]+", "_", "-".join(str(part) for part in parts)) + ".png"


def _new_figure(height_inches: float) -> tuple[MplFigure, Axes]:
    figure = MplFigure(figsize=(WIDTH_INCHES, height_inches), dpi=DPI)
    FigureCanvasAgg(figure)
    return figure, figure.add_subplot()


def later(build: Callable[..., MplFigure], *args: Any) -> Drawing:
    """The PNG of the figure `build(*args)` makes, built and drawn when first asked for: a section
    makes its figures' data here, and `draw_all` builds and draws them on every core (building,
    a figure's axes, ticks and artists, is a good part of a plot's time too)."""
    return functools.partial(_built_png, build, args)


def _built_png(build: Callable[..., MplFigure], args: tuple[Any, ...]) -> bytes:
    return _png(build(*args))


def _png(figure: MplFigure) -> bytes:
    """The figure (its parts fitted: `tight_layout`, by whoever built it) as a PNG of at most
    PALETTE colours: a chart's flat fills, lines and anti-aliased text lose nothing visible, and
    the file is about a third of a true-colour one's, which matters twice over since report.html
    embeds every plot."""
    canvas = figure.canvas
    assert isinstance(canvas, FigureCanvasAgg)
    canvas.draw()
    image = Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba()).convert("RGB")
    buffer = io.BytesIO()
    image.quantize(colors=PALETTE, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE).save(
        buffer, format="png", optimize=True)
    return buffer.getvalue()


def overhead_plots(records: list[SummaryRecord], drawn: Set[tuple] = frozenset()) -> list[Figure]:
    """Per engine, workload and scale, small multiples: one forest plot per headline figure (load,
    power, throughput, size), each encryption's overhead and 95% CI, the placebo's floor shaded;
    none where fewer than MIN_SERIES encryptions (the placebo counts) compare, and no panel for a
    figure a cost curve draws at every cache size (`drawn`: `curved`). An engine measured at
    several cache sizes (memory_mb) gets one figure, its rows grouped by size, the largest cache on
    top, each row's band its own size's floor."""
    per_group: dict[tuple, dict[str, list[SummaryRecord]]] = defaultdict(lambda: defaultdict(list))
    for headline, record in headline_records(records):
        cell = record.cell
        group = (cell.engine, cell.host or "", cell.workload, cell.scale)
        if record.overhead is not None and (*group, headline.label, cell.memory_mb) not in drawn:
            per_group[group][headline.label].append(record)
    figures = []
    for (engine, host, workload, scale), by_figure in sorted(per_group.items()):
        sizes = sorted({(-memory_order(r.cell.memory_mb), r.cell.memory_mb) for rs in by_figure.values() for r in rs})
        several = len(sizes) > 1
        if max(len(chosen) for chosen in by_figure.values()) < MIN_SERIES * len(sizes):
            continue
        floor_of = {r.cell.comparison: resolution(r) for chosen in by_figure.values() for r in chosen
                    if r.cell.encryption == PLACEBO}
        panels = []
        for label in (h.label for h in LABELLED if h.label in by_figure):
            chosen = sorted(((r.cell, r.overhead) for r in by_figure[label]
                             if r.cell.encryption != PLACEBO and r.overhead is not None),
                            key=lambda pair: (-memory_order(pair[0].memory_mb), pair[1].pct, pair[0].encryption))
            rows = tuple(PanelRow(row_label(cell.encryption, cell.memory_mb, several), compared.pct,
                                  compared.ci_low, compared.ci_high, "plain",
                                  floor=floor_of.get(cell.comparison) if several else None)
                         for cell, compared in chosen)
            floor = floor_of.get(chosen[0][0].comparison) if chosen and not several else None
            panels.append(Panel(label, rows, floor, ordered=several))
        configured = (engine if several else engine_label(engine, sizes[0][1])) + (f" @ {host}" if host else "")
        title = f"{configured} · {workload} {scale_label(workload, scale)}: overhead vs {BASELINE} (95% CI)"
        figure = _forest_figure(panels, columns=len(panels), title=title)
        if figure is not None:
            figures.append(Figure(title, _file_name("overhead", configured, workload, scale_label(workload, scale)),
                                  figure))
    return figures


def needs_log_scale(medians: list[float]) -> bool:
    """True when the positive medians of one plot span more than LOG_SPAN times."""
    positive = [value for value in medians if value > 0 and np.isfinite(value)]
    return bool(positive) and max(positive) > LOG_SPAN * min(positive)


def query_plots(records: list[SummaryRecord]) -> list[Figure]:
    """Per engine, workload, scale and query test, one idea: which queries an encryption slows
    down. A heat map of each query's overhead against none (rows: encryptions and the placebo,
    dearest at the bottom; columns: queries, none's median under each), a cell's colour and
    number its overhead in percent (blue: faster, red: slower, white: the same), a blank where a
    query has no overhead. An engine measured at several cache sizes (memory_mb) gets one map
    whose rows are grouped by size, the largest cache on top, so a query's cost is read setting
    in as the cache shrinks; none's median under a query is then its range over the sizes. The
    tables and queries.csv have the medians and intervals."""
    groups: dict[tuple, dict[tuple, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    medians: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for record in records:
        cell = record.cell
        if not (cell.test in QUERY_TESTS and is_query(cell.step) and cell.metric == "elapsed_s"):
            continue
        group = (cell.engine, cell.host or "", cell.workload, cell.scale, cell.test)
        if cell.encryption == BASELINE:
            medians[group][cell.step].append(record.summary.median * 1000)
        elif record.overhead is not None:
            row = (-memory_order(cell.memory_mb), cell.memory_mb, cell.encryption)
            groups[group][row][cell.step] = record.overhead.pct
    figures = []
    for group, by_row in sorted(groups.items()):
        engine, host, workload, scale, test = group
        queries = list(medians[group])
        queries += [q for values in by_row.values() for q in values if q not in queries]
        sizes = sorted({row[:2] for row in by_row})
        several = len(sizes) > 1
        rows = sorted(by_row, key=lambda row: (row[0], float(np.nanmean([by_row[row].get(q, np.nan)
                                                                          for q in queries])), row[2]))
        grid = np.array([[by_row[row].get(q, np.nan) for q in queries] for row in rows], dtype=float)
        labels = [row_label(encryption, memory_mb, several) for _, memory_mb, encryption in rows]
        breaks = [index for index in range(1, len(rows)) if rows[index][0] != rows[index - 1][0]]
        configured = engine if several else engine_label(engine, sizes[0][1])
        configured += f" @ {host}" if host else ""
        title = (f"{configured} · {workload} {scale_label(workload, scale)} · {test} test: overhead per query "
                 f"vs {BASELINE}")
        columns = [f"{q}\n{_ms_range(medians[group].get(q, []))}" for q in queries]
        name = _file_name("queries", configured, workload, scale_label(workload, scale), test)
        figures.append(Figure(title, name, later(_query_figure, title, grid, labels, columns, breaks, several)))
    return figures


def size_label(memory_mb: int | None) -> str:
    """A cache size as a figure names it: "12 MB", or "default" (the engine's own)."""
    return "default" if memory_mb is None else f"{memory_mb} MB"


def row_label(encryption: str, memory_mb: int | None, several: bool) -> str:
    """A row of a figure that shows one engine's several cache sizes names its size: "12 MB · none"."""
    return f"{size_label(memory_mb)} · {encryption}" if several else encryption


def _query_figure(title: str, grid: np.ndarray, rows: list[str], columns: list[str], breaks: list[int],
                  several: bool) -> MplFigure:
    figure, axes = _new_figure(1.3 + 0.32 * len(rows) + (0.15 if several else 0))
    _heat_map(axes, grid, rows, columns, small=several or len(columns) > ROTATE_LABELS_ABOVE)
    for index in breaks:  # between two cache sizes
        axes.axhline(index - 0.5, color="black", linewidth=1.5)
    medians = "none's median under each query" + (", its range over the cache sizes" if several else "")
    axes.set_title(f"{title}{chr(10) if several else ' '}(%; {medians})", fontsize="medium")
    figure.tight_layout()
    return figure


def _ms_range(values: list[float]) -> str:
    """A query's medians in ms: the one, or the lowest and highest on two lines ("1.3–" over "1.46 ms")."""
    if not values:
        return ""
    low, high = _ms(min(values)), _ms(max(values))
    return low if low == high else f"{low.removesuffix(' ms')}–\n{high}"


def _ms(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.3g} ms" if value < 100 else f"{value:,.0f} ms"


def _heat_map(axes: Axes, grid: np.ndarray, rows: list[str], columns: list[str], small: bool) -> None:
    """`grid` (percent, NaN blank) as coloured cells with their numbers: a diverging scale
    centred on 0 whose reach is the largest overhead (at least 5%, so noise stays pale);
    `small`: the columns' labels in the smallest font (many columns, or ranges under them)."""
    finite = grid[np.isfinite(grid)]
    reach = max(5.0, float(np.abs(finite).max())) if finite.size else 5.0
    image = axes.imshow(np.ma.masked_invalid(grid), cmap="RdBu_r", vmin=-reach, vmax=reach, aspect="auto")
    for (y, x), value in np.ndenumerate(grid):
        if np.isfinite(value):
            dark = abs(value) > 0.6 * reach
            axes.text(x, y, f"{value:+.0f}", ha="center", va="center", fontsize="x-small",
                      color="white" if dark else "black")
    axes.set_yticks(np.arange(len(rows)), rows)
    axes.set_xticks(np.arange(len(columns)), columns, fontsize="xx-small" if small else "x-small")
    axes.tick_params(length=0)
    axes.figure.colorbar(image, ax=axes, fraction=0.025, pad=0.01).set_label("overhead vs none (%)",
                                                                                 fontsize="small")


MARKERS_BELOW = 40
"""Lines with fewer points than this get a dot on each sample, so a short trial's few
readings stay visible as readings rather than as a straight line."""


def _first_repetition(samples: list[Sample]) -> tuple[int, list[Sample]] | None:
    """Repetition 1's samples, or those of the lowest repetition that has MIN_POINTS of them;
    None when no repetition has that many."""
    by_repetition: dict[int, list[Sample]] = defaultdict(list)
    for sample in samples:
        by_repetition[sample.trial.repetition].append(sample)
    return next(((repetition, chosen) for repetition, chosen in sorted(by_repetition.items())
                 if len(chosen) >= MIN_POINTS), None)


def _lines(by_encryption: dict[str, list[Sample]]) -> list[tuple[str, list[Sample]]]:
    """The lines of one resource plot, (label, samples): each encryption's chosen repetition,
    those with fewer than MIN_POINTS readings left out."""
    lines = []
    for encryption, group in by_encryption.items():
        found = _first_repetition(group)
        if found is not None:
            repetition, chosen = found
            lines.append((encryption if repetition == 1 else f"{encryption} (repetition {repetition})", chosen))
    return lines


def resource_plots(samples: list[Sample], side_by_side: bool = False) -> list[Figure]:
    """Per engine, workload and scale: system CPU % (top) and engine memory in MiB (bottom)
    over the trial's time, one line per encryption, from repetition 1 of each (or the lowest with
    MIN_POINTS readings); none where no encryption has that many readings in a trial.
    `side_by_side` (a lockstep run): the title says the lines are the group's."""
    per_config: dict[tuple, dict[str, list[Sample]]] = defaultdict(dict)
    for (engine, encryption, workload, scale, memory), group in samples_by_config(samples).items():
        per_config[(engine, memory_order(memory), engine_label(engine, memory), workload, scale)][encryption] = group
    figures = []
    for (_, _, engine, workload, scale), by_encryption in sorted(per_config.items()):
        lines = _lines(by_encryption)
        if not lines:
            continue
        title = f"{engine} · {workload} {scale_label(workload, scale)}: CPU and engine memory during repetition 1"
        if side_by_side:
            title += ("\n(lockstep: the encryptions ran side by side; CPU, and an embedded engine's memory, "
                      "are the group's)")
        name = _file_name("resources", engine, workload, scale_label(workload, scale))
        figures.append(Figure(title, name, later(_resource_figure, title, lines)))
    return figures


def _resource_figure(title: str, lines: list[tuple[str, list[Sample]]]) -> MplFigure:
    figure = MplFigure(figsize=(WIDTH_INCHES, 4.4), dpi=DPI)
    FigureCanvasAgg(figure)
    cpu, memory = figure.subplots(2, 1, sharex=True)
    colours = colormaps["tab10" if len(lines) <= 10 else "tab20"]
    for index, (label, chosen) in enumerate(lines):
        times = [s.t_s for s in chosen]
        style = {"color": colours(index), "linewidth": 1.4,
                 "marker": "o" if len(chosen) < MARKERS_BELOW else None, "markersize": 3, "label": label}
        cpu.plot(times, [s.cpu_pct for s in chosen], **style)
        memory.plot(times, [s.mem_bytes / MIB for s in chosen], **style)
    cpu.set_ylim(0, 105)
    cpu.set_ylabel("system CPU (%)")
    memory.set_ylim(bottom=0)
    memory.set_ylabel("engine memory (MiB)")
    memory.set_xlabel("time since the trial started (s)")
    memory.set_xlim(left=0)
    for axes in (cpu, memory):
        axes.grid(alpha=0.3)
    cpu.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    cpu.set_title(title)
    figure.tight_layout()
    return figure


def _plain_log_axis(axis) -> None:
    """Plain numbers (0.1, 1, 10, 1,000), not 10^x, and no labels on a log axis's minor ticks."""
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.10g}"))
    axis.set_minor_formatter(NullFormatter())


def scaling_plots(records: list[SummaryRecord], workload: str, tests: tuple[str, ...], step: str,
                  x_label: str) -> list[Figure]:
    """The scaling figures of Moulianitakis & Asimakopoulos (2019): per engine as configured (its
    memory_mb, its hosts where they are reported apart), one panel per test with the median
    elapsed time of its `step` (95% CI as error bars) against the scale, one line per
    encryption; only tests measured at MIN_POINTS scales or more, and no figure for an engine
    without one."""
    points: dict[tuple, dict[str, dict[str, list[tuple[float, float, float, float]]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    for record in records:
        cell, summary = record.cell, record.summary
        if (cell.workload, cell.step, cell.metric) == (workload, step, "elapsed_s") and cell.test in tests:
            points[(cell.engine, memory_order(cell.memory_mb), cell.configured)][cell.test][cell.encryption].append(
                (cell.scale, summary.median * 1000, (summary.median - summary.ci_low) * 1000,
                 (summary.ci_high - summary.median) * 1000))
    figures = []
    for (_, _, engine), by_test in sorted(points.items()):
        # a panel with one table size is a dot per encryption: the operations table says as much
        shown = [test for test in tests if test in by_test
                 and len({scale for by_enc in by_test[test].values() for scale, *_ in by_enc}) >= MIN_POINTS]
        if not shown:
            continue
        title = f"{engine} · {workload}: elapsed time by {x_label} (median, 95% CI)"
        figures.append(Figure(title, _file_name("scaling", engine, workload),
                              later(_scaling_figure, title, shown, by_test, x_label)))
    return figures


Points = list[tuple[float, float, float, float]]
"""A series of a plot with error bars: (x, y, and the interval's two ends or distances from y)."""


def _scaling_figure(title: str, shown: list[str], by_test: dict[str, dict[str, Points]], x_label: str) -> MplFigure:
    columns = min(3, len(shown))
    rows = -(-len(shown) // columns)
    figure = MplFigure(figsize=(WIDTH_INCHES, 0.8 + 2.8 * rows), dpi=DPI)
    FigureCanvasAgg(figure)
    grid = figure.subplots(rows, columns, squeeze=False)
    encryptions = sorted({enc for by_enc in by_test.values() for enc in by_enc}, key=lambda e: (e != BASELINE, e))
    colours = colormaps["tab10" if len(encryptions) <= 10 else "tab20"]
    for axes, test in zip(grid.flat, shown):
        for index, encryption in enumerate(encryptions):
            if by_test[test].get(encryption):
                x, y, below, above = (np.array(column) for column in zip(*sorted(by_test[test][encryption])))
                axes.errorbar(x, y, yerr=np.vstack([below, above]), color=colours(index), marker="o",
                              markersize=3, linewidth=1.2, capsize=2, label=encryption)
        scales = [scale for by_enc in by_test[test].values() for scale, *_ in by_enc]
        if needs_log_scale(scales):
            axes.set_xscale("log")
        _plain_log_axis(axes.xaxis)
        if needs_log_scale([median for by_enc in by_test[test].values() for _, median, *_ in by_enc]):
            axes.set_yscale("log")
            _plain_log_axis(axes.yaxis)
        else:
            axes.set_ylim(bottom=0)  # a linear time axis from zero, so a gap looks as big as it is
        axes.set_title(test, fontsize="medium")
        axes.set_xlabel(x_label, fontsize="small")
        axes.set_ylabel("median elapsed (ms)", fontsize="small")
        axes.grid(alpha=0.3)
    for axes in list(grid.flat)[len(shown):]:
        axes.set_visible(False)
    grid.flat[0].legend(fontsize="small")
    figure.suptitle(title)
    figure.tight_layout()
    return figure


@dataclass(frozen=True)
class PanelRow:
    """One encryption in a forest plot: its overhead and 95% CI in percent, and what its at-rest
    verdicts said: "encrypted" (all as expected), "plaintext" (a leak) or "unsure"; "plain" in
    a plot that shows no verdicts (the overhead plots)."""

    encryption: str
    pct: float
    ci_low: float
    ci_high: float
    verdict: str
    # what the strength tests showed (the headline picture's marker shape, `INTEGRITY_MARKS`): "tag",
    # "no tag", "broken" or "" (not measured); None in a plot that does not show it
    integrity: str | None = None
    floor: float | None = None  # the row's own noise floor, in a panel whose rows have each their own

    @property
    def drawn(self) -> tuple[float, float]:
        """The interval as drawn: the point alone where there is none (one measurement on a side)."""
        return ((self.pct, self.pct) if math.isnan(self.ci_low) or math.isnan(self.ci_high)
                else (self.ci_low, self.ci_high))


@dataclass(frozen=True)
class Panel:
    """One engine × workload × scale of the headline picture (headline.panels)."""

    title: str
    rows: tuple[PanelRow, ...]
    floor: float | None  # the placebo's resolution in percent, None without a placebo
    rate: bool = False  # a TPM or NOPM: a cost is a drop, so below zero
    regime: str = ""  # the cache regime (cache.TrialFit.regime) its trials all ran in, if one
    kind: str = ""  # the figure it shows (“power geomean”): panels of one kind share their x-scale
    ordered: bool = False  # its rows top to bottom as given (grouped by cache size), not cheapest first


TITLE_CHARS = 50
"""A forest panel's regime line is wrapped at this many characters: two panels side by side
leave each about that much width."""
PANEL_COLUMNS = 2
"""Panels side by side in the headline picture: two fit the first screen's width with their
encryption names readable."""
_MARKS = {"encrypted": ("o", "tab:blue", "verdict encrypted"),
          "plaintext": ("X", "tab:red", "verdict PLAINTEXT (a leak)"),
          "unsure": ("o", "tab:gray", "verdict inconclusive or not verified"),
          "plain": ("o", "tab:blue", "")}  # a plot that shows no verdicts
INTEGRITY_MARKS = {"tag": ("o", True, "filled: a keyed tag refused every change"),
                   "no tag": ("o", False, "hollow: forgeable, or refused only by unkeyed checks"),
                   "broken": ("X", True, "cross: broken (equal data, equal ciphertext)"),
                   "": ("s", False, "square: tampering not measured")}
"""The headline picture's marker per integrity class (answer.integrity_marks): shape, filled, legend.
The colour stays the verdict's."""


def headline_plot(panels: list[Panel]) -> Figure | None:
    """The report's first picture: per engine × workload × scale, a forest plot of each
    encryption's headline overhead (a point and its 95% CI, cheapest at the top), the placebo's
    noise floor shaded, the verdict as the point's mark and the cache regime in the title.
    None when no panel has a row."""
    drawing = _forest_figure(panels, columns=PANEL_COLUMNS)
    return Figure("What each encryption costs, and whether it encrypted", "headline.png", drawing) if drawing else None


def _forest_figure(panels: list[Panel], columns: int, title: str = "") -> Drawing | None:
    """`panels` as forest plots, `columns` side by side, with one legend below them (the
    verdict marks shown, the placebo's band where one is drawn). None without a row."""
    panels = [panel for panel in panels if panel.rows]
    return later(_forest_plots, panels, columns, title) if panels else None


def _forest_plots(panels: list[Panel], columns: int, title: str) -> MplFigure:
    columns = min(columns, len(panels))
    rows_of_panels = -(-len(panels) // columns)
    tallest = max(len(panel.rows) for panel in panels)
    height = rows_of_panels * (1.3 + 0.26 * tallest) + (0.3 if title else 0)
    figure = MplFigure(figsize=(WIDTH_INCHES, height), dpi=DPI)
    FigureCanvasAgg(figure)
    grid = figure.subplots(rows_of_panels, columns, squeeze=False)
    shown: dict[str, bool] = {}
    limits = {kind: _x_limits([p for p in panels if p.kind == kind]) for kind in {p.kind for p in panels if p.kind}}
    for axes, panel in zip(grid.flat, panels):
        _forest(axes, panel, shown, limits.get(panel.kind))
    for axes in list(grid.flat)[len(panels):]:
        axes.set_visible(False)
    handles: list[Line2D | Patch] = [Line2D([], [], marker="o", color=colour, linestyle="", label=label)
                                     for mark, (_, colour, label) in _MARKS.items() if label and shown.get(mark)]
    handles += [Line2D([], [], marker=marker, color="black", markerfacecolor="black" if filled else "none",
                       linestyle="", label=label)
                for integrity, (marker, filled, label) in INTEGRITY_MARKS.items()
                if shown.get(f"integrity:{integrity}")]
    if any(panel.floor is not None or any(row.floor is not None for row in panel.rows) for panel in panels):
        handles.append(Patch(color="0.85", label="placebo: the run's noise floor"))
    if handles:
        figure.legend(handles=handles, loc="lower center", ncols=min(len(handles), 3), fontsize="small",
                      frameon=False)
    if title:
        figure.suptitle(title)
    legend_rows = -(-len(handles) // 3)
    figure.tight_layout(rect=(0, min(0.3, 0.3 * legend_rows / height) if handles else 0, 1, 1))
    return figure


def _x_limits(panels: list[Panel]) -> tuple[float, float]:
    """The x-range that shows every interval and floor of `panels`, with room for the labels."""
    rows = [row for panel in panels for row in panel.rows]
    floors = [panel.floor or 0.0 for panel in panels] + [row.floor or 0.0 for row in rows]
    low = min([row.drawn[0] for row in rows] + [-min(f, FULL_DROP) for f in floors] + [0])
    high = max([row.drawn[1] for row in rows] + floors + [0])
    span = max(high - low, 1.0)
    return low - 0.05 * span, high + 0.3 * span  # room for the labels right of each interval


def _forest(axes: Axes, panel: Panel, shown: dict[str, bool], limits: tuple[float, float] | None = None) -> None:
    rows = (list(reversed(panel.rows)) if panel.ordered  # the first at the top
            else sorted(panel.rows, key=lambda r: (-r.pct if panel.rate else r.pct, r.encryption), reverse=True))
    positions = np.arange(len(rows))
    if panel.floor is not None:  # no time or rate falls by more than all of it: the band stops at -100%
        axes.axvspan(-min(panel.floor, FULL_DROP), panel.floor, color="0.85", zorder=0)
    for y, row in zip(positions, rows):
        if row.floor is not None:  # the row's own band
            axes.fill_betweenx([y - 0.45, y + 0.45], -min(row.floor, FULL_DROP), row.floor, color="0.85",
                               linewidth=0, zorder=0)
    axes.axvline(0, color="black", linewidth=0.8, zorder=1)
    for y, row in zip(positions, rows):
        marker, colour, _ = _MARKS[row.verdict]
        filled = True
        if row.integrity is not None:
            marker, filled, _ = INTEGRITY_MARKS[row.integrity]
            shown[f"integrity:{row.integrity}"] = True
        shown[row.verdict] = True
        low, high = row.drawn
        axes.errorbar(row.pct, y, xerr=[[row.pct - low], [high - row.pct]], fmt=marker, color=colour,
                      markerfacecolor=colour if filled else "white", markersize=7, capsize=3, linewidth=1.2,
                      zorder=2)
        axes.annotate(f"{row.pct:+.1f}%", (high, y), xytext=(4, 0), textcoords="offset points",
                      va="center", fontsize="small")
    axes.set_yticks(positions, [row.encryption for row in rows])
    axes.set_ylim(-0.7, len(rows) - 0.3)
    axes.set_xlim(*(limits or _x_limits([panel])))
    axes.xaxis.set_major_locator(MaxNLocator(nbins=5))  # "+1500%" labels do not run into each other
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:+.10g}%"))  # +0.5% where ticks are close
    axes.set_xlabel("change of the rate vs none (a cost is below 0)" if panel.rate
                    else "overhead vs none (95% CI)", fontsize="small")
    regime = textwrap.fill(panel.regime, width=TITLE_CHARS) if panel.regime else ""
    axes.set_title(panel.title + (f"\n{regime}" if regime else ""), fontsize="medium")
    axes.grid(axis="x", alpha=0.3)


Config = tuple[str, int | None, str, float]
"""engine, memory_mb, workload, scale: a configuration whose data ÷ cache is one point of a curve."""


def _cost_points(records: list[SummaryRecord], ratios: dict[Config, float]
                 ) -> dict[tuple, dict[str, dict[str, Points]]]:
    """Per engine, host, workload and scale, per headline figure drawn (`cost_curves`) and
    encryption: its overheads against data ÷ cache, (ratio, pct, ci_low, ci_high)."""
    points: dict[tuple, dict[str, dict[str, Points]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for headline, record in headline_records(records):
        cell, compared = record.cell, record.overhead
        ratio = ratios.get((cell.engine, cell.memory_mb, cell.workload, cell.scale))
        if headline.metric != "elapsed_s" or compared is None or ratio is None:
            continue
        points[(cell.engine, cell.host or "", cell.workload, cell.scale)][headline.label][cell.encryption].append(
            (ratio, compared.pct, compared.ci_low, compared.ci_high))
    curves = {}
    for config, by_figure in points.items():
        shown = {label: by_figure[label] for label in (h.label for h in LABELLED) if label in by_figure
                 and len({x for series in by_figure[label].values() for x, *_ in series}) >= MIN_POINTS}
        if shown:
            curves[config] = shown
    return curves


def curved(records: list[SummaryRecord], ratios: dict[Config, float]) -> set[tuple]:
    """The (engine, host, workload, scale, headline figure, memory_mb) a cost curve draws: an
    overhead plot need not draw them again one size at a time (a size whose data ÷ cache is not
    known is not on the curve, so it is not here either)."""
    shown = {(*config, label) for config, by_figure in _cost_points(records, ratios).items() for label in by_figure}
    return {(*key, cell.memory_mb) for headline, record in headline_records(records)
            if (key := ((cell := record.cell).engine, cell.host or "", cell.workload, cell.scale, headline.label))
            in shown and (cell.engine, cell.memory_mb, cell.workload, cell.scale) in ratios}


def cost_curves(records: list[SummaryRecord], ratios: dict[Config, float]) -> list[Figure]:
    """The cost curve, per engine, workload and scale measured at MIN_POINTS cache sizes or more:
    each timed headline figure's overhead per encryption (95% CI as error bars) against data ÷
    cache (`ratios`, measured per configuration: cache.regimes) on a log axis, the placebo's CI as
    a grey band (the run's noise floor at each cache size), and a line where the data just fits.
    Left of it every page stays in the engine's cache; right of it pages are decrypted again on
    every read: where the lines leave the band is where encryption starts to cost."""
    figures = []
    for (engine, host, workload, scale), by_figure in sorted(_cost_points(records, ratios).items()):
        where = f"{engine}{f' ({host})' if host else ''} · {workload} {scale_label(workload, scale)}"
        title = f"{where}: overhead vs {BASELINE} by data ÷ engine cache (95% CI; grey: placebo's noise floor)"
        figures.append(Figure(title, _file_name("cost-curve", engine, host, workload, scale_label(workload, scale)),
                              later(_cost_figure, title, list(by_figure), by_figure)))
    return figures


def _cost_figure(title: str, shown: list[str], by_figure: dict[str, dict[str, Points]]) -> MplFigure:
    figure = MplFigure(figsize=(WIDTH_INCHES, 3.8), dpi=DPI)
    FigureCanvasAgg(figure)
    panels = figure.subplots(1, len(shown), squeeze=False)[0]
    for axes, label in zip(panels, shown):
        _cost_panel(axes, label, by_figure[label])
    panels[-1].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    figure.suptitle(title, fontsize="medium")
    figure.tight_layout()
    return figure


GAP = 2.0
"""Two points of a cost curve further apart than this factor of data ÷ cache are not joined: a line
across the gap would draw a rise (or a fall) that no cache size in it measured."""


def _runs(points: list[tuple[float, float, float, float]]) -> list[list[tuple[float, float, float, float]]]:
    """`points` (sorted by x) cut where two neighbours lie more than GAP apart."""
    runs: list[list[tuple[float, float, float, float]]] = []
    for point in points:
        if runs and point[0] <= runs[-1][-1][0] * GAP:
            runs[-1].append(point)
        else:
            runs.append([point])
    return runs


def _cost_panel(axes: Axes, label: str, by_encryption: dict[str, list[tuple[float, float, float, float]]]) -> None:
    """One figure's curve: a line per encryption, the placebo as a band, each cut where no point
    lies within GAP of the next (the points themselves always drawn)."""
    encryptions = sorted(e for e in by_encryption if e != PLACEBO)
    colours = colormaps["tab10" if len(encryptions) <= 10 else "tab20"]
    for number, run in enumerate(_runs(sorted(by_encryption.get(PLACEBO, [])))):
        x, _, low, high = (np.array(column) for column in zip(*run))
        band = "_nolegend_" if number else f"{PLACEBO} (noise floor)"  # one legend entry for the band
        if len(run) == 1:  # a lone point: its interval as a bar, no band to draw
            axes.vlines(x, low, high, color="grey", alpha=0.4, linewidth=6, label=band)
        else:
            axes.fill_between(x, low, high, color="grey", alpha=0.25, linewidth=0, label=band)
    for index, encryption in enumerate(encryptions):
        points = sorted(by_encryption[encryption])
        x, y, low, high = (np.array(column) for column in zip(*points))
        axes.errorbar(x, y, yerr=np.vstack([y - low, high - y]), color=colours(index), marker="o", markersize=4,
                      linestyle="none", capsize=3, label=encryption)
        for run in _runs(points):
            axes.plot([p[0] for p in run], [p[1] for p in run], color=colours(index), linewidth=1.4)
    axes.axhline(0, color="black", linewidth=0.8)
    axes.axvline(1, color="black", linewidth=0.8, linestyle="--")
    axes.set_xscale("log")
    axes.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))  # 0.5, 1, 2, 5: a few points span little
    _plain_log_axis(axes.xaxis)
    low_x, high_x = axes.get_xlim()
    axes.set_xlim(min(low_x, 0.5), max(high_x, 2.0))  # both sides of "fits" always in view
    for text, align in ((" spills →", "left"), ("← fits ", "right")):
        axes.text(1, 0.02, text, transform=axes.get_xaxis_transform(), ha=align, va="bottom", fontsize="small")
    axes.set_xlabel("data ÷ engine cache (log scale)", fontsize="small")
    axes.set_ylabel("overhead vs none (%)", fontsize="small")
    axes.set_title(label, fontsize="medium")
    axes.grid(alpha=0.3)
