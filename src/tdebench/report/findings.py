"""The report's words: what was run, what went wrong, and what the numbers say.

Sentences are generated from the statistics so a reader gets the conclusion without
reading a table — and so the wording can never be more confident than the data: a
difference is only called a cost when the interval excludes zero and p < 0.05.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from typing import Any

from tdebench.report.records import BASELINE, HEADLINES, SummaryRecord, headline_records
from tdebench.report.tables import p_value, percent
from tdebench.stats import SIGNIFICANCE, noise_advice
from tdebench.store import RunData, TrialKey


@dataclass(frozen=True)
class Overview:
    """What was run, as far as the plan and the stored records tell."""

    plan_name: str
    engines: list[str]
    encryptions: list[str]
    workloads: list[str]
    scales: list[float]
    repetitions: int
    cache: str
    order: str

    @property
    def paragraph(self) -> str:
        scales = ", ".join(f"{scale:g}" for scale in self.scales)
        return (f"Plan “{self.plan_name}” ran the {', '.join(self.workloads)} workload at "
                f"scale {scales} on {', '.join(self.engines)}, with encryption "
                f"{', '.join(self.encryptions)} (“{BASELINE}” is the baseline), "
                f"{self.repetitions} repetitions of every cell, cache {self.cache}, "
                f"order {self.order}.")


def _plan_setting(plan: dict[str, Any], key: str) -> Any:
    """A setting at the top of the plan or in its [plan] table: the plan format may use either."""
    nested = plan.get("plan")
    return plan.get(key, nested.get(key) if isinstance(nested, dict) else None)


def _trial_keys(run: RunData) -> set[TrialKey]:
    records = [*run.measurements, *run.verdicts, *run.trials]
    return {record.trial for record in records}


def overview(run: RunData) -> Overview:
    """Engines, encryptions and scales come from the records (what really ran); name,
    cache and order from the plan, falling back to the trials' own cache setting."""
    try:
        plan = tomllib.loads(run.plan_text)
    except tomllib.TOMLDecodeError:
        plan = {}
    trials = _trial_keys(run)
    encryptions = sorted({t.encryption for t in trials}, key=lambda e: (e != BASELINE, e))
    caches = sorted({outcome.cache for outcome in run.trials})
    return Overview(
        plan_name=str(_plan_setting(plan, "name") or run.directory.name),
        engines=sorted({t.engine for t in trials}),
        encryptions=encryptions,
        workloads=sorted({t.workload for t in trials}),
        scales=sorted({t.scale for t in trials}),
        repetitions=int(_plan_setting(plan, "repetitions") or max((t.repetition for t in trials), default=0)),
        cache=str(_plan_setting(plan, "cache") or "/".join(caches) or "unknown"),
        order=str(_plan_setting(plan, "order") or "unknown"),
    )


def smallest_p(n1: int, n2: int) -> float:
    """The smallest two-sided exact Mann–Whitney U p-value possible with these group sizes:
    when it is not below 0.05, no result can be significant however large the effect."""
    return min(1.0, 2.0 / math.comb(n1 + n2, n1))


def _n_text(n_treatment: int, n_baseline: int) -> str:
    return f"n={n_treatment}" if n_treatment == n_baseline else f"n={n_treatment} vs {n_baseline}"


def overhead_sentence(phrase: str, record: SummaryRecord, baseline: SummaryRecord) -> str:
    """e.g. "duckdb aes-256-gcm costs +3.1% [1.2, 5.0] on the power test (p=0.01, n=20)"."""
    compared = record.overhead
    assert compared is not None
    cell = record.cell
    who = f"{cell.engine} {cell.encryption}"
    where = f"{phrase} ({cell.workload} sf{cell.scale:g})"
    interval = f"{percent(compared.pct)} [{compared.ci_low:.1f}, {compared.ci_high:.1f}]"
    stats = f"p={p_value(compared.p_value)}, {_n_text(compared.n_treatment, compared.n_baseline)}"
    if compared.significant and compared.pct > 0:
        sentence = f"{who} costs {interval} {where} ({stats})."
    elif compared.significant:
        sentence = (f"{who} measures {interval} {where} ({stats}): lower than without encryption, "
                    "which is unexpected; suspect the baseline (cache, order, noise).")
    else:
        sentence = f"{who}: no significant difference {where}: {interval} ({stats})."
    noisy = [r for r in (record, baseline) if r.summary.noisy]
    if noisy:
        sentence += f" Noisy ({noisy[0].cell.encryption}): {noise_advice(noisy[0].summary.cv)}."
    return sentence


