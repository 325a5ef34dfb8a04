"""The answer table: per engine and encryption, what it costs where it ran, what it covers, what it
withstands, how it takes its key, and a recommendation — the one question a DBA asks, on one line.

Every cell is read from this run's records: the cost from the headline's figure
(`headline.chosen_figures`: the same figure the first lines read) with its 95% CI and the regime it
was measured in (data ÷ the engine's cache, the OS cache warm or cold), at each cache size the run
has; the coverage per file kind from the at-rest verdicts' scanned files, against the baseline's
(a kind is exercised only where the baseline's files of it held the canary: the positive control);
integrity, leaks and the old key from the strength workload; the key's cost per open from the timed
opens. What the run did not measure says so and names a built-in plan that measures it (`plan_for`),
so no row shows "encrypted" without its integrity and leak cells beside it. The recommendation comes
from report/data/advice.py's written rules only.
"""

from __future__ import annotations

import functools
import statistics
import tomllib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from typing import Any

from tdebench.report.data import advice, declared
from tdebench.report.summaries import cache
from tdebench.report.sections import headline, layers
from tdebench.report.summaries.connection import OPEN_CELL, key_text
from tdebench.report.data.declared import STRENGTH
from tdebench.report.data.encryptions import known
from tdebench.report.summaries.findings import judged
from tdebench.report.data.records import BASELINE, PLACEBO, SummaryRecord, failed_trials, scale_label
from tdebench.report.summaries.tables import Column, Table
from tdebench.report.data.units import change, ratio_percent, signed_ms, times, MS
from tdebench.results import FILE_KIND_TITLES, EncryptionFacts, Measurement, RunData, TrialKey, Verdict

KINDS = ("data", "log", "temp", "backup")
"""The file kinds the table has a column for (results.FILE_KINDS less "other": keys, pid files)."""
ENCRYPTED, PLAINTEXT, UNEXERCISED, CONTROL, NO_CANARY, UNRECORDED = (
    "encrypted", "plaintext", "not exercised", "plaintext (control)", "no canary",
    "not recorded (an older run: run it again)")
NOT_MEASURED = "not measured — run plan {plan}"
SPILL, REPEATS, TAMPER, FORGERY, OLD_KEY, SCANNED_BACKUP = STRENGTH.tests


@functools.cache
def _builtin_plans() -> tuple[tuple[str, bool, dict[str, int], frozenset[tuple[str, str]]], ...]:
    """Each built-in plan: its name, whether its author timed a run of it (`measured`), its engines
    with how many encryptions each lists ("all" counts as many), its (workload, test) pairs (""
    for a workload's default tests)."""
    found = []
    folder = resources.files("tdebench") / "plans"
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".toml"):
            continue
        data = tomllib.loads(entry.read_text(encoding="utf-8"))
        engines = {str(e.get("name", "")): (len(e["encryptions"]) if isinstance(e.get("encryptions"), list) else 99)
                   for e in data.get("engines", []) if isinstance(e, dict)}
        tests = frozenset((str(w.get("name", "")), str(t)) for w in data.get("workloads", [])
                          for t in w.get("tests", []) or [""])
        found.append((entry.name.removesuffix(".toml"), bool(data.get("measured")), engines, tests))
    return tuple(found)


def plan_for(engine: str, workload: str, test: str | None = None) -> str | None:
    """The built-in plan that measures `workload` (and `test`, if given) on `engine`: of those, the
    engine's own `assess-<engine>` (built to fill this table), else the one named like the workload,
    else one whose run was timed, of those the one that measures the most of the engine's
    encryptions (the nearest to an answer for every row), then the first by name; None when none
    does."""
    candidates = [(name != f"assess-{engine}", name != workload, not timed, -engines[engine], name)
                  for name, timed, engines, tests in _builtin_plans()
                  if engine in engines and any(w == workload and (test is None or t in (test, "")) for w, t in tests)]
    return min(candidates)[-1] if candidates else None


