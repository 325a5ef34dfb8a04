"""`tdebench compare A B`: what changed from run A (the baseline) to run B (the new one).

Two runs are independent: different trials, perhaps another machine, engine version or
kernel. For every configuration (engine, memory_mb, encryption, workload, scale) and headline
figure (report/noise.is_headline) that both runs measured, a comparison states

- the change of the median, B against A: `stats.overheads` on the two runs' values (one per
  trial) with A as the baseline: the ratio of the medians − 1, a bootstrap CI and a
  Mann–Whitney U p-value, exactly as an unpaired overhead within a run;
- the change of the overhead against `none`: each run's overhead as its own report states it
  (paired within the run where its order paired it) and `stats.overhead_change`, the change of
  the ratio with the two log ratios' standard errors added in quadrature.

A change is read from its interval: "slower" (an overhead: "higher") when its 95% CI lies
above 0, "faster" ("lower") below 0, "within noise" when it includes 0; "no interval" when a
run has fewer than 3 trials of the figure (stats.MIN_BOOTSTRAP); "exact" for a figure without
measurement noise (a size). The p-value stands beside it: with 3 trials against 3 the exact
test cannot go below 0.10, so a rule on p would never flag anything in small runs.
`regressions` (the CLI's `--fail-above`) applies the same reading.

Its sections keep the report's contract (report/sections/__init__.py) with the comparison for their
argument, listed once in `VIEWS`, and compare.md and compare.html are drawn by the report's own
writers (report/writers/: `report.write_comparison`); the terminal's summary, a block per
configuration, is `render_text`'s.
"""

from __future__ import annotations

import functools

import math
import statistics
import textwrap
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any

from tdebench.measure.environment import cpu_text, differences
from tdebench.plan import PlanError, as_stored, parse_plan
from tdebench.report.data import declared
from tdebench.report.summaries import findings as report_findings
from tdebench.report.summaries.noise import is_headline
from tdebench.report.data.records import (BASELINE, PER_MINUTE, PLACEBO, RATE_UNIT, CellKey, SummaryRecord, cell_data,
                                          deterministic, engine_label, failed_trials, floors, memory_order, resolution,
                                          scale_label, step_order, summary_records)
from tdebench.report.summaries.cipher_cost import raw_speed
from tdebench.report.sections.document import CompareReport
from tdebench.report.data.encryptions import Known, known
from tdebench.report.sections import Block, Bullets, Content, Paragraph, Source, block
from tdebench.report.summaries.tables import Column, Table, config_columns, num, text, uses_memory
from tdebench.report.data import units
from tdebench.report.data.units import display_unit, interval, number, p_value, percent
from tdebench.stats import MIN_BOOTSTRAP, SIGNIFICANCE, Overhead, overhead_change, overheads
from tdebench.results import CipherSpeed, EncryptionFacts, RunData
from tdebench.store import PLAN

COMPARE_MD, COMPARE_HTML, COMPARE_CSV = "compare.md", "compare.html", "compare.csv"

SLOWER, FASTER = "slower", "faster"
HIGHER, LOWER = "higher", "lower"
WITHIN_NOISE, NO_INTERVAL, EXACT = "within noise", "no interval", "exact"
TIMED = "s"  # the unit of the figures that can get slower; sizes ("bytes") cannot
LISTED = 12
"""Configurations named in one findings sentence; compare.csv has every figure."""


@dataclass(frozen=True)
class Side:
    """One run of a comparison: A, the baseline, or B, the new one."""

    label: str
    directory: Path
    run: RunData
    records: dict[CellKey, SummaryRecord]  # the headline figures, as the run's report states them
    values: dict[CellKey, list[float]]  # their values as the run's summary has them, one per trial

    @property
    def baselines(self) -> dict[tuple, SummaryRecord]:
        return {cell.comparison: r for cell, r in self.records.items() if cell.encryption == BASELINE}


def side(label: str, directory: Path, run: RunData) -> Side:
    records = summary_records(run, keep=is_headline)
    data = cell_data(run)
    return Side(label, directory, run, {r.cell: r for r in records}, {r.cell: data[r.cell].values for r in records})


def figure_name(cell: CellKey) -> str:
    """A headline figure as tables name it: "power geomean", "database size" (report/data/records.py's
    labelled headlines), else its test and step ("full backup", "encrypt rewrite"; crud's "insert")."""
    labelled = declared.labelled_headline(cell.workload, cell.test, cell.step, cell.metric)
    if labelled is not None:
        return labelled.label
    if cell.metric in PER_MINUTE:  # oltp's "stress TPM"
        return f"{cell.test} {cell.metric.upper()}"
    return cell.test if cell.step == "total" else f"{cell.test} {cell.step}"


def _figure_order(cell: CellKey) -> tuple:
    return (declared.label_order(figure_name(cell)), cell.test, step_order(cell.step), cell.metric)


Config = tuple[str, int | None, str, str, float]  # engine, memory_mb, encryption, workload, scale


def config_of(cell: CellKey) -> Config:
    return (cell.engine, cell.memory_mb, cell.encryption, cell.workload, cell.scale)


def config_order(config: Config) -> tuple:
    engine, memory, encryption, workload, scale = config
    return (engine, memory_order(memory), workload, scale, encryption != BASELINE, encryption)


