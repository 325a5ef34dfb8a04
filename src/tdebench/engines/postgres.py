"""PostgreSQL (Debian `postgresql`): a server tdebench creates, starts and stops per trial.

Community PostgreSQL has no native encryption at rest, so it offers the two models the
literature of the source studies (docs/references.md) compares with TDE: the file-system
layer's (engines/fs.py: the whole data directory on a gocryptfs mount) and cell-level
encryption of the workload's sensitive columns with pgcrypto (engines/pgcrypto.py).

Each `PostgresDatabase` is its own cluster: `initdb` into `<workspace>/pgdata` and a postmaster,
both run as the `postgres` system user (PostgreSQL refuses to run as root). Settings are
PostgreSQL's defaults (fsync, synchronous_commit, WAL, checkpoints) except `shared_buffers` (the
engine's `memory_mb`, default 256 MB), so every encryption runs the same configuration, and
those that keep the server private.

No other local user can enter the server or read what it writes:
- It opens no TCP port (`listen_addresses` empty). Its only way in is a Unix socket in
  `<workspace>/sock`, a directory of the `postgres` user's with mode 0700. The server names it
  relative to its data directory (`../sock`) and tdebench's clients through a descriptor of the
  directory (`/proc/self/fd/<n>`, passed down to client tools), so no workspace path is too long
  for the 107 bytes a socket's path may have.
- pg_hba.conf has no `trust` line: only the `postgres` role, over that socket, with
  `scram-sha-256`. Its password is 32 random bytes (hex), new for every cluster: `initdb` reads
  it from a 0600 file of the `postgres` user in the workspace, deleted right after. tdebench
  holds it in memory only (a `Secret`), by the cluster's system identifier, so a copy of the
  cluster (a physical backup restored, the fs layer's copy into its mount) opens with it too.
  psycopg gets it as a connection argument, the client tools (pg_dump, pg_basebackup,
  pg_restore) in their own environment (PGPASSWORD); never on a command line, in a log or in
  an error message.
- The workspace (0700), the data directory (0700, initdb's) and the logs (0600) are the
  `postgres` user's and closed to everyone else.
- The column layer's key reaches the server only as a bound parameter, and the log settings
  (`_LOG_SETTINGS`) keep parameters out of the log even when statement logging is on.

`close()` stops the server with SIGINT, PostgreSQL's "fast" shutdown: open sessions are
ended and a shutdown checkpoint writes every dirty page, so afterwards every file is at rest
and complete. SIGTERM ("smart") would wait for clients to disconnect first, which a failing
trial may never do. The one exception is the stop after `keep_log` (the strength workload's
forgery of pg_wal): SIGQUIT, "immediate", which leaves the last commits in pg_wal alone, as a
crash does, for the next start to replay.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from tdebench.engines import dialects
from tdebench.engines.base import (NONE, Availability, Backup, BackupMethod, Backups, Capabilities, Connection,
                                   Database, Encryption, Engine, LogFile, NotSupported, PageLayout, QueryTimeout,
                                   Reencrypts, SealedValue, SensitiveColumns, Statement, execute_in_turn,
                                   raises_conflicts)
from tdebench.engines.dbapi import parquet_to_csv, qmark_to_format
from tdebench.engines import pg_wal, pgcrypto, timeout
from tdebench.engines.backup_tools import copy_tree, gunzip, run_backup_tool
from tdebench.engines.fs import FS_LAYER
from tdebench.engines.pg_pipeline import Pipeline
from tdebench.engines.postgresql import DEFAULT_PORT
from tdebench.engines.server import (ServerDatabase, ServerError, ServerProcess, chown_tree, run_tool, unreachable_by,
                                     user_ids, workspace_problem)
from tdebench.keys import KEY_BYTES, Secret
from tdebench.results import BACKUP_FULL, BACKUP_FULL_COMPRESSED, BACKUP_LOGICAL

USER = "postgres"  # the Debian package's system user, owner of every cluster tdebench makes
DEFAULT_MEMORY_MB = 256
_INSTALL = "apt-get install -y postgresql postgresql-contrib"
_SOCKET_DIR = "sock"  # in the workspace, beside the data directory
# The whole of pg_hba.conf: the superuser tdebench connects as, over the private socket, with
# the cluster's password; `replication` for pg_basebackup. No TCP, no other role, no `trust`.
_HBA = ("# tdebench: only its own superuser, over the private socket, with the cluster's password\n"
        f"local  all          {USER}  scram-sha-256\n"
        f"local  replication  {USER}  scram-sha-256\n")
# Set on the command line, where they take precedence over postgresql.conf and ALTER SYSTEM
# (only a session of tdebench's own superuser could still change them for itself). The column
# layer's key reaches the server only as a bound parameter (pgcrypto.set_key_statement, and
# reseal's old and new key), never in a statement's text; with these, no parameter and no
# statement text reaches the log, not even when statement logging is turned on or a statement
# that carries the key fails.
_LOG_SETTINGS = {
    "log_statement": "none",                  # statements are not logged
    "log_min_duration_statement": "-1",       # nor slow ones
    "log_min_error_statement": "panic",       # nor the text of one that fails
    "log_parameter_max_length": "0",          # statement logging (if on) shows no bound parameter
    "log_parameter_max_length_on_error": "0",  # nor does the message of a failing statement
}
# The password of every cluster this process made, by the cluster's system identifier (which
# every copy keeps): a copy's server checks the password of the cluster it was copied from.
_PASSWORDS: dict[int, Secret] = {}


def bin_dir() -> Path | None:
    """The newest installed server's bin directory (/usr/lib/postgresql/<major>/bin)."""
    found = [p.parent for p in Path("/usr/lib/postgresql").glob("*/bin/initdb")]
    return max(found, key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0, default=None)


