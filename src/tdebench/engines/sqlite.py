"""SQLite with SQLite3 Multiple Ciphers (PyPI `apsw-sqlite3mc`): page-level encryption of the
main file and the WAL/journal, with seven ciphers.

Each cipher keeps its own key derivation (PBKDF2 for most, Argon2id for AEGIS) with its
default cost; that cost is paid when a connection is opened and is measured as the
`open` step, never inside query times. With a plan's key_form = "raw", the four ciphers that
take a raw key (`PRAGMA key = "x'…'"`, SQLite3MC's sqlite3mcExtractRawKey: chacha20, sqlcipher,
ascon128, aegis) get one derived from the trial's key, as long as the cipher's key, and skip
their key derivation; aes128cbc, aes256cbc and rc4 always digest the key as a passphrase.
tdebench keeps temporary tables and sort files in memory (`temp_store = MEMORY`) for every
encryption (SQLite3MC encrypts them with the database's cipher when written: docs/manual.md,
"What the transient files hold, measured"), unless a plan sets the engine's
`temp_store = "file"`: then SQLite writes them, as files it unlinks on open, into the trial's
workspace (`sqlite.tmp/`), where the transient capture (capture.py) catches and judges them.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from tdebench.engines import dialects
from tdebench.engines.base import (BACKUP_FULL, BACKUP_FULL_COMPRESSED, BACKUP_LOGICAL, NONE, PASSPHRASE, RAW,
                                   Availability, Backup, BackupMethod, Backups, Capabilities, Connection, Database,
                                   Encryption, Engine, LogFile, PageLayout, Reencrypts, Statement, execute_in_turn,
                                   raises_conflicts)
from tdebench.engines.backup_tools import finished, gunzip, gunzipped
from tdebench.engines.fs import FS_LAYER
from tdebench.engines.page_checksums import SQLITE_FRAME_HEADER_BYTES, SQLITE_WAL_HEADER_BYTES, sqlite_wal_checksums
from tdebench.engines.timeout import Watchdog
from tdebench.keys import Secret

_COVERS = ("main file", "WAL/journal")
_PAGE_BYTES = 4096  # SQLite's default page_size, which tdebench keeps: SQLite3MC encrypts page by page
# tdebench name -> (SQLite3MC cipher, extra cipher parameters); Encryption.raw_key_bytes below is
# the cipher's key length where it takes a raw key (a longer one is read as key and salt)
_CIPHERS: dict[str, tuple[str, dict[str, str]]] = {
    "aes-128-cbc": ("aes128cbc", {}),
    "aes-256-cbc": ("aes256cbc", {}),
    "chacha20-poly1305": ("chacha20", {}),
    "sqlcipher": ("sqlcipher", {}),
    "ascon-128": ("ascon128", {}),
    "aegis-256": ("aegis", {"algorithm": "aegis-256"}),
    "rc4": ("rc4", {}),
}
_SIGNATURE = (0, b"SQLite format 3\x00")
TEMP_MEMORY, TEMP_FILE = "memory", "file"  # the plan's temp_store values


def _point_temp_files(conn: Any, directory: Path) -> None:
    """SQLite's temp directory (`sqlite3_temp_directory`, one per process) set to `directory`:
    set again before every statement of a connection that writes temp files, so that trials run
    in turn in one process (order = "lockstep") each write theirs into their own workspace."""
    quoted = str(directory).replace("'", "''")
    conn.execute(f"PRAGMA temp_store_directory = '{quoted}'")


@raises_conflicts
class SQLiteConnection:
    dialect = dialects.dialect("sqlite")

    def __init__(self, conn: Any, temp_dir: Path | None = None) -> None:
        self._conn = conn
        self._watchdog = Watchdog(conn.interrupt)
        self._temp_dir = temp_dir

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        if self._temp_dir is not None:  # SQLite's temp directory is one per process: this trial's, now
            _point_temp_files(self._conn, self._temp_dir)
        with self._watchdog.statement():
            return self._conn.execute(sql, tuple(params)).fetchall()

    def execute_batch(self, statements: Sequence[Statement]) -> list[list[tuple[Any, ...]]]:
        return execute_in_turn(self, statements)

    def set_timeout(self, seconds: float | None) -> None:
        self._watchdog.set_timeout(seconds)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self._conn:  # one transaction per batch, as a bulk load should be
            self._conn.executemany(sql, rows)

    def close(self) -> None:
        self._watchdog.close()
        self._conn.close()

    def keep_wal(self) -> None:
        """No checkpoint when this connection closes (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE) nor as the
        WAL grows: what it commits stays in the -wal file, to be replayed by the next open."""
        import apsw

        self._conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
        self._conn.execute("PRAGMA wal_autocheckpoint = 0").fetchall()


@dataclass
class SQLiteDatabase(Database, Reencrypts, Backups):
    memory_mb: int | None = None  # the page cache of every connection, in MiB; None: SQLite's default (2 MB)
    raw_key_bytes: int = 0  # > 0: the cipher gets a raw key of this length (key_form "raw"), no key derivation
    temp_store: str = TEMP_MEMORY  # the plan's temp_store: TEMP_FILE writes temp tables and sorts to temp_dir
    path: Path = field(init=False)
    # SQLite stores decimals as REAL and dates as ISO text (the TPC-H schema's SQLite dialect)
    load_casts: ClassVar[dict[str, str]] = {"DECIMAL": "DOUBLE", "DATE": "VARCHAR"}

    def __post_init__(self) -> None:
        self.path = self.workspace / "database.sqlite"

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
        import apsw

        conn = apsw.Connection(str(self.path))
        try:
            if not self.encryption.is_baseline:
                assert self.key is not None, "an encrypted database needs a key"
                self._use_key(conn, self.key)
            if temp_store == TEMP_FILE:
                self.temp_dir.mkdir(exist_ok=True)
                _point_temp_files(conn, self.temp_dir)
                conn.execute("PRAGMA temp_store = FILE")
            else:
                conn.execute("PRAGMA temp_store = MEMORY")
            if memory_mb is not None:  # a negative cache_size is in KiB, per connection
                conn.execute(f"PRAGMA cache_size = -{memory_mb * 1024}")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchall()  # proves the key
        except Exception as exc:
            conn.close()
            raise RuntimeError(f"sqlite could not open {self.path.name}: {self._scrub(str(exc), self.key)}") from None
        return SQLiteConnection(conn, self.temp_dir if temp_store == TEMP_FILE else None)

    @property
    def key_form(self) -> str:
        if self.key is None:
            return ""
        return RAW if self.raw_key_bytes else PASSPHRASE

    def _raw(self, key: Secret) -> Secret:
        """The raw key the cipher gets for `key` (key_form "raw"): derived from it, as long as the
        cipher's key, so the trial key's own spelling never reaches SQLite."""
        return key.derive(f"sqlite3mc-raw-key/{self.encryption.name}", self.raw_key_bytes)

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
        return _SIGNATURE

    def page_layout(self, table: str) -> PageLayout:
        """Every table in the one file: pages of page_size from the second on (the first holds the
        file header and the schema); SQLite3MC encrypts each whole, its nonce or tag in bytes
        reserved at the page's end. Its CBC ciphers (wxSQLite3's AES, SQLCipher) chain the blocks
        from the page's first byte, the IV derived from the page number (wxSQLite3's: SQLite3MC's
        `sqlite3mcGenerateInitialVector`) or kept in the reserved bytes (SQLCipher's)."""
        return PageLayout(self.path, _PAGE_BYTES, _PAGE_BYTES, cbc_blocks_from=0)

    keeps_log: ClassVar[bool] = True

    def keep_log(self, conn: Connection) -> LogFile | None:
        """The -wal file, left with what `conn` commits (every database of this engine is in WAL
        mode); its frame checksums, of the pages as written (SQLite3MC's ciphertext), recomputed
        as anyone can (engines/page_checksums.py)."""
        assert isinstance(conn, SQLiteConnection)
        conn.keep_wal()
        return LogFile(self.workspace / f"{self.path.name}-wal", recompute=sqlite_wal_checksums,
                       frames_from=SQLITE_WAL_HEADER_BYTES, frame_bytes=SQLITE_FRAME_HEADER_BYTES + _PAGE_BYTES,
                       cbc_blocks_from=SQLITE_FRAME_HEADER_BYTES)

    # -- maintenance: encrypting an existing database, changing its key ----------------------

    def opens_with(self, key: Secret) -> bool:
        import apsw

        conn = apsw.Connection(str(self.path))
        try:
            self._use_key(conn, key)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
        except apsw.Error:
            return False
        finally:
            conn.close()
        return True

    def _reencrypt(self, old: Secret | None, new: Secret) -> str:
        """SQLite3MC's `PRAGMA rekey`: every page (decrypted with the old key, if any) encrypted
        with the new one, in place. On a connection of its own, out of WAL mode: SQLite3MC
        refuses to encrypt a plaintext database in WAL mode, and in WAL mode it keeps the old
        key salt on a rekey. The rollback journal it writes meanwhile is deleted at commit."""
        import apsw

        conn = apsw.Connection(str(self.path))
        try:
            if old is not None:
                self._use_key(conn, old)
            conn.execute("PRAGMA journal_mode = DELETE").fetchall()
            self._use_key(conn, new, rekey=True)
            conn.execute("PRAGMA journal_mode = WAL").fetchall()
        except Exception as exc:
            raise RuntimeError(f"sqlite could not rekey {self.path.name}: {self._scrub(str(exc), old, new)}") from None
        finally:
            conn.close()
        return "pragma-rekey"

    def _use_key(self, conn: Any, key: Secret, rekey: bool = False) -> None:
        """This database's cipher and `key` on `conn`: to open it, or (`rekey`) to re-encrypt it;
        as a passphrase (`hexkey`, the cipher's key derivation runs) or, with raw_key_bytes, as
        the raw key derived from it (`key = "x'…'"`, no key derivation)."""
        cipher, params = _CIPHERS[self.encryption.name]
        conn.execute(f"PRAGMA cipher = '{cipher}'")
        for name, value in params.items():
            conn.execute(f"PRAGMA {name} = '{value}'")
        if self.raw_key_bytes:
            pragma = "rekey" if rekey else "key"
            conn.execute(f"PRAGMA {pragma} = \"x'{self._raw(key).hex()}'\"").fetchall()
            return
        pragma = "hexrekey" if rekey else "hexkey"
        conn.execute(f"PRAGMA {pragma} = '{key.hex()}'").fetchall()

    # -- backup and restore --------------------------------------------------------------------

    def backup_methods(self) -> tuple[BackupMethod, ...]:
        return _BACKUP_METHODS

    def backup(self, method: BackupMethod, target: Path) -> Backup:
        """Physical: SQLite's online backup API into a new file opened with this database's
        cipher and key, so SQLite3MC writes every page encrypted with that key (with no key on
        the target it refuses: "backup is not supported with incompatible source and target
        databases"); full-compressed then gzips it. Logical: the shell's `.dump` (SQL text)."""
        target.mkdir(parents=True)
        source = self._keyed(self.path, self.key)
        try:
            if method.kind == "logical":
                with (target / _DUMP_FILE).open("w", encoding="utf-8") as out:
                    _shell(source, out).process_command(".dump")
            else:
                _copy_pages(source, self._keyed(target / _BACKUP_FILE, self.key))
        finally:
            source.close()
        return finished(method, target, target / _BACKUP_FILE, self.workspace / "backup.log")

    def restore(self, backup: Backup) -> None:
        """Pages copied by the backup API out of the backup's file, opened with this database's
        key (a wrong key is refused: "file is not a database"); or the dump's SQL run into a
        new database with this key."""
        self.workspace.mkdir(mode=0o700, parents=True, exist_ok=True)
        if backup.method.kind == "logical":
            self.create()
            target = self._keyed(self.path, self.key)
            try:
                _shell(target, io.StringIO()).process_command(f".read '{backup.path / _DUMP_FILE}'")
            finally:
                target.close()
            return
        unpacked = self.workspace / "restore.sqlite"
        source_file = backup.path / _BACKUP_FILE
        try:
            if backup.method.compressed:
                gunzip(backup.path / (_BACKUP_FILE + ".gz"), unpacked, self.workspace / "restore.log")
                source_file = unpacked
            source = self._keyed(source_file, self.key)
            try:
                _copy_pages(source, self._keyed(self.path, self.key))
            finally:
                source.close()
        finally:
            unpacked.unlink(missing_ok=True)
        self.create()  # WAL mode, as every database of this engine has

    def backup_contents(self, backup: Backup, scratch: Path) -> Path:
        return gunzipped(backup, _BACKUP_FILE, scratch, self.workspace / "backup.log")

    def _keyed(self, path: Path, key: Secret | None) -> Any:
        """A bare apsw connection to `path` with this database's cipher and `key`, the key proven."""
        import apsw

        conn = apsw.Connection(str(path))
        try:
            if key is not None:
                self._use_key(conn, key)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
        except Exception as exc:
            conn.close()
            raise RuntimeError(f"sqlite could not open {path.name}: {self._scrub(str(exc), key)}") from None
        return conn


def _copy_pages(source: Any, target: Any) -> None:
    """Every page of `source` into `target` with the online backup API; closes `target`."""
    try:
        with target.backup("main", source, "main") as backup:
            while not backup.done:
                backup.step()
    finally:
        target.close()


def _shell(conn: Any, out: Any) -> Any:
    """APSW's SQLite shell on `conn`, writing to `out` (for `.dump` and `.read`)."""
    import apsw.shell

    return apsw.shell.Shell(stdout=out, stderr=io.StringIO(), db=conn)


_BACKUP_FILE = "backup.sqlite"
_DUMP_FILE = "dump.sql"
_BACKUP_METHODS = (
    BackupMethod(BACKUP_FULL, "physical", False, "online backup API into a file with the same cipher and key"),
    BackupMethod(BACKUP_FULL_COMPRESSED, "physical", True, "the same, then gzip"),
    BackupMethod(BACKUP_LOGICAL, "logical", False, ".dump (SQL text)"),
)


@functools.cache
def default_cache_mb() -> float:
    """A new connection's page cache in MiB, asked of the SQLite tdebench runs (PRAGMA cache_size:
    negative in KiB, else in pages of PRAGMA page_size): 2000 KiB, about 1.95 MiB, in SQLite 3.54
    with SQLite3MC 2.6, per connection and whatever the cipher."""
    import apsw

    conn = apsw.Connection(":memory:")
    try:
        size: int = conn.execute("PRAGMA cache_size").fetchall()[0][0]  # type: ignore[assignment]
        page: int = conn.execute("PRAGMA page_size").fetchall()[0][0]  # type: ignore[assignment]
    finally:
        conn.close()
    return -size / 1024 if size < 0 else size * page / (1024 * 1024)


class SQLiteEngine(Engine):
    name = "sqlite"
    dialect = "sqlite"
    capabilities = Capabilities(embedded=True, concurrent_streams=True)
    # temp_store = "file": temp tables and sort files written into the workspace (SQLite3MC encrypts
    # them with the database's cipher, as measured), where the transient capture judges them;
    # "memory" (the default) keeps them in RAM
    settings = {"temp_store": (TEMP_MEMORY, TEMP_FILE)}
    key_derivation = ("each cipher derives its key on every open: sqlcipher PBKDF2-HMAC-SHA512 256,000 "
                      "iterations, chacha20 and ascon128 64,007, aes256cbc 4,001, aes128cbc one MD5 and RC4 "
                      "pass (the PDF scheme, not iterated), aegis Argon2id; chacha20, sqlcipher, ascon128 and "
                      "aegis take a raw key instead")
    memory_use = ("PRAGMA cache_size on every connection (its page cache, decrypted pages; each "
                  "throughput stream has its own); without it SQLite's default, 2 MB per connection, "
                  "with the rest of the file in the OS page cache, decrypted again on every read")
    encrypted_differences = (
        "ciphers with a per-page nonce or tag (ChaCha20-Poly1305, SQLCipher, Ascon-128, AEGIS) reserve bytes at "
        "the end of every page (SQLite3 Multiple Ciphers' documentation, “Supported ciphers”), so their pages "
        "hold fewer rows and the file has more pages than a plaintext one's; the page cache and the OS "
        "cache then hold different numbers of pages.")
    encryptions = (
        NONE,
        Encryption("aes-128-cbc", "AES", 128, "CBC", "native", _COVERS, "wxSQLite3 AES-128", _PAGE_BYTES),
        Encryption("aes-256-cbc", "AES", 256, "CBC", "native", _COVERS, "wxSQLite3 AES-256", _PAGE_BYTES),
        Encryption("chacha20-poly1305", "ChaCha20-Poly1305", 256, "AEAD", "native", _COVERS,
                   "SQLite3MC's default cipher; PBKDF2-HMAC-SHA256 with 64,007 iterations on open", _PAGE_BYTES,
                   raw_key_bytes=32),
        Encryption("sqlcipher", "AES", 256, "CBC+HMAC-SHA512", "native", _COVERS,
                   "SQLCipher v4 compatible; PBKDF2-HMAC-SHA512 with 256,000 iterations on open", _PAGE_BYTES,
                   raw_key_bytes=32),
        Encryption("ascon-128", "Ascon-128", 128, "AEAD", "native", _COVERS,
                   "lightweight NIST cipher; Ascon PBKDF2 with 64,007 iterations on open", _PAGE_BYTES,
                   raw_key_bytes=32),  # SQLite3MC's KEYLENGTH_ASCON128: its own 32-byte key, not Ascon's 16
        Encryption("aegis-256", "AEGIS-256", 256, "AEAD", "native", _COVERS, "Argon2id key derivation on open",
                   _PAGE_BYTES, raw_key_bytes=32),
        Encryption("rc4", "RC4", 128, "stream", "native", _COVERS,
                   "legacy and broken: kept, as Moulianitakis & Asimakopoulos (2019) kept 3DES, to show "
                   "what an old cipher costs",
                   _PAGE_BYTES),
        *FS_LAYER,
    )

    def version(self) -> str:
        import apsw

        return f"SQLite {apsw.sqlite_lib_version()}, {getattr(apsw, 'mc_version', 'SQLite3MC')}"

    def availability(self) -> Availability:
        try:
            import apsw
        except ImportError as exc:
            return Availability(False, f"apsw is not installed: {exc}", "pip install -e . (installs apsw-sqlite3mc)")
        if not hasattr(apsw, "mc_version"):
            return Availability(False, "the installed apsw is not built with SQLite3 Multiple Ciphers",
                                "pip uninstall -y apsw && pip install apsw-sqlite3mc")
        return Availability(True)

    def cache_mb(self) -> float:
        """memory_mb, or the page cache SQLite gives a connection by default, as SQLite reports it."""
        return self.memory_mb or default_cache_mb()

    def default_cache_mb(self, memory_bytes: float | None) -> float:
        return default_cache_mb()  # a compile-time default, the same on every machine

    def provision_native(self, workspace: Path, encryption: Encryption, key: Secret | None) -> Database:
        return SQLiteDatabase(workspace=workspace, encryption=encryption, key=key, memory_mb=self.memory_mb,
                              raw_key_bytes=self.raw_key_bytes(encryption), temp_store=self.setting["temp_store"])
