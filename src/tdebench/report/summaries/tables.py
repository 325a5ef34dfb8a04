"""Every table of the report, built once and rendered by each format.

A `Table` keeps raw values in its rows; a CSV writes them as they are (full precision,
machine units), while markdown and HTML show them through each column's formatter
(ms, MiB, rounded). So `verdicts.csv` and the report's verdict table cannot disagree.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from tdebench.measure.environment import flatten
from tdebench.report.data import declared
from tdebench.report.summaries import noise
from tdebench.report.data.records import (BASELINE, LOCKSTEP_RESOURCES, PLACEBO, SummaryRecord, below_resolution,
                                          deterministic, floors, headline_records, is_query, memory_order, resolution,
                                          run_order, scale_text, step_order)
from tdebench.stats import NOISY_CV, PAIRED, Overhead, noise_advice
from tdebench.report.data.units import MIB, display_unit, interval, mib, number, p_value, percent, ratio_percent
from tdebench.results import (ENCRYPTIONS, ENGINE_FACTS, FILE_KIND_TITLES, FILE_KINDS, FILLED_IN, CipherSpeed,
                              Measurement, RunData, Sample, TrialKey, Verdict)


def text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return number(value)
    return str(value)


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    fmt: Callable[[Any], str] = text
    numeric: bool = False
    prose: bool = False  # free text that may wrap; other cells keep to one line


def _prose(key: str, header: str) -> Column:
    return Column(key, header, prose=True)


@dataclass
class Table:
    title: str
    columns: tuple[Column, ...]
    rows: list[dict[str, Any]] = field(default_factory=list)
    note: str = ""  # shown below the table
    intro: str = ""  # shown above the table
    empty: str = ""  # shown alone, instead of intro, table and note, when there are no rows
    summary: str = ""  # its rows in one line, shown where they are folded away (report.html)
    alarm: str = ""  # the key of a row value that, when true, marks the row as one to look at

    @property
    def fold_summary(self) -> str:
        """The line shown in place of the folded rows: the summary, else how many there are."""
        return self.summary or f"{self.title}: {len(self.rows)} rows"

    def alarmed(self, row: dict[str, Any]) -> bool:
        return bool(self.alarm and row.get(self.alarm))

    @property
    def keys(self) -> list[str]:
        return [column.key for column in self.columns]

    @property
    def headers(self) -> list[str]:
        return [column.header for column in self.columns]

    def formatted(self) -> list[list[str]]:
        return [[column.fmt(row.get(column.key)) for column in self.columns] for row in self.rows]


def num(key: str, header: str, fmt: Callable[[Any], str] = number) -> Column:
    """A numeric column (right-aligned), shown with `fmt`: every report table's numbers."""
    return Column(key, header, fmt, numeric=True)


_MEMORY = num("memory_mb", "memory (MB)", text)


def config_columns(memory: bool = False, hosts: bool = False) -> tuple[Column, ...]:
    """engine, encryption, workload, scale; and after the engine its memory_mb, when the run used
    it, and the kind of host, when a cluster run's hosts differ and are reported apart."""
    engine = ((Column("engine", "engine"),) + ((_MEMORY,) if memory else ())
              + ((Column("hosts", "hosts"),) if hosts else ()))
    return engine + (Column("encryption", "encryption"), Column("workload", "workload"),
                     num("scale", "scale", scale_text))


def shown_config_columns(rows: list[dict[str, Any]]) -> tuple[Column, ...]:
    """The configuration columns of a report-only table: workload and scale only when its rows
    have more than one of them (the overview names the one a run has), memory only when used."""
    columns = config_columns(uses_memory(row["memory_mb"] for row in rows))
    return columns if len({(row["workload"], row["scale"]) for row in rows}) > 1 else columns[:-2]


def uses_memory(memories: Iterable[int | None]) -> bool:
    """Whether a run gave any engine memory_mb: only then do its tables show the memory column."""
    return any(memory is not None for memory in memories)


def engine_columns(rows: Iterable[dict[str, Any]]) -> tuple[Column, ...]:
    """The engine, and after it its memory_mb when a row has one: the first columns of a
    workload's own table (crud, oltp, backup, maintenance), whose rows keep each memory apart."""
    return (Column("engine", "engine"),) + ((_MEMORY,) if uses_memory(row["memory_mb"] for row in rows) else ())


# --- summary.csv -----------------------------------------------------------------------