def _not_measured(engine: str, *wanted: tuple[str, str | None]) -> str:
    """"not measured — run plan X": the first of `wanted` (workload, test) a built-in plan measures."""
    plan = next((found for workload, test in wanted if (found := plan_for(engine, workload, test))), None)
    return NOT_MEASURED.format(plan=plan) if plan else f"not measured — run a plan with the {wanted[0][0]} workload"


# --- cost -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Cost:
    """One measured cost of an encryption: where (memory, workload, scale), which figure, the
    record and whether the run resolves it as a cost, and the regime."""

    memory_mb: int | None
    workload: str
    scale: float
    figure: str
    record: SummaryRecord
    resolved: bool
    regime: cache.Regime | None
    os_cache: str
    statistics: str  # what the planner knew of the data (TPC-H's load `indexes` note), "" not recorded
    split: layers.Split | None = None  # an fs-layer encryption's cost in layer and cipher (report/sections/layers.py)


def _per_config(found: Iterable[tuple[TrialKey, str]]) -> dict[tuple, str]:
    """Per engine, memory, workload and scale, the words its trials said, "/"-joined."""
    seen: dict[tuple, set[str]] = defaultdict(set)
    for t, word in found:
        seen[(t.engine, t.memory_mb, t.workload, t.scale)].add(word)
    return {config: "/".join(sorted(words)) for config, words in seen.items()}


def _os_caches(run: RunData) -> dict[tuple, str]:
    return _per_config((outcome.trial, outcome.cache) for outcome in run.trials)


def _statistics(run: RunData) -> dict[tuple, str]:
    """The planner statistics the load left (the note of TPC-H's load `indexes` record: ANALYZE
    run or not), which move a query's plan and its cost."""
    return _per_config((m.trial, m.note) for m in run.measurements
                       if m.test == "load" and m.step == "indexes" and m.note)


def costs(run: RunData, records: list[SummaryRecord]) -> dict[tuple[str, str], list[Cost]]:
    """Per (engine, encryption), its headline figure at each memory, workload and scale."""
    regimes, os_caches, statistics = cache.regimes(run, per_encryption=True), _os_caches(run), _statistics(run)
    figures = headline.chosen_figures(records)
    splits = layers.splits(run, records, [record for _, _, chosen, _ in figures for record in chosen])
    found: dict[tuple[str, str], list[Cost]] = defaultdict(list)
    for (engine, _, memory, workload, scale), figure, chosen, floor in figures:
        config = (engine, memory, workload, scale)
        for record in chosen:
            found[(engine, record.cell.encryption)].append(Cost(
                memory, workload, scale, figure.short or figure.label, record,
                headline.resolved(record, floor) and (record.overhead.pct > 0),  # type: ignore[union-attr]
                regimes.get((*config, record.cell.encryption)), os_caches.get(config, ""), statistics.get(config, ""),
                splits.get(record.cell)))
    return found


def _regime_text(cost: Cost) -> str:
    regime = cost.regime
    words = [] if regime is None else [f"data {times(regime.ratio)} cache"]
    return ", ".join(words + [word for word in (cost.os_cache, cost.statistics) if word])


def cost_text(found: list[Cost]) -> str:
    """Each measured cost: "power test +40.2% [+37.8, +42.6] (data 6.6× cache, warm, no ANALYZE after
    the load)", prefixed with its cache size and workload where the row has several; an fs-layer
    encryption measured beside its bare layer says which part dominates ("(data 22× cache, cold —
    mostly the file-system layer: +35.1% [+33.0, +37.2] of it without the cipher)", layers.in_words)."""
    several_memories = len({c.memory_mb for c in found}) > 1
    several_workloads = len({(c.workload, c.scale) for c in found}) > 1
    parts = []
    for c in sorted(found, key=lambda c: (c.workload, c.scale, c.memory_mb or 0)):
        compared = c.record.overhead
        assert compared is not None
        where = " ".join(([f"{c.workload} {scale_label(c.workload, c.scale)}"] if several_workloads else [])
                         + ([f"{c.memory_mb} MB:"] if several_memories and c.memory_mb is not None else []))
        noise = "" if c.resolved or not compared.significant else ", not resolved"
        said = " — ".join(filter(None, (_regime_text(c) + noise, layers.in_words(c.split) if c.split else "")))
        figure = f"{c.figure} {change(compared.pct, compared.ci_low, compared.ci_high)}"
        parts.append(f"{where + ' ' if where else ''}{figure}{f' ({said})' if said else ''}")
    return "; ".join(parts)


