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
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from tdebench.engines.base import (NONE, Availability, Backup, BackupMethod, Backups, Connection, Database, Encryption,
                                   Engine, PageLayout, PlaintextViewGone, Reencrypts, SensitiveColumns, backups)
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
_UNMOUNT_TRIES = 50  # x 0.1 s while the mount is busy, then a lazy unmount
_COPY_TIMEOUT_S = 24 * 3600.0  # copying a large database into a mount takes a while; a hung copy must end


def fs_availability() -> Availability:
    """Whether gocryptfs mounts can be made here (never raises)."""
    missing = [tool for tool in ("gocryptfs", "fusermount3") if shutil.which(tool) is None]
    if missing:
        return Availability(False, f"{' and '.join(missing)} not found", "apt-get install -y gocryptfs fuse3")
    if not Path("/dev/fuse").exists():
        return Availability(False, "/dev/fuse does not exist (no FUSE in this kernel or container)",
                            "modprobe fuse, or run the container with --device /dev/fuse --cap-add SYS_ADMIN")
    if os.geteuid() != 0:
        return Availability(False, "not running as root: tdebench mounts each decrypted view itself, for "
                                   "gocryptfs to serve as the engine's user", "run tdebench as root")
    return Availability(True)


def mounted(path: Path) -> bool:
    """Whether `path` is a mount point right now (per /proc/mounts, which never blocks on FUSE)."""
    target = str(path.absolute())
    with open("/proc/mounts") as mounts:
        return any(line.split()[1] == target for line in mounts)


