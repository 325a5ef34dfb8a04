"""Which figures may be called noisy, and which trials ran on a busy machine.

A reader draws conclusions from the headline figures: a test's composite (TPC-H power
geometric mean, throughput total), the load, TPM and NOPM, each crud operation, each backup
and restore, each maintenance operation. A counter (bytes read, characters written, a step's
CPU time) or one query among 22 varies for reasons that change no conclusion, and calling all
of them noisy (835 cells in the demo plan) buried the few that matter under one repeated
advice. So "noisy" is said of headline figures only, here, for every table and finding; every
cell keeps its CV in summary.csv.

A trial is "busy" when processes other than the benchmark's took more than BUSY_OTHERS_PCT
of one core on average while it ran (the sampler's readings, measure/load.py): its timings may
include a neighbour's work. A plan with quiet_wait_s makes the runner wait for a quiet machine
before each trial; the report says how long, and which trials started busy all the same.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from tdebench.measure.load import BUSY_OTHERS_PCT
from tdebench.report.data import declared
from tdebench.report.data.records import BASELINE, PLACEBO, CellKey, SummaryRecord, deterministic, is_size, resolution
from tdebench.plan import Group
from tdebench.stats import NOISY_CV, PAIRED, is_noisy, noise_advice
from tdebench.results import RunData, TrialKey

BUSY_ADVICE = ("stop what else runs on the machine (or give the benchmark cores of its own with "
               "pin_cpus) and run these trials again")
"""What to do about busy trials, in plain words."""


def is_headline(cell: CellKey) -> bool:
    """Whether a cell is one of the headline figures its workload declares (`Reporting.headlines`):
    TPC-H's power and throughput composites, every workload's load, crud's operations, a
    backup's backups and restores, maintenance's operations, oltp's TPM and NOPM."""
    tests = declared.tests_of(cell.workload)
    return any(headline.covers(tests, cell.test, cell.step, cell.metric)
               for headline in declared.headlines_of(cell.workload))


def widest_headlines(run: RunData, records: list[SummaryRecord],
                     tests: Collection[str] = ()) -> dict[Group, tuple[str, float]]:
    """Per comparison group (engine, memory_mb, workload, scale: `plan.comparison_group`), the
    headline overhead with the widest CI, as (label, half-width in percent of the ratio:
    `Overhead.half_width`): what adaptive repetitions wait on. A placebo's width is the
    resolution it gives the run instead (`records.resolution`, its CI's farthest bound from 0):
    a floor of -1.7% [-3.4, +0.1] is ±3.4% to the reader, though its half-width is 1.75, and a
    floor off zero by chance comes back with more rounds. Every headline figure counts
    (the placebo's too), TPM and NOPM included, or only those of `tests` (the plan's
    `target_tests`; "load" is the load, and a backup test covers its sealed variants, as
    "full" does "full+aes-256"); sizes and figures without spread (`records.deterministic`)
    are left out, and so is a group without a headline overhead. A figure of one round has no interval
    yet (its "interval" is the point): its width is infinite, so a plan with repetitions = 1
    adds rounds instead of stopping at once."""
    baselines = {r.cell.comparison: r for r in records if r.cell.encryption == BASELINE}
    widths: dict[Group, list[tuple[float, str]]] = defaultdict(list)
    for record in records:
        compared = record.overhead
        if (compared is None or not is_headline(record.cell)
                or (tests and _test_named(record.cell) not in tests)
                or is_size(record) or deterministic(record, baselines[record.cell.comparison])):
            continue
        cell = record.cell
        width = (math.inf if compared.measured_once or math.isnan(compared.half_width)
                 else resolution(record) if record.cell.encryption == PLACEBO else compared.half_width)
        widths[(cell.engine, cell.memory_mb, cell.workload, cell.scale)].append((width, cell.label))
    return {group: (label, width) for group, (width, label) in ((g, max(w)) for g, w in widths.items())}


def _test_named(cell: CellKey) -> str:
    """The test a plan names for a cell: a sealed backup's recorded test ("full+aes-256") is
    its method's ("full"), as the backup workload splits it."""
    if cell.workload == declared.BACKUP.name:
        return declared.BACKUP.split_test(cell.test)[0]
    return cell.test


