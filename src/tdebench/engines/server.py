"""Managed server processes: tdebench starts its own database servers and always stops them.

A `ServerProcess` runs one server binary in its own process group, with its output in a log
file inside the trial's workspace, listening on 127.0.0.1 or a socket only. `start` waits
until the server answers (`ready`), and reports a server that dies or never answers with the
tail of its own log. `stop` sends SIGTERM to the group and SIGKILL after a grace period, so
nothing is left behind on success, failure or Ctrl-C; once the run is interrupted (`hurry`),
the grace is `HURRY_S`: a trial's server holds disposable data, and a clean shutdown that
flushes a buffer pool through gocryptfs took 30 s. Servers run as their Debian system
user (`run_as`: PostgreSQL as `postgres`, MariaDB as `mysql`), never as root, with that user's
group only. For keeping other local users out there are files and directories private to one
user (`write_private`, `private_dir`) and a random password per database (`new_password`).
Every server and setup tool is written into the run's state file as it starts and gets SIGTERM
if tdebench itself is killed (runstate.py), so not even a killed run leaves one behind.
`ServerDatabase` is what the MariaDB and PostgreSQL databases share on top: the server's
user, its processes, its start on demand and its clean stop.
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import secrets
import signal
import socket
import stat
import subprocess
import threading
import time
from abc import abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import psutil

from tdebench.engines.base import Database
from tdebench.keys import Secret
from tdebench.runstate import PARENT_DEATH, no_space_left, register


class ServerError(RuntimeError):
    """A server that could not be set up, started or stopped; the message has its log's tail."""


_ERROR_LINE = re.compile(r"\[ERROR\]|\bERROR\b|FATAL|PANIC|Errcode|errno|No space left", re.IGNORECASE)
_NO_SPACE = re.compile(r"No space left|Errcode: 28|errno: 28|error 28\b", re.IGNORECASE)


HURRY_S = 1.0
"""A server's grace to shut down once the run is interrupted or terminated; SIGKILL follows."""
_hurry = threading.Event()


def hurry() -> None:
    """The run is interrupted: from now on every stop (one under way too) gives its server
    `HURRY_S`, not the time of a clean shutdown. Safe in a signal handler."""
    _hurry.set()


def hurried() -> bool:
    return _hurry.is_set()


def calm() -> None:
    """A new run begins: its stops take the time of a clean shutdown again (an earlier run in this
    process, a test's, may have been interrupted)."""
    _hurry.clear()


def log_tail(path: Path, lines: int = 20, since: int = 0) -> str:
    """What a failed server or tool said since byte `since` of its log (where this start or run
    began: a server's log is appended to across its starts, and an earlier start's errors are
    not this one's): its error lines when it logged any (a tool's closing boilerplate, such as
    mariadb-install-db's advice, would hide them), else the last `lines`; led by "no space left
    on …" when the log or the file system says so, since the log itself is removed with the
    workspace."""
    logged = log_since(path, since)
    if logged is None:
        return "(no log)"
    text = logged.splitlines()
    errors = error_lines(text)
    shown = "\n".join((errors or text)[-lines:]) or "(empty log)"
    full = no_space_left(path.parent) if any(_NO_SPACE.search(line) for line in text) else ""
    return f"{full}\n{shown}" if full else shown


def error_lines(lines: Iterable[str]) -> list[str]:
    """The lines of a server's or tool's log that report an error ([ERROR], FATAL, errno…)."""
    return [line for line in lines if _ERROR_LINE.search(line)]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def user_ids(name: str) -> tuple[int, int]:
    entry = pwd.getpwnam(name)
    return entry.pw_uid, entry.pw_gid


def chown_tree(path: Path, user: str) -> None:
    """Give `path` and everything below it to `user` (a server running as that user writes there)."""
    uid, gid = user_ids(user)
    os.chown(path, uid, gid)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chown(os.path.join(root, name), uid, gid, follow_symlinks=False)


def new_password() -> Secret:
    """A random password for one database's accounts, held in memory like a key: a client sends
    its `.hex()`; its repr never shows it and `scrub` removes it from error text."""
    return Secret(secrets.token_bytes(24))


