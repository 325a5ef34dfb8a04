"""An Oracle Database tdebench did not start, by URL (`oracle://user@host:port/service`; see
engines/remote.py), through python-oracledb's thin mode (no Oracle client libraries).

Not tested against a live server (none can be installed here): the statements below follow
Oracle's documentation of tablespace encryption (engines/oracle.py, written once for this engine
and the script kit) and are exercised with a fake DB-API module in
tests/unit/test_remote_engines.py.

Per trial tdebench creates a tablespace `TDEBENCH_<HEX>` — encrypted with `ENCRYPTION USING
'AES128' | 'AES192' | 'AES256' | '3DES168' ENCRYPT` (Oracle's syntax from 12.2 on) for an
encryption, plain for the baseline — and a user (schema) of the same name whose default
tablespace it is, with a random password held in memory; the workloads run as that user, so
every table they create lands in the tablespace. Both are dropped with the trial (`DROP USER
… CASCADE`, `DROP TABLESPACE … INCLUDING CONTENTS AND DATAFILES`). The keystore (wallet) must be
open (`v$encryption_wallet`); the encryption is confirmed from `v$encrypted_tablespaces`. The
URL's account needs CREATE TABLESPACE, DROP TABLESPACE, CREATE USER, DROP USER and the right to
grant CREATE SESSION and CREATE TABLE (e.g. a PDB administrator), and SELECT on the `v$` views.
The target is the URL user's own schema, which must hold nothing.

Counters: the server's `v$sysstat` (CPU used, physical reads and writes, logical reads).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any, ClassVar

from tdebench.engines import dialects
from tdebench.engines.base import (NONE, Availability, Capabilities, Connection, Database, Encryption,
                                   EncryptionNotActive)
from tdebench.engines.dbapi import DBAPIConnection, qmark_to_numeric
from tdebench.engines.oracle import (ALGORITHMS, DEFAULT_PORT, ENCRYPTED_TABLESPACES, KEYSTORE, KEYSTORE_OPEN,
                                     SCHEMES, create_tablespace, drop_tablespace, drop_user)
from tdebench.engines.remote import Password, RemoteDatabase, RemoteEngine, scrubbed

_COVERS = ("tables and indexes in the tablespace", "their undo and redo records", "temporary segments")
_NOTES = "tablespace encryption (TDE), keys from the open keystore"
_SYSSTAT = {"CPU used by this session": ("cpu_s", 0.01), "physical read bytes": ("read_bytes", 1.0),
            "physical write bytes": ("write_bytes", 1.0), "session logical reads": ("logical_reads", 1.0)}


def _encryption(name: str) -> Encryption:
    legacy = name.startswith("3des")
    return Encryption(name, "3DES" if legacy else "AES", int(name.rsplit("-", 1)[1]), "unstated",
                      "native", _COVERS, ("Triple DES, for comparison only. " if legacy else "") + _NOTES,
                      8 * 1024, legacy=legacy)


@dataclass
class RemoteOracleDatabase(RemoteDatabase):
    """One trial's tablespace and schema on an Oracle Database."""

    engine: "RemoteOracleEngine" = field(kw_only=True, repr=False)
    _password: Password = field(default_factory=lambda: Password(secrets.token_hex(15)), init=False, repr=False)

    @property
    def schema(self) -> str:
        return self.namespace.upper()

    def _create_namespace(self) -> None:
        self.engine.statement(create_tablespace(self.schema, self.encryption.name))
        # an Oracle password is an identifier, not a bind value; it is tdebench's own, random per trial
        self.engine.statement(f"CREATE USER {self.schema} IDENTIFIED BY \"{self._password.value()}\" "
                              f"DEFAULT TABLESPACE {self.schema} QUOTA UNLIMITED ON {self.schema}",
                              secret=self._password)
        self.engine.statement(f"GRANT CREATE SESSION, CREATE TABLE, CREATE VIEW, CREATE PROCEDURE, "
                              f"CREATE SEQUENCE TO {self.schema}")

    def _drop_namespace(self) -> None:
        self.engine.statement(drop_user(self.schema), missing_ok=True)
        self.engine.statement(drop_tablespace(self.schema), missing_ok=True)

    def connect(self) -> Connection:
        with scrubbed(self.target, self._password):
            return self.engine.connection(self.schema, self._password)

    def encryption_state(self) -> str:
        if self.encryption.is_baseline:
            return ""
        rows = self.engine.rows(f"SELECT e.encryptionalg, e.status FROM {ENCRYPTED_TABLESPACES} WHERE t.name = ?",
                                [self.schema])
        expected = ALGORITHMS[self.encryption.name]
        if not rows or str(rows[0][0]).upper() != expected or str(rows[0][1]).upper() not in ("NORMAL", "ENCRYPTED"):
            raise EncryptionNotActive(f"v$encrypted_tablespaces shows {rows[0] if rows else 'no row'} for "
                                      f"{self.schema}, not {expected}")
        return f"v$encrypted_tablespaces: {self.schema} encrypted with {rows[0][0]} ({rows[0][1]})"

    def size_bytes(self) -> int:
        rows = self.engine.rows("SELECT SUM(bytes) FROM dba_segments WHERE owner = ?", [self.schema])
        return int(rows[0][0] or 0)

    def _server_counters(self) -> dict[str, float]:
        rows = self.engine.rows("SELECT name, value FROM v$sysstat WHERE name IN (?, ?, ?, ?)", list(_SYSSTAT))
        return {_SYSSTAT[str(name)][0]: float(value) * _SYSSTAT[str(name)][1] for name, value in rows}


