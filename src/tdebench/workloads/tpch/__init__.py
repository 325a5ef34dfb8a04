"""The TPC-H workload: schema, data (DuckDB dbgen), the 22 queries per dialect, reference answers.

The maintenance and backup workloads run on TPC-H's data and load; what they use of it is what
this package exports, and they import none of its modules.
"""

from tdebench.workloads.tpch.answers import answer_problem
from tdebench.workloads.tpch.schema import PRIMARY_KEYS, SENSITIVE, TABLES
from tdebench.workloads.tpch.workload import TpchWorkload

__all__ = ["PRIMARY_KEYS", "SENSITIVE", "TABLES", "TpchWorkload", "answer_problem"]
