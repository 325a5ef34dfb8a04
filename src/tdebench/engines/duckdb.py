"""DuckDB: whole-database AES-256 encryption (GCM or CTR), main file, WAL and temp files.

The database is ATTACHed to an in-memory DuckDB with ENCRYPTION_KEY/ENCRYPTION_CIPHER; the
baseline is attached the same way without a key, so both paths differ only in encryption.
Writing encrypted files needs OpenSSL, which DuckDB takes from its `httpfs` extension; the
extension is loaded from its PyPI wheel (`duckdb-extension-httpfs`), never downloaded.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tdebench.engines.base import (BACKUP_FULL, BACKUP_FULL_COMPRESSED, BACKUP_LOGICAL, NONE, Availability, Backup,
                                   BackupMethod, Backups, Capabilities, Connection, Database, Encryption, Engine,
                                   Reencrypts, Statement, execute_in_turn)
from tdebench.engines.backup_tools import finished, gunzip, gunzipped
from tdebench.engines.fs import FS_ENCRYPTIONS
from tdebench.engines.timeout import Watchdog
from tdebench.keys import Secret

_COVERS = ("main file", "WAL", "temp files")
_BLOCK_BYTES = 256 * 1024  # DuckDB encrypts each block (default size 256 KiB) under its own nonce
_CIPHERS = {"aes-256-gcm": "GCM", "aes-256-ctr": "CTR"}
_ALIAS = "db"


class DuckDBConnection:
    """A cursor on the shared in-memory instance with the database attached and in use."""

    def __init__(self, cursor: Any, owner: "DuckDBDatabase") -> None:
        self._cursor = cursor
        self._owner = owner
        self._watchdog = Watchdog(cursor.interrupt)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._watchdog.statement():
            self._cursor.execute(sql, list(params) if params else None)
            return self._cursor.fetchall() if self._cursor.description else []

    def execute_batch(self, statements: Sequence[Statement]) -> list[list[tuple[Any, ...]]]:
        return execute_in_turn(self, statements)

    def set_timeout(self, seconds: float | None) -> None:
        self._watchdog.set_timeout(seconds)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self._cursor.executemany(sql, [list(r) for r in rows])

    def close(self) -> None:
        self._watchdog.close()
        self._cursor.close()
        self._owner._release()


@dataclass
class DuckDBDatabase(Database, Reencrypts, Backups):
    memory_mb: int | None = None  # DuckDB's memory_limit in MiB; None: DuckDB's default (80% of RAM)
    path: Path = field(init=False)
    _instance: Any = field(default=None, init=False, repr=False)
    _open: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        self.path = self.workspace / "database.duckdb"

    @property
    def temp_directory(self) -> Path:
        return self.workspace / "duckdb.tmp"

    def create(self) -> None:
        conn = self.connect()
        conn.close()

    def connect(self) -> Connection:
        """The first connection opens the instance and attaches the file (key derivation happens
        here); further ones are cursors on it, so concurrent streams share one database."""
        if self._instance is None:
            self._instance = self._open_instance()
        self._open += 1
        cursor = self._instance.cursor()
        cursor.execute(f"USE {_ALIAS}")
        return DuckDBConnection(cursor, self)

    def _open_instance(self) -> Any:
        import duckdb

        from tdebench.engines.duckdb_extensions import extension_path

        self.temp_directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        instance = duckdb.connect(":memory:", config={
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
            "temp_directory": str(self.temp_directory),
            **self._memory_config(),
        })
        try:
            instance.execute(f"LOAD '{extension_path('httpfs')}'")
            options = ""
            if not self.encryption.is_baseline:
                assert self.key is not None, "an encrypted database needs a key"
                cipher = _CIPHERS[self.encryption.name]
                options = f" (ENCRYPTION_KEY '{self.key.hex()}', ENCRYPTION_CIPHER '{cipher}')"
            quoted = str(self.path).replace("'", "''")
            instance.execute(f"ATTACH '{quoted}' AS {_ALIAS}{options}")
        except Exception as exc:
            instance.close()
            message = self.key.scrub(str(exc)) if self.key else str(exc)
            raise RuntimeError(f"duckdb could not open {self.path.name}: {message}") from None
        return instance

    def _memory_config(self) -> dict[str, str]:
        """The plan's memory_mb as DuckDB's memory_limit (MiB, as the servers count it); what does
        not fit spills to the temp directory, inside the workspace and so inside the at-rest scan."""
        return {} if self.memory_mb is None else {"memory_limit": f"{self.memory_mb}MiB"}

    def _release(self) -> None:
        self._open -= 1
        if self._open == 0 and self._instance is not None:
            self._instance.execute("DETACH " + _ALIAS)
            self._instance.close()
            self._instance = None

    def files(self) -> list[Path]:
        found = [p for p in (self.path, self.path.with_name(self.path.name + ".wal")) if p.exists()]
        if self.temp_directory.exists():
            found += sorted(p for p in self.temp_directory.rglob("*") if p.is_file())
        return found

    def bulk_load(self, conn: Connection, table: str, columns: Sequence[str], parquet: Path) -> None:
        conn.execute(f"INSERT INTO {table} ({', '.join(columns)}) "
                     f"SELECT {', '.join(columns)} FROM read_parquet(?)", [str(parquet)])

    def close(self) -> None:
        while self._instance is not None and self._open > 0:
            self._release()

    # -- maintenance: encrypting an existing database, changing its key ----------------------

    def opens_with(self, key: Secret) -> bool:
        instance = self._bare_instance()
        try:
            instance.execute(f"ATTACH {_quoted(self.path)} AS probe (READ_ONLY{self._key_options(key)})")
            instance.execute("SELECT count(*) FROM duckdb_tables() WHERE database_name = 'probe'").fetchall()
        except Exception:  # duckdb raises its generic errors for a wrong key
            return False
        finally:
            instance.close()
        return True

    def _reencrypt(self, old: Secret | None, new: Secret) -> str:
        """DuckDB cannot encrypt a file in place: the database (plaintext, or under the old key)
        is copied into a new file with the new key (`ATTACH … (ENCRYPTION_KEY …)` + `COPY FROM
        DATABASE`: tables, keys, indexes, views), which then replaces it. The old file is
        deleted, not shredded."""
        if self._instance is not None:
            raise RuntimeError("close every connection before copying the database")
        partial = self.path.with_name(self.path.name + ".partial")
        instance = self._bare_instance()
        try:
            instance.execute(f"ATTACH {_quoted(self.path)} AS source (READ_ONLY{self._key_options(old)})")
            instance.execute(f"ATTACH {_quoted(partial)} AS target ({self._key_options(new).lstrip(', ')})")
            instance.execute("COPY FROM DATABASE source TO target")
            instance.execute("DETACH target")
            instance.execute("DETACH source")
        except Exception as exc:
            partial.unlink(missing_ok=True)
            message = new.scrub(old.scrub(str(exc)) if old else str(exc))
            raise RuntimeError(f"duckdb could not copy {self.path.name}: {message}") from None
        finally:
            instance.close()
        os.replace(partial, self.path)
        return "copy-database"

    def _bare_instance(self) -> Any:
        """An in-memory DuckDB with httpfs (for OpenSSL) loaded and nothing attached."""
        import duckdb

        from tdebench.engines.duckdb_extensions import extension_path

        self.temp_directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        instance = duckdb.connect(":memory:", config={"autoinstall_known_extensions": False,
                                                      "autoload_known_extensions": False,
                                                      "temp_directory": str(self.temp_directory),
                                                      **self._memory_config()})
        instance.execute(f"LOAD '{extension_path('httpfs')}'")
        return instance

    def _key_options(self, key: Secret | None) -> str:
        """", ENCRYPTION_KEY …, ENCRYPTION_CIPHER …" for ATTACH, or "" without a key."""
        if key is None:
            return ""
        return f", ENCRYPTION_KEY '{key.hex()}', ENCRYPTION_CIPHER '{_CIPHERS[self.encryption.name]}'"

    # -- backup and restore --------------------------------------------------------------------

    def backup_methods(self) -> tuple[BackupMethod, ...]:
        return _BACKUP_METHODS

    def backup(self, method: BackupMethod, target: Path) -> Backup:
        """DuckDB has no backup command, and copying the file of an open database may catch it
        half-written. Physical: a new database file with this database's cipher and key, filled
        by `COPY FROM DATABASE` (full-compressed: then gzip). Logical: `EXPORT DATABASE`, CSV
        files and the schema — plaintext whatever the database's encryption."""
        target.mkdir(parents=True)
        conn = self.connect()
        try:
            if method.kind == "logical":
                conn.execute(f"EXPORT DATABASE {_ALIAS} TO {_quoted(target)}")
            else:
                self._copy_attached(conn, target / _BACKUP_FILE, self.key, into_file=True)
        except Exception as exc:
            raise RuntimeError(f"duckdb backup {method.name} failed: {self._scrubbed(exc)}") from None
        finally:
            conn.close()
        return finished(method, target, target / _BACKUP_FILE, self.workspace / "backup.log")

    def restore(self, backup: Backup) -> None:
        """Into this new file with this database's key: `COPY FROM DATABASE` out of the backup's
        file (attached with the same key, so a wrong key is refused), or `IMPORT DATABASE`."""
        self.workspace.mkdir(mode=0o700, parents=True, exist_ok=True)
        unpacked = self.workspace / "restore.duckdb"
        conn = self.connect()
        try:
            if backup.method.kind == "logical":
                conn.execute(f"IMPORT DATABASE {_quoted(backup.path)}")
            else:
                source = backup.path / _BACKUP_FILE
                if backup.method.compressed:
                    gunzip(backup.path / (_BACKUP_FILE + ".gz"), unpacked, self.workspace / "restore.log")
                    source = unpacked
                self._copy_attached(conn, source, self.key, into_file=False)
        except Exception as exc:
            raise RuntimeError(f"duckdb restore of a {backup.method.name} backup failed: "
                               f"{self._scrubbed(exc)}") from None
        finally:
            conn.close()
            unpacked.unlink(missing_ok=True)

    def backup_contents(self, backup: Backup, scratch: Path) -> Path:
        return gunzipped(backup, _BACKUP_FILE, scratch, self.workspace / "backup.log")

    def _copy_attached(self, conn: Connection, file: Path, key: Secret | None, *, into_file: bool) -> None:
        """`COPY FROM DATABASE` between this database and `file`, attached with `key`."""
        options = ("" if into_file else "READ_ONLY") + self._key_options(key)
        options = options.lstrip(", ")
        conn.execute(f"ATTACH {_quoted(file)} AS {_BACKUP_ALIAS}" + (f" ({options})" if options else ""))
        try:
            source, destination = (_ALIAS, _BACKUP_ALIAS) if into_file else (_BACKUP_ALIAS, _ALIAS)
            conn.execute(f"COPY FROM DATABASE {source} TO {destination}")
        finally:
            conn.execute(f"DETACH {_BACKUP_ALIAS}")

    def _scrubbed(self, exc: Exception) -> str:
        return self.key.scrub(str(exc)) if self.key else str(exc)


