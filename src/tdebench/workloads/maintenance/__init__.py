"""Maintenance: index rebuild (after Dolyetyus (n.d.), docs/references.md), encrypting an
existing database, changing its key."""

from tdebench.workloads.maintenance.workload import MaintenanceWorkload

__all__ = ["MaintenanceWorkload"]