def widest_headline(run: RunData, records: list[SummaryRecord]) -> tuple[str, float] | None:
    """The widest of `widest_headlines`, over every group; None when the run has no headline
    overhead at all."""
    return widest_of(widest_headlines(run, records))


def widest_of(widths: dict[Group, tuple[str, float]]) -> tuple[str, float] | None:
    """The widest of the groups' widest headline figures (`widest_headlines`), or None."""
    return max(widths.values(), key=lambda item: (item[1], item[0])) if widths else None


def noisy(record: SummaryRecord) -> bool:
    """The noise flag of a figure itself (summary.csv): a headline figure whose CV exceeds
    stats.NOISY_CV."""
    return record.summary.noisy and is_headline(record.cell)


def comparison_noise(record: SummaryRecord, baseline: SummaryRecord) -> tuple[str, float] | None:
    """Why a compared figure is noisy, as (whose, CV), or None: a paired comparison by the
    spread of its round ratios ("noisy rounds"), which is what its CI is made of; an unpaired
    one by the noisier group's CV ("noisy", "noisy baseline")."""
    compared = record.overhead
    if compared is not None and compared.method == PAIRED:
        return ("noisy rounds", compared.spread) if compared.noisy else None
    groups = [r for r in (record, baseline) if r.summary.noisy]
    if not groups:
        return None
    worst = max(groups, key=lambda r: r.summary.cv)
    return ("noisy" if worst is record else "noisy baseline"), worst.summary.cv


@dataclass(frozen=True)
class NoisyFigure:
    """A headline figure that is noisy or has outliers, in its table's units."""

    label: str
    unit: str  # "s", "bytes" or "" (a rate), as the summary's
    n: int
    median: float
    cv: float
    outliers: int | None  # None where not counted

    @property
    def noisy(self) -> bool:
        return is_noisy(self.cv)


def noisy_figures(records: Iterable[SummaryRecord]) -> list[NoisyFigure]:
    """Every headline figure that is noisy or has outliers, the noisiest first. Sizes are left
    out: a size varies by the engine's allocation steps, which neither a quieter machine nor
    more rounds change (the advice this list leads to); "Database size" shows their spread."""
    paired = {r.cell.comparison for r in records if r.overhead is not None and r.overhead.method == PAIRED}
    figures = []
    for r in records:
        if not is_headline(r.cell) or is_size(r):
            continue
        if r.cell.comparison not in paired:
            if r.summary.noisy or r.summary.outliers:
                figures.append(NoisyFigure(r.cell.label, r.unit, r.summary.n, r.summary.median, r.summary.cv,
                                           r.summary.outliers))
        elif r.overhead is not None and r.overhead.noisy:  # paired: the comparison, not the figure, counts
            figures.append(NoisyFigure(f"{r.cell.label} ÷ {BASELINE} by round", r.unit, r.overhead.n_treatment,
                                       r.summary.median, r.overhead.spread, None))
    return sorted(figures, key=lambda f: (not f.noisy, -f.cv if f.noisy else 0.0))


def noise_sentence(figures: list[NoisyFigure], order: str, worst_shown: int = 3) -> str | None:
    """The noise advice for a run in `order`, once for the whole report, with the worst figures named."""
    flagged = [f for f in figures if f.noisy]
    if not flagged:
        return None
    worst = "; ".join(f"{f.label} (CV {f.cv * 100:.0f}%)" for f in flagged[:worst_shown])
    return (f"{len(flagged)} headline figure(s) are noisy (CV > {NOISY_CV * 100:g}%): {noise_advice(order)}; "
            f"worst: {worst}. See “Noisy figures”.")


@dataclass(frozen=True)
class TrialLoad:
    """How busy the machine was around one trial, and where the trial was pinned."""

    trial: TrialKey
    others_mean: float | None  # other processes' CPU, % of one core, mean of the trial's samples
    others_max: float | None
    load_start: float | None
    load_end: float | None
    engine_cpus: tuple[int, ...] | None
    driver_cpus: tuple[int, ...] | None
    # the wait for a quiet machine before the trial (TrialOutcome.quiet_waited_s, quiet_others_pct):
    # None where the plan asked for none (quiet_wait_s = 0) or the run is older
    waited_s: float | None = None
    others_at_start: float | None = None

    @property
    def busy(self) -> bool:
        return self.others_mean is not None and self.others_mean > BUSY_OTHERS_PCT

    @property
    def started_busy(self) -> bool:
        """The wait for a quiet machine ran out: the trial started while others were busy."""
        return self.others_at_start is not None and self.others_at_start > BUSY_OTHERS_PCT