def config_label(config: Config) -> str:
    """e.g. "duckdb aes-256-gcm tpch sf0.01", "duckdb 64 MB none tpch sf0.1"."""
    engine, memory, encryption, workload, scale = config
    return f"{engine_label(engine, memory)} {encryption} {workload} {scale_label(workload, scale)}"


def _order(cell: CellKey) -> tuple:
    return (*config_order(config_of(cell)), *_figure_order(cell))


def _exact(before: float, after: float, n_before: int, n_after: int) -> Overhead:
    """A change without noise: after ÷ before − 1 in percent, the interval at the point."""
    pct = (after / before - 1.0) * 100.0 if before != 0 else math.nan
    return Overhead(pct=pct, ci_low=pct, ci_high=pct, p_value=math.nan, n_baseline=n_before, n_treatment=n_after)


def _reading(change: Overhead, exact: bool, up: str, down: str) -> str:
    if exact:
        return EXACT
    if math.isnan(change.ci_low):
        return NO_INTERVAL
    if change.ci_low > 0.0:
        return up
    if change.ci_high < 0.0:
        return down
    return WITHIN_NOISE


@dataclass(frozen=True)
class FigureChange:
    """One headline figure of one configuration in both runs."""

    a: SummaryRecord
    b: SummaryRecord
    median: Overhead  # B's median against A's; NaN bounds and p without an interval
    exact: bool  # a figure without measurement noise in both runs (records.deterministic)
    overhead: Overhead | None  # the change of the overhead against none; None for none itself
    overhead_exact: bool
    floor_a: SummaryRecord | None  # each run's placebo of this figure, if it ran one
    floor_b: SummaryRecord | None

    @property
    def cell(self) -> CellKey:
        return self.b.cell

    @property
    def unit(self) -> str:
        return self.b.unit

    @property
    def name(self) -> str:
        return figure_name(self.cell)

    @property
    def where(self) -> str:
        return config_label(config_of(self.cell))

    @property
    def reading(self) -> str:
        return _reading(self.median, self.exact, SLOWER if self.unit == TIMED else HIGHER,
                        FASTER if self.unit == TIMED else LOWER)

    @property
    def overhead_reading(self) -> str | None:
        if self.overhead is None:
            return None
        return _reading(self.overhead, self.overhead_exact, HIGHER, LOWER)


def _median_changes(pairs: list[tuple[Side, Side, CellKey]]) -> list[tuple[Overhead, bool]]:
    """Each figure's median change, B against A, and whether it is exact: exact figures from
    their medians, the others by `stats.overheads` in one batch; a figure with fewer than
    MIN_BOOTSTRAP trials in a run has no interval (the bootstrap of one value is the value
    itself, of two far too narrow)."""
    exact = [deterministic(b.records[cell], a.records[cell]) for a, b, cell in pairs]
    noisy = [index for index, is_exact in enumerate(exact) if not is_exact]
    computed = dict(zip(noisy, overheads([(pairs[i][0].values[pairs[i][2]], pairs[i][1].values[pairs[i][2]])
                                          for i in noisy]) if noisy else []))
    changes = []
    for index, (a, b, cell) in enumerate(pairs):
        if exact[index]:
            before, after = a.records[cell].summary, b.records[cell].summary
            changes.append((_exact(before.median, after.median, before.n, after.n), True))
            continue
        change = computed[index]
        if min(change.n_baseline, change.n_treatment) < MIN_BOOTSTRAP:
            change = Overhead(pct=change.pct, ci_low=math.nan, ci_high=math.nan, p_value=math.nan,
                              n_baseline=change.n_baseline, n_treatment=change.n_treatment)
        changes.append((change, False))
    return changes


def _overhead_change(a: Side, b: Side, cell: CellKey) -> tuple[Overhead | None, bool]:
    before, after = a.records[cell], b.records[cell]
    if before.overhead is None or after.overhead is None:
        return None, False
    if deterministic(before, a.baselines[cell.comparison]) and deterministic(after, b.baselines[cell.comparison]):
        return _exact(1.0 + before.overhead.pct / 100.0, 1.0 + after.overhead.pct / 100.0,
                      before.overhead.n_treatment, after.overhead.n_treatment), True
    return overhead_change(before.overhead, after.overhead), False


def _only(mine: Side, other: Side) -> list[str]:
    """What `mine` measured and `other` did not: whole configurations by name, then single
    figures of configurations both have."""
    theirs = {config_of(cell) for cell in other.records}
    missing = sorted((cell for cell in mine.records if cell not in other.records), key=_order)
    whole = sorted({config_of(cell) for cell in missing} - theirs, key=config_order)
    return [config_label(config) for config in whole] + [
        f"{config_label(config_of(cell))} {figure_name(cell)}" for cell in missing if config_of(cell) in theirs]


def plan_settings(run: RunData) -> dict[str, Any] | None:
    """The run's plan with its defaults filled in (plan.parse_plan; its order the one it ran in,
    plan.as_stored), as nested settings: what may differ between two runs beyond their
    configurations (repetitions, order, cache, passes, …), or None when the stored plan no longer
    parses here. Engines, encryptions and scales are left out: they are the configurations, and
    "only in A/B" names those."""
    try:
        plan = as_stored(parse_plan(run.plan_text, str(run.directory / PLAN), here=False))
    except PlanError:
        return None

    def value(item: Any) -> Any:
        if item is None:
            return "not set"
        return asdict(item) if is_dataclass(item) and not isinstance(item, type) else item

    settings = {field.name: value(getattr(plan, field.name)) for field in fields(plan)
                if field.name not in ("name", "text", "engines", "workloads")}
    settings["workloads"] = {w.name: {"tests": w.tests, "streams": w.streams, "query_timeout_s": w.query_timeout_s,
                                      **{key: value(option) for key, option in w.options}}
                             for w in plan.workloads}
    return {"plan": settings}


