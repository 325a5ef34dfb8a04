"""The oltp workload's part of the report: TPM and NOPM per encryption with their intervals
and overhead against `none`, latency percentiles per transaction type, and throughput over
time (the load and stress tests of Madyatmadja et al. (2021), docs/references.md).

TPM and NOPM (committed transactions and New-Orders ÷ the window's minutes, the rates the oltp
workload declares) are summary records like every other figure: records.cell_data derives them
from each measured window, and this module lays them out per test, beside what the windows say
of how they ran; latency percentiles come from each run's histogram, and the table shows their
median over the repetitions.

Saturation: on a server, each run's `cpu_s` (the server's process tree) and `driver_cpu_s`
(tdebench and its worker processes) over the window, as a share of the machine's CPU
(`logical_cores` of environment.json), median over the repetitions. When the client took a
large share, or the two together left much of the machine idle, the server was not the
bottleneck: encryption's extra server work could hide in its idle time, so the TPM overhead
may be understated, and the findings say so.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure as MplFigure
from matplotlib.ticker import FuncFormatter

from tdebench.report.summaries import plots
from tdebench.report.data.declared import OLTP
from tdebench.report.data.records import (BASELINE, SummaryRecord, engine_label, host_blocks, measured, memory_order,
                                          per_minute)
from tdebench.report.sections import Content, block
from tdebench.report.summaries.tables import Column, Table, engine_columns, n_text, num, text
from tdebench.report.data.units import general, number, p_value, percent, tenths, whole
from tdebench.stats import SIGNIFICANCE
from tdebench.results import Measurement, RunData

WORKLOAD, KINDS, MIX = OLTP.name, OLTP.kinds, OLTP.mix  # the transaction types and their target shares
MIX_STEP, INTERVAL_STEP = OLTP.reporting.window_step, OLTP.reporting.interval_step
PERCENTILES = ("p50", "p90", "p95", "p99", "max")
RATES = OLTP.reporting.per_minute  # figure → the count it is per minute of
CPU_SHARES = {"server_cpu_pct": "cpu_s", "driver_cpu_pct": "driver_cpu_s"}  # % of the machine ← CPU seconds
CLIENT_BOUND_PCT = 20.0  # the driver used at least this much of the machine: the server was not alone in the way
IDLE_PCT = 30.0  # server and driver left at least this much of the machine idle: the server was not CPU-bound


CSV = "oltp.csv"


def section(run: RunData, records: list[SummaryRecord]) -> Content | None:
    """TPM and NOPM with their plots over time, and the latency percentiles (oltp.csv: TPM and
    NOPM, every bound in a column of its own), or None when the run has no measured oltp run."""
    if not any(m.trial.workload == WORKLOAD and m.step == MIX_STEP for m in run.measurements):
        return None
    throughput = throughput_table(run, records, csv=False)
    saturation = saturation_table(throughput.rows)
    blocks = (block(throughput, figures=throughput_plots(run)),) + ((block(saturation),) if saturation.rows else ())
    return Content(blocks=blocks + (block(latency_table(records)),),
                   csvs=((CSV, throughput_table(run, records)),),
                   findings=tuple(findings(throughput.rows) + saturation_findings(saturation.rows)))


def findings(rows: list[dict[str, Any]]) -> list[str]:
    """One sentence per engine, warehouses and test: the baseline's TPM and each encryption's
    change in TPM, called significant only when its interval excludes zero and p < 0.05."""
    sentences = []
    baselines = {_compared(r): r for r in rows if r["encryption"] == BASELINE}
    for key, base in baselines.items():
        parts = []
        for row in rows:
            if _compared(row) != key or row.get("tpm_vs_none_pct") is None:
                continue
            low, high, p = row["tpm_vs_none_ci_low"], row["tpm_vs_none_ci_high"], row["tpm_p"]
            verdict = ("significant" if p < SIGNIFICANCE and not low <= 0 <= high
                       else "no significant difference" if low <= 0 <= high
                       else "the same in every round" if math.isnan(p) else f"p={p_value(p)}")
            parts.append(f"{row['encryption']} {percent(row['tpm_vs_none_pct'])} [{low:.1f}, {high:.1f}] "
                         f"({verdict}, {row['tpm_vs_none_n']})")
        if parts:
            engine, warehouses, test = key
            sentences.append(f"OLTP on {engine} (W={warehouses:g}), {test} test with {base['virtual_users']:g} "
                             f"users ({base['driver']}): {number(base['tpm'])} TPM without encryption; TPM "
                             + "; ".join(parts) + ".")
    return sentences


def saturation_findings(rows: list[dict[str, Any]]) -> list[str]:
    """One sentence per engine, warehouses and test where, in any encryption's runs (medians),
    the server was not the bottleneck: the client used CLIENT_BOUND_PCT of the machine or
    more, or server and client together left IDLE_PCT of it idle."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[_compared(row)].append(row)
    sentences = []
    for (engine, warehouses, test), group in groups.items():
        client = [r["driver_cpu_pct"] for r in group]
        idle = [100 - r["server_cpu_pct"] - r["driver_cpu_pct"] for r in group]
        if max(client) < CLIENT_BOUND_PCT and max(idle) < IDLE_PCT:
            continue
        server = [r["server_cpu_pct"] for r in group]
        users = group[0]
        why = (f"the client used {_span(client)} of the machine's CPU" if max(client) >= CLIENT_BOUND_PCT
               else f"server and client left {_span(idle)} of the machine's CPU idle")
        sentences.append(f"OLTP on {engine} (W={warehouses:g}), {test} test ({users['virtual_users']:g} users as "
                         f"{users['users_as']}): the server was not the bottleneck — {why} (the server "
                         f"{_span(server)}, the client {_span(client)}, of {users['cores']:g} cores); the TPM "
                         "overhead of encryption may be understated.")
    return sentences


