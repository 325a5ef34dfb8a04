"""The crud workload's part of the report: every operation by table size (the tables of
Moulianitakis & Asimakopoulos (2019), docs/references.md), the thesis's scaling figures, and
the point lookups' latency distribution.

Every figure is a summary record, as in every other table: medians over the repetitions,
bootstrap intervals and overheads against `none` (stats.py).
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from typing import Any

from tdebench.report.summaries import plots
from tdebench.report.data.declared import CRUD
from tdebench.report.data.records import BASELINE, SummaryRecord, memory_order
from tdebench.report.sections import Content, block
from tdebench.results import RunData
from tdebench.report.summaries.tables import Column, Table, engine_columns, num, text
from tdebench.report.data.units import MIB, interval, p_value, percent

WORKLOAD, TESTS = CRUD.name, CRUD.tests  # the operations
STEP, POINT, LATENCY_METRICS = CRUD.step, CRUD.point_step, CRUD.latency_metrics


CSV = "crud.csv"


def section(run: RunData, records: list[SummaryRecord]) -> Content | None:
    """The operations with their scaling plots and the point lookups' latency (crud.csv: the
    operations), or None when the run has no crud operation to show."""
    if not any(record.cell.workload == WORKLOAD and record.cell.test in TESTS for record in records):
        return None
    operations = operations_table(records)
    return Content(
        blocks=(block(operations, figures=plots.scaling_plots(records, WORKLOAD, TESTS, STEP, "rows in the table")),
                block(latency_table(records))),
        csvs=((CSV, operations),))


def _rows(value: float | None) -> str:
    return "–" if value is None or math.isnan(value) else f"{value:,.0f}"




def operations_table(records: list[SummaryRecord]) -> Table:
    """One row per engine (and its memory_mb), encryption, table size and operation of the crud
    workload: the median time with its overhead against `none`, CPU, the throughput of
    Moulianitakis & Asimakopoulos (2019), I/O and the database's size (crud.csv: no rows for a
    run without crud)."""
    by_cell = {record.cell: record for record in records}

    def median(record: SummaryRecord, metric: str) -> float | None:
        other = by_cell.get(dataclasses.replace(record.cell, metric=metric))
        return other.summary.median if other else None

    def scaled(value: float | None, factor: float) -> float | None:
        return None if value is None else value * factor

    rows: list[dict[str, Any]] = []
    for record in records:
        cell, summary, compared = record.cell, record.summary, record.overhead
        if (cell.workload, cell.step, cell.metric) != (WORKLOAD, STEP, "elapsed_s") or cell.test not in TESTS:
            continue
        processed = median(record, "processed_bytes")
        rows.append({
            "engine": cell.engine, "memory_mb": cell.memory_mb, "encryption": cell.encryption,
            "table_rows": cell.scale,
            "operation": cell.test, "rows": median(record, "rows"), "n": summary.n,
            "median_ms": summary.median * 1000,
            "overhead_pct": compared.pct if compared else None,
            "overhead_ci": interval(compared.ci_low, compared.ci_high, percent) if compared else None,
            "p_value": compared.p_value if compared else None,
            "cpu_ms": scaled(median(record, "cpu_s"), 1000),
            "mb_per_s": processed / summary.median / MIB if processed and summary.median > 0 else None,
            "read_mib": scaled(median(record, "read_bytes"), 1 / MIB),
            "written_mib": scaled(median(record, "write_bytes"), 1 / MIB),
            "size_before_mib": scaled(median(record, "size_before_bytes"), 1 / MIB),
            "size_after_mib": scaled(median(record, "size_after_bytes"), 1 / MIB),
            "noisy": summary.noisy,
        })
    rows.sort(key=lambda row: (row["engine"], memory_order(row["memory_mb"]), row["table_rows"],
                               TESTS.index(row["operation"]), row["encryption"] != BASELINE, row["encryption"]))
    columns = (*engine_columns(rows), Column("encryption", "encryption"),
               num("table_rows", "table rows", _rows), Column("operation", "operation"),
               num("rows", "rows", _rows), num("n", "n", text), num("median_ms", "median (ms)"),
               num("overhead_pct", "vs none", percent), num("overhead_ci", "95% CI", text),
               num("p_value", "p", p_value), num("cpu_ms", "CPU (ms)"), num("mb_per_s", "MB/s"),
               num("read_mib", "read (MiB)"), num("written_mib", "written (MiB)"),
               num("size_before_mib", "size before (MiB)"), num("size_after_mib", "size after (MiB)"),
               Column("noisy", "noisy"))
    return Table(
        "CRUD operations by table size", columns, rows,
        intro=("Each operation measured alone, median over the repetitions: select, insert, update "
               "and delete of k rows (the plan's operation_fraction of the table), all point "
               "lookups together, and a full scan; the overhead against no encryption on the same "
               "engine, memory and table size with its 95% bootstrap CI and Mann–Whitney U p."),
        note=("Rows: rows returned or changed, as counted by the check after the operation. MB/s: "
              "the throughput of Moulianitakis & Asimakopoulos (2019), bytes processed ÷ median "
              "elapsed ÷ 1024², where bytes processed = rows × the table's average logical row "
              "size (4 bytes per INTEGER, 8 per BIGINT, the length of every text). CPU, read and "
              "written: the engine's processes (storage I/O; zero when the page cache served it). "
              "Size before and after: every file of the database just before and after the "
              "operation."))


def latency_table(records: list[SummaryRecord]) -> Table:
    """The distribution of single point-lookup times: each trial's p50, p90, p99, max and mean,
    as medians over the repetitions, with the p50's and p99's overheads against `none`; per
    engine, memory_mb, encryption and table size."""
    by_config: dict[tuple[str, int | None, str, float], dict[str, SummaryRecord]] = defaultdict(dict)
    for record in records:
        cell = record.cell
        if (cell.workload, cell.test) == (WORKLOAD, "lookup") and (cell.step, cell.metric) in (
                *((POINT, metric) for metric in LATENCY_METRICS), (STEP, "rows")):
            by_config[(cell.engine, cell.memory_mb, cell.encryption, cell.scale)][cell.metric] = record
    rows = []
    for (engine, memory_mb, encryption, scale), figures in by_config.items():
        if "p50_elapsed_s" not in figures:
            continue
        row: dict = {"engine": engine, "memory_mb": memory_mb, "encryption": encryption, "table_rows": scale,
                     "lookups": figures["rows"].summary.median if "rows" in figures else None,
                     "n": figures["p50_elapsed_s"].summary.n}
        for metric in LATENCY_METRICS:
            row[metric] = figures[metric].summary.median * 1e6 if metric in figures else None
        for metric in ("p50_elapsed_s", "p99_elapsed_s"):
            compared = figures[metric].overhead if metric in figures else None
            row[f"{metric}_overhead"] = compared.pct if compared else None
            row[f"{metric}_ci"] = interval(compared.ci_low, compared.ci_high, percent) if compared else None
        rows.append(row)
    rows.sort(key=lambda row: (row["engine"], memory_order(row["memory_mb"]), row["table_rows"],
                               row["encryption"] != BASELINE, row["encryption"]))
    columns = (*engine_columns(rows), Column("encryption", "encryption"),
               num("table_rows", "table rows", _rows), num("lookups", "lookups", _rows), num("n", "n", text),
               num("p50_elapsed_s", "p50 (µs)"), num("p50_elapsed_s_overhead", "p50 vs none", percent),
               num("p50_elapsed_s_ci", "95% CI", text), num("p90_elapsed_s", "p90 (µs)"),
               num("p99_elapsed_s", "p99 (µs)"), num("p99_elapsed_s_overhead", "p99 vs none", percent),
               num("p99_elapsed_s_ci", "95% CI", text), num("max_elapsed_s", "max (µs)"),
               num("mean_elapsed_s", "mean (µs)"))
    return Table("Point lookup latency", columns, rows,
                 note=("Every lookup by id is timed alone; each trial keeps the percentiles, "
                       "maximum and mean of its lookups' times, and these are medians over the "
                       "repetitions (n), with the overhead against no encryption and its 95% "
                       "bootstrap CI."),
                 empty="No point lookups were measured in this run.")
