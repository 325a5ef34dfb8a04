"""A SQL Server tdebench did not start, by URL (`mssql://`; see engines/remote.py).

Not tested against a live server (none can be installed here): the statements below follow
Microsoft's documentation of TDE and are exercised with a fake DB-API module in
tests/unit/test_remote_engines.py.

Per trial tdebench creates the database `tdebench_<hex>` and drops it afterwards. Encrypted,
the trial's database is TDE's as engines/sqlserver.py sets it up (written once for this engine
and the script kit): a master key in `master` only if it has none (with a random password held
in memory, and dropped again with the trial), a certificate `tdebench_<hex>`, the database's
encryption key, `SET ENCRYPTION ON`, and the encryption scan awaited, its time recorded. Note:
while any database uses TDE, SQL Server encrypts `tempdb` too, for every database of the server
— one more reason to benchmark only a server of one's own.

Counters: `sys.dm_io_virtual_file_stats` of the trial's database (bytes read and written, I/O
stall) and the server's `sys.dm_exec_query_stats` (CPU and elapsed time of cached plans).
"""

from __future__ import annotations

import math
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

from tdebench.engines import dialects, sqlserver
from tdebench.engines.base import (NONE, Availability, Capabilities, Connection, Database, Encryption,
                                   EncryptionNotActive)
from tdebench.engines.dbapi import DBAPIConnection, qmark_to_format
from tdebench.engines.remote import Password, RemoteDatabase, RemoteEngine, scrubbed

_COVERS = ("data files", "log file", "tempdb", "backups")
_NOTES = "TDE: the database encryption key, protected by a certificate in master; the encryption scan is awaited"


def _timed_out(exc: BaseException) -> bool:
    """pymssql's query timeout: FreeTDS error 20003, "Adaptive Server connection timed out"."""
    return "20003" in str(exc) or "timed out" in str(exc)


def _encryption(name: str) -> Encryption:
    bits = int(name.rsplit("-", 1)[1])
    legacy = name.startswith("3des")
    return Encryption(name, "3DES" if legacy else "AES", bits, "CBC", "native", _COVERS,
                      ("Triple DES (TRIPLE_DES_3KEY), deprecated by Microsoft, for comparison only. " if legacy else "")
                      + _NOTES, 8 * 1024, legacy=legacy)


@dataclass
class RemoteSQLServerDatabase(RemoteDatabase):
    """One trial's database on a SQL Server."""

    engine: "RemoteSQLServerEngine" = field(kw_only=True, repr=False)
    encrypt_seconds: float | None = field(default=None, init=False)  # how long SET ENCRYPTION ON took to finish
    _master_key_made: bool = field(default=False, init=False, repr=False)
    poll_s: float = 0.2
    wait_s: float = float(sqlserver.WAIT_S)

    def _create_namespace(self) -> None:
        self.engine.statement("master", f"CREATE DATABASE [{self.namespace}]")
        if self.encryption.is_baseline:
            return
        if not self.engine.rows("master", sqlserver.HAS_MASTER_KEY):
            password = Password(secrets.token_urlsafe(32))  # only to create it: tdebench drops it with the trial
            self.engine.statement("master", sqlserver.create_master_key(password.value()), secret=password)
            self._master_key_made = True
        subject = f"tdebench trial {self.namespace}"
        self.engine.statement("master", sqlserver.create_certificate(self.namespace, subject))
        self.engine.statement(self.namespace, sqlserver.create_database_key(self.namespace, self.encryption.name))
        start = time.monotonic()
        self.engine.statement("master", sqlserver.encryption_on(self.namespace))
        while self._state()[0] != sqlserver.ENCRYPTED:
            if time.monotonic() - start > self.wait_s:
                raise EncryptionNotActive(f"{self.namespace} not encrypted after {self.wait_s:.0f} s")
            time.sleep(self.poll_s)
        self.encrypt_seconds = time.monotonic() - start

    def _state(self) -> tuple[int, str, int]:
        """(encryption_state, key_algorithm, key_length) of the trial's database; state 0 without a key."""
        rows = self.engine.rows("master", sqlserver.STATE, [self.namespace])
        return (int(rows[0][0]), str(rows[0][1]), int(rows[0][2])) if rows else (0, "", 0)

    def _drop_namespace(self) -> None:
        self.engine.statement("master", f"IF DB_ID('{self.namespace}') IS NOT NULL BEGIN "
                                        f"ALTER DATABASE [{self.namespace}] SET SINGLE_USER WITH ROLLBACK IMMEDIATE; "
                                        f"DROP DATABASE [{self.namespace}] END")
        if not self.encryption.is_baseline:
            self.engine.statement("master", sqlserver.drop_certificate(self.namespace))
            if self._master_key_made:
                self.engine.statement("master", "DROP MASTER KEY")
                self._master_key_made = False

    def connect(self) -> Connection:
        with scrubbed(self.target):
            return self.engine.connection(self.namespace)

    def encryption_state(self) -> str:
        """The catalog's word on the trial's database: encrypted (state 3) with the encryption's
        algorithm and key length; EncryptionNotActive otherwise."""
        if self.encryption.is_baseline:
            return ""
        state, algorithm, bits = self._state()
        expected = sqlserver.ALGORITHMS[self.encryption.name]
        wrong_key = expected.split("_")[0] not in algorithm.upper() or bits != self.encryption.key_bits
        if state != sqlserver.ENCRYPTED or wrong_key:
            raise EncryptionNotActive(f"sys.dm_database_encryption_keys says {self.namespace} has state {state}, "
                                      f"{algorithm or 'no key'} {bits} bits, not 3 (encrypted) with {expected}")
        took = f"; encryption scan took {self.encrypt_seconds:.2f} s" if self.encrypt_seconds is not None else ""
        return f"sys.dm_database_encryption_keys: {self.namespace} encrypted (state 3), {algorithm} {bits} bits{took}"

    def size_bytes(self) -> int:
        rows = self.engine.rows(self.namespace, "SELECT SUM(CAST(size AS BIGINT)) * 8192 FROM sys.database_files")
        return int(rows[0][0] or 0)

    def _server_counters(self) -> dict[str, float]:
        (read, written, stall), = self.engine.rows(
            "master", "SELECT SUM(num_of_bytes_read), SUM(num_of_bytes_written), SUM(io_stall) "
                      "FROM sys.dm_io_virtual_file_stats(DB_ID(?), NULL)", [self.namespace])
        (cpu, elapsed), = self.engine.rows(
            "master", "SELECT SUM(total_worker_time), SUM(total_elapsed_time) FROM sys.dm_exec_query_stats")
        return {"read_bytes": float(read or 0), "write_bytes": float(written or 0), "io_stall_s": (stall or 0) / 1e3,
                "cpu_s": (cpu or 0) / 1e6, "statement_s": (elapsed or 0) / 1e6}