def _summary_row(record: SummaryRecord) -> dict[str, Any]:
    cell, summary, compared = record.cell, record.summary, record.overhead
    return {
        "engine": cell.engine, "memory_mb": cell.memory_mb, "hosts": cell.host, "encryption": cell.encryption,
        "workload": cell.workload, "scale": cell.scale, "test": cell.test, "step": cell.step, "metric": cell.metric,
        "unit": record.unit, "n": summary.n, "median": summary.median, "mean": summary.mean,
        "stdev": summary.stdev, "ci_low": summary.ci_low, "ci_high": summary.ci_high,
        "cv": summary.cv, "outliers": summary.outliers, "noisy": noise.noisy(record),
        "overhead_pct": compared.pct if compared else None,
        "overhead_ci_low": compared.ci_low if compared else None,
        "overhead_ci_high": compared.ci_high if compared else None,
        "overhead_method": compared.method if compared else None,
        "p_value": compared.p_value if compared else None,
        "overhead_note": compared.reason or None if compared else None,
    }


def summary_table(records: list[SummaryRecord]) -> Table:
    columns = config_columns(uses_memory(r.cell.memory_mb for r in records),
                             any(r.cell.host is not None for r in records)) + (
        Column("test", "test"), Column("step", "step"), Column("metric", "metric"),
        Column("unit", "unit"), num("n", "n", text), num("median", "median"), num("mean", "mean"),
        num("stdev", "stdev"), num("ci_low", "CI low"), num("ci_high", "CI high"),
        num("cv", "CV", ratio_percent), num("outliers", "outliers", text), Column("noisy", "noisy"),
        num("overhead_pct", "overhead", percent), num("overhead_ci_low", "overhead CI low", percent),
        num("overhead_ci_high", "overhead CI high", percent), Column("overhead_method", "method"),
        num("p_value", "p", p_value), Column("overhead_note", "no overhead or interval because"))
    return Table("Summary", columns, [_summary_row(record) for record in records])


# --- queries.csv -----------------------------------------------------------------------


ANSWER_PRECEDENCE = ("failed", "timeout", "unchecked", "ok")
"""How a query's executions sum up in queries.csv: the first of these that any execution
has. `timeout` is a query stopped by the plan's query_timeout_s (its time is a lower bound)."""


def query_answer(answers: Iterable[str | None]) -> str:
    """One word for all executions of a query: `failed` if any answer was wrong, else
    `timeout` if any was stopped by the timeout, else `unchecked` if any was not checked (or
    there were none), else `ok`: every execution checked and right."""
    answers = list(answers)
    for word in ANSWER_PRECEDENCE[:2]:
        if word in answers:
            return word
    return "ok" if answers and all(answer == "ok" for answer in answers) else "unchecked"


def _query_row(key: tuple, executions: dict[int, Measurement], repetitions: int) -> dict[str, Any]:
    engine, encryption, workload, scale, test, stream, step, memory = key
    row: dict[str, Any] = {"engine": engine, "memory_mb": memory, "encryption": encryption, "workload": workload,
                           "scale": scale, "test": test, "stream": stream, "query": step}
    times = []
    for repetition in range(1, repetitions + 1):
        measurement = executions.get(repetition)
        elapsed = measurement.metrics.get("elapsed_s") if measurement else None
        row[f"exec_{repetition}"] = None if elapsed is None else round(elapsed * 1000.0, 3)
        if elapsed is not None:
            times.append(elapsed * 1000.0)
    row["average_ms"] = round(sum(times) / len(times), 3) if times else None
    row["stdev_ms"] = round(_sample_stdev(times), 3) if len(times) > 1 else None
    row["answer"] = query_answer(m.answer for m in executions.values())
    return row


