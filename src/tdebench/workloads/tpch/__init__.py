"""The TPC-H workload: schema, data (DuckDB dbgen), the 22 queries per dialect, reference answers."""

from tdebench.workloads.tpch.workload import TpchWorkload

__all__ = ["TpchWorkload"]