@raises_conflicts
class PostgresConnection:
    """A psycopg connection in autocommit mode: every statement is its own transaction, so a
    query never holds a snapshot open; batches (executemany, COPY) run in one transaction.
    `sealed`: the database has sealed tables (column layer), so statements about a table's
    storage run with their stored tables first on the search path."""

    dialect = dialects.dialect("postgres")

    def __init__(self, conn: Any, sealed: bool = False) -> None:
        self._conn = conn
        self._timeout: float | None = None
        self._sealed = sealed
        self._pipeline: Pipeline | None = None  # made at the first batch
        timeout.abandon_on_interrupt(self, functools.partial(_socket_of, conn))

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
            return cursor_rows(self._send(sql, params))
        except psycopg.errors.QueryCanceled as exc:
            raise self._timed_out(exc) from None

    def execute_batch(self, statements: Sequence[Statement]) -> list[list[tuple[Any, ...]]]:
        """libpq's pipeline mode (pg_pipeline.py): the statements are sent without waiting for
        their results (prepared on the server as psycopg prepares `execute`'s), then one Sync;
        the server runs them in order and, after the first that fails, skips the rest up to the
        Sync, and the first error is raised. In turn where libpq has no pipeline mode or a
        statement needs the stored tables' search path (`execute`)."""
        import psycopg

        if not psycopg.Pipeline.is_supported() or (
                self._sealed and any(pgcrypto.stored_table_statement(sql) for sql, _ in statements)):
            return execute_in_turn(self, statements)
        if self._pipeline is None:
            self._pipeline = Pipeline(self._conn)
        try:
            return self._pipeline.run(statements)
        except psycopg.errors.QueryCanceled as exc:
            raise self._timed_out(exc) from None

    def _send(self, sql: str, params: Sequence[Any]) -> Any:
        """A cursor that ran `sql` (its rows read later in a pipeline)."""
        return self._conn.execute(qmark_to_format(sql), list(params)) if params else self._conn.execute(sql)

    def _timed_out(self, cancelled: Exception) -> Exception:
        """What a statement the server cancelled raises: QueryTimeout if tdebench's timeout did it."""
        if self._timeout is None:
            return cancelled
        return QueryTimeout(f"statement stopped after the {self._timeout:g} s timeout")

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
        timeout.forget(self)
        self._conn.close()


def _socket_of(conn: Any) -> int | None:
    """A psycopg connection's socket descriptor; None once it is closed."""
    return None if conn.closed else conn.pgconn.socket


def cursor_rows(cursor: Any) -> list[tuple[Any, ...]]:
    """The rows a statement returned; none for one that returns none (its result's status, not
    `description`, whose column objects cost a client-side transaction 8% of its CPU)."""
    from psycopg.pq import ExecStatus

    result = cursor.pgresult
    return cursor.fetchall() if result is not None and result.status == ExecStatus.TUPLES_OK else []


