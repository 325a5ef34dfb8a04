"""Raw measurements grouped into cells, summarized, and compared with the `none` baseline.

A cell is one configuration (engine, memory_mb, encryption, workload, scale: `TrialKey.config`)
× test × step × metric; its values are that step's measurements over all repetitions (and, in
the throughput test, over all streams). Warm-up runs and trials that failed are left out: a
failed trial's measurements are partial and would bias the composite figures. A trial with a
query stopped by the timeout is a failed trial (the runner marks it so).
"""

from __future__ import annotations

import re
import tomllib
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from tdebench.stats import (LOG_MEAN, SUM_RATIO, Overhead, Summary, geomean, median, overheads, paired_overheads,
                            summarize_many)
from tdebench.plan import PAIRED_ORDERS, Group, order_before_recorded
from tdebench.report.data import declared
from tdebench.report.data.declared import Headline
from tdebench.results import Measurement, RunData, TrialKey

BASELINE = "none"
PLACEBO = "placebo"  # the A/A arm (plan key `placebo`): none again, compared with none like an encryption
GEOMEAN_STEP = declared.GEOMEAN_STEP
QUERY_TESTS = declared.QUERY_TESTS
PER_MINUTE = declared.PER_MINUTE
"""The derived rates of a measured window (oltp's TPM and NOPM, Madyatmadja et al. (2021)), as
its workload declares them (`Reporting.per_minute`): rate → the count it is per minute of.
`cell_data` adds them as metrics of the window step, so they are summary records like any other
figure (summary.csv, noise, compare)."""
RATE_UNIT = "/min"
_QUERY_STEP = re.compile(r"q(\d+)")


def scale_text(scale: float) -> str:
    """A scale as people write it: 0.01, 10, 1,000,000 (never 1e+06)."""
    return f"{int(scale):,}" if float(scale).is_integer() else f"{scale:g}"


def scale_label(workload: str, scale: float) -> str:
    """A scale in its workload's words: "sf0.01" (TPC-H), "100,000 rows" (crud), "W=2" (oltp)."""
    known = declared.workload(workload)
    return (known.scale_format if known is not None else "sf{}").format(scale_text(scale))


def engine_label(engine: str, memory_mb: int | None) -> str:
    """An engine as a configuration names it: "duckdb", or "duckdb 64 MB" when the plan gave it
    memory_mb, so that runs without it read exactly as before."""
    return f"{engine} {memory_mb} MB" if memory_mb is not None else engine


def group_label(group: Group) -> str:
    """A comparison group (`plan.comparison_group`) in words: "duckdb tpch sf0.01"."""
    engine, memory_mb, workload, scale = group
    return f"{engine_label(engine, memory_mb)} {workload} {scale_label(workload, scale)}"


@dataclass(frozen=True, order=True)
class CellKey:
    engine: str
    encryption: str
    workload: str
    scale: float
    test: str
    step: str
    metric: str
    memory_mb: int | None = None  # the trial's memory_mb: part of the configuration, so of the comparison
    # a cluster run's hosts where they differ and the plan does not pool them (`host_groups`):
    # the group of hosts alike that measured the cell; None on one machine or when pooled
    host: str | None = None

    @property
    def comparison(self) -> tuple:
        """Everything but the encryption: cells with equal comparison keys are compared (an
        encryption at 64 MB with none at 64 MB, on the same kind of host)."""
        return (self.engine, self.workload, self.scale, self.test, self.step, self.metric, self.memory_mb, self.host)

    @property
    def engine_at_hosts(self) -> str:
        """The engine, and the hosts when hosts that differ are reported apart ("duckdb @ node1"):
        a table's engine column, where two kinds of host would otherwise read as duplicate rows."""
        return self.engine if self.host is None else f"{self.engine} @ {self.host}"

    @property
    def configured(self) -> str:
        """The engine as configured: its name, its memory_mb when the plan gave one, and the hosts
        when hosts that differ are reported apart ("duckdb @ node1")."""
        label = engine_label(self.engine, self.memory_mb)
        return f"{label} @ {self.host}" if self.host is not None else label

    @property
    def label(self) -> str:
        return (f"{self.configured} {self.encryption} {self.workload} {scale_label(self.workload, self.scale)} · "
                f"{self.test} {self.step} {self.metric}")


