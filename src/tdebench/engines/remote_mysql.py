"""MariaDB and MySQL servers tdebench did not start, by URL (see engines/remote.py).

Per trial tdebench creates the database `tdebench_<hex>` (in MySQL a schema is a database) and
drops it afterwards. Encryption is each engine's own per-table TDE, switched by SQL: every
CREATE TABLE tdebench sends gets the table options of the trial's encryption, so the workloads'
DDL runs unchanged:

- MariaDB: `ENCRYPTED=YES ENCRYPTION_KEY_ID=<key_id>` (the baseline `ENCRYPTED=NO`); the server
  must have a key management plugin loaded (file_key_management, hashicorp_key_management, …),
  whose key length and mode (`file_key_management_encryption_algorithm`) are the server's.
  Confirmed from `information_schema.INNODB_TABLESPACES_ENCRYPTION`: every table of the trial
  encrypted with that key id, none still being encrypted.
- MySQL 8.0/8.4: the database created `DEFAULT ENCRYPTION='Y'` and every table
  `ENCRYPTION='Y'` (AES-256: CBC for the pages, the tablespace key wrapped by the keyring's
  master key); the server needs a keyring component or plugin. Confirmed from
  `information_schema.INNODB_TABLESPACES.ENCRYPTION`.

Redo and undo log encryption, temporary files and the binlog are server-wide settings that
tdebench does not change on a server it did not start; `encryption_state` reports them.
Counters: `SHOW GLOBAL STATUS` (InnoDB bytes and pages read and written, buffer pool reads)
and, when `performance_schema` is on, the statements' server time (and CPU time where MySQL
has `SUM_CPU_TIME`) — server-wide figures, so other sessions' work counts too.
The account needs, besides its login: CREATE and DROP on `tdebench\\_%`.* (or ALL there),
SELECT on the target database's information_schema rows, and PROCESS (to read the InnoDB
encryption tables).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from tdebench.engines.base import NONE, Availability, Capabilities, Connection, Database, Encryption, \
    EncryptionNotActive, Statement
from tdebench.engines import mysql
from tdebench.engines.mariadb import MariaDBConnection, load_data_local
from tdebench.engines.mysql import Timeout, connect_options
from tdebench.engines.remote import RemoteDatabase, RemoteEngine, RemoteError
from tdebench.keys import Secret

_CREATE_TABLE = re.compile(r"\s*CREATE\s+TABLE\s+\S+", re.IGNORECASE)
_AS_SELECT = re.compile(r"\s+AS\s+SELECT\b", re.IGNORECASE)
_STATUS = {  # SHOW GLOBAL STATUS name -> metric (server_<metric>, cumulative)
    "Innodb_data_read": "read_bytes", "Innodb_data_written": "write_bytes",
    "Innodb_buffer_pool_reads": "pages_read", "Innodb_buffer_pool_read_requests": "page_requests",
    "Innodb_pages_written": "pages_written", "Innodb_os_log_written": "log_bytes",
}


def with_table_options(sql: str, options: str) -> str:
    """`sql` with `options` added when it is a CREATE TABLE (before `AS SELECT` where it has one:
    MySQL's table options come before the query); every other statement as it is."""
    statement = sql.rstrip().rstrip(";")
    head = _CREATE_TABLE.match(statement)
    if not options or head is None:
        return sql
    rest = statement[head.end():]
    if _AS_SELECT.match(rest):
        return f"{head.group(0)} {options}{rest}"
    return f"{statement} {options}"


class RemoteMySQLConnection(MariaDBConnection):
    """A PyMySQL connection to the trial's database whose CREATE TABLEs carry the encryption's
    table options (`with_table_options`)."""

    def __init__(self, conn: Any, table_options: str, timeout: Timeout) -> None:
        super().__init__(conn)
        self._options = table_options
        self._timeout = timeout
        self.timeout_errors = (timeout.error,)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return super().execute(with_table_options(sql, self._options), params)

    def execute_batch(self, statements: Sequence[Statement]) -> list[list[tuple[Any, ...]]]:
        return super().execute_batch([(with_table_options(sql, self._options), params) for sql, params in statements])

    def set_timeout(self, seconds: float | None) -> None:
        if seconds is not None and seconds <= 0:
            raise ValueError("a timeout must be positive")
        self._seconds = seconds
        self.execute(self._timeout.statement(seconds))


@dataclass
class RemoteMySQLDatabase(RemoteDatabase):
    """One trial's database on a MariaDB or MySQL server (the engine's flavour: `flavour`)."""

    driver_crosses_fork: ClassVar[bool] = True  # PyMySQL: a socket, and the driver's state in memory

    flavour: "RemoteMySQLEngine" = field(kw_only=True, repr=False)

    def _raw(self, database: str | None) -> Any:
        return self.flavour.raw_connect(database)

    def _create_namespace(self) -> None:
        conn = self._raw(None)
        try:
            with conn.cursor() as cursor:
                cursor.execute(f"CREATE DATABASE {self.namespace} CHARACTER SET utf8mb4"
                               f"{self.flavour.database_options(self.encryption)}")
        finally:
            conn.close()

    def _drop_namespace(self) -> None:
        self.close()
        conn = self._raw(None)
        try:
            with conn.cursor() as cursor:
                cursor.execute(f"DROP DATABASE IF EXISTS {self.namespace}")
        finally:
            conn.close()

    def connect(self) -> Connection:
        with self._scrubbed():
            raw = self._raw(self.namespace)
        return RemoteMySQLConnection(raw, self.flavour.table_options(self.encryption, self.target.key_id),
                                     self.flavour.timeout)

    def close(self) -> None:
        """With `data_path`, first write the trial's tables' pages to their files (FLUSH TABLES …
        FOR EXPORT, which needs RELOAD, then UNLOCK TABLES), so the at-rest scan sees what the
        buffer pool held. Best effort: without it a baseline's scan may find no canary, which
        its verdict (inconclusive) then says."""
        try:
            if self.target.data_path and self._created:
                self._flush_tables()
        except Exception:  # noqa: BLE001 - see above; close() must not fail a trial's cleanup
            pass
        super().close()

    def _flush_tables(self) -> None:
        tables = [str(name) for (name,) in self._query(
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND ENGINE = 'InnoDB'",
            (self.namespace,))]
        if tables:
            self._query(f"FLUSH TABLES {', '.join(f'{self.namespace}.{t}' for t in tables)} FOR EXPORT", ())
            self._query("UNLOCK TABLES", ())

    def size_bytes(self) -> int:
        rows = self._query("SELECT COALESCE(SUM(DATA_LENGTH + INDEX_LENGTH), 0) FROM information_schema.TABLES "
                           "WHERE TABLE_SCHEMA = %s", (self.namespace,))
        return int(rows[0][0])

    def encryption_state(self) -> str:
        """Every table of the trial's database as the catalog reports its encryption, and the
        server-wide switches beside it; EncryptionNotActive when a table is not encrypted."""
        if self.encryption.is_baseline:
            return ""
        tables = [str(name) for (name,) in self._query(
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND ENGINE = 'InnoDB'",
            (self.namespace,))]
        encrypted = self.flavour.encrypted_tables(self._query, self.namespace, self.target.key_id)
        plain = sorted(set(tables) - encrypted)
        if not tables or plain:
            raise EncryptionNotActive(f"{self.flavour.name} {self.target.label}: {len(plain)} of {len(tables)} tables "
                                      f"of {self.namespace} are not encrypted: {', '.join(plain[:5])}")
        switches = self.flavour.switches(self._query)
        return (f"{len(tables)} InnoDB tables of {self.namespace} encrypted ({self.flavour.confirmed_by}); "
                f"server-wide: {switches}")

    def _server_counters(self) -> dict[str, float]:
        with self._scrubbed():
            rows = self._query("SHOW GLOBAL STATUS WHERE Variable_name IN "
                               f"({', '.join(repr(name) for name in _STATUS)})", ())
            counters = {_STATUS[str(name)]: float(value) for name, value in rows if str(name) in _STATUS}
            counters.update(self.flavour.statement_times(self._query))
        return counters

    def bulk_load(self, conn: Connection, table: str, columns: Sequence[str], parquet: Path) -> None:
        """LOAD DATA LOCAL INFILE where the server allows it (`local_infile`, on by default in
        MariaDB, off in MySQL 8), else batched INSERTs."""
        if self._query("SELECT @@local_infile", ())[0][0] in (1, "1", "ON"):
            load_data_local(conn, self.workspace / f"load-{table}.csv", table, columns, parquet)
        else:
            super().bulk_load(conn, table, columns, parquet)

    def _query(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """A statement on the database's own monitoring connection (kept open, one at a time)."""
        return self._monitored(lambda conn: _fetch(conn, sql, params))

    def _monitor_connect(self) -> Any:
        return self._raw(None)


class RemoteMySQLEngine(RemoteEngine):
    """MySQL 8.0/8.4 by URL (see the module)."""

    name = "mysql"
    schemes: ClassVar[tuple[str, ...]] = mysql.MYSQL_SCHEMES
    default_port = mysql.DEFAULT_PORT
    dialect = "mysql"
    driver = "pymysql"
    extra = "mysql"
    capabilities = Capabilities(embedded=False, concurrent_streams=True, remote=True)
    memory_use = "not set: the server's own innodb_buffer_pool_size"
    encryptions = (
        NONE,
        *(Encryption(name, "AES", 256, "CBC", "native", ("tables (file-per-table tablespaces)",),
                     "InnoDB tablespace encryption (ENCRYPTION='Y'), keys from the server's keyring; redo and undo "
                     "logs only where the server encrypts them (innodb_redo_log_encrypt, innodb_undo_log_encrypt)",
                     16 * 1024) for name in mysql.MYSQL_ENCRYPTIONS),
    )
    timeout: ClassVar[Timeout] = mysql.MYSQL_TIMEOUT
    confirmed_by: ClassVar[str] = (f"information_schema.{mysql.MYSQL_CATALOG}.ENCRYPTION = "
                                   f"'{mysql.mysql_encryption(True)}'")

    def raw_connect(self, database: str | None, timeout: int = 10) -> Any:
        import pymysql

        target = self._target
        return pymysql.connect(host=target.host, port=target.port, user=target.user,
                               password=target.password().value(), database=database, connect_timeout=timeout,
                               **connect_options())

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """One statement on a connection of its own, errors scrubbed."""
        return self._once(lambda: self.raw_connect(None), lambda conn: _fetch(conn, sql, params))

    def _version(self) -> str:
        return f"{self.name} {self._query('SELECT VERSION()')[0][0]} (remote)"

    def _foreign_objects(self) -> list[str]:
        database = self._target.database
        rows = self._query(
            "SELECT LOWER(TABLE_TYPE), TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
            "UNION ALL SELECT LOWER(ROUTINE_TYPE), ROUTINE_NAME FROM information_schema.ROUTINES "
            "WHERE ROUTINE_SCHEMA = %s UNION ALL SELECT 'event', EVENT_NAME FROM information_schema.EVENTS "
            "WHERE EVENT_SCHEMA = %s ORDER BY 2", (database, database, database))
        return [f"{kind} {name}" for kind, name in rows]

    def encryption_availability(self, encryption: Encryption) -> Availability:
        available = self.availability()
        if not available.usable or encryption.is_baseline or self.target is None:
            return available
        try:
            keys = self.key_management()
            self._query(f"SELECT COUNT(*) FROM information_schema.{self.catalog_table} WHERE 1 = 0")
        except RemoteError as exc:
            return Availability(False, f"the encryption catalog cannot be read: {exc}",
                                "GRANT PROCESS ON *.* to the account (it reads information_schema.INNODB_*)")
        if not keys:
            return Availability(False, f"the {self.name} server at {self._target.label} has no {self.key_plugins} "
                                       "loaded, so it cannot encrypt tables", self.key_fix)
        return available

    # -- the flavour's SQL: MySQL here, MariaDB below ------------------------------------------

    catalog_table: ClassVar[str] = mysql.MYSQL_CATALOG
    key_plugins: ClassVar[str] = "keyring component or plugin"
    key_fix: ClassVar[str] = ("load a keyring component (e.g. component_keyring_file, with its manifest) and restart "
                              "the server; see MySQL's 'Keyring Components'")

    key_plugins_where: ClassVar[str] = "PLUGIN_NAME LIKE 'keyring%'"  # which of its plugins manage keys

    def key_management(self) -> list[str]:
        """The server's active key management: its plugins that manage keys, and its keyring
        components (`_key_components`)."""
        rows = self._query("SELECT PLUGIN_NAME FROM information_schema.PLUGINS "
                           f"WHERE {self.key_plugins_where} AND PLUGIN_STATUS = 'ACTIVE'")
        return [str(name) for (name,) in [*rows, *self._key_components()]]

    def _key_components(self) -> list[tuple[Any, ...]]:
        """MySQL's keyring components (since 8.0.24; none before)."""
        try:
            return list(self._query("SELECT STATUS_VALUE FROM performance_schema.keyring_component_status "
                                    "WHERE STATUS_KEY = 'Component_name'"))
        except RemoteError:
            return []

    def database_options(self, encryption: Encryption) -> str:
        return mysql.mysql_database_options(not encryption.is_baseline)

    def table_options(self, encryption: Encryption, key_id: int) -> str:
        return mysql.mysql_table_options(not encryption.is_baseline)

    @staticmethod
    def encrypted_tables(query: Any, namespace: str, key_id: int) -> set[str]:
        rows = query(f"SELECT NAME, ENCRYPTION FROM information_schema.{mysql.MYSQL_CATALOG} WHERE NAME LIKE %s",
                     (_like_prefix(namespace),))
        return {str(name).split("/", 1)[1] for name, flag in rows if str(flag) == mysql.mysql_encryption(True)}

    @staticmethod
    def switches(query: Any) -> str:
        return _switches(query, ("default_table_encryption", *mysql.MYSQL_LOG_SWITCHES.values()))

    @staticmethod
    def statement_times(query: Any) -> dict[str, float]:
        """The statements' server time (and CPU time, MySQL 8.0.28+) from performance_schema, in
        seconds; none when it is off."""
        if query("SELECT @@performance_schema", ())[0][0] in (0, "0", "OFF"):
            return {}
        try:
            ((wait, cpu),) = query("SELECT SUM(SUM_TIMER_WAIT), SUM(SUM_CPU_TIME) FROM "
                                   "performance_schema.events_statements_summary_global_by_event_name", ())
            return {"statement_s": float(wait or 0) / 1e12, "cpu_s": float(cpu or 0) / 1e12}
        except Exception:  # no SUM_CPU_TIME before MySQL 8.0.28, nor in MariaDB
            ((wait,),) = query("SELECT SUM(SUM_TIMER_WAIT) FROM "
                               "performance_schema.events_statements_summary_global_by_event_name", ())
            return {"statement_s": float(wait or 0) / 1e12}

    def provision_native(self, workspace: Path, encryption: Encryption, key: Secret | None) -> Database:
        return RemoteMySQLDatabase(workspace=workspace, encryption=encryption, key=key, target=self._target,
                                   flavour=self)


class RemoteMariaDBEngine(RemoteMySQLEngine):
    """MariaDB by URL: its own table options and catalog (see the module)."""

    name = "mariadb"
    schemes = mysql.MARIADB_SCHEMES
    extra = "mysql"
    encryptions = (
        NONE,
        Encryption("tde", "AES", 0, "CBC or CTR", "native", ("tables",),
                   "InnoDB table encryption (ENCRYPTED=YES ENCRYPTION_KEY_ID=key_id) with the server's key "
                   "management plugin: key length and mode are the server's (its key file and "
                   "file_key_management_encryption_algorithm); redo log, temporary files and binlog only where "
                   "the server encrypts them", 16 * 1024),
    )
    timeout: ClassVar[Timeout] = mysql.MARIADB_TIMEOUT
    takes_key_id = True
    confirmed_by: ClassVar[str] = f"information_schema.{mysql.MARIADB_CATALOG}"
    catalog_table: ClassVar[str] = mysql.MARIADB_CATALOG
    key_plugins: ClassVar[str] = "key management plugin (file_key_management, hashicorp_key_management, …)"
    key_fix: ClassVar[str] = ("load one in the server's configuration, e.g. plugin_load_add = file_key_management "
                              "with file_key_management_filename, and restart it")

    key_plugins_where: ClassVar[str] = "PLUGIN_TYPE = 'ENCRYPTION'"

    def _key_components(self) -> list[tuple[Any, ...]]:
        return []  # MariaDB has key management plugins only

    def database_options(self, encryption: Encryption) -> str:
        return ""

    def table_options(self, encryption: Encryption, key_id: int) -> str:
        return mysql.mariadb_table_options(None if encryption.is_baseline else key_id)

    @staticmethod
    def encrypted_tables(query: Any, namespace: str, key_id: int) -> set[str]:
        """Tables encrypted with `key_id` whose encryption is complete (no page left to rotate)."""
        rows = query("SELECT NAME, ENCRYPTION_SCHEME, CURRENT_KEY_ID, MIN_KEY_VERSION, ROTATING_OR_FLUSHING, "
                     f"KEY_ROTATION_PAGE_NUMBER FROM information_schema.{mysql.MARIADB_CATALOG} WHERE NAME LIKE %s",
                     (_like_prefix(namespace),))
        return {str(name).split("/", 1)[1] for name, scheme, key, version, flag, page in rows
                if mysql.tablespace_encrypted(scheme, version) and key == key_id and not mysql.rotating(flag, page)}

    @staticmethod
    def switches(query: Any) -> str:
        return _switches(query, (*mysql.MARIADB_SWITCHES, mysql.MARIADB_BINLOG_SWITCH))


def _switches(query: Any, names: Sequence[str]) -> str:
    """The server-wide switches `names` as `name=value`, comma separated."""
    (values,) = query("SELECT " + ", ".join(f"@@{name}" for name in names), ())
    return ", ".join(f"{name}={value}" for name, value in zip(names, values, strict=True))


def _fetch(conn: Any, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    with conn.cursor() as cursor:
        cursor.execute(sql, tuple(params) or None)
        return list(cursor.fetchall())


def _like_prefix(namespace: str) -> str:
    """A LIKE pattern for the tablespaces of `namespace` ('db/table'), its underscores literal."""
    return namespace.replace("_", "\\_") + "/%"