def copy_from_parquet(conn: Connection, table: str, columns: Sequence[str], parquet: Path) -> None:
    """COPY FROM STDIN of a CSV that DuckDB writes from the Parquet file into the system's temp
    directory (the Parquet file already holds the same plaintext): PostgreSQL's fastest load
    path, with no per-row Python work; the client sends the rows, so the server may be remote."""
    assert isinstance(conn, PostgresConnection), "COPY needs a PostgreSQL connection"
    names = ", ".join(columns)
    with tempfile.TemporaryDirectory(prefix="tdebench-copy-") as scratch:
        csv = Path(scratch) / f"{table}.csv"
        parquet_to_csv(parquet, columns, csv)
        raw = conn.raw
        with raw.transaction(), raw.cursor() as cursor, \
                cursor.copy(f"COPY {table} ({names}) FROM STDIN (FORMAT csv)") as copy, csv.open("rb") as f:
            while chunk := f.read(1 << 20):
                copy.write(chunk)


class ColumnLayer(Database):
    """What a PostgreSQL database of tdebench's own and one on a server reached by url share: the
    column layer (engines/pgcrypto.py) on their sessions."""

    @property
    def _column_layer(self) -> bool:
        return self.encryption.layer == "column"

    @property
    def _cipher(self) -> pgcrypto.ColumnCipher:
        return pgcrypto.column_cipher(self.encryption)

    def _install_layer(self, connect: Callable[[], Any]) -> None:
        """With the column layer, what it needs in the new database (`pgcrypto.INSTALL`), on a
        driver connection of its own (`connect()`), closed afterwards."""
        if not self._column_layer:
            return
        conn = connect()
        try:
            for statement in pgcrypto.INSTALL:
                conn.execute(statement)
        finally:
            conn.close()

    def _session(self, raw: Any) -> PostgresConnection:
        """A psycopg connection as tdebench's session; the column layer's key set in it."""
        conn = PostgresConnection(raw, sealed=self._column_layer)
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
            pgcrypto.seal(conn, self._cipher, table, sensitive, key)

    def encryption_state(self) -> str:
        if not self._column_layer:
            return ""
        conn = self.connect()
        try:
            return pgcrypto.state(conn, self._cipher)
        finally:
            conn.close()


