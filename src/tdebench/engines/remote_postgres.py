"""A PostgreSQL server tdebench did not start, by URL (see engines/remote.py).

Per trial tdebench creates the database `tdebench_<hex>` (the account needs CREATEDB) and
drops it afterwards (`WITH (FORCE)`, PostgreSQL 13+); with `data_path`, a CHECKPOINT first writes
its pages to the files the at-rest scan reads (`close`). Community PostgreSQL has no TDE; by URL
tdebench offers the column layer (engines/pgcrypto.py: the workload's sensitive columns sealed
with pgcrypto, a trusted extension since PostgreSQL 13, which the database's owner may create),
confirmed from the catalog (`pgcrypto.state`: every value of every sealed column an OpenPGP
message under the cipher). The file-system layer needs the server's data directory, which is
not tdebench's to mount.

Counters: `pg_stat_statements` where the server preloads it and the account may create it in
the trial's database (exact per statement: execution time, shared blocks hit, read and
written); else `pg_stat_database` of the trial's database (blocks read and hit, their I/O time
where `track_io_timing` is on), which a backend reports at most once a second from PostgreSQL
15 on, so a short step's share may land in the next one; summed over a test they are whole.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from tdebench.engines import pgcrypto, postgresql
from tdebench.engines.base import NONE, Availability, Capabilities, Connection, Database, Encryption
from tdebench.engines.postgres import ColumnLayer, copy_from_parquet
from tdebench.engines.remote import RemoteDatabase, RemoteEngine

DROP_RETRY_S = 10.0  # how long a drop refused by an autovacuum worker in the trial's database is tried again

_FOREIGN = """
SELECT CASE c.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'S' THEN 'sequence'
            WHEN 'f' THEN 'foreign table' ELSE 'table' END, n.nspname || '.' || c.relname
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp%'
  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
                  AND d.deptype = 'e')
