"""PostgreSQL (Debian `postgresql`): a server tdebench creates, starts and stops per trial.

Community PostgreSQL has no native encryption at rest, so it offers the two models the
seeds' literature compares with TDE: the file-system layer's (engines/fs.py: the whole data
directory on a gocryptfs mount) and cell-level encryption of the workload's sensitive columns
with pgcrypto (engines/pgcrypto.py).

Each `PostgresDatabase` is its own cluster: `initdb` into `<workspace>/pgdata`, a postmaster
on 127.0.0.1 with a free port and a private socket directory, run as the `postgres` system
user (PostgreSQL refuses to run as root). Settings are PostgreSQL's defaults (fsync,
synchronous_commit, WAL, checkpoints) except `shared_buffers` (the engine's `memory_mb`,
default 256 MB), so every encryption runs the same configuration.

`close()` stops the server with SIGINT, PostgreSQL's "fast" shutdown: open sessions are
ended and a shutdown checkpoint writes every dirty page, so afterwards every file is at rest
and complete. SIGTERM ("smart") would wait for clients to disconnect first, which a failing
trial may never do.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from tdebench.engines.base import (BACKUP_FULL, BACKUP_FULL_COMPRESSED, BACKUP_LOGICAL, NONE, Availability,
                                   Backup, BackupMethod, Capabilities, Connection, Database, Engine,
                                   Encryption, NotSupported, QueryTimeout, SensitiveColumns, parquet_to_csv,
                                   qmark_to_format)
from tdebench.engines import pgcrypto
from tdebench.engines.backup_tools import copy_tree, gunzip, run_backup_tool
from tdebench.engines.fs import FS_ENCRYPTIONS
from tdebench.engines.server import (ServerError, ServerProcess, chown_tree, run_tool, start_on_free_port,
                                     unreachable_by, user_ids, workspace_problem)
from tdebench.keys import Secret

USER = "postgres"  # the Debian package's system user, owner of every cluster tdebench makes
DEFAULT_MEMORY_MB = 256
_INSTALL = "apt-get install -y postgresql postgresql-contrib"


def bin_dir() -> Path | None:
    """The newest installed server's bin directory (/usr/lib/postgresql/<major>/bin)."""
    found = [p.parent for p in Path("/usr/lib/postgresql").glob("*/bin/initdb")]
    return max(found, key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0, default=None)