@dataclass
class PostgresDatabase(ColumnLayer, ServerDatabase, Reencrypts, Backups):
    user: ClassVar[str] = USER
    keeps_log: ClassVar[bool] = True
    log_needs_twin: ClassVar[bool] = False  # pg_wal holds plaintext, or what the column layer sealed
    memory_mb: int = DEFAULT_MEMORY_MB
    bin: Path = field(default_factory=lambda: bin_dir() or Path("/usr/lib/postgresql/bin"))
    # while the server runs: its socket directory, open (O_PATH), and its cluster's password
    _socket_fd: int | None = field(default=None, init=False, repr=False)
    _password: Secret | None = field(default=None, init=False, repr=False)

    @property
    def data_dir(self) -> Path:
        return self.workspace / "pgdata"

    @property
    def socket_dir(self) -> Path:
        return self.workspace / _SOCKET_DIR

    @property
    def log(self) -> Path:
        return self.workspace / "postgres.log"

    def create(self) -> None:
        self._init_cluster()
        self._install_layer(self._open)

    def _init_cluster(self) -> None:
        """A new, empty cluster in the workspace, with a password of its own, started: what
        `create` and a logical restore begin with."""
        self._claim_workspace()
        password = Secret(os.urandom(KEY_BYTES))
        pwfile = _private_file(self.workspace / "initdb.pw", password.hex() + "\n")
        try:
            run_tool([str(self.bin / "initdb"), "-D", str(self.data_dir), "-U", USER, "--auth=scram-sha-256",
                      f"--pwfile={pwfile}", "--encoding=UTF8", "--locale=C"],
                     _private_file(self.workspace / "initdb.log"), run_as=USER, env=_ENV)
        finally:
            pwfile.unlink(missing_ok=True)
        _private_file(self.data_dir / "pg_hba.conf", _HBA)
        _PASSWORDS[_system_identifier(self.data_dir)] = password
        self._start()

    def _claim_workspace(self) -> None:
        """The workspace, made, checked to be reachable by the server's user, given to it and
        closed to everyone else."""
        self.workspace.mkdir(mode=0o700, parents=True, exist_ok=True)
        # the way to it: the workspace itself is made 0700 (never wider) and given to the user below
        blocked = unreachable_by(self.workspace.parent, USER)
        if blocked is not None:
            raise ServerError(f"the {USER} user cannot enter {blocked}, so it cannot reach the workspace "
                              f"{self.workspace}; fix with: chmod o+x {blocked} (or use a workspace "
                              f"below a directory it can enter)")
        chown_tree(self.workspace, USER)
        self.workspace.chmod(0o700)

    def _start(self) -> None:
        self._password = _cluster_password(self.data_dir)
        self.socket_dir.mkdir(mode=0o700, exist_ok=True)
        os.chown(self.socket_dir, *user_ids(USER))
        self.socket_dir.chmod(0o700)
        self._socket_fd = os.open(self.socket_dir, os.O_PATH | os.O_DIRECTORY)
        try:
            self._server = ServerProcess("postgres", self._argv(), _private_file(self.log), self._answers,
                                         run_as=USER, env=_ENV, stop_signal=signal.SIGINT)
            self._server.start()  # stops the server again if it does not answer
        except BaseException:
            self._server = None
            self._after_stop()
            raise

    def _argv(self) -> list[str]:
        settings = {"listen_addresses": "",  # no TCP
                    # relative to the data directory, the server's working directory: always short
                    "unix_socket_directories": os.path.relpath(self.socket_dir, self.data_dir),
                    "unix_socket_permissions": "0700",
                    "shared_buffers": f"{self.memory_mb}MB", **_LOG_SETTINGS}
        return [str(self.bin / "postgres"), "-D", str(self.data_dir), "-p", str(DEFAULT_PORT),
                *(arg for name, value in settings.items() for arg in ("-c", f"{name}={value}"))]

    @property
    def _host(self) -> str:
        """The socket directory as clients name it: through its descriptor, a path short enough
        for a socket however long the workspace's path is."""
        if self._socket_fd is None:
            raise ServerError("postgres: the server is not started")
        return f"/proc/self/fd/{self._socket_fd}"

    def _open(self, connect_timeout: int = 10) -> Any:
        import psycopg

        assert self._password is not None
        try:
            return psycopg.connect(host=self._host, port=DEFAULT_PORT, user=USER, password=self._password.hex(),
                                   dbname="postgres", autocommit=True, connect_timeout=connect_timeout)
        except psycopg.Error as exc:
            raise ServerError(f"postgres: could not connect through {self.socket_dir}: "
                              f"{self._password.scrub(str(exc))}") from None

    def _answers(self) -> bool:
        self._open(connect_timeout=2).close()
        return True

    def _run_client(self, tool: str, args: Sequence[str], log: Path) -> None:
        """A client tool (pg_dump, pg_basebackup, pg_restore) against the running server, to
        completion, as the server's user: through the private socket, whose directory's
        descriptor it inherits, with the password in its own environment only."""
        assert self._password is not None and self._socket_fd is not None
        run_backup_tool([str(self.bin / tool), "-h", self._host, "-p", str(DEFAULT_PORT), "-U", USER, *args], log,
                        run_as=USER, env={**_ENV, "PGPASSWORD": self._password.hex()}, pass_fds=[self._socket_fd])

    def spilling(self, conn: Connection) -> Connection:
        """`conn` with work_mem at its least (64 kB): a sort past it spills to the data
        directory's pgsql_tmp."""
        conn.execute("SET work_mem = '64kB'")
        return conn

    def connect(self) -> Connection:
        """A new session (a new backend process); starts the server again after `close()`.
        Column layer: the session's key is set here, so it is timed as `open`."""
        self._started()
        return self._session(self._open())

    def files(self) -> list[Path]:
        if not self.data_dir.exists():
            return []
        return sorted(p for p in self.data_dir.rglob("*") if p.is_file())

    def page_layout(self, table: str) -> PageLayout:
        """The table's heap file (its first segment, 1 GiB), as the running server names it:
        pages of 8 KiB from the first on. The column layer's table holding the sealed values
        is the one of that name (relkind `r`), not the view in front of it."""
        conn = self.connect()
        try:
            found = conn.execute("SELECT pg_relation_filepath(oid), current_setting('block_size')::int "
                                 "FROM pg_class WHERE relname = ? AND relkind = 'r'", [table])
        finally:
            conn.close()
        if len(found) != 1:
            raise ValueError(f"postgres: {len(found)} tables named {table}, not one")
        path, page_bytes = found[0]
        return PageLayout(self.data_dir / path, 0, int(page_bytes))

    def sealed_value(self, table: str, column: str, key_column: str, key: int) -> SealedValue | None:
        """Column layer: the row's OpenPGP message as the stored table holds it (no key needed to
        read it), and where pgcrypto put the value in it (`pgcrypto.sealed_layout`)."""
        if not self._column_layer:
            return None
        conn = self.connect()
        try:
            found = conn.execute(f"SELECT {column} FROM {pgcrypto.SCHEMA}.{table} WHERE {key_column} = ?", [key])
        finally:
            conn.close()
        if len(found) != 1:
            raise ValueError(f"postgres: {len(found)} rows of {table} with {key_column} {key}, not one")
        return pgcrypto.sealed_layout(bytes(found[0][0]), self._cipher)

    def bulk_load(self, conn: Connection, table: str, columns: Sequence[str], parquet: Path) -> None:
        """COPY FROM STDIN of a CSV that DuckDB writes from the Parquet file into the system's
        temp directory (the Parquet file already holds the same plaintext): PostgreSQL's
        fastest load path, with no per-row Python work."""
        copy_from_parquet(conn, table, columns, parquet)

    def keep_log(self, conn: Connection) -> LogFile:
        """The pg_wal segment that what `conn` commits from now on goes to, left unreplayed: a
        checkpoint first (recovery's redo point, before the commit), a switch to a new segment
        (which then holds only what follows: no older copy of a value, no record begun before it),
        and the server's next stop immediate (SIGQUIT: no shutdown checkpoint, as after a crash;
        its next start replays the segment). After a checkpoint the first change of a page logs
        the whole page (full_page_writes), so a value committed now is in that image or in its
        record, as stored (`pg_wal.changes`: every copy). Replaying ends with a checkpoint that
        writes the replayed pages into the heap files, so the log is read back in a copy of the
        stopped cluster (`_copied`)."""
        self._require_running("keeping its log")
        assert self._server is not None
        conn.execute("CHECKPOINT")
        conn.execute("SELECT pg_switch_wal()")
        name = conn.execute("SELECT pg_walfile_name(pg_current_wal_insert_lsn())")[0][0]
        self._server.stop_signal = signal.SIGQUIT
        segment = self.data_dir / "pg_wal" / str(name)
        return LogFile(segment, recompute=pg_wal.recompute, changes_in=pg_wal.changes,
                       copied=functools.partial(self._copied, segment))

    def _copied(self, log: Path, target: Path) -> tuple[Backup, Path]:
        """The stopped cluster's data directory copied into the new directory `target` as a plain
        physical backup (`restore`'s layout, whose start recovers it as after a crash), and `log`
        in the copy."""
        if self.running:
            raise ServerError("postgres: stop the server before copying its files")
        target.mkdir(mode=0o700, parents=True)
        chown_tree(target, USER)
        copy_tree(self.data_dir, target / _DATA, _private_file(self.workspace / "backup.log"), run_as=USER)
        return Backup(self.backup_method(BACKUP_FULL), target), target / _DATA / log.relative_to(self.data_dir)

    def _after_stop(self) -> None:
        """The socket directory this database opened, closed and removed (with what a killed
        server left in it); another database's in the same workspace is left alone."""
        if self._socket_fd is not None:
            os.close(self._socket_fd)
            self._socket_fd = None
            shutil.rmtree(self.socket_dir, ignore_errors=True)

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
            for statement in pgcrypto.INSTALL:
                conn.execute(statement)
            for table in sensitive:
                pgcrypto.seal(conn, self._cipher, table.table, table.columns, table.key, existing=True)
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
            pgcrypto.reseal(conn, self._cipher, old.hex(), new_key.hex())
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
        self._require_running("backing it up")
        target.mkdir(mode=0o700, parents=True)
        chown_tree(target, USER)
        log = _private_file(self.workspace / "backup.log")
        if method.kind == "logical":
            self._run_client("pg_dump", ["-Fc", "-f", str(target / _DUMP_FILE), "postgres"], log)
        else:
            layout = ["-D", str(target), "-Ft", "-z"] if method.compressed else ["-D", str(target / _DATA), "-Fp"]
            self._run_client("pg_basebackup", ["--checkpoint=fast", "-X", "stream", *layout], log)
        return Backup(method, target)

    def restore(self, backup: Backup) -> None:
        """Physical: the data directory copied or untarred into the workspace and started; the
        server replays the WAL the backup carries. Logical: a new, empty cluster and
        `pg_restore` into it (the column layer's extension, sealed tables, views and triggers
        included, so the dump must not meet those of `create`). A physical copy keeps the
        original cluster's password (in its catalog), which its server then asks for."""
        self._claim_workspace()
        log = _private_file(self.workspace / "restore.log")
        if backup.method.kind == "logical":
            self._init_cluster()
            self._run_client("pg_restore", ["-d", "postgres", "--exit-on-error", str(backup.path / _DUMP_FILE)],
                             log)
            return
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
        log = _private_file(self.workspace / "backup.log")
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


