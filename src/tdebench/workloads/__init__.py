"""Workloads by name: the registry, which the plan, the runner and the report (report/data/declared.py) read."""

from __future__ import annotations

from tdebench.workloads.backup import BackupWorkload
from tdebench.workloads.base import GEOMEAN_STEP, Headline, Option, Reporting, RunContext, Workload, WrongAnswer
from tdebench.workloads.crud import CrudWorkload
from tdebench.workloads.oltp import OltpWorkload
from tdebench.workloads.maintenance import MaintenanceWorkload
from tdebench.workloads.strength import StrengthWorkload
from tdebench.workloads.tpch import TpchWorkload

WORKLOADS: dict[str, type[Workload]] = {
    TpchWorkload.name: TpchWorkload,
    BackupWorkload.name: BackupWorkload,
    CrudWorkload.name: CrudWorkload,
    OltpWorkload.name: OltpWorkload,
    MaintenanceWorkload.name: MaintenanceWorkload,
    StrengthWorkload.name: StrengthWorkload,
}

__all__ = ["GEOMEAN_STEP", "WORKLOADS", "BackupWorkload", "CrudWorkload", "Headline", "MaintenanceWorkload",
           "OltpWorkload", "Option", "Reporting", "RunContext", "StrengthWorkload", "TpchWorkload", "Workload",
           "WrongAnswer"]
