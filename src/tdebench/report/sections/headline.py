"""The report's first lines: what each encryption costs, in plain words, for a reader with a minute.

One sentence per engine, workload and scale (and memory): its encryptions grouped as a DBA
asks about them — no measurable cost, a cost (with its interval), more than double the time —
on one figure kind per configuration, not whichever resolves first, so that lines and panels compare
like with like: the first of the power test, the throughput test and the load that the run
measured (a DBA asks what the queries cost and pays the load once; the load gets a panel of its
own in the picture, never swapped in for the power test); for a workload with timed
figures of its own, one of those for every engine of the run, the one it resolves best (a backup's
backups and restores, crud's and maintenance's operations, oltp's TPM and NOPM, where a cost is a
drop: `_own_figures`), with the run's resolution
(the placebo's noise floor) where the plan ran one, and the regime it was measured in: the data
against the cache the engine really had (cache.regimes), since an encryption that more than
doubles the time when every read decrypts a page again may cost nothing when the data fits. An
fs-layer encryption measured beside its bare layer (fs-passthrough) says which part of its cost
dominates (layers.in_words), and where every encryption's cost is mostly the layer's, the regime
says evicted pages are read again through the layer, not decrypted again (`layer_bound`).
Then whether the machine was busy (other
processes' CPU during the trials, which widens every interval), the at-rest checks in one line, and
whether the data fit in memory (cache.py), since that decides what the percentages mean.

A cost is only called one when findings.py would: its interval excludes zero (p < 0.05) and
lies outside the placebo's. An interval that includes zero is "no measurable cost"; one that
excludes zero but overlaps the placebo's is "inside the noise floor, so not resolved as a cost"
(a +42% [+12, +80] against a ±45% floor is neither a cost nor no cost).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, replace

from tdebench.report.summaries import cache, plots
from tdebench.report.data import declared
from tdebench.report.sections import layers
from tdebench.report.data.declared import LABELLED, Headline
from tdebench.report.summaries.noise import busy_headline, is_headline, trial_loads
from tdebench.report.summaries.findings import judged, verdict_summary
from tdebench.report.data.records import (BASELINE, PER_MINUTE, PLACEBO, CellKey, SummaryRecord, below_resolution,
                                          engine_label, floors, headline_records, memory_order, resolution, scale_label)
from tdebench.report.data.units import change, percent, times
from tdebench.results import RunData


DOUBLES_PCT = 100.0
"""An overhead from which an encryption is named apart: it more than doubles the time."""
HALVES_PCT = 50.0
"""The same for a rate (TPM, NOPM): a drop of half or more."""


Splits = dict[CellKey, layers.Split]
"""The fs-layer encryptions' costs in layer and cipher, by cell (layers.splits): empty without a bare-layer arm."""


def _interval(record: SummaryRecord, splits: Splits) -> str:
    """An encryption's overhead with its interval, and for an fs-layer one measured beside its
    bare layer, which part dominates (layers.in_words)."""
    compared = record.overhead
    assert compared is not None
    split = splits.get(record.cell)
    said = f" ({layers.in_words(split)})" if split is not None else ""
    return f"{record.cell.encryption} {change(compared.pct, compared.ci_low, compared.ci_high)}{said}"


Chosen = tuple[tuple, Headline, list[SummaryRecord], SummaryRecord | None]
"""A config's headline figure (`chosen_figures`): the config, the figure, its encryptions' records, its placebo's."""


def _splits(run: RunData, records: list[SummaryRecord], figures: list[Chosen]) -> Splits:
    """The splits of every record the `figures` (chosen_figures) read."""
    return layers.splits(run, records, [record for _, _, chosen, _ in figures for record in chosen])


def layer_bound(chosen: list[SummaryRecord], splits: Splits) -> bool:
    """Whether a figure's every encryption is an fs-layer one whose file-system layer dominates its
    cost (or that bare layer itself): its pages are then read again through the layer, not
    decrypted again, as far as the cost goes (cache.REREAD). False without a bare-layer arm: no claim."""
    bares = {splits[record.cell].bare for record in chosen if record.cell in splits}
    ciphers = [record for record in chosen if record.cell.encryption not in bares]
    return bool(ciphers) and all(record.cell in splits and splits[record.cell].dominant == layers.LAYER
                                 for record in ciphers)


def layer_bound_configs(run: RunData, records: list[SummaryRecord]) -> set[tuple]:
    """The configs (engine, memory_mb, workload, scale) whose headline figure is `layer_bound`, for
    cache.findings."""
    figures = chosen_figures(records)
    splits = _splits(run, records, figures)
    return {(engine, memory, workload, scale) for (engine, _, memory, workload, scale), _, chosen, _ in figures
            if layer_bound(chosen, splits)}


