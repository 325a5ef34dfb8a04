"""What the report knows of the workloads: the one module of report/ that reads the workloads
registry (tdebench.workloads), and no other module of workloads/.

Each workload declares on its class, as data, what its report needs: the cells it leads with
(`Workload.reporting`'s headlines), how its scale reads (`scale_format`), the window and rates of a workload
that measures one (oltp's TPM and NOPM), and the names its own section lays out (crud's steps
and latency metrics, oltp's transaction mix, backup's sealings). The report's modules read them
here, so a workload's internals can change without the report following them, and the imports
point one way: report → the registry, never into a workload's modules
(tests/unit/test_imports.py).
"""

from __future__ import annotations

import functools

from tdebench.workloads import (GEOMEAN_STEP, WORKLOADS, BackupWorkload, CrudWorkload, Headline, MaintenanceWorkload,
                                OltpWorkload, StrengthWorkload, Workload)

BACKUP, CRUD, MAINTENANCE, OLTP, STRENGTH = (BackupWorkload, CrudWorkload, MaintenanceWorkload, OltpWorkload,
                                             StrengthWorkload)
"""The workloads whose own sections (report/sections/backup.py, crud.py, maintenance.py, oltp.py, strength.py) read
their names."""

PER_MINUTE: dict[str, str] = {rate: count for workload in WORKLOADS.values()
                              for rate, count in workload.reporting.per_minute.items()}
"""Every rate a workload's measured window has (oltp's TPM and NOPM): rate → the count it is per
minute of."""
QUERY_TESTS: tuple[str, ...] = tuple(dict.fromkeys(test for workload in WORKLOADS.values()
                                                   for test in workload.reporting.query_tests))
"""The tests whose steps are numbered queries, as their workloads declare them (TPC-H's power
and throughput)."""
LABELLED: tuple[Headline, ...] = tuple(dict.fromkeys(headline for workload in WORKLOADS.values()
                                                     for headline in workload.reporting.headlines if headline.label))
"""Every labelled headline (one figure per configuration) any workload declares, in the order the
report's tables and plots show them: the registry's order, each workload's in its own."""
__all__ = ["BACKUP", "CRUD", "GEOMEAN_STEP", "LABELLED", "MAINTENANCE", "OLTP", "PER_MINUTE", "QUERY_TESTS",
           "STRENGTH", "Headline", "headlines_of", "label_order", "labelled_headline", "tests_of", "timed", "workload"]


def workload(name: str) -> type[Workload] | None:
    """The workload of a stored name, or None for one this tdebench does not know (an older or a
    newer run's): the report then reads it as it reads TPC-H."""
    return WORKLOADS.get(name)


@functools.cache
def headlines_of(name: str) -> tuple[Headline, ...]:
    """The headlines of a stored workload name; for one this tdebench does not know, every
    labelled one (it is read as TPC-H and the load are)."""
    known = WORKLOADS.get(name)
    return known.reporting.headlines if known is not None else LABELLED


@functools.cache
def tests_of(name: str) -> tuple[str, ...]:
    """A stored workload's tests, which an unlabelled headline of it covers (none when unknown)."""
    known = WORKLOADS.get(name)
    return known.tests if known is not None else ()


def label_order(label: str) -> int:
    """Where a labelled figure comes in tables and plots: LABELLED's order, any other after."""
    labels = [headline.label for headline in LABELLED]
    return labels.index(label) if label in labels else len(labels)


def labelled_headline(workload: str, test: str, step: str, metric: str) -> Headline | None:
    """The labelled headline of `workload` a cell (test, step, metric) is, if any: by test, step
    and metric, not by test alone (oltp's load test has TPM and NOPM of its own beside the load)."""
    return next((h for h in headlines_of(workload) if h.label and h.covers((), test, step, metric)), None)


def timed(name: str) -> bool:
    """Whether a stored workload's figures are timings (`Workload.timed`); an unknown one's are."""
    known = WORKLOADS.get(name)
    return known.timed if known is not None else True