class PostgresConnection:
    """A psycopg connection in autocommit mode: every statement is its own transaction, so a
    query never holds a snapshot open; batches (executemany, COPY) run in one transaction.
    `sealed`: the database has sealed tables (column layer), so statements about a table's
    storage run with their stored tables first on the search path."""

    def __init__(self, conn: Any, sealed: bool = False) -> None:
        self._conn = conn
        self._timeout: float | None = None
        self._sealed = sealed

    @property
    def raw(self) -> Any:
        return self._conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        if self._sealed and pgcrypto.stored_table_statement(sql):
            self._conn.execute(f"SET search_path = {pgcrypto.SCHEMA}, public")
            try:
                return self._execute(sql, params)
            finally:
                self._conn.execute("RESET search_path")
        return self._execute(sql, params)

    def _execute(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        import psycopg

        try:
            cursor = (self._conn.execute(qmark_to_format(sql), list(params)) if params
                      else self._conn.execute(sql))
            return cursor.fetchall() if cursor.description else []
        except psycopg.errors.QueryCanceled:
            if self._timeout is None:
                raise
            raise QueryTimeout(f"statement stopped after the {self._timeout:g} s timeout") from None

    def set_timeout(self, seconds: float | None) -> None:
        if seconds is not None and seconds <= 0:
            raise ValueError("a timeout must be positive")
        milliseconds = 0 if seconds is None else max(1, round(seconds * 1000))
        self._conn.execute(f"SET statement_timeout = {milliseconds}")
        self._timeout = seconds

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self._conn.transaction(), self._conn.cursor() as cursor:
            cursor.executemany(qmark_to_format(sql), [list(r) for r in rows])

    def close(self) -> None:
        self._conn.close()


@dataclass
class PostgresDatabase(Database):
    memory_mb: int = DEFAULT_MEMORY_MB
    bin: Path = field(default_factory=lambda: bin_dir() or Path("/usr/lib/postgresql/bin"))
    _server: ServerProcess | None = field(default=None, init=False, repr=False)
    _socket_dir: Path | None = field(default=None, init=False, repr=False)
    _port: int = field(default=0, init=False, repr=False)

    @property
    def data_dir(self) -> Path:
        return self.workspace / "pgdata"

    @property
    def log(self) -> Path:
        return self.workspace / "postgres.log"

    def create(self) -> None:
        self._init_cluster()
        if self._column_layer:
            conn = self._open()
            try:
                conn.execute("CREATE EXTENSION pgcrypto")
                conn.execute(f"CREATE SCHEMA {pgcrypto.SCHEMA}")
            finally:
                conn.close()

    def _init_cluster(self) -> None:
        """A new, empty cluster in the workspace, started: what `create` and a logical restore
        begin with."""
        self._claim_workspace()
        run_tool([str(self.bin / "initdb"), "-D", str(self.data_dir), "-U", USER, "--auth=trust",
                  "--encoding=UTF8", "--locale=C"], self.workspace / "initdb.log", run_as=USER, env=_ENV)
        self._start()

    def _claim_workspace(self) -> None:
        """The workspace, made, checked to be reachable by the server's user, and given to it."""
        self.workspace.mkdir(parents=True, exist_ok=True)
        blocked = unreachable_by(self.workspace, USER)
        if blocked is not None:
            raise ServerError(f"the {USER} user cannot enter {blocked}, so it cannot reach the workspace "
                              f"{self.workspace}; fix with: chmod o+x {blocked} (or use a workspace "
                              f"below a directory it can enter)")
        chown_tree(self.workspace, USER)

    @property
    def _column_layer(self) -> bool:
        return self.encryption.layer == "column"

    def _start(self) -> None:
        self._socket_dir = Path(tempfile.mkdtemp(prefix="tdebench-pg-"))  # short: sockets allow 107 bytes
        try:
            self._socket_dir.chmod(0o755)
            chown_tree(self._socket_dir, USER)

            def server_on(port: int) -> ServerProcess:
                self._port = port
                return ServerProcess("postgres", self._argv(), self.log, self._answers, run_as=USER,
                                     env=_ENV, stop_signal=signal.SIGINT)

            self._server, self._port = start_on_free_port(server_on)
        except BaseException:
            self._remove_socket_dir()
            raise

    def _argv(self) -> list[str]:
        return [str(self.bin / "postgres"), "-D", str(self.data_dir), "-p", str(self._port),
                "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self._socket_dir}",
                "-c", f"shared_buffers={self.memory_mb}MB"]

    def _open(self, connect_timeout: int = 10) -> Any:
        import psycopg

        return psycopg.connect(host=str(self._socket_dir), port=self._port, user=USER, dbname="postgres",
                               autocommit=True, connect_timeout=connect_timeout)

    def _answers(self) -> bool:
        self._open(connect_timeout=2).close()
        return True

    def connect(self) -> Connection:
        """A new session (a new backend process); starts the server again after `close()`.
        Column layer: the session's key is set here, so it is timed as `open`."""
        if self._server is None or not self._server.running:
            self._stop()
            self._start()
        conn = PostgresConnection(self._open(), sealed=self._column_layer)
        if self._column_layer:
            assert self.key is not None, "the column layer needs a key"
            try:
                conn.execute(pgcrypto.set_key_statement(), [self.key.hex()])
            except BaseException:
                conn.close()
                raise
        return conn

    def seal_columns(self, conn: Connection, table: str, sensitive: Sequence[str], key: Sequence[str]) -> None:
        if self._column_layer:
            pgcrypto.seal(conn, table, sensitive, key)

    def encryption_state(self) -> str:
        if not self._column_layer:
            return ""
        conn = self.connect()
        try:
            return pgcrypto.state(conn)
        finally:
            conn.close()

    def engine_processes(self) -> list[psutil.Process] | None:
        # running, not just set: while it shuts down its pid is gone and the sampler must see none;
        # one read of the server, which another thread may clear meanwhile
        server = self._server
        return server.processes() if server is not None and server.running else []

    def files(self) -> list[Path]:
        if not self.data_dir.exists():
            return []
        return sorted(p for p in self.data_dir.rglob("*") if p.is_file())

    def bulk_load(self, conn: Connection, table: str, columns: Sequence[str], parquet: Path) -> None:
        """COPY FROM STDIN of a CSV that DuckDB writes from the Parquet file into the system's
        temp directory (the Parquet file already holds the same plaintext): PostgreSQL's
        fastest load path, with no per-row Python work."""
        assert isinstance(conn, PostgresConnection)
        names = ", ".join(columns)
        with tempfile.TemporaryDirectory(prefix="tdebench-copy-") as scratch:
            csv = Path(scratch) / f"{table}.csv"
            parquet_to_csv(parquet, columns, csv)
            raw = conn.raw
            with raw.transaction(), raw.cursor() as cursor, \
                    cursor.copy(f"COPY {table} ({names}) FROM STDIN (FORMAT csv)") as copy, csv.open("rb") as f:
                while chunk := f.read(1 << 20):
                    copy.write(chunk)

    def close(self) -> None:
        self._stop()

    def _stop(self) -> None:
        try:
            if self._server is not None:
                self._server.stop()
        finally:
            self._server = None
            self._remove_socket_dir()

    def _remove_socket_dir(self) -> None:
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None

    # -- maintenance: encrypting an existing database, changing its key ----------------------

    def encrypt_existing(self, source: Database, sensitive: Sequence[SensitiveColumns] = ()) -> str:
        """Column layer, in place: each loaded table with `sensitive` columns moves behind its
        decrypting view as `seal_columns` would have put it, its values encrypted in one
        rewrite of the table; then what still held them in plaintext is retired: the statistics
        gathered before (ANALYZE again, pg_statistic rewritten) and the WAL written before
        (`pgcrypto.retire`)."""
        self._check_source(source)
        if not self._column_layer:
            raise NotSupported("encrypt-existing", f"postgres has no native {self.encryption.name}")
        conn = self.connect()
        try:
            conn.execute("CREATE EXTENSION pgcrypto")
            conn.execute(f"CREATE SCHEMA {pgcrypto.SCHEMA}")
            for table in sensitive:
                pgcrypto.seal(conn, table.table, table.columns, table.key, existing=True)
            conn.execute("ANALYZE")
            pgcrypto.retire(conn, ["pg_catalog.pg_statistic"])
        finally:
            conn.close()
        return "seal-columns"

    def rekey(self, new_key: Secret) -> str:
        """Column layer: every sealed value re-encrypted with the new key (`pgcrypto.reseal`)."""
        if not self._column_layer or self.key is None:
            raise NotSupported("rekey", f"postgres {self.encryption.name} has no key of its own")
        old = self.key
        conn = self.connect()
        try:
            pgcrypto.reseal(conn, old.hex(), new_key.hex())
        except Exception as exc:
            raise RuntimeError(f"postgres could not reseal: {new_key.scrub(old.scrub(str(exc)))}") from None
        finally:
            conn.close()
        self.key = new_key
        return "reseal-columns"

    def opens_with(self, key: Secret) -> bool:
        """Whether a session with `key` decrypts a sealed value."""
        if not self._column_layer:
            raise NotSupported("rekey", f"postgres {self.encryption.name} has no key of its own")
        conn = self.connect()
        try:
            conn.execute(pgcrypto.set_key_statement(), [key.hex()])
            return pgcrypto.key_opens(conn)
        finally:
            conn.close()

    # -- backup and restore --------------------------------------------------------------------

    def backup_methods(self) -> tuple[BackupMethod, ...]:
        return _BACKUP_METHODS

    def backup(self, method: BackupMethod, target: Path) -> Backup:
        """Through the running server over its private socket, as the `postgres` user, with a
        fast checkpoint (the default spread one waits minutes). Physical: `pg_basebackup`, the
        data directory and the WAL written meanwhile, as a plain copy or a gzip-compressed tar.
        Logical: `pg_dump -Fc`. The column layer's sealed values stay sealed in every form; what
        it leaves plaintext in the database stays plaintext in the backup."""
        if self._server is None or not self._server.running:
            raise ServerError("postgres: start the server (connect) before backing it up")
        target.mkdir(parents=True)
        chown_tree(target, USER)
        server = ["-h", str(self._socket_dir), "-p", str(self._port), "-U", USER]
        if method.kind == "logical":
            argv = [str(self.bin / "pg_dump"), *server, "-Fc", "-f", str(target / _DUMP_FILE), "postgres"]
        else:
            layout = ["-D", str(target), "-Ft", "-z"] if method.compressed else ["-D", str(target / _DATA), "-Fp"]
            argv = [str(self.bin / "pg_basebackup"), *server, "--checkpoint=fast", "-X", "stream", *layout]
        run_backup_tool(argv, self.workspace / "backup.log", run_as=USER, env=_ENV)
        return Backup(method, target)

    def restore(self, backup: Backup) -> None:
        """Physical: the data directory copied or untarred into the workspace and started; the
        server replays the WAL the backup carries. Logical: a new, empty cluster and
        `pg_restore` into it (the column layer's extension, sealed tables, views and triggers
        included, so the dump must not meet those of `create`)."""
        log = self.workspace / "restore.log"
        if backup.method.kind == "logical":
            self._init_cluster()
            run_backup_tool([str(self.bin / "pg_restore"), "-h", str(self._socket_dir), "-p", str(self._port),
                             "-U", USER, "-d", "postgres", "--exit-on-error", str(backup.path / _DUMP_FILE)],
                            log, run_as=USER, env=_ENV)
            return
        self._claim_workspace()
        if backup.method.compressed:
            self.data_dir.mkdir(mode=0o700)
            chown_tree(self.data_dir, USER)
            self._untar(backup.path / _BASE_TAR, self.data_dir, log)
            (self.data_dir / "pg_wal").mkdir(mode=0o700, exist_ok=True)
            chown_tree(self.data_dir / "pg_wal", USER)
            self._untar(backup.path / _WAL_TAR, self.data_dir / "pg_wal", log)
        else:
            copy_tree(backup.path / _DATA, self.data_dir, log, run_as=USER)
        self._start()

    def backup_contents(self, backup: Backup, scratch: Path) -> Path:
        if not backup.method.compressed:
            return backup.path
        scratch.mkdir(parents=True)
        log = self.workspace / "backup.log"
        if backup.method.kind == "logical":  # zlib-compressed table data: pg_restore writes it out as SQL
            run_backup_tool([str(self.bin / "pg_restore"), "-f", str(scratch / "dump.sql"),
                             str(backup.path / _DUMP_FILE)], log, env=_ENV)
        else:
            for archive in (_BASE_TAR, _WAL_TAR):
                gunzip(backup.path / archive, scratch / archive.removesuffix(".gz"), log)
        return scratch

    def _untar(self, archive: Path, into: Path, log: Path) -> None:
        run_backup_tool(["tar", "-xzf", str(archive), "-C", str(into)], log, run_as=USER, env=_ENV)


_DATA = "data"
_BASE_TAR, _WAL_TAR = "base.tar.gz", "pg_wal.tar.gz"
_DUMP_FILE = "dump.pgdump"
_BACKUP_METHODS = (
    BackupMethod(BACKUP_FULL, "physical", False, "pg_basebackup -Fp -X stream (plain copy)"),
    BackupMethod(BACKUP_FULL_COMPRESSED, "physical", True, "pg_basebackup -Ft -z -X stream (gzip tar)"),
    BackupMethod(BACKUP_LOGICAL, "logical", True, "pg_dump -Fc (custom format, zlib-compressed)"),
)


_ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "LANG": "C"}


