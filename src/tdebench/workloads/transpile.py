"""Statements the workloads write once, in the SQL that DuckDB, SQLite, PostgreSQL and MariaDB
share, turned into T-SQL (SQL Server) and Oracle's SQL by sqlglot for the servers reached by url.

As for the TPC-H queries (workloads/tpch/queries.py), sqlglot transpiles and a construct it
cannot express in the target dialect stops the run (`ErrorLevel.RAISE`) rather than silently
become other SQL; a workload fixes what sqlglot gets wrong in the tree it returns (`fix`), so
every deviation from the shared text is written down beside the workload (oltp's:
workloads/oltp/translated.py). `?` placeholders stay `?`: the drivers' connections turn them
into their own.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel

from tdebench.engines import dialects

SHARED = tuple(name for name, d in dialects.DIALECTS.items() if d.shared_sql)
"""The dialects that run the workloads' statements as written."""
TRANSPILED = tuple(name for name, d in dialects.DIALECTS.items() if not d.shared_sql)
"""The dialects whose statements are the shared ones transpiled."""
SOURCE = "postgres"
"""The dialect sqlglot reads the shared text as."""


def parse(sql: str) -> exp.Expr:
    """The shared text as sqlglot's tree."""
    tree = sqlglot.parse_one(sql, read=SOURCE)
    assert tree is not None, f"no statement in {sql!r}"
    return tree


@functools.lru_cache(maxsize=4096)
def statement(sql: str, dialect: str,
              fix: Callable[[exp.Expr, str], exp.Expr] | None = None) -> str:
    """`sql` for `dialect`: as written for the shared dialects, else transpiled (with the tree
    first passed through `fix(tree, dialect)` when given). Cached: a workload runs the same few
    statements again and again."""
    if dialect in SHARED:
        return sql
    if dialect not in TRANSPILED:
        raise ValueError(f"no statements for dialect {dialect!r}; known: {', '.join(SHARED + TRANSPILED)}")
    tree = parse(sql)
    if fix is not None:
        tree = fix(tree, dialect)
    return tree.sql(dialect=dialect, unsupported_level=ErrorLevel.RAISE)