def _compared(row: dict[str, Any]) -> tuple[str, float, str]:
    """The rows compared with each other: one engine as configured ("duckdb 64 MB", "mariadb @
    node1" where hosts that differ are reported apart), warehouses and test."""
    configured = engine_label(row["engine"], row["memory_mb"])
    return (f"{configured} @ {row['host']}" if row["host"] is not None else configured), row["warehouses"], row["test"]


def _span(values: list[float]) -> str:
    low, high = min(values), max(values)
    return f"{low:.0f}%" if round(low) == round(high) else f"{low:.0f}–{high:.0f}%"


def saturation_table(rows: list[dict[str, Any]]) -> Table:
    """The throughput table's rows that have both CPU shares (servers): how busy the server and
    the driver kept the machine over the window."""
    shown = [row | {"machine_cpu_pct": row["server_cpu_pct"] + row["driver_cpu_pct"]} for row in rows
             if not math.isnan(row.get("server_cpu_pct", math.nan))
             and not math.isnan(row.get("driver_cpu_pct", math.nan))]
    columns = (*_engine_columns(shown), num("warehouses", "W", general), Column("test", "test"),
               Column("encryption", "encryption"), Column("driver", "driver"),
               num("virtual_users", "users", general), Column("users_as", "users as"),
               num("tpm", "TPM (median)"), num("server_cpu_pct", "server CPU %", _whole),
               num("driver_cpu_pct", "driver CPU %", _whole), num("machine_cpu_pct", "both %", _whole))
    return Table(
        "OLTP saturation", columns, shown,
        intro=("Who set the pace: the CPU the server (its whole process tree) and the driver (tdebench "
               "and its worker processes) used over the measured window, as a share of all the "
               "machine's cores, median over the repetitions. Encryption costs the server CPU; when the "
               "server was not the bottleneck, that cost can hide in its idle time and TPM understates it."),
        note=(f"Users as: each virtual user a worker process of its own (processes) or a thread of tdebench "
              f"(threads). A finding flags a driver at {CLIENT_BOUND_PCT:g}% of the machine or more, or "
              f"{IDLE_PCT:g}% of it left idle. Servers only: an embedded engine runs inside the driver."),
        empty="No oltp run on a server was measured.")


def _whole(value: float) -> str:
    return f"{value:.0f}"


def _driver(procedures: set[float]) -> str:
    return {frozenset({1.0}): "procedures", frozenset({0.0}): "client"}.get(frozenset(procedures), "mixed")


def _users_as(processes: set[float]) -> str:
    """From each run's `worker_processes` (0: threads; runs from before it was recorded ran threads)."""
    kinds = {"processes" if workers > 0 else "threads" for workers in processes}
    return kinds.pop() if len(kinds) == 1 else "mixed"


Config = tuple[str, int | None, str | None, float, str, str]
"""A row of the throughput table: engine, its memory_mb, its hosts' group (None on one machine),
warehouses, test and encryption."""