def run_differences(a: RunData, b: RunData) -> list[str]:
    """What differs between the runs' environments (measure/environment.differences: CPU,
    cores, kernel, engine and package versions, Python, governor, …), then between their
    plans' settings ("plan.repetitions: 3 → 5")."""
    found = differences(a.environment, b.environment)
    settings = [plan_settings(run) for run in (a, b)]
    if settings[0] is not None and settings[1] is not None:
        return found + differences(settings[0], settings[1])
    unparsed = [label for label, setting in zip("AB", settings) if setting is None]
    whose = "A's and B's stored plans do" if len(unparsed) == 2 else f"{unparsed[0]}'s stored plan does"
    return found + [f"plan: {whose} not parse here, so the plans' settings were not compared"]


HOST_SPEED_TOLERANCE = 0.10
"""Two runs whose raw cipher speeds differ by more than this fraction (the median of B ÷ A over
every cipher and page size both measured) come from different hosts, as do two whose CPU model
or crypto instructions differ: the same cipher on the same CPU measured 0.74× as fast an hour
apart on this project's virtual machine, moved to another physical host between two runs."""


@dataclass(frozen=True)
class RawSpeed:
    """One cipher at one page size as both runs measured it (`CipherSpeed`, MiB/s; a cluster
    run's hosts' median, `cipher_cost.raw_speed`)."""

    cipher: str
    page_bytes: int
    a: float
    b: float

    @property
    def ratio(self) -> float:
        return self.b / self.a

    @property
    def text(self) -> str:
        """e.g. "raw aes-256-gcm, 256 KiB pages: 3,406 → 2,523 MiB/s (0.74×)"."""
        page = (f"{self.page_bytes >> 20} MiB" if self.page_bytes >= 1 << 20 else f"{self.page_bytes >> 10} KiB"
                if self.page_bytes >= 1 << 10 else f"{self.page_bytes} bytes")
        return (f"raw {self.cipher}, {page} pages: {number(self.a)} → {number(self.b)} MiB/s "
                f"({units.ratio(self.ratio)})")


@dataclass(frozen=True)
class Hosts:
    """The machines the two runs measured on: each one's CPU (`cpu_text`), why they are
    different hosts (empty when nothing both recorded says so) and every raw cipher speed both
    measured."""

    a: str
    b: str
    differ: list[str]
    speeds: dict[tuple[str, int], RawSpeed]

    def speed_of(self, facts: EncryptionFacts | None, a_ciphers: Iterable[CipherSpeed]) -> RawSpeed | None:
        """The raw speed behind an encryption (its `facts`, as run A recorded them) at the page
        size A measured nearest its own, where both runs measured it there; None for `none`, the
        placebo and a cipher either run did not measure."""
        nearest = raw_speed(a_ciphers, facts.cipher, facts.page_bytes) if facts and facts.encrypts else None
        return self.speeds.get((nearest.cipher, nearest.chunk_bytes)) if nearest else None


def _cpu_model(environment: dict[str, Any]) -> str | None:
    """The run's CPU model; a cluster run's hosts' where they differ, joined; None if not recorded."""
    hosts = environment.get("hosts")
    if "cpu_model" not in environment and isinstance(hosts, dict):
        return " / ".join(dict.fromkeys(str(h["cpu_model"]) for h in hosts.values() if h.get("cpu_model"))) or None
    model = environment.get("cpu_model")
    return str(model) if model else None


def _cpu_flags(environment: dict[str, Any]) -> dict[str, bool] | None:
    flags = environment.get("cpu_flags")
    return flags if isinstance(flags, dict) and flags else None


def hosts(a: RunData, b: RunData) -> Hosts:
    """Whether A and B come from different hosts (`HOST_SPEED_TOLERANCE`): another CPU model,
    other crypto instructions, or raw cipher speeds more than 10% apart. A run that did not
    record a CPU, its flags or a cipher both measured is not called different for it."""
    speeds = {}
    for cipher, chunk in sorted({(s.cipher, s.chunk_bytes) for s in a.ciphers if s.available}
                                & {(s.cipher, s.chunk_bytes) for s in b.ciphers if s.available}):
        found = [raw_speed(run.ciphers, cipher, chunk) for run in (a, b)]
        if found[0] and found[1] and found[0].mib_per_s and found[1].mib_per_s:
            speeds[(cipher, chunk)] = RawSpeed(cipher, chunk, found[0].mib_per_s, found[1].mib_per_s)
    cpus = [cpu_text(run.environment) for run in (a, b)]
    differ = []
    models = [_cpu_model(run.environment) for run in (a, b)]
    if models[0] is not None and models[1] is not None and models[0] != models[1]:
        differ.append(f"CPU {models[0]} → {models[1]}")
    flags = [_cpu_flags(run.environment) for run in (a, b)]
    if flags[0] is not None and flags[1] is not None:
        changed = [f"{flag} {'yes' if flags[0][flag] else 'no'} → {'yes' if flags[1][flag] else 'no'}"
                   for flag in sorted(flags[0].keys() & flags[1].keys()) if flags[0][flag] != flags[1][flag]]
        if changed:
            differ.append(f"CPU flags {', '.join(changed)}")
    if speeds:
        ratio = statistics.median(speed.ratio for speed in speeds.values())
        if abs(ratio - 1.0) > HOST_SPEED_TOLERANCE:
            differ.append(f"raw cipher speed B ÷ A {units.ratio(ratio)} (the median of the {len(speeds)} cipher and "
                          f"page-size figures both measured; more than {HOST_SPEED_TOLERANCE:.0%} apart)")
    return Hosts(cpus[0], cpus[1], differ, speeds)


