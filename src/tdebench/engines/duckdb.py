"""DuckDB: whole-database AES-256 encryption (GCM or CTR), main file, WAL and temp files.

The database is ATTACHed to an in-memory DuckDB with ENCRYPTION_KEY/ENCRYPTION_CIPHER; the
baseline is attached the same way without a key, so both paths differ only in encryption.
DuckDB encrypts the temp files (what spills past memory_limit) only with `temp_file_encryption`,
which it leaves off by default: the encryptions set it, and the `-plaintemp` variants keep
DuckDB's default, so a plan can measure what that leaves in plaintext
(tests/contract/test_duckdb_temp_files.py, bench/temp_coverage.py).
Writing encrypted files needs OpenSSL, which DuckDB takes from its `httpfs` extension; the
extension is loaded from its PyPI wheel (`duckdb-extension-httpfs`), never downloaded.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from tdebench.engines import dialects, duckdb_wal
from tdebench.engines.base import (NONE, Availability, Backup, BackupMethod, Backups, Capabilities, Connection,
                                   Database, Encryption, Engine, EncryptionNotActive, LogFile, PageLayout,
                                   PlainChecksum, Reencrypts, Statement, execute_in_turn, raises_conflicts)
from tdebench.engines.backup_tools import finished, gunzip, gunzipped
from tdebench.engines.fs import FS_LAYER
from tdebench.engines.page_checksums import duckdb_checksum_change
from tdebench.engines.timeout import Watchdog
from tdebench.keys import Secret
from tdebench.results import BACKUP_FULL, BACKUP_FULL_COMPRESSED, BACKUP_LOGICAL

if TYPE_CHECKING:
    from tdebench.engines.duckdb_extensions import Config

_TEMP_FILES = "temp files"
_COVERS = ("main file", "WAL", _TEMP_FILES)
_PLAINTEMP = "-plaintemp"  # the suffix of a variant with DuckDB's default: temp files in plaintext
_BLOCK_BYTES = 256 * 1024  # DuckDB encrypts each block (default size 256 KiB) under its own nonce
_HEADER_BYTES = 3 * 4096  # its file begins with the main header and two database headers, 4 KiB each
# a block's header: its checksum (8 bytes); encrypted, a nonce and a tag (16 bytes each) before it
# (DEFAULT_ENCRYPTION_BLOCK_HEADER_SIZE in DuckDB 1.5's storage_info.hpp)
_CHECKSUM_BYTES = _BLOCK_HEADER_BYTES = 8
_ENCRYPTED_BLOCK_HEADER_BYTES = 40
_TAG_BYTES = 16  # GCM's tag after each encrypted log entry (none under CTR)
_CIPHERS = {"aes-256-gcm": "GCM", "aes-256-ctr": "CTR"}
_ALIAS = "db"
ALLOCATOR_DEFAULT, ALLOCATOR_FLUSH = "default", "flush"  # the plan's allocator values
THREADS_DEFAULT = "default"
THREADS = (THREADS_DEFAULT, "1", "2", "4", "8", "16", "32", "64")
"""The plan's threads: DuckDB's own (a thread per core) or this many. Each thread takes memory of its
own, so a small memory_limit holds on a host with more cores only with the threads fixed: TPC-H SF 1
without keys at 64 MB ran every query with 2 threads, and ran query 21 (once 9 and 21) out of memory
with 4, eight to ten queries with 16 (DuckDB 1.5.5, bench/duckdb_memory_floor.py --threads, 2026-12-07)."""
_FLUSH_EVERY_TASK: "Config" = {"allocator_flush_threshold": "0 bytes",
                               "allocator_bulk_deallocation_flush_threshold": "0 bytes"}
"""allocator = "flush": DuckDB gives the memory a task freed back to the kernel when the task ends
(its allocator's thresholds, 128 MiB a thread and 512 MiB a bulk free by default, at zero), so no
query runs on pages another query left behind. The databases of a lockstep group share tdebench's
process and so its allocator: by default the first of them to run a query that needs more memory
than the ones before it (TPC-H Q10 at SF 0.1: 66-84 MiB) takes them from the kernel,
page by page, and the next ones reuse what it freed; flushed, each takes its own
(bench/duckdb_q10.py, docs/method/variance.md "Memory a query takes from the kernel")."""
STORAGE_VERSION = "v1.5.0"
"""The storage format every database file tdebench makes is written in, with or without a key.
DuckDB writes an encrypted file in v1.5.0 or later only, and a plaintext one in v1.0.0 unless
told (so that old releases can read it); the two differ beyond the cipher: v1.5.0 compresses
strings with DICT_FSST where v1.0.0 uses FSST and Dictionary, a file 6% larger that loads
TPC-H's lineitem and orders 1.2-1.4 times as fast. Measured with the default, AES-256-GCM's load
was "faster than none" by 9.6% [-13.2, -5.7] at SF 0.1: the storage format's gain,
not the cipher's. With one format for every file, only the cipher differs."""


SPILL_LIMIT = "64MiB"
"""memory_limit of a spilling connection: at 30 MiB DuckDB 1.5.5 ran out of memory now and then
under AES-256-GCM (failed to pin a 256 KiB block)."""

@raises_conflicts
class DuckDBConnection:
    """A cursor on the shared in-memory instance with the database attached and in use."""

    dialect = dialects.dialect("duckdb")

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
    allocator: str = ALLOCATOR_DEFAULT  # the plan's allocator: ALLOCATOR_FLUSH returns freed memory after each task
    threads: str = THREADS_DEFAULT  # the plan's threads (THREADS): DuckDB's own, or this many
    path: Path = field(init=False)
    _instance: Any = field(default=None, init=False, repr=False)
    _open: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        self.path = self.workspace / "database.duckdb"

    @property
    def temp_directory(self) -> Path:
        return self.workspace / "duckdb.tmp"

    @property
    def _temp_encrypted(self) -> bool:
        """DuckDB's temp_file_encryption: on exactly where the encryption claims the temp files.
        Set off explicitly elsewhere, since with it on DuckDB encrypts the temp files of an
        unencrypted database too (measured on 1.5.5), and the baseline is the positive control."""
        return _TEMP_FILES in self.encryption.covers

    @property
    def _cipher(self) -> str:
        """DuckDB's ENCRYPTION_CIPHER of this encryption."""
        return _CIPHERS[self.encryption.name.removesuffix(_PLAINTEMP)]

    def create(self) -> None:
        conn = self.connect()
        conn.close()

    def spilling(self, conn: Connection) -> Connection:
        """`conn` with the instance's memory_limit at SPILL_LIMIT: a sort past it spills to
        temp_directory in the workspace (encrypted only with temp_file_encryption)."""
        conn.execute(f"SET memory_limit = '{SPILL_LIMIT}'")
        return conn

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
        instance = duckdb.connect(":memory:", config=self._config())
        try:
            instance.execute(f"LOAD '{extension_path('httpfs')}'")
            if not self.encryption.is_baseline:
                assert self.key is not None, "an encrypted database needs a key"
            instance.execute(f"ATTACH {_quoted(self.path)} AS {_ALIAS} ({self._new_file_options(self.key)})")
        except Exception as exc:
            instance.close()
            raise RuntimeError(f"duckdb could not open {self.path.name}: {_scrubbed(exc, self.key)}") from None
        return instance

    def _config(self) -> "Config":
        """The in-memory instance's settings: extensions never fetched, temp files in the
        workspace (inside the at-rest scan) and encrypted where the encryption claims them (set
        here, before anything spills: DuckDB refuses to change it while temp files exist), and
        the plan's memory_mb as memory_limit (MiB, as the servers count it; what does not fit
        spills), and the plan's allocator (_FLUSH_EVERY_TASK) and threads."""
        from tdebench.engines.duckdb_extensions import OFFLINE

        memory: Config = {} if self.memory_mb is None else {"memory_limit": f"{self.memory_mb}MiB"}
        flush = _FLUSH_EVERY_TASK if self.allocator == ALLOCATOR_FLUSH else {}
        threads: Config = {} if self.threads == THREADS_DEFAULT else {"threads": int(self.threads)}
        return {**OFFLINE, "temp_directory": str(self.temp_directory), "temp_file_encryption": self._temp_encrypted,
                **memory, **flush, **threads}

    def encryption_state(self) -> str:
        """What DuckDB says: whether the attached database is encrypted and with which cipher, and
        whether its temp files are (temp_file_encryption); EncryptionNotActive where that is not
        what the encryption claims. Named columns of duckdb_databases() only, never `options`:
        DuckDB has listed the ATTACH's encryption_key there (DuckDB issue #20761)."""
        if self.encryption.is_baseline:
            return ""
        conn = self.connect()
        try:
            rows = conn.execute("SELECT encrypted, cipher FROM duckdb_databases() WHERE database_name = ?", [_ALIAS])
            temp = conn.execute("SELECT current_setting('temp_file_encryption')")
        finally:
            conn.close()
        encrypted, cipher = rows[0] if rows else (False, None)
        temp_encrypted = bool(temp[0][0])
        state = (f"database {'encrypted with ' + str(cipher) if encrypted else 'not encrypted'}; "
                 f"temp_file_encryption = {str(temp_encrypted).lower()}")
        if not encrypted or cipher != self._cipher or temp_encrypted != self._temp_encrypted:
            raise EncryptionNotActive(f"duckdb: {state}, where {self.encryption.name} should have {self._cipher} "
                                      f"and temp_file_encryption = {str(self._temp_encrypted).lower()}")
        return state

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

    def page_layout(self, table: str) -> PageLayout:
        """Every table in the one file: blocks of 256 KiB after the three 4 KiB headers (DuckDB's
        storage format), each beginning with its checksum of the data after it (8 bytes); when
        encrypted, with its nonce and tag before that, and the checksum encrypted with the data
        (page_checksums.py)."""
        header = _BLOCK_HEADER_BYTES if self.encryption.is_baseline else _ENCRYPTED_BLOCK_HEADER_BYTES
        checksum = PlainChecksum(at=header - _CHECKSUM_BYTES, data_from=header, change=duckdb_checksum_change)
        return PageLayout(self.path, _HEADER_BYTES, _BLOCK_BYTES, plain_checksum=checksum)

    keeps_log: ClassVar[bool] = True

    def keep_log(self, conn: Connection) -> LogFile | None:
        """The .wal file, left with what `conn` commits: no checkpoint when the database is detached
        (`disable_checkpoint_on_shutdown`) nor as the log grows (`checkpoint_threshold`). Attaching
        it again replays the log without checkpointing it. Its entries are found by structure
        (engines/duckdb_wal.py): encrypted, each carries a nonce and a tag the twin's do not."""
        conn.execute("PRAGMA disable_checkpoint_on_shutdown")
        conn.execute("SET checkpoint_threshold = '1TB'")
        tag_bytes = _TAG_BYTES if self.encryption.authenticated else 0

        def relocate(twin: bytes, trial: bytes, offset: int, old: bytes, new: bytes) -> list[tuple[int, bytes]]:
            return duckdb_wal.changes(twin, trial, offset, old, new, tag_bytes)

        return LogFile(self.path.with_name(self.path.name + ".wal"), relocate=relocate)

    def store_verbatim(self, conn: Connection) -> None:
        """`force_compression = 'uncompressed'`: DuckDB compresses text (dictionary, FSST) by default."""
        conn.execute("SET force_compression = 'uncompressed'")

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
            instance.execute(f"ATTACH {_quoted(partial)} AS target ({self._new_file_options(new)})")
            instance.execute("COPY FROM DATABASE source TO target")
            instance.execute("DETACH target")
            instance.execute("DETACH source")
        except Exception as exc:
            partial.unlink(missing_ok=True)
            raise RuntimeError(f"duckdb could not copy {self.path.name}: {_scrubbed(exc, old, new)}") from None
        finally:
            instance.close()
        os.replace(partial, self.path)
        return "copy-database"

    def _bare_instance(self) -> Any:
        """An in-memory DuckDB with httpfs (for OpenSSL) loaded and nothing attached."""
        import duckdb

        from tdebench.engines.duckdb_extensions import extension_path

        self.temp_directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        instance = duckdb.connect(":memory:", config=self._config())
        instance.execute(f"LOAD '{extension_path('httpfs')}'")
        return instance

    def _new_file_options(self, key: Secret | None) -> str:
        """ATTACH's options for a file that may be made here: STORAGE_VERSION, and the key's."""
        return f"STORAGE_VERSION '{STORAGE_VERSION}'{self._key_options(key)}"

    def _key_options(self, key: Secret | None) -> str:
        """", ENCRYPTION_KEY …, ENCRYPTION_CIPHER …" for ATTACH, or "" without a key."""
        if key is None:
            return ""
        return f", ENCRYPTION_KEY '{key.hex()}', ENCRYPTION_CIPHER '{self._cipher}'"

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
            raise RuntimeError(f"duckdb backup {method.name} failed: {_scrubbed(exc, self.key)}") from None
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
                               f"{_scrubbed(exc, self.key)}") from None
        finally:
            conn.close()
            unpacked.unlink(missing_ok=True)

    def backup_contents(self, backup: Backup, scratch: Path) -> Path:
        return gunzipped(backup, _BACKUP_FILE, scratch, self.workspace / "backup.log")

    def _copy_attached(self, conn: Connection, file: Path, key: Secret | None, *, into_file: bool) -> None:
        """`COPY FROM DATABASE` between this database and `file`, attached with `key`. When the copy
        fails, its error is what is raised: the DETACH after it then fails too ("Current
        transaction is aborted"), which would hide why (e.g. DuckDB's "Computed AES tag differs")."""
        options = self._new_file_options(key) if into_file else "READ_ONLY" + self._key_options(key)
        conn.execute(f"ATTACH {_quoted(file)} AS {_BACKUP_ALIAS} ({options})")
        source, destination = (_ALIAS, _BACKUP_ALIAS) if into_file else (_BACKUP_ALIAS, _ALIAS)
        try:
            conn.execute(f"COPY FROM DATABASE {source} TO {destination}")
        except BaseException:
            with contextlib.suppress(Exception):  # the connection is closed after, which detaches it
                conn.execute(f"DETACH {_BACKUP_ALIAS}")
            raise
        conn.execute(f"DETACH {_BACKUP_ALIAS}")


