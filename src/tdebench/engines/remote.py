"""Servers tdebench did not start: a plan's `[[engines]]` with a `url`.

A DBA's own MariaDB, MySQL, PostgreSQL, SQL Server or Oracle (or a staging copy) cannot be
provisioned per trial as tdebench's own servers are, so a remote engine works inside the
server it is given and leaves it as it found it:

- Per trial it creates a namespace of its own, `tdebench_<24 hex>` (a database; on Oracle a
  schema with its own tablespace), works only there and drops it when the trial ends, however
  it ends. The URL's database is the *target*: the one tdebench was given to work beside. A
  target that holds objects that are not tdebench's (tables, views, routines, …) is refused
  before anything runs (`Engine.target_problem`), unless the user says `--i-own-this-database`:
  a server whose databases are in use is no place to saturate for a benchmark, nor to have
  encryption settings changed, and an empty database made for tdebench is the user's word that
  this server is for it.
- Encryption is switched on and off with the engine's own SQL and confirmed from the engine's
  catalog before anything is measured (`Database.encryption_state`).
- Timing is client-side; what the server itself counts (statement time, pages read and
  written) is read around every measured step where the server exposes it
  (`Database.server_counters`), else the report says "client-side timing only".
- At rest, the server's files are not tdebench's to read: the verdict is `not verified
  (remote)`, unless the plan names `data_path`, where the server's data files are readable,
  which is then scanned (read only).

The password comes from an environment variable (`password_env`) or a 0600 file
(`password_file`) named in the plan, never from the plan's text; it is held as a `Password`,
which never prints, and every error a driver raises is scrubbed of it (`RemoteTarget.scrub`).
"""

from __future__ import annotations

import os
import secrets
import stat
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar
from urllib.parse import quote, unquote, urlsplit

from tdebench.engines.base import Availability, Database, Encryption, Engine
from tdebench.keys import Secret
from tdebench.results import AT_START

T = TypeVar("T")
PREFIX = "tdebench_"
"""Every namespace tdebench creates on a remote server starts so: `PREFIX` + 24 random hex digits."""


class RemoteError(RuntimeError):
    """A remote server that cannot be reached, refused a statement, or is not set up as needed;
    the message never holds the password."""


class Password:
    """A server password that refuses to be printed (like keys.Secret, which needs 16 bytes)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not value:
            raise ValueError("an empty password")
        self._value = value

    def value(self) -> str:
        return self._value

    def scrub(self, text: str) -> str:
        """`text` with the password, as written and URL-quoted, replaced by ***."""
        for spelling in {self._value, quote(self._value, safe="")}:
            text = text.replace(spelling, "***")
        return text

    def __repr__(self) -> str:
        return "Password(***)"

    __str__ = __repr__

    def __reduce__(self) -> Any:  # never pickled into a worker's or a report's data
        raise TypeError("a Password cannot be pickled")


def parse_url(engine: str, url: str) -> tuple[str, str, int, str]:
    """(user, host, port, database) of a remote engine's URL; ValueError saying what is wrong.
    A password in the URL is refused: it would be in the plan's text, stored with the results."""
    from tdebench.engines import BY_URL  # here: the package imports this module first

    parts = urlsplit(url)
    server = BY_URL[engine]
    schemes, default_port = server.schemes, server.default_port
    if parts.scheme not in schemes:
        valid = ", ".join(f"{scheme}://" for scheme in schemes)
        raise ValueError(f"engine {engine!r} takes a URL starting {valid}, not {parts.scheme or '(none)'}://")
    if parts.password is not None:
        raise ValueError("the URL holds a password, which would be stored with the results: remove it and give "
                         "password_env = \"VARIABLE\" or password_file = \"path\" (mode 0600)")
    if not parts.username:
        raise ValueError(f"the URL names no user, e.g. {schemes[0]}://user@127.0.0.1:{default_port}/bench")
    if not parts.hostname:
        raise ValueError(f"the URL names no host, e.g. {schemes[0]}://user@127.0.0.1:{default_port}/bench")
    try:
        port = parts.port or default_port
    except ValueError:
        raise ValueError(f"the URL's port is not a number from 1 to 65535: {parts.netloc!r}") from None
    database = unquote(parts.path.lstrip("/"))
    if not database or "/" in database:
        raise ValueError("the URL names no database (Oracle: service) after the host, e.g. "
                         f"{schemes[0]}://user@host:{port}/bench")
    if parts.query or parts.fragment:
        raise ValueError("the URL takes no ?options or #fragment")
    return unquote(parts.username), parts.hostname, port, database


def password_file_problem(path: Path) -> str | None:
    """Why `path` cannot hold a password: missing, not a regular file, or readable or writable
    by anyone but its owner (it must be 0600 or stricter); None when it is fine."""
    try:
        info = path.stat()
    except OSError as exc:
        return f"password_file {path} cannot be read: {exc.strerror}"
    if not stat.S_ISREG(info.st_mode):
        return f"password_file {path} is not a regular file"
    if info.st_mode & 0o077:
        return (f"password_file {path} has mode {stat.S_IMODE(info.st_mode):04o}: other users may read it; "
                f"it must be 0600 (chmod 600 {path})")
    return None