@dataclass(frozen=True)
class Comparison:
    a: Side
    b: Side
    differences: list[str]
    only_a: list[str]
    only_b: list[str]
    changes: list[FigureChange]
    hosts: Hosts

    def speed_of(self, cell: CellKey) -> RawSpeed | None:
        """The raw cipher speed behind a compared figure's encryption, in A and in B."""
        return self.hosts.speed_of(self._a_encryptions.get(cell.engine, cell.encryption), self.a.run.ciphers)

    @functools.cached_property
    def _a_encryptions(self) -> Known:
        return known(self.a.run)

    def regressions(self, threshold_pct: float) -> list[FigureChange]:
        """The headline figures that got worse in B by more than `threshold_pct` with their
        whole 95% CI on that side of 0 (`--fail-above`): a timed figure slower (median change >
        threshold, CI low > 0), a rate (TPM, NOPM) lower (change < −threshold, CI high < 0).
        Sizes, overheads and figures without an interval (fewer than MIN_BOOTSTRAP trials in a
        run) never count."""
        return [change for change in self.changes
                if (change.unit == TIMED and change.median.pct > threshold_pct and change.median.ci_low > 0.0)
                or (change.unit == RATE_UNIT and change.median.pct < -threshold_pct and change.median.ci_high < 0.0)]


def compare_runs(a: Side, b: Side) -> Comparison:
    """Every headline figure both runs measured, compared, in report order."""
    common = sorted(set(a.records) & set(b.records), key=_order)
    medians = _median_changes([(a, b, cell) for cell in common])
    floors_a, floors_b = floors(list(a.records.values())), floors(list(b.records.values()))
    changes = []
    for cell, (median, exact) in zip(common, medians):
        overhead, overhead_exact = _overhead_change(a, b, cell)
        changes.append(FigureChange(a.records[cell], b.records[cell], median, exact, overhead, overhead_exact,
                                    floors_a.get(cell.comparison), floors_b.get(cell.comparison)))
    return Comparison(a, b, run_differences(a.run, b.run), _only(a, b), _only(b, a), changes, hosts(a.run, b.run))


# --- findings ---------------------------------------------------------------------------


def _interval(change: Overhead) -> str:
    return units.change(change.pct, change.ci_low, change.ci_high)


def _grouped(changes: Iterable[FigureChange], show: Callable[[FigureChange], str]) -> str:
    """Changes by configuration, e.g. "duckdb none tpch sf0.01: power geomean +10.0% [+8.9, +11.1],
    data load elapsed +9.8% [+9.1, +10.6]; duckdb aes-256-gcm …", at most LISTED configurations."""
    groups: dict[str, list[str]] = defaultdict(list)
    for change in changes:
        groups[change.where].append(show(change))
    parts = [f"{where}: {', '.join(shown)}" for where, shown in groups.items()]
    if len(parts) > LISTED:
        parts = parts[:LISTED] + [f"and {len(parts) - LISTED} more configurations ({COMPARE_CSV} has every figure)"]
    return "; ".join(parts)


def _span(values: list[float]) -> str:
    """"+9.6% to +10.4%", or one figure when they round alike."""
    low, high = percent(min(values)), percent(max(values))
    return low if low == high else f"{low} to {high}"


def _share(part: int, whole: int) -> str:
    """"every timed figure", or "9 of the 18 timed figures"."""
    return "every timed figure" if part == whole else f"{part} of the {whole} timed figures"


