"""What each configuration used: its CPU time, I/O and memory, the Resources section's first table
and its small multiples.

CPU time and I/O are per measured step and per configuration (measure/process.py): the engine's
own threads or server processes, in nanoseconds, even when a lockstep group ran its
configurations side by side (their steps take turns), so encryptions can be told apart where the
1 Hz sampler's machine-wide figures (tables.resources_table) cannot. A test's figure is its
`total` step's (TPC-H's power, throughput and load), or its one step's; the CPU overhead against
none is the one summary.csv holds, paired by round like the elapsed time's, by the same
statistics (records.summary_records). Memory is the sampler's peak of the engine's resident
memory: an embedded engine's is tdebench's process, so in a lockstep run the group's.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import replace
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure as MplFigure

from tdebench.measure.process import LAYER_CPU
from tdebench.report.summaries.plots import DPI, WIDTH_INCHES, Figure, _file_name, row_label, later
from tdebench.report.data.records import (BASELINE, PLACEBO, CellKey, SummaryRecord, cell_order, engine_label,
                                          memory_order, run_order, scale_label)
from tdebench.report.summaries.tables import (Column, Table, config_columns, n_text, num, samples_by_config, text,
                                              uses_memory)
from tdebench.report.data.units import MIB, interval, mib, p_value, percent
from tdebench.results import RunData

TOTAL = "total"
CPU = "cpu_s"


def per_test(records: list[SummaryRecord], metric: str = CPU) -> list[SummaryRecord]:
    """Of every configuration's records of `metric`, one per test: its `total` step's, or its one
    step's when it has no total (a test of several steps and no total has no figure of its own here)."""
    steps: dict[tuple, list[SummaryRecord]] = defaultdict(list)
    for record in records:
        cell = record.cell
        if cell.metric == metric:
            steps[(*_config(cell), cell.test)].append(record)
    chosen = []
    for found in steps.values():
        totals = [record for record in found if record.cell.step == TOTAL]
        if totals or len(found) == 1:
            chosen.append((totals or found)[0])
    return sorted(chosen, key=lambda record: cell_order(record.cell))


def _config(cell: CellKey) -> tuple:
    return (cell.engine, cell.memory_mb, cell.host, cell.encryption, cell.workload, cell.scale)


def cpu_rows(run: RunData, records: list[SummaryRecord]) -> list[dict[str, Any]]:
    """One row per configuration and test: CPU-seconds (median, 95% CI), a layer's share, the
    CPU overhead against none with its interval, the bytes read and written (medians) and the
    engine's peak memory over the configuration's samples."""
    by_cell = {record.cell: record for record in records}
    memory = {config: max(sample.mem_bytes for sample in samples)
              for config, samples in samples_by_config(run.samples).items()}

    def median(cell: CellKey, metric: str) -> float | None:
        found = by_cell.get(replace(cell, metric=metric))
        return found.summary.median if found is not None else None

    rows = []
    for record in per_test(records):
        cell, summary, compared = record.cell, record.summary, record.overhead
        rows.append({
            "engine": cell.engine_at_hosts, "memory_mb": cell.memory_mb, "encryption": cell.encryption,
            "workload": cell.workload, "scale": cell.scale, "test": cell.test,
            "cpu_s": summary.median, "cpu_ci_low": summary.ci_low, "cpu_ci_high": summary.ci_high,
            "cpu_ci": interval(summary.ci_low, summary.ci_high) if summary.n > 1 else None,
            "layer_cpu_s": median(cell, LAYER_CPU),
            "cpu_overhead": compared.pct if compared else None,
            "cpu_overhead_ci": None if compared is None else (
                compared.reason or interval(compared.ci_low, compared.ci_high, percent)),
            "p": compared.p_value if compared else None, "n": n_text(compared) if compared else None,
            "read_bytes": median(cell, "read_bytes"), "write_bytes": median(cell, "write_bytes"),
            "mem_bytes_max": memory.get((cell.engine, cell.encryption, cell.workload, cell.scale, cell.memory_mb)),
        })
    return rows


