"""MariaDB with native InnoDB/Aria data-at-rest encryption (`file_key_management` plugin).

Every `MariaDBDatabase` is a server of its own: `mariadb-install-db` makes a data directory
in the trial's workspace and `mariadbd` serves it on 127.0.0.1 (a free port) and on a unix
socket in the workspace, with its option file, error log, tmpdir and key file there too, so
removing the workspace removes everything and no server already on the machine is touched.
Both read only the workspace's option file (`--defaults-file`), never /etc/mysql.

No other local user can enter it. The server and `mariadb-install-db` run as the Debian
`mysql` system user, never as root, in its own group only. The workspace, the data directory,
tmpdir, the socket's directory (`run/`, or a short one under the system temp directory when
the workspace's path is too long for a socket) and `secure_file_priv`'s directory (`files/`,
the only place `SELECT … INTO OUTFILE` and `LOAD_FILE` may touch) are owned by `mysql` and
0700; the option file, key file and logs are 0600, and so is every file the server makes
(`UMASK`) or a tool writes (umask 077: backups too). The server's one account is
`root@localhost`, reachable only over the socket, with a random password per database
(`server.new_password`) held in memory: no anonymous account, no `unix_socket` login (not
even for OS root), and over TCP no account at all. Each start sets the password with an
`--init-file`, which the server runs before it accepts a connection and which is removed once
it answers; so a data directory copied from another database (a restore, the fs layer's
encrypt-existing) opens with this database's password. tdebench connects with the password as
a PyMySQL argument; its client tools (`mariadb-backup`, `mariadb-dump`, `mariadb`) read it from
a 0600 option file of tdebench's user (`--defaults-file`, their first option) that exists only
while a tool runs. It is in no argv, environment, log or error message (`ServerError`s are
scrubbed of it).

Encryption: the trial's key is written as key id 1 (`1;<hex>`, first 16/24/32 bytes of the
Secret for 128/192/256 bits) into a 0600 file in the workspace owned by `mysql`, named only
in the option file; the mode (CBC or CTR) is `file_key_management_encryption_algorithm`. The
option file turns on every encryption the server has: InnoDB tablespaces (user tables, the system
tablespace with undo log and doublewrite buffer, system tables), the redo log, InnoDB and
Aria temporary tables, temp files (filesort, merge files), Aria tables and the binlog. One of
them does not hold: MariaDB 10.11 writes its Aria internal temporary tables (a GROUP BY's, a
DISTINCT's, a window's, once past `tmp_table_size`) unencrypted although `encrypt_tmp_disk_tables`
and `aria_encrypt_tables` are on, while a user's Aria table is encrypted
(`bench/mariadb_temp_tables.py`); the transient capture catches them and the trial is judged
plaintext, so `covers` claims temporary tables for InnoDB's only (see `_NOTES`).
The binlog is off (as a default server has it), so `covers` does not claim it. Temp files
are unlinked as soon as they are opened, so no at-rest scan can see them; their encryption
rests on `encrypt_tmp_files`, which `encryption_state()` confirms (bench/temp_coverage.py reads
them through /proc while they are open: plaintext with it off, no canary with it on). Encryption is
on from `mariadb-install-db` onwards, so every tablespace is created encrypted; one
encryption thread is needed all the same, because the system tablespace is encrypted by it
(with 0 threads `innodb_system` stays plaintext). `encryption_state()` confirms all of it
from the server before anything is measured.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from tdebench.engines import dialects, innodb_redo, timeout
from tdebench.engines.base import (NONE, Availability, Backup, BackupMethod, Backups, Capabilities, Connection,
                                   Database, Encryption, EncryptionNotActive, Engine, LogFile, NotSupported, PageLayout,
                                   QueryTimeout, Reencrypts, SensitiveColumns, Statement, raises_conflicts)
from tdebench.engines.dbapi import parquet_to_csv, qmark_to_format
from tdebench.engines.backup_tools import copy_tree, gzip_command, pipeline, run_backup_tool
from tdebench.engines.fs import FS_LAYER
from tdebench.engines.page_checksums import innodb_full_crc32
from tdebench.engines.mysql import (FILE_KEY_ALGORITHMS, MARIADB_CATALOG, MARIADB_SWITCHES, MARIADB_TIMEOUT,
                                    connect_options, load_data_statement, rotating, tablespace_encrypted)
from tdebench.engines.server import (ServerDatabase, ServerError, ServerProcess, chown_tree, free_port, new_password,
                                     private_dir, run_tool, start_on_free_port, user_ids, workspace_problem,
                                     write_private)
from tdebench.keys import Secret
from tdebench.results import AT_START, BACKUP_FULL, BACKUP_FULL_COMPRESSED, BACKUP_LOGICAL
from tdebench.runstate import new_dir

USER = "mysql"  # the Debian package's system user: every server tdebench starts runs as it
DEFAULT_MEMORY_MB = 256
SCHEMA = "tdebench"
_COVERS = ("tables", "undo log", "redo log", "InnoDB temporary tables", "temp files")
_CIPHER_FROM = 26  # FIL_PAGE_FILE_FLUSH_LSN_OR_KEY_VERSION: where an encrypted full_crc32 page's ciphertext starts
_STATS_ALL_PAGES = 2**32 - 1  # more leaf pages than any index here has: ANALYZE TABLE reads them all
_PAGE_BYTES = 16 * 1024  # innodb_page_size, left at its default: InnoDB encrypts page by page
_NOTES = ("InnoDB tablespaces incl. system tablespace (undo, doublewrite), redo log, InnoDB temporary "
          "tables, temp files; NOT the Aria internal temp tables a query spills to disk (GROUP BY, "
          "DISTINCT, window), which MariaDB 10.11 writes in plaintext although encrypt_tmp_disk_tables "
          "is on (bench/mariadb_temp_tables.py); binlog is off (encrypt_binlog=ON would cover it); the "
          "Aria log holds no user data and is not encrypted")
_TIMEOUT_ERROR = MARIADB_TIMEOUT.error
_PRIVATE = 0o077  # the umask of every tool tdebench runs for MariaDB: what it writes is 0600 / 0700
_SOCKET_MAX = 100  # sun_path holds 108 bytes; long workspace paths put the socket elsewhere
_SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/bin"])
# encrypting an existing database: the threads' page budget (pages/s) and how long to wait for them
_CONVERSION_IOPS = 100_000
_CONVERSION_WAIT_S = 24 * 3600.0
KEY_ROTATION_UNSUPPORTED = (
    "MariaDB's file_key_management plugin has one key per key id and no key versions, so InnoDB cannot "
    "re-encrypt to a new key (key rotation needs a key management plugin with key versions, e.g. "
    "hashicorp_key_management)")


def _binary(name: str) -> str | None:
    return shutil.which(name, path=_SEARCH_PATH)


def load_data_local(conn: Connection, staging: Path, table: str, columns: Sequence[str], parquet: Path) -> None:
    """Parquet -> '|'-separated text in `staging` (in-memory DuckDB) -> LOAD DATA LOCAL INFILE
    (the client sends the file, so the server may be another machine's); the staging file is
    removed afterwards and the server's row count is checked against it."""
    assert isinstance(conn, MariaDBConnection), "LOAD DATA LOCAL needs a MariaDB connection"
    try:
        written = parquet_to_csv(parquet, columns, staging, delimiter="|")
        loaded = conn.load(load_data_statement(str(staging), table, columns))
    finally:
        staging.unlink(missing_ok=True)
    if loaded != written:
        raise RuntimeError(f"loaded {loaded} of {written} rows into {table}")


def _socket_of(conn: Any) -> int | None:
    """A PyMySQL connection's socket descriptor; None once it is closed (PyMySQL has no public
    accessor: `_sock` is None then)."""
    sock = conn._sock
    return sock.fileno() if sock is not None else None


@raises_conflicts
class MariaDBConnection:
    """A PyMySQL connection in autocommit mode, as the embedded engines' connections are, that
    may send several statements in one packet (`connect_options`: CLIENT.MULTI_STATEMENTS; the
    server runs them in order and stops at the first that fails), which `execute_batch` does.
    `timeout_errors`: the server's error numbers for a statement stopped by its timeout."""

    dialect = dialects.dialect("mysql")
    timeout_errors: tuple[int, ...] = (_TIMEOUT_ERROR,)

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._seconds: float | None = None
        timeout.abandon_on_interrupt(self, functools.partial(_socket_of, conn))

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._conn.cursor() as cursor:
            self._run(cursor.execute, qmark_to_format(sql) if params else sql, tuple(params) or None)
            return list(cursor.fetchall()) if cursor.description else []

    def execute_batch(self, statements: Sequence[Statement]) -> list[list[tuple[Any, ...]]]:
        """One packet of `;`-separated statements, their values escaped into their text by
        PyMySQL as `execute` has it do (PyMySQL binds nothing on the server); each result read
        in turn, the first error raised as it arrives (the server ran none after it)."""
        with self._conn.cursor() as cursor:
            text = ";\n".join(cursor.mogrify(qmark_to_format(sql), tuple(params)) if params else sql
                              for sql, params in statements)
            self._run(cursor.execute, text, None)
            results = [list(cursor.fetchall()) if cursor.description else []]
            while self._run(cursor.nextset):
                results.append(list(cursor.fetchall()) if cursor.description else [])
        if len(results) != len(statements):
            raise RuntimeError(f"a batch of {len(statements)} statements returned {len(results)} results")
        return results

    def load(self, sql: str) -> int:
        """Run a statement that returns no rows (LOAD DATA) and return its affected-row count."""
        with self._conn.cursor() as cursor:
            return self._run(cursor.execute, sql, None)

    def set_timeout(self, seconds: float | None) -> None:
        if seconds is not None and seconds <= 0:
            raise ValueError("a timeout must be positive")
        self._seconds = seconds
        self.execute(MARIADB_TIMEOUT.statement(seconds))

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """One transaction per batch; PyMySQL sends an INSERT's rows as multi-row statements."""
        self._conn.begin()
        try:
            with self._conn.cursor() as cursor:
                self._run(cursor.executemany, qmark_to_format(sql), [tuple(r) for r in rows])
            self._conn.commit()
        except BaseException:
            self._conn.rollback()
            raise

    def close(self) -> None:
        timeout.forget(self)
        self._conn.close()

    def _run(self, method: Any, *args: Any) -> Any:
        import pymysql

        try:
            return method(*args)
        except pymysql.err.OperationalError as exc:
            if exc.args and exc.args[0] in self.timeout_errors:
                raise QueryTimeout(f"statement stopped after the {self._seconds:g} s timeout") from None
            raise


@dataclass
class MariaDBDatabase(ServerDatabase, Reencrypts, Backups):
    user: ClassVar[str] = USER
    memory_mb: int = DEFAULT_MEMORY_MB
    port: int | None = None  # None: a free one is picked at every start
    start_timeout: float = 120.0
    stop_timeout: float = 600.0  # a clean shutdown flushes the buffer pool; SIGKILL only past this
    # InnoDB's redo log (ib_logfile0) holds a commit alone only after a crash: `keep_log` has the server
    # killed; encrypted (FORMAT_ENC_11) each mini-transaction's page ids and bodies are one AES-CTR stream, its
    # records' types and lengths plain, so the value is found by the shape of the twin's mini-transaction
    # that holds it (engines/innodb_redo.py, docs/method/workloads.md)
    keeps_log: ClassVar[bool] = True
    _socket_dir: Path | None = field(default=None, init=False, repr=False)
    _password: Secret = field(default_factory=new_password, init=False, repr=False)

    @property
    def datadir(self) -> Path:
        return self.workspace / "data"

    @property
    def tmpdir(self) -> Path:
        return self.workspace / "tmp"

    @property
    def secure_dir(self) -> Path:
        """`secure_file_priv`: the one directory the server reads and writes files in for SQL."""
        return self.workspace / "files"

    @property
    def option_file(self) -> Path:
        return self.workspace / "my.cnf"

    @property
    def key_file(self) -> Path:
        return self.workspace / "keys.txt"

    @property
    def log(self) -> Path:
        """The server's error log (its stderr): what a failed start is reported with."""
        return self.workspace / "mariadb.log"

    @property
    def socket(self) -> Path:
        return (self._socket_dir or self.workspace / "run") / "mysqld.sock"

    # -- lifecycle ---------------------------------------------------------------------------

    def create(self) -> None:
        """A fresh data directory, encrypted from its first page, served and with schema `tdebench`.
        `mariadb-install-db` (which serves nothing) makes root@localhost the one account, with an
        invalid password and a `unix_socket` login for OS root; the first start replaces both
        with this database's password."""
        self._claim_workspace()
        self._write_files(self.port or free_port())
        log = write_private(self.workspace / "install.log", user=USER)
        argv = [_required("mariadb-install-db"), f"--defaults-file={self.option_file}",
                "--auth-root-authentication-method=socket", "--auth-root-socket-user=root", "--skip-test-db"]
        with self._scrubbed():
            run_tool(argv, log, run_as=USER, env=_server_env(), umask=_PRIVATE)
        self._start()
        conn = self._raw_connect(database=None)
        try:
            conn.cursor().execute(f"CREATE DATABASE {SCHEMA}")
        finally:
            conn.close()

    def spilling(self, conn: Connection) -> Connection:
        """`conn` with the session's in-memory temp tables and sort buffer at their least: a
        window's sort goes to files in tmpdir, its temp table to an on-disk (Aria) one."""
        conn.execute("SET SESSION tmp_table_size = 1024, max_heap_table_size = 16384, sort_buffer_size = 32768")
        return conn

    def connect(self) -> Connection:
        """A connection to the running server; starts it (as after `close()`) when it is not."""
        self._started()
        return MariaDBConnection(self._raw_connect(SCHEMA))

    def _after_stop(self) -> None:
        """The socket directory outside the workspace (for a workspace path too long for a socket)."""
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None

    def _claim_workspace(self) -> None:
        """The workspace and the server's directories in it, owned by `mysql` and 0700, so that
        the server can use them and no other user can enter them. Idempotent."""
        self.workspace.mkdir(mode=0o700, parents=True, exist_ok=True)
        problem = workspace_problem(self.workspace.parent, USER, "MariaDB")
        if problem is not None:
            raise ServerError(problem)
        for directory in (self.workspace, self.datadir, self.tmpdir, self.secure_dir, self.workspace / "run"):
            private_dir(directory, USER)

    def _start(self) -> None:
        self._claim_workspace()
        if len(str(self.workspace / "run" / "mysqld.sock")) > _SOCKET_MAX and self._socket_dir is None:
            self._socket_dir = private_dir(new_dir(Path(tempfile.gettempdir()), "tdebench-mariadb-"), USER)
        init_file = self.workspace / "init.sql"

        def server_on(port: int) -> ServerProcess:
            self._write_files(port)  # the key and the port may differ from the last start
            return ServerProcess(
                name="mariadbd",
                argv=[_required("mariadbd"), f"--defaults-file={self.option_file}", f"--init-file={init_file}"],
                log=write_private(self.log, user=USER), ready=self._ping, run_as=USER, env=_server_env(),
                start_timeout=self.start_timeout, stop_timeout=self.stop_timeout)

        # run before the server accepts a connection: no moment without this database's password
        write_private(init_file, "ALTER USER root@localhost IDENTIFIED VIA mysql_native_password "
                                 f"USING PASSWORD('{self._password.hex()}');\n", USER)
        try:
            with self._scrubbed():
                self._server, self.port = start_on_free_port(server_on, preferred=self.port)
        finally:
            init_file.unlink(missing_ok=True)

    def _ping(self) -> bool:
        conn = self._raw_connect(database=None, timeout=2)
        try:
            with conn.cursor() as cursor:
                cursor.execute("SELECT 1")
                return cursor.fetchall() == ((1,),)
        finally:
            conn.close()

    def _raw_connect(self, database: str | None, timeout: int = 10) -> Any:
        import pymysql

        return pymysql.connect(unix_socket=str(self.socket), user="root", password=self._password.hex(),
                               database=database, connect_timeout=timeout, **connect_options())

    @contextmanager
    def _scrubbed(self) -> Iterator[None]:
        """A ServerError (a server's or tool's log tail) without this database's password."""
        try:
            yield
        except ServerError as exc:
            raise ServerError(self._password.scrub(str(exc))) from None

    @contextmanager
    def _client_options(self) -> Iterator[Path]:
        """The option file tdebench's client tools read (`--defaults-file`, their first option):
        the server's options and root's login with this database's password, 0600 and readable
        by tdebench's user only, for as long as a tool runs. In a directory of its own outside the
        workspace (0700, tdebench's): under the gocryptfs layer the workspace is in a mount served
        as the server's user, where a file cannot be given to tdebench's user."""
        login = f"user=root\npassword={self._password.hex()}\nsocket={self.socket}\n"
        directory = new_dir(Path(tempfile.gettempdir()), "tdebench-mariadb-client-")
        try:
            yield write_private(directory / "client.cnf", f"!include {self.option_file}\n" +
                                "".join(f"[{group}]\n{login}" for group in ("client", "mariadb-backup")))
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    def _run_client(self, tool: str, args: Sequence[str], log: Path, gzipped: Path | None = None) -> None:
        """A client tool logged in through `_client_options`; with `gzipped`, its output piped
        through gzip into that file."""
        with self._client_options() as options, self._scrubbed():
            argv = [_required(tool), f"--defaults-file={options}", *args]
            if gzipped is None:
                run_backup_tool(argv, log, umask=_PRIVATE)
            else:
                pipeline([argv, gzip_command()], log, stdout=gzipped, umask=_PRIVATE)

    # -- configuration -----------------------------------------------------------------------

    def _write_files(self, port: int) -> None:
        options = self._options(port)
        if not self.encryption.is_baseline:
            self._write_key()
        text = "# written by tdebench for one trial; see tdebench/engines/mariadb.py\n[mariadbd]\n"
        text += "".join(f"{name}={value}\n" if value is not None else f"{name}\n"
                        for name, value in options.items())
        write_private(self.option_file, text, USER)

    def _options(self, port: int) -> dict[str, str | None]:
        options: dict[str, str | None] = {
            "datadir": str(self.datadir),
            "tmpdir": str(self.tmpdir),
            "socket": str(self.socket),
            "port": str(port),
            "bind-address": "127.0.0.1",
            "skip-name-resolve": None,
            "pid-file": str(self.workspace / "run" / "mysqld.pid"),
            "secure_file_priv": str(self.secure_dir),
            "innodb_buffer_pool_size": f"{self.memory_mb}M",
            # A restart must really start cold: no buffer pool dump/reload across restarts.
            "innodb_buffer_pool_dump_at_shutdown": "OFF",
            "innodb_buffer_pool_load_at_startup": "OFF",
            # InnoDB's own I/O threads, not io_uring, in every configuration alike: on a gocryptfs
            # mount an io_uring write during shutdown live-locks for about a minute (the kernel asks
            # the FUSE daemon for security.capability before each write, the pending shutdown
            # signal interrupts every ask, and the write is retried: 160,000 interrupted requests
            # in a 54 s shutdown of a TPC-H SF 0.01 database).
            "innodb_use_native_aio": "OFF",
            # Byte-wise comparison and order, as DuckDB and SQLite compare text.
            "character-set-server": "utf8mb4",
            "collation-server": "utf8mb4_bin",
            "local_infile": "ON",
            # MariaDB's default of 1000 silently cuts a recursive CTE short instead of failing.
            "max_recursive_iterations": "4294967295",
            # Planner statistics from every leaf page, not 20 sampled at random, and only from the ANALYZE
            # TABLE each workload runs after its load, never recalculated in the background: sampled, 8
            # loads of the same TPC-H SF 0.1 data gave Q18 two join orders (3 against 5); read whole,
            # every load got the same plans (docs/method/variance.md, "Plans that differ between loads").
            "innodb_stats_persistent_sample_pages": str(_STATS_ALL_PAGES),
            "innodb_stats_auto_recalc": "OFF",
        }
        if not self.encryption.is_baseline:
            options.update({
                "plugin-load-add": "file_key_management",
                "file_key_management_filename": str(self.key_file),
                "file_key_management_encryption_algorithm": FILE_KEY_ALGORITHMS[self.encryption.mode],
                "innodb_encrypt_tables": "FORCE",  # refuses ENCRYPTED=NO tables
                "innodb_encrypt_log": "ON",
                "innodb_encrypt_temporary_tables": "ON",
                "innodb_encryption_threads": "1",
                "encrypt_tmp_disk_tables": "ON",
                "encrypt_tmp_files": "ON",
                "aria_encrypt_tables": "ON",
                "encrypt_binlog": "ON",
            })
        return options

    def _write_key(self) -> None:
        assert self.key is not None, "an encrypted database needs a key"
        key = self.key.raw()[: self.encryption.key_bits // 8]
        write_private(self.key_file, f"1;{key.hex()}\n", USER)

    # -- state, files, processes ----------------------------------------------------------------

    def encryption_state(self, wait_s: float = 60.0) -> str:
        """What the server says: tablespaces encrypted / rotating, and the other encryption switches.

        Waits up to `wait_s` for the encryption thread to finish a tablespace still being
        encrypted; EncryptionNotActive if anything is still plaintext then.
        """
        self._started()
        conn = self._raw_connect(database=None)
        try:
            deadline = time.monotonic() + wait_s
            while True:
                total, encrypted, rotating, plain = self._tablespaces(conn)
                done = self.encryption.is_baseline or (encrypted == total and rotating == 0)
                if done or time.monotonic() >= deadline:
                    break
                time.sleep(0.5)
            switches = self._switches(conn)
        finally:
            conn.close()
        summary = f"{encrypted} of {total} tablespaces encrypted, {rotating} rotating"
        if self.encryption.is_baseline:
            return summary + " (baseline)"
        off = [name for name, value in switches.items() if value.upper() not in ("1", "ON", "FORCE")]
        if encrypted != total or rotating or off:
            problems = [summary]
            if plain:
                problems.append("not encrypted: " + ", ".join(plain[:5]) + (" ..." if len(plain) > 5 else ""))
            if off:
                problems.append("off: " + ", ".join(off))
            raise EncryptionNotActive("mariadb: " + "; ".join(problems))
        return f"{summary}; {', '.join(switches)} on ({FILE_KEY_ALGORITHMS[self.encryption.mode]})"

    @staticmethod
    def _tablespaces(conn: Any) -> tuple[int, int, int, list[str]]:
        """(tablespaces, encrypted, rotating, names of the plaintext ones).

        The tablespaces are those of the data dictionary (every table's, and the system
        tablespace), since INNODB_SYS_TABLESPACES lists only those opened since the start.
        One missing from INNODB_TABLESPACES_ENCRYPTION has no encryption data: not encrypted.
        The temporary tablespace is encrypted per page and is reported as a switch instead.
        """
        with conn.cursor() as cursor:
            cursor.execute("SELECT SPACE, NAME FROM information_schema.INNODB_SYS_TABLES "
                           "UNION SELECT SPACE, NAME FROM information_schema.INNODB_SYS_TABLESPACES "
                           "WHERE NAME <> 'innodb_temporary'")
            names: dict[int, str] = {}
            for space, name in cursor.fetchall():
                names[space] = "innodb_system" if space == 0 else names.get(space, name)
            cursor.execute("SELECT SPACE, ENCRYPTION_SCHEME, MIN_KEY_VERSION, ROTATING_OR_FLUSHING, "
                           f"KEY_ROTATION_PAGE_NUMBER FROM information_schema.{MARIADB_CATALOG}")
            state = {row[0]: row[1:] for row in cursor.fetchall()}
        names.setdefault(0, "innodb_system")
        plain = [name for space, name in sorted(names.items())
                 if not (space in state and tablespace_encrypted(*state[space][:2]))]
        busy = sum(1 for space in names if space in state and rotating(*state[space][2:]))
        return len(names), len(names) - len(plain), busy, plain

    @staticmethod
    def _switches(conn: Any) -> dict[str, str]:
        with conn.cursor() as cursor:
            cursor.execute("SELECT " + ", ".join(f"@@{n}" for n in MARIADB_SWITCHES))
            values = cursor.fetchone()
        return {label: str(value) for label, value in zip(MARIADB_SWITCHES.values(), values, strict=True)}

    def files(self) -> list[Path]:
        """Data directory (tablespaces, redo log, Aria files, ibtmp1) and tmpdir; not the
        option, key and log files beside them."""
        return sorted(p for d in (self.datadir, self.tmpdir) if d.exists() for p in d.rglob("*")
                      if p.is_file() and not p.is_symlink())

    def page_layout(self, table: str) -> PageLayout:
        """The table's own tablespace (innodb_file_per_table, the default): pages of
        innodb_page_size from the second on. Page 0 holds the tablespace's header and its
        encryption data, which InnoDB leaves unencrypted. Each page ends in its full_crc32
        checksum, of the page as written (its ciphertext when encrypted): anyone can recompute it.
        Encrypted, a page is ciphertext from byte 26 (FIL_PAGE_FILE_FLUSH_LSN_OR_KEY_VERSION) to its
        checksum (MariaDB's `fil_encrypt_buf_for_full_crc32`): CBC's blocks count from there, the
        IV derived from the key version, the space, the page number and the LSN."""
        return PageLayout(self.datadir / SCHEMA / f"{table}.ibd", _PAGE_BYTES, _PAGE_BYTES,
                          recompute=innodb_full_crc32, cbc_blocks_from=_CIPHER_FROM)

    def keep_log(self, conn: Connection) -> LogFile:
        """ib_logfile0, with what `conn` commits from now on left in it unreplayed: the server's next
        stop is a SIGKILL, as a crash (a clean shutdown writes every page and a checkpoint past the
        commit). A commit is durable in the log (innodb_flush_log_at_trx_commit=1, the default), its
        page not yet written when the server is killed right after; the next start's crash recovery
        replays the log from the last checkpoint, which the clean stop before this start wrote, and
        the reading server, killed too, writes no checkpoint past it: read back on the same files,
        the log put back replays as it was (the workload checks that the rows then read as written).
        InnoDB logs only the bytes a change alters (`changes_only`), and the row's old value for its
        undo log besides: the value the forgery changes is the one copy in a record that writes a
        page (`innodb_redo.value_in`), found in the trial's log by the shape of the twin's
        mini-transaction holding it (`innodb_redo.changes`: its CRC-32C with it)."""
        self._require_running("keeping its log")
        assert self._server is not None
        self._server.stop_signal = signal.SIGKILL
        return LogFile(self.datadir / "ib_logfile0", relocate=innodb_redo.changes, value_in=innodb_redo.value_in,
                       changes_only=True)

    def file_kind(self, path: str) -> str:
        """The default kinds, but tdebench's own files beside the server: the LOAD DATA staging
        files (`load-<table>.csv`, plaintext rows written by tdebench and deleted after each
        table's load, which the transient capture catches) and the init file are "other"."""
        name = Path(path).name
        if name.startswith("load-") or name == "init.sql":
            return "other"
        return super().file_kind(path)

    def bulk_load(self, conn: Connection, table: str, columns: Sequence[str], parquet: Path) -> None:
        """Parquet -> '|'-separated text (in-memory DuckDB) -> LOAD DATA LOCAL INFILE; the
        staging file is removed afterwards and the server's row count is checked against it."""
        load_data_local(conn, self.workspace / f"load-{table}.csv", table, columns, parquet)

    # -- maintenance: encrypting an existing database, changing its key ----------------------

    def encrypt_existing(self, source: Database, sensitive: Sequence[SensitiveColumns] = ()) -> str:
        """Start the plaintext data directory with this encryption's configuration (key file,
        `innodb_encrypt_tables=FORCE`, redo log encryption, which InnoDB applies by rewriting
        the redo log at start) and let InnoDB's background encryption threads encrypt every
        existing tablespace until `INNODB_TABLESPACES_ENCRYPTION` shows all done. Chosen over
        `ALTER TABLE … ENCRYPTED=YES`, which rebuilds only the user tables and leaves the system
        tablespace (undo log, doublewrite buffer) plaintext. For the conversion the threads are
        raised to one per core and their page budget (`innodb_encryption_rotation_iops`,
        default 100 pages/s) is lifted, as a team encrypting a large database would do; then
        they go back to the trial's settings. Aria system tables created before (`mysql.*`:
        accounts and privileges, no user data) stay unencrypted until rebuilt."""
        self._check_source(source)
        self._start()
        conn = self._raw_connect(database=None)
        try:
            with conn.cursor() as cursor:
                cursor.execute("SELECT @@innodb_encryption_threads, @@innodb_encryption_rotation_iops")
                threads, iops = cursor.fetchone()
                cursor.execute(f"SET GLOBAL innodb_encryption_rotation_iops = {_CONVERSION_IOPS}")
                cursor.execute(f"SET GLOBAL innodb_encryption_threads = {os.cpu_count() or 1}")
            self.encryption_state(wait_s=_CONVERSION_WAIT_S)
            with conn.cursor() as cursor:
                cursor.execute(f"SET GLOBAL innodb_encryption_threads = {int(threads)}")
                cursor.execute(f"SET GLOBAL innodb_encryption_rotation_iops = {int(iops)}")
        finally:
            conn.close()
        return "encryption-threads"

    def rekey(self, new_key: Secret) -> str:
        raise NotSupported("key-rotation", KEY_ROTATION_UNSUPPORTED)

    # -- backup and restore --------------------------------------------------------------------

    def backup_methods(self) -> tuple[BackupMethod, ...]:
        return _BACKUP_METHODS

    def backup(self, method: BackupMethod, target: Path) -> Backup:
        """Physical: `mariadb-backup --backup` copies the pages as InnoDB stores them (encrypted
        under this encryption) and the redo log written meanwhile; full-compressed streams it
        (`--stream=xbstream`) through gzip, as MariaDB's documentation recommends. It finds the
        key plugin in the running server; the key file itself is never copied. Logical:
        `mariadb-dump` of the schema through the server, so plaintext SQL. `target` is 0700."""
        self._require_running("backing it up")
        target.mkdir(parents=True, mode=0o700)
        log = write_private(self.workspace / "backup.log", user=USER)
        if method.kind == "logical":
            self._run_client("mariadb-dump", ["--single-transaction", "--databases", SCHEMA,
                                              f"--result-file={target / _DUMP_FILE}"], log)
        elif method.compressed:
            scratch = Path(tempfile.mkdtemp(prefix="stream-", dir=self.workspace))  # its temporary files
            try:
                self._run_client("mariadb-backup", ["--backup", "--stream=xbstream", f"--target-dir={scratch}"],
                                 log, gzipped=target / _STREAM_FILE)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
        else:
            self._run_client("mariadb-backup", ["--backup", f"--target-dir={target / _BACKUP_DIR}"], log)
        return Backup(method, target)

    def restore(self, backup: Backup) -> None:
        """Physical: the backup unpacked (or copied) into the workspace, `mariadb-backup --prepare`
        (applies the redo log: needs the key, which the backup's `backup-my.cnf` names by the
        path of the original key file, so it is pointed at this database's), `--move-back`
        into the new data directory, given to `mysql`, start (which sets this database's
        password). Logical: a new server with this key, the dump run into it."""
        if backup.method.kind == "logical":
            self.create()
            log = write_private(self.workspace / "restore.log", user=USER)
            self._run_client("mariadb", [SCHEMA, "-e", f"source {backup.path / _DUMP_FILE}"], log)
            return
        self._claim_workspace()
        log = write_private(self.workspace / "restore.log", user=USER)
        self._write_files(self.port or free_port())  # this database's option file and key file
        prepared = self.workspace / "restore"
        if backup.method.compressed:
            self._unstream(backup, prepared, log)
        else:
            copy_tree(backup.path / _BACKUP_DIR, prepared, log)
        options = prepared / "backup-my.cnf"
        options.write_text(re.sub(r"(?m)^file_key_management_filename=.*$",
                                  lambda _: f"file_key_management_filename={self.key_file}", options.read_text()))
        try:
            run_backup_tool([_required("mariadb-backup"), f"--defaults-file={options}", "--prepare",
                             f"--target-dir={prepared}"], log, umask=_PRIVATE)
            run_backup_tool([_required("mariadb-backup"), f"--defaults-file={self.option_file}", "--move-back",
                             f"--target-dir={prepared}"], log, umask=_PRIVATE)
        finally:
            shutil.rmtree(prepared, ignore_errors=True)
        chown_tree(self.datadir, USER)
        self._start()

    def backup_contents(self, backup: Backup, scratch: Path) -> Path:
        if not backup.method.compressed:
            return backup.path
        self._unstream(backup, scratch, write_private(self.workspace / "backup.log", user=USER))
        return scratch

    @staticmethod
    def _unstream(backup: Backup, target: Path, log: Path) -> None:
        """A compressed stream backup's files, decompressed and unpacked into the new directory (0700)."""
        target.mkdir(parents=True, mode=0o700)
        pipeline([["gzip", "-dc", str(backup.path / _STREAM_FILE)],
                  [_required("mbstream"), "-x", "-C", str(target)]], log, umask=_PRIVATE)


_BACKUP_DIR = "backup"
_STREAM_FILE = "backup.xbstream.gz"
_DUMP_FILE = "dump.sql"
_BACKUP_METHODS = (
    BackupMethod(BACKUP_FULL, "physical", False, "mariadb-backup --backup"),
    BackupMethod(BACKUP_FULL_COMPRESSED, "physical", True, "mariadb-backup --backup --stream=xbstream | gzip"),
    BackupMethod(BACKUP_LOGICAL, "logical", False, "mariadb-dump --single-transaction (SQL text)"),
)


def _server_env() -> dict[str, str]:
    """The environment of `mariadbd` and `mariadb-install-db`: ours, with the modes the server
    creates files with (it sets its umask from these, over the one it was started with) at 0600
    for files and 0700 for directories."""
    return {**os.environ, "UMASK": "0600", "UMASK_DIR": "0700"}


def _required(name: str) -> str:
    path = _binary(name)
    if path is None:
        raise ServerError(f"{name} not found; fix: apt-get install -y mariadb-server mariadb-backup")
    return path


class MariaDBEngine(Engine):
    name = "mariadb"
    dialect = "mysql"
    capabilities = Capabilities(embedded=False, concurrent_streams=True)
    memory_use = f"innodb_buffer_pool_size; without it {DEFAULT_MEMORY_MB} MB"
    # MariaDB 10.11's mariadb-install-db fails below it ("innodb_page_size=16384 requires
    # innodb_buffer_pool_size >= 6 MiB"); from 6 MiB up the pool is exactly memory_mb (measured)
    memory_min_mb = (6, "InnoDB with 16 KiB pages needs a buffer pool of at least 6 MiB")
    key_derivation = ("the server reads the raw key from file_key_management's key file once, at start; "
                      "a connection derives nothing")
    native_key_taken = AT_START
    # measured: /proc/PID/fdinfo of mariadbd shows O_DIRECT on every .ibd and ibdata1, on the mount
    # too; gocryptfs's own files are open without it
    encrypted_differences = (
        "InnoDB opens its data files with O_DIRECT (innodb_flush_method's default since MariaDB 10.6), so "
        "natively a page the buffer pool misses is read from the disk; under the file-system layer (fs-*, "
        "fs-passthrough too) that read goes through FUSE to the layer's daemon (gocryptfs; bindfs for the "
        "passthrough), which reads its own files through the OS page cache (gocryptfs's are open without "
        "O_DIRECT): with the data larger than the buffer pool and the OS cache warm, the layer can be faster "
        "than none (its part in the fs-passthrough arm).")
    encryptions = (
        NONE,
        *(Encryption(f"aes-{bits}-{mode.lower()}", "AES", bits, mode, "native", _COVERS, _NOTES, _PAGE_BYTES)
          for mode in ("CBC", "CTR") for bits in (128, 192, 256)),
        *FS_LAYER,  # the same server with its directory on gocryptfs (or its mount alone): native TDE vs fs
    )

    def version(self) -> str:
        import subprocess

        binary = _binary("mariadbd")
        if binary is None:
            return "not installed"
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout
        match = re.search(r"Ver\s+(\S+)", out)
        return f"MariaDB {match.group(1)}" if match else out.strip()

    def availability(self) -> Availability:
        missing = [name for name in ("mariadbd", "mariadb-install-db") if _binary(name) is None]
        if missing:
            return Availability(False, f"{' and '.join(missing)} not found",
                                "apt-get install -y mariadb-server mariadb-backup")
        try:
            user_ids(USER)
        except KeyError:
            return Availability(False, f"there is no {USER!r} system user to run the server as",
                                "apt-get install -y mariadb-server")
        try:
            import pymysql  # noqa: F401
        except ImportError as exc:
            return Availability(False, f"the MariaDB driver PyMySQL is not installed: {exc}",
                                "pip install -e .")
        return Availability(True)

    def workspace_problem(self, parent: Path) -> str | None:
        return workspace_problem(parent, USER, "MariaDB")

    def provision_native(self, workspace: Path, encryption: Encryption, key: Secret | None) -> Database:
        return MariaDBDatabase(workspace=workspace, encryption=encryption, key=key,
                               memory_mb=self.memory_mb or DEFAULT_MEMORY_MB)

    def cache_mb(self) -> int:
        return self.memory_mb or DEFAULT_MEMORY_MB
