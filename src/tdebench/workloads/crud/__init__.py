"""The crud workload: seed 000's persons table by size; select, insert, update, delete of k
rows, point lookups and a full scan, each measured and checked on its own."""

from tdebench.workloads.crud.workload import CrudWorkload

__all__ = ["CrudWorkload"]