def cache_bound(found: list[Cost]) -> float | None:
    """The cost where data > cache, when the run measured the same figure where the data fits and
    resolved no cost there: the cost belongs to the cache regime."""
    spilling = [c for c in found if c.regime is not None and c.regime.spills and c.resolved]
    fitting = [c for c in found if c.regime is not None and not c.regime.spills]
    if not spilling or not fitting or any(c.resolved for c in fitting):
        return None
    return max(c.record.overhead.pct for c in spilling)  # type: ignore[union-attr]


# --- coverage -------------------------------------------------------------------------


def _kind_hits(verdicts: Iterable[Verdict]) -> dict[str, tuple[int, int, str]]:
    """Per file kind: files scanned, canary hits, the first file that held one."""
    found: dict[str, list[Any]] = {kind: [0, 0, ""] for kind in KINDS}
    for verdict in verdicts:
        for scan in verdict.files:
            if scan.kind not in found:
                continue
            entry = found[scan.kind]
            entry[0] += 1
            entry[1] += scan.hits
            if scan.hits and not entry[2]:
                entry[2] = scan.path
    return {kind: (files, hits, first) for kind, (files, hits, first) in found.items()}


def coverage(run: RunData) -> dict[tuple[str, str], dict[str, str]]:
    """Per (engine, encryption) and file kind: encrypted, plaintext (the file), not exercised (the
    baseline's files of that kind held no canary, or there were none), or for the baseline itself
    plaintext (control) / no canary. A kind with no file here and no canary in the baseline is left
    out (`rows` names a plan that measures it)."""
    by_config: dict[tuple[str, str], list[Verdict]] = defaultdict(list)
    for verdict in judged(run):
        by_config[(verdict.trial.engine, verdict.trial.encryption)].append(verdict)
    baselines = {engine: _kind_hits(verdicts) for (engine, encryption), verdicts in by_config.items()
                 if encryption == BASELINE}
    result: dict[tuple[str, str], dict[str, str]] = {}
    for (engine, encryption), verdicts in by_config.items():
        if encryption == PLACEBO:
            continue
        control = baselines.get(engine, {})
        if not any(scan.kind for verdict in verdicts for scan in verdict.files):
            result[(engine, encryption)] = dict.fromkeys(KINDS, UNRECORDED)
            continue
        cells = {}
        for kind, (files, hits, first) in _kind_hits(verdicts).items():
            exercised = control.get(kind, (0, 0, ""))[1] > 0
            if not files and not exercised:
                continue  # nothing of the kind in the run: the table names a plan that measures it
            if encryption == BASELINE:
                cells[kind] = CONTROL if hits else NO_CANARY if files else UNEXERCISED
            elif hits:
                cells[kind] = f"{PLAINTEXT} ({first})"
            elif files and exercised:
                cells[kind] = ENCRYPTED
            else:
                cells[kind] = UNEXERCISED
        result[(engine, encryption)] = cells
    for (engine, encryption), cell in _scanned_backups(run).items():
        result.setdefault((engine, encryption), {})["backup"] = cell
    return result


def _scanned_backups(run: RunData) -> dict[tuple[str, str], str]:
    """Per (engine, encryption), the backup cell from the strength workload's `backup` test: the
    scan of a physical full backup (its answer the verdict), against the baseline's (the positive
    control: its backup must show the canary)."""
    answers: dict[tuple[str, str], set[str]] = defaultdict(set)
    for m in _strength_records(run):
        if (m.test, m.step) == (SCANNED_BACKUP, "scan") and m.trial.encryption != PLACEBO and m.answer not in _IGNORED:
            answers[(m.trial.engine, m.trial.encryption)].add(m.answer or "")
    cells = {}
    for (engine, encryption), said in answers.items():
        control = answers.get((engine, BASELINE), set())
        if encryption == BASELINE:
            cells[(engine, encryption)] = CONTROL if PLAINTEXT in said else NO_CANARY
        elif PLAINTEXT in said:
            cells[(engine, encryption)] = f"{PLAINTEXT} (its physical backup)"
        elif PLAINTEXT not in control:
            cells[(engine, encryption)] = UNEXERCISED
        else:
            cells[(engine, encryption)] = ENCRYPTED if said == {ENCRYPTED} else "/".join(sorted(said))
    return cells