UNION ALL
SELECT 'function', n.nspname || '.' || p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                  AND d.deptype = 'e')
ORDER BY 2"""
"""Relations and functions of the target database that are neither the system's nor an extension's."""

_STATEMENTS = ("SELECT COALESCE(SUM(total_exec_time), 0) / 1000, COALESCE(SUM(shared_blks_hit), 0), "
               "COALESCE(SUM(shared_blks_read), 0), COALESCE(SUM(shared_blks_written), 0), "
               "COALESCE(SUM(temp_blks_written), 0) FROM pg_stat_statements "
               "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())")
_STATEMENT_METRICS = ("statement_s", "blocks_hit", "blocks_read", "blocks_written", "temp_blocks_written")
_DATABASE = ("SELECT blks_hit, blks_read, blk_read_time / 1000, blk_write_time / 1000, temp_bytes, tup_returned "
             "FROM pg_stat_database WHERE datname = current_database()")
_DATABASE_METRICS = ("blocks_hit", "blocks_read", "read_time_s", "write_time_s", "temp_bytes", "rows_returned")


@dataclass
class RemotePostgresDatabase(ColumnLayer, RemoteDatabase):
    """One trial's database on a PostgreSQL server."""

    driver_crosses_fork: ClassVar[bool] = True  # libpq: a socket, and the driver's state in memory

    engine: "RemotePostgresEngine" = field(kw_only=True, repr=False)
    _statements: bool | None = field(default=None, init=False, repr=False)  # pg_stat_statements readable

    def _create_namespace(self) -> None:
        conn = self.engine.raw_connect(self.target.database)
        try:
            conn.execute(f"CREATE DATABASE {self.namespace}")
        finally:
            conn.close()
        self._install_layer(lambda: self.engine.raw_connect(self.namespace))

    def _drop_namespace(self) -> None:
        """DROP DATABASE … WITH (FORCE) ends the trial's own sessions; an autovacuum worker that
        happens to be in the database can only be ended by a superuser, and the drop then fails
        with insufficient privilege: the worker is gone within moments, so try again a while."""
        import psycopg

        self.close()
        deadline = time.monotonic() + DROP_RETRY_S
        while True:
            conn = self.engine.raw_connect(self.target.database)
            try:
                conn.execute(f"DROP DATABASE IF EXISTS {self.namespace} WITH (FORCE)")
                return
            except psycopg.errors.InsufficientPrivilege:
                if time.monotonic() >= deadline:
                    raise
            finally:
                conn.close()
            time.sleep(0.2)

    def connect(self) -> Connection:
        """A session in the trial's database; the column layer's key is set here (timed as `open`)."""
        with self._scrubbed():
            raw = self.engine.raw_connect(self.namespace)
        return self._session(raw)

    def close(self) -> None:
        """With `data_path`, first CHECKPOINT, so the at-rest scan sees what the trial wrote:
        until a checkpoint its pages may live only in shared_buffers and the WAL, and a baseline
        whose canaries the scan cannot find is `inconclusive`, not `plaintext`. CHECKPOINT needs
        a superuser or the pg_checkpoint role (PostgreSQL 15+); best effort, as MariaDB's flush:
        without it the verdict says what the scan found."""
        try:
            if self.target.data_path and self._created:
                self._query("CHECKPOINT")
        except Exception:  # noqa: BLE001 - close() must not fail a trial's cleanup
            pass
        super().close()

    def size_bytes(self) -> int:
        return int(self._query("SELECT pg_database_size(current_database())")[0][0])

    def bulk_load(self, conn: Connection, table: str, columns: Sequence[str], parquet: Path) -> None:
        copy_from_parquet(conn, table, columns, parquet)

    def _server_counters(self) -> dict[str, float]:
        with self._scrubbed():
            if self._statements is None:
                self._statements = self._enable_statements()
            if self._statements:
                return dict(zip(_STATEMENT_METRICS, map(float, self._query(_STATEMENTS)[0]), strict=True))
            self._query("SELECT pg_stat_clear_snapshot()")
            return dict(zip(_DATABASE_METRICS, (float(v or 0) for v in self._query(_DATABASE)[0]), strict=True))

    def _enable_statements(self) -> bool:
        """Whether pg_stat_statements can be read in the trial's database (created there if the
        server preloads it and the account may)."""
        try:
            self._query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            self._query(_STATEMENTS)
        except Exception:  # not preloaded, not installed, or not this account's to create
            return False
        return True

    def _query(self, sql: str) -> list[tuple[Any, ...]]:
        """A statement on the database's own monitoring session in the trial's database."""
        return self._monitored(lambda conn: _fetch(conn, sql, ()))

    def _monitor_connect(self) -> Any:
        return self.engine.raw_connect(self.namespace)


def _fetch(conn: Any, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    cursor = conn.execute(sql, list(params) or None)
    return cursor.fetchall() if cursor.description else []


class RemotePostgresEngine(RemoteEngine):
    name = "postgres"
    schemes = postgresql.SCHEMES
    default_port = postgresql.DEFAULT_PORT
    dialect = "postgres"
    driver = "psycopg"
    extra = "postgres"
    capabilities = Capabilities(embedded=False, concurrent_streams=True, remote=True)
    database_class: ClassVar[type[Database]] = RemotePostgresDatabase
    memory_use = "not set: the server's own shared_buffers"
    encryptions = (NONE, *pgcrypto.COLUMN_ENCRYPTIONS)

    def raw_connect(self, database: str, timeout: int = 10) -> Any:
        import psycopg

        target = self._target
        return psycopg.connect(host=target.host, port=target.port, user=target.user,
                               password=target.password().value(), dbname=database, autocommit=True,
                               connect_timeout=timeout)

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._once(lambda: self.raw_connect(self._target.database), lambda conn: _fetch(conn, sql, params))

    def _version(self) -> str:
        return f"PostgreSQL {self._query('SHOW server_version')[0][0]} (remote)"

    def _foreign_objects(self) -> list[str]:
        return [f"{kind} {name}" for kind, name in self._query(_FOREIGN)]

    def encryption_availability(self, encryption: Encryption) -> Availability:
        available = self.availability()
        if not available.usable or encryption.layer != "column" or self.target is None:
            return available
        if not self._query("SELECT 1 FROM pg_available_extensions WHERE name = 'pgcrypto'"):
            return Availability(False, f"the server at {self._target.label} has no pgcrypto extension installed",
                                "install the server's contrib package (Debian: postgresql-contrib)")
        return available