@dataclass(frozen=True)
class SummaryRecord:
    """One cell's statistics; `overhead` is None for the baseline or when it has no baseline."""

    cell: CellKey
    unit: str
    summary: Summary
    overhead: Overhead | None


def deterministic(record: SummaryRecord, baseline: SummaryRecord) -> bool:
    """A figure without spread: the same value in every trial of both groups (a size that came
    out alike each time, a count). Its difference is exact, so an interval or a p-value would
    only add noise. A size that varies between trials is measured like a time, with its
    interval: MariaDB's database after a load in parts is 332 MiB in some trials and 396 MiB
    in others (a tablespace's 64 MiB extension), in every arm, and calling the difference of
    two such medians exact had printed a -6.3% "overhead" of no encryption at all."""
    return all(r.summary.n > 1 and r.summary.stdev == 0 for r in (record, baseline))


def is_size(record: SummaryRecord) -> bool:
    """A size (bytes), which no adaptive round waits on: more rounds narrow a time's interval,
    while a size that varies does so by the engine's allocation steps."""
    return record.unit == "bytes"


def is_query(step: str) -> bool:
    return _QUERY_STEP.fullmatch(step) is not None


def step_order(step: str) -> tuple[int, int, str]:
    """Queries in numeric order (q2 before q10), then the other steps by name."""
    match = _QUERY_STEP.fullmatch(step)
    return (0, int(match.group(1)), "") if match else (1, 0, step)


def cell_order(cell: CellKey) -> tuple:
    """Report order: by configuration and step, the baseline first among encryptions."""
    return (cell.engine, memory_order(cell.memory_mb), cell.workload, cell.scale, cell.test,
            step_order(cell.step), cell.metric, cell.encryption != BASELINE, cell.encryption)


def memory_order(memory_mb: int | None) -> int:
    """Memory values in ascending order, the engine's default (None) first."""
    return -1 if memory_mb is None else memory_mb


def unit_of(metric: str) -> str:
    """Metric names carry their unit as a suffix; the derived rates are per minute."""
    if metric in PER_MINUTE:
        return RATE_UNIT
    if metric.endswith(("elapsed_s", "cpu_s")):
        return "s"
    if metric.endswith(("_bytes", "_chars")):
        return "bytes"
    return ""


def failed_trials(run: RunData) -> set[TrialKey]:
    """Trials that did not end ok, and trials with a query stopped by the timeout: the runner
    marks those failed already, but a timed-out query's time is only a lower bound, so such a
    trial is kept out of statistics even if it was not."""
    failed = {outcome.trial for outcome in run.trials if outcome.status != "ok"}
    return failed | {m.trial for m in run.measurements if m.answer == "timeout"}


def measured(run: RunData) -> list[Measurement]:
    """The measurements that enter statistics: no warm-ups, no failed trials, and a step that a
    trial measured in several passes (tpch's `passes`) once, with each metric's median over them."""
    failed = failed_trials(run)
    return over_passes([m for m in run.measurements if not m.warmup and m.trial not in failed])


def over_passes(measurements: list[Measurement]) -> list[Measurement]:
    """One measurement per trial, test, step and stream: the passes' median of every metric."""
    passes: dict[tuple, list[Measurement]] = defaultdict(list)
    for m in measurements:
        passes[(m.trial, m.test, m.step, m.stream)].append(m)
    merged = []
    for group in passes.values():
        if len(group) == 1:
            merged.append(group[0])
            continue
        names = dict.fromkeys(name for m in group for name in m.metrics)
        metrics = {name: median([m.metrics[name] for m in group if name in m.metrics]) for name in names}
        merged.append(replace(group[0], metrics=metrics, pass_number=0))
    return merged


MACHINE_KEYS = ("cpu_model", "cpu_flags", "kernel", "engines")
"""What two hosts of a cluster run must share for their figures to be pooled: the CPU and its
crypto instructions, the kernel and the engines' versions (environment.json's `hosts`)."""