def _width(records: list[SummaryRecord]) -> float:
    """How well a figure resolves its overheads: the median half-width of their intervals."""
    return statistics.median((r.overhead.ci_high - r.overhead.ci_low) / 2 for r in records)  # type: ignore[union-attr]


def _grouped(records: list[SummaryRecord], floor: SummaryRecord | None, rate: bool = False,
             spills: bool = False, splits: Splits | None = None) -> list[str]:
    """The encryptions of one figure, cheapest first, in the groups a reader decides by. For a
    `rate` (oltp's TPM and NOPM) a cost is a drop: its overhead is below zero, and halving the
    rate is what doubling a time is."""
    once, free, unresolved, costs, doubles, faster = [], [], [], [], [], []
    splits = splits or {}
    sign = -1.0 if rate else 1.0
    for record in sorted(records, key=lambda r: (sign * r.overhead.pct, r.cell.encryption)):  # type: ignore[union-attr]
        compared = record.overhead
        assert compared is not None
        if compared.measured_once:
            once.append(record)
        elif not compared.significant:
            free.append(record)
        elif below_resolution(record, floor):  # an interval off zero, but inside none-against-none's
            unresolved.append(record)
        elif sign * compared.pct < 0:
            faster.append(record)
        elif (compared.pct <= -HALVES_PCT) if rate else (compared.pct >= DOUBLES_PCT):
            doubles.append(record)
        else:
            costs.append(record)
    groups = []
    if once:
        groups.append("measured once, so no interval and no conclusion: "
                      + ", ".join(f"{r.cell.encryption} {percent(r.overhead.pct)}" for r in once))  # type: ignore[union-attr]
    if free:
        groups.append(f"no measurable cost for {', '.join(_interval(r, splits) for r in free)}")
    if unresolved:  # the sentence names the floor's width before the groups
        groups.append("inside the noise floor, so not resolved as a cost: "
                      + ", ".join(_interval(r, splits) for r in unresolved))
    if costs:
        span = (percent(costs[0].overhead.pct) if len(costs) == 1  # type: ignore[union-attr]
                else f"{percent(costs[0].overhead.pct)} to {percent(costs[-1].overhead.pct)}")  # type: ignore[union-attr]
        groups.append(f"costs {span}{' of the rate' if rate else ''}: {', '.join(_interval(r, splits) for r in costs)}")
    if doubles:
        where = ("where the data does not fit the engine's cache, as here" if spills else "where speed matters")
        groups.append(f"{'halves the rate or worse' if rate else 'more than doubles the time'} (avoid {where}): "
                      f"{', '.join(_interval(r, splits) for r in doubles)}")
    if faster:
        quicker = "a higher rate" if rate else "faster"
        groups.append(f"{quicker} than no encryption, resolved beyond the noise floor (where it arises: the "
                      f"findings): {', '.join(_interval(r, splits) for r in faster)}" if floor is not None else
                      f"{quicker} than no encryption, with no placebo arm to tell it from noise: "
                      f"{', '.join(_interval(r, splits) for r in faster)}")
    return groups


def _sentence(engine: str, memory: int | None, workload: str, scale: float, figure: Headline,
              records: list[SummaryRecord], floor: SummaryRecord | None, regime: cache.Regime | None,
              splits: Splits) -> str:
    who = (f"{engine_label(engine, memory)} · {workload} {scale_label(workload, scale)} · "
           f"{figure.short or figure.label}")
    rounds = {r.overhead.n_treatment for r in records}  # type: ignore[union-attr]
    count = rounds.pop() if len(rounds) == 1 else None
    counted = f"{count} round{'' if count == 1 else 's'}; " if count is not None else ""
    floor_text = _floor_text(floor, "no placebo arm, so no measured noise floor")
    regime_text = f"; {regime.said(layer_bound(records, splits))}" if regime else ""
    groups = _grouped(records, floor, figure.metric in PER_MINUTE, spills=regime is not None and regime.spills,
                      splits=splits)
    return f"{who} ({counted}{floor_text}{regime_text}): {'; '.join(groups)}."


def _workload_figures(records: list[SummaryRecord]) -> list[tuple[Headline, SummaryRecord]]:
    """The headline figures a workload's own report leads with (noise.headline_rules: a
    backup's backup and restore, crud's operations, maintenance's operations, oltp's TPM and
    NOPM of each test), one Headline per test, step and metric; the labelled ones (the load,
    TPC-H's composites) are records.headline_records'."""
    return [(Headline(r.cell.metric, (r.cell.step,), r.cell.test,
                      f"{r.cell.test} {_FIGURE_NAMES.get(r.cell.metric, r.cell.step)}"), r)
            for r in records if (r.cell.metric == "elapsed_s" or r.cell.metric in PER_MINUTE)
            and declared.labelled_headline(r.cell.workload, r.cell.test, r.cell.step, r.cell.metric) is None
            and is_headline(r.cell)]


