"""Where a cost sets in: for an encryption measured at several cache sizes, between which two the
run's figure goes from no resolved cost to a resolved one.

The cost curve (plots.cost_curves) draws each overhead against data ÷ cache; this says in words
what a reader looks for in it: the largest cache at which the cost is resolved above the noise
floor (`headline.resolved`: off zero and outside the placebo's interval, a positive overhead) and
the smallest at which it is not. A curve with no resolved cost, or one resolved at every cache, says
that instead; nothing is read between two measured points.
"""

from __future__ import annotations

from collections import defaultdict

from tdebench.report.summaries import cache
from tdebench.report.sections import headline
from tdebench.report.data.records import BASELINE, PLACEBO, SummaryRecord, floors, headline_records, scale_label
from tdebench.report.data.units import change, times
from tdebench.results import RunData


def _point(ratio: float, record: SummaryRecord, resolved: bool) -> str:
    compared = record.overhead
    assert compared is not None
    memory = f"{record.cell.memory_mb} MB: " if record.cell.memory_mb is not None else ""
    return (f"{times(ratio)} ({memory}{change(compared.pct, compared.ci_low, compared.ci_high)}"
            f"{'' if resolved else ', not resolved'})")


def sentences(run: RunData, records: list[SummaryRecord]) -> list[str]:
    """Per engine, workload, scale, timed figure and encryption measured at two cache sizes or more:
    where its cost sets in (see the module)."""
    ratios = {config: regime.ratio for config, regime in cache.regimes(run).items()}
    floor_of = floors(records)
    curves: dict[tuple, list[tuple[float, SummaryRecord, bool]]] = defaultdict(list)
    for figure, record in headline_records(records):
        cell, compared = record.cell, record.overhead
        ratio = ratios.get((cell.engine, cell.memory_mb, cell.workload, cell.scale))
        if (figure.metric != "elapsed_s" or compared is None or ratio is None
                or cell.encryption in (BASELINE, PLACEBO)):
            continue
        resolved = headline.resolved(record, floor_of.get(cell.comparison)) and compared.pct > 0
        curves[(cell.engine, cell.host or "", cell.workload, cell.scale, figure.short or figure.label,
                cell.encryption)].append((ratio, record, resolved))
    found = []
    for (engine, host, workload, scale, figure, encryption), points in sorted(curves.items()):
        if len({ratio for ratio, _, _ in points}) < 2:
            continue
        points.sort(key=lambda point: point[0])
        who = (f"{engine}{f' @ {host}' if host else ''} {encryption} · {workload} {scale_label(workload, scale)} · "
               f"{figure}")
        first = next((i for i, (_, _, resolved) in enumerate(points) if resolved), None)
        if first is None:
            found.append(f"{who}: no cost resolved at any cache measured, up to data "
                         f"{_point(*points[-1])} the cache (“Cost curve”).")
        elif first == 0:
            found.append(f"{who}: a cost at every cache measured, already at data {_point(*points[0])} the "
                         "cache (“Cost curve”).")
        else:
            found.append(f"{who}: the cost sets in between data {_point(*points[first - 1])} and "
                         f"{_point(*points[first])} the cache; nothing was measured in between (“Cost curve”).")
    return found
