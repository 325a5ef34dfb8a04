"""The client-side transactions' statements for SQL Server (T-SQL) and Oracle: the shared text
of transactions.py transpiled by sqlglot (workloads/transpile.py), with what sqlglot gets wrong
or cannot express fixed here, each fix saying why. Neither server can run here: these follow
the engines' documentation, and tests/unit/test_remote_workloads.py parses every one with
sqlglot's dialect and runs them on a fake server.

T-SQL:
- a locking read (`FOR UPDATE`, which sqlglot refuses for T-SQL) takes update locks instead:
  `WITH (UPDLOCK, ROWLOCK)` on the tables it reads, as SQL Server's own TPC-C kits do;
- `RETURNING` becomes `OUTPUT`, whose columns must say which row image they mean:
  `inserted.` (an UPDATE's new values) or `deleted.` (a DELETE's rows); sqlglot writes them
  bare, and a DELETE's OUTPUT before its FROM, where SQL Server expects the table: a DELETE is
  written `DELETE t OUTPUT deleted.c WHERE …` (FROM is optional), as Microsoft's documentation
  of the OUTPUT clause does;
- an ORDER BY keeps SQL Server's own NULL order: oltp sorts only by NOT NULL keys, and the
  CASE that sqlglot adds to mimic PostgreSQL's would keep SQL Server from reading the key's
  index in order.

Oracle:
- a multi-row `INSERT … VALUES (…), (…)` (a New-Order's lines) is `INSERT ALL INTO … SELECT 1
  FROM DUAL`, Oracle's multi-row insert before 23ai;
- a row-limited locking read (Delivery's oldest new order: `FETCH FIRST 1 ROWS ONLY FOR
  UPDATE`) is refused by Oracle (ORA-02014), so it reads without the lock; the DELETE that
  follows takes it;
- `DELETE … RETURNING` fills bind variables in Oracle, not rows: it is a locking read of the
  rows the DELETE will remove (same WHERE, same parameters) and then the DELETE, which removes
  exactly those rows, since no other transaction can change them while they are locked. A
  concurrent Delivery that took the order first leaves the read empty, and the district is
  skipped, as on every engine;
- an `UPDATE … RETURNING` is refused here: Oracle's transactions run with
  `update_returning = False` (transactions.py).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel

from tdebench.engines.base import Connection, Statement, execute_in_turn
from tdebench.workloads import transpile

AS_WRITTEN = frozenset({"BEGIN TRANSACTION", "COMMIT", "ROLLBACK", "SET TRANSACTION READ WRITE",
                        "SET TRANSACTION READ ONLY"})
"""Transaction control, which each dialect's entry in transactions.py spells as its server
takes it (and its DB-API connection recognises: engines/dbapi.py)."""


@dataclass(frozen=True)
class Translated:
    """One shared statement in a dialect: the statements to run in order, each with the shared
    statement's parameters, and which one's rows are its result."""

    statements: tuple[str, ...]
    rows_from: int = 0


@functools.lru_cache(maxsize=4096)
def translated(sql: str, dialect: str) -> Translated:
    """`sql` (a statement of transactions.py) for `dialect` (tsql or oracle; the shared
    dialects get it as written)."""
    if sql.strip().upper() in AS_WRITTEN or dialect in transpile.SHARED:
        return Translated((sql,))
    tree = transpile.parse(sql)
    if isinstance(tree, exp.Delete) and tree.args.get("returning"):
        return _FIXES[dialect].delete_returning(tree)
    return Translated((transpile.statement(sql, dialect, _fix),))


def _fix(tree: exp.Expr, dialect: str) -> exp.Expr:
    return _FIXES[dialect].tree(tree)


def _tsql(tree: exp.Expr) -> exp.Expr:
    if isinstance(tree, exp.Select) and tree.args.get("locks"):
        tree.set("locks", None)
        for table in tree.find_all(exp.Table):
            table.set("hints", [exp.WithTableHint(expressions=[exp.var("UPDLOCK"), exp.var("ROWLOCK")])])
    returning = tree.args.get("returning")
    if returning is not None:  # an UPDATE's (a DELETE's: _tsql_delete_output)
        for column in returning.find_all(exp.Column):
            column.set("table", exp.to_identifier("inserted"))
    for ordered in tree.find_all(exp.Ordered):
        ordered.set("nulls_first", not ordered.args.get("desc"))  # SQL Server's own: NULL sorts lowest
    return tree


def _oracle(tree: exp.Expr) -> exp.Expr:
    if isinstance(tree, exp.Update) and tree.args.get("returning"):
        raise ValueError("Oracle's RETURNING fills bind variables, not rows: its transactions run with "
                         "update_returning = False")
    if isinstance(tree, exp.Select) and tree.args.get("locks") and tree.args.get("limit"):
        tree.set("locks", None)
    values = tree.expression if isinstance(tree, exp.Insert) else None
    if isinstance(values, exp.Values) and len(values.expressions) > 1:
        into = tree.this.sql(dialect="oracle")
        rows = " ".join(f"INTO {into} VALUES {row.sql(dialect='oracle')}" for row in values.expressions)
        return sqlglot.parse_one(f"INSERT ALL {rows} SELECT 1 FROM DUAL", read="oracle")
    return tree


def _tsql_delete_output(delete: exp.Delete) -> Translated:
    """`DELETE t OUTPUT deleted.c, … WHERE …` (module docstring)."""
    where = delete.args.get("where")
    columns = ", ".join(f"deleted.{e.sql(dialect='tsql')}" for e in delete.args["returning"].expressions)
    return Translated((f"DELETE {delete.this.sql(dialect='tsql')} OUTPUT {columns}"
                       + (f" WHERE {where.this.sql(dialect='tsql')}" if where is not None else ""),))


def _oracle_delete_returning(delete: exp.Delete) -> Translated:
    """The locking read of what `delete` removes, then `delete` without RETURNING (module docstring)."""
    where = delete.args.get("where")
    read = exp.select(*(e.copy() for e in delete.args["returning"].expressions)).from_(delete.this.copy())
    if where is not None:
        read = read.where(where.this.copy())
    read = read.lock(update=True)
    delete = delete.copy()
    delete.set("returning", None)
    return Translated(tuple(tree.sql(dialect="oracle", unsupported_level=ErrorLevel.RAISE) for tree in (read, delete)))


@dataclass(frozen=True)
class _Fixes:
    """What one transpiled dialect needs beyond sqlglot: a statement's tree fixed, and a DELETE …
    RETURNING in its own form."""

    tree: Callable[[exp.Expr], exp.Expr]
    delete_returning: Callable[[exp.Delete], Translated]


_FIXES: dict[str, _Fixes] = {"tsql": _Fixes(_tsql, _tsql_delete_output),
                             "oracle": _Fixes(_oracle, _oracle_delete_returning)}
"""By dialect (each one of transpile.TRANSPILED), as a workload's `sql/<dialect>/` files are."""


class TranslatedConnection:
    """A user's connection that runs transactions.py's statements in its dialect (`translated`)."""

    def __init__(self, conn: Connection, dialect: str) -> None:
        self._conn = conn
        self._dialect = dialect

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        plan = translated(sql, self._dialect)
        results = [self._conn.execute(statement, params) for statement in plan.statements]
        return results[plan.rows_from]

    def execute_batch(self, statements: Sequence[Statement]) -> list[list[tuple[Any, ...]]]:
        """In turn: the plain DB-API connections of SQL Server and Oracle have no batch."""
        return execute_in_turn(self, statements)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        (statement,) = translated(sql, self._dialect).statements
        self._conn.executemany(statement, rows)

    def set_timeout(self, seconds: float | None) -> None:
        self._conn.set_timeout(seconds)

    def close(self) -> None:
        self._conn.close()
