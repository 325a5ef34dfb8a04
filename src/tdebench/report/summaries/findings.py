"""The report's words: what was run, what went wrong, and what the numbers say.

Sentences are generated from the statistics so a reader gets the conclusion without
reading a table — and so the wording can never be more confident than the data: a
difference is only called a cost when the interval excludes zero and p < 0.05.
"""

from __future__ import annotations

import math
import statistics
import tomllib
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from tdebench.plan import DEFAULT_REPETITIONS, finished_rounds, order_before_recorded
from tdebench.report.data import declared
from tdebench.report.summaries import noise
from tdebench.report.data.declared import Headline
from tdebench.report.data.encryptions import known
from tdebench.report.data.records import (BASELINE, GEOMEAN_STEP, PLACEBO, HostBlocks, SummaryRecord, below_resolution,
                                          deterministic, engine_label, floors, headline_records, host_blocks, is_query,
                                          is_size, memory_order, resolution, scale_label, scale_text, step_order)
from tdebench.report.data.units import change, display_unit, duration, number, p_value, percent, ratio_percent
from tdebench.stats import PAIRED, SIGNIFICANCE, UNPAIRED, minimum_detectable_effect
from tdebench.results import NOT_VERIFIED, TRANSIENT_CANARIES, Resumed, RunData, Stopping, TrialKey, Verdict


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
    stopping: Stopping | None = None
    resumes: tuple[Resumed, ...] = ()
    imported: tuple[str, ...] = ()  # the console clients whose logs `tdebench import` read
    remote: tuple[str, ...] = ()  # the engines the plan reached by url (servers tdebench did not start)
    hosts: str = ""  # a cluster run: where its trials ran (hosts_sentence)
    # each comparison group's rounds where adaptive rounds were added but never stopped (no
    # Stopping record: the run was interrupted, or is still running); () otherwise
    unstopped: tuple[int, ...] = ()

    @property
    def paragraph(self) -> str:
        scales = ", ".join(scale_text(scale) for scale in self.scales)
        text = (f"Plan “{self.plan_name}” ran the {', '.join(self.workloads)} workload at "
                f"scale {scales} on {', '.join(self.engines)}, with encryption "
                f"{', '.join(self.encryptions)} (“{BASELINE}” is the baseline), "
                f"{self._repetitions}, cache {self.cache}, "
                f"order {self.order}.")
        more = ([stopping_sentence(self.stopping)] if self.stopping else []) + (
            [resumed_sentence(self.resumes)] if self.resumes else []) + (
            [imported_sentence(self.imported)] if self.imported else []) + (
            [remote_sentence(self.remote)] if self.remote else []) + ([self.hosts] if self.hosts else []) + (
            [UNSTOPPED] if self.unstopped else [])
        return " ".join([text, *more])

    @property
    def _repetitions(self) -> str:
        rounds = tuple(self.stopping.group_rounds.values()) if self.stopping else self.unstopped
        fewest = min(rounds, default=None)
        if fewest and fewest < self.repetitions:  # adaptive rounds ended apart, group by group
            return f"{fewest}–{self.repetitions} repetitions per cell (rounds added per comparison group)"
        return f"{self.repetitions} repetitions of every cell"


UNSTOPPED = ("Adaptive repetitions had not stopped when these trials were stored (the run was interrupted, or "
             "is still running): each group's rounds are those it finished.")


def imported_sentence(tools: tuple[str, ...]) -> str:
    """What an imported run's figures are (`tdebench import`): whose timing, what was not checked."""
    whose = {"sqlcmd": "the server's own CPU and elapsed time (sqlcmd, SET STATISTICS TIME)",
             "sqlplus": "client-side elapsed time (sqlplus, SET TIMING ON)",
             "mysql": "client-side elapsed time (mysql client, -vvv)"}
    return (f"Imported from {', '.join(tools)} console logs of the script kit (tdebench import): "
            f"{'; '.join(whose.get(tool, tool) for tool in tools)}; answers not checked and "
            "no at-rest verdict (tdebench verify checks the data files copied off the server).")


