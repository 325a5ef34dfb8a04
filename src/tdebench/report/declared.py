"""What the report knows of the workloads: the one module of report/ that reads the workloads
registry (tdebench.workloads), and no other module of workloads/.

Each workload declares on its class, as data, what its report needs: the cells it leads with
(`Workload.headlines`), how its scale reads (`scale_format`), the window and rates of a workload
that measures one (oltp's TPM and NOPM), and the names its own section lays out (crud's steps
and latency metrics, oltp's transaction mix, backup's sealings). The report's modules read them
here, so a workload's internals can change without the report following them, and the imports
point one way: report → the registry, never into a workload's modules
(tests/unit/test_imports.py).
"""

from __future__ import annotations

from collections.abc import Iterator

from tdebench.workloads import (WORKLOADS, BackupWorkload, CrudWorkload, HeadlineCells, MaintenanceWorkload,
                                OltpWorkload, StrengthWorkload, Workload)

BACKUP, CRUD, MAINTENANCE, OLTP, STRENGTH = (BackupWorkload, CrudWorkload, MaintenanceWorkload, OltpWorkload,
                                             StrengthWorkload)
"""The workloads whose own sections (report/backup.py, crud.py, maintenance.py, oltp.py, strength.py) read
their names."""

PER_MINUTE: dict[str, str] = {rate: count for workload in WORKLOADS.values()
                              for rate, count in workload.per_minute.items()}
"""Every rate a workload's measured window has (oltp's TPM and NOPM): rate → the count it is per
minute of."""
QUERY_TESTS: tuple[str, ...] = tuple(dict.fromkeys(test for workload in WORKLOADS.values()
                                                   for test in workload.query_tests))
"""The tests whose steps are numbered queries, as their workloads declare them (TPC-H's power
and throughput)."""


def workload(name: str) -> type[Workload] | None:
    """The workload of a stored name, or None for one this tdebench does not know (an older or a
    newer run's): the report then reads it as it reads TPC-H."""
    return WORKLOADS.get(name)


def headlines() -> Iterator[tuple[type[Workload], HeadlineCells]]:
    """Every workload's headline cells, with the workload that declared them."""
    for declaring in WORKLOADS.values():
        for cells in declaring.headlines:
            yield declaring, cells
