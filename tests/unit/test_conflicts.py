"""Every engine's connection raises a lost race as `Conflict` (engines/base.py): the driver's own
error (a real class of the driver, made by hand or, for DuckDB and SQLite, raised by a real race
in memory or a temp file) classified by the connection's dialect, chained as the cause, its
message the kind alone; any other error passes through unchanged. No server is needed: the
servers' connections wrap a stand-in for the driver's connection that raises the error."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tdebench.engines import dialects
from tdebench.engines.base import Conflict
from tdebench.engines.dbapi import DBAPIConnection, qmark_to_format
from tdebench.engines.duckdb import DuckDBConnection
from tdebench.engines.mariadb import MariaDBConnection
from tdebench.engines.postgres import PostgresConnection
from tdebench.engines.mysql import MARIADB_TIMEOUT
from tdebench.engines.remote_mysql import RemoteMySQLConnection
from tdebench.engines.sqlcipher import SQLCipherConnection
from tdebench.engines.sqlite import SQLiteConnection


class RaisingDriver:
    """A driver's connection (and cursor) whose every statement raises `error`."""

    description = None

    def __init__(self, error: Exception) -> None:
        self.error = error

    def execute(self, *args: Any) -> Any:
        raise self.error

    executemany = execute

    def cursor(self) -> "RaisingDriver":
        return self

    def mogrify(self, sql: str, params: Any) -> str:
        return sql

    @contextmanager
    def transaction(self) -> Iterator[None]:
        yield

    def __enter__(self) -> "RaisingDriver":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def begin(self) -> None:
        pass

    commit = rollback = close = begin


def _raised(call: Callable[[], Any]) -> BaseException:
    with pytest.raises(Exception) as info:
        call()
    return info.value


def _assert_conflict(raised: BaseException, kind: str, original: type[BaseException]) -> None:
    assert isinstance(raised, Conflict), f"{type(raised).__name__}: {raised}"
    assert (raised.kind, str(raised)) == (kind, kind)  # the kind alone: nothing of the statement
    assert isinstance(raised.__cause__, original)


def _mysql_connections(error: Exception) -> list[Any]:
    return [MariaDBConnection(RaisingDriver(error)),
            RemoteMySQLConnection(RaisingDriver(error), "", MARIADB_TIMEOUT)]


def test_duckdb_write_conflict_is_a_conflict() -> None:
    import duckdb

    raw = duckdb.connect()
    raw.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v INTEGER)")
    raw.execute("INSERT INTO t VALUES (1, 0)")
    holder, user = raw.cursor(), DuckDBConnection(raw.cursor(), None)  # type: ignore[arg-type]
    holder.execute("BEGIN TRANSACTION")
    holder.execute("UPDATE t SET v = v + 1 WHERE k = 1")
    user.execute("BEGIN TRANSACTION")
    _assert_conflict(_raised(lambda: user.execute("UPDATE t SET v = v + 2 WHERE k = 1")), "write conflict",
                     duckdb.TransactionException)
    user.execute("ROLLBACK")
    holder.execute("ROLLBACK")
    other = _raised(lambda: user.execute("INSERT INTO t VALUES (1, 0)"))
    assert type(other) is duckdb.ConstraintException
    raw.close()


def test_sqlite_busy_database_is_a_conflict(tmp_path: Path) -> None:
    import apsw

    path = str(tmp_path / "race.db")
    holder, user = apsw.Connection(path), SQLiteConnection(apsw.Connection(path))
    holder.execute("CREATE TABLE t (k INTEGER PRIMARY KEY)")
    holder.execute("BEGIN IMMEDIATE")
    try:
        _assert_conflict(_raised(lambda: user.execute("BEGIN IMMEDIATE")), "busy", apsw.BusyError)
        _assert_conflict(_raised(lambda: user.executemany("INSERT INTO t VALUES (?)", [(1,)])), "busy",
                         apsw.BusyError)
    finally:
        holder.execute("ROLLBACK")
    other = _raised(lambda: user.execute("SELECT * FROM no_such_table"))
    assert type(other) is apsw.SQLError
    user.close()
    holder.close()


def test_sqlcipher_busy_database_is_a_conflict(tmp_path: Path) -> None:
    """sqlcipher3's errors are the DB-API's, told apart by their SQLite result code."""
    from sqlcipher3 import dbapi2

    path = str(tmp_path / "race.db")
    holder = dbapi2.connect(path, isolation_level=None)
    user = SQLCipherConnection(dbapi2.connect(path, isolation_level=None, timeout=0), None, lambda: None)
    holder.execute("CREATE TABLE t (k INTEGER PRIMARY KEY)")
    holder.execute("BEGIN IMMEDIATE")
    try:
        _assert_conflict(_raised(lambda: user.execute("BEGIN IMMEDIATE")), "busy", dbapi2.OperationalError)
        _assert_conflict(_raised(lambda: user.executemany("INSERT INTO t VALUES (?)", [(1,)])), "busy",
                         dbapi2.OperationalError)
    finally:
        holder.execute("ROLLBACK")
    other = _raised(lambda: user.execute("SELECT * FROM no_such_table"))
    assert type(other) is dbapi2.OperationalError
    user.close()
    holder.close()