def cpu_table(run: RunData, records: list[SummaryRecord]) -> Table:
    """`cpu_rows` as the Resources section's first table (no rows: a run without CPU records,
    a server tdebench did not start)."""
    rows = cpu_rows(run, records)
    layered = any(row["layer_cpu_s"] is not None for row in rows)
    columns = config_columns(uses_memory(row["memory_mb"] for row in rows)) + (
        Column("test", "test"), num("cpu_s", "CPU s (median)"), num("cpu_ci", "CPU 95% CI", text),
        *((num("layer_cpu_s", "of it, the layer below (s)"),) if layered else ()),
        num("cpu_overhead", "CPU vs none", percent), num("cpu_overhead_ci", "95% CI", text),
        num("p", "p", p_value), num("n", "n", text),
        num("read_bytes", "read (MiB)", mib), num("write_bytes", "written (MiB)", mib),
        num("mem_bytes_max", "memory max (MiB)", mib))
    lockstep = run_order(run) == "lockstep"
    return Table(
        "CPU, I/O and memory per configuration", columns, rows,
        summary=f"{len(rows)} configurations and tests: CPU time, its overhead, bytes read and written, memory",
        intro=("What each configuration used per trial, per test (its total step, or its one step): the CPU "
               "time of the engine's own threads (an embedded engine: tdebench's process less its sampler, "
               "capture and watchdog threads) or of its server's processes, in nanoseconds, and the bytes "
               "they read from and wrote to the storage layer (page-cache misses and write-back)."),
        note=("CPU vs none: the ratio of CPU time to none's, with its 95% CI and p, estimated like the elapsed "
              "time's overhead (paired by round where the order ran rounds; see the Overhead section); "
              "every step's is in summary.csv. A configuration whose none read 0 s has no ratio. "
              + ("The layer below: the CPU time of the file-system layer's process (gocryptfs), part of the CPU "
                 "time beside it. " if layered else "")
              + "Memory max: the resource sampler's peak resident memory of the engine's processes."
              + (" Side by side (lockstep), the CPU and I/O figures are still each configuration's own (its "
                 "steps took turns with the group's), unlike the sampler's below; an embedded engine's memory "
                 "is the group's (one tdebench process), a server's its own." if lockstep else "")))


def _order(encryption: str) -> tuple:
    return (encryption != BASELINE, encryption != PLACEBO, encryption)


def resource_view(rows: list[dict[str, Any]], side_by_side: bool = False) -> list[Figure]:
    """Per engine, workload and scale, small multiples with none and each encryption side by
    side: per test a row of CPU-seconds (95% CI as error bars, the overhead against none beside
    each) and MiB read and written; in the first row the engine's peak memory. An engine measured
    at several cache sizes (memory_mb) gets one figure, its bars grouped by size, the largest cache
    on top. None for a configuration with a single encryption."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[(row["engine"], row["workload"], row["scale"])].append(row)
    figures = []
    for (engine, workload, scale), chosen in sorted(groups.items()):
        bars = sorted({(-memory_order(row["memory_mb"]), row["memory_mb"], row["encryption"]) for row in chosen},
                      key=lambda bar: (bar[0], _order(bar[2])))
        sizes = sorted({bar[:2] for bar in bars})
        if len(bars) == len(sizes):  # a single encryption at each size
            continue
        several = len(sizes) > 1
        configured = engine if several else engine_label(engine, sizes[0][1])
        title = f"{configured} · {workload} {scale_label(workload, scale)}: CPU, I/O and memory per encryption"
        figures.append(Figure(title, _file_name("resource-view", configured, workload, scale_label(workload, scale)),
                              later(_view_figure, title, [bar[1:] for bar in bars], chosen, side_by_side)))
    return figures


Bar = tuple[int | None, str]
"""A bar of the resource view: the engine's memory_mb and an encryption."""