def host_groups(hosts: dict[str, dict[str, Any]], pool: bool) -> dict[str, str | None]:
    """Each host's group, as cells are labelled: None for every host when they are all alike
    (MACHINE_KEYS) or the plan pools them (`pool_hosts`); else the hosts alike, named ("node1",
    "node1, node2", "node1 and 4 alike"), each group reported apart."""
    alike: dict[str, list[str]] = defaultdict(list)
    for host, environment in sorted(hosts.items()):
        alike[repr([environment.get(key) for key in MACHINE_KEYS])].append(host)
    if pool or len(alike) <= 1:
        return {host: None for host in hosts}
    named: dict[str, str | None] = {}
    for members in alike.values():
        label = ", ".join(members) if len(members) <= 3 else f"{members[0]} and {len(members) - 1} alike"
        named.update({host: label for host in members})
    return named


@dataclass(frozen=True)
class HostBlocks:
    """Where each trial ran, for a cluster run's statistics: the host is a block, like the round
    (a round's configurations ran on one host, so it pairs them there), and hosts that differ
    are kept apart (`group`)."""

    hosts: dict[TrialKey, str] = field(default_factory=dict)  # "" for a trial of a local run
    groups: dict[str, str | None] = field(default_factory=dict)
    differ: bool = False  # some hosts differ (MACHINE_KEYS), whether or not the plan pools them

    def round_of(self, trial: TrialKey) -> "Round":
        return (self.hosts.get(trial, ""), trial.repetition)

    def group(self, trial: TrialKey) -> str | None:
        return self.groups.get(self.hosts.get(trial, ""))


def host_blocks(run: RunData) -> HostBlocks:
    """The run's hosts (from its trial records) and their groups (from environment.json and the
    plan's pool_hosts); empty for a run on one machine."""
    hosts = {outcome.trial: outcome.host for outcome in run.trials if outcome.host is not None}
    if not hosts:
        return HostBlocks()
    environments = run.environment.get("hosts") or {}
    known = {host: environments.get(host, {}) for host in set(hosts.values())}
    differ = len(set(host_groups(known, pool=False).values())) > 1
    return HostBlocks(hosts, host_groups(known, bool((_stored_plan(run) or {}).get("pool_hosts", False))), differ)


def _cell(trial: TrialKey, test: str, step: str, metric: str, host: str | None = None) -> CellKey:
    return CellKey(trial.engine, trial.encryption, trial.workload, trial.scale, test, step, metric, trial.memory_mb,
                   host)


Unit = tuple[int, str]
"""A paired unit within a round: (stream, step). A query test's composite pairs query q of
stream s under an encryption with the same query of the same stream under `none`."""
Round = tuple[str, int]
"""A round as pairs are made: (host, repetition). A round's configurations ran on one host
("" in a local run), so a cluster run's ratios are all within one host."""


@dataclass
class CellData:
    """One cell's raw values: `values` over repetitions (and streams) as summarized, and the
    same measurements per round (the repetition) and unit for the paired analysis; `how`
    says how a round's units make its ratio (stats.LOG_MEAN for a geometric-mean composite)."""

    values: list[float] = field(default_factory=list)
    rounds: dict[Round, dict[Unit, float]] = field(default_factory=lambda: defaultdict(dict))
    how: str = SUM_RATIO


def _geomean_values(measurements: Iterable[Measurement], blocks: HostBlocks) -> dict[CellKey, CellData]:
    """The derived `geomean` step: per trial and query test, the geometric mean of its
    query times, so every query weighs alike whatever its length. A trial with a zero time
    (a clock too coarse for the query) has no geometric mean and is left out."""
    per_trial: dict[tuple[TrialKey, str], dict[Unit, float]] = defaultdict(dict)
    for m in measurements:
        if m.test in QUERY_TESTS and is_query(m.step) and "elapsed_s" in m.metrics:
            per_trial[(m.trial, m.test)][(m.stream or 0, m.step)] = m.metrics["elapsed_s"]
    groups: dict[CellKey, CellData] = defaultdict(lambda: CellData(how=LOG_MEAN))
    for (trial, test), times in sorted(per_trial.items()):
        if min(times.values()) > 0:
            data = groups[_cell(trial, test, GEOMEAN_STEP, "elapsed_s", blocks.group(trial))]
            data.values.append(geomean(list(times.values())))
            data.rounds[blocks.round_of(trial)] = times
    return groups