# --- strength -------------------------------------------------------------------------


@dataclass(frozen=True)
class Strength:
    """What the strength workload recorded of one engine and encryption (None: not measured)."""

    flipped: tuple[str, ...] = ()  # the tamper test's classes
    forged: tuple[tuple[str, str], ...] = ()  # (where, class) of the forgery test
    repeated: float | None = None
    random: float | None = None
    old_key: str | None = None  # what the old key did to the rekeyed database


_WHERE = {STRENGTH.forged_backup: "backup", STRENGTH.forged_log: "WAL"}
_IGNORED = ("unsupported", "not applicable", "")


def _strength_records(run: RunData) -> list[Measurement]:
    """The strength workload's records of the trials that ended ok, warm-ups left out."""
    failed = failed_trials(run)
    return [m for m in run.measurements if m.trial.workload == STRENGTH.name and not m.warmup
            and m.trial not in failed]


def strengths(run: RunData) -> dict[tuple[str, str], Strength]:
    grouped: dict[tuple[str, str], list] = defaultdict(list)
    for m in _strength_records(run):
        grouped[(m.trial.engine, m.trial.encryption)].append(m)
    result = {}
    for key, measurements in grouped.items():
        files = [m.metrics["repeated_block_share"] for m in measurements
                 if m.test == REPEATS and m.step == "database" and "repeated_block_share" in m.metrics]
        chance = [m.metrics["repeated_block_share"] for m in measurements
                  if m.test == REPEATS and m.step == "random" and "repeated_block_share" in m.metrics]
        old = [m.answer or "" for m in measurements if m.test == OLD_KEY and m.step == "database"]
        result[key] = Strength(
            flipped=tuple(dict.fromkeys(m.answer or "" for m in measurements if m.test == TAMPER)),
            forged=tuple(dict.fromkeys((_WHERE.get(m.step, "file"), m.answer or "") for m in measurements
                                       if m.test == FORGERY)),
            repeated=statistics.median(files) if files else None,
            random=statistics.median(chance) if chance else None,
            old_key=old[0] if old else None)
    return result


_WEAKNESS = (advice.FORGED, advice.ALTERED, "crashed", advice.UNTAGGED, advice.TAG, advice.UNCHANGED)
"""The classes from the weakest protection to the strongest, then a test that proved nothing."""


def integrity_class(strength: Strength) -> str | None:
    """The weakest class the tamper and forgery tests showed, None when neither ran."""
    seen = set(strength.flipped) | {answer for _, answer in strength.forged}
    seen -= set(_IGNORED)
    return next((name for name in _WEAKNESS if name in seen), None)


def integrity_text(strength: Strength) -> str:
    forged = [where for where, answer in strength.forged if answer == advice.FORGED]
    parts = []
    if forged:
        parts.append(f"forgeable ({', '.join(forged)})")
    flipped = [answer for answer in strength.flipped if answer not in _IGNORED]
    if flipped:
        parts.append(f"flipped byte: {', '.join(flipped)}")
    refused = sorted({answer for _, answer in strength.forged if answer not in _IGNORED and answer != advice.FORGED})
    if refused and not forged:
        parts.append(f"forgery: {', '.join(refused)}")
    return "; ".join(parts)


def leak_text(strength: Strength, baseline: Strength | None) -> str:
    plain = (f", plaintext {ratio_percent(baseline.repeated)}" if baseline is not None and baseline.repeated is not None
             else "")
    return f"{ratio_percent(strength.repeated)} of blocks repeat (random {ratio_percent(strength.random)}{plain})"