def _call_timeout(conn: Any, seconds: float | None) -> Any:
    """oracledb's round-trip timeout (milliseconds; 0: none), on the same connection."""
    conn.call_timeout = 0 if seconds is None else max(1, round(seconds * 1000))
    return conn


def _autocommit(conn: Any, on: bool) -> None:
    conn.autocommit = on


def _timed_out(exc: BaseException) -> bool:
    """oracledb's DPY-4024: the call timeout was exceeded (and the call cancelled)."""
    return "DPY-4024" in str(exc)


BEGINS = ("SET TRANSACTION READ WRITE", "SET TRANSACTION READ ONLY")
"""Oracle has no BEGIN: a transaction starts with its first statement, and these open one
explicitly (oltp's client-side transactions, workloads/oltp/transactions.py)."""
SESSION = "ALTER SESSION SET NLS_TIMESTAMP_FORMAT = 'YYYY-MM-DD HH24:MI:SS'"
"""The workloads write timestamps as ISO text (oltp's data); Oracle reads text into a TIMESTAMP
with the session's format, by default 'DD-MON-RR …', which refuses them."""


class RemoteOracleEngine(RemoteEngine):
    name = "oracle"
    schemes = SCHEMES
    default_port = DEFAULT_PORT
    example_database = "FREEPDB1"  # the service of Oracle Database Free
    dialect = "oracle"
    driver = "oracledb"
    extra = "oracle"
    capabilities = Capabilities(embedded=False, concurrent_streams=True, remote=True)
    database_class: ClassVar[type[Database]] = RemoteOracleDatabase
    memory_use = "not set: the server's own SGA"
    encryptions = (NONE, *(_encryption(name) for name in ALGORITHMS))

    def connection(self, user: str | None = None, password: Password | None = None) -> DBAPIConnection:
        """A connection as the URL's user, or as the trial's `user` with its `password`."""
        import oracledb

        target = self._target
        raw = oracledb.connect(user=user or target.user, password=(password or target.password()).value(),
                               host=target.host, port=target.port, service_name=target.database)
        raw.autocommit = True
        conn = DBAPIConnection(raw, dialects.dialect("oracle"), qmark_to_numeric, _call_timeout, begins=BEGINS,
                               autocommit=_autocommit, timed_out=_timed_out)
        if user is not None:  # the trial's own session, which the workloads use
            conn.execute(SESSION)
        return conn

    def rows(self, sql: str, params: list[Any] | None = None, secret: Password | None = None) -> list[tuple[Any, ...]]:
        """One statement as the URL's user, errors scrubbed (of `secret` too, a password its text holds)."""
        return self._once(self.connection, lambda conn: conn.execute(sql, params or ()),
                          (secret,) if secret is not None else ())

    def statement(self, sql: str, missing_ok: bool = False, secret: Password | None = None) -> None:
        """A DDL statement as the URL's user; with `missing_ok`, one whose object is already gone
        (ORA-01918 user, ORA-00959 tablespace does not exist) counts as done."""
        try:
            self.rows(sql, secret=secret)
        except Exception as exc:
            if not (missing_ok and any(code in str(exc) for code in ("ORA-01918", "ORA-00959"))):
                raise

    def _version(self) -> str:
        return f"Oracle {self.rows('SELECT version_full FROM product_component_version')[0][0]} (remote)"

    def _foreign_objects(self) -> list[str]:
        return [f"{str(kind).lower()} {name}" for kind, name in
                self.rows("SELECT object_type, object_name FROM user_objects ORDER BY object_name")]

    def encryption_availability(self, encryption: Encryption) -> Availability:
        available = self.availability()
        if not available.usable or encryption.is_baseline or self.target is None:
            return available
        status = [str(row[0]) for row in self.rows(f"SELECT status FROM {KEYSTORE}")]
        if KEYSTORE_OPEN not in status:
            shown = ", ".join(status) or "none"
            return Availability(False, f"the keystore of {self._target.label} is not open ({shown})",
                                "ADMINISTER KEY MANAGEMENT SET KEYSTORE OPEN IDENTIFIED BY … (and a master key set)")
        return available
