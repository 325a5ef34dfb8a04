"""The engine contract: what every database system must offer tdebench.

An `Engine` describes one database system (its encryptions, version, whether it can run
here). `Engine.provision` creates a `Database`: one instance of that engine with one
encryption setting inside a trial's workspace. The runner and the workloads talk only to
these two classes and never ask which engine they hold; differences are expressed as data
(`Capabilities`, `Encryption.covers`, the SQL `dialect`).
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

import psutil

from tdebench.keys import Secret
from tdebench.results import AT_MOUNT, ON_OPEN, PASSPHRASE, PER_VALUE, RAW, EncryptionFacts, EngineFacts


class Layer(Protocol):
    """A layer below the engine that encrypts its files (engines/fs.py: gocryptfs): an
    `Encryption` it provides carries it, so `Engine.provision` needs to know no layer."""

    def availability(self) -> Availability:
        """Whether the layer works here (never raises)."""

    def provision(self, engine: Engine, workspace: Path, encryption: Encryption, key: Secret | None) -> Database:
        """A database of `engine` in `workspace` whose files this layer holds, encrypted."""


@dataclass(frozen=True)
class Encryption:
    """One at-rest setting of an engine; `none` is the baseline every overhead is measured against."""

    name: str
    algorithm: str  # e.g. "AES", "ChaCha20-Poly1305", "none"
    key_bits: int  # 0 for none
    mode: str  # e.g. "GCM", "CTR", "CBC", "AEAD", "stream", "none"
    layer: str  # "none", "native", "fs" or "column"
    covers: tuple[str, ...]  # what reaches the disk encrypted: "main file", "WAL", ...
    notes: str = ""
    page_bytes: int = 0  # bytes encrypted under one nonce/IV (the engine's page or block); 0: none, per value
    legacy: bool = False  # an old cipher kept to compare with old studies: a plan gets it only by name, not "all"
    # the length of a raw key the engine takes for it instead of a passphrase, skipping its key
    # derivation on every open (a plan's key_form = "raw"); 0: the engine always derives the key
    raw_key_bytes: int = 0
    # the engine's own default that leaves part of the data in plaintext (what `covers` leaves out, e.g.
    # DuckDB's temp files), kept as a variant of its own so a plan can measure the leak; by name only
    plaintext_default: bool = False
    # the layer below the engine that provides it (layer "fs"); None: the engine's own (or none)
    provider: Layer | None = field(default=None, compare=False, repr=False)
    # a check under the key that the mode's name does not show, what it is (OpenPGP's MDC: a SHA-1 of
    # the plaintext encrypted with it, which whoever changes the ciphertext cannot recompute); "": none
    keyed_check: str = ""

    @property
    def is_baseline(self) -> bool:
        """Nothing encrypted: `none`, and the `placebo` that repeats it as an A/A control."""
        return self.layer == "none"

    @property
    def encrypts(self) -> bool:
        """A cipher turns what reaches the disk into ciphertext under the trial's key: every
        setting but the baseline and a layer with no cipher (`fs-passthrough`, the file-system
        layer's mount alone, which measures what the layer costs without encrypting). One that
        does not takes no key, and its files at rest are expected to be plaintext."""
        return self.algorithm != "none"

    @property
    def by_name_only(self) -> bool:
        """Left out of a plan's `encryptions = "all"`: a legacy cipher, an engine default that
        leaves data in plaintext on purpose, or a layer with no cipher (a control arm). None is
        a setting to choose for new data; a plan that wants to compare with one, to see its
        leak or to split a layer's cost from its cipher's, names it."""
        return self.legacy or self.plaintext_default or (not self.encrypts and not self.is_baseline)

    @property
    def authenticated(self) -> bool:
        """Each page (or value) carries a keyed tag the engine checks on reading (GCM, the AEADs,
        an HMAC beside the cipher, a `keyed_check`): a change made without the key is refused by
        it, where an unauthenticated mode has at most an unkeyed checksum anyone can recompute."""
        mode = self.mode.upper()
        return mode.startswith(("GCM", "AEAD")) or "HMAC" in self.cipher_extra.upper() or bool(self.keyed_check)

    @property
    def cipher(self) -> str:
        """The raw cipher, as `tdebench ciphers` names it: AEADs and stream ciphers by algorithm
        ("chacha20-poly1305", "rc4"), block ciphers by algorithm, key bits and mode
        ("aes-256-gcm", "3des-168-cbc"); "" for the baseline."""
        if not self.encrypts:
            return ""
        mode = self.mode.partition("+")[0]
        if mode in ("AEAD", "stream"):
            return self.algorithm.lower()
        return f"{self.algorithm}-{self.key_bits}-{mode.split()[0]}".lower()

    @property
    def cipher_extra(self) -> str:
        """What the engine adds on top of the raw cipher per page, e.g. "HMAC-SHA512"."""
        return self.mode.partition("+")[2]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "algorithm": self.algorithm,
            "key_bits": self.key_bits,
            "mode": self.mode,
            "layer": self.layer,
            "covers": list(self.covers),
            "notes": self.notes,
            "page_bytes": self.page_bytes,
            "legacy": self.legacy,
            "plaintext_default": self.plaintext_default,
        }


NONE = Encryption(
    name="none", algorithm="none", key_bits=0, mode="none", layer="none", covers=(),
    notes="baseline: nothing is encrypted",
)
PLACEBO = Encryption(
    name="placebo", algorithm="none", key_bits=0, mode="none", layer="none", covers=(),
    notes="A/A control: the baseline again, run and analysed like an encryption; its overhead is the noise floor",
)


@dataclass(frozen=True)
class Capabilities:
    """What the driver may rely on, instead of asking which engine it holds."""

    embedded: bool  # runs inside the tdebench process (CPU time of this process is the engine's)
    concurrent_streams: bool  # several connections may query one database at once
    # a server tdebench did not start (engines/remote.py): its processes are not ours to measure
    # (timing is client-side; `Database.server_counters` where it has them), its caches not ours to drop
    remote: bool = False


@dataclass(frozen=True)
class Availability:
    """Whether an engine can run on this machine, and if not, why and what fixes it."""

    usable: bool
    reason: str = ""
    fix: str = ""


class EncryptionNotActive(RuntimeError):
    """The engine reports that data which should be encrypted is not (yet)."""


class PlaintextViewGone(RuntimeError):
    """A layer below the engine (gocryptfs) whose decrypted view should be there, the engine
    running on it, is not (its mount vanished): the view cannot serve as the positive control."""


class QueryTimeout(RuntimeError):
    """A statement ran past the connection's timeout and was stopped by the engine."""


class Conflict(RuntimeError):
    """A transaction lost a race with a concurrent one (a deadlock, a serialization failure, a
    write conflict, a busy database): the engine rolled it back, and running it again is the
    right answer (oltp retries it). `kind` says which, as the engine's dialect names it
    (engines/dialects.py); the driver's own error is the `__cause__`. The message is the kind
    alone: nothing of the statement or its values is in it."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


class NotSupported(RuntimeError):
    """The engine cannot do this maintenance operation (e.g. change the key of MariaDB's
    `file_key_management`). `method` names what would do it; the message says why. Workloads
    record it as "unsupported", never as a number."""

    def __init__(self, method: str, reason: str) -> None:
        super().__init__(reason)
        self.method = method


@dataclass(frozen=True)
class SensitiveColumns:
    """Columns of one table that a column-level encryption seals (see `Database.seal_columns`);
    `key` names the (never sensitive) columns that identify a row."""

    table: str
    columns: tuple[str, ...]
    key: tuple[str, ...]


Statement = tuple[str, Sequence[Any]]
"""One statement of a batch: its text with `?` placeholders, and their values."""


class Connection(Protocol):
    """The small part of a DB-API connection that workloads use."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement and return all its rows; QueryTimeout past the timeout, Conflict
        where the transaction lost a race (`raises_conflicts`)."""
        ...

    def execute_batch(self, statements: Sequence[Statement]) -> list[list[tuple[Any, ...]]]:
        """Run `statements` in order, in whatever transaction is open, and return each one's
        rows. A server sends them together and waits once (one round trip where `execute` would
        take one each: what a client-side transaction's Python and the server's context
        switches cost); an embedded engine runs them in turn (`execute_in_turn`). The first
        that fails raises, and none after it runs: the caller rolls the transaction back."""
        ...

    def set_timeout(self, seconds: float | None) -> None:
        """Stop any later statement that runs longer than `seconds` (None: no limit)."""
        ...

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...

    def close(self) -> None: ...


_C = TypeVar("_C", bound=type)


def raises_conflicts(cls: _C) -> _C:
    """A Connection class whose `execute`, `execute_batch` and `executemany` raise Conflict for
    a driver error that the connection's dialect (`self.dialect`, engines/dialects.py) classifies
    as a lost race, and any other error as it is: the one place where an engine's driver errors
    become the retryable conflict the workloads catch. Only the methods the class defines are
    wrapped (one it inherits already is)."""
    for name in ("execute", "execute_batch", "executemany"):
        if name in vars(cls):
            setattr(cls, name, _conflicts_raised(vars(cls)[name]))
    return cls


def _conflicts_raised(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            kind = self.dialect.conflict(exc)
            if kind is None:
                raise
            raise Conflict(kind) from exc
    return wrapper


def execute_in_turn(conn: Connection, statements: Sequence[Statement]) -> list[list[tuple[Any, ...]]]:
    """`Connection.execute_batch` one statement at a time: for a connection with nothing to
    gain from sending them together (an engine in this process), or no way to."""
    return [conn.execute(sql, params) for sql, params in statements]


@dataclass(frozen=True)
class BackupMethod:
    """One way an engine backs up a database, as data: the backup workload's test of the same
    name runs it, and the report shows `kind`, `compressed` and `tool` beside the results.

    `kind` "physical" copies the database's files or pages as stored (so encrypted wherever the
    engine encrypts them, unless its tool decrypts on the way); "logical" writes the rows out
    again as SQL or CSV through the engine. `compressed` says whether the artifact is."""

    name: str  # BACKUP_FULL, BACKUP_FULL_COMPRESSED or BACKUP_LOGICAL
    kind: str  # "physical" or "logical"
    compressed: bool
    tool: str  # what runs, e.g. "mariadb-backup --backup --stream=xbstream | gzip"


@dataclass(frozen=True)
class Backup:
    """A finished backup: `path` is the directory holding the artifact (one file or a tree),
    everything that would go to backup storage and nothing else (no key)."""

    method: BackupMethod
    path: Path

    def files(self) -> list[Path]:
        return sorted(p for p in self.path.rglob("*") if p.is_file() and not p.is_symlink())

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.files())


@dataclass(frozen=True)
class PlainChecksum:
    """A checksum an engine keeps of each page's plaintext (`PageLayout.plain_checksum`): stored at
    `at` in the page (inside the ciphertext where the encryption covers it), of the page's bytes
    from `data_from` on, in words of `word_bytes`; `change(before, after)` is what to XOR into it
    when the words `before` (aligned on `data_from`) become `after`, computed by anyone who knows
    those words (engines/page_checksums.py)."""

    at: int
    data_from: int
    change: Callable[[bytes, bytes], bytes] = field(compare=False, repr=False)
    word_bytes: int = 8


@dataclass(frozen=True)
class PageLayout:
    """Where a database's data pages are in the file holding a table (`Database.page_layout`):
    pages of `page_bytes` from offset `first_page` on (what comes before is the file's headers),
    the same with and without the engine's own encryption."""

    file: Path
    first_page: int
    page_bytes: int
    # the page (as stored) with the unkeyed checksum the engine checks on reading recomputed, as
    # anyone holding the file can (engines/page_checksums.py); None: no such checksum, or a keyed
    # one, or not one tdebench can compute
    recompute: Callable[[bytes], bytes] | None = field(default=None, compare=False, repr=False)
    plain_checksum: PlainChecksum | None = None  # a checksum of the plaintext instead, where it is and how it changes
    # where a CBC cipher's blocks start in each page (its IV before them or derived, not in the page):
    # what a CBC forgery aligns its chosen block on (workloads/strength/forgery.py); None: not known,
    # the forgery XORs at the value's own offset as under a stream cipher
    cbc_blocks_from: int | None = None

    def pages(self) -> int:
        """How many whole pages the file holds now."""
        return max(0, (self.file.stat().st_size - self.first_page) // self.page_bytes)

    def page_start(self, offset: int) -> int:
        """The offset of the page holding byte `offset`."""
        return self.first_page + (offset - self.first_page) // self.page_bytes * self.page_bytes


@dataclass(frozen=True)
class LogFile:
    """A write-ahead log left at rest with committed changes in it (`Database.keep_log`): its file,
    and the whole file with the unkeyed checksums the engine checks on replaying it recomputed, as
    anyone holding the file can (None: none, or not one tdebench can compute)."""

    file: Path
    recompute: Callable[[bytes], bytes] | None = field(default=None, compare=False, repr=False)
    # the pages it logs, where each frame holds one: the first frame's offset, a frame's bytes, and
    # where the page's CBC blocks start in a frame (None: not known, no CBC forgery in the log)
    frames_from: int = 0
    frame_bytes: int = 0
    cbc_blocks_from: int | None = None
    # where a log's layout differs from an unencrypted twin's (entries with a nonce and a tag): the
    # (offset, XOR mask) pairs that change a value, given the twin's log, the trial's log, the value's
    # offset in the twin's, the old and the new value; None: the twin's offset serves as it is
    relocate: Callable[[bytes, bytes, int, bytes, bytes], list[tuple[int, bytes]]] | None = field(
        default=None, compare=False, repr=False)
    # where the twin's log holds the value the forgery changes, given the log and the value: the one offset
    # of it that replaying the log writes into the table (InnoDB's redo log also holds the row's old value
    # for its undo log, and older copies before the checkpoint); None: its one offset in the whole file
    value_in: Callable[[bytes, bytes], int | None] | None = field(default=None, compare=False, repr=False)
    # whether the log holds only the bytes a change alters (InnoDB's: a row deleted and inserted again with
    # the same value logs a delete mark, not the value), so the commit that puts the value there first
    # sets the row to another value (`data.rewrite`)
    changes_only: bool = False
    # a log the engine never encrypts itself (PostgreSQL's pg_wal: plaintext, or the values a column layer
    # sealed), forged by what it holds, not at a twin's offset (`Database.log_needs_twin` False): the
    # (offset, XOR mask) pairs that XOR a mask into every copy of a byte string among its records, given
    # the log, the string, where in it the mask goes and the mask; ValueError where no record holds it
    changes_in: Callable[[bytes, bytes, int, bytes], list[tuple[int, bytes]]] | None = field(
        default=None, compare=False, repr=False)
    # where replaying the log also writes what it replays into the data files (PostgreSQL's crash recovery
    # ends with a checkpoint), so that putting the log's bytes back would not put the database back: the
    # stopped database copied as a physical backup into a new directory, and the log's file in the copy,
    # which the forgery changes and restores to read back; None: the engine replays the log without a
    # checkpoint (`keep_log` on the reading connection), in place
    copied: Callable[[Path], tuple[Backup, Path]] | None = field(default=None, compare=False, repr=False)

    def layout(self) -> PageLayout:
        """The log as one page: what a change to it saves, recomputes and puts back."""
        return PageLayout(self.file, 0, max(1, self.file.stat().st_size), recompute=self.recompute)

    def frames(self) -> PageLayout | None:
        """The log's frames as pages, where a CBC forgery aligns its block (None: not known)."""
        if self.cbc_blocks_from is None or self.frame_bytes <= 0:
            return None
        return PageLayout(self.file, self.frames_from, self.frame_bytes, cbc_blocks_from=self.cbc_blocks_from)


@dataclass(frozen=True)
class SealedValue:
    """One value a column layer sealed, as it is stored (`Database.sealed_value`): the bytes of its
    sealed form (found as they are in the table's file), where the value's plaintext lies in them
    (`value_at`: its ciphertext is the plaintext XOR a key stream), and the CFB stream they belong
    to (`stream_at`, blocks of `block_bytes` from there): what a known-plaintext forgery changes."""

    stored: bytes
    value_at: int
    value_bytes: int
    stream_at: int
    block_bytes: int


@dataclass
class Database(ABC):
    """One engine instance with one encryption in one workspace directory.

    Lifecycle: `create()` once (makes the empty database with its key), then any number of
    `connect()` / `Connection.close()`, `close()` when the trial's measurements are done.
    Between `close()` and the next `connect()` every file is at rest and may be scanned.
    """

    workspace: Path
    encryption: Encryption
    key: Secret | None = field(repr=False)

    @abstractmethod
    def create(self) -> None:
        """Create the empty database with this encryption and key."""

    @property
    def key_form(self) -> str:
        """How the engine takes this database's key, as the trial records it: PASSPHRASE or RAW,
        "" without a key. The engine's own way (PASSPHRASE) unless it overrides this."""
        return "" if self.key is None else PASSPHRASE

    @abstractmethod
    def connect(self) -> Connection:
        """Open a connection (key derivation, if any, happens here and is timed as `open`)."""

    @abstractmethod
    def files(self) -> list[Path]:
        """Every file this database wrote that still exists: main file, WAL/journal, temp files."""

    def size_bytes(self) -> int:
        """Bytes on disk of every file the database wrote."""
        return sum(p.stat().st_size for p in self.files() if p.is_file())

    def data_bytes(self) -> int:
        """Bytes of the files that hold tables and indexes (`file_kind` "data"): what queries read,
        so what a cache must hold for the data to fit; WAL, logs, temp files and keys left out."""
        root = self.scan_root()
        return sum(p.stat().st_size for p in self.files()
                   if p.is_file() and self.file_kind(str(p.relative_to(root)) if root and p.is_relative_to(root)
                                                     else p.name) == "data")

    @property
    def server_user(self) -> str | None:
        """The OS user the engine's server runs as (PostgreSQL: `postgres`): besides root, the
        only user a layer below the engine (gocryptfs) lets into the decrypted view. None for
        engines that run inside the tdebench process, as its user."""
        return None

    @property
    def connections_cross_fork(self) -> bool:
        """Whether a connection opened here can be handed to a forked worker process, which then
        uses it alone (oltp's virtual users as processes, oltp/driver.py): a server's, reached over
        a socket by a driver that keeps its state in the process's memory; not an engine running
        inside this process."""
        return self.server_user is not None

    def engine_processes(self) -> list[psutil.Process] | None:
        """The processes whose CPU time and I/O are the engine's: a server's process tree.
        None for embedded engines, which run inside the tdebench process."""
        return None

    def died(self, wait_s: float = 0.0) -> str:
        """Which of the database's own processes (its server, a file-system layer's daemon) ended
        by itself while it should have run, and how ("mariadbd ended by signal 9 (SIGKILL)"); ""
        when none did, or it has none (embedded engines, a server tdebench did not start). A
        failed trial leads its error with it: the cause, not the client's "lost connection".
        `wait_s`: how long a process still exiting is given to be seen ended (its sockets close
        before its exit status can be read)."""
        return ""

    def layer_processes(self) -> list[psutil.Process]:
        """Of `engine_processes`, those of a layer below the engine (gocryptfs), whose CPU time
        is recorded apart as well (`layer_cpu_s`, part of `cpu_s`); none by default."""
        return []

    def encryption_state(self) -> str:
        """What the engine itself says about its encryption, checked after the load and before
        measuring (MariaDB: every tablespace encrypted, none rotating). Raises
        EncryptionNotActive when the engine reports data that is not encrypted as it should
        be; "" when the engine has nothing to report."""
        return ""

    def seal_columns(self, conn: Connection, table: str, sensitive: Sequence[str], key: Sequence[str]) -> None:
        """Column-level encryption (layer "column"): from now on the `sensitive` columns of
        `table` reach the disk encrypted, while every statement that names `table` still reads
        and writes their plaintext. Workloads call it right after creating the table, while it
        is empty; `key` names the (never sensitive) columns that identify a row. Every other
        layer encrypts whole files or nothing, so this does nothing by default."""

    def plaintext_view(self) -> Path | None:
        """For layers that encrypt below the engine (gocryptfs): the decrypted view of the
        files, scanned while mounted as the positive control; PlaintextViewGone when it should
        be there and is not (the mount vanished, or the database is closed). None for everything
        else."""
        return None

    def scan_root(self) -> Path | None:
        """Where the at-rest scan looks: the workspace, below which every file the database wrote
        is; a remote server's `data_path`; None where there is nothing tdebench may read (a remote
        server without one: the verdict is `not verified (remote)`)."""
        return self.workspace

    def capture_dirs(self) -> tuple[Path, ...]:
        """The directories the engine writes while it runs, watched (with everything below them)
        by the transient capture (capture.py) from provisioning to close: the workspace, where
        tdebench points every engine's data, temp and backup staging directories; none where
        there is nothing tdebench may read (`scan_root` None)."""
        return (self.workspace,) if self.scan_root() is not None else ()

    def file_kind(self, path: str) -> str:
        """What a file of this database is (results.FILE_KINDS), by its path relative to the
        workspace: the verdict counts files, bytes and hits per kind. `default_file_kind` by
        default; an engine whose names it does not know overrides this."""
        return default_file_kind(path)

    def server_counters(self) -> dict[str, float] | None:
        """What the server itself counts, cumulative (statement time, pages read, …), read
        before and after each measured step and recorded as the difference (`server_<name>`):
        for servers whose processes tdebench cannot watch. None: nothing to read."""
        return None

    def drop(self) -> None:
        """Remove what the database holds outside its workspace (a remote server's database of
        the trial), after its at-rest scan; called on success, failure and Ctrl-C. Nothing by default."""

    def plaintext_signature(self) -> tuple[int, bytes] | None:
        """(offset, bytes) that only an unencrypted main file of this engine carries, if any."""
        return None

    def page_layout(self, table: str) -> PageLayout | None:
        """How the file holding `table` is cut into pages, whatever the encryption: what the
        strength workload counts repeated pages by and flips a byte of a data page in. Asked
        while the database is open (a server knows where a table's file is only while it runs);
        the path stays valid after `close()`. None where tdebench does not know it (the tamper
        test is then `unsupported`)."""
        return None

    @property
    def connect_starts_processes(self) -> bool:
        """Whether `connect()` after `close()` starts processes of its own (a server, a file-system
        mount) that `close()` stops again: work that opens and closes the database must then stay
        in the process that owns this object, which alone can stop them on an error."""
        return self.server_user is not None

    def spilling(self, conn: Connection) -> Connection:
        """A connection to this database whose sorts and temp tables go past a small cache to temp
        files in the workspace, where the at-rest check and the transient capture see them (the
        strength workload's spill test: does the encryption cover them?): `conn` itself after
        session settings, or a new connection, which the caller closes. NotSupported (the default)
        where a connection cannot make the engine spill."""
        raise NotSupported("spill", "tdebench does not know how to make this engine spill from a connection")

    def sealed_value(self, table: str, column: str, key_column: str, key: int) -> SealedValue | None:
        """The stored, sealed form of `column` in the row of `table` whose `key_column` is `key`,
        and where its plaintext lies in it (a column layer's value is a message of its own, at an
        offset no unencrypted twin tells): the strength workload's forgery of a sealed value.
        Asked while the database is open, as `page_layout`; None (the default) where the layer
        seals no values, or tdebench does not know their layout. ValueError where a stored value
        is not laid out as the layer writes it."""
        return None

    # whether keep_log can leave the write-ahead log at rest (the strength workload asks before
    # connecting to a twin only for it: a server would be started for nothing)
    keeps_log: ClassVar[bool] = False
    # why not, where it cannot: what the forgery's `wal` step records as `unsupported`
    kept_log_missing: ClassVar[str] = "tdebench cannot have this engine leave its write-ahead log at rest"
    # whether the forgery finds a value in the log at the offset an unencrypted twin's log holds it at (an
    # encryption that keeps the log's layout); False: in the trial's own log (`LogFile.changes_in`)
    log_needs_twin: ClassVar[bool] = True

    def keep_log(self, conn: Connection) -> LogFile | None:
        """Have the engine leave what `conn` commits from now on in its write-ahead log, unreplayed,
        when `conn` and the database close (no checkpoint on closing; a server stopped at once, as
        by a crash), and say which file that log is: the strength workload
        forges a committed value there, read back once the engine replays the log. None (the
        default): the engine's log cannot be left at rest this way, or tdebench does not know how."""
        return None

    def store_verbatim(self, conn: Connection) -> None:
        """Have the engine store what is loaded from now on uncompressed, so a known value sits
        verbatim in its pages (the strength workload's forgery needs its offset). Nothing by
        default: the other engines store short text as written."""

    # DuckDB type (prefix) -> type the rows are cast to before the default bulk_load binds them,
    # for drivers that cannot bind e.g. Decimal or date values.
    load_casts: ClassVar[dict[str, str]] = {}

    def bulk_load(self, conn: Connection, table: str, columns: Sequence[str], parquet: Path) -> None:
        """Insert every row of a Parquet file into `table`. Engines override this with their
        own fast path; the default streams batches read by an in-memory DuckDB."""
        import duckdb

        reader = duckdb.connect(":memory:")
        try:
            types = dict(reader.execute("SELECT column_name, column_type FROM "
                                        "(DESCRIBE SELECT * FROM read_parquet(?))", [str(parquet)]).fetchall())
            select = []
            for column in columns:
                cast = next((to for prefix, to in self.load_casts.items()
                             if types[column].startswith(prefix)), None)
                select.append(f"CAST({column} AS {cast})" if cast else column)
            cursor = reader.execute(f"SELECT {', '.join(select)} FROM read_parquet(?)", [str(parquet)])
            marks = ", ".join("?" for _ in columns)
            insert = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"
            while batch := cursor.fetchmany(50_000):
                conn.executemany(insert, batch)
        finally:
            reader.close()

    def close(self) -> None:
        """Release anything the database holds outside its connections (servers: stop)."""


_TEMP_NAMES = ("duckdb.tmp", "duckdb_temp", "pgsql_tmp", "#sql", "etilqs_", "ibtmp", ".tmp", "tmp/")
_LOG_NAMES = (".wal", "-wal", "-journal", "-shm", "pg_wal", "ib_logfile", "aria_log", "binlog", "-bin.", ".log",
              "pg_xact")
_BACKUP_NAMES = ("backup", "restore", "export")
_OTHER_NAMES = (".pass", ".pw", ".key", ".pid", ".cnf", ".conf", ".opts", "postmaster", ".lock", ".sock")


def default_file_kind(path: str) -> str:
    """The file kind of `path` (relative to the workspace) by the names the engines here give
    their files: temp/spill names first (a temp file in a backup staging area is a temp file),
    then WAL/log, backup, the small files beside a database (keys, options, pids, locks), and
    data for the rest."""
    name = path.lower()
    for kind, names in (("temp", _TEMP_NAMES), ("log", _LOG_NAMES), ("backup", _BACKUP_NAMES),
                        ("other", _OTHER_NAMES)):
        if any(part in name for part in names):
            return kind
    return "data"


class Reencrypts(ABC):
    """Capability of a Database (a mixin beside it): encrypting an existing database and
    changing its key, each engine's own way (one contiguous block per class). Each method
    returns the name of its method, or raises `NotSupported(method, reason)` where the engine
    has no way in this configuration, which workloads record as `unsupported`; errors are
    scrubbed of every key involved. A database without this capability is unsupported too
    (`reencrypts`)."""

    # the Database's own fields, which these methods work on
    workspace: Path
    encryption: Encryption
    key: Secret | None

    def encrypt_existing(self, source: Database, sensitive: Sequence[SensitiveColumns] = ()) -> str:
        """Instead of `create()`: turn `source` — a loaded database of the same engine with
        encryption `none`, provisioned in this database's workspace and closed (at rest) —
        into this database, encrypted with this database's encryption and key. Afterwards
        this database can `connect()` and `source` must not be used again. `sensitive` names
        what a column-level encryption seals (ignored by the other layers). Returns the
        method's name (the step it is recorded as); NotSupported when the engine has none.
        By default `_reencrypt` from no key to this database's."""
        self._check_source(source)
        assert self.key is not None
        return self._reencrypt(None, self.key)

    def rekey(self, new_key: Secret) -> str:
        """Change the key of this encrypted database (every connection closed) to `new_key`;
        afterwards `connect()` uses it and the old key opens nothing. Returns the method's
        name; NotSupported when the engine cannot. Errors are scrubbed of both keys.
        By default `_reencrypt` from the old key to the new."""
        if self.key is None:
            raise NotSupported("rekey", "an unencrypted database has no key to change")
        method = self._reencrypt(self.key, new_key)
        self.key = new_key
        return method

    def _reencrypt(self, old: Secret | None, new: Secret) -> str:
        """For engines that encrypt a plaintext database and change a key the same way: rewrite
        this database's files from `old` (None: plaintext) to `new`; returns the method's name."""
        raise NotSupported("encrypt-existing" if old is None else "rekey",
                           f"{type(self).__name__} cannot re-encrypt its files")

    def opens_with(self, key: Secret) -> bool:
        """Whether `key` opens this database (every connection closed; it may be left closed):
        the check after `rekey` that the old key is refused and the new one works."""
        raise NotSupported("rekey", f"{type(self).__name__} cannot be opened with another key")

    def _check_source(self, source: Database) -> None:
        """`encrypt_existing`'s precondition: an unencrypted database of the same kind in this
        workspace, and an encryption (and key) to turn it into."""
        if not source.encryption.is_baseline or not self.encryption.encrypts:
            raise ValueError(f"encrypt_existing turns an unencrypted database into an encrypted one, "
                             f"not {source.encryption.name} into {self.encryption.name}")
        if type(source) is not type(self) or source.workspace != self.workspace:
            raise ValueError(f"encrypt_existing needs a {type(self).__name__} in {self.workspace}, "
                             f"not a {type(source).__name__} in {source.workspace}")
        if self.key is None:
            raise ValueError("encrypt_existing needs the key to encrypt with")


class Backups(ABC):
    """Capability of a Database (a mixin beside it): backup and restore, each engine's own way
    (one contiguous block per class)."""

    @abstractmethod
    def backup_methods(self) -> tuple[BackupMethod, ...]:
        """The backups this database can make. What an engine cannot do is absent here, never
        a branch on the engine's name elsewhere."""

    def backup_method(self, name: str) -> BackupMethod:
        for method in self.backup_methods():
            if method.name == name:
                return method
        valid = ", ".join(m.name for m in self.backup_methods()) or "none"
        raise KeyError(f"{type(self).__name__} has no backup method {name!r}; valid: {valid}")

    @abstractmethod
    def backup(self, method: BackupMethod, target: Path) -> Backup:
        """Back up this database, created and loaded (a server running, an embedded database
        open or not), into the directory `target`, which must not exist yet. Tools get keys
        from the engine's key file or in-process, never on their command line."""

    @abstractmethod
    def restore(self, backup: Backup) -> None:
        """Instead of `create()`: make this fresh database (same engine and encryption, its
        own workspace and key) from `backup`, ready to `connect()`. The backup is left as it
        was. Raises when this database's key cannot restore it; a key that restores other
        data than was backed up must show in the data, which callers check."""

    def backup_contents(self, backup: Backup, scratch: Path) -> Path:
        """The artifact as anyone holding it can read it with standard tools and no key —
        decompressed or unpacked into the new directory `scratch` where the method packs it:
        what the at-rest scan of a backup looks at (a compressed plaintext would hide its
        canaries from a scan of the compressed bytes)."""
        return backup.path


def reencrypts(database: Database, method: str) -> Reencrypts:
    """`database` as one that can be encrypted in place and rekeyed; NotSupported(method) when
    its engine cannot, which workloads record as `unsupported`."""
    if isinstance(database, Reencrypts):
        return database
    raise NotSupported(method, f"{type(database).__name__} cannot re-encrypt an existing database")


def backups(database: Database, method: str) -> Backups:
    """`database` as one that backs up and restores; NotSupported(method) when its engine cannot."""
    if isinstance(database, Backups):
        return database
    raise NotSupported(method, f"{type(database).__name__} has no backup or restore")


class Engine(ABC):
    """A database system tdebench can provision, load, run, measure and tear down.

    `encryptions` lists native ones (layer "native"/"column") and, for engines whose data
    lives in a directory, the file-system layer's (layer "fs", see engines/fs.py), which
    `provision` handles for every engine alike.
    """

    name: ClassVar[str]
    dialect: ClassVar[str]  # sqlglot dialect name of its SQL
    capabilities: ClassVar[Capabilities]
    encryptions: ClassVar[tuple[Encryption, ...]]
    # what a plan's memory_mb sets in this engine, and what it gets without one (`tdebench engines`)
    memory_use: ClassVar[str] = "not used"
    # the smallest memory_mb the engine starts with, and why (a plan asking less is refused at its line)
    memory_min_mb: ClassVar[tuple[int, str]] = (2, "SQLite's default page cache, the smallest regime measured")
    # what the engine documents as different in an encrypted database besides the cipher (page
    # layout, what else is written), with its source, recorded with the run (`facts`): the report's
    # hint when an encryption is resolved as faster than none (report/findings.faster_sentence); ""
    # when nothing is known
    encrypted_differences: ClassVar[str] = ""
    # what the engine does with a key when a connection opens: why key_form = "raw" helps or is refused
    key_derivation: ClassVar[str] = "tdebench knows of no key derivation it runs"
    # when its native encryptions take the key (ON_OPEN or AT_START); the layers' own: `key_taken`
    native_key_taken: ClassVar[str] = ON_OPEN
    # the share of the machine's memory its cache has without memory_mb (as `default_cache_mb`); 0: none such
    default_cache_share: ClassVar[float] = 0.0
    # plan keys of this engine alone ([[engines]]): name -> its valid values, the first the default
    # (sqlite's temp_store); a plan gives them only for the engine that has them
    settings: ClassVar[dict[str, tuple[str, ...]]] = {}

    def __init__(self, memory_mb: int | None = None, key_form: str = PASSPHRASE,
                 settings: Mapping[str, str] | None = None) -> None:
        # the plan's memory_mb (memory_use says what it sets); None: the engine's tdebench default
        self.memory_mb = memory_mb
        self.key_form = key_form  # the plan's key_form (KEY_FORMS)
        given = dict(settings or {})
        unknown = sorted(set(given) - set(self.settings))
        if unknown:
            raise ValueError(f"{self.name} has no setting {unknown[0]!r}; valid: {', '.join(self.settings) or 'none'}")
        # every setting's value, the default where the plan gave none
        self.setting = {name: given.get(name, choices[0]) for name, choices in self.settings.items()}

    def raw_key_bytes(self, encryption: Encryption) -> int:
        """The length of the raw key `encryption` takes under this engine's key_form: 0 where the
        engine derives the key itself (key_form "passphrase", or no raw key for it)."""
        return encryption.raw_key_bytes if self.key_form == RAW else 0

    def cache_mb(self) -> float:
        """The memory the engine's own cache really has, in MiB, as a trial records it and the
        report reads the data against it: memory_mb, or the default the engine runs with
        (tdebench's for the servers it starts, the engine's own for an embedded one, asked of the
        engine); 0 only where it is not known (a server tdebench did not start)."""
        return self.memory_mb or 0

    @classmethod
    def default_cache_mb(cls) -> float:
        """The cache this engine has without memory_mb where it is the same on every machine (a
        compile-time default), in MiB, as a run records it (`facts`): what the report reads a
        trial's 0 as, from before trials recorded their default; 0 when it has none such
        (`default_cache_share`, or a server's)."""
        return 0.0

    @abstractmethod
    def version(self) -> str:
        """The engine's own version string (and its encryption library's, where separate)."""

    @abstractmethod
    def availability(self) -> Availability:
        """Whether it can run here; never raises."""

    def workspace_problem(self, parent: Path) -> str | None:
        """Why trial workspaces below `parent` cannot work for this engine (e.g. a server user
        that may not enter it), checked before a run starts; None when they can."""
        return None

    def target_problem(self) -> str | None:
        """A server tdebench did not start: why its target must not be used (it holds objects
        that are not tdebench's), checked before a run unless `--i-own-this-database`; None."""
        return None

    def encryption_availability(self, encryption: Encryption) -> Availability:
        """Whether one encryption can run here: the engine's availability, and the layer's."""
        available = self.availability()
        if available.usable and encryption.provider is not None:
            return encryption.provider.availability()
        return available

    def provision(self, workspace: Path, encryption: Encryption, key: Secret | None) -> Database:
        """A `Database` in `workspace` (not yet created) with this encryption and key: the
        engine's own, or one a layer below it holds (`Encryption.provider`)."""
        if encryption.provider is not None:
            return encryption.provider.provision(self, workspace, encryption, key)
        return self.provision_native(workspace, encryption, key)

    @abstractmethod
    def provision_native(self, workspace: Path, encryption: Encryption, key: Secret | None) -> Database:
        """A `Database` of the engine's own (no file-system layer) in `workspace`."""

    @classmethod
    def key_taken(cls, encryption: str) -> str:
        """When `encryption` turns the trial's key into its cipher's key: ON_OPEN, AT_START,
        AT_MOUNT (the file-system layer) or PER_VALUE (a column layer); "" for a baseline or a
        name the engine does not list. The report's "Per connection" says with it what an open
        pays: an open after the start or mount derives nothing."""
        found = next((e for e in cls.encryptions if e.name == encryption), None)
        if found is None or not found.encrypts:
            return ""
        return {"fs": AT_MOUNT, "column": PER_VALUE}.get(found.layer, cls.native_key_taken)

    @classmethod
    def facts(cls) -> EngineFacts:
        """The engine as a run records it (results.ENGINE_FACTS, beside its encryptions): what the
        report needs to know of it, so that it never asks the engine registry."""
        return EngineFacts(cls.encrypted_differences, cls.default_cache_mb(), cls.default_cache_share)

    @classmethod
    def encryption_facts(cls) -> dict[str, EncryptionFacts]:
        """Each encryption as a run records it (results.ENCRYPTIONS, beside the engine's version):
        its layer, raw cipher, what the engine adds to it, page size and when it takes the key."""
        return {e.name: EncryptionFacts(e.layer, e.cipher, e.cipher_extra, e.page_bytes, cls.key_taken(e.name))
                for e in cls.encryptions}

    def encryption(self, name: str) -> Encryption:
        if name == PLACEBO.name:  # every engine has it: a plan's `placebo = true`
            return PLACEBO
        for enc in self.encryptions:
            if enc.name == name:
                return enc
        valid = ", ".join(e.name for e in self.encryptions)
        raise KeyError(f"engine {self.name!r} has no encryption {name!r}; valid: {valid}")