class PostgresEngine(Engine):
    name = "postgres"
    dialect = "postgres"
    capabilities = Capabilities(embedded=False, concurrent_streams=True)
    memory_use = (f"shared_buffers (reads beyond it go through the OS page cache); without it "
                  f"{DEFAULT_MEMORY_MB} MB")
    encryptions = (NONE, pgcrypto.COLUMN_AES_256, *FS_ENCRYPTIONS)

    def version(self) -> str:
        directory = bin_dir()
        if directory is None:
            return "not installed"
        done = subprocess.run([str(directory / "postgres"), "--version"], capture_output=True, text=True,
                              check=False)
        return done.stdout.strip() or done.stderr.strip()

    def availability(self) -> Availability:
        directory = bin_dir()
        if directory is None or not (directory / "postgres").exists():
            return Availability(False, "PostgreSQL server binaries (initdb, postgres) are not installed", _INSTALL)
        try:
            user_ids(USER)
        except KeyError:
            return Availability(False, f"there is no {USER!r} system user to run the server as", _INSTALL)
        try:
            import psycopg  # noqa: F401
        except ImportError as exc:
            return Availability(False, f"the psycopg driver is not installed: {exc}",
                                "pip install -e . (installs psycopg[binary])")
        return Availability(True)

    def encryption_availability(self, encryption: Encryption) -> Availability:
        available = super().encryption_availability(encryption)
        if available.usable and encryption.layer == "column":
            directory = bin_dir()
            major = directory.parent.name if directory is not None else "*"
            if not list(Path("/usr/share/postgresql").glob(f"{major}/extension/pgcrypto.control")):
                return Availability(False, "the pgcrypto extension is not installed", _INSTALL)
        return available

    def workspace_problem(self, parent: Path) -> str | None:
        return workspace_problem(parent, USER, "PostgreSQL")

    def provision_native(self, workspace: Path, encryption: Encryption, key: Secret | None) -> Database:
        return PostgresDatabase(workspace=workspace, encryption=encryption, key=key,
                                memory_mb=self.memory_mb or DEFAULT_MEMORY_MB)

    def cache_mb(self) -> int:
        return self.memory_mb or DEFAULT_MEMORY_MB