def _view_figure(title: str, bars: list[Bar], chosen: list[dict[str, Any]], side_by_side: bool) -> MplFigure:
    tests = list(dict.fromkeys(row["test"] for row in chosen))
    cells = {(row["test"], row["memory_mb"], row["encryption"]): row for row in chosen}
    several = len({memory_mb for memory_mb, _ in bars}) > 1
    labels = [row_label(encryption, memory_mb, several) for memory_mb, encryption in bars]
    breaks = [index for index in range(1, len(bars)) if bars[index][0] != bars[index - 1][0]]
    height = 0.9 + len(tests) * (0.8 + (0.16 if several else 0.24) * len(bars))
    figure = MplFigure(figsize=(WIDTH_INCHES, height), dpi=DPI)
    FigureCanvasAgg(figure)
    grid = figure.subplots(len(tests), 3, squeeze=False)
    for line, test in enumerate(tests):
        found = [cells.get((test, *bar)) for bar in bars]
        _cpu_panel(grid[line][0], test, labels, found)
        _io_panel(grid[line][1], test, labels, found)
        if line == 0:
            _memory_panel(grid[line][2], labels, found, side_by_side)
        else:
            grid[line][2].set_visible(False)
        for axes in grid[line]:
            for index in breaks:  # between two cache sizes
                axes.axhline(index - 0.5, color="0.5", linewidth=0.8)
    figure.suptitle(title)
    figure.tight_layout()
    return figure


def _value(row: dict[str, Any] | None, key: str) -> float:
    value = row.get(key) if row is not None else None
    return math.nan if value is None else float(value)


def _bars(axes: Axes, labels: list[str]) -> np.ndarray:
    positions = np.arange(len(labels))
    axes.set_yticks(positions, labels, fontsize="small")
    axes.invert_yaxis()  # none at the top
    axes.grid(axis="x", alpha=0.3)
    return positions


def _cpu_panel(axes: Axes, test: str, labels: list[str], rows: list[dict[str, Any] | None]) -> None:
    positions = _bars(axes, labels)
    values = np.array([_value(row, "cpu_s") for row in rows])
    axes.barh(positions, np.nan_to_num(values), color="tab:blue")
    for y, row, value in zip(positions, rows, values):
        if row is None or math.isnan(value):
            continue
        low, high = _value(row, "cpu_ci_low"), _value(row, "cpu_ci_high")
        if not (math.isnan(low) or math.isnan(high)):
            axes.errorbar(value, y, xerr=[[value - low], [high - value]], fmt="none", color="black", capsize=2,
                          linewidth=1)
        overhead = row.get("cpu_overhead")
        if overhead is not None and not math.isnan(overhead):
            right = value if math.isnan(high) else max(value, high)  # beside the interval, not over it
            axes.annotate(percent(overhead), (right, y), xytext=(4, 0), textcoords="offset points",
                          va="center", fontsize="x-small")
    axes.set_xlim(0, max(float(np.nanmax(values)) if np.isfinite(values).any() else 1.0, 1e-9) * 1.3)
    axes.set_title(f"{test}: CPU s (vs none)", fontsize="medium")


def _io_panel(axes: Axes, test: str, labels: list[str], rows: list[dict[str, Any] | None]) -> None:
    positions = _bars(axes, labels)
    read = np.array([_value(row, "read_bytes") for row in rows]) / MIB
    written = np.array([_value(row, "write_bytes") for row in rows]) / MIB
    axes.barh(positions - 0.2, np.nan_to_num(read), height=0.4, color="tab:green", label="read")
    axes.barh(positions + 0.2, np.nan_to_num(written), height=0.4, color="tab:orange", label="written")
    axes.set_xlim(left=0)
    axes.set_title(f"{test}: MiB read and written", fontsize="medium")
    axes.legend(fontsize="x-small", loc="lower right")


def _memory_panel(axes: Axes, labels: list[str], rows: list[dict[str, Any] | None],
                  side_by_side: bool) -> None:
    positions = _bars(axes, labels)
    axes.barh(positions, np.nan_to_num(np.array([_value(row, "mem_bytes_max") for row in rows]) / MIB),
              color="tab:purple")
    axes.set_xlim(left=0)
    axes.set_title("peak engine memory (MiB)" + ("\n(embedded, lockstep: the group's)" if side_by_side else ""),
                   fontsize="small" if side_by_side else "medium")  # two lines: at the figure's edge
