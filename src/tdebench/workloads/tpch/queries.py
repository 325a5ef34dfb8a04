"""The 22 TPC-H queries per SQL dialect.

DuckDB's text (from its tpch extension, see sql/README.md) is the source. Other dialects get
it transpiled by sqlglot at runtime (for Oracle with its date literals rewritten, see
`_dated`), except where the transpiled text gives a wrong answer
or no answer; those queries have a hand-written `sql/<dialect>/qNN.sql` override. Keeping
overrides few and in files keeps every deviation from the reference text reviewable.
"""

from __future__ import annotations

import functools

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel

from tdebench.engines import dialects
from tdebench.workloads import sqlfiles
from tdebench.workloads.tpch.schema import DIALECTS

SOURCE_DIALECT = "duckdb"


def query(number: int, dialect: str) -> str:
    """The text of TPC-H query `number` (1..22) for `dialect`."""
    if not 1 <= number <= 22:
        raise ValueError(f"TPC-H has queries 1..22, not {number}")
    if dialect not in DIALECTS:
        raise ValueError(f"no TPC-H queries for dialect {dialect!r}; known: {', '.join(DIALECTS)}")
    return _query(number, dialect)


@functools.cache
def _query(number: int, dialect: str) -> str:
    text = _file(number, dialect)
    if text is not None:
        return text
    source = _file(number, SOURCE_DIALECT)
    if source is None:
        raise FileNotFoundError(f"package data sql/{SOURCE_DIALECT}/q{number:02d}.sql is missing")
    (tree,) = sqlglot.parse(source, read=SOURCE_DIALECT)
    assert tree is not None, f"sql/{SOURCE_DIALECT}/q{number:02d}.sql holds no statement"
    if not dialects.dialect(dialect, "TPC-H queries").iso_date_cast:
        tree = tree.transform(_dated)
    # RAISE, not the default WARN: a construct sqlglot cannot express in the target dialect
    # must stop the run and get an override file, not silently become different SQL.
    return tree.sql(dialect=dialect, pretty=True, unsupported_level=ErrorLevel.RAISE)


def _dated(node: exp.Expression) -> exp.Expression:
    """CAST('1998-09-02' AS DATE) as TO_DATE('1998-09-02', 'YYYY-MM-DD') (Oracle's form), for a
    dialect that reads a string cast to DATE with the session's format (Oracle's NLS_DATE_FORMAT,
    DD-MON-RR by default, which refuses the spec's ISO dates): every date literal of the 12
    queries that have them would fail."""
    if (isinstance(node, exp.Cast) and node.to.is_type(exp.DataType.Type.DATE)
            and isinstance(node.this, exp.Literal) and node.this.is_string):
        return exp.DateStrToDate(this=node.this)
    return node


def _file(number: int, dialect: str) -> str | None:
    return sqlfiles.read(__package__, dialect, f"q{number:02d}")