def _sample_stdev(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def queries_table(run: RunData) -> Table:
    """The spreadsheet of Carvalho (2025): one row per query and stream, one column per execution.
    Every execution is shown, failed trials included, so nothing measured is hidden; a
    timed-out execution shows the time until it was stopped (a lower bound)."""
    executions: dict[tuple, dict[int, Measurement]] = defaultdict(dict)
    for m in run.measurements:
        if not m.warmup and is_query(m.step):
            t = m.trial
            key = (t.engine, t.encryption, t.workload, t.scale, m.test, m.stream, m.step, t.memory_mb)
            executions[key][t.repetition] = m
    repetitions = max((rep for runs in executions.values() for rep in runs), default=0)
    columns = (config_columns(uses_memory(key[-1] for key in executions))
               + (Column("test", "test"), num("stream", "stream", text), Column("query", "query"))
               + tuple(num(f"exec_{i}", f"exec {i} (ms)") for i in range(1, repetitions + 1))
               + (num("average_ms", "average (ms)"), num("stdev_ms", "stdev (ms)"),
                  Column("answer", "answer")))

    def order(key: tuple) -> tuple:
        engine, encryption, workload, scale, test, stream, step, memory = key
        return (engine, memory_order(memory), encryption != BASELINE, encryption, workload, scale, test,
                stream or 0, step_order(step))

    rows = [_query_row(key, executions[key], repetitions) for key in sorted(executions, key=order)]
    return Table("Queries", columns, rows)


def _baseline_first(trial: TrialKey) -> tuple:
    return (trial.engine, memory_order(trial.memory_mb), trial.encryption != BASELINE, trial.encryption,
            trial.workload, trial.scale, trial.repetition)


# --- verdicts.csv ----------------------------------------------------------------------


def verdicts_table(run: RunData, csv: bool = True) -> Table:
    """Every trial's verdict: verdicts.csv (`csv`), or the report's narrower table of the same
    rows, each trial named by its id and the columns no trial filled left out."""
    config = config_columns(uses_memory(v.trial.memory_mb for v in run.verdicts))
    columns = (num("repetition", "rep", text), Column("verdict", "verdict"), Column("expected", "expected"),
               Column("as_expected", "as expected"), num("files_scanned", "files", text),
               num("bytes_scanned", "MiB scanned", mib),
               _prose("first_hit", "first canary hit"), _prose("detail", "detail"))
    extra: tuple[Column, ...] = (_prose("engine_state", "engine reports"),
                                 num("view_hits", "canaries in decrypted view", text),
                                 _prose("exposed", "plaintext of unsealed columns in"))
    extra += (Column("transient", "caught while running"), _prose("by_kind", "by file kind"))
    rows: list[dict[str, Any]]  # a row's values are of many types
    rows = [{"trial": v.trial.id, "engine": v.trial.engine, "memory_mb": v.trial.memory_mb,
             "encryption": v.trial.encryption, "workload": v.trial.workload, "scale": v.trial.scale,
             "repetition": v.trial.repetition, "verdict": v.verdict, "expected": v.expected,
             "as_expected": v.as_expected, "unexpected": v.unexpected, "files_scanned": v.files_scanned,
             "bytes_scanned": v.bytes_scanned, "first_hit": v.first_hit, "detail": v.detail,
             "engine_state": v.engine_state or None, "view_hits": v.view_hits,
             "exposed": ", ".join(v.exposed) or None, "transient": v.transient or None,
             "by_kind": _kinds_text(v), "capture_cpu_s": v.capture_cpu_s, **_kind_cells(v)}
            for v in sorted(run.verdicts, key=lambda v: _baseline_first(v.trial))]
    filled = tuple(column for column in extra if any(row[column.key] is not None for row in rows))
    if csv:
        extra = extra[:-1] + (num("capture_cpu_s", "capture CPU s", text),) + tuple(
            num(f"{kind}_{what}", f"{kind} {what}", text) for kind in FILE_KINDS for what in _KIND_FIGURES)
    note = ""
    if filled:
        note = ("Engine reports: the encryption state the engine itself gives (e.g. MariaDB's "
                "INNODB_TABLESPACES_ENCRYPTION), checked before measuring. Canaries in decrypted "
                "view: for a file-system layer, the canary hits in its plaintext view, scanned "
                "while mounted: the positive control that the canaries were written below it. "
                "Plaintext of unsealed columns in: for column-level encryption, the files where the "
                "marker beside each canary (in a column it leaves unencrypted) was found: they hold "
                "the other columns in plaintext, by design.")
    if csv:
        return Table("Verdicts", config + columns + extra, rows, note=note)
    unexpected = sum(row["unexpected"] for row in rows)
    return Table("Verdicts by trial", (Column("trial", "trial"),) + columns[1:] + filled, rows, note=note,
                 alarm="unexpected",
                 summary=(f"Each trial's verdict ({len(rows)}"
                          + (f", {unexpected} NOT as expected" if unexpected else ", all as expected")
                          + "): files scanned, first canary hit, detail"))


_KIND_FIGURES = ("files", "transient_files", "bytes", "hits")


def _kind_figures(v: Verdict) -> dict[str, dict[str, int]]:
    """Per file kind (results.FILE_KINDS): files seen at rest, files caught while running, bytes
    scanned and canary hits; empty when no kind was recorded (format 1, `results.upgrade`)."""
    if not any(s.kind for s in v.files):
        return {}
    figures = {kind: dict.fromkeys(_KIND_FIGURES, 0) for kind in FILE_KINDS}
    for s in v.files:
        kind = figures[s.kind if s.kind in figures else "other"]
        kind["transient_files" if s.transient else "files"] += 1
        kind["bytes"] += s.bytes
        kind["hits"] += s.hits
    return figures


def _kind_cells(v: Verdict) -> dict[str, int | None]:
    """verdicts.csv's per-kind columns: `<kind>_files`, `_transient_files`, `_bytes`, `_hits`."""
    figures = _kind_figures(v)
    return {f"{kind}_{what}": figures[kind][what] if figures else None for kind in FILE_KINDS for what in _KIND_FIGURES}


def _kinds_text(v: Verdict) -> str | None:
    """The per-kind figures in a few words, the kinds with no file left out."""
    parts = []
    for kind, f in _kind_figures(v).items():
        if f["files"] or f["transient_files"]:
            caught = f" + {f['transient_files']} caught while running" if f["transient_files"] else ""
            parts.append(f"{FILE_KIND_TITLES[kind]}: {f['files']} file{'s' * (f['files'] != 1)}{caught}, "
                         f"{number(f['bytes'] / MIB)} MiB, {f['hits']:,} hits")

    return "; ".join(parts) or None


def _verdict_count(verdicts: list[Verdict], trials: int) -> dict[str, Any]:
    """One configuration's verdicts in a few words: "5/5 encrypted", or "4/5 encrypted, 1
    plaintext" (the expected verdict counted first), and its trials without a verdict."""
    expected = verdicts[0].expected
    counts = Counter(v.verdict for v in verdicts)
    words = [f"{counts.pop(expected, 0)}/{len(verdicts)} {expected}"]
    words += [f"{count} {verdict}" for verdict, count in sorted(counts.items())]
    if trials > len(verdicts):
        missing = trials - len(verdicts)
        words.append(f"{missing} trial{'s' if missing > 1 else ''} without a verdict")
    unexpected = sum(v.unexpected for v in verdicts)
    unverified = sum(v.unverified for v in verdicts)
    judged = "not verified" if unverified == len(verdicts) else "yes"  # a remote server's files: not scanned
    return {"expected": expected, "verdicts": ", ".join(words), "unexpected": unexpected,
            "as_expected": f"NO: {unexpected} of {len(verdicts)}" if unexpected else judged}


def verdict_summary_table(run: RunData) -> Table:
    """One row per configuration (engine, memory, encryption, workload, scale): how many of its
    trials got which verdict; a configuration with any verdict not as expected is marked."""
    groups: dict[TrialKey, list[Verdict]] = defaultdict(list)
    for v in sorted(run.verdicts, key=lambda v: _baseline_first(v.trial)):
        groups[dataclasses.replace(v.trial, repetition=0)].append(v)
    trials = Counter(dataclasses.replace(o.trial, repetition=0) for o in run.trials)
    rows = [{"engine": key.engine, "memory_mb": key.memory_mb, "encryption": key.encryption,
             "workload": key.workload, "scale": key.scale,
             **_verdict_count(verdicts, max(trials[key], len(verdicts)))} for key, verdicts in groups.items()]
    columns = shown_config_columns(rows) + (
        Column("expected", "expected"), Column("verdicts", "verdicts"),
        Column("as_expected", "as expected"))
    return Table("Verdicts", columns, rows, alarm="unexpected",
                 note=("One row per configuration. Each trial's verdict, with the files scanned, the first "
                       "canary hit and the details, is in verdicts.csv, and in report.html under this table."))


# --- report-only tables ----------------------------------------------------------------


OVERHEAD_NOTE = (
    "Paired (n in rounds): each round (lockstep or interleaved) ran every configuration once; overhead = "
    "geometric mean of the within-round ratios to none − 1, 95% CI a t-interval over the rounds, "
    "p a paired t-test on the round log ratios. Unpaired (n as encryption vs none, sequential "
    "order): overhead = median / median of none − 1, CI 95% bootstrap, p two-sided Mann–Whitney U. "
    "“exact”: a figure with no spread in either group (a size that came out alike in every "
    "trial), whose difference needs no interval or test; a size that varies gets an interval, "
    "like a time. Reading: with a placebo (none against none) in the plan, its overhead is the "
    "noise floor, and an encryption whose CI overlaps the placebo's is below the run's resolution "
    "(± the placebo's farthest bound).")


def reading(record: SummaryRecord, exact: bool, floor: SummaryRecord | None) -> str:
    """What a figure says, in words: the placebo is the noise floor; an overhead overlapping
    it is below the run's resolution; else a cost or a saving when significant."""
    compared = record.overhead
    assert compared is not None
    if record.cell.encryption == PLACEBO:
        return "noise floor"
    if exact:
        return "exact"
    if compared.ci_low <= 0.0 <= compared.ci_high:
        return "no significant difference"
    if below_resolution(record, floor):
        assert floor is not None
        return f"below resolution (±{resolution(floor):.1f}%)"
    if compared.significant:
        return "cost" if compared.pct > 0 else "saving"
    return "no significant difference"


def n_text(compared: Overhead) -> str:
    """How many values an overhead rests on: "5 rounds" (paired) or "3 vs 3" (unpaired)."""
    if compared.method == PAIRED:
        return f"{compared.n_treatment} rounds"
    return f"{compared.n_treatment} vs {compared.n_baseline}"


def overhead_table(records: list[SummaryRecord]) -> Table:
    """The headline figures of every encryption against `none`, in friendly units."""
    baselines = {r.cell.comparison: r for r in records if r.cell.encryption == BASELINE}
    floor_of = floors(records)
    rows: list[dict[str, Any]] = []
    for headline, record in headline_records(records):
        if record.overhead is None:
            continue
        unit, factor = display_unit(record.unit)
        baseline = baselines[record.cell.comparison]
        compared = record.overhead
        exact = deterministic(record, baseline)
        rows.append({"engine": record.cell.engine_at_hosts, "memory_mb": record.cell.memory_mb,
                     "encryption": record.cell.encryption,
                     "workload": record.cell.workload, "scale": record.cell.scale,
                     "figure": headline.label, "unit": unit,
                     "baseline": baseline.summary.median * factor,
                     "median": record.summary.median * factor,
                     "overhead": compared.pct,
                     "ci": "exact" if exact else interval(compared.ci_low, compared.ci_high, percent),
                     "p": None if exact else compared.p_value,
                     "n": n_text(compared),
                     "reading": reading(record, exact, floor_of.get(record.cell.comparison)),
                     "noisy": noise.comparison_noise(record, baseline) is not None})
    rows.sort(key=lambda row: (row["engine"], memory_order(row["memory_mb"]), row["workload"], row["scale"],
                               declared.label_order(row["figure"]), row["encryption"]))
    columns = shown_config_columns(rows) + (
        Column("figure", "figure"), Column("unit", "unit"), num("baseline", "none (median)"),
        num("median", "median"), num("overhead", "overhead", percent), num("ci", "95% CI", text),
        Column("reading", "reading"), num("p", "p", p_value), num("n", "n", text), Column("noisy", "noisy"))
    return Table("Overhead against no encryption", columns, rows,
                 note=OVERHEAD_NOTE)


def size_table(records: list[SummaryRecord]) -> Table:
    """Database size after the load (test `load`, step `database`) per encryption, with its
    spread between trials: a size that varies is compared with an interval, like a time."""
    baselines = {r.cell.comparison: r for r in records if r.cell.encryption == BASELINE}
    floor_of = floors(records)
    rows: list[dict[str, Any]] = []
    changed: list[tuple[str, Overhead]] = []  # "engine encryption" of each exact or resolved change
    for record in records:
        cell = record.cell
        if (cell.test, cell.step, cell.metric) != ("load", "database", "size_bytes"):
            continue
        compared = record.overhead
        exact = compared is not None and deterministic(record, baselines[cell.comparison])
        if compared is not None and cell.encryption != PLACEBO and (exact or (
                compared.significant and not below_resolution(record, floor_of.get(cell.comparison)))):
            changed.append((f"{cell.engine_at_hosts} {cell.encryption}", compared))
        rows.append({"engine": cell.engine_at_hosts, "memory_mb": cell.memory_mb, "encryption": cell.encryption,
                     "workload": cell.workload, "scale": cell.scale,
                     "size": record.summary.median / MIB, "cv": record.summary.cv,
                     "overhead": compared.pct if compared else None,
                     "ci": None if compared is None else "exact" if exact
                     else interval(compared.ci_low, compared.ci_high, percent)})
    columns = shown_config_columns(rows) + (
        num("size", "size (MiB, median)"), num("cv", "CV between trials", ratio_percent),
        num("overhead", "vs none", percent), num("ci", "95% CI", text))
    summary = f"{len(rows)} configurations"
    if rows:
        summary += f", {number(min(r['size'] for r in rows))} to {number(max(r['size'] for r in rows))} MiB"
    if changed:
        who, most = max(changed, key=lambda change: abs(change[1].pct))
        summary += f"; the largest change: {who} {percent(most.pct)}"
    return Table("Database size", columns, rows, summary=summary)


def samples_by_config(samples: Iterable[Sample]) -> dict[tuple[str, str, str, float, int | None], list[Sample]]:
    """The resource samples per configuration (engine, encryption, workload, scale, memory_mb),
    in report order (by engine, memory, workload and scale, the baseline first), each list in
    trial and time order."""
    groups: dict[tuple[str, str, str, float, int | None], list[Sample]] = defaultdict(list)
    for sample in sorted(samples, key=lambda s: (s.trial, s.t_s)):
        groups[sample.trial.config].append(sample)
    order = sorted(groups, key=lambda c: (c[0], memory_order(c[4]), c[2], c[3], c[1] != BASELINE, c[1]))
    return {config: groups[config] for config in order}


def sample_interval(samples: Iterable[Sample]) -> float | None:
    """The sampler's typical interval: the median gap between a trial's consecutive samples."""
    per_trial: dict[TrialKey, list[float]] = defaultdict(list)
    for sample in samples:
        per_trial[sample.trial].append(sample.t_s)
    gaps = sorted(b - a for times in per_trial.values() for a, b in zip(sorted(times), sorted(times)[1:]))
    return gaps[len(gaps) // 2] if gaps else None


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _pct(value: float | None) -> str:
    """A percentage of 0–100, shown with one decimal (two below 1, so 0.37% is not 0.4%)."""
    if value is None or math.isnan(value):
        return "–"
    return f"{value:.2f}" if abs(value) < 1 else f"{value:.1f}"


def resources_table(run: RunData) -> Table:
    """What the machine and the engine did during each configuration's trials (the CPU %, RAM %
    and disk-busy % of Carvalho (2025); the CPU % and memory % of Madyatmadja et al. (2021)),
    over all its trials' samples."""
    rows: list[dict[str, Any]] = []
    for (engine, encryption, workload, scale, memory), samples in samples_by_config(run.samples).items():
        rows.append({"engine": engine, "memory_mb": memory, "encryption": encryption, "workload": workload,
                     "scale": scale,
                     "trials": len({s.trial for s in samples}),
                     "cpu_pct_mean": _mean([s.cpu_pct for s in samples]),
                     "cpu_pct_max": max(s.cpu_pct for s in samples),
                     "mem_bytes_max": max(s.mem_bytes for s in samples),
                     "mem_pct_max": max(s.mem_pct for s in samples),
                     "disk_busy_pct_mean": _mean([s.disk_busy_pct for s in samples]),
                     "disk_read_bytes": sum(s.disk_read_bytes for s in samples),
                     "disk_write_bytes": sum(s.disk_write_bytes for s in samples),
                     "samples": len(samples)})
    columns = config_columns(uses_memory(row["memory_mb"] for row in rows)) + (
        num("trials", "trials", text), num("cpu_pct_mean", "CPU % mean", _pct),
        num("cpu_pct_max", "CPU % max", _pct), num("mem_bytes_max", "memory max (MiB)", mib),
        num("mem_pct_max", "memory % max", _pct), num("disk_busy_pct_mean", "disk busy % mean", _pct),
        num("disk_read_bytes", "disk read (MiB)", mib), num("disk_write_bytes", "disk written (MiB)", mib),
        num("samples", "samples", text))
    interval = sample_interval(run.samples)
    every = f" about every {interval:.3g} s" if interval else ""
    return Table(
        "Resources", columns, rows,
        summary=f"{len(rows)} configurations: CPU, memory and disk over their trials' samples",
        intro=(f"The resource sampler's readings,{every} during every trial (failed ones "
               "included), per configuration: what the machine and the engine were doing "
               "while they were measured."),
        note=("CPU %: the whole machine, 100 = every core busy. Memory: resident memory of the "
              "engine's processes (for an embedded engine, the tdebench process it runs in); "
              "memory %: the same as a share of the machine's memory. Disk busy %: the "
              "busiest disk's busy time per interval. Disk read and written: all disks, summed "
              "over all trials of the configuration. CPU and disk are machine-wide, so anything "
              "else running on the machine shows up in them too."
              + (" " + LOCKSTEP_RESOURCES if run_order(run) == "lockstep" else "")),
        empty="No resource samples were recorded in this run.")


def size_text(size: int) -> str:
    """4096 → "4 KiB", 1048576 → "1 MiB"."""
    for unit, factor in (("MiB", MIB), ("KiB", 1024)):
        if size >= factor and size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size:,} B"


UNAVAILABLE = "unavailable"


def speeds_table(speeds: Iterable[CipherSpeed]) -> Table:
    """Raw cipher throughput: one row per cipher (per host and cipher in a cluster run, each
    host measured its own), a column of MiB/s per page size, the library and a note; a cipher
    no installed library implements shows "unavailable"."""
    speeds = list(speeds)
    sizes = sorted({s.chunk_bytes for s in speeds})
    hosts = any(s.host is not None for s in speeds)
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for s in speeds:
        row = rows.setdefault((s.host or "", s.cipher), {"host": s.host or "", "cipher": s.cipher,
                                                         "library": s.library, "note": s.note})
        row[f"mib_per_s_{s.chunk_bytes}"] = s.mib_per_s if s.available else UNAVAILABLE
    columns = (*((Column("host", "host"),) if hosts else ()), Column("cipher", "cipher"),
               *(num(f"mib_per_s_{size}", size_text(size), text) for size in sizes),
               Column("library", "library"), _prose("note", "note"))
    method = ("One context per key, a new nonce per page, the best of several timings in CPU "
              "time; 0.15-0.8 µs of call overhead per page remain in the figure, most felt at 4 KiB "
              "(docs/method.md).")
    if not all(s.reused_context for s in speeds):
        method = ("Measured by an older tdebench that set up a new cipher context for every "
                  "chunk: small-chunk figures, CBC and CTR most, are far below what the cipher "
                  "reaches; `tdebench ciphers` measures them again.")
    return Table("Raw cipher throughput", columns, list(rows.values()),
                 summary=f"{len({cipher for _, cipher in rows})} ciphers at {len(sizes)} page size(s)",
                 intro="MiB/s by page size (bytes encrypted under one nonce), one core.",
                 note="How fast this machine's CPU encrypts memory with each cipher, with no "
                      "database and no disk involved: the physical limit. An engine cannot "
                      "encrypt faster than this, and when its I/O rate is far below it, "
                      f"encryption should cost little. {method}")


def cipher_table(run: RunData) -> Table:
    return speeds_table(run.ciphers)


FACTS = (ENGINE_FACTS, ENCRYPTIONS, FILLED_IN)
"""environment.json's facts of the engines (report/data/encryptions.py), shown where they are used."""


def _without_facts(environment: dict[str, Any]) -> dict[str, Any]:
    """environment.json less the engines' facts, at its top and in each host's (a cluster run)."""
    shown = {key: value for key, value in environment.items() if key not in FACTS}
    if isinstance(shown.get("hosts"), dict):
        shown["hosts"] = {host: _without_facts(own) if isinstance(own, dict) else own
                          for host, own in shown["hosts"].items()}
    return shown


def environment_table(run: RunData) -> Table:
    """The environment rendered generically: nested keys joined by dots, lists by commas; the
    engines' facts left out (`FACTS`: each shown where it is used, an encryption's in "Against the
    raw cipher")."""
    rows = [{"key": key, "value": value} for key, value in flatten(_without_facts(run.environment))]
    return Table("Environment", (Column("key", "key"), _prose("value", "value")), rows,
                 summary=f"{len(rows)} settings of the machine and its software, as the run recorded them")


def _where(m: Measurement) -> str:
    """Which execution of a query, e.g. "power q5" or "throughput stream 2 q5"."""
    return f"{m.test} stream {m.stream} {m.step}" if m.stream else f"{m.test} {m.step}"


def _stopped_after(m: Measurement) -> str:
    elapsed = m.metrics.get("elapsed_s")
    return "" if elapsed is None else f" stopped after {number(elapsed)} s"


def failures_table(run: RunData) -> Table:
    """Failed trials, wrong query answers, query timeouts and unexpected verdicts: results a
    reader must not trust."""
    rows = [{"trial": o.trial.id, "what": "trial failed", "detail": o.error}
            for o in sorted(run.trials, key=lambda o: o.trial) if o.status != "ok"]
    rows += [{"trial": m.trial.id, "what": "wrong answer", "detail": _where(m)}
             for m in run.measurements if m.answer == "failed"]
    rows += [{"trial": m.trial.id, "what": "query timeout", "detail": _where(m) + _stopped_after(m)}
             for m in run.measurements if m.answer == "timeout"]
    rows += [{"trial": v.trial.id, "what": f"verdict {v.verdict}, expected {v.expected}",
              "detail": "; ".join(part for part in (v.first_hit or "", v.detail) if part)}
             for v in sorted(run.verdicts, key=lambda v: v.trial) if v.unexpected]
    columns = (Column("trial", "trial"), Column("what", "what"), _prose("detail", "detail"))
    return Table("Failures", columns, rows)


def noisy_table(figures: list[noise.NoisyFigure], order: str) -> Table:
    """One row per headline figure that is noisy or has outliers; the advice said once."""
    rows = []
    for figure in figures:
        unit, factor = display_unit(figure.unit)
        rows.append({"figure": figure.label, "unit": unit, "n": figure.n, "median": figure.median * factor,
                     "cv": figure.cv, "noisy": figure.noisy, "outliers": figure.outliers})
    columns = (_prose("figure", "figure"), Column("unit", "unit"), num("n", "n", text),
               num("median", "median"), num("cv", "CV", ratio_percent), Column("noisy", "noisy"),
               num("outliers", "outliers", text))
    flagged = [figure for figure in figures if figure.noisy]
    summary = (f"{len(flagged)} noisy headline figure(s), {len(figures) - len(flagged)} with outliers only"
               + (f"; the noisiest: {flagged[0].label} (CV {flagged[0].cv * 100:.0f}%)" if flagged else ""))
    return Table("Noisy figures", columns, rows, summary=summary,
                 intro=(f"Headline figures whose coefficient of variation exceeds {NOISY_CV * 100:g}%, too "
                        "noisy to resolve the few-percent overheads encryption at rest typically costs, "
                        f"and those with outliers. What to do: {noise_advice(order)}. Where rounds are paired "
                        "(order interleaved or lockstep), a figure's own spread between rounds cancels in "
                        "its comparison with none: there the comparison is judged, by the spread (CV) of "
                        "its round-by-round ratios (\u201c÷ none by round\u201d), which is what its CI is made of."),
                 note=("Only headline figures are judged (test composites, load, TPM and NOPM, crud "
                       "operations, backups and restores, maintenance operations); every other cell's CV "
                       "is in summary.csv. Outliers lie outside the Tukey fences; they are kept, not dropped."),
                 empty=f"No headline figure is noisy (CV above {NOISY_CV * 100:g}%) or has outliers.")


def _cpus(cpus: tuple[int, ...] | None) -> str:
    return "–" if cpus is None else ", ".join(map(str, cpus))


def machine_load_table(loads: list[noise.TrialLoad]) -> Table:
    """Every trial with the machine's load around it, busy trials marked."""
    rows = [{"trial": load.trial.id, "others_mean": load.others_mean, "others_max": load.others_max,
             "load_start": load.load_start, "load_end": load.load_end, "engine_cpus": load.engine_cpus,
             "driver_cpus": load.driver_cpus, "waited_s": load.waited_s, "others_at_start": load.others_at_start,
             "busy": "BUSY" if load.busy else ""} for load in loads]
    pinned = any(load.engine_cpus is not None for load in loads)
    waited = any(load.waited_s is not None for load in loads)
    columns: tuple[Column, ...] = (
        Column("trial", "trial"), num("others_mean", "others' CPU % mean", _pct),
        num("others_max", "others' CPU % max", _pct), num("load_start", "load avg start"),
        num("load_end", "load avg end"))
    if pinned:
        columns += (Column("engine_cpus", "engine CPUs", _cpus), Column("driver_cpus", "driver CPUs", _cpus))
    if waited:
        columns += (num("waited_s", "waited for quiet s"), num("others_at_start", "others' CPU % at start", _pct))
    columns += (Column("busy", "busy"),)
    recorded = any(load.others_mean is not None or load.load_start is not None for load in loads)
    busy = sorted((load for load in loads if load.busy), key=lambda load: -(load.others_mean or 0.0))
    summary = (f"{len(loads)} trials, {len(busy)} busy (others above {noise.BUSY_OTHERS_PCT:g}% of one core)"
               + (f"; the busiest: {busy[0].trial.id} ({busy[0].others_mean:.0f}%)" if busy else ""))
    return Table(
        "Machine load", columns, rows if recorded else [], summary=summary, alarm="busy",
        intro=("How busy the machine was with other work during each trial: the CPU used by processes "
               "other than tdebench's and the engine's, per sampler interval, and the 1-minute load average "
               "as the trial started and ended."),
        note=(f"Others' CPU: % of one core (100 = one core busy all along). BUSY: more than "
              f"{noise.BUSY_OTHERS_PCT:g}% of one core on average; what to do: {noise.BUSY_ADVICE}."
              + (" Engine and driver CPUs: the plan's pin_cpus as applied, read back from the kernel (an "
                 "embedded engine runs in the driver's process, so both show the engine's CPUs)." if pinned else "")
              + (" Waited for quiet: the seconds the run waited before the trial (the plan's quiet_wait_s) while "
                 f"others used more than {noise.BUSY_OTHERS_PCT:g}% of one core; others' CPU at start: their "
                 "last reading then, above the threshold when the wait ran out." if waited else "")),
        empty="The machine's load was not recorded in this run (tdebench recorded it from a later version on).")