@dataclass(frozen=True)
class RemoteTarget:
    """Where a remote engine's server is, as the plan names it; the password only by where it is."""

    engine: str
    url: str  # as written in the plan (it holds no password: parse_url refuses one)
    user: str
    host: str
    port: int
    database: str  # the target: checked for other objects; tdebench's own namespace goes beside it
    password_env: str = ""
    password_file: str = ""
    data_path: str = ""  # where the server's data files are readable, for the at-rest scan; "" none
    key_id: int = 1  # MariaDB: the ENCRYPTION_KEY_ID of the encrypted tables

    def password(self) -> Password:
        """The password, read now from its variable or file; RemoteError (naming where, never the
        value) if it is not there."""
        if self.password_env:
            value = os.environ.get(self.password_env, "")
            if not value:
                raise RemoteError(f"{self.engine}: the environment variable {self.password_env} (password_env) "
                                  "is not set or empty")
            return Password(value)
        path = Path(self.password_file)
        problem = password_file_problem(path)
        if problem is not None:
            raise RemoteError(f"{self.engine}: {problem}")
        value = path.read_text().rstrip("\r\n")
        if not value:
            raise RemoteError(f"{self.engine}: password_file {path} is empty")
        return Password(value)

    @property
    def label(self) -> str:
        """The server as reports name it: scheme://user@host:port/database (no password)."""
        return f"{urlsplit(self.url).scheme}://{self.user}@{self.host}:{self.port}/{self.database}"


def new_namespace() -> str:
    """A name for one trial's database (schema) that cannot collide with another's."""
    return PREFIX + secrets.token_hex(12)


@dataclass
class RemoteDatabase(Database):
    """One trial's namespace on a remote server: created by `create()`, dropped by `drop()`.

    Subclasses say how to open a driver connection (`_open`), create and drop the namespace and
    confirm its encryption. `close()` closes what the database holds open; the namespace stays
    until `drop()`, so the at-rest scan of `data_path` (if any) sees it."""

    # the driver's connections can be handed to a forked worker process (oltp's virtual users as
    # processes) as a local server's are; not tried for FreeTDS (SQL Server) and Oracle's driver
    driver_crosses_fork: ClassVar[bool] = False
    target: RemoteTarget = field(kw_only=True)
    namespace: str = field(default_factory=new_namespace, kw_only=True)
    _created: bool = field(default=False, init=False, repr=False)
    # the database's own session for catalog and counter queries, kept open, one query at a time
    _monitor: Any = field(default=None, init=False, repr=False)
    _monitor_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def close(self) -> None:
        """Close the monitoring session; the namespace stays until `drop()`."""
        with self._monitor_lock:
            monitor, self._monitor = self._monitor, None
        if monitor is not None:
            monitor.close()

    def server_counters(self) -> dict[str, float] | None:
        """The server's counters (`_server_counters`) once the trial's namespace exists."""
        return self._server_counters() if self._created else None

    def _server_counters(self) -> dict[str, float]:
        raise NotImplementedError

    def _monitored(self, work: Callable[[Any], T]) -> T:
        """`work` on the monitoring session (opened by `_monitor_connect` when needed)."""
        with self._monitor_lock:
            if self._monitor is None:
                self._monitor = self._monitor_connect()
            return work(self._monitor)

    def _monitor_connect(self) -> Any:
        """A driver connection for the monitoring session."""
        raise NotImplementedError

    def data_bytes(self) -> int:
        """What the server's catalog counts for the trial's database (`size_bytes`): its files are
        the server's, seen in part at most."""
        return self.size_bytes()

    def files(self) -> list[Path]:
        """What tdebench can see of the server's files: those under `data_path`, or none."""
        if not self.target.data_path:
            return []
        root = Path(self.target.data_path)
        return sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())

    def scan_root(self) -> Path | None:
        return Path(self.target.data_path) if self.target.data_path else None

    def engine_processes(self) -> list[Any] | None:
        """The server's processes are on another machine, or not ours to watch: none."""
        return []

    @property
    def connections_cross_fork(self) -> bool:
        return self.driver_crosses_fork

    @contextmanager
    def _scrubbed(self) -> Iterator[None]:
        with scrubbed(self.target):
            yield

    def drop(self) -> None:
        """Drop the trial's namespace if this database created it (idempotent)."""
        if not self._created:
            return
        with self._scrubbed():
            self._drop_namespace()
        self._created = False

    def create(self) -> None:
        with self._scrubbed():
            self._create_namespace()
        self._created = True

    def _create_namespace(self) -> None:
        """Create the trial's namespace with this database's encryption."""
        raise NotImplementedError

    def _drop_namespace(self) -> None:
        """Drop the trial's namespace and everything in it."""
        raise NotImplementedError