def test_postgres_serialization_failure_and_deadlock_are_conflicts() -> None:
    import psycopg

    for error, kind in ((psycopg.errors.SerializationFailure("could not serialize access"), "serialization failure"),
                        (psycopg.errors.DeadlockDetected("deadlock detected"), "deadlock")):
        conn = PostgresConnection(RaisingDriver(error))
        _assert_conflict(_raised(lambda: conn.execute("UPDATE t SET v = 1")), kind, type(error))
        _assert_conflict(_raised(lambda: conn.executemany("UPDATE t SET v = ?", [(1,)])), kind, type(error))
    unique = psycopg.errors.UniqueViolation("duplicate key")
    assert _raised(lambda: PostgresConnection(RaisingDriver(unique)).execute("INSERT")) is unique


def test_mysql_deadlock_and_lock_wait_timeout_are_conflicts() -> None:
    import pymysql

    deadlock = pymysql.err.OperationalError(1213, "Deadlock found when trying to get lock; try restarting transaction")
    from_server = pymysql.err.OperationalError(1213, "Deadlock found")
    from_server.sqlstate = "40001"  # as PyMySQL raises a server's error: MariaDB's deadlock is SQLSTATE 40001 too
    for error, kind in ((deadlock, "deadlock"), (from_server, "deadlock"),
                        (pymysql.err.OperationalError(1205, "Lock wait timeout exceeded"), "lock wait timeout")):
        for conn in _mysql_connections(error):
            _assert_conflict(_raised(lambda: conn.execute("UPDATE t SET v = 1")), kind, pymysql.err.OperationalError)
            _assert_conflict(_raised(lambda: conn.execute_batch([("UPDATE t SET v = ?", (1,))])), kind,
                             pymysql.err.OperationalError)
            _assert_conflict(_raised(lambda: conn.executemany("UPDATE t SET v = ?", [(1,)])), kind,
                             pymysql.err.OperationalError)
    lost = pymysql.err.OperationalError(2013, "Lost connection to server during query")
    for conn in _mysql_connections(lost):
        assert _raised(lambda: conn.execute("SELECT 1")) is lost


def _error_of(module: str, name: str = "OperationalError") -> type[Exception]:
    """An exception class as a driver that cannot be installed here (pymssql, oracledb) defines it:
    the dialect looks at its module and its arguments, never imports the driver."""
    return type(name, (Exception,), {"__module__": module})


def test_sql_server_and_oracle_deadlocks_are_conflicts() -> None:
    mssql, oracle = _error_of("pymssql._pymssql"), _error_of("oracledb.exceptions", "DatabaseError")
    cases = [("tsql", mssql(1205, b"Transaction was deadlocked on lock resources ... deadlock victim"), "deadlock"),
             ("oracle", oracle("ORA-00060: deadlock detected while waiting for resource"), "deadlock"),
             ("oracle", oracle("ORA-08177: can't serialize access for this transaction"), "serialization failure")]
    for dialect, error, kind in cases:
        conn = DBAPIConnection(RaisingDriver(error), dialects.dialect(dialect), qmark_to_format)
        _assert_conflict(_raised(lambda: conn.execute("UPDATE t SET v = 1")), kind, type(error))
        _assert_conflict(_raised(lambda: conn.executemany("UPDATE t SET v = ?", [(1,)])), kind, type(error))
    for dialect, error in (("tsql", mssql(2627, b"Violation of PRIMARY KEY constraint")),
                           ("oracle", oracle("ORA-00001: unique constraint violated"))):
        conn = DBAPIConnection(RaisingDriver(error), dialects.dialect(dialect), qmark_to_format)
        assert _raised(lambda: conn.execute("INSERT")) is error


def test_a_dialect_classifies_only_its_own_drivers_errors() -> None:
    """MariaDB's deadlock is not PostgreSQL's serialization failure though both carry SQLSTATE
    40001; DuckDB's TransactionException is no conflict of SQLite's."""
    import duckdb
    import pymysql

    from_server = pymysql.err.OperationalError(1213, "Deadlock found")
    from_server.sqlstate = "40001"
    assert dialects.dialect("postgres").conflict(from_server) is None
    assert dialects.dialect("sqlite").conflict(duckdb.TransactionException("Conflict")) is None
