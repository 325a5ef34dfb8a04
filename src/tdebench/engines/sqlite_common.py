"""What the two encrypting builds of SQLite tdebench runs share: SQLite3 Multiple Ciphers
(engines/sqlite.py, through apsw) and Zetetic's SQLCipher (engines/sqlcipher.py, through
sqlcipher3). Both are SQLite itself with a codec that encrypts every page on its way to the
disk, so the files (the database, its -wal, -shm and -journal), the pragmas (page cache, temp
store), the WAL kept at rest, the online backup API, a `.dump`, the re-encryption of a database
on a connection of its own and the page layout the strength workload reads are one code here;
the driver, how a key is given and each library's own ways are the subclasses'.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TextIO

from tdebench.engines import dialects
from tdebench.engines.base import (Backup, BackupMethod, Backups, Connection, Database, LogFile, PageLayout, Reencrypts,
                                   Statement, execute_in_turn, raises_conflicts)
from tdebench.engines.backup_tools import finished, gunzip, gunzipped
from tdebench.engines.page_checksums import SQLITE_FRAME_HEADER_BYTES, SQLITE_WAL_HEADER_BYTES, sqlite_wal_checksums
from tdebench.engines.timeout import Watchdog
from tdebench.keys import Secret
from tdebench.results import BACKUP_FULL, BACKUP_FULL_COMPRESSED, BACKUP_LOGICAL, PASSPHRASE, RAW

COVERS = ("main file", "WAL/journal")
PAGE_BYTES = 4096  # SQLite's default page_size (and SQLCipher 4's cipher_page_size): each page encrypted whole
SIGNATURE = (0, b"SQLite format 3\x00")
TEMP_MEMORY, TEMP_FILE = "memory", "file"  # the plan's temp_store values


def point_temp_files(conn: Any, directory: Path) -> None:
    """SQLite's temp directory (`sqlite3_temp_directory`, one per process) set to `directory`:
    set again before every statement of a connection that writes temp files, so that trials run
    in turn in one process (order = "lockstep") each write theirs into their own workspace."""
    quoted = str(directory).replace("'", "''")
    conn.execute(f"PRAGMA temp_store_directory = '{quoted}'")


@raises_conflicts
class SQLiteFamilyConnection:
    """A connection of either driver: both run a statement as `conn.execute(sql, params)` with a
    cursor to fetch from, and stop one with `conn.interrupt()`. How the WAL is kept at rest
    differs (the subclasses)."""

    dialect = dialects.dialect("sqlite")

    def __init__(self, conn: Any, temp_dir: Path | None = None) -> None:
        self._conn = conn
        self._watchdog = Watchdog(conn.interrupt)
        self._temp_dir = temp_dir

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        if self._temp_dir is not None:  # SQLite's temp directory is one per process: this trial's, now
            point_temp_files(self._conn, self._temp_dir)
        with self._watchdog.statement():
            return list(self._conn.execute(sql, tuple(params)).fetchall())

    def execute_batch(self, statements: Sequence[Statement]) -> list[list[tuple[Any, ...]]]:
        return execute_in_turn(self, statements)

    def set_timeout(self, seconds: float | None) -> None:
        self._watchdog.set_timeout(seconds)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """One transaction per batch, as a bulk load should be: a savepoint, which nests in any
        transaction already open and begins one where none is (apsw's `with conn`, and neither
        driver's autocommit, which would commit row by row)."""
        self._conn.execute("SAVEPOINT bulk_load")
        try:
            self._conn.executemany(sql, rows)
        except BaseException:
            self._conn.execute("ROLLBACK TO bulk_load")
            self._conn.execute("RELEASE bulk_load")
            raise
        self._conn.execute("RELEASE bulk_load")

    def close(self) -> None:
        self._watchdog.close()
        self._conn.close()

    def keep_wal(self) -> None:
        """No checkpoint when this connection closes nor as the WAL grows: what it commits stays
        in the -wal file, to be replayed by the next open."""
        raise NotImplementedError


@dataclass
class SQLiteFamilyDatabase(Database, Reencrypts, Backups):
    """One SQLite database file in the workspace, in WAL mode, opened by a subclass's driver with
    its codec's key. Subclasses give the driver (`_open`), the key (`_use_key`), the connection
    (`_wrap`), the copy of pages (`_copy_pages`), the dump and its replay, and the re-encryption."""

    memory_mb: int | None = None  # the page cache of every connection, in MiB; None: SQLite's default (2 MB)
    raw_key_bytes: int = 0  # > 0: the codec gets a raw key of this length, no key derivation
    temp_store: str = TEMP_MEMORY  # the plan's temp_store: TEMP_FILE writes temp tables and sorts to temp_dir
    path: Path = field(init=False)
    # SQLite stores decimals as REAL and dates as ISO text (the TPC-H schema's SQLite dialect)
    load_casts: ClassVar[dict[str, str]] = {"DECIMAL": "DOUBLE", "DATE": "VARCHAR"}
    label: ClassVar[str] = "sqlite"  # the engine's name in error messages
    raw_key_purpose: ClassVar[str] = "sqlite3mc-raw-key"  # what a raw key is derived for (with the encryption)

    def __post_init__(self) -> None:
        self.path = self.workspace / "database.sqlite"

    # -- the driver, the key and the library's own ways: the subclasses' -------------------------

    @abstractmethod
    def _open(self, path: Path) -> Any:
        """A bare driver connection to `path`, no key given yet."""

    @abstractmethod
    def _use_key(self, conn: Any, key: Secret, rekey: bool = False) -> None:
        """This database's cipher settings and `key` on `conn`: to open it, or (`rekey`) to re-encrypt it."""

    @abstractmethod
    def _wrap(self, conn: Any, temp_dir: Path | None) -> Connection:
        """The workloads' connection around a bare, keyed one."""

    @abstractmethod
    def _copy_pages(self, source: Any, target: Any) -> None:
        """Every page of `source` into `target` with SQLite's online backup API; closes `target`."""

    @abstractmethod
    def _dump(self, conn: Any, out: TextIO) -> None:
        """`conn`'s schema and rows as SQL text (a `.dump`) into `out`."""

    @abstractmethod
    def _replay(self, conn: Any, script: Path) -> None:
        """The SQL of a `.dump` in `script` run on `conn`."""

    @property
    @abstractmethod
    def _page_bytes(self) -> int:
        """The page size this database's pages are written (and encrypted) in."""

    # -- what both share ---------------------------------------------------------------------------

    @property
    def temp_dir(self) -> Path:
        """Where SQLite writes its temp files under temp_store = "file": in the workspace, so
        the capture watches them and nothing lands outside what tdebench cleans up."""
        return self.workspace / "sqlite.tmp"

    def create(self) -> None:
        conn = self.connect()
        conn.execute("PRAGMA journal_mode = WAL")
        conn.close()

    def connect(self) -> Connection:
        return self._connect(self.temp_store, self.memory_mb)

    def spilling(self, conn: Connection) -> Connection:
        """A new connection with temp_store = FILE (its temp files in the workspace's temp_dir)
        and a 1 MiB page cache, whatever the plan's: its sorts and temp tables go to files."""
        return self._connect(TEMP_FILE, 1)

    def _connect(self, temp_store: str, memory_mb: int | None) -> Connection:
        conn = self._open(self.path)
        try:
            if not self.encryption.is_baseline:
                assert self.key is not None, "an encrypted database needs a key"
                self._use_key(conn, self.key)
            if temp_store == TEMP_FILE:
                self.temp_dir.mkdir(exist_ok=True)
                point_temp_files(conn, self.temp_dir)
                conn.execute("PRAGMA temp_store = FILE")
            else:
                conn.execute("PRAGMA temp_store = MEMORY")
            if memory_mb is not None:  # a negative cache_size is in KiB, per connection
                conn.execute(f"PRAGMA cache_size = -{memory_mb * 1024}")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchall()  # proves the key
        except Exception as exc:
            conn.close()
            raise RuntimeError(f"{self.label} could not open {self.path.name}: "
                               f"{self._scrub(str(exc), self.key)}") from None
        return self._wrap(conn, self.temp_dir if temp_store == TEMP_FILE else None)

    @property
    def key_form(self) -> str:
        if self.key is None:
            return ""
        return RAW if self.raw_key_bytes else PASSPHRASE

    def _raw(self, key: Secret) -> Secret:
        """The raw key the codec gets for `key`: derived from it, as long as the cipher's key, so
        the trial key's own spelling never reaches the library."""
        return key.derive(f"{self.raw_key_purpose}/{self.encryption.name}", self.raw_key_bytes)

    def _scrub(self, text: str, *keys: Secret | None) -> str:
        """`text` without any spelling of `keys`, nor of the raw keys derived from them."""
        for key in keys:
            if key is not None:
                text = key.scrub(self._raw(key).scrub(text) if self.raw_key_bytes else text)
        return text

    def files(self) -> list[Path]:
        names = [self.path.name + suffix for suffix in ("", "-wal", "-shm", "-journal")]
        return [self.workspace / n for n in names if (self.workspace / n).exists()]

    def plaintext_signature(self) -> tuple[int, bytes] | None:
        return SIGNATURE

    def page_layout(self, table: str) -> PageLayout:
        """Every table in the one file: pages of page_size from the second on (the first holds the
        file header and the schema); the codec encrypts each whole, its IV, nonce or tag in bytes
        reserved at the page's end. The CBC ciphers (wxSQLite3's AES, SQLCipher's) chain the blocks
        from the page's first byte, the IV derived from the page number (wxSQLite3's: SQLite3MC's
        `sqlite3mcGenerateInitialVector`) or kept in the reserved bytes (SQLCipher's)."""
        return PageLayout(self.path, self._page_bytes, self._page_bytes, cbc_blocks_from=0)

    keeps_log: ClassVar[bool] = True

    def keep_log(self, conn: Connection) -> LogFile | None:
        """The -wal file, left with what `conn` commits (every database of this engine is in WAL
        mode); its frame checksums, of the pages as written (the codec's ciphertext), recomputed
        as anyone can (engines/page_checksums.py)."""
        assert isinstance(conn, SQLiteFamilyConnection)
        conn.keep_wal()
        return LogFile(self.workspace / f"{self.path.name}-wal", recompute=sqlite_wal_checksums,
                       frames_from=SQLITE_WAL_HEADER_BYTES, frame_bytes=SQLITE_FRAME_HEADER_BYTES + self._page_bytes,
                       cbc_blocks_from=SQLITE_FRAME_HEADER_BYTES)

    def opens_with(self, key: Secret) -> bool:
        conn = self._open(self.path)
        try:
            self._use_key(conn, key)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
        except Exception:  # the driver's error: the key does not open it
            return False
        finally:
            conn.close()
        return True

    # -- backup and restore --------------------------------------------------------------------

    def backup_methods(self) -> tuple[BackupMethod, ...]:
        return BACKUP_METHODS

    def backup(self, method: BackupMethod, target: Path) -> Backup:
        """Physical: SQLite's online backup API into a new file opened with this database's
        cipher settings and key, so the codec writes every page encrypted with that key;
        full-compressed then gzips it. Logical: a `.dump` (SQL text)."""
        target.mkdir(parents=True)
        source = self._keyed(self.path, self.key)
        try:
            if method.kind == "logical":
                with (target / DUMP_FILE).open("w", encoding="utf-8") as out:
                    self._dump(source, out)
            else:
                self._copy_pages(source, self._keyed(target / BACKUP_FILE, self.key))
        finally:
            source.close()
        return finished(method, target, target / BACKUP_FILE, self.workspace / "backup.log")

    def restore(self, backup: Backup) -> None:
        """Pages copied by the backup API out of the backup's file, opened with this database's
        key (a wrong key is refused: "file is not a database"); or the dump's SQL run into a
        new database with this key."""
        self.workspace.mkdir(mode=0o700, parents=True, exist_ok=True)
        if backup.method.kind == "logical":
            self.create()
            target = self._keyed(self.path, self.key)
            try:
                self._replay(target, backup.path / DUMP_FILE)
            finally:
                target.close()
            return
        unpacked = self.workspace / "restore.sqlite"
        source_file = backup.path / BACKUP_FILE
        try:
            if backup.method.compressed:
                gunzip(backup.path / (BACKUP_FILE + ".gz"), unpacked, self.workspace / "restore.log")
                source_file = unpacked
            source = self._keyed(source_file, self.key)
            try:
                self._copy_pages(source, self._keyed(self.path, self.key))
            finally:
                source.close()
        finally:
            unpacked.unlink(missing_ok=True)
        self.create()  # WAL mode, as every database of this engine has

    def backup_contents(self, backup: Backup, scratch: Path) -> Path:
        return gunzipped(backup, BACKUP_FILE, scratch, self.workspace / "backup.log")

    def _keyed(self, path: Path, key: Secret | None) -> Any:
        """A bare driver connection to `path` with this database's cipher settings and `key`, the key proven."""
        conn = self._open(path)
        try:
            if key is not None:
                self._use_key(conn, key)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
        except Exception as exc:
            conn.close()
            raise RuntimeError(f"{self.label} could not open {path.name}: {self._scrub(str(exc), key)}") from None
        return conn

    def _rewrite(self, what: str, change: Callable[[Any], None], *keys: Secret | None) -> None:
        """`change` on a bare connection of its own to this database (opened with no key: the change
        gives the keys it needs), closed afterwards; an error says `what` failed, scrubbed of `keys`."""
        conn = self._open(self.path)
        try:
            change(conn)
        except Exception as exc:
            raise RuntimeError(f"{self.label} could not {what} {self.path.name}: "
                               f"{self._scrub(str(exc), *keys)}") from None
        finally:
            conn.close()


BACKUP_FILE = "backup.sqlite"
DUMP_FILE = "dump.sql"
BACKUP_METHODS = (
    BackupMethod(BACKUP_FULL, "physical", False, "online backup API into a file with the same cipher and key"),
    BackupMethod(BACKUP_FULL_COMPRESSED, "physical", True, "the same, then gzip"),
    BackupMethod(BACKUP_LOGICAL, "logical", False, ".dump (SQL text)"),
)