def at_rest_text(cells: dict[str, str]) -> str:
    """The file kinds grouped by what they held: "encrypted: data, WAL/log; not measured — run plan
    backup: backup" (a plaintext file named with its kind)."""
    grouped: dict[str, list[str]] = defaultdict(list)
    for kind, cell in cells.items():
        grouped[cell].append(kind)
    return "; ".join(f"{cell}: {', '.join(kinds)}" for cell, kinds in grouped.items())


def integrity_marks(run: RunData) -> dict[tuple[str, str], str]:
    """Per engine and encryption the strength tests measured, its class for the headline picture's
    markers (plots.INTEGRITY_MARKS): "broken" (repeats like plaintext), "tag", else "no tag"."""
    marks = {}
    for key, strength in strengths(run).items():
        found = integrity_class(strength)
        if advice.repeats_like_plaintext(advice.Facts(repeated_share=strength.repeated, random_share=strength.random)):
            marks[key] = "broken"
        elif found is not None and found != advice.UNCHANGED:
            marks[key] = "tag" if found == advice.TAG else "no tag"
    return marks


# --- keys -----------------------------------------------------------------------------


def _open_costs(records: list[SummaryRecord]) -> dict[tuple[str, str], list[SummaryRecord]]:
    """Per engine and encryption, its timed opens of timed workloads (a strength trial's open is
    timed once, beside no round of none), the most rounds first."""
    found: dict[tuple[str, str], list[SummaryRecord]] = defaultdict(list)
    for record in records:
        cell = record.cell
        if ((cell.test, cell.step, cell.metric) == OPEN_CELL and record.overhead is not None
                and declared.timed(cell.workload)):
            found[(cell.engine, cell.encryption)].append(record)
    return {key: sorted(opens, key=lambda r: -r.summary.n) for key, opens in found.items()}


def _key_forms(run: RunData) -> dict[tuple[str, str], set[str]]:
    forms: dict[tuple[str, str], set[str]] = defaultdict(set)
    for outcome in run.trials:
        if outcome.key_form:
            forms[(outcome.trial.engine, outcome.trial.encryption)].add(outcome.key_form)
    return forms


def key_cell(engine: str, facts: EncryptionFacts | None, opens: list[SummaryRecord], forms: set[str],
             strength: Strength | None, baselines: dict[tuple, SummaryRecord]) -> str:
    parts = sorted({key_text(facts, form) for form in forms})
    for record in opens[:1]:
        baseline = baselines.get(record.cell.comparison)
        compared = record.overhead
        if baseline is not None and compared is not None:
            extra = (record.summary.median - baseline.summary.median) * MS
            ratio = (f" ({change(compared.pct, compared.ci_low, compared.ci_high)})"
                     if not compared.measured_once else "")
            parts.append(f"open {signed_ms(extra)} ms{ratio}")
    if strength is None:
        parts.append(f"rekey {_not_measured(engine, (STRENGTH.name, OLD_KEY))}")
    elif strength.old_key:
        parts.append(f"old key after rekey: {strength.old_key}")
    return "; ".join(parts)


# --- the table ------------------------------------------------------------------------


def _order(run: RunData) -> list[tuple[str, str]]:
    """Every engine and encryption the run measured, the baseline first, in the plan's order."""
    seen = dict.fromkeys((t.trial.engine, t.trial.encryption) for t in run.trials
                         if t.trial.encryption != PLACEBO)
    engines = list(dict.fromkeys(engine for engine, _ in seen))
    return sorted(seen, key=lambda key: (engines.index(key[0]), key[1] != BASELINE))


