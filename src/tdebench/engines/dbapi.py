"""What the server engines' DB-API connections share: the placeholder style the workloads
write, turned into the drivers', Parquet data turned into CSV for a server's bulk loader, and a
plain DB-API connection for drivers with nothing of their own to add (SQL Server, Oracle)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path
from typing import Any

from tdebench.engines.base import QueryTimeout, Statement, execute_in_turn, raises_conflicts
from tdebench.engines.dialects import Dialect


def parquet_to_csv(parquet: Path, columns: Sequence[str], target: Path, delimiter: str = ",") -> int:
    """Write `columns` of a Parquet file as headerless CSV (quote and escape `"`), for a
    server's own bulk loader (LOAD DATA, COPY); returns the number of rows written."""
    import duckdb

    reader = duckdb.connect(":memory:")
    try:
        quoted = str(target).replace("'", "''")
        ((written,),) = reader.execute(
            f"COPY (SELECT {', '.join(columns)} FROM read_parquet(?)) TO '{quoted}' "
            f"(FORMAT csv, HEADER false, DELIMITER '{delimiter}', QUOTE '\"', ESCAPE '\"')",
            [str(parquet)]).fetchall()
    finally:
        reader.close()
    return written


@functools.lru_cache(maxsize=4096)
def qmark_to_format(sql: str) -> str:
    """Workloads write DB-API `?` placeholders; PyMySQL, psycopg and pymssql take `%s`, with a
    literal `%` written `%%`. A `?` inside quotes ('…', "…", `…`) is text and stays. Cached: a
    workload runs the same few statements again and again (oltp's client-side transactions
    spent a fifth of their Python time here, character by character)."""
    return _marks(sql)


@functools.lru_cache(maxsize=4096)
def qmark_to_numeric(sql: str) -> str:
    """`?` placeholders as oracledb takes them: `:1`, `:2`, … (a `%` stays as it is)."""
    return _marks(sql, numbered=":")


@functools.lru_cache(maxsize=4096)
def qmark_to_dollar(sql: str) -> str:
    """`?` placeholders as PostgreSQL's protocol takes them (libpq, without psycopg's
    conversion): `$1`, `$2`, … (a `%` stays as it is)."""
    return _marks(sql, numbered="$")


def _marks(sql: str, numbered: str = "") -> str:
    """`?` outside quotes as `%s` (`%` as `%%`), or numbered after the prefix `numbered`."""
    out, quote, count = [], "", 0
    for char in sql:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"`":
            quote = char
        elif char == "?":
            count += 1
            out.append(f"{numbered}{count}" if numbered else "%s")
            continue
        out.append("%%" if char == "%" and not numbered else char)
    return "".join(out)


@raises_conflicts
class DBAPIConnection:
    """A plain DB-API 2 connection (pymssql, oracledb) of `dialect` as the workloads use it: autocommit
    statements, `executemany` in one transaction, the driver's own placeholders (`marks`) and a
    statement timeout set by `timeout(conn, seconds)` where the driver has one, which returns
    the driver connection to use from then on (pymssql takes its timeout only when it connects).

    A statement in `begins` (e.g. T-SQL's BEGIN TRANSACTION, Oracle's SET TRANSACTION) opens an
    explicit transaction, as oltp's client-side transactions run them: until its COMMIT or
    ROLLBACK no statement is committed on its own, and `autocommit(conn, False)` turns off a
    driver's own autocommit meanwhile (oracledb commits after every statement with it on). A
    driver error that `timed_out` recognises as the statement timeout becomes QueryTimeout, one
    that the dialect's `conflict` recognises as a lost race Conflict, as the workloads expect of
    every engine."""

    def __init__(self, conn: Any, dialect: Dialect, marks: Callable[[str], str],
                 timeout: Callable[[Any, float | None], Any] | None = None, *, begins: Collection[str] = (),
                 autocommit: Callable[[Any, bool], None] | None = None,
                 timed_out: Callable[[BaseException], bool] | None = None) -> None:
        self._conn = conn
        self.dialect = dialect
        self._marks = marks
        self._timeout = timeout
        self._begins = frozenset(begins)
        self._autocommit = autocommit
        self._timed_out = timed_out
        self._in_transaction = False

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        control = sql.strip().upper()
        if control in self._begins:
            self._explicit(True)
        try:
            rows = self._execute(sql, params)
        finally:
            if control in _ENDS:
                self._explicit(False)
        if not self._in_transaction:
            self._conn.commit()
        return rows

    def _execute(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        cursor = self._conn.cursor()
        try:
            if params:
                cursor.execute(self._marks(sql), tuple(params))
            else:
                cursor.execute(sql)
            return [tuple(row) for row in cursor.fetchall()] if cursor.description else []
        except Exception as exc:
            if self._timed_out is not None and self._timed_out(exc):
                raise QueryTimeout(f"statement stopped by the driver's timeout: {exc}") from None
            raise
        finally:
            cursor.close()

    def _explicit(self, opened: bool) -> None:
        """Enter (or leave) an explicit transaction."""
        self._in_transaction = opened
        if self._autocommit is not None:
            self._autocommit(self._conn, not opened)

    def execute_batch(self, statements: Sequence[Statement]) -> list[list[tuple[Any, ...]]]:
        """In turn: `execute` commits each statement, as these drivers have no batch of their own."""
        return execute_in_turn(self, statements)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        cursor = self._conn.cursor()
        try:
            cursor.executemany(self._marks(sql), [tuple(r) for r in rows])
            self._conn.commit()
        except BaseException:
            self._conn.rollback()
            raise
        finally:
            cursor.close()

    def set_timeout(self, seconds: float | None) -> None:
        if seconds is not None and seconds <= 0:
            raise ValueError("a timeout must be positive")
        if self._timeout is not None:
            self._conn = self._timeout(self._conn, seconds)

    def close(self) -> None:
        self._conn.close()


_ENDS = frozenset({"COMMIT", "ROLLBACK"})
"""The statements that end an explicit transaction (DBAPIConnection's `begins`)."""