_FIGURE_NAMES = {rate: rate.upper() for rate in PER_MINUTE}  # "stress NOPM", not "stress mix"


def _order(figure: Headline) -> tuple[int, str]:
    return (LABELLED.index(figure), "") if figure in LABELLED else (len(LABELLED), figure.label)


def _figures_by_config(records: list[SummaryRecord]) -> dict[tuple, dict[Headline, list[SummaryRecord]]]:
    """Per config (engine, memory order, memory, workload, scale), every timed headline figure the
    run measured with its encryptions' records."""
    per_config: dict[tuple, dict[Headline, list[SummaryRecord]]] = defaultdict(lambda: defaultdict(list))
    for figure, record in headline_records(records) + _workload_figures(records):
        cell = record.cell
        if ((figure.metric == "elapsed_s" or figure.metric in PER_MINUTE) and record.overhead is not None
                and cell.encryption not in (BASELINE, PLACEBO)):
            per_config[(cell.engine, memory_order(cell.memory_mb), cell.memory_mb, cell.workload, cell.scale)][
                figure].append(record)
    return per_config


def chosen_figures(records: list[SummaryRecord]) -> list[Chosen]:
    """Per engine, memory, workload and scale (the config: engine, memory order, memory,
    workload, scale): the figure its headline reads (see the module), its encryptions' records
    and its placebo's record (None without one), in the report's order. The sentences and the
    headline picture both read these, so they cannot disagree."""
    floor_of = floors(records)
    by_config = _figures_by_config(records)
    own_choice = _own_figures(by_config, floor_of)
    chosen_ones = []
    for config, by_figure in sorted(by_config.items()):
        own = {figure: chosen for figure, chosen in by_figure.items() if figure not in LABELLED}
        if own:  # a backup plan is read for its backups, not for its TPC-H load: the workload's one figure
            figure = own_choice[config[3]] if own_choice[config[3]] in own else min(own, key=_order)
        else:  # the first labelled figure in the declared order, not whichever resolves first: like with like
            figure = min(by_figure, key=_order)
        chosen = by_figure[figure]
        chosen_ones.append((config, figure, chosen, floor_of.get(chosen[0].cell.comparison)))
    return chosen_ones


def _own_figures(by_config: dict[tuple, dict[Headline, list[SummaryRecord]]],
                 floor_of: dict[tuple, SummaryRecord]) -> dict[str, Headline]:
    """Per workload with timed figures of its own, the one figure every engine's headline reads, so
    that its lines and panels compare like with like (oltp's load NOPM on every engine, never one
    engine's stress TPM beside the others' load): the figure the run resolves for the most
    configurations, then the one with the narrowest intervals (the median of its configurations'
    `_width`), then the declared order."""
    found: dict[str, dict[Headline, list[tuple[bool, float]]]] = defaultdict(lambda: defaultdict(list))
    for config, by_figure in by_config.items():
        for figure, chosen in by_figure.items():
            if figure not in LABELLED:
                found[config[3]][figure].append(
                    (any(resolved(r, floor_of.get(r.cell.comparison)) for r in chosen), _width(chosen)))
    return {workload: min(figures, key=lambda figure: (-sum(ok for ok, _ in figures[figure]),
                                                       statistics.median(width for _, width in figures[figure]),
                                                       _order(figure)))
            for workload, figures in found.items()}


def _load_figures(records: list[SummaryRecord]) -> list[Chosen]:
    """The load of every config whose headline reads another figure (the power test): the
    picture's panels of their own for it, after the headline's."""
    floor_of, chosen = floors(records), {config: figure for config, figure, _, _ in chosen_figures(records)}
    return [(config, figure, found, floor_of.get(found[0].cell.comparison))
            for config, by_figure in sorted(_figures_by_config(records).items())
            for figure, found in by_figure.items()
            if figure.test == "load" and figure.metric == "elapsed_s" and chosen.get(config) not in (None, figure)]


def config_sentences(run: RunData, records: list[SummaryRecord]) -> list[str]:
    """Per engine, workload and scale, every encryption with its interval in the groups a DBA
    decides by, the noise floor and the regime: the first findings of the report."""
    regimes, figures = cache.regimes(run), chosen_figures(records)
    splits = _splits(run, records, figures)
    return [_sentence(engine, memory, workload, scale, figure, chosen, floor,
                      regimes.get((engine, memory, workload, scale)), splits)
            for (engine, _, memory, workload, scale), figure, chosen, floor in figures]