def per_minute(m: Measurement, count: str) -> float | None:
    """A count of a measured window per minute of it; None for an empty window."""
    elapsed = m.metrics.get("elapsed_s", 0.0)
    return m.metrics.get(count, 0.0) / elapsed * 60.0 if elapsed > 0 else None


def _with_rates(m: Measurement) -> dict[str, float]:
    """A measurement's metrics, and for a measured window (its workload's `window_step`) the
    rates its workload declares (`Reporting.per_minute`) of the counts it recorded."""
    declaring = declared.workload(m.trial.workload)
    if declaring is None or m.step != declaring.reporting.window_step:
        return m.metrics
    rates = {rate: per_minute(m, count) for rate, count in declaring.reporting.per_minute.items() if count in m.metrics}
    return {**m.metrics, **{rate: value for rate, value in rates.items() if value is not None}}


def cell_data(run: RunData) -> dict[CellKey, CellData]:
    """Every cell's values over repetitions, including the derived geomean step and rates."""
    kept, blocks = measured(run), host_blocks(run)
    trial_order = {trial: rank for rank, trial in enumerate(sorted({m.trial for m in kept}))}  # compared once each
    groups: dict[CellKey, CellData] = defaultdict(CellData)
    # a step's cells, by metric, for every repetition of its configuration: a run has tens of
    # thousands of measurements of a few thousand cells, so each cell's key is made once
    steps: dict[tuple, dict[str, CellData]] = defaultdict(dict)
    for m in sorted(kept, key=lambda m: (trial_order[m.trial], m.test, m.stream or 0, step_order(m.step))):
        host, round_, unit = blocks.group(m.trial), blocks.round_of(m.trial), (m.stream or 0, m.step)
        cells = steps[(m.trial.config, m.test, m.step, host)]
        for metric, value in _with_rates(m).items():
            data = cells.get(metric)
            if data is None:
                data = cells[metric] = groups[_cell(m.trial, m.test, m.step, metric, host)]
            data.values.append(float(value))
            data.rounds[round_][unit] = float(value)
    groups.update(_geomean_values(kept, blocks))
    return groups


def _stored_plan(run: RunData) -> dict[str, Any] | None:
    """The run's plan as TOML data, or None when the stored plan is not TOML."""
    try:
        return tomllib.loads(run.plan_text)
    except tomllib.TOMLDecodeError:
        return None


def run_order(run: RunData) -> str | None:
    """The order the run's plan asked for (its default where it named none), or None when the
    stored plan is not TOML."""
    plan = _stored_plan(run)
    if plan is None:
        return None
    return str(plan.get("order", order_before_recorded(plan.get("cache", "warm"))))


def paired_design(run: RunData) -> bool:
    """Whether a run's repetitions are rounds that ran every configuration side by side: the
    plan's order is lockstep or interleaved (one of them is always the default). Sequential
    runs are compared unpaired."""
    return run_order(run) in PAIRED_ORDERS


LOCKSTEP_RESOURCES = (
    "The configurations of a lockstep group ran side by side, step by step: the machine's CPU "
    "and disk, and an embedded engine's memory (one tdebench process for the whole group), are "
    "the group's, not one configuration's, so they cannot tell the encryptions apart (a server's "
    "memory is its own).")
"""What resource figures mean in a lockstep run, said beside its table and plots."""


def _paired_arrays(baseline: CellData, record: CellData) -> tuple[np.ndarray, np.ndarray] | None:
    """The (rounds, units) arrays of the rounds and units both cells have, or None when fewer
    than two rounds pair up."""
    rounds = sorted(set(baseline.rounds) & set(record.rounds))
    if len(rounds) < 2:
        return None
    units = set.intersection(*(set(baseline.rounds[r]) & set(record.rounds[r]) for r in rounds))
    if not units:
        return None
    ordered = sorted(units)
    base = np.array([[baseline.rounds[r][u] for u in ordered] for r in rounds])
    treat = np.array([[record.rounds[r][u] for u in ordered] for r in rounds])
    return base, treat