def write_private(path: Path, text: str | None = None, user: str | None = None) -> Path:
    """`path` as a 0600 file owned by `user` (a server's, which reads or writes it) or else by
    tdebench's user: `text` replaces its content; None makes it if missing and keeps what it
    holds (a log). A symlink at `path` is refused, not followed."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_APPEND if text is None else os.O_TRUNC)
    fd = os.open(path, flags, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.fchown(fd, *(user_ids(user) if user is not None else (os.geteuid(), os.getegid())))
        if text is not None:
            os.write(fd, text.encode())
    finally:
        os.close(fd)
    return path


def private_dir(path: Path, user: str) -> Path:
    """`path` (made if missing, 0700 from the start) owned by `user` and 0700; what is inside
    stays as it is."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chown(path, *user_ids(user), follow_symlinks=False)
    path.chmod(0o700)
    return path


def unreachable_by(path: Path, user: str) -> Path | None:
    """The first directory on the way to `path` that `user` may not enter (no search
    permission), or None. A server running as `user` needs every one of them."""
    entry = pwd.getpwnam(user)
    groups = {entry.pw_gid} | {g.gr_gid for g in grp.getgrall() if user in g.gr_mem}
    for directory in [*reversed(path.absolute().parents), path.absolute()]:
        try:
            info = directory.stat()
        except FileNotFoundError:
            return None  # what does not exist yet is created below reachable parents
        if info.st_uid == entry.pw_uid:
            allowed = info.st_mode & stat.S_IXUSR
        elif info.st_gid in groups:
            allowed = info.st_mode & stat.S_IXGRP
        else:
            allowed = info.st_mode & stat.S_IXOTH
        if not allowed:
            return directory
    return None


def workspace_problem(parent: Path, user: str, server: str) -> str | None:
    """Why a `server` running as `user` cannot reach workspaces below `parent`, with the fix; None
    when it can (`Engine.workspace_problem`)."""
    blocked = unreachable_by(parent, user)
    if blocked is None:
        return None
    return (f"the {user} user cannot enter {blocked}, so a {server} server cannot reach workspaces "
            f"below {parent}; fix with: chmod o+x {blocked}, or choose --work-dir below a directory "
            f"it can enter")


_PORT_TAKEN = re.compile(r"Address already in use|Bind on TCP/IP port")


def start_on_free_port(make: Callable[[int], ServerProcess], preferred: int | None = None,
                       attempts: int = 3) -> tuple[ServerProcess, int]:
    """Start the server `make(port)` builds, on `preferred` or a free loopback port. A port found
    free can be taken by another process before the server binds it; when the server's log
    says so, try again on another free port. Returns the running server and its port."""
    for attempt in range(1, attempts + 1):
        port = preferred if attempt == 1 and preferred else free_port()
        server = make(port)
        try:
            server.start()
        except ServerError as exc:
            if attempt < attempts and _PORT_TAKEN.search(server.logged()):
                continue
            raise ServerError(f"{server.name} could not start on port {port}: {exc}") from None
        return server, port
    raise AssertionError("unreachable: the last attempt returns or raises")


def log_size(log: Path) -> int:
    """Where the next write to `log` lands: what a failed start's `log_tail` reads from."""
    try:
        return log.stat().st_size
    except FileNotFoundError:
        return 0


def log_since(log: Path, offset: int) -> str | None:
    """What `log` holds from byte `offset` on; None when it cannot be read."""
    try:
        with log.open("rb") as fh:
            fh.seek(offset)
            return fh.read().decode(errors="replace")
    except OSError:
        return None