def headline(run: RunData, records: list[SummaryRecord]) -> list[str]:
    """The sentences in full (see the module): `config_sentences`, then the busy machine, the
    at-rest line and the cache caveat."""
    return (config_sentences(run, records) + _machine_and_at_rest(run)
            + cache.findings(run, layer_bound_configs(run, records)))


def _machine_and_at_rest(run: RunData) -> list[str]:
    """Whether the machine was busy, and the at-rest checks in one line: what both the full
    sentences and “In one minute” end with."""
    lines = []
    busy = busy_headline(trial_loads(run))
    if busy:
        lines.append(busy)
    verdicts = judged(run)
    if verdicts:
        expected = sum(v.as_expected for v in verdicts)
        lines.append(f"At rest: {expected}/{len(verdicts)} verdicts as expected. {verdict_summary(run)}")
    return lines


def panels(run: RunData, records: list[SummaryRecord],
           integrity: dict[tuple[str, str], str] | None = None) -> list[plots.Panel]:
    """The headline picture's panels: one per config of `chosen_figures`, each encryption's
    overhead on the figure the headline sentence reads, its verdict (the colour), what the
    strength tests showed of it (`integrity`: the marker's shape, from answer.integrity_marks), the
    placebo's band and the cache regime its trials ran in; then the load of each such config in a
    panel of its own. Panels of one figure share an x-scale (plots.headline_plot). An engine
    measured at several cache sizes gets one panel per figure, its rows grouped by size (`_by_size`)."""
    marks: dict[tuple, set[str]] = defaultdict(set)
    for verdict in judged(run):
        t = verdict.trial
        marks[(t.engine, t.memory_mb, t.encryption, t.workload, t.scale)].add(
            "plaintext" if verdict.verdict == "plaintext" and verdict.expected == "encrypted"
            else "encrypted" if verdict.as_expected else "unsure")
    regimes, figures = cache.regimes(run), chosen_figures(records) + _load_figures(records)
    splits = _splits(run, records, figures)
    result: list[tuple[tuple, int | None, plots.Panel]] = []
    for (engine, _, memory, workload, scale), figure, chosen, floor in figures:
        rows = []
        for record in chosen:
            compared = record.overhead
            assert compared is not None
            seen = marks.get((engine, memory, record.cell.encryption, workload, scale), set())
            mark = "plaintext" if "plaintext" in seen else "encrypted" if seen == {"encrypted"} else "unsure"
            rows.append(plots.PanelRow(record.cell.encryption, compared.pct, compared.ci_low, compared.ci_high, mark,
                                       None if integrity is None else integrity.get((engine, record.cell.encryption),
                                                                                    "")))
        regime = regimes.get((engine, memory, workload, scale))
        title = (f"{engine_label(engine, memory)} · {workload} {scale_label(workload, scale)} · "
                 f"{figure.short or figure.label}")
        panel = plots.Panel(title, tuple(rows), resolution(floor) if floor is not None else None,
                            rate=figure.metric in PER_MINUTE,
                            regime=regime.said(layer_bound(chosen, splits)) if regime else "",
                            kind=figure.label or figure.short)
        group = (engine, workload, scale, panel.kind, f"{workload} {scale_label(workload, scale)} · "
                 f"{figure.short or figure.label}")
        result.append((group, memory, panel))
    return _by_size(result, regimes)


def _by_size(panels: list[tuple[tuple, int | None, plots.Panel]], regimes: dict[tuple, cache.Regime]
             ) -> list[plots.Panel]:
    """The panels, those of one engine, workload, scale and figure at several cache sizes made one:
    its rows grouped by size, the largest cache on top ("12 MB · sqlcipher", cheapest first within
    a size), each with its own size's floor band, and data ÷ cache of every size under its title,
    where the regime of one would be; at the place of the first of them."""
    groups: dict[tuple, list[tuple[int | None, plots.Panel]]] = defaultdict(list)
    for group, memory, panel in panels:
        groups[group].append((memory, panel))
    merged = []
    for (engine, workload, scale, _, what), members in groups.items():
        if len(members) == 1:
            merged.append(members[0][1])
            continue
        members.sort(key=lambda member: -memory_order(member[0]))
        rows = []
        for memory, panel in members:
            cheapest_first = sorted(panel.rows, key=lambda row: (-row.pct if panel.rate else row.pct, row.encryption))
            rows += [replace(row, encryption=plots.row_label(row.encryption, memory, True), floor=panel.floor)
                     for row in cheapest_first]
        ratios = [(memory, regimes.get((engine, memory, workload, scale))) for memory, _ in members]
        known = [f"{plots.size_label(memory)} {times(regime.ratio)}"
                 for memory, regime in ratios if regime is not None]
        first = members[0][1]
        merged.append(plots.Panel(f"{engine} · {what}", tuple(rows), None, rate=first.rate,
                                  regime=f"data ÷ cache: {', '.join(known)}" if known else "",
                                  kind=first.kind, ordered=True))
    return merged