def rows(run: RunData, records: list[SummaryRecord]) -> list[dict[str, Any]]:
    found_costs, covered, strong = costs(run, records), coverage(run), strengths(run)
    opens, forms, encryptions = _open_costs(records), _key_forms(run), known(run)
    open_baselines = {r.cell.comparison: r for r in records
                      if (r.cell.test, r.cell.step, r.cell.metric) == OPEN_CELL and r.cell.encryption == BASELINE}
    kinds = [kind for kind in KINDS if any(kind in cells for cells in covered.values())]
    unencrypted = {(v.trial.engine, v.trial.encryption) for v in run.verdicts
                   if v.expected == "plaintext" and v.trial.encryption not in (BASELINE, PLACEBO)}
    result = []
    for engine, encryption in _order(run):
        baseline = encryption == BASELINE
        cost = found_costs.get((engine, encryption), [])
        cells = covered.get((engine, encryption), {})
        strength = strong.get((engine, encryption))
        row: dict[str, Any] = {
            "engine": engine, "encryption": encryption,
            "cost": ("the baseline" if baseline else cost_text(cost) if cost
                     else _not_measured(engine, ("tpch", "power"))),
            "integrity": "none" if baseline else (
                integrity_text(strength) if strength is not None and integrity_class(strength)
                else _not_measured(engine, (STRENGTH.name, TAMPER))),
            "leaks": (leak_text(strength, None if baseline else strong.get((engine, BASELINE)))
                      if strength is not None and strength.repeated is not None
                      else _not_measured(engine, (STRENGTH.name, REPEATS))),
            "keys": "" if baseline else key_cell(engine, encryptions.get(engine, encryption),
                                                 opens.get((engine, encryption), []),
                                                 forms.get((engine, encryption), set()), strength, open_baselines),
        }
        missing = {"backup": lambda: _not_measured(engine, (STRENGTH.name, SCANNED_BACKUP)),
                   "temp": lambda: _not_measured(engine, (STRENGTH.name, SPILL), ("tpch", "spill"))}
        for kind in KINDS:
            row[kind] = cells.get(kind) or missing.get(kind, lambda: UNEXERCISED)()
        row["at_rest"] = at_rest_text({FILE_KIND_TITLES[kind]: row[kind] for kind in KINDS})
        facts = advice.Facts(
            baseline=baseline, unencrypted_arm=(engine, encryption) in unencrypted,
            plaintext_kinds=tuple(FILE_KIND_TITLES[k] for k in kinds if str(row[k]).startswith(f"{PLAINTEXT} (")),
            unexercised_kinds=tuple(FILE_KIND_TITLES[k] for k in ("temp",) if not str(row[k]).startswith(ENCRYPTED)),
            repeated_share=strength.repeated if strength else None,
            random_share=strength.random if strength else None,
            integrity=integrity_class(strength) if strength else None,
            old_key_opens=(strength.old_key in STRENGTH.old_key_weak) if strength and strength.old_key else None,
            cost_pct=max((c.record.overhead.pct for c in cost if c.resolved), default=None),  # type: ignore[union-attr]
            cache_bound_pct=cache_bound(cost))
        row["advice"] = advice.recommend(facts)
        row["weak"] = not (baseline or facts.unencrypted_arm or row["advice"].startswith(advice.RECOMMENDED))
        result.append(row)
    return result


INTRO = ("One row per engine and encryption: a recommendation from written rules (docs/manual.md, “The answer "
         "table”), its cost on the headline figure with its 95% CI and the regime it was measured in (data ÷ the "
         "engine's cache; the OS cache warm or cold; for TPC-H, whether the load ran ANALYZE), what the strength "
         "tests showed, what each kind of file held at rest (encrypted only where the baseline's files of that "
         "kind showed the canary) and how it takes its key. “not measured — run plan X” names a built-in plan "
         "that measures the cell.")


def answer_table(run: RunData, records: list[SummaryRecord]) -> Table:
    found = rows(run, records)
    # the recommendation first after the names: on a narrow screen it is the cell a reader must see
    columns = (Column("engine", "engine"), Column("encryption", "encryption"),
               Column("advice", "recommendation", prose=True), Column("cost", "cost", prose=True),
               Column("integrity", "integrity", prose=True), Column("leaks", "leaks", prose=True),
               Column("at_rest", "at rest, by file kind", prose=True), Column("keys", "keys", prose=True))
    return Table("The answer", columns, found, intro=INTRO, alarm="weak", empty="No configuration was measured.")


def lines(table: Table) -> list[str]:
    """The table as a terminal prints it at the end of a run: per encryption, its cost and its
    recommendation (the baselines left out)."""
    return [f"{row['engine']} {row['encryption']}: {row['cost'].split('; ')[0]} — {row['advice']}"
            for row in table.rows if row["encryption"] != BASELINE]
