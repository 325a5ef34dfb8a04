"""The crud workload: the persons table of Moulianitakis & Asimakopoulos (2019) by size;
select, insert, update, delete of k rows, point lookups and a full scan, each measured and
checked on its own (docs/references.md cites the studies)."""

from tdebench.workloads.crud.workload import CrudWorkload

__all__ = ["CrudWorkload"]