def _floor_text(floor: SummaryRecord | None, without: str) -> str:
    """The placebo's noise floor as a headline names it; `without` where the run has no placebo. A
    placebo measured once has no interval, so no floor either (not "±nan%")."""
    if floor is None:
        return without
    width = resolution(floor)
    return f"noise floor ±{width:.1f}%" if math.isfinite(width) else "no noise floor (the placebo measured once)"


def resolved(record: SummaryRecord, floor: SummaryRecord | None) -> bool:
    """An overhead the run resolves: measured in two rounds or more, its interval off zero and
    outside the placebo's (what _grouped calls a cost, or faster)."""
    compared = record.overhead
    assert compared is not None
    return (not compared.measured_once and compared.significant
            and not below_resolution(record, floor))


def _short(record: SummaryRecord, floor: SummaryRecord | None, splits: Splits) -> str:
    """An encryption's overhead in a glance: "(noise)" where the run does not resolve it, which part
    dominates where its bare layer was measured beside it."""
    compared = record.overhead
    assert compared is not None
    split = splits.get(record.cell)
    notes = ([] if resolved(record, floor) else ["measured once" if compared.measured_once else "noise"]) + (
        [layers.in_words(split, short=True)] if split else [])
    return f"{record.cell.encryption} {percent(compared.pct)}" + (f" ({'; '.join(notes)})" if notes else "")


@dataclass(frozen=True)
class Glance:
    """“In one minute”: a line per engine, workload and scale (`costs`), then whether the machine
    was busy and the at-rest line (`machine_and_at_rest`)."""

    costs: list[str]
    machine_and_at_rest: list[str]

    @property
    def lines(self) -> list[str]:
        return self.costs + self.machine_and_at_rest

    def shortened(self, most: int) -> list[str]:
        """The lines a terminal shows at the end of a run: at most `most` cost lines and one
        that counts the others, then always the busy machine and the at-rest line, so that a
        run of many engines never leaves out whether its data was encrypted."""
        cut = len(self.costs) - most
        more = [f"… and {cut} more in the report's “In one minute”"] if cut > 0 else []
        return self.costs[:most] + more + self.machine_and_at_rest


def summary_lines(run: RunData, records: list[SummaryRecord]) -> list[str]:
    """“In one minute” as a reader takes it in at a glance (about 25 words a line): per engine,
    workload and scale its cheapest and dearest encryption on the headline figure (an overhead
    the run does not resolve marked "(noise)"), the noise floor and the regime; then the busy
    machine and the at-rest line. The sentences with every encryption and interval
    (`headline`) lead the findings."""
    return glance(run, records).lines


def glance(run: RunData, records: list[SummaryRecord]) -> Glance:
    """`summary_lines`, its cost lines apart from the machine and at-rest lines."""
    regimes, figures = cache.regimes(run), chosen_figures(records)
    splits = _splits(run, records, figures)
    lines = []
    for (engine, _, memory, workload, scale), figure, chosen, floor in figures:
        rate = figure.metric in PER_MINUTE
        ranked = sorted(chosen, key=lambda r: ((-1.0 if rate else 1.0) * r.overhead.pct,  # type: ignore[union-attr]
                                               r.cell.encryption))
        who = (f"{engine_label(engine, memory)} · {workload} {scale_label(workload, scale)} · "
               f"{figure.short or figure.label}")
        costs = (_short(ranked[0], floor, splits) if len(ranked) == 1
                 else f"cheapest {_short(ranked[0], floor, splits)}, dearest {_short(ranked[-1], floor, splits)}")
        floor_text = _floor_text(floor, "no placebo")
        regime = regimes.get((engine, memory, workload, scale))
        regime_text = ("" if regime is None else "; data fits its cache" if not regime.spills
                       else f"; data {times(regime.ratio)} its cache" if layer_bound(chosen, splits)  # no "decrypted"
                       else f"; data {times(regime.ratio)} its cache: pages decrypted on every read")
        lines.append(f"{who}: {costs}; {floor_text}{regime_text}.")
    return Glance(lines, _machine_and_at_rest(run))