def _private_file(path: Path, text: str | None = None) -> Path:
    """`path`, created if missing, the server user's and closed to everyone else (0600), with
    `text` as its contents if given (else appended to as a log): before anything is written."""
    uid, gid = user_ids(USER)
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_TRUNC if text is not None else os.O_APPEND)
    fd = os.open(path, flags, 0o600)
    try:
        os.fchown(fd, uid, gid)
        os.fchmod(fd, 0o600)
        if text is not None:
            os.write(fd, text.encode())
    finally:
        os.close(fd)
    return path


def _system_identifier(data_dir: Path) -> int:
    """The cluster's identity: the first field of its pg_control (in the machine's byte order),
    chosen by initdb and kept by every copy of the cluster."""
    with (data_dir / "global" / "pg_control").open("rb") as control:
        return int.from_bytes(control.read(8), sys.byteorder)


def _cluster_password(data_dir: Path) -> Secret:
    """The password of the cluster in `data_dir`, which this process made (or made the original of)."""
    try:
        identity = _system_identifier(data_dir)
    except OSError as exc:
        raise ServerError(f"postgres: no cluster in {data_dir}: {exc.strerror}") from None
    password = _PASSWORDS.get(identity)
    if password is None:
        raise ServerError(f"postgres: the cluster in {data_dir} was not made by this tdebench process, "
                          f"so its password is unknown")
    return password