def trial_loads(run: RunData) -> list[TrialLoad]:
    """Every finished trial's load, in trial order; readings are None where none was recorded
    (format 1, `results.upgrade`) and for trials shorter than one sampler interval."""
    others: dict[TrialKey, list[float]] = defaultdict(list)
    for sample in run.samples:
        if sample.others_cpu_pct is not None:
            others[sample.trial].append(sample.others_cpu_pct)
    loads = []
    for outcome in sorted(run.trials, key=lambda o: o.trial):
        readings = others.get(outcome.trial)
        loads.append(TrialLoad(outcome.trial, sum(readings) / len(readings) if readings else None,
                               max(readings) if readings else None, outcome.load_start, outcome.load_end,
                               outcome.engine_cpus, outcome.driver_cpus, outcome.quiet_waited_s,
                               outcome.quiet_others_pct))
    return loads


def busy_sentence(loads: list[TrialLoad], named: int = 10) -> str | None:
    """The busy trials, named (the busiest first), and the advice once."""
    busy = sorted((load for load in loads if load.busy), key=lambda load: -(load.others_mean or 0.0))
    if not busy:
        return None
    names = ", ".join(f"{load.trial.id} ({load.others_mean:.0f}%)" for load in busy[:named])
    more = f" and {len(busy) - named} more" if len(busy) > named else ""
    return (f"{len(busy)} of {len(loads)} trial(s) ran while other processes used more than "
            f"{BUSY_OTHERS_PCT:g}% of one core on average: {names}{more}. Their timings may include "
            f"another program's work: {BUSY_ADVICE}. See “Machine load”.")


def quiet_sentence(loads: list[TrialLoad]) -> str | None:
    """How long the run waited for other processes to quiet down before its trials (the plan's
    quiet_wait_s), and which trials still started busy when the wait ran out; None when it never
    waited (or did not record it)."""
    waits = [load.waited_s for load in loads if load.waited_s]
    gave_up = [load for load in loads if load.started_busy]
    if not waits and not gave_up:
        return None
    sentence = (f"{len(waits)} of {len(loads)} trial(s) waited for other processes to quiet down before they "
                f"started (quiet_wait_s; median {statistics.median(waits):.0f} s, longest {max(waits):.0f} s)"
                if waits else "No trial had to wait for other processes to quiet down")
    if not gave_up:
        return sentence + ", and every one then started on a quiet machine."
    names = ", ".join(f"{load.trial.id} ({load.others_at_start:.0f}%)" for load in gave_up[:3])
    more = f" and {len(gave_up) - 3} more" if len(gave_up) > 3 else ""
    return (f"{sentence}; {len(gave_up)} started while others still used more than {BUSY_OTHERS_PCT:g}% of one "
            f"core when the wait ran out: {names}{more}. See “Machine load”.")


def busy_headline(loads: list[TrialLoad]) -> str | None:
    """For the report's first lines, when any trial ran on a busy machine: how many, and how
    busy (the median of their other processes' CPU), since that decides how wide the run's
    intervals came out; None when none did."""
    busy = [load.others_mean for load in loads if load.busy and load.others_mean is not None]
    if not busy:
        return None
    return (f"The machine was busy: {len(busy)} of {len(loads)} trials ran while other processes used "
            f"{statistics.median(busy):.0f}% of one core (median), so these intervals may be wider than a "
            f"quiet machine's (“Machine load”).")


def findings(figures: list[NoisyFigure], loads: list[TrialLoad], order: str) -> list[str]:
    """The noise and busy-machine sentences, each at most once (the run's `order` decides the advice)."""
    return [sentence for sentence in (busy_sentence(loads), quiet_sentence(loads), noise_sentence(figures, order))
            if sentence]