def _counted(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def resumed_sentence(resumes: tuple[Resumed, ...]) -> str:
    """How often an interrupted run was continued (`tdebench run --resume`), e.g. "The run was
    interrupted and resumed 1 time; 6 trials kept from before the interruption, 1 incomplete
    trial dropped and run again."."""
    before = "the interruption" if len(resumes) == 1 else "the last interruption"
    dropped = sum(resumed.dropped for resumed in resumes)
    retried = sum(resumed.retried for resumed in resumes)
    again = f", {_counted(retried, 'failed trial')} run again" if retried else ""
    return (f"The run was interrupted and resumed {_counted(len(resumes), 'time')}; "
            f"{_counted(resumes[-1].kept, 'trial')} kept from before {before}, "
            f"{_counted(dropped, 'incomplete trial')} dropped and run again{again}.")


def hosts_sentence(blocks: HostBlocks) -> str:
    """Where a cluster run's trials ran and what that means for its overheads ("" on one machine)."""
    hosts = sorted(set(blocks.hosts.values()))
    if not hosts:
        return ""
    text = (f"The trials ran on {_counted(len(hosts), 'host')} of a cluster ({', '.join(hosts)}), each round of "
            "a comparison group on one host, so every overhead is a ratio measured within one host.")
    groups = sorted({group for group in blocks.groups.values() if group is not None})
    if groups:
        return (f"{text} The hosts differ in CPU model, flags, kernel or engine versions, so each kind is reported "
                f"apart, as “engine @ hosts”: {'; '.join(groups)} (the plan's pool_hosts = true would pool them).")
    if blocks.differ:
        return f"{text} Hosts that differ in CPU model, flags, kernel or engine versions are pooled: pool_hosts = true."
    return text


def stopping_sentence(stopping: Stopping) -> str:
    """Why an adaptive run stopped adding rounds, e.g. "Adaptive repetitions stopped after 9
    rounds: target reached (widest headline CI ±1.8%, duckdb aes-256-gcm … power geomean;
    target ±2%).", naming each group's count when the groups ended apart ("… stopped after 14
    rounds for duckdb tpch sf0.01 and 6 rounds for sqlite tpch sf0.01: …")."""
    widest = (f"widest headline CI ±{stopping.widest_ci_pct:.1f}%, {stopping.widest}; "
              if stopping.widest else "")
    counts = sorted(stopping.group_rounds.items(), key=lambda item: (-item[1], item[0]))  # most rounds first
    rounds = (" and ".join(f"{n} round{'' if n == 1 else 's'} for {label}" for label, n in counts)
              if len({n for _, n in counts}) > 1 else f"{stopping.rounds} rounds")
    waited_on = f" on {', '.join(stopping.target_tests)}" if stopping.target_tests else ""
    return (f"Adaptive repetitions stopped after {rounds}: {stopping.reason} "
            f"({widest}target ±{stopping.target_ci_pct:g}%{waited_on}).")


def _plan_setting(plan: dict[str, Any], key: str) -> Any:
    """A setting at the top of the plan or in its [plan] table: the plan format may use either."""
    nested = plan.get("plan")
    return plan.get(key, nested.get(key) if isinstance(nested, dict) else None)


def _trial_keys(run: RunData) -> set[TrialKey]:
    return ({m.trial for m in run.measurements} | {v.trial for v in run.verdicts}
            | {t.trial for t in run.trials})


def remote_sentence(engines: tuple[str, ...]) -> str:
    """How the figures of servers reached by url were taken, which differs from a server
    tdebench starts: no process of theirs to read counters from, and no files of theirs to scan
    unless the plan named a data_path."""
    return (f"{', '.join(engines)} {'was' if len(engines) == 1 else 'were'} reached by url (a server tdebench did "
            "not start): timings are client-side, over the connection; CPU and I/O are the server's own "
            "counters (the server_* metrics) where it exposes them, never tdebench's; at rest a trial is "
            f"{NOT_VERIFIED} unless the plan named a data_path to scan.")


def _remote_engines(plan: dict[str, Any]) -> tuple[str, ...]:
    tables = plan.get("engines")
    return tuple(sorted({str(table.get("name")) for table in tables if isinstance(table, dict) and "url" in table})
                 if isinstance(tables, list) else ())


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
    planned = int(_plan_setting(plan, "repetitions") or 0)
    group_rounds = finished_rounds(run)
    # rounds past the plan's without a Stopping record: adaptive rounds that never stopped
    unstopped = (tuple(sorted(group_rounds.values())) if run.stopping is None
                 and max(group_rounds.values(), default=0) > (planned or DEFAULT_REPETITIONS) else ())
    return Overview(
        plan_name=str(_plan_setting(plan, "name") or run.directory.name),
        engines=sorted({t.engine for t in trials}),
        encryptions=encryptions,
        workloads=sorted({t.workload for t in trials}),
        scales=sorted({t.scale for t in trials}),
        repetitions=(run.stopping.rounds if run.stopping else max(unstopped) if unstopped else
                     planned or max((t.repetition for t in trials), default=0)),
        cache=str(_plan_setting(plan, "cache") or "/".join(caches) or "unknown"),
        order=str(_plan_setting(plan, "order") or order_before_recorded(str(_plan_setting(plan, "cache") or "warm"))),
        stopping=run.stopping,
        resumes=tuple(run.resumes),
        imported=tuple(sorted({m.imported_from for m in run.measurements if m.imported_from})),
        remote=_remote_engines(plan),
        hosts=hosts_sentence(host_blocks(run)),
        unstopped=unstopped,
    )


def smallest_p(n1: int, n2: int) -> float:
    """The smallest two-sided exact Mann–Whitney U p-value possible with these group sizes:
    when it is not below 0.05, no result can be significant however large the effect."""
    return min(1.0, 2 / math.comb(n1 + n2, n1))  # int / int: 0.0, not OverflowError, for large groups


def _n_text(n_treatment: int, n_baseline: int, method: str = UNPAIRED) -> str:
    if method == PAIRED:
        return f"{n_treatment} round{'' if n_treatment == 1 else 's'}"
    return f"n={n_treatment}" if n_treatment == n_baseline else f"n={n_treatment} vs {n_baseline}"


def _exact_text(name: str, record: SummaryRecord, baseline: SummaryRecord) -> str:
    """e.g. "database size +2.0% (13.73 → 14.01 MiB)"."""
    compared = record.overhead
    assert compared is not None
    unit, factor = display_unit(record.unit)
    before, after = baseline.summary.median * factor, record.summary.median * factor
    return f"{name} {percent(compared.pct)} ({number(before)} → {number(after)} {unit})".replace(" )", ")")


def _noise_mark(record: SummaryRecord, baseline: SummaryRecord) -> str:
    """"noisy, CV 29%" (report/noise.comparison_noise), or nothing."""
    found = noise.comparison_noise(record, baseline)
    return "" if found is None else f"{found[0]}, CV {found[1] * 100:.0f}%"


def figure_text(name: str, record: SummaryRecord, baseline: SummaryRecord, with_n: bool = True,
                floor: SummaryRecord | None = None) -> str:
    """One headline figure, compactly, e.g. "power test +3.1% [+1.2, +5.0] (p=0.01, n=20,
    significant)"; an interval spanning zero just says "no significant difference", one that
    overlaps the placebo's (`floor`) says "below this run's resolution (±x%)", and a
    deterministic figure only states the change."""
    if deterministic(record, baseline):
        return _exact_text(name, record, baseline)
    compared = record.overhead
    assert compared is not None
    interval = _change(record)
    spans_zero = compared.ci_low <= 0.0 <= compared.ci_high
    unresolved = not spans_zero and below_resolution(record, floor)
    once = math.isnan(compared.ci_low) or math.isnan(compared.ci_high)  # one measurement: no interval, no test
    details = [] if spans_zero or unresolved or once else [f"p={p_value(compared.p_value)}"]
    if with_n:
        details.append(_n_text(compared.n_treatment, compared.n_baseline, compared.method))
    if unresolved:
        assert floor is not None
        details.append(f"below this run's resolution (±{resolution(floor):.1f}%)")
    elif compared.significant:
        details.append("significant")
    elif spans_zero:
        details.append("no significant difference")
    inside = ", ".join(details)
    mark = _noise_mark(record, baseline)
    if mark:
        inside = f"{inside}; {mark}" if inside else mark
    text = f"{name} {interval}" + (f" ({inside})" if inside else "")
    if compared.significant and compared.pct < 0 and not unresolved and record.cell.encryption != PLACEBO:
        text += (": lower than without encryption, beyond the noise floor, so a real effect (where it arises: "
                 "below)" if floor is not None and floor.overhead is not None else
                 ": lower than without encryption, with no placebo to measure the noise floor; suspect the "
                 "baseline (cache, order, noise)")
    return text


def encryption_sentence(who: str, figures: list[tuple[str, SummaryRecord, SummaryRecord]],
                        floor_of: dict[tuple, SummaryRecord] | None = None) -> str:
    """Every headline figure of one encryption in one bullet, e.g. "sqlite sqlcipher (n=3):
    power test +190.6% [83.4, 421.7] (p=0.10, …), throughput …, database size +2.0% (…)."."""
    timed = [record.overhead for _, record, baseline in figures
             if record.overhead and not deterministic(record, baseline)]
    sizes = {(o.n_treatment, o.n_baseline, o.method) for o in timed}
    shared_n = len(sizes) == 1
    parts = [figure_text(name, record, baseline, with_n=not shared_n,
                         floor=(floor_of or {}).get(record.cell.comparison))
             for name, record, baseline in figures]
    head = f"{who} ({_n_text(*sizes.pop())})" if shared_n else who
    return f"{head}: {'; '.join(parts)}."


def overhead_sentence(phrase: str, record: SummaryRecord, baseline: SummaryRecord) -> str:
    """One figure as a sentence of its own, e.g.
    "duckdb aes-256-gcm power test +3.1% [+1.2, +5.0] (p=0.01, n=20)."."""
    cell = record.cell
    return f"{cell.engine} {cell.encryption} {figure_text(phrase, record, baseline)}."


def _figures(chosen: list[tuple[Headline, SummaryRecord]],
             baselines: dict[tuple, SummaryRecord]) -> list[tuple[str, SummaryRecord, SummaryRecord]]:
    """An encryption's headline records in headline order, named as bullets name them."""
    ordered = sorted(chosen, key=lambda item: declared.label_order(item[0].label))
    return [(headline.short or headline.label, record, baselines[record.cell.comparison])
            for headline, record in ordered]


def ranking_sentence(engine: str, where: str, power: list[SummaryRecord]) -> str:
    """The encryptions of one engine by power-test overhead, cheapest first."""
    ranked = sorted(power, key=lambda r: (r.overhead.pct, r.cell.encryption))  # type: ignore[union-attr]
    listed = ", ".join(f"{r.cell.encryption} {percent(r.overhead.pct)}"  # type: ignore[union-attr]
                       for r in ranked)
    significant = [r.cell.encryption for r in ranked if r.overhead.significant]  # type: ignore[union-attr]
    if not significant:
        verdict = "none of these differs significantly from no encryption"
    elif len(significant) == len(ranked):
        verdict = "every one differs significantly from no encryption"
    else:
        verdict = f"only {', '.join(significant)} differ(s) significantly from no encryption"
    return f"{engine}{where}, by power-test overhead, cheapest first: {listed} ({verdict})."


def floor_sentence(who: str, figures: list[tuple[str, SummaryRecord, SummaryRecord]]) -> str:
    """The placebo's figures as the run's noise floor, e.g. "duckdb noise floor (placebo: none
    against none, 5 rounds): power test +0.4% [-1.2, +1.9], resolution ±1.9%, 80% power for
    effects of 2.3% or more; …"."""
    parts = []
    for name, record, baseline in figures:
        compared = record.overhead
        if compared is None or is_size(record) or deterministic(record, baseline):
            continue  # a size's floor reads its sizes (below resolution), but is no run's resolution
        mde = minimum_detectable_effect(compared)
        power = f", 80% power for effects of {mde:.1f}% or more" if not math.isnan(mde) else ""
        width = resolution(record)
        parts.append(f"{name} {_change(record)}, " + (f"resolution ±{width:.1f}%{power}" if math.isfinite(width)
                                                      else "no resolution: measured once"))
    rounds = {r.overhead.n_treatment for _, r, _ in figures if r.overhead}
    count = f", {_n_text(rounds.pop(), 0, PAIRED)}" if len(rounds) == 1 else ""
    return (f"{who} noise floor ({PLACEBO}: {BASELINE} against {BASELINE}{count}): {'; '.join(parts)}. "
            "An encryption whose interval overlaps it is below this run's resolution.")


SUM_STEPS = (GEOMEAN_STEP, "total", "tables")
"""Steps that sum or average a test's other steps: where an effect arises is looked for in the
others (a query, a table's load, the indexes)."""
LOCATED_STEPS = 3
"""How many steps a located effect names: those where it saves the most time."""


def resolved_faster(record: SummaryRecord, floor: SummaryRecord | None) -> bool:
    """An encryption's figure lower than none's, its interval off zero and off the placebo's:
    resolved, so not noise, and to be located (faster_sentence), never dismissed."""
    compared = record.overhead
    return (compared is not None and compared.significant and compared.pct < 0 and floor is not None
            and floor.overhead is not None and record.cell.encryption not in (BASELINE, PLACEBO)
            and not below_resolution(record, floor))


def where_faster(record: SummaryRecord, records: list[SummaryRecord]) -> list[tuple[SummaryRecord, float]]:
    """The steps of the same test (queries, a load's tables and indexes) whose own overhead is a
    resolved "faster than none", with the seconds each saves (none's median × the overhead), most
    first, at most LOCATED_STEPS."""
    cell = record.cell
    floor_of = floors(records)
    baselines = {r.cell.comparison: r for r in records if r.cell.encryption == BASELINE}
    found = []
    for other in records:
        o = other.cell
        if ((o.engine, o.memory_mb, o.host, o.workload, o.scale, o.test, o.metric, o.encryption)
                != (cell.engine, cell.memory_mb, cell.host, cell.workload, cell.scale, cell.test, cell.metric,
                    cell.encryption) or o.step in SUM_STEPS or o.step == cell.step):
            continue
        baseline = baselines.get(o.comparison)
        if baseline is not None and other.overhead and resolved_faster(other, floor_of.get(o.comparison)):
            found.append((other, baseline.summary.median * -other.overhead.pct / 100))
    return sorted(found, key=lambda item: -item[1])[:LOCATED_STEPS]


def faster_sentence(name: str, record: SummaryRecord, records: list[SummaryRecord], floor: SummaryRecord,
                    hint: str) -> str:
    """A resolved "faster than none", located: e.g. "duckdb aes-256-gcm (tpch sf0.1) is faster than
    none on the data load, -14.5% [-15.6, -13.3], beyond its noise floor (±2.1%): a real effect,
    not noise. It arises in lineitem −20.1% [−22.0, −18.2] (0.61 s less), … What the engine
    documents as different in an encrypted database: `hint` (its recorded encrypted_differences)"."""
    compared = record.overhead
    assert compared is not None
    cell = record.cell
    who = f"{cell.configured} {cell.encryption} ({cell.workload} {scale_label(cell.workload, cell.scale)})"
    text = (f"{who} is faster than {BASELINE} on the {name}, {_change(record)}, "
            f"beyond its noise floor (±{resolution(floor):.1f}%): a real effect of this "
            "configuration, not noise.")
    steps = where_faster(record, records)
    if steps:
        text += " It arises in " + ", ".join(
            f"{step.cell.step} {_change(step)} ({duration(saved)} less)" for step, saved in steps) + "."
    else:
        text += " No single step of the test is resolved as faster on its own: it is spread over them."
    if hint:
        text += f" What the engine documents as different in an encrypted database, besides the cipher: {hint}"
    return text


def _change(record: SummaryRecord) -> str:
    """An overhead of a record that has one, with its interval, as sentences write it."""
    compared = record.overhead
    assert compared is not None
    return change(compared.pct, compared.ci_low, compared.ci_high)


def faster_sentences(run: RunData, records: list[SummaryRecord]) -> list[str]:
    """One located sentence per resolved "faster than none" of a timed headline figure."""
    floor_of, recorded = floors(records), known(run)
    sentences = []
    for headline, record in headline_records(records):
        floor = floor_of.get(record.cell.comparison)
        if headline.metric == "elapsed_s" and resolved_faster(record, floor):
            assert floor is not None
            facts = recorded.engine(record.cell.engine)
            sentences.append(faster_sentence(headline.short or headline.label, record, records, floor,
                                             facts.encrypted_differences if facts is not None else ""))
    return sentences


def findings(run: RunData, records: list[SummaryRecord]) -> list[str]:
    """An analyst's summary: per engine the noise floor its placebo measured (if the plan ran
    one), a ranking of its encryptions by power-test overhead, then one bullet per encryption
    with its headline figures together, and a word on statistical power (the noise advice is
    report/summaries/noise.py's)."""
    baselines = {r.cell.comparison: r for r in records if r.cell.encryption == BASELINE}
    floor_of = floors(records)
    per_config: dict[tuple, dict[str, list[tuple[Headline, SummaryRecord]]]] = defaultdict(lambda: defaultdict(list))
    for headline, record in headline_records(records):
        if record.overhead:
            cell = record.cell
            per_config[(cell.engine, memory_order(cell.memory_mb), cell.configured, cell.workload, cell.scale)][
                cell.encryption].append((headline, record))
    configs_per_engine = Counter(engine for _, _, engine, _, _ in per_config)
    sentences = []
    for (_, _, engine, workload, scale), by_encryption in sorted(per_config.items()):
        where = f" ({workload} {scale_label(workload, scale)})" if configs_per_engine[engine] > 1 else ""
        placebo = by_encryption.pop(PLACEBO, None)
        if placebo:
            sentences.append(floor_sentence(f"{engine}{where}", _figures(placebo, baselines)))
        power = [record for chosen in by_encryption.values() for headline, record in chosen
                 if headline.ranks]
        if len(power) > 1:
            sentences.append(ranking_sentence(engine, where, power))
        for encryption, chosen in sorted(by_encryption.items()):
            sentences.append(encryption_sentence(f"{engine} {encryption}{where}", _figures(chosen, baselines),
                                                 floor_of))
    sentences += faster_sentences(run, records)
    if not sentences:
        sentences.append("No overhead figures: no configuration was measured both with and "
                         f"without encryption (“{BASELINE}”).")
    sizes = {(r.overhead.n_treatment, r.overhead.n_baseline) for r in records
             if r.overhead and r.overhead.method == UNPAIRED}
    weak = sorted(size for size in sizes if smallest_p(*size) >= SIGNIFICANCE)
    if weak:
        n1, n2 = weak[-1]
        sentences.append(f"With {_n_text(n1, n2)} repetitions the smallest possible p of the exact "
                         f"test is {smallest_p(n1, n2):.2f}, so timings cannot differ significantly: "
                         "raise repetitions (4 against 4 can reach p=0.03).")
    return sentences


DEFAULT_QUERY_TIMEOUT_S = 600.0
"""A plan's query_timeout_s when it does not set one (tdebench.plan.WorkloadSpec's default)."""


def query_timeouts(run: RunData) -> dict[str, float]:
    """Each workload's query timeout in seconds as the plan set it ([[workloads]] tables);
    a workload the plan does not give one has DEFAULT_QUERY_TIMEOUT_S."""
    try:
        plan = tomllib.loads(run.plan_text)
    except tomllib.TOMLDecodeError:
        plan = {}
    workloads = plan.get("workloads")
    timeouts = {}
    for table in workloads if isinstance(workloads, list) else []:
        if isinstance(table, dict) and isinstance(table.get("name"), str):
            value = table.get("query_timeout_s", DEFAULT_QUERY_TIMEOUT_S)
            if isinstance(value, int | float) and not isinstance(value, bool):
                timeouts[table["name"]] = float(value)
    return defaultdict(lambda: DEFAULT_QUERY_TIMEOUT_S, timeouts)


def timeout_alerts(run: RunData) -> list[str]:
    """One line per query, configuration and test that hit the timeout, e.g. "q21 hit the
    600 s timeout on postgres fs-aes-256-gcm (power test, 2 of 3 executions)". Executions are
    the measured (not warm-up) runs of that query in that test, over all repetitions and
    streams; workload and scale are named when the run has more than one of them."""
    executions: dict[tuple, list[str | None]] = defaultdict(list)
    for m in run.measurements:
        if not m.warmup and is_query(m.step):
            t = m.trial
            executions[(engine_label(t.engine, t.memory_mb), t.encryption, t.workload, t.scale, m.test,
                        m.step)].append(m.answer)
    timed_out = {key: answers for key, answers in executions.items() if "timeout" in answers}
    if not timed_out:
        return []
    several = len({(t.workload, t.scale) for t in _trial_keys(run)}) > 1
    timeouts = query_timeouts(run)

    def order(key: tuple) -> tuple:
        engine, encryption, workload, scale, test, step = key
        return (engine, workload, scale, encryption != BASELINE, encryption, test, step_order(step))

    messages = []
    for key in sorted(timed_out, key=order):
        engine, encryption, workload, scale, test, step = key
        answers = timed_out[key]
        where = f" {workload} {scale_label(workload, scale)}" if several else ""
        messages.append(f"{step} hit the {timeouts[workload]:g} s timeout on {engine} {encryption}{where} "
                        f"({test} test, {answers.count('timeout')} of {len(answers)} executions); a trial "
                        "with a timeout failed and is left out of the statistics.")
    return messages


def alerts(run: RunData) -> list[str]:
    """What a reader must see first: failed trials, wrong answers, queries stopped by the
    timeout, encryption not as expected, and cold-cache runs whose cache was not really dropped."""
    messages = [f"Trial {o.trial.id} FAILED: {o.error or 'no error recorded'}"
                for o in sorted(run.trials, key=lambda o: o.trial) if o.status != "ok"]
    wrong = sorted({m.trial.id for m in run.measurements if m.answer == "failed"})
    messages += [f"Wrong query answers in trial {trial}: its timings measure a wrong result."
                 for trial in wrong]
    messages += timeout_alerts(run)
    messages += [f"Trial {v.trial.id}: at-rest verdict {v.verdict!r}, expected {v.expected!r}"
                 + (f" (first canary at {v.first_hit})" if v.first_hit else "")
                 for v in sorted(judged(run), key=lambda v: v.trial) if not v.as_expected]
    not_dropped = [o for o in run.trials if o.cache == "cold" and not o.cache_dropped]
    if not_dropped:
        whole = sum(o.evicted == "os" for o in not_dropped)
        why = (f"; {whole} of them were to drop the whole cache (evict = \"os\"), which needs root" if whole else
               ": a process still held the database's pages, or a file could not be opened")
        messages.append(f"{len(not_dropped)} cold-cache trial(s) could not empty the OS page cache{why}. "
                        "Their timings are warmer than asked.")
    messages += [f"The environment had changed when the run was resumed at {resumed.at_utc}: "
                 f"{'; '.join(resumed.changed)}. The trials before and after it ran on different setups "
                 "(environment.json is the run's start)."
                 for resumed in run.resumes if resumed.changed]
    return messages


def judged(run: RunData) -> list[Verdict]:
    """The verdicts that judge a database: all but those of trials nothing could be scanned for
    (a server reached by url without a data_path) and the unexpected ones of failed trials that
    found no leak. A trial that failed (before its canaries were written, or with its database
    half made) leaves an inconclusive scan, which its failure already explains; a failed trial
    whose files held plaintext they should not is still a leak, and is judged."""
    failed = {o.trial for o in run.trials if o.status != "ok"}
    return [v for v in run.verdicts if not v.unverified  # nothing was scanned: nothing to judge
            and (v.trial not in failed or v.as_expected or v.leak)]


def unjudged_text(run: RunData) -> str:
    """" (n failed trials not judged)" when some verdicts are not judged, else ""."""
    left = len([v for v in run.verdicts if not v.unverified]) - len(judged(run))
    return f" ({left} failed trial{'' if left == 1 else 's'} not judged)" if left else ""


def at_rest_ok(run: RunData) -> bool:
    """Every judged verdict as expected, and at least one judged."""
    verdicts = judged(run)
    return bool(verdicts) and all(v.as_expected for v in verdicts)


def _transient_parts(baseline: list[Verdict]) -> list[str]:
    """What the transient capture's positive control showed: the baselines whose files gone before
    the trial ended (spills, files unlinked on open) held canaries; the others' transient coverage
    was not exercised (their workload spilled nothing that carries the canaries)."""
    captured = [v for v in baseline if v.transient]
    if not captured:
        return []
    shown = [v for v in captured if v.transient == TRANSIENT_CANARIES]
    if len(shown) == len(captured):
        return ["every baseline's transient files (caught while it ran) showed its canaries (positive control)"]
    idle = sorted({f"{v.trial.engine}/{v.trial.workload}" for v in captured if v.transient != TRANSIENT_CANARIES})
    return [f"transient coverage was not exercised in {len(captured) - len(shown)} of {len(captured)} baselines "
            f"({', '.join(idle)}): no file they wrote and deleted while running held a canary, so what the "
            "encrypted trials' transient files show proves less"]


def _capture_cost_parts(run: RunData) -> list[str]:
    """What the transient capture's watch cost: its CPU time while each trial ran (its thread's
    clock) as a share of the trial's elapsed time, i.e. of one core — the median over the trials it
    watched and the most it took, with where. Nothing for runs that did not record it."""
    elapsed = {t.trial: t.elapsed_s for t in run.trials if t.elapsed_s > 0}
    shares = sorted((v.capture_cpu_s / elapsed[v.trial], v.trial.id) for v in run.verdicts
                    if v.capture_cpu_s is not None and v.trial in elapsed)
    if not shares:
        return []
    most, where = shares[-1]
    median = statistics.median(share for share, _ in shares)
    return [f"the transient capture's watch used {ratio_percent(median)} of a core while the trials ran "
            f"(median of {len(shares)}; at most {ratio_percent(most)}, {where})"]


def verdict_summary(run: RunData) -> str:
    """One sentence on the at-rest checks, including the positive controls: the baseline's
    canaries, and for file-system layers the canaries in their decrypted views. Failed trials
    with no plaintext found are left out (`judged`) and counted at the end."""
    verdicts = judged(run)
    encrypted = [v for v in verdicts if v.expected == "encrypted"]
    baseline = [v for v in verdicts if v.expected == "plaintext"]
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
    layered = [v for v in verdicts if v.view_hits is not None]
    if layered:
        blind = [v for v in layered if not v.view_hits]
        parts.append("the decrypted views of the fs layers showed their canaries (positive control)"
                     if not blind else
                     f"{len(blind)} of {len(layered)} decrypted views of the fs layers did not show "
                     "their canaries: their clean verdicts prove nothing")
    parts += _transient_parts(baseline) + _capture_cost_parts(run)
    unverified = sum(v.unverified for v in run.verdicts)
    if unverified:
        parts.append(f"{unverified} trial{'' if unverified == 1 else 's'} on servers reached by url "
                     f"{'was' if unverified == 1 else 'were'} {NOT_VERIFIED}: no data_path to scan")
    sentence = "; ".join(parts) + unjudged_text(run)
    return sentence[0].upper() + sentence[1:] + "."
