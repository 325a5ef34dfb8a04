"""What went wrong with a transaction: retry it (a lost race), count it as a business
rollback, or count it as an error of its type.

Concurrent transactions on one warehouse collide by design (every Payment updates the
warehouse's row). Each engine reports the collision its own way — a deadlock or lock-wait
timeout (MariaDB), a deadlock or serialization failure (PostgreSQL), a write-write conflict
(DuckDB's optimistic concurrency), a busy database (SQLite), a deadlock victim (SQL Server's
error 1205, Oracle's ORA-00060) — and in each case the
transaction was rolled back and running it again is the right answer. Classification looks
at the error's attributes rather than importing every driver, so it works with whichever
drivers are installed.
"""

from __future__ import annotations

from dataclasses import dataclass

from tdebench.engines.base import QueryTimeout

ROLLBACK_MARKER = "tdebench-rollback"
"""The message the stored procedures raise for the spec's 1% New-Orders with an unused item."""

_SQLSTATES = {"40001": "serialization failure", "40P01": "deadlock"}  # PostgreSQL
_MYSQL_ERRNOS = {1213: "deadlock", 1205: "lock wait timeout"}  # MariaDB/InnoDB
_MSSQL_ERRNOS = {1205: "deadlock"}  # SQL Server: chosen as the deadlock victim
_ORACLE_CODES = {"ORA-00060": "deadlock", "ORA-08177": "serialization failure"}
_NAMES = {"TransactionException": "write conflict",  # DuckDB
          "BusyError": "busy", "LockedError": "busy"}  # SQLite (apsw)


@dataclass(frozen=True)
class Problem:
    kind: str  # "rollback", a retryable kind ("deadlock", …) or an error's type name
    retryable: bool

    @property
    def rollback(self) -> bool:
        return self.kind == "rollback"


def classify(exc: BaseException) -> Problem:
    if ROLLBACK_MARKER in str(exc):
        return Problem("rollback", False)
    if isinstance(exc, QueryTimeout):
        return Problem("timeout", False)
    module = type(exc).__module__
    if module.startswith("pymysql"):  # before SQLSTATEs: MariaDB's deadlock has SQLSTATE 40001 too
        if exc.args and exc.args[0] in _MYSQL_ERRNOS:
            return Problem(_MYSQL_ERRNOS[exc.args[0]], True)
    elif module.startswith("pymssql"):  # before SQLSTATEs, as PyMySQL's errors: (number, message)
        if exc.args and exc.args[0] in _MSSQL_ERRNOS:
            return Problem(_MSSQL_ERRNOS[exc.args[0]], True)
    elif module.startswith("oracledb"):
        code = next((code for code in _ORACLE_CODES if code in str(exc)), None)
        if code is not None:
            return Problem(_ORACLE_CODES[code], True)
    elif getattr(exc, "sqlstate", None) in _SQLSTATES:
        return Problem(_SQLSTATES[exc.sqlstate], True)  # type: ignore[attr-defined]
    for cls in type(exc).__mro__:
        if cls.__name__ in _NAMES and cls.__module__.split(".")[0] in ("duckdb", "_duckdb", "apsw"):
            return Problem(_NAMES[cls.__name__], True)
    return Problem(type(exc).__name__, False)