def findings(records: list[SummaryRecord]) -> list[str]:
    """Plain-language findings for every headline figure, then a word on statistical power."""
    baselines = {r.cell.comparison: r for r in records if r.cell.encryption == BASELINE}
    chosen = [(headline, record) for headline, record in headline_records(records) if record.overhead]
    chosen.sort(key=lambda item: (item[1].cell.engine, item[1].cell.workload, item[1].cell.scale,
                                  item[1].cell.encryption, HEADLINES.index(item[0])))
    sentences = [overhead_sentence(headline.phrase, record, baselines[record.cell.comparison])
                 for headline, record in chosen]
    if not sentences:
        sentences.append("No overhead figures: no configuration was measured both with and "
                         f"without encryption (“{BASELINE}”).")
    noisy = [r for r in records if r.summary.noisy]
    if noisy:
        worst = max(noisy, key=lambda r: r.summary.cv)
        sentences.append(f"{len(noisy)} cell(s) are noisy, the worst {worst.cell.label}: "
                         f"{noise_advice(worst.summary.cv)}. See “Noisy cells and outliers”.")
    sizes = {(r.overhead.n_treatment, r.overhead.n_baseline) for r in records if r.overhead}
    weak = sorted(size for size in sizes if smallest_p(*size) >= SIGNIFICANCE)
    if weak:
        n1, n2 = weak[-1]
        sentences.append(f"With {_n_text(n1, n2)} repetitions the smallest possible p of the exact "
                         f"test is {smallest_p(n1, n2):.2f}, so timings cannot differ significantly: "
                         "raise repetitions (4 against 4 can reach p=0.03).")
    return sentences


def alerts(run: RunData) -> list[str]:
    """What a reader must see first: failed trials, wrong answers, encryption not as expected,
    and cold-cache runs whose cache was not really dropped."""
    messages = [f"Trial {o.trial.id} FAILED: {o.error or 'no error recorded'}"
                for o in sorted(run.trials, key=lambda o: o.trial) if o.status != "ok"]
    wrong = sorted({m.trial.id for m in run.measurements if m.answer == "failed"})
    messages += [f"Wrong query answers in trial {trial}: its timings measure a wrong result."
                 for trial in wrong]
    messages += [f"Trial {v.trial.id}: at-rest verdict {v.verdict!r}, expected {v.expected!r}"
                 + (f" (first canary at {v.first_hit})" if v.first_hit else "")
                 for v in sorted(run.verdicts, key=lambda v: v.trial) if not v.as_expected]
    not_dropped = [o for o in run.trials if o.cache == "cold" and not o.cache_dropped]
    if not_dropped:
        messages.append(f"{len(not_dropped)} cold-cache trial(s) could not drop the OS page cache "
                        "(needs root): their timings are warmer than asked.")
    return messages


def verdict_summary(run: RunData) -> str:
    """One sentence on the at-rest checks, including the positive control of the baseline."""
    encrypted = [v for v in run.verdicts if v.expected == "encrypted"]
    baseline = [v for v in run.verdicts if v.expected == "plaintext"]
    parts = []
    if encrypted:
        bad = [v for v in encrypted if not v.as_expected]
        parts.append("every encrypted trial clean" if not bad else
                     f"{len(bad)} of {len(encrypted)} encrypted trials NOT clean")
    else:
        parts.append("no encrypted trial was checked")
    if baseline:
        blind = [v for v in baseline if not v.as_expected]
        parts.append("every baseline showed its canaries (positive control)" if not blind else
                     f"{len(blind)} of {len(baseline)} baselines did not show their canaries: "
                     "the scan may be blind, so clean verdicts prove less")
    else:
        parts.append("no baseline was checked, so there is no positive control")
    sentence = "; ".join(parts)
    return sentence[0].upper() + sentence[1:] + "."