_BACKUP_FILE = "backup.duckdb"
_BACKUP_ALIAS = "tdebench_backup"
_BACKUP_METHODS = (
    BackupMethod(BACKUP_FULL, "physical", False, "ATTACH a new file with the same key + COPY FROM DATABASE"),
    BackupMethod(BACKUP_FULL_COMPRESSED, "physical", True, "the same, then gzip"),
    BackupMethod(BACKUP_LOGICAL, "logical", False, "EXPORT DATABASE (CSV)"),
)


DEFAULT_MEMORY_SHARE = 0.8
"""DuckDB's memory_limit without one: 80% of the memory it sees (its documentation, "Configuration")."""
_UNITS = {"KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0, "TiB": 1024.0 ** 2}


@functools.cache
def default_cache_mb() -> float:
    """The memory_limit a new DuckDB instance gets without one (its default: 80% of the memory it
    sees), in MiB, as DuckDB reports it ("18.8 GiB": to a tenth of its unit)."""
    import duckdb

    instance = duckdb.connect(":memory:")
    try:
        value, unit = instance.execute("SELECT current_setting('memory_limit')").fetchall()[0][0].split()
    finally:
        instance.close()
    return float(value) * _UNITS[unit]


def _plaintemp(name: str, mode: str) -> Encryption:
    """`name` as DuckDB leaves it by default: temp_file_encryption off, so what spills past
    memory_limit (sorts, hash tables, large intermediates) reaches the temp files in plaintext."""
    return Encryption(name + _PLAINTEMP, "AES", 256, mode, "native", tuple(c for c in _COVERS if c != _TEMP_FILES),
                      f"{name} with DuckDB's default temp_file_encryption = false: what spills reaches the "
                      "temp files in plaintext; to measure that leak, by name only", _BLOCK_BYTES,
                      plaintext_default=True)


class DuckDBEngine(Engine):
    name = "duckdb"
    dialect = "duckdb"
    capabilities = Capabilities(embedded=True, concurrent_streams=True)
    # allocator = "flush": freed memory back to the kernel after every task (_FLUSH_EVERY_TASK);
    # threads = 2: that many threads, not one per core (THREADS)
    settings = {"allocator": (ALLOCATOR_DEFAULT, ALLOCATOR_FLUSH), "threads": THREADS}
    memory_use = ("memory_limit (its buffer manager: data pages, hash tables, sorts; what does not fit "
                  "spills to temp files in the workspace); without it DuckDB's default, 80% of RAM")
    default_cache_share = DEFAULT_MEMORY_SHARE
    encrypted_differences = (
        "every block is written with its own random nonce and (GCM) authentication tag, and the WAL and "
        "temporary files are encrypted too (Felius & Mühleisen, “Data-at-Rest Encryption in DuckDB”, DuckDB "
        "blog, 2025): an encrypted database's blocks and checkpoints are written by a different path than a "
        "plaintext one's, so compare the two in the load's steps and the Sizes table.")
    key_derivation = ("ATTACH derives the file's key from ENCRYPTION_KEY with one SHA-256 over the file's salt "
                      "and the key (no iterated KDF) and takes no raw key")
    encryptions = (
        NONE,
        Encryption("aes-256-gcm", "AES", 256, "GCM", "native", _COVERS,
                   "authenticated; DuckDB's default cipher; temp files with temp_file_encryption on", _BLOCK_BYTES),
        Encryption("aes-256-ctr", "AES", 256, "CTR", "native", _COVERS,
                   "not authenticated; faster than GCM where there is no AES-GCM acceleration; temp files with "
                   "temp_file_encryption on", _BLOCK_BYTES),
        *(_plaintemp(name, mode) for name, mode in _CIPHERS.items()),
        *FS_LAYER,
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

    def cache_mb(self) -> float:
        """memory_mb, or the memory_limit DuckDB sets itself (80% of this machine's memory), as
        DuckDB reports it."""
        return self.memory_mb or default_cache_mb()

    def provision_native(self, workspace: Path, encryption: Encryption, key: Secret | None) -> Database:
        return DuckDBDatabase(workspace=workspace, encryption=encryption, key=key, memory_mb=self.memory_mb,
                              allocator=self.setting["allocator"], threads=self.setting["threads"])


def _scrubbed(exc: Exception, *keys: Secret | None) -> str:
    """`exc`'s message without any key: without DuckDB's echo of the failing statement ("LINE 1:
    …", cut to a line's width, so a piece of a key in it would escape `Secret.scrub`), and with
    each key's spellings replaced."""
    message = str(exc).split("\nLINE ", 1)[0].rstrip()
    for key in keys:
        if key is not None:
            message = key.scrub(message)
    return message


def _quoted(path: Path) -> str:
    """A path as a DuckDB string literal."""
    return "'" + str(path).replace("'", "''") + "'"
