"""What each SQL dialect is, as data: the one place a workload asks how an engine spells a thing.

An engine names its dialect (`Engine.dialect`, sqlglot's name; MariaDB and a remote MySQL
share "mysql", PostgreSQL and a remote PostgreSQL "postgres"); this module describes each one
once: its column types for the workloads' logical kinds, when primary keys are best added, how
it gathers planner statistics, what its foreign keys and bulk load can do, and which of its
drivers' errors are a lost race to retry (or a full disk). Workloads render their schemas from these facts and
keep per-dialect SQL that is theirs alone (queries, procedures, checksums) in `sql/<dialect>/`
beside them, so they never compare dialect names. A new dialect is one entry in `DIALECTS`.

Choices for SQL Server and Oracle follow the engines' documentation (the script kit and a
server reached by url run them; neither can be measured here); the others were measured, as
the workloads' schema modules say where a workload departs from them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Dialect:
    """One SQL dialect's facts.

    `types` maps a column kind to a type: `int`, `bigint`, `decimal` ("{args}": the column's
    "precision,scale"), `date`, `timestamp`, `char` and `varchar` ("{length}": its size).
    `analyze_all` gathers planner statistics for a schema ("{tables}": its tables, comma
    separated), `analyze_one` for one table ("{table}", "{TABLE}" upper case); "" where the
    engine keeps its own (DuckDB)."""

    name: str
    types: Mapping[str, str]
    keys_after_load: bool  # ALTER TABLE … ADD PRIMARY KEY after a bulk load beats keeping the key during it
    analyze_all: str = ""
    analyze_one: str = ""
    table_options: str = ""  # appended to every CREATE TABLE (the storage engine)
    adds_foreign_keys: bool = False  # ALTER TABLE … ADD CONSTRAINT … FOREIGN KEY on a loaded table
    drops_foreign_keys: bool = False  # … and DROP CONSTRAINT leaves no index the key made behind
    bulk_load_writes_null: bool = True  # the engine's bulk load reads an empty field as NULL
    statistics_hold_values: bool = False  # planner statistics keep column values on disk (most common values)
    # runs the SQL that DuckDB, SQLite, PostgreSQL and MariaDB share as written; False: the
    # workloads' statements are transpiled into it (workloads/transpile.py)
    shared_sql: bool = True
    iso_date_cast: bool = True  # CAST('1998-09-02' AS DATE) reads an ISO date whatever the session's format
    stored_procedures: bool = False  # the server runs stored procedures (a workload may have none for it)
    call: str = ""  # how a stored procedure is called: "{name}" and "{marks}", its placeholders
    # the placeholder of a DECIMAL argument bound from a Python float: psycopg sends a float as
    # float8, which PostgreSQL does not cast to a function's numeric parameter by itself
    decimal_argument: str = "?"
    # transactions: the statements that begin one that writes and one that only reads (""):
    # it begins with its first statement, as `client_session` sets it up), the clause appended
    # to a SELECT of rows it will update ("" if none), whether UPDATE … RETURNING reads the new
    # value in the same statement, and what runs once on each connection that runs them
    begin_write: str = "BEGIN"
    begin_read: str = "BEGIN"
    for_update: str = " FOR UPDATE"
    update_returning: bool = True
    session: tuple[str, ...] = ()  # run by the workload on every connection of a user
    client_session: tuple[str, ...] = ()  # run on each user's connection for client-side transactions
    conflict: Callable[[BaseException], str | None] = lambda _: None  # a retryable error's kind, or None
    # a driver error that says the disk is full in words of its own (the C library's "No space
    # left on device", which DuckDB and PostgreSQL quote, the runner recognises in every error)
    disk_full: Callable[[BaseException], bool] = lambda _: False

    def column_type(self, kind: str, length: int = 0) -> str:
        """The type of a column of `kind` ("decimal(15,2)" carries its precision and scale)."""
        base, _, args = kind.partition("(")
        return self.types[base].format(length=length, args=args.rstrip(")"))

    def analyze(self, tables: Sequence[str]) -> str:
        """The statement that gathers statistics for `tables` (one table: just that one)."""
        if len(tables) == 1:
            return self.analyze_one.format(table=tables[0], TABLE=tables[0].upper())
        return self.analyze_all.format(tables=", ".join(tables))


# Which driver errors are a lost race: the transaction was rolled back and running it again is
# the right answer. The engine's connection raises such an error as base.Conflict
# (`raises_conflicts`), which oltp retries. Each looks at its driver's module and the error's
# arguments rather than importing the driver, so it works with whichever drivers are installed.
_SQLSTATES = {"40001": "serialization failure", "40P01": "deadlock"}
_MYSQL_ERRNOS = {1213: "deadlock", 1205: "lock wait timeout"}
_MSSQL_ERRNOS = {1205: "deadlock"}  # chosen as the deadlock victim
_ORACLE_CODES = {"ORA-00060": "deadlock", "ORA-08177": "serialization failure"}


def _from(module: str, exc: BaseException) -> bool:
    return type(exc).__module__.startswith(module)


def _by_errno(module: str, errnos: Mapping[int, str]) -> Callable[[BaseException], str | None]:
    """PyMySQL's and pymssql's errors carry (number, message); MariaDB's deadlock has SQLSTATE
    40001 too, so the number decides, never a SQLSTATE."""
    def conflict(exc: BaseException) -> str | None:
        return errnos.get(exc.args[0]) if _from(module, exc) and exc.args else None
    return conflict


def _postgres(exc: BaseException) -> str | None:
    """psycopg's SQLSTATE; only psycopg's: PyMySQL's errors carry a `sqlstate` too, and MariaDB's
    deadlock's is 40001, PostgreSQL's serialization failure."""
    return _SQLSTATES.get(getattr(exc, "sqlstate", None) or "") if _from("psycopg", exc) else None


def _oracle(exc: BaseException) -> str | None:
    if not _from("oracledb", exc):
        return None
    return next((kind for code, kind in _ORACLE_CODES.items() if code in str(exc)), None)


def _by_class(modules: tuple[str, ...], names: Mapping[str, str]) -> Callable[[BaseException], str | None]:
    """An embedded engine's error class (or a base of it) of the engine's own module."""
    def conflict(exc: BaseException) -> str | None:
        return next((names[cls.__name__] for cls in type(exc).__mro__
                     if cls.__name__ in names and cls.__module__.split(".")[0] in modules), None)
    return conflict


_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_FULL = 5, 6, 13  # SQLite's primary result codes (the low byte of an extended one)


def _sqlite_full(exc: BaseException) -> bool:
    """apsw's FullError (SQLite3MC), or a DB-API SQLite driver's error (sqlcipher3's) whose SQLite
    result code is SQLITE_FULL: the disk is full."""
    if _by_class(("apsw",), {"FullError": "full"})(exc) is not None:
        return True
    code = getattr(exc, "sqlite_errorcode", None) if _from("sqlcipher3", exc) else None
    return isinstance(code, int) and code & 0xFF == _SQLITE_FULL


def _sqlite(exc: BaseException) -> str | None:
    """apsw's BusyError or LockedError (SQLite3MC), or a DB-API SQLite driver's error (sqlcipher3's,
    for SQLCipher) whose SQLite result code (`sqlite_errorcode`) is SQLITE_BUSY or SQLITE_LOCKED."""
    found = _by_class(("apsw",), {"BusyError": "busy", "LockedError": "busy"})(exc)
    if found is None and _from("sqlcipher3", exc):
        code = getattr(exc, "sqlite_errorcode", None)
        if isinstance(code, int) and code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED):
            return "busy"
    return found


_TEXT = {"char": "CHAR({length})", "varchar": "VARCHAR({length})"}

DIALECTS: dict[str, Dialect] = {d.name: d for d in (
    # DuckDB: its ART key is built faster after the load than row by row (TPC-H SF 1: median of
    # 5 paired loads 16.4 s vs 17.8 s, 2 CPUs); it keeps its own statistics. Optimistic
    # concurrency: a write-write conflict fails the later writer. Not UPDATE … RETURNING: on a
    # table with a primary key, DuckDB 1.5.5 lets a concurrent UPDATE … RETURNING and UPDATE of
    # the same row both commit, and one update is lost (a plain UPDATE gets "Conflict on update"
    # as it should).
    Dialect("duckdb", {"int": "INTEGER", "bigint": "BIGINT", "decimal": "DECIMAL({args})", "date": "DATE",
                       "timestamp": "TIMESTAMP", "char": "VARCHAR", "varchar": "VARCHAR"},
            keys_after_load=True, begin_write="BEGIN TRANSACTION", begin_read="BEGIN TRANSACTION", for_update="",
            update_returning=False,
            conflict=_by_class(("duckdb", "_duckdb"), {"TransactionException": "write conflict"})),
    # SQLite has storage classes, not types: money is REAL, dates and times ISO text (which sorts
    # and compares correctly as text). It cannot add a primary key to an existing table, so keys
    # are inline (an INTEGER PRIMARY KEY is its rowid). One writer at a time: BEGIN IMMEDIATE
    # takes the write lock up front (a deferred transaction that upgrades to writing fails at
    # once with SQLITE_BUSY to avoid a deadlock); busy_timeout makes a waiting writer wait
    # instead of failing; WAL (set when the database is created) lets readers run beside the
    # writer. A busy or locked database is a lost race. A full disk is SQLITE_FULL ("database or
    # disk is full").
    Dialect("sqlite", {"int": "INTEGER", "bigint": "INTEGER", "decimal": "REAL", "date": "TEXT",
                       "timestamp": "TEXT", "char": "TEXT", "varchar": "TEXT"},
            keys_after_load=False, analyze_all="ANALYZE", analyze_one="ANALYZE {table}",
            begin_write="BEGIN IMMEDIATE", for_update="", session=("PRAGMA busy_timeout = 30000",),
            conflict=_sqlite, disk_full=_sqlite_full),
    # PostgreSQL: the declared types (exact NUMERIC money); keys built after COPY (faster than
    # maintaining them row by row), then ANALYZE so the planner knows what was just loaded.
    # pg_statistic keeps each column's most common values, in the database's files.
    Dialect("postgres", {"int": "INTEGER", "bigint": "BIGINT", "decimal": "NUMERIC({args})", "date": "DATE",
                         "timestamp": "TIMESTAMP", **_TEXT},
            keys_after_load=True, analyze_all="ANALYZE", analyze_one="ANALYZE {table}",
            adds_foreign_keys=True, drops_foreign_keys=True, statistics_hold_values=True,
            stored_procedures=True, call="SELECT {name}({marks})", decimal_argument="CAST(? AS numeric)",
            conflict=_postgres),
    # MariaDB/InnoDB: clustered by the primary key, so keys inline (adding one later rebuilds the
    # table; generated rows come in key order, so the load appends). DATETIME, not TIMESTAMP (a
    # TIMESTAMP column is updated automatically on every UPDATE of its row). ANALYZE TABLE after
    # the load, or InnoDB recalculates statistics whenever it gets to it and plans depend on
    # timing. Its LOAD DATA reads an empty field as 0 or '0000-00-00', not NULL. No UPDATE …
    # RETURNING: a transaction reads the row with FOR UPDATE (a locking read, which REPEATABLE
    # READ needs to see the latest version), then updates it. Without autocommit a transaction
    # begins with its first statement, as after START TRANSACTION (its snapshot at its first
    # read), and the round trip of START TRANSACTION is saved; PyMySQL has no statement of its
    # own for it.
    Dialect("mysql", {"int": "INTEGER", "bigint": "BIGINT", "decimal": "DECIMAL({args})", "date": "DATE",
                      "timestamp": "DATETIME", **_TEXT},
            keys_after_load=False, analyze_all="ANALYZE TABLE {tables}", analyze_one="ANALYZE TABLE {table}",
            table_options="ENGINE=InnoDB", adds_foreign_keys=True, bulk_load_writes_null=False,
            begin_write="", begin_read="", update_returning=False, client_session=("SET autocommit = 0",),
            stored_procedures=True, call="CALL {name}({marks})", conflict=_by_errno("pymysql", _MYSQL_ERRNOS)),
    # SQL Server: keys inline (a clustered index, as InnoDB's); DATETIME2 (a DATETIME rounds to
    # 1/300 s); statistics refreshed so plans do not wait for auto-statistics on first use. An
    # explicit transaction at the default READ COMMITTED (locking); the locking reads become
    # update locks and RETURNING becomes OUTPUT (workloads/oltp/translated.py).
    Dialect("tsql", {"int": "INT", "bigint": "BIGINT", "decimal": "DECIMAL({args})", "date": "DATE",
                     "timestamp": "DATETIME2", **_TEXT},
            keys_after_load=False, analyze_all="EXEC sp_updatestats", analyze_one="UPDATE STATISTICS {table}",
            shared_sql=False, stored_procedures=True, begin_write="BEGIN TRANSACTION", begin_read="BEGIN TRANSACTION",
            conflict=_by_errno("pymssql", _MSSQL_ERRNOS)),
    # Oracle: NUMBER for integers and money, DATE (which holds a time too), VARCHAR2. Tables and
    # indexes go to the schema owner's default tablespace, which the kit's set-up encrypts. A
    # string cast to DATE is read with the session's NLS_DATE_FORMAT (DD-MON-RR by default). No
    # BEGIN: SET TRANSACTION opens one (a read-only one sees one snapshot throughout); its
    # RETURNING fills bind variables, not rows, so updates read with SELECT … FOR UPDATE first.
    Dialect("oracle", {"int": "NUMBER(10)", "bigint": "NUMBER(19)", "decimal": "NUMBER({args})", "date": "DATE",
                       "timestamp": "TIMESTAMP", "char": "CHAR({length})", "varchar": "VARCHAR2({length})"},
            keys_after_load=False,
            analyze_all="BEGIN DBMS_STATS.GATHER_SCHEMA_STATS(SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA')); END;",
            analyze_one="BEGIN DBMS_STATS.GATHER_TABLE_STATS(USER, '{TABLE}'); END;",
            shared_sql=False, iso_date_cast=False, stored_procedures=True, begin_write="SET TRANSACTION READ WRITE",
            begin_read="SET TRANSACTION READ ONLY", update_returning=False, conflict=_oracle),
)}


def dialect(name: str, what: str = "SQL") -> Dialect:
    """The dialect called `name`, or a ValueError saying there is no `what` for it and which
    dialects are known."""
    try:
        return DIALECTS[name]
    except KeyError:
        raise ValueError(f"no {what} for dialect {name!r}; known: {', '.join(DIALECTS)}") from None