_BACKUP_FILE = "backup.duckdb"
_BACKUP_ALIAS = "tdebench_backup"
_BACKUP_METHODS = (
    BackupMethod(BACKUP_FULL, "physical", False, "ATTACH a new file with the same key + COPY FROM DATABASE"),
    BackupMethod(BACKUP_FULL_COMPRESSED, "physical", True, "the same, then gzip"),
    BackupMethod(BACKUP_LOGICAL, "logical", False, "EXPORT DATABASE (CSV)"),
)


class DuckDBEngine(Engine):
    name = "duckdb"
    dialect = "duckdb"
    capabilities = Capabilities(embedded=True, concurrent_streams=True)
    memory_use = ("memory_limit (its buffer manager: data pages, hash tables, sorts; what does not fit "
                  "spills to temp files in the workspace); without it DuckDB's default, 80% of RAM")
    encryptions = (
        NONE,
        Encryption("aes-256-gcm", "AES", 256, "GCM", "native", _COVERS,
                   "authenticated; DuckDB's default cipher", _BLOCK_BYTES),
        Encryption("aes-256-ctr", "AES", 256, "CTR", "native", _COVERS,
                   "not authenticated; faster than GCM where there is no AES-GCM acceleration", _BLOCK_BYTES),
        *FS_ENCRYPTIONS,
    )

    def version(self) -> str:
        import duckdb

        return duckdb.__version__

    def availability(self) -> Availability:
        try:
            import duckdb  # noqa: F401

            from tdebench.engines.duckdb_extensions import extension_path

            extension_path("httpfs")
            extension_path("tpch")
        except Exception as exc:  # any failure means: not usable, say why
            return Availability(False, str(exc), "pip install -e . (installs duckdb and its extension wheels)")
        return Availability(True)

    def provision_native(self, workspace: Path, encryption: Encryption, key: Secret | None) -> Database:
        return DuckDBDatabase(workspace=workspace, encryption=encryption, key=key, memory_mb=self.memory_mb)


def _quoted(path: Path) -> str:
    """A path as a DuckDB string literal."""
    return "'" + str(path).replace("'", "''") + "'"