class RemoteEngine(Engine):
    """A server tdebench did not start, reached by `target` (see the module)."""

    # the driver's module and the extra that installs it (`pip install tdebench[…]`)
    driver: str = ""
    extra: str = ""
    # the URL schemes it accepts (the engine's name decides the adapter), its default port, and
    # the database of the URL example errors show
    schemes: ClassVar[tuple[str, ...]] = ()
    default_port: ClassVar[int] = 0
    example_database: ClassVar[str] = "bench"
    # whether the plan may name the key its encrypted tables use (`RemoteTarget.key_id`)
    takes_key_id: ClassVar[bool] = False
    # one trial's namespace: a RemoteDatabase subclass that reaches the server through its `engine`
    database_class: ClassVar[type[Any]]
    key_derivation = "the server holds its keys; a connection derives none that tdebench could give it raw"
    native_key_taken = AT_START

    def __init__(self, memory_mb: int | None = None, remote: RemoteTarget | None = None) -> None:
        super().__init__(memory_mb)
        self.target = remote

    @classmethod
    def url_example(cls) -> str:
        return f"{cls.schemes[0]}://bench@127.0.0.1:{cls.default_port}/{cls.example_database}"

    @property
    def _target(self) -> RemoteTarget:
        if self.target is None:
            raise RemoteError(f"{self.name} by URL needs the plan's url")
        return self.target

    def cache_mb(self) -> int:
        return 0  # the server's own setting, which tdebench does not read: not known

    def provision_native(self, workspace: Path, encryption: Encryption, key: Secret | None) -> Database:
        """One trial's namespace on the server (created by its `create()`), of `database_class`."""
        database: Database = self.database_class(workspace=workspace, encryption=encryption, key=key,
                                                 target=self._target, engine=self)
        return database

    def availability(self) -> Availability:
        """The driver installed, the password there, and the server answering with it."""
        try:
            __import__(self.driver)
        except ImportError as exc:
            return Availability(False, f"the {self.name} driver {self.driver} is not installed: {exc}",
                                f"pip install 'tdebench[{self.extra}]'")
        if self.target is None:
            return Availability(True)
        try:
            self.target.password()
        except RemoteError as exc:
            return Availability(False, str(exc), "set the variable, or chmod 600 the file (see docs/manual.md)")
        try:
            self._probe()
        except RemoteError as exc:
            return Availability(False, str(exc), f"check the server at {self.target.label}, the account and "
                                "its privileges (docs/manual.md, remote servers)")
        return Availability(True)

    def version(self) -> str:
        if self.target is None:
            return "remote (by URL)"
        try:
            return self._version()
        except RemoteError as exc:
            return f"unknown ({exc})"

    def _once(self, connect: Callable[[], Any], work: Callable[[Any], T], secrets: tuple[Password, ...] = ()) -> T:
        """`work` on a connection of its own (`connect()`), closed afterwards; errors scrubbed (of
        `secrets` too: see `scrubbed`)."""
        with scrubbed(self._target, *secrets):
            conn = connect()
            try:
                return work(conn)
            finally:
                conn.close()

    def _probe(self) -> None:
        """Connect to the target once and close again (RemoteError, scrubbed, when it fails)."""
        self._version()

    def _version(self) -> str:
        raise NotImplementedError

    def _foreign_objects(self) -> list[str]:
        """Objects in the target that are not tdebench's, as "kind name"."""
        raise NotImplementedError

    def target_problem(self) -> str | None:
        try:
            objects = self._foreign_objects()
        except RemoteError as exc:
            return f"{self.name}: cannot list what the target database holds: {exc}"
        if not objects:
            return None
        shown = ", ".join(objects[:5]) + (f" and {len(objects) - 5} more" if len(objects) > 5 else "")
        return (f"{self.name} {self._target.label}: the target database holds {len(objects)} object(s) that are "
                f"not tdebench's ({shown}); point url at an empty database made for tdebench, or pass "
                "--i-own-this-database to tdebench run if this server is yours to benchmark")


@contextmanager
def scrubbed(target: RemoteTarget, *secrets: Password) -> Iterator[None]:
    """Any error inside as a RemoteError naming the server, without the password (a driver may
    echo its connection settings) or any of `secrets`: the trial's own passwords that tdebench
    writes into SQL text (SQL Server's master key, Oracle's trial user), which a server's error
    may quote with the statement. A RemoteError passes as it is, scrubbed of `secrets` too."""
    try:
        yield
    except RemoteError as exc:
        if not secrets:
            raise
        raise RemoteError(_scrub(str(exc), secrets)) from None
    except Exception as exc:
        text = f"{target.engine} {target.label}: {type(exc).__name__}: {exc}"
        try:
            text = target.password().scrub(text)
        except RemoteError:  # the password is gone meanwhile: nothing of it can be in the text
            pass
        raise RemoteError(_scrub(text, secrets)) from None


def _scrub(text: str, secrets: tuple[Password, ...]) -> str:
    for secret in secrets:
        text = secret.scrub(text)
    return text