def _window_facts(run: RunData) -> tuple[dict[Config, dict[str, set[float]]], dict[Config, dict[str, list[float]]]]:
    """Per row, what each measured window says of how it ran (driver, users, retries, errors)
    and the CPU shares of the machine its server and driver used."""
    facts: dict[Config, dict[str, set[float]]] = defaultdict(lambda: defaultdict(set))
    shares: dict[Config, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    cores = float(run.environment.get("logical_cores") or math.nan)
    blocks = host_blocks(run)
    for m in measured(run):
        if m.trial.workload != WORKLOAD or m.step != MIX_STEP:
            continue
        t = m.trial
        key = (t.engine, t.memory_mb, blocks.group(t), t.scale, m.test, t.encryption)
        for fact in ("procedures", "virtual_users", "retries", "errors"):
            facts[key][fact].add(m.metrics.get(fact, math.nan))
        facts[key]["worker_processes"].add(m.metrics.get("worker_processes", 0.0))
        for share, seconds in CPU_SHARES.items():
            if seconds in m.metrics and m.metrics.get("elapsed_s", 0.0) > 0:
                shares[key][share].append(100 * m.metrics[seconds] / m.metrics["elapsed_s"] / cores)
    return facts, shares


def throughput_table(run: RunData, records: list[SummaryRecord], csv: bool = True) -> Table:
    """Per engine (and its memory_mb, and hosts where they differ), warehouses, test and
    encryption: median TPM and NOPM over the repetitions with 95% bootstrap CIs, and their change
    against `none` (paired by round when the run interleaved, as every overhead: see
    records.compare). These are the summary records records.cell_data derives from each measured
    window, the same summary.csv, the noise rules and `compare` read; beside them, what the
    windows say of how they ran. `csv` keeps every bound in a column of its own (oltp.csv); the
    report joins them."""
    rates: dict[Config, dict[str, SummaryRecord]] = defaultdict(dict)
    for record in records:
        cell = record.cell
        if cell.workload == WORKLOAD and cell.step == MIX_STEP and cell.metric in RATES:
            key = (cell.engine, cell.memory_mb, cell.host, cell.scale, cell.test, cell.encryption)
            rates[key][cell.metric] = record
    facts, shares = _window_facts(run)
    cores = float(run.environment.get("logical_cores") or math.nan)
    rows = []
    for key in sorted((k for k in rates if "tpm" in rates[k]), key=_config_order):
        engine, memory_mb, host, scale, test, encryption = key
        row: dict[str, Any] = {"engine": engine, "memory_mb": memory_mb, "host": host, "warehouses": scale,
                               "test": test, "encryption": encryption, "driver": _driver(facts[key]["procedures"]),
                               "virtual_users": max(facts[key]["virtual_users"], default=math.nan),
                               "users_as": _users_as(facts[key]["worker_processes"]), "cores": cores}
        row.update({share: float(np.median(values)) if (values := shares[key][share]) else math.nan
                    for share in CPU_SHARES})
        for figure, record in ((figure, rates[key][figure]) for figure in RATES if figure in rates[key]):
            summary = record.summary
            row.update({"n": summary.n, figure: summary.median, f"{figure}_ci_low": summary.ci_low,
                        f"{figure}_ci_high": summary.ci_high, f"{figure}_cv": summary.cv,
                        f"{figure}_outliers": summary.outliers})
            row["noisy"] = row.get("noisy", False) or summary.noisy
            change = record.overhead
            if change is not None:
                row.update({f"{figure}_vs_none_pct": change.pct, f"{figure}_vs_none_ci_low": change.ci_low,
                            f"{figure}_vs_none_ci_high": change.ci_high, f"{figure}_p": change.p_value,
                            f"{figure}_vs_none_n": n_text(change)})
        rows.append(row)
    return _csv_table(rows) if csv else _report_table(rows)


def _config_order(key: Config) -> tuple:
    engine, memory_mb, host, scale, test, encryption = key
    return engine, memory_order(memory_mb), host or "", scale, test, encryption != BASELINE, encryption


def _engine_columns(rows: list[dict[str, Any]]) -> tuple[Column, ...]:
    """The engine; its memory_mb and its hosts' group only when the run has them."""
    return engine_columns(rows) + ((Column("host", "hosts"),) if any(row["host"] is not None for row in rows) else ())


def _common_columns(rows: list[dict[str, Any]]) -> tuple[Column, ...]:
    return (*_engine_columns(rows), num("warehouses", "W", general), Column("test", "test"),
            Column("encryption", "encryption"), Column("driver", "driver"),
            num("virtual_users", "users", general), num("n", "n", text))


def _csv_table(rows: list[dict[str, Any]]) -> Table:
    columns = _common_columns(rows)
    for figure in RATES:
        columns += (num(figure, figure), num(f"{figure}_ci_low", f"{figure} CI low"),
                    num(f"{figure}_ci_high", f"{figure} CI high"),
                    num(f"{figure}_vs_none_pct", f"{figure} vs none %"),
                    num(f"{figure}_vs_none_ci_low", f"{figure} vs none CI low"),
                    num(f"{figure}_vs_none_ci_high", f"{figure} vs none CI high"), num(f"{figure}_p", "p"))
    columns += (Column("users_as", "users as"), num("server_cpu_pct", "server CPU %"),
                num("driver_cpu_pct", "driver CPU %"))
    return Table("OLTP throughput", columns + (Column("noisy", "noisy"),), rows)


def _bounds(low: float | None, high: float | None, fmt=number) -> str:
    return "–" if low is None or math.isnan(low) else f"[{fmt(low)}, {fmt(high)}]"


def _report_table(rows: list[dict[str, Any]]) -> Table:
    shown = []
    for row in rows:
        view = dict(row)
        for figure in RATES:
            view[f"{figure}_ci"] = _bounds(row.get(f"{figure}_ci_low"), row.get(f"{figure}_ci_high"))
            view[f"{figure}_vs_none_ci"] = _bounds(row.get(f"{figure}_vs_none_ci_low"),
                                                   row.get(f"{figure}_vs_none_ci_high"), percent)
        shown.append(view)
    columns = _common_columns(rows)
    for figure, header in (("tpm", "TPM"), ("nopm", "NOPM")):
        columns += (num(figure, f"{header} (median)"), num(f"{figure}_ci", "95% CI", text),
                    num(f"{figure}_vs_none_pct", f"{header} vs none", percent),
                    num(f"{figure}_vs_none_ci", "95% CI", text), num(f"{figure}_p", "p", p_value))
    return Table(
        "OLTP throughput", columns + (Column("noisy", "noisy"),), shown,
        intro=("The figures of Madyatmadja et al. (2021) per encryption: TPM, the transactions "
               "committed per minute of the measured window (all five types), and NOPM, the "
               "New-Orders committed per minute, each the median over the repetitions with its 95% "
               "bootstrap CI, and its change against no encryption on the same engine, warehouses "
               "and test (a drop in TPM is the cost)."),
        note=("W: warehouses. Driver: each transaction one stored-procedure call (procedures) or "
              "client-side statements (client). A run counts only if its consistency checks "
              "passed and it had no errors; the New-Orders rolled back on purpose (1%) are not in "
              "NOPM. Change vs none and p: paired by round (t-interval, paired t-test) when the "
              "run went in rounds (lockstep, interleaved), else medians and a two-sided Mann–Whitney U."),
        empty="No oltp run was measured.")


def latency_table(records: list[SummaryRecord]) -> Table:
    """Per engine (and its memory_mb), warehouses, test, encryption and transaction type: the
    median over the repetitions of each run's latency percentiles, and each type's share of the
    mix."""
    cells: dict[tuple, dict[str, float]] = defaultdict(dict)
    totals: dict[tuple, float] = defaultdict(float)
    for record in records:
        cell = record.cell
        if cell.workload != WORKLOAD or cell.step not in KINDS:
            continue
        key = (cell.engine, cell.memory_mb, cell.scale, cell.test, cell.encryption, cell.step)
        cells[key][cell.metric] = record.summary.median
        if cell.metric == "committed":
            totals[key[:5]] += record.summary.median
    rows = []
    for key in sorted(cells, key=lambda k: (k[0], memory_order(k[1]), k[2], k[3], k[4] != BASELINE, k[4],
                                            KINDS.index(k[5]))):
        engine, memory_mb, scale, test, encryption, kind = key
        figures = cells[key]
        total = totals.get(key[:5], 0.0)
        row: dict[str, Any] = {"engine": engine, "memory_mb": memory_mb, "warehouses": scale, "test": test,
                               "encryption": encryption, "transaction": kind, "committed": figures.get("committed"),
                               "share": 100 * figures.get("committed", 0.0) / total if total else None,
                               "target": 100 * MIX[kind]}
        row.update({name: figures[f"{name}_elapsed_s"] * 1000 for name in PERCENTILES
                    if f"{name}_elapsed_s" in figures})
        rows.append(row)
    columns = (*engine_columns(rows), num("warehouses", "W", general), Column("test", "test"),
               Column("encryption", "encryption"), Column("transaction", "transaction"),
               num("committed", "committed", whole), num("share", "share %", tenths),
               num("target", "target %", general),
               *(num(name, f"{name} (ms)") for name in PERCENTILES))
    return Table(
        "OLTP latency", columns, rows,
        intro=("Response time of each transaction type, from its first attempt's start to its "
               "commit (retries included), per run from a log-bucketed histogram (2.2% wide "
               "buckets), and here the median of each figure over the repetitions."),
        note=("Committed: median per run. Share: its part of all committed transactions, beside "
              "the target mix of Madyatmadja et al. (2021)."),
        empty="No oltp transaction latencies were recorded.")


def throughput_plots(run: RunData) -> list[plots.Figure]:
    """Per engine (as configured: its memory_mb) and warehouses: TPM in each interval of the
    window, one panel per test, one line per encryption, from the lowest measured repetition of
    each; a line only with plots.MIN_POINTS intervals or more, a figure only with a line."""
    series: dict[tuple, dict[str, dict[str, dict[int, list[Measurement]]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(lambda: defaultdict(list))))
    for m in measured(run):
        if m.trial.workload == WORKLOAD and m.step == INTERVAL_STEP:
            t = m.trial
            series[(t.engine, memory_order(t.memory_mb), engine_label(t.engine, t.memory_mb), t.scale)][m.test][
                t.encryption][t.repetition].append(m)
    figures = []
    for (_, _, engine, scale), all_tests in sorted(series.items()):
        # one interval is a flat line at the test's TPM, which the throughput table gives already
        by_test = {test: {encryption: runs for encryption, runs in by_enc.items()
                          if len(runs[min(runs)]) >= plots.MIN_POINTS}
                   for test, by_enc in all_tests.items()}
        tests = sorted(test for test, by_enc in by_test.items() if by_enc)
        if not tests:
            continue
        title = f"{engine} · oltp W={scale:g}: committed transactions per minute over time"
        figures.append(plots.Figure(title, f"oltp-throughput-{engine}-w{scale:g}.png".replace(" ", "_"),
                                    plots.later(_throughput_figure, title, tests, by_test)))
    return figures


def _throughput_figure(title: str, tests: list[str],
                       by_test: dict[str, dict[str, dict[int, list[Measurement]]]]) -> MplFigure:
    figure = MplFigure(figsize=(plots.WIDTH_INCHES, 0.9 + 2.6 * len(tests)), dpi=plots.DPI)
    FigureCanvasAgg(figure)
    panels = figure.subplots(len(tests), 1, squeeze=False)[:, 0]
    encryptions = sorted({e for by_enc in by_test.values() for e in by_enc}, key=lambda e: (e != BASELINE, e))
    colours = colormaps["tab10" if len(encryptions) <= 10 else "tab20"]
    for axes, test in zip(panels, tests):
        top = 0.0
        for index, encryption in enumerate(encryptions):
            runs = by_test[test].get(encryption)
            if not runs:
                continue
            repetition = min(runs)
            points = sorted(runs[repetition], key=lambda m: m.stream or 0)
            starts, tpm = [0.0], []
            for point in points:
                starts.append(starts[-1] + point.metrics["elapsed_s"])
                tpm.append(per_minute(point, "committed") or 0.0)
            label = encryption if repetition == 1 else f"{encryption} (repetition {repetition})"
            # each interval's rate held from its start to its end
            axes.step(starts, tpm + tpm[-1:], where="post", color=colours(index), linewidth=1.3,
                      label=label)
            top = max(top, *tpm)
        axes.set_ylim(0, top * 1.1 or 1)
        axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
        axes.set_xlim(left=0)
        axes.set_ylabel("TPM", fontsize="small")
        axes.set_title(f"{test} test", fontsize="medium")
        axes.grid(alpha=0.3)
    panels[-1].set_xlabel("seconds into the measured window")
    panels[0].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    figure.suptitle(title)
    figure.tight_layout()
    return figure