def compare(pairs: list[tuple[CellData, CellData]], paired: bool) -> list[Overhead]:
    """The overhead of every (baseline, encryption) pair: from paired rounds where the design
    pairs them and their rounds give finite ratios, else from the groups' medians."""
    results: dict[int, Overhead] = {}
    arrays = {index: found for index, (baseline, record) in enumerate(pairs) if paired
              and (found := _paired_arrays(baseline, record)) is not None}
    compared = paired_overheads([(*arrays[index], pairs[index][1].how) for index in arrays])
    results.update((index, overhead) for index, overhead in zip(arrays, compared) if overhead is not None)
    unpaired = [index for index in range(len(pairs)) if index not in results]
    computed = overheads([(pairs[i][0].values, pairs[i][1].values) for i in unpaired]) if unpaired else []
    results.update(zip(unpaired, computed))
    return [results[index] for index in range(len(pairs))]


def summary_records(run: RunData, keep: Callable[[CellKey], bool] | None = None) -> list[SummaryRecord]:
    """All cells summarized (or those `keep` accepts; a kept cell's baseline need not be kept),
    each encrypted cell with its overhead against `none`, paired by round when the run's order
    ran its configurations in rounds (lockstep, interleaved)."""
    groups = cell_data(run)
    baselines = {cell.comparison: data for cell, data in groups.items() if cell.encryption == BASELINE}
    cells = sorted((cell for cell in groups if keep is None or keep(cell)), key=cell_order)
    summaries = summarize_many([groups[cell].values for cell in cells])
    compared_cells = [cell for cell in cells
                      if cell.encryption != BASELINE and cell.comparison in baselines]
    compared = dict(zip(compared_cells, compare([(baselines[cell.comparison], groups[cell])
                                                 for cell in compared_cells], paired_design(run))))
    return [SummaryRecord(cell=cell, unit=unit_of(cell.metric), summary=summary,
                          overhead=compared.get(cell))
            for cell, summary in zip(cells, summaries)]


def resolution(floor: SummaryRecord) -> float:
    """A run's resolution for one figure, in percent: the farthest bound of its placebo's CI
    from zero. A measured overhead inside that range is indistinguishable from none-vs-none."""
    compared = floor.overhead
    assert compared is not None
    return max(abs(compared.ci_low), abs(compared.ci_high))


def below_resolution(record: SummaryRecord, floor: SummaryRecord | None) -> bool:
    """Whether an encryption's CI overlaps its placebo's: then it is not reported as a cost."""
    compared, placebo = record.overhead, floor.overhead if floor else None
    if compared is None or placebo is None or record.cell.encryption == PLACEBO:
        return False
    return compared.ci_low <= placebo.ci_high and placebo.ci_low <= compared.ci_high


def floors(records: list[SummaryRecord]) -> dict[tuple, SummaryRecord]:
    """The placebo's record of every compared figure, by comparison key."""
    return {r.cell.comparison: r for r in records if r.cell.encryption == PLACEBO and r.overhead}


def headline_records(records: list[SummaryRecord]) -> list[tuple[Headline, SummaryRecord]]:
    """The records behind the labelled headline figures (declared.LABELLED), for every
    configuration whose workload declares them: of each, the first of its steps measured."""
    by_cell = {record.cell: record for record in records}
    chosen = []
    for headline in declared.LABELLED:
        test = headline.test or ""  # a labelled headline names its test (workloads.base.Headline)
        configs = sorted({(c.engine, memory_order(c.memory_mb), c.host or "", c.encryption, c.workload, c.scale,
                           c.memory_mb) for c in by_cell if c.test == test and c.metric == headline.metric
                          and headline in declared.headlines_of(c.workload)})
        for engine, _, hosts, encryption, workload, scale, memory in configs:
            for step in headline.steps or ():
                cell = CellKey(engine, encryption, workload, scale, test, step, headline.metric, memory,
                               hosts or None)
                if cell in by_cell:
                    chosen.append((headline, by_cell[cell]))
                    break
    return chosen