def run_tool(argv: Sequence[str], log: Path, run_as: str | None = None, timeout: float = 300,
             env: dict[str, str] | None = None, pass_fds: Sequence[int] = (), umask: int = -1) -> None:
    """Run a setup tool (initdb, mariadb-install-db) to completion; ServerError with its output if it fails.
    `pass_fds`: descriptors the tool inherits under the same numbers (e.g. a directory it reaches
    through /proc/self/fd).

    The tool runs in a process group of its own, and the whole group is killed if it times out or
    tdebench is interrupted: these tools start servers of their own (mariadb-install-db runs
    `mariadbd --bootstrap`), which must not outlive them and keep writing into a workspace that
    is being removed. `umask`: the tool's (e.g. 0o077: what it creates is private); -1 keeps ours."""
    since = log_size(log)
    with log.open("ab") as out:
        try:
            tool = subprocess.Popen([*PARENT_DEATH, *argv], stdout=out, stderr=subprocess.STDOUT, env=env,
                                    user=run_as, group=_group(run_as), extra_groups=_extra_groups(run_as),
                                    umask=umask, stdin=subprocess.DEVNULL, start_new_session=True,
                                    pass_fds=tuple(pass_fds))
        except OSError as exc:
            raise ServerError(f"{argv[0]} failed: {exc}\n{log_tail(log, since=since)}") from None
        register(tool.pid, Path(argv[0]).name)
        try:
            code = tool.wait(timeout=timeout)
        except BaseException as exc:
            ServerProcess._signal(tool.pid, signal.SIGKILL)
            tool.wait()
            if isinstance(exc, subprocess.TimeoutExpired):
                raise ServerError(f"{argv[0]} did not finish within {timeout:.0f} s\n"
                                  f"{log_tail(log, since=since)}") from None
            raise
    if code != 0:
        raise ServerError(f"{Path(argv[0]).name} exited with {code}:\n{log_tail(log, since=since)}")


def _group(user: str | None) -> int | None:
    return user_ids(user)[1] if user else None


def _extra_groups(user: str | None) -> list[int] | None:
    """None (keep ours) without `user`; else none: a child run as `user` drops root's
    supplementary groups, so it is in its own group only."""
    return [] if user else None