def _count(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _median_sentences(changes: list[FigureChange]) -> list[str]:
    timed = [c for c in changes if c.unit == TIMED]
    sentences = []
    for reading, words in ((SLOWER, "Slower in B beyond noise (the 95% CI of the change above 0)"),
                           (FASTER, "Faster in B beyond noise (the 95% CI of the change below 0)")):
        moved = [c for c in timed if c.reading == reading]
        if moved:
            sentences.append(f"{words}: {_grouped(moved, lambda c: f'{c.name} {_interval(c.median)}')}.")
    within = [c for c in timed if c.reading == WITHIN_NOISE]
    if within:
        largest = max(within, key=lambda c: abs(c.median.pct))
        sentences.append(f"Within noise (the CI includes 0): {_share(len(within), len(timed))}; the "
                         f"largest change {largest.where} {largest.name} {_interval(largest.median)}.")
    single = [c for c in timed if c.reading == NO_INTERVAL]
    if single:
        span = _span([c.median.pct for c in single])
        sentences.append(f"No interval for {_count(len(single), 'timed figure')}: a run has fewer than "
                         f"{MIN_BOOTSTRAP} trials of {'it' if len(single) == 1 else 'them'}, too few for a bootstrap "
                         f"interval, so {'its change' if len(single) == 1 else 'their changes'} ({span}) cannot be "
                         "told from noise: raise repetitions.")
    rates = [c for c in changes if c.unit == RATE_UNIT]
    for reading, words in ((LOWER, "Throughput lower in B beyond noise (the 95% CI of the change below 0)"),
                           (HIGHER, "Throughput higher in B beyond noise (the 95% CI of the change above 0)")):
        moved = [c for c in rates if c.reading == reading]
        if moved:
            sentences.append(f"{words}: {_grouped(moved, lambda c: f'{c.name} {_interval(c.median)}')}.")
    sizes = [c for c in changes if c.unit not in (TIMED, RATE_UNIT)]
    grown = [c for c in sizes if c.exact and round(c.median.pct, 6) != 0]
    if grown:
        unit, factor = display_unit(grown[0].unit)
        sentences.append("Changed in size: " + _grouped(grown, lambda c: (
            f"{c.name} {number(c.a.summary.median * factor)} → {number(c.b.summary.median * factor)} {unit} "
            f"({percent(c.median.pct)})")) + ".")
    elif sizes and all(c.exact for c in sizes):
        sentences.append(f"Every size ({_count(len(sizes), 'figure')}) is the same in both runs.")
    return sentences


def _overhead_sentences(changes: list[FigureChange]) -> list[str]:
    compared = [c for c in changes if c.overhead is not None]
    if not compared:
        return []
    sentences = []

    def shown(c: FigureChange) -> str:
        assert c.overhead is not None and c.a.overhead is not None and c.b.overhead is not None
        change = f"exact, {percent(c.overhead.pct)}" if c.overhead_exact else f"change {_interval(c.overhead)}"
        return f"{c.name} from {percent(c.a.overhead.pct)} in A to {percent(c.b.overhead.pct)} in B ({change})"

    moved = [c for c in compared if c.overhead_reading in (HIGHER, LOWER)
             or (c.overhead_exact and round(c.overhead.pct, 6) != 0)]  # type: ignore[union-attr]
    if moved:
        sentences.append(f"The overhead against {BASELINE} changed beyond noise: {_grouped(moved, shown)}.")
    noisy = [c for c in compared if not c.overhead_exact]
    within = [c for c in noisy if c.overhead_reading == WITHIN_NOISE]
    if within:
        largest = max(within, key=lambda c: abs(c.overhead.pct))  # type: ignore[union-attr]
        sentences.append(f"Overheads against {BASELINE} within noise of A's: {_share(len(within), len(noisy))}; "
                         f"the largest change {largest.where} {shown(largest)}.")
    single = [c for c in compared if c.overhead_reading == NO_INTERVAL]
    if single:
        sentences.append(f"No interval for the change of {_count(len(single), 'overhead')}: a run has too "
                         f"few trials of {'it' if len(single) == 1 else 'them'} or of {BASELINE} (unpaired: fewer "
                         f"than {MIN_BOOTSTRAP}; paired: one round).")
    return sentences


def _together_sentences(changes: list[FigureChange]) -> list[str]:
    """Where every timed figure of an engine, none included, moved the same way while its
    overheads did not: then the engine or the machine changed, not the cost of encryption."""
    groups: dict[tuple, list[FigureChange]] = defaultdict(list)
    for change in changes:
        cell = change.cell
        groups[(cell.engine, memory_order(cell.memory_mb), engine_label(cell.engine, cell.memory_mb), cell.workload,
                cell.scale)].append(change)
    sentences = []
    for (_, _, engine, workload, scale), group in sorted(groups.items()):
        timed = [c for c in group if c.unit == TIMED and c.reading != NO_INTERVAL]
        readings = {c.reading for c in timed}
        if (len(readings) != 1 or readings & {WITHIN_NOISE, EXACT}
                or not any(c.cell.encryption == BASELINE for c in timed)
                or any(c.overhead_reading in (HIGHER, LOWER) for c in group)):
            continue
        sentences.append(f"Every timed figure of {engine} ({workload} {scale_label(workload, scale)}), {BASELINE} "
                         f"included, got {readings.pop()} in B ({_span([c.median.pct for c in timed])}) while its "
                         f"overheads against {BASELINE} stayed within noise: what changed is the engine or the "
                         "machine, not the cost of its encryption.")
    return sentences


def _resolution_sentence(changes: list[FigureChange]) -> str:
    """Each run's resolution of the overheads compared: its placebo's farthest CI bound from
    zero, per engine and figure (records.resolution), or that neither run ran a placebo."""
    seen: dict[tuple, str] = {}
    for change in changes:
        if change.overhead is None or change.overhead_exact or change.cell.comparison in seen:
            continue
        each = [f"±{resolution(floor):.1f}% in {label}"
                for label, floor in (("A", change.floor_a), ("B", change.floor_b)) if floor is not None]
        if each:
            cell = change.cell
            seen[cell.comparison] = (f"{engine_label(cell.engine, cell.memory_mb)} {cell.workload} "
                                     f"{scale_label(cell.workload, cell.scale)} {change.name} {', '.join(each)}")
    if not seen:
        return (f"Neither run has a {PLACEBO} arm (plan key placebo = true) for the overheads compared, so neither "
                "states its noise floor; the intervals are all there is.")
    return (f"Resolution of the overheads ({PLACEBO}: {BASELINE} against {BASELINE}, per run): "
            f"{'; '.join(seen.values())}. It bounds the noise of an overhead within its run; the change of a "
            "median between runs has its own interval.")


def _p_sentence(changes: list[FigureChange]) -> str | None:
    sizes = {(c.median.n_baseline, c.median.n_treatment) for c in changes
             if c.unit == TIMED and c.reading not in (NO_INTERVAL, EXACT)}
    weak = sorted(size for size in sizes if report_findings.smallest_p(*size) >= SIGNIFICANCE)
    if not weak:
        return None
    n_a, n_b = weak[-1]
    return (f"With {n_a} trials against {n_b} the exact Mann–Whitney test cannot reach p < 0.05 (its smallest p "
            f"is {report_findings.smallest_p(n_a, n_b):.2f}), so the medians' changes are read from their bootstrap "
            "CIs, which with so few trials cannot reach beyond the trials' range and may be too narrow. More "
            "repetitions make both trustworthy.")


def comparison_findings(comparison: Comparison) -> list[str]:
    """The comparison in plain words: what got slower or faster beyond noise, what stayed within
    it, sizes, overheads, a change shared by a whole engine, each run's resolution, and what
    weakens the figures (few trials, failed trials, differing setups)."""
    changes = comparison.changes
    if not changes:
        return ["No headline figure of the same configuration is in both runs: nothing to compare."]
    configs = {config_of(c.cell) for c in changes}
    sentences = [f"{_count(len(changes), 'headline figure')} of {_count(len(configs), 'configuration')} are "
                 "in both runs; B is compared with A, the baseline."]
    if comparison.differences:
        keys = sorted({difference.split(":")[0] for difference in comparison.differences})
        shown = ", ".join(keys[:8]) + (f" and {len(keys) - 8} more" if len(keys) > 8 else "")
        sentences.append(f"The runs differ in {shown} (see “What differs”): any change below may come from them.")
    sentences += _median_sentences(changes) + _together_sentences(changes) + _overhead_sentences(changes)
    sentences.append(_resolution_sentence(changes))
    weak = _p_sentence(changes)
    if weak:
        sentences.append(weak)
    for each in (comparison.a, comparison.b):
        failed = len(failed_trials(each.run))
        if failed:
            sentences.append(f"Run {each.label} has {_count(failed, 'failed trial')}, left out of its figures "
                             f"(its report names {'it' if failed == 1 else 'them'}).")
    return sentences


# --- tables ---------------------------------------------------------------------------



def _bounds(prefix: str, change: Overhead | None) -> dict[str, Any]:
    if change is None:
        return {}
    return {f"{prefix}_pct": change.pct, f"{prefix}_ci_low": change.ci_low, f"{prefix}_ci_high": change.ci_high}


def _rows(comparison: Comparison) -> list[dict[str, Any]]:
    return [_row(change, comparison.speed_of(change.cell)) for change in comparison.changes]


def _row(change: FigureChange, speed: RawSpeed | None) -> dict[str, Any]:
    """One figure's raw values (compare.csv) and its display texts (the tables), with the raw
    speed of its encryption's cipher in both runs where both measured it."""
    cell, median = change.cell, change.median
    unit, factor = display_unit(change.unit)
    row: dict[str, Any] = {
        "engine": cell.engine, "memory_mb": cell.memory_mb, "encryption": cell.encryption,
        "workload": cell.workload, "scale": cell.scale, "figure": change.name, "test": cell.test,
        "step": cell.step, "metric": cell.metric, "unit": change.unit, "display_unit": unit,
        "n_a": change.a.summary.n, "n_b": change.b.summary.n,
        "median_a": change.a.summary.median, "median_b": change.b.summary.median,
        "shown_a": change.a.summary.median * factor, "shown_b": change.b.summary.median * factor,
        **_bounds("change", median), "change_p": median.p_value, "change_reading": change.reading,
        "change_ci": "exact" if change.exact else interval(median.ci_low, median.ci_high, percent),
        "p_shown": None if change.exact else median.p_value,
    }
    for label, record in (("a", change.a), ("b", change.b)):
        row.update(_bounds(f"overhead_{label}", record.overhead))
        if record.overhead is not None:
            exact = change.overhead_exact
            row[f"overhead_{label}_shown"] = percent(record.overhead.pct) + (
                "" if exact else f" {interval(record.overhead.ci_low, record.overhead.ci_high, percent)}")
    if change.overhead is not None:
        row.update(_bounds("overhead_change", change.overhead))
        row.update({"overhead_change_p": change.overhead.p_value, "overhead_reading": change.overhead_reading,
                    "overhead_change_ci": "exact" if change.overhead_exact else interval(
                        change.overhead.ci_low, change.overhead.ci_high, percent),
                    "overhead_p_shown": None if change.overhead_exact else change.overhead.p_value})
    for label, floor in (("a", change.floor_a), ("b", change.floor_b)):
        if floor is not None and change.overhead is not None and not change.overhead_exact:
            row[f"resolution_{label}"] = resolution(floor)
    if speed is not None:
        row.update({"raw_cipher": speed.cipher, "raw_page_bytes": speed.page_bytes, "raw_mib_per_s_a": speed.a,
                    "raw_mib_per_s_b": speed.b, "raw_ratio": speed.ratio, "raw_text": speed.text})
    return row


CSV_KEYS = ("engine", "memory_mb", "encryption", "workload", "scale", "figure", "test", "step", "metric", "unit",
            "n_a", "n_b", "median_a", "median_b", "change_pct", "change_ci_low", "change_ci_high", "change_p",
            "change_reading", "overhead_a_pct", "overhead_a_ci_low", "overhead_a_ci_high", "overhead_b_pct",
            "overhead_b_ci_low", "overhead_b_ci_high", "overhead_change_pct", "overhead_change_ci_low",
            "overhead_change_ci_high", "overhead_change_p", "overhead_reading", "resolution_a", "resolution_b",
            "raw_cipher", "raw_page_bytes", "raw_mib_per_s_a", "raw_mib_per_s_b")


def csv_table(comparison: Comparison) -> Table:
    """compare.csv: every figure in both runs, raw (seconds, bytes, full precision)."""
    return Table("Comparison", tuple(Column(key, key) for key in CSV_KEYS), _rows(comparison))


MEDIAN_NOTE = (
    "Change = median in B ÷ median in A − 1, over each run's trials (a run's figure has one value per trial); "
    "95% CI a bootstrap of that ratio, both runs resampled independently; p a two-sided Mann–Whitney U test. "
    "Reading: slower or faster when the CI excludes 0, within noise when it includes 0, no interval when a run "
    f"has fewer than {MIN_BOOTSTRAP} trials of the figure, exact for a figure without measurement noise (a size). "
    "Medians in the unit shown.")
OVERHEAD_NOTE = (
    "Each run's overhead against none as its own report states it (paired by round where its order was lockstep "
    "or interleaved). Change = (1 + B's overhead) ÷ (1 + A's overhead) − 1: how much more (or less) the "
    "configuration costs against none in B than in A, about the difference in points for small overheads; 95% CI "
    "from the two overheads' standard errors on log scale, added in quadrature (docs/method.md). Resolution: each "
    "run's placebo, the farthest bound of its CI from 0. Raw cipher B ÷ A: the encryption's cipher as each run's "
    "host encrypted memory with it (“Raw cipher speed”), where both measured it.")


def median_table(comparison: Comparison, rows: list[dict[str, Any]]) -> Table:
    memory = uses_memory(c.cell.memory_mb for c in comparison.changes)
    columns = config_columns(memory) + (
        Column("figure", "figure"), Column("display_unit", "unit"), num("shown_a", "A (median)"),
        num("shown_b", "B (median)"), num("change_pct", "change", percent), num("change_ci", "95% CI", text),
        Column("change_reading", "reading"), num("p_shown", "p", p_value), num("n_a", "n A", text),
        num("n_b", "n B", text))
    return Table("Change of the median, B against A", columns, rows, note=MEDIAN_NOTE,
                 empty="No headline figure of the same configuration is in both runs.")


def overhead_change_table(comparison: Comparison, rows: list[dict[str, Any]]) -> Table:
    memory = uses_memory(c.cell.memory_mb for c in comparison.changes)
    compared = [row for row in rows if "overhead_change_pct" in row]
    floors_shown = any("resolution_a" in row or "resolution_b" in row for row in compared)
    columns = config_columns(memory) + (
        Column("figure", "figure"), num("overhead_a_shown", "A overhead", text),
        num("overhead_b_shown", "B overhead", text), num("overhead_change_pct", "change", percent),
        num("overhead_change_ci", "95% CI", text), Column("overhead_reading", "reading"),
        num("overhead_p_shown", "p", p_value))
    if floors_shown:
        columns += (num("resolution_a", "resolution A", _plus_minus),
                    num("resolution_b", "resolution B", _plus_minus))
    if any("raw_ratio" in row for row in compared):
        columns += (num("raw_ratio", "raw cipher B ÷ A", units.ratio),)
    return Table(f"Change of the overhead against {BASELINE}", columns, compared, note=OVERHEAD_NOTE,
                 empty=f"No overhead against {BASELINE} is in both runs.")


def _plus_minus(value: float | None) -> str:
    return "–" if value is None or math.isnan(value) else f"±{value:.1f}%"


# --- the document -----------------------------------------------------------------------


SAME = ("The runs' environments and plan settings agree on everything both recorded (the time, the load average "
        "and the output's file system aside).")


def _differences_section(comparison: Comparison) -> Content:
    """What differs between the runs' environments and plans, or that nothing does."""
    found = comparison.differences
    return Content(blocks=(Block("What differs between the runs",
                                 (Bullets(tuple(found)) if found else Paragraph(SAME),)),))


def only_lines(comparison: Comparison) -> list[str]:
    """"only in A: …", then "only in B: …"."""
    return [f"only in A: {item}" for item in comparison.only_a] + [f"only in B: {item}" for item in comparison.only_b]


def _only_section(comparison: Comparison) -> Content | None:
    only = only_lines(comparison)
    return Content(blocks=(Block("Only in one run", (Bullets(tuple(only)),)),)) if only else None


def _findings_section(comparison: Comparison) -> Content:
    return Content(blocks=(Block("Findings", (Bullets(tuple(comparison_findings(comparison))),)),))


def cipher_lines(comparison: Comparison) -> list[str]:
    """The raw speed of each compared encryption's cipher, A → B, where both runs measured it."""
    speeds = (comparison.speed_of(change.cell) for change in comparison.changes)
    return list(dict.fromkeys(speed.text for speed in speeds if speed is not None))


def _ciphers_section(comparison: Comparison) -> Content | None:
    lines = cipher_lines(comparison)
    return Content(blocks=(Block("Raw cipher speed, A → B", (Bullets(tuple(lines)),)),)) if lines else None


def _tables_section(comparison: Comparison) -> Content:
    """The changes of the medians and of the overheads as tables, every figure in compare.csv."""
    rows = _rows(comparison)
    return Content(blocks=(block(median_table(comparison, rows)), block(overhead_change_table(comparison, rows))),
                   csvs=((COMPARE_CSV, csv_table(comparison)),))


VIEWS: tuple[Source[[Comparison]], ...] = (
    Source(_differences_section), Source(_only_section), Source(_findings_section), Source(_ciphers_section),
    Source(_tables_section, csvs=(COMPARE_CSV,)),
)
"""Every section of the comparison after its runs, in reading order, with the report's contract
(report/sections/__init__.py): each makes its content from the comparison (None: nothing to show), and
compare.md and compare.html walk them through the report's own writers (markdown.py, html.py)."""

WRITTEN = (COMPARE_MD, COMPARE_HTML, *(name for view in VIEWS for name in view.csvs))
"""Every file `report.write_comparison` puts into its directory, and nothing else."""


def _run_line(each: Side, cpu: str) -> str:
    environment = each.run.environment
    role = "the baseline" if each.label == "A" else "the new run"
    when = environment.get("timestamp_utc", "an unknown time")
    host = environment.get("hostname")
    return (f"{each.label} ({role}): {each.directory}, plan “{report_findings.overview(each.run).plan_name}”, "
            f"started {when}" + (f" on {host}" if host else "") + f" ({cpu}).")


def _hosts_text(found: Hosts) -> str:
    if not found.differ:
        return ""
    return (f"Different hosts: {'; '.join(found.differ)}. A change of a median below may be the host's, not the "
            "software's; an overhead against none was measured on one host in each run, and the raw cipher's ratio "
            "stands beside it.")


def document(comparison: Comparison) -> CompareReport:
    found = comparison.hosts
    return CompareReport(
        title="tdebench compare: B against A" + (", from different hosts" if found.differ else ""),
        hosts=_hosts_text(found),
        runs=[_run_line(comparison.a, found.a), _run_line(comparison.b, found.b)],
        entries=tuple(content for view in VIEWS if (content := view(comparison)) is not None))


def render_text(report: CompareReport, comparison: Comparison, width: int = 80) -> str:
    """The comparison for a terminal, `width` columns wide and never broken inside a word: the
    runs, what differs and the findings as wrapped bullets, then one block per configuration,
    a line per figure: the change of its median with its CI and reading, and where it has one,
    its overhead against none in A and in B. The full tables (n, p, resolution) are in the
    Markdown (`--markdown`) and in compare.md, .html and .csv (`--out`)."""
    def bullets(items: Iterable[str]) -> list[str]:
        return [textwrap.fill(item, width=width, initial_indent="- ", subsequent_indent="  ",
                              break_long_words=False, break_on_hyphens=False) for item in items]

    lines = [report.title]
    if report.hosts:
        lines += [textwrap.fill(report.hosts, width=width, break_long_words=False, break_on_hyphens=False)]
    lines += ["", *bullets(report.runs), "", "What differs between the runs:"]
    lines += bullets(comparison.differences or [SAME])
    only = only_lines(comparison)
    if only:
        lines += ["", "Only in one run:", *bullets(only)]
    lines += ["", "Findings:", *bullets(comparison_findings(comparison)), ""]
    lines += bullets(["Per configuration and figure: the change of the median, B against A, with its 95% CI and "
                      "reading; then the overhead against none in A → B, under the raw speed of the "
                      "encryption's cipher where both runs measured it."])
    rows = _rows(comparison)
    figure_width = max((len(row["figure"]) for row in rows), default=0)
    ci_width = max((len(row["change_ci"]) for row in rows if row["change_ci"] != "exact"), default=0)
    for config, changes in _by_config(comparison.changes, rows):
        lines += ["", config] + [f"  {text}" for text in dict.fromkeys(row["raw_text"] for row in changes
                                                                          if "raw_text" in row)]
        for row in changes:
            ci = "" if row["change_ci"] == "exact" else row["change_ci"]
            line = f"  {row['figure']:<{figure_width}}  {percent(row['change_pct']):>7} {ci:<{ci_width}}  " \
                   f"{row['change_reading']}"
            if "overhead_change_pct" in row:
                overhead = (f"overhead {percent(row.get('overhead_a_pct'))} → {percent(row.get('overhead_b_pct'))}"
                            f" ({row['overhead_reading']})")
                line = f"{line}; {overhead}" if len(line) + len(overhead) + 2 <= width else f"{line}\n    {overhead}"
            lines.append(line)
    return "\n".join(lines)


def _by_config(changes: list[FigureChange], rows: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The rows grouped by their configuration's label, in the comparison's order."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for change, row in zip(changes, rows):
        grouped.setdefault(change.where, []).append(row)
    return list(grouped.items())
