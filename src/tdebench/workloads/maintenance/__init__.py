"""Maintenance: index rebuild, encrypting an existing database, changing its key (seed 002)."""

from tdebench.workloads.maintenance.workload import MaintenanceWorkload

__all__ = ["MaintenanceWorkload"]