@dataclass
class ServerProcess:
    """One running server. Create it, `start()` it, and `stop()` it in a finally block."""

    name: str
    argv: list[str]
    log: Path
    ready: Callable[[], bool]
    run_as: str | None = None
    env: dict[str, str] | None = None
    start_timeout: float = 60.0
    stop_timeout: float = 60.0
    # what asks the server to shut down; SIGKILL follows after `stop_timeout`
    stop_signal: int = signal.SIGTERM
    pass_fds: tuple[int, ...] = ()  # descriptors it inherits under the same numbers (gocryptfs: /dev/fuse)
    _popen: subprocess.Popen | None = field(default=None, init=False, repr=False)
    _log_start: int = field(default=0, init=False, repr=False)  # the log's size when this start began

    @property
    def running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    @property
    def pid(self) -> int:
        if self._popen is None:
            raise ServerError(f"{self.name} is not started")
        return self._popen.pid

    def processes(self) -> list[psutil.Process]:
        """The server and every process it started (PostgreSQL forks one per connection); none
        when it is not started. Safe while another thread stops it (the sampler asks any time)."""
        popen = self._popen  # one read: stop() may clear it meanwhile
        if popen is None:
            return []
        try:
            main = psutil.Process(popen.pid)
            return [main, *main.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def start(self) -> None:
        self._log_start = log_size(self.log)
        out = self.log.open("ab")
        try:
            self._popen = subprocess.Popen([*PARENT_DEATH, *self.argv], stdout=out, stderr=subprocess.STDOUT,
                                           stdin=subprocess.DEVNULL, env=self.env, user=self.run_as,
                                           group=_group(self.run_as), extra_groups=_extra_groups(self.run_as),
                                           start_new_session=True, pass_fds=self.pass_fds)
        except OSError as exc:
            raise ServerError(f"{self.name} could not start: {exc}") from None
        finally:
            out.close()
        register(self._popen.pid, self.name)
        try:
            self._wait_until_ready()
        except BaseException:  # not ready in time, or Ctrl-C while waiting: no server may outlive us
            self.stop()
            raise

    def ended(self, wait_s: float = 0.0) -> str:
        """How the process ended by itself: "mariadbd ended by signal 9 (SIGKILL)", or "gocryptfs
        exited with 12: " and the last error line it logged since this start; "" while it runs
        (waited for `wait_s` at most) or once `stop` stopped it."""
        popen = self._popen  # one read: stop() may clear it meanwhile
        if popen is None:
            return ""
        try:
            code = popen.wait(timeout=wait_s) if wait_s > 0 else popen.poll()
        except subprocess.TimeoutExpired:
            return ""
        if code is None:
            return ""
        if code < 0:
            try:
                name = f" ({signal.Signals(-code).name})"
            except ValueError:
                name = ""
            return f"{self.name} ended by signal {-code}{name}"
        errors = error_lines(self.logged().splitlines())
        return f"{self.name} exited with {code}" + (f": {errors[-1].strip()}" if errors else "")

    def logged(self) -> str:
        """What the server has written to its log since this start began ("" when unreadable)."""
        return log_since(self.log, self._log_start) or ""

    def _wait_until_ready(self) -> None:
        assert self._popen is not None
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self._popen.poll() is not None:
                raise ServerError(f"{self.name} exited with {self._popen.returncode} while starting; "
                                  f"its log ends:\n{log_tail(self.log, since=self._log_start)}")
            if self._ready():
                return
            time.sleep(0.1)
        raise ServerError(f"{self.name} did not answer within {self.start_timeout:.0f} s; its log ends:\n"
                          f"{log_tail(self.log, since=self._log_start)}")

    def _ready(self) -> bool:
        try:
            return self.ready()
        except Exception:  # not accepting connections yet
            return False

    def stop(self) -> None:
        """`stop_signal` to the server's process group, SIGKILL after the grace period (`HURRY_S`
        once the run is interrupted, or at once if this wait is). Idempotent."""
        popen, self._popen = self._popen, None
        if popen is None or popen.poll() is not None:
            return
        self._signal(popen.pid, self.stop_signal)
        try:
            _wait_for_exit(popen, self.stop_timeout)
        finally:
            if popen.poll() is None:
                self._signal(popen.pid, signal.SIGKILL)
                popen.wait(timeout=10)

    @staticmethod
    def _signal(pid: int, sig: int) -> None:
        try:
            os.killpg(pid, sig)  # start_new_session made the server its group's leader
        except ProcessLookupError:
            pass


def _wait_for_exit(popen: subprocess.Popen, grace: float) -> None:
    """Wait up to `grace` seconds for `popen` to exit, or `HURRY_S` from the moment the run is
    interrupted, whichever ends first."""
    deadline = time.monotonic() + grace
    while popen.poll() is None and time.monotonic() < deadline:
        if _hurry.is_set():
            deadline = min(deadline, time.monotonic() + HURRY_S)
            try:
                popen.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            return
        time.sleep(0.05)


@dataclass
class ServerDatabase(Database):
    """A database served by a server tdebench starts and stops itself (MariaDB, PostgreSQL).

    The server runs as the system user `user`, in the trial's workspace, which belongs to that
    user and is closed to every other. `close()` stops it with a clean shutdown, so every file is
    at rest afterwards; the next `connect()` starts it again (`_started`). Subclasses start it
    (`_start`) and say what a stopped server leaves to clean up outside the workspace
    (`_after_stop`: a socket directory)."""

    user: ClassVar[str]  # the server's system user
    _server: ServerProcess | None = field(default=None, init=False, repr=False)

    @property
    def server_user(self) -> str | None:
        return self.user

    @property
    def running(self) -> bool:
        server = self._server  # one read: another thread may clear it meanwhile
        return server is not None and server.running

    def engine_processes(self) -> list[psutil.Process] | None:
        # running, not just set: while it shuts down its pid is gone and the sampler must see none
        server = self._server
        return server.processes() if server is not None and server.running else []

    def died(self, wait_s: float = 0.0) -> str:
        server = self._server  # one read: another thread may clear it meanwhile
        return server.ended(wait_s) if server is not None else ""

    def close(self) -> None:
        """Stop the server (a clean shutdown: every file is at rest afterwards). Idempotent."""
        server, self._server = self._server, None
        try:
            if server is not None:
                server.stop()
        finally:
            self._after_stop()

    @abstractmethod
    def _start(self) -> None:
        """Start the server on this database's files (raises ServerError if it does not answer)."""

    def _after_stop(self) -> None:
        """Clean up what the stopped server leaves outside its workspace; nothing by default."""

    def _started(self) -> None:
        """Start the server unless it runs (after `close()`, or a server that died: its leftovers
        go first)."""
        if not self.running:
            self.close()
            self._start()

    def _require_running(self, action: str) -> None:
        if not self.running:
            raise ServerError(f"{self.user}: start the server (connect) before {action}")