class PostgresEngine(Engine):
    name = "postgres"
    dialect = "postgres"
    capabilities = Capabilities(embedded=False, concurrent_streams=True)
    memory_use = (f"shared_buffers (reads beyond it go through the OS page cache); without it "
                  f"{DEFAULT_MEMORY_MB} MB")
    key_derivation = ("pgcrypto's pgp_sym_encrypt derives a key from the session's key per value (OpenPGP "
                      "S2K), gocryptfs with scrypt once per mount; neither takes a raw key through tdebench")
    encryptions = (NONE, *pgcrypto.COLUMN_ENCRYPTIONS, *FS_LAYER)

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
            cipher = pgcrypto.column_cipher(encryption)
            if pgcrypto.system_openssl_lacks(cipher):
                return Availability(
                    False, f"this system's OpenSSL cannot encrypt with {cipher.label} (OpenSSL 3 keeps it in its "
                           "legacy provider, not loaded here), so pgcrypto would store the values in plaintext",
                    "activate OpenSSL's legacy provider in /etc/ssl/openssl.cnf (legacy = legacy_sect, "
                    "[legacy_sect] activate = 1), or leave this cipher out")
        return available

    def workspace_problem(self, parent: Path) -> str | None:
        return workspace_problem(parent, USER, "PostgreSQL")

    def provision_native(self, workspace: Path, encryption: Encryption, key: Secret | None) -> Database:
        return PostgresDatabase(workspace=workspace, encryption=encryption, key=key,
                                memory_mb=self.memory_mb or DEFAULT_MEMORY_MB)

    def cache_mb(self) -> int:
        return self.memory_mb or DEFAULT_MEMORY_MB