class RemoteSQLServerEngine(RemoteEngine):
    name = "sqlserver"
    schemes = sqlserver.SCHEMES
    default_port = sqlserver.DEFAULT_PORT
    dialect = "tsql"
    driver = "pymssql"
    extra = "sqlserver"
    capabilities = Capabilities(embedded=False, concurrent_streams=True, remote=True)
    database_class: ClassVar[type[Database]] = RemoteSQLServerDatabase
    memory_use = "not set: the server's own max server memory"
    encryptions = (NONE, *(_encryption(name) for name in sqlserver.ALGORITHMS))

    def connection(self, database: str) -> DBAPIConnection:
        """A connection to `database`; its statement timeout (`set_timeout`) reconnects, since
        pymssql takes the query timeout (`timeout`, whole seconds) only when it connects: the
        workloads set it before their measured steps, never inside a transaction."""
        current = [0]  # the open connection's timeout in whole seconds (0: none)

        def reconnect(old: Any, seconds: float | None) -> Any:
            wanted = 0 if seconds is None else max(1, math.ceil(seconds))
            if wanted == current[0]:
                return old
            old.close()
            current[0] = wanted
            return self._connect(database, wanted)

        return DBAPIConnection(self._connect(database, 0), dialects.dialect("tsql"), qmark_to_format, reconnect,
                               begins=("BEGIN TRANSACTION",), timed_out=_timed_out)

    def _connect(self, database: str, timeout: int) -> Any:
        import pymssql

        target = self._target
        return pymssql.connect(server=target.host, port=str(target.port), user=target.user,
                               password=target.password().value(), database=database, autocommit=True,
                               login_timeout=10, timeout=timeout)

    def rows(self, database: str, sql: str, params: list[Any] | None = None,
             secret: Password | None = None) -> list[tuple[Any, ...]]:
        """One statement in `database` on a connection of its own, errors scrubbed (of `secret`
        too, a password the statement's text holds)."""
        return self._once(lambda: self.connection(database), lambda conn: conn.execute(sql, params or ()),
                          (secret,) if secret is not None else ())

    def statement(self, database: str, sql: str, secret: Password | None = None) -> None:
        self.rows(database, sql, secret=secret)

    def _version(self) -> str:
        return f"SQL Server {self.rows(self._target.database, 'SELECT SERVERPROPERTY(?)', ['ProductVersion'])[0][0]}"

    def _foreign_objects(self) -> list[str]:
        rows = self.rows(self._target.database,
                         "SELECT LOWER(type_desc), SCHEMA_NAME(schema_id) + '.' + name FROM sys.objects "
                         "WHERE is_ms_shipped = 0 AND type IN ('U', 'V', 'P', 'FN', 'IF', 'TF', 'TR', 'SO') "
                         "ORDER BY 2")
        return [f"{kind} {name}" for kind, name in rows]

    def encryption_availability(self, encryption: Encryption) -> Availability:
        available = self.availability()
        if not available.usable or encryption.is_baseline or self.target is None:
            return available
        edition = str(self.rows("master", "SELECT SERVERPROPERTY(?)", ["Edition"])[0][0])
        if "Express" in edition:
            return Availability(False, f"SQL Server {edition} has no TDE", "use Developer, Standard (2019+) or "
                                "Enterprise edition")
        return available
