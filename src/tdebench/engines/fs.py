"""File-system level encryption with gocryptfs: any engine whose data lives in a directory.

The engine runs unchanged in the plaintext view of a gocryptfs mount; what reaches the disk
is the cipher directory, where every file's content is encrypted in 4 KiB blocks (AES-256-GCM
by default, XChaCha20-Poly1305 with `-xchacha`) and every file name is encrypted (EME).
This is the "transparent file encryption" model to compare native TDE against on one engine.

Layout of a trial's workspace (root's; 0711 when a server's user must pass through it to
the mount, else 0700):
  cipher/          what is on disk, root's only (0700): gocryptfs.conf (the master key,
                   wrapped by the key below through scrypt), gocryptfs.diriv and the encrypted files
  plain/           the mount point: the decrypted view while mounted; the bare directory
                   below it is root's only (0700) and empty
  plain/<engine>/  the inner engine's own workspace (0700, the server's user's)
  gocryptfs.log    gocryptfs's messages, 0600 (informational ones included: its "ready" line
                   is the readiness signal; none of them carries key material)
  ctl/             gocryptfs's control socket while mounted (0700, gocryptfs's user's): it turns
                   a cipher file's name into the engine's (`file_kind`), nothing else

What kind each cipher file is (data, WAL/log, temp; `Database.file_kind`) is the kind of the
engine's file behind it: its encrypted name says nothing, so gocryptfs's control socket
decrypts it (`DecryptPath`, from the name and its directory's IV, so a file already deleted
decrypts too) and the engine names the kind. Names are learnt while mounted, as the transient
capture meets each file, and all at once before each unmount, since the at-rest scan comes
after the last.

The trial's key (hex) is the gocryptfs password. It is written to a 0600 pass file only for
the moment gocryptfs reads it (init, mount) and removed right after, so it is never on any
command line, never in a log and not at rest beside the cipher directory.

Who may enter the decrypted view: root, and the user the engine's server runs as
(`Database.server_user`: PostgreSQL's `postgres`), nobody else. tdebench mounts the view
itself, as root (`_fuse_mount`: what `mount.fuse3 -o drop_privileges` does), with
`allow_other,default_permissions,nosuid,nodev`: the kernel checks every access against the
view's own owners and modes. gocryptfs then serves that mount as the server's user (root for
engines that run in this process), reading and writing the cipher directory, which is that
user's (0700). So every file, in the view and in the cipher directory, is the server's user's;
the view's root shows the cipher directory's owner and mode, and no other user may enter.

Why not gocryptfs's own mount as root with `-allow_other`: gocryptfs then creates each file
with its caller's credentials, switching a thread's user for it, and Debian 12's gocryptfs
2.3 switches every thread at once (gocryptfs issues #892 and #893, fixed in 2.5.2, which
Debian 12 does not have): a server's concurrent mkdir and create fail at random with "Permission
denied" or "Operation not permitted" (16 threads of mkdir and create as `postgres`: thousands of
errors in a second; with this mount, none; tests/contract/test_fs_layer.py checks it).

Should the mount vanish, the bare mount point (root's, 0700) keeps a server from writing
plaintext beside the cipher directory, and the verdict is `error` (`plaintext_view` raises;
see verify.judge). gocryptfs defaults are kept (preallocation on, no kernel_cache), the same
for every engine.

The passthrough (`fs-passthrough`): the same layer without its cipher. An fs-* encryption's
cost is two costs: the FUSE round trip (every read the page cache does not answer, every
write, every open and stat goes to a daemon in user space and back) and the cipher's
arithmetic. A bindfs mount of a plain directory pays the first alone: the engine runs in its
view exactly as in gocryptfs's, and what reaches the disk is the engine's own files
(`files/`, where gocryptfs has `cipher/`), so its verdict is `plaintext`, as the baseline's.
Against `none` it measures the layer; an fs-* encryption against it, the cipher.

Why bindfs (Debian's package): gocryptfs has no mode without a cipher (-plaintextnames still
encrypts contents). bindfs is a plain libfuse file system whose caching is what gocryptfs's
is: gocryptfs sets go-fuse's entry, attribute and negative timeouts to 1 s, saying so to match
libfuse's defaults, which bindfs keeps; neither asks the kernel to keep its page cache across
opens (kernel_cache), both write in requests of up to 128 KiB (bindfs with `big_writes`), and tdebench gives both the
same mount options (allow_other, default_permissions, nosuid, nodev). `--multithreaded` has
bindfs serve requests concurrently, as gocryptfs does (one goroutine each); bindfs's default
is one thread for all. go-fuse's own loopback example would share gocryptfs's library too,
but it is no Debian program (a Go toolchain would have to build it).

One difference: Debian 12's bindfs is built on libfuse 2, which cannot serve a mount another
process made (no `/dev/fd/N` mount point), so bindfs mounts the view itself, as root, and
serves it as root. What it creates it gives to the creator (`--create-as-user`, its default
as root): every file in the view and below `files/` is the server's user's, the view's root
shows `files/` (the server's, 0700), and the kernel checks every access against them
(default_permissions), so nobody else gets in, as under gocryptfs. The mount point, the log
(`bindfs.log`), registration for `tdebench clean` and the unmount on close, failure and
Ctrl-C are gocryptfs's (LayerDatabase).
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Self

import psutil

from tdebench.engines.base import (NONE, Availability, Backup, BackupMethod, Backups, Connection, Database, Encryption,
                                   Engine, PageLayout, PlaintextViewGone, Reencrypts, SensitiveColumns, backups,
                                   default_file_kind)
from tdebench.engines.server import (ServerError, ServerProcess, hurried, log_since, log_size, log_tail, run_tool,
                                     user_ids)
from tdebench.runstate import register_mount
from tdebench.keys import Secret

_COVERS = ("every file the engine writes in its directory: data, WAL/log, temp files",
           "file names (encrypted)")
_BLOCK_BYTES = 4096  # gocryptfs encrypts every file in 4 KiB blocks, each with its own nonce
_HEADER_BYTES, _TAG_BYTES = 18, 16  # a cipher file's header; each block's tag
_NONCE_BYTES = {"fs-aes-256-gcm": 16, "fs-xchacha20-poly1305": 24}  # each block's nonce (as measured: file sizes)
_NOT_HIDDEN = ("not hidden: file sizes (rounded to 4 KiB blocks plus 32 B per block and an 18 B header), "
               "the number of files and the directory structure, timestamps, and access patterns; "
               "anything the engine writes outside its directory (e.g. the system temp dir) is not covered")
_INIT_FLAGS = {"fs-aes-256-gcm": [], "fs-xchacha20-poly1305": ["-xchacha"]}
_READY = "Filesystem mounted and ready."
_CONTROL_SOCKET, _CONTROL_TIMEOUT_S = "gocryptfs.sock", 5.0
_GOCRYPTFS_OWN = ("gocryptfs.conf", "gocryptfs.conf.tmp", "gocryptfs.conf.bak", "gocryptfs.diriv")
_LONGNAME = "gocryptfs.longname."  # a long name's file; its name is in a file beside it (".name")
_UNMOUNT_TRIES = 50  # x 0.1 s while the mount is busy, then a lazy unmount
_COPY_TIMEOUT_S = 24 * 3600.0  # copying a large database into a mount takes a while; a hung copy must end
# bindfs in the foreground (-f: tdebench owns it), one thread per request (--multithreaded; bindfs
# defaults to one thread for all, gocryptfs serves requests concurrently), writes of up to 128 KiB as
# gocryptfs's (big_writes: libfuse 2 otherwise sends every write in 4 KiB requests; a first run without
# it had PostgreSQL's load cost +117% on the passthrough, +60% on gocryptfs), with gocryptfs's mount options
_BINDFS_OPTIONS = ("--multithreaded", "-o", "big_writes,allow_other,default_permissions,nosuid,nodev")


def _fuse_availability(daemon: str, package: str, as_root: str) -> Availability:
    """Whether `daemon` can mount a FUSE view here (never raises): the daemon and fusermount3 on
    the PATH, /dev/fuse, and root (`as_root`: why this layer needs it)."""
    missing = [tool for tool in (daemon, "fusermount3") if shutil.which(tool) is None]
    if missing:
        return Availability(False, f"{' and '.join(missing)} not found", f"apt-get install -y {package} fuse3")
    if not Path("/dev/fuse").exists():
        return Availability(False, "/dev/fuse does not exist (no FUSE in this kernel or container)",
                            "modprobe fuse, or run the container with --device /dev/fuse --cap-add SYS_ADMIN")
    if os.geteuid() != 0:
        return Availability(False, f"not running as root: {as_root}", "run tdebench as root")
    return Availability(True)


def fs_availability() -> Availability:
    """Whether gocryptfs mounts can be made here (never raises)."""
    return _fuse_availability("gocryptfs", "gocryptfs", "tdebench mounts each decrypted view itself, for "
                                                         "gocryptfs to serve as the engine's user")


def passthrough_availability() -> Availability:
    """Whether bindfs mounts can be made here (never raises): FUSE and root, as for gocryptfs."""
    return _fuse_availability("bindfs", "bindfs", "bindfs mounts the view for other users (allow_other)")


def mounted(path: Path) -> bool:
    """Whether `path` is a mount point right now (per /proc/mounts, which never blocks on FUSE)."""
    target = str(path.absolute())
    with open("/proc/mounts") as mounts:
        return any(line.split()[1] == target for line in mounts)


@dataclass
class LayerDatabase(Database, Backups):
    """An engine's own database (`inner`, encryption `none`) in the view of a FUSE mount that a
    daemon of the layer serves (gocryptfs, or bindfs for the passthrough): what the two share,
    mounting aside: the mount point, the view's owner, the close that unmounts whatever
    happens, the decrypted view as the positive control, and the engine's own loads and backups."""

    inner: Database | None = field(default=None, repr=False)
    _daemon: ServerProcess | None = field(default=None, init=False, repr=False)
    _log_start: int = field(default=0, init=False, repr=False)  # the log's size when the last mount began
    daemon: ClassVar[str] = ""  # the layer's program, as its messages name it

    @property
    def mount_point(self) -> Path:
        return self.workspace / "plain"

    @property
    def log(self) -> Path:
        return self.workspace / f"{self.daemon}.log"

    @property
    def is_mounted(self) -> bool:
        return mounted(self.mount_point)

    @property
    def server_user(self) -> str | None:
        return self.inner.server_user if self.inner is not None else None

    def _owner(self) -> tuple[int, int]:
        """(uid, gid) the view belongs to: the server's user, or this process's."""
        return user_ids(self.server_user) if self.server_user else (os.geteuid(), os.getegid())

    def _inner(self) -> Database:
        assert self.inner is not None, f"use {type(self).__name__}.wrapping()"
        return self.inner

    @classmethod
    def wrapping(cls, engine: Engine, workspace: Path, encryption: Encryption, key: Secret | None) -> LayerDatabase:
        """The layer over `engine`'s own database (encryption none) in its view, `plain/<engine>`."""
        raise NotImplementedError

    @classmethod
    def _wrapping(cls, engine: Engine, workspace: Path, encryption: Encryption, key: Secret | None) -> Self:
        database = cls(workspace=workspace, encryption=encryption, key=key)
        database.inner = engine.provision_native(database.mount_point / engine.name, NONE, None)
        return database

    def create(self) -> None:
        self._set_up(lambda inner: inner.create())

    def _set_up(self, make: Callable[[Database], None]) -> None:
        """The layer's directory made and mounted, and the engine's database made in the view by `make`."""
        raise NotImplementedError

    def _mount(self) -> None:
        raise NotImplementedError

    def _mount_and_make(self, make: Callable[[Database], None]) -> None:
        """Mount, then the engine's directory in the view (0700, the server's user's) and its
        database made in it by `make`; unmounted again if anything fails."""
        try:
            self._mount()
            directory = self._inner().workspace
            directory.mkdir(mode=0o700, exist_ok=True)
            self._own_engine_dir(directory)
            make(self._inner())
        except BaseException:
            self.close()
            raise

    def _own_engine_dir(self, directory: Path) -> None:
        """Give the engine's directory in the view to the server's user, where the daemon made it
        as another (nothing by default: gocryptfs serves as that user, so it is that user's)."""

    def spilling(self, conn: Connection) -> Connection:
        """The engine's own way, inside the mount."""
        return self._inner().spilling(conn)

    def connect(self) -> Connection:
        """Mounts again after `close()` (gocryptfs's scrypt key derivation: timed as `open`),
        then the engine's connect."""
        if not self.is_mounted:
            self._mount()
        return self._inner().connect()

    def close(self) -> None:
        """The engine's close (servers stop), then unmount; unmounts even if the engine's close fails."""
        try:
            if self.inner is not None:
                self.inner.close()
        finally:
            self._unmount()

    def _learn_names(self) -> None:
        """Learn the view's name of every file below the layer's directory while the view is
        mounted (called before each unmount): the at-rest scan names kinds after it."""

    def _unmount(self) -> None:
        try:
            if self.is_mounted:
                self._learn_names()
                for _ in range(_UNMOUNT_TRIES // 10 if hurried() else _UNMOUNT_TRIES):
                    done = subprocess.run(["fusermount3", "-u", str(self.mount_point)], capture_output=True,
                                          text=True, check=False)
                    if done.returncode == 0 or not self.is_mounted:
                        break
                    time.sleep(0.1)  # busy: a process still has a file open
                else:
                    _detach(self.mount_point)
        finally:
            self._stop_daemon()
        if self.is_mounted:
            raise ServerError(f"could not unmount {self.mount_point}; {self.daemon} log ends:\n"
                              f"{log_tail(self.log, since=self._log_start)}")

    def _stop_daemon(self) -> None:
        """The daemon exits by itself once unmounted; `stop` waits for that (and signals it otherwise)."""
        process, self._daemon = self._daemon, None
        if process is None:
            return
        deadline = time.monotonic() + (0.5 if hurried() else 5)
        while process.running and time.monotonic() < deadline:
            time.sleep(0.02)
        process.stop()

    def data_bytes(self) -> int:
        """The engine's own data files, as its view shows them (the cipher files' names say nothing)."""
        return self._inner().data_bytes()

    layer_name: ClassVar[str] = ""  # the directory of the workspace below the view

    @property
    def layer_dir(self) -> Path:
        """What is on disk below the view: gocryptfs's cipher directory, bindfs's source."""
        return self.workspace / self.layer_name

    def file_kind(self, path: str) -> str:
        """The kind of the engine's file behind `path` (relative to the workspace): below the
        layer's directory, the kind the engine gives the file's name in the view (`_view_name`);
        the layer's own files (its configuration, per-directory IVs, name files) and its log are
        "other"; the rest of the workspace by the default names."""
        parts = Path(path).parts
        if path == self.log.name:
            return "other"
        if len(parts) < 2 or parts[0] != self.layer_dir.name:
            return default_file_kind(path)
        view = self._view_name(str(Path(*parts[1:])))
        if view is None:
            return "other"
        if not view:  # not known: what the default names make of it
            return default_file_kind(path)
        relative = os.path.relpath(self.mount_point / view, self._inner().workspace)
        return self._inner().file_kind(relative) if not relative.startswith("..") else default_file_kind(view)

    def _view_name(self, path: str) -> str | None:
        """The name in the view of `path` (relative to the layer's directory): None for the
        layer's own files, "" where it cannot be told."""
        raise NotImplementedError

    @property
    def connect_starts_processes(self) -> bool:
        return True  # the layer's daemon, mounted again by connect() after close()

    def plaintext_view(self) -> Path:
        """The mount point, while it is a mount; PlaintextViewGone otherwise (closed, or the mount
        vanished: a lazy unmount leaves the engine running on the detached mount)."""
        if not self.is_mounted:
            raise PlaintextViewGone(f"the {self.daemon} mount at {self.mount_point} was gone before verification "
                                    "(not a mount point any more)")
        return self.mount_point

    def bulk_load(self, conn: Connection, table: str, columns: Sequence[str], parquet: Path) -> None:
        """The engine's own fast path (DuckDB read_parquet, LOAD DATA, COPY): the layer below
        must not change how data is loaded, or the comparison with native TDE is unfair."""
        self._inner().bulk_load(conn, table, columns, parquet)

    def encryption_state(self) -> str:
        return self._inner().encryption_state()

    def layer_processes(self) -> list[psutil.Process]:
        daemon = self._daemon
        return daemon.processes() if daemon is not None else []

    def died(self, wait_s: float = 0.0) -> str:
        """The layer's daemon's end (the view's files are gone with it: the engine's errors follow
        from it), then the engine's own processes'."""
        daemon = self._daemon
        ended = [daemon.ended(wait_s) if daemon is not None else "", self._inner().died(wait_s)]
        return "; ".join(text for text in ended if text)

    def engine_processes(self) -> list[psutil.Process] | None:
        """The engine's processes (this one for embedded engines) and the layer's daemon, whose
        CPU time is the layer's cost."""
        inner = self._inner().engine_processes()
        processes = list(inner) if inner is not None else [psutil.Process()]
        daemon = self._daemon  # one read: another thread may clear it meanwhile
        if daemon is not None:
            processes += daemon.processes()
        return processes

    # -- backup and restore --------------------------------------------------------------------

    def _backups(self) -> Backups:
        return backups(self._inner(), "backup")

    def backup_methods(self) -> tuple[BackupMethod, ...]:
        """The engine's own methods (none when it has no backups)."""
        inner = self._inner()
        return inner.backup_methods() if isinstance(inner, Backups) else ()

    def backup(self, method: BackupMethod, target: Path) -> Backup:
        """The engine's own backup, taken while mounted: its tool reads the decrypted view and
        writes `target`, outside the mount, as the engine writes it. So the layer protects the
        database but not its backups; a backup stays encrypted only where the engine encrypts
        it itself, or if it is written into a gocryptfs mount of its own (not measured here)."""
        if not self.is_mounted:
            raise ServerError(f"{self.mount_point} is not mounted: connect before backing up")
        return self._backups().backup(method, target)

    def restore(self, backup: Backup) -> None:
        """A new layer directory (for gocryptfs: a cipher directory with this key), mounted, and
        the engine's restore into it: the restored copy is behind the layer again."""
        self._set_up(lambda inner: backups(inner, "restore").restore(backup))

    def backup_contents(self, backup: Backup, scratch: Path) -> Path:
        return self._backups().backup_contents(backup, scratch)


@dataclass
class GocryptfsDatabase(LayerDatabase, Reencrypts):
    """An engine's own database (`inner`, encryption `none`) inside a gocryptfs mount."""

    daemon: ClassVar[str] = "gocryptfs"

    @classmethod
    def wrapping(cls, engine: Engine, workspace: Path, encryption: Encryption,
                 key: Secret | None) -> GocryptfsDatabase:
        if encryption.name not in _INIT_FLAGS:
            raise KeyError(f"no gocryptfs setting {encryption.name!r}; valid: {', '.join(_INIT_FLAGS)}")
        return cls._wrapping(engine, workspace, encryption, key)

    _names: dict[str, str] = field(default_factory=dict, init=False, repr=False)  # `_view_name`'s
    _names_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    layer_name: ClassVar[str] = "cipher"
    cipher_dir = LayerDatabase.layer_dir  # what gocryptfs writes: the encrypted files

    @property
    def control_dir(self) -> Path:
        return self.workspace / "ctl"

    def _view_name(self, path: str) -> str | None:
        """The name gocryptfs's control socket decrypts `path` to (learnt once, kept: a name
        stays what it was after the file is gone or the view unmounted); None for gocryptfs's
        own files, "" where the socket cannot tell (not mounted, and never learnt)."""
        name = Path(path).name
        if name in _GOCRYPTFS_OWN or (name.startswith(_LONGNAME) and name.endswith(".name")):
            return None
        with self._names_lock:
            if path not in self._names:
                view = self._decrypt(path)
                if view is None:
                    return ""  # asked again later: a mount may answer
                self._names[path] = view
            return self._names[path]

    def _decrypt(self, path: str) -> str | None:
        """`DecryptPath` through the control socket (reached by a descriptor of its directory:
        a workspace's path may be longer than a socket's may be); None when there is no answer."""
        try:
            directory = os.open(self.control_dir, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as control:
                control.settimeout(_CONTROL_TIMEOUT_S)
                control.connect(f"/proc/self/fd/{directory}/{_CONTROL_SOCKET}")
                control.sendall(json.dumps({"DecryptPath": path}).encode())
                reply = b""
                while not reply.endswith(b"\n"):
                    chunk = control.recv(65536)
                    if not chunk:
                        break
                    reply += chunk
            answer = json.loads(reply)
        except (OSError, ValueError):
            return None
        finally:
            os.close(directory)
        return (answer.get("Result") or None) if answer.get("ErrNo") == 0 else None

    def _learn_names(self) -> None:
        if not self.control_dir.exists():
            return
        for path in self.files():
            self._view_name(str(path.relative_to(self.cipher_dir)))

    @contextmanager
    def passfile(self) -> Iterator[Path]:
        """The key as a gocryptfs password file (0600, gocryptfs's user's) for as long as
        gocryptfs reads it."""
        assert self.key is not None, "an encrypted file system needs a key"
        path = self.workspace / "fs.pass"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.fchmod(fd, 0o600)
            os.fchown(fd, *self._owner())
            os.write(fd, self.key.hex().encode() + b"\n")
        finally:
            os.close(fd)
        try:
            yield path
        finally:
            path.unlink(missing_ok=True)

    def _set_up(self, make: Callable[[Database], None]) -> None:
        """A new cipher directory with this key, mounted, and the engine's database made in it by `make`."""
        _make_private(self, self.cipher_dir)
        self.control_dir.mkdir(mode=0o700, exist_ok=True)
        _own(self.control_dir, *self._owner(), 0o700)
        self._names.clear()  # a new cipher directory: new names
        with self.passfile() as password:
            run_tool(["gocryptfs", "-init", *_INIT_FLAGS[self.encryption.name], "-q", "-passfile", str(password),
                      str(self.cipher_dir)], self.log, run_as=self.server_user, timeout=120)
        self._mount_and_make(make)

    def _mount(self) -> None:
        """Mount the view (as root) and have gocryptfs serve it as the server's user (see the module)."""
        self._stop_daemon()  # a previous instance whose mount went away
        self._log_start = log_size(self.log)
        fuse = _fuse_mount(str(self.cipher_dir), self.mount_point, *self._owner())
        register_mount(self.mount_point)  # a killed run's decrypted view is found and unmounted
        control = -1
        try:
            # the control socket in ctl/, named through a descriptor (a path may be too long for a socket)
            control = os.open(self.control_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            with self.passfile() as password:
                argv = ["gocryptfs", "-fg", "-passfile", str(password), "-ctlsock",
                        f"/dev/fd/{control}/{_CONTROL_SOCKET}", str(self.cipher_dir), f"/dev/fd/{fuse}"]
                process = ServerProcess("gocryptfs", argv, self.log, ready=self._ready, run_as=self.server_user,
                                        start_timeout=60, stop_timeout=10, pass_fds=(fuse, control))
                process.start()
        except BaseException:
            _detach(self.mount_point)  # mounted, but nobody serves it (a wrong key, Ctrl-C)
            raise
        finally:
            os.close(fuse)  # gocryptfs holds its own copies
            if control >= 0:
                os.close(control)
        self._daemon = process

    def _ready(self) -> bool:
        """Mounted *and* serving. The mount shows in /proc/mounts before gocryptfs has finished
        its own first access to it (go-fuse's poll check); touching the mount in that window
        (e.g. mkdir in its root) deadlocks both, so readiness is gocryptfs's own message."""
        return _READY in (log_since(self.log, self._log_start) or "") and self.is_mounted

    def files(self) -> list[Path]:
        """What is on disk: every file in the cipher directory (the mount point is empty when unmounted)."""
        if not self.cipher_dir.exists():
            return []
        return sorted(p for p in self.cipher_dir.rglob("*") if p.is_file())

    def page_layout(self, table: str) -> PageLayout | None:
        """The cipher file behind the engine's file holding `table` (the one with its inode number:
        gocryptfs passes the cipher directory's through to the view), cut into gocryptfs's blocks:
        an 18-byte file header, then blocks of a nonce (16 bytes; 24 with -xchacha), 4 KiB of data
        and a 16-byte tag.
        Asked while mounted (the engine's own layout is its file in the view)."""
        inner = self._inner().page_layout(table)
        if inner is None:
            return None
        inode = inner.file.stat().st_ino
        found = [p for p in self.files() if p.stat().st_ino == inode]
        if len(found) != 1:
            raise ValueError(f"{len(found)} cipher files with the inode of {inner.file.name}, not one")
        return PageLayout(found[0], _HEADER_BYTES, _NONCE_BYTES[self.encryption.name] + _BLOCK_BYTES + _TAG_BYTES)

    # -- maintenance: encrypting an existing database, changing its key ----------------------

    def encrypt_existing(self, source: Database, sensitive: Sequence[SensitiveColumns] = ()) -> str:
        """A new cipher directory with this key, mounted, and everything in the unencrypted
        database's workspace copied into the engine's directory inside the mount (`cp -a` as the
        server's user: modes kept, so a server finds its files as it left them); the originals are
        then deleted (not shredded: their blocks stay on the disk until overwritten)."""
        inner = self._inner()
        if (type(source) is not type(inner) or source.workspace != self.workspace
                or not source.encryption.is_baseline):
            raise ValueError(f"the fs layer encrypts an unencrypted {type(inner).__name__} in {self.workspace}, "
                             f"not a {source.encryption.name} {type(source).__name__} in {source.workspace}")
        own = {self.cipher_dir.name, self.control_dir.name, self.mount_point.name, self.log.name}
        originals = sorted(p for p in source.workspace.iterdir() if p.name not in own)
        self._set_up(lambda database: self._move_into(originals, database.workspace))
        return "copy-into-mount"

    def _move_into(self, originals: list[Path], directory: Path) -> None:
        """Copied by the server's user (root for engines in this process), as the server writes
        its own files, with their modes (`cp -a`); gocryptfs, serving as that user, makes every
        cipher-side file that user's too."""
        for path in originals:
            run_tool(["cp", "-a", str(path), str(directory / path.name)], self.log, run_as=self.server_user,
                     timeout=_COPY_TIMEOUT_S)
        for path in originals:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()

    def rekey(self, new_key: Secret) -> str:
        """`gocryptfs -passwd`: the master key in gocryptfs.conf is wrapped again, under the new
        password (scrypt). The data stays encrypted with the same master key: this is not a
        re-encryption, and whoever kept the master key (or the old gocryptfs.conf with the old
        password) can still read the data. Works while mounted; both passwords go in on stdin."""
        assert self.key is not None, "an encrypted file system has a key"
        old = self.key
        uid, gid = self._owner()  # as gocryptfs's user: the new gocryptfs.conf must stay readable by it
        done = subprocess.run(["gocryptfs", "-passwd", str(self.cipher_dir)], input=f"{old.hex()}\n{new_key.hex()}\n",
                              capture_output=True, text=True, timeout=120, check=False, user=uid, group=gid,
                              extra_groups=[] if self.server_user else None)
        output = new_key.scrub(old.scrub(done.stdout + done.stderr))
        with self.log.open("a") as log:
            log.write(output)
        if done.returncode != 0:
            raise ServerError(f"gocryptfs -passwd exited with {done.returncode}: {output.strip()}")
        (self.cipher_dir / "gocryptfs.conf.bak").unlink(missing_ok=True)  # would hold the old wrapping
        self.key = new_key
        return "rewrap-master-key"

    def opens_with(self, key: Secret) -> bool:
        """Whether gocryptfs mounts the cipher directory with `key` (the database is closed
        first and left closed)."""
        self.close()
        current, self.key = self.key, key
        try:
            self._mount()
        except ServerError:  # gocryptfs exits: "Password incorrect."
            return False
        finally:
            self.key = current
            self._unmount()
        return True


@dataclass
class PassthroughDatabase(LayerDatabase):
    """An engine's own database (`inner`, encryption `none`) inside a bindfs mount of a plain
    directory: the fs layer's FUSE mount with no cipher (see the module)."""

    daemon: ClassVar[str] = "bindfs"

    @classmethod
    def wrapping(cls, engine: Engine, workspace: Path, encryption: Encryption,
                 key: Secret | None) -> PassthroughDatabase:
        return cls._wrapping(engine, workspace, encryption, None)  # no cipher, so no key

    layer_name: ClassVar[str] = "files"
    source_dir = LayerDatabase.layer_dir  # what bindfs serves, and what is on disk: the engine's files as it wrote them

    def _view_name(self, path: str) -> str | None:
        return path  # the engine's own names

    def _set_up(self, make: Callable[[Database], None]) -> None:
        """The source directory, mounted, and the engine's database made in the view by `make`."""
        _make_private(self, self.source_dir)
        self._mount_and_make(make)

    def _own_engine_dir(self, directory: Path) -> None:
        _own(directory, *self._owner(), 0o700)  # made by root here: the server's, as under gocryptfs

    def _mount(self) -> None:
        """bindfs mounts the view itself, as root (see the module), and serves it until unmounted."""
        self._stop_daemon()  # a previous instance whose mount went away
        self._log_start = log_size(self.log)
        register_mount(self.mount_point)  # a killed run's view is found and unmounted
        argv = ["bindfs", "-f", *_BINDFS_OPTIONS, str(self.source_dir), str(self.mount_point)]
        process = ServerProcess("bindfs", argv, self.log, ready=lambda: self.is_mounted, start_timeout=60,
                                stop_timeout=10)
        try:
            process.start()  # stopped again if it fails; bindfs unmounts as it ends
        except BaseException:
            _detach(self.mount_point)  # mounted, but nobody serves it (Ctrl-C)
            raise
        self._daemon = process

    def files(self) -> list[Path]:
        """What is on disk: every file in the source directory (the mount point is empty when unmounted)."""
        if not self.source_dir.exists():
            return []
        return sorted(p for p in self.source_dir.rglob("*") if p.is_file())


def _make_private(database: LayerDatabase, layer_dir: Path) -> None:
    """The workspace, mount point and log, root's: the server's user may only pass through the
    workspace (0711; 0700 without one), nobody but root may enter the bare mount point (0700) or
    read the log (0600). The layer's directory (gocryptfs's cipher directory, bindfs's source)
    is the server's user's, 0700. A workspace a server had before (encrypt_existing's source)
    is root's again."""
    workspace, server = database.workspace, database.server_user
    workspace.mkdir(mode=0o711 if server else 0o700, parents=True, exist_ok=True)
    root = os.geteuid(), os.getegid()
    _own(workspace, *root, 0o711 if server else 0o700)
    database.mount_point.mkdir(mode=0o700, exist_ok=True)
    _own(database.mount_point, *root, 0o700)
    layer_dir.mkdir(mode=0o700, exist_ok=True)
    _own(layer_dir, *database._owner(), 0o700)
    os.close(os.open(database.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600))
    _own(database.log, *root, 0o600)


def _own(path: Path, uid: int, gid: int, mode: int) -> None:
    os.chown(path, uid, gid, follow_symlinks=False)
    path.chmod(mode)


_MS_NOSUID, _MS_NODEV, _MNT_DETACH = 2, 4, 2


def _fuse_mount(source: str, target: Path, uid: int, gid: int) -> int:
    """Mount a FUSE file system at `target` (as root) for a daemon running as `uid` to serve
    through the returned /dev/fuse descriptor, given to it as its mount point `/dev/fd/N`.
    `allow_other` with `default_permissions`: users other than `uid` get in only where the
    view's owners and modes let them; `nosuid`, `nodev`: nothing in it runs with other rights."""
    fuse = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
    options = f"fd={fuse},rootmode=40000,user_id={uid},group_id={gid},allow_other,default_permissions"
    if _LIBC.mount(source.encode(), str(target).encode(), b"fuse.gocryptfs", _MS_NOSUID | _MS_NODEV,
                   options.encode()) != 0:
        error = ctypes.get_errno()
        os.close(fuse)
        raise ServerError(f"could not mount {target}: {os.strerror(error)}")
    return fuse


def _detach(target: Path) -> None:
    """Unmount `target` now, even if busy (the kernel finishes when the last user lets go)."""
    _LIBC.umount2(str(target).encode(), _MNT_DETACH)


_LIBC = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True)
class _Layer:
    """A layer as `Encryption.provider`: what `Engine.provision` calls for an fs-* encryption, so
    the engine contract (base.py) needs no import of this module."""

    database: type[LayerDatabase]
    check: Callable[[], Availability]

    def availability(self) -> Availability:
        return self.check()

    def provision(self, engine: Engine, workspace: Path, encryption: Encryption,
                  key: Secret | None) -> Database:
        return self.database.wrapping(engine, workspace, encryption, key)


GOCRYPTFS = _Layer(GocryptfsDatabase, fs_availability)
PASSTHROUGH = _Layer(PassthroughDatabase, passthrough_availability)
FS_ENCRYPTIONS: tuple[Encryption, ...] = (
    Encryption("fs-aes-256-gcm", "AES", 256, "GCM", "fs", _COVERS,
               f"gocryptfs default; {_NOT_HIDDEN}", _BLOCK_BYTES, provider=GOCRYPTFS),
    Encryption("fs-xchacha20-poly1305", "XChaCha20-Poly1305", 256, "AEAD", "fs", _COVERS,
               f"gocryptfs -xchacha; faster than AES-GCM without AES instructions; {_NOT_HIDDEN}", _BLOCK_BYTES,
               provider=GOCRYPTFS),
)
FS_PASSTHROUGH = Encryption(
    "fs-passthrough", "none", 0, "none", "fs", (),
    "no cipher: the fs layer's FUSE mount alone (bindfs), so that an fs-* encryption's cost splits into "
    "the layer's (this against none) and the cipher's (fs-* against this); at rest in plaintext, as none",
    provider=PASSTHROUGH)
FS_LAYER: tuple[Encryption, ...] = (*FS_ENCRYPTIONS, FS_PASSTHROUGH)
"""Every setting of the file-system layer an engine whose data lives in a directory lists."""