@dataclass
class GocryptfsDatabase(Database, Reencrypts, Backups):
    """An engine's own database (`inner`, encryption `none`) inside a gocryptfs mount."""

    inner: Database | None = field(default=None, repr=False)
    _gocryptfs: ServerProcess | None = field(default=None, init=False, repr=False)
    _log_start: int = field(default=0, init=False, repr=False)  # the log's size when the last mount began

    @classmethod
    def wrapping(cls, engine: Engine, workspace: Path, encryption: Encryption,
                 key: Secret | None) -> GocryptfsDatabase:
        if encryption.name not in _INIT_FLAGS:
            raise KeyError(f"no gocryptfs setting {encryption.name!r}; valid: {', '.join(_INIT_FLAGS)}")
        database = cls(workspace=workspace, encryption=encryption, key=key)
        database.inner = engine.provision_native(database.mount_point / engine.name, NONE, None)
        return database

    @property
    def cipher_dir(self) -> Path:
        return self.workspace / "cipher"

    @property
    def mount_point(self) -> Path:
        return self.workspace / "plain"

    @property
    def log(self) -> Path:
        return self.workspace / "gocryptfs.log"

    @property
    def is_mounted(self) -> bool:
        return mounted(self.mount_point)

    @property
    def server_user(self) -> str | None:
        return self.inner.server_user if self.inner is not None else None

    def _owner(self) -> tuple[int, int]:
        """(uid, gid) the decrypted view belongs to: the server's user, or this process's."""
        return user_ids(self.server_user) if self.server_user else (os.geteuid(), os.getegid())

    def _inner(self) -> Database:
        assert self.inner is not None, "use GocryptfsDatabase.wrapping()"
        return self.inner

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

    def create(self) -> None:
        self._set_up(lambda inner: inner.create())

    def _set_up(self, make: Callable[[Database], None]) -> None:
        """A new cipher directory with this key, mounted, and the engine's database made in it by `make`."""
        self._make_private()
        with self.passfile() as password:
            run_tool(["gocryptfs", "-init", *_INIT_FLAGS[self.encryption.name], "-q", "-passfile", str(password),
                      str(self.cipher_dir)], self.log, run_as=self.server_user, timeout=120)
        try:
            self._mount()
            directory = self._inner().workspace
            directory.mkdir(mode=0o700, exist_ok=True)  # gocryptfs's user's, as everything it creates
            make(self._inner())
        except BaseException:
            self.close()
            raise

    def _make_private(self) -> None:
        """The workspace, mount point and log, root's: the server's user may only pass through
        the workspace (0711; 0700 without one), nobody but root may enter the bare mount point
        (0700) or read the log (0600). The cipher directory is gocryptfs's user's (the server's),
        0700. A workspace a server had before (encrypt_existing's source) is root's again."""
        self.workspace.mkdir(mode=0o711 if self.server_user else 0o700, parents=True, exist_ok=True)
        root = os.geteuid(), os.getegid()
        _own(self.workspace, *root, 0o711 if self.server_user else 0o700)
        self.mount_point.mkdir(mode=0o700, exist_ok=True)
        _own(self.mount_point, *root, 0o700)
        self.cipher_dir.mkdir(mode=0o700, exist_ok=True)
        _own(self.cipher_dir, *self._owner(), 0o700)
        os.close(os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600))
        _own(self.log, *root, 0o600)

    def connect(self) -> Connection:
        """Mounts again after `close()` (scrypt key derivation: timed as `open`), then the engine's connect."""
        if not self.is_mounted:
            self._mount()
        return self._inner().connect()

    def _mount(self) -> None:
        """Mount the view (as root) and have gocryptfs serve it as the server's user (see the module)."""
        self._stop_gocryptfs()  # a previous instance whose mount went away
        self._log_start = log_size(self.log)
        fuse = _fuse_mount(str(self.cipher_dir), self.mount_point, *self._owner())
        register_mount(self.mount_point)  # a killed run's decrypted view is found and unmounted
        try:
            with self.passfile() as password:
                argv = ["gocryptfs", "-fg", "-passfile", str(password), str(self.cipher_dir), f"/dev/fd/{fuse}"]
                process = ServerProcess("gocryptfs", argv, self.log, ready=self._ready,
                                        run_as=self.server_user, start_timeout=60, stop_timeout=10, pass_fds=(fuse,))
                process.start()
        except BaseException:
            _detach(self.mount_point)  # mounted, but nobody serves it (a wrong key, Ctrl-C)
            raise
        finally:
            os.close(fuse)  # gocryptfs holds its own copy
        self._gocryptfs = process

    def _ready(self) -> bool:
        """Mounted *and* serving. The mount shows in /proc/mounts before gocryptfs has finished
        its own first access to it (go-fuse's poll check); touching the mount in that window
        (e.g. mkdir in its root) deadlocks both, so readiness is gocryptfs's own message."""
        return _READY in (log_since(self.log, self._log_start) or "") and self.is_mounted

    def close(self) -> None:
        """The engine's close (servers stop), then unmount; unmounts even if the engine's close fails."""
        try:
            if self.inner is not None:
                self.inner.close()
        finally:
            self._unmount()

    def _unmount(self) -> None:
        try:
            if self.is_mounted:
                for _ in range(_UNMOUNT_TRIES // 10 if hurried() else _UNMOUNT_TRIES):
                    done = subprocess.run(["fusermount3", "-u", str(self.mount_point)], capture_output=True,
                                          text=True, check=False)
                    if done.returncode == 0 or not self.is_mounted:
                        break
                    time.sleep(0.1)  # busy: a process still has a file open
                else:
                    _detach(self.mount_point)
        finally:
            self._stop_gocryptfs()
        if self.is_mounted:
            raise ServerError(f"could not unmount {self.mount_point}; gocryptfs log ends:\n"
                              f"{log_tail(self.log, since=self._log_start)}")

    def _stop_gocryptfs(self) -> None:
        """gocryptfs exits by itself once unmounted; `stop` waits for that (and signals it otherwise)."""
        process, self._gocryptfs = self._gocryptfs, None
        if process is None:
            return
        deadline = time.monotonic() + (0.5 if hurried() else 5)
        while process.running and time.monotonic() < deadline:
            time.sleep(0.02)
        process.stop()

    def files(self) -> list[Path]:
        """What is on disk: every file in the cipher directory (the mount point is empty when unmounted)."""
        if not self.cipher_dir.exists():
            return []
        return sorted(p for p in self.cipher_dir.rglob("*") if p.is_file())

    @property
    def connect_starts_processes(self) -> bool:
        return True  # gocryptfs, mounted again by connect() after close()

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

    def plaintext_view(self) -> Path:
        """The mount point, while it is a mount; PlaintextViewGone otherwise (closed, or the mount
        vanished: a lazy unmount leaves the engine running on the detached mount)."""
        if not self.is_mounted:
            raise PlaintextViewGone(f"the gocryptfs mount at {self.mount_point} was gone before verification "
                                    "(not a mount point any more)")
        return self.mount_point

    def bulk_load(self, conn: Connection, table: str, columns: Sequence[str], parquet: Path) -> None:
        """The engine's own fast path (DuckDB read_parquet, LOAD DATA, COPY): the layer below
        must not change how data is loaded, or the comparison with native TDE is unfair."""
        self._inner().bulk_load(conn, table, columns, parquet)

    def encryption_state(self) -> str:
        return self._inner().encryption_state()

    def engine_processes(self) -> list[psutil.Process] | None:
        """The engine's processes (this one for embedded engines) and gocryptfs, whose CPU time
        is the cost of the encryption."""
        inner = self._inner().engine_processes()
        processes = list(inner) if inner is not None else [psutil.Process()]
        gocryptfs = self._gocryptfs  # one read: another thread may clear it meanwhile
        if gocryptfs is not None:
            processes += gocryptfs.processes()
        return processes

    def layer_processes(self) -> list[psutil.Process]:
        gocryptfs = self._gocryptfs
        return gocryptfs.processes() if gocryptfs is not None else []

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
        own = {self.cipher_dir.name, self.mount_point.name, self.log.name}
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
        """A new cipher directory with this key (the gocryptfs password), mounted, and the
        engine's restore into it: the restored copy is encrypted again by this layer."""
        self._set_up(lambda inner: backups(inner, "restore").restore(backup))

    def backup_contents(self, backup: Backup, scratch: Path) -> Path:
        return self._backups().backup_contents(backup, scratch)


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


class _Gocryptfs:
    """The gocryptfs layer as `Encryption.provider`: what `Engine.provision` calls for an fs-*
    encryption, so the engine contract (base.py) needs no import of this module."""

    def availability(self) -> Availability:
        return fs_availability()

    def provision(self, engine: Engine, workspace: Path, encryption: Encryption,
                  key: Secret | None) -> Database:
        return GocryptfsDatabase.wrapping(engine, workspace, encryption, key)


GOCRYPTFS = _Gocryptfs()
FS_ENCRYPTIONS: tuple[Encryption, ...] = (
    Encryption("fs-aes-256-gcm", "AES", 256, "GCM", "fs", _COVERS,
               f"gocryptfs default; {_NOT_HIDDEN}", _BLOCK_BYTES, provider=GOCRYPTFS),
    Encryption("fs-xchacha20-poly1305", "XChaCha20-Poly1305", 256, "AEAD", "fs", _COVERS,
               f"gocryptfs -xchacha; faster than AES-GCM without AES instructions; {_NOT_HIDDEN}", _BLOCK_BYTES,
               provider=GOCRYPTFS),
)
