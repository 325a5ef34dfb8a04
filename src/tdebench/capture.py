"""The transient capture: the files an engine writes during a trial and deletes before it ends.

The at-rest scan (verify.py) sees the files that exist when a trial is over. Spill files
(DuckDB's `duckdb_temp_storage_*.tmp`, PostgreSQL's `pgsql_tmp`), sort files that an engine
opens and unlinks at once (SQLite's, MariaDB's) and a WAL overwritten in place live only while
a query runs. While a trial runs (provision to close) a `Capture` watches the directories its
engine writes (`Database.capture_dirs`) with inotify and keeps each file's bytes reachable long
enough to scan them:

- a file that appears (created, moved in, written) is opened read-only and its descriptor held:
  when the engine deletes it, the inode lives on in that descriptor, and is scanned whole then
  (when its link count drops to 0), so a spill file is scanned with everything written to it,
  however short its life after the capture opened it;
- a WAL or log (`kind_of`), which an engine may overwrite in place, and a temp or spill file,
  which an engine may truncate or reuse before deleting it (DuckDB frees its temp blocks, and
  shrinks the file, as a query ends), are scanned again when closed after writing and, looked at
  every `every_s`, when they have doubled since their last scan (so a growing file costs at most
  twice its size in scans): the scan that found most is kept;
- every `every_s`, the engine's processes' open files are listed (/proc/PID/fd): a link ending
  in " (deleted)" to a file under the watched directories is a file opened and unlinked at once,
  which no directory shows; it is opened through /proc, held, scanned while it grows and once
  more when the engine closes it.

A file tdebench could not open in time (created, written and deleted between two looks, with no
process holding it) escapes; so do the OS page cache and swap (docs/method/verdicts.md). A layer's
decrypted view mounted inside the workspace (gocryptfs) is never watched: it is plaintext by design;
nor are the subdirectories a workload judges by itself (`Workload.judged_apart`: backup's
artifacts, maintenance's unencrypted source), whose verdicts are their own.
"""

from __future__ import annotations

import fnmatch
import os
import select
import stat
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import psutil
from inotify_simple import INotify, flags

from tdebench import verify
from tdebench.measure.process import helper
from tdebench.results import FileScan

CAPTURE_EVERY_S = 0.5
"""How often the capture looks at the engine's open files and rescans files that grew (a plan's
`capture_every_s`): the cadence of what inotify cannot tell (growth, files unlinked on open)."""
MAX_HELD = 4096  # descriptors held at once; past it, files are still scanned at rest, not held
_WATCH = (flags.CREATE | flags.MODIFY | flags.CLOSE_WRITE | flags.DELETE | flags.MOVED_TO | flags.MOVED_FROM)
_DELETED = " (deleted)"
_RESCANNED = ("log", "temp")  # kinds whose content may be overwritten or cut before the file goes


@dataclass
class _Held:
    """One file (inode) the capture holds open: where it was, the best scan of it so far."""

    path: Path  # its name when seen (a file unlinked on open: the name /proc gives)
    fd: int
    rescan: bool  # scanned on close-write and growth (a log or temp file, overwritten or cut before it goes)
    owner: tuple[int, int] | None = None  # (pid, fd) of a file unlinked on open, found through /proc
    unlinked_looks: int = 0  # looks that found it without a name and without an owner
    scanned_bytes: int = -1
    best: FileScan | None = None

    def keep(self, scan: FileScan) -> None:
        """Keep the scan that found most (hits first, then bytes): a file overwritten in place may
        have held more than it holds now."""
        if self.best is None or (scan.hits, scan.marker_hits, scan.bytes) >= (
                self.best.hits, self.best.marker_hits, self.best.bytes):
            self.best = scan


@dataclass
class CaptureStats:
    """What the capture did, for the verdict's detail and the cost bench."""

    scans: int = 0
    scanned_bytes: int = 0
    not_held: int = 0  # files seen but not held (gone before they could be opened, or past MAX_HELD)
    # CPU time of the watch while the trial ran (its thread's clock: inotify, /proc sweeps, scans):
    # what it could take from the measurement; the last scans, in `stop`, come after the trial
    cpu_s: float = 0.0


class Capture:
    """Watches `directories` (recursively) while a trial runs; `stop` returns the scans of what it
    caught that the at-rest scan will not see: files gone by the end (their last, whole scan) and
    files still there whose earlier content held canaries or markers that may be overwritten.

    `processes` names the engine's processes (None: it runs in this process); `kind_of` gives a
    path's file kind (`Database.file_kind`), so that data files, scanned at rest anyway, are only
    scanned here when deleted."""

    def __init__(self, directories: Sequence[Path], root: Path, canaries: Sequence[str], markers: Sequence[str],
                 signature: tuple[int, bytes] | None, processes: Callable[[], Sequence[psutil.Process] | None],
                 kind_of: Callable[[str], str], every_s: float = CAPTURE_EVERY_S, apart: Sequence[str] = ()) -> None:
        self.directories = [d.resolve() for d in directories]
        self.root = root
        self.apart = tuple(apart)  # glob patterns of `root`'s subdirectories judged apart (Workload.judged_apart)
        self.canaries, self.markers, self.signature = tuple(canaries), tuple(markers), signature
        self.processes = processes
        self.kind_of = kind_of
        self.every_s = every_s
        self.stats = CaptureStats()
        self._inotify = INotify()
        self._dirs: dict[int, Path] = {}
        self._held: dict[tuple[int, int], _Held] = {}  # by (device, inode)
        self._by_path: dict[Path, tuple[int, int]] = {}
        self._done: list[FileScan] = []  # scans of files released (gone)
        self._stop = threading.Event()
        self._wake: tuple[int, ...] = os.pipe()  # stop writes it: the watch ends at once, not at the next tick
        self._settling: list[threading.Event] = []  # `settle` calls waiting for the watch to catch up
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> Capture:
        for directory in self.directories:
            self._watch_tree(directory)
        for held in self._held.values():  # what was there before the capture began is the at-rest scan's
            held.scanned_bytes = os.fstat(held.fd).st_size
        self._thread = threading.Thread(target=helper(self._loop), name="tdebench-capture", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> tuple[FileScan, ...]:
        """End the watch and return the transient scans (see the class); raises what the watch
        thread raised, so a broken capture fails the verdict rather than pass it silently."""
        self._stop.set()
        if self._wake:
            os.write(self._wake[1], b"!")
        if self._thread is not None:
            self._thread.join()
        try:
            if self._error is not None:
                raise RuntimeError(f"the transient capture failed: {self._error}") from self._error
            self._drain(0)
            self._look()
            for key in list(self._held):
                self._release(key, final=True)
            return tuple(sorted(self._done, key=lambda s: s.path))
        finally:
            self.close()

    def settle(self, timeout_s: float = 5.0) -> bool:
        """Have the watch handle every event queued so far and look once, then return: called
        after the engine stopped (every file it wrote is closed) and before the trial's files are
        evicted from the OS page cache, since a scan the watch made afterwards would read them
        back into it. True once the watch caught up; False if it is not running or took longer."""
        if self._thread is None or not self._thread.is_alive() or not self._wake:
            return False
        done = threading.Event()
        self._settling.append(done)
        os.write(self._wake[1], b"s")
        return done.wait(timeout_s)

    def close(self) -> None:
        """Release every descriptor (stop calls it; a trial that fails calls it too)."""
        self._stop.set()
        for held in self._held.values():
            os.close(held.fd)
        self._held.clear()
        self._inotify.close()
        for fd in self._wake:
            os.close(fd)
        self._wake = ()

    def _loop(self) -> None:
        started = time.thread_time()
        try:
            waiting = select.poll()
            waiting.register(self._inotify.fileno(), select.POLLIN)
            waiting.register(self._wake[0], select.POLLIN)
            next_tick = time.monotonic()
            while not self._stop.is_set():
                ready = {fd for fd, _ in waiting.poll(max(1, int((next_tick - time.monotonic()) * 1000)))}
                if self._wake[0] in ready:
                    os.read(self._wake[0], 64)
                settling = [self._settling.pop() for _ in range(len(self._settling))]
                self._drain(0)
                if settling or time.monotonic() >= next_tick:
                    self._look()
                    next_tick = time.monotonic() + self.every_s
                for done in settling:
                    done.set()
        except BaseException as exc:  # noqa: BLE001 - handed to stop(), which raises it
            self._error = exc
        finally:
            self.stats.cpu_s = time.thread_time() - started

    # -- inotify ----------------------------------------------------------------------------

    def _watch_tree(self, directory: Path) -> None:
        """Watch `directory` and every directory below it (not a mount inside: a decrypted view),
        and hold the files already there (written before the watch began)."""
        if (os.path.ismount(directory) and directory not in self.directories) or self._judged_apart(directory):
            return
        try:
            wd = self._inotify.add_watch(directory, _WATCH)
            entries = list(os.scandir(directory))
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return
        self._dirs[wd] = directory
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                self._watch_tree(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                self._hold(Path(entry.path))

    def _drain(self, timeout_ms: int) -> None:
        for event in self._inotify.read(timeout=timeout_ms):
            directory = self._dirs.get(event.wd)
            if directory is None or not event.name:
                continue
            path = directory / event.name
            if event.mask & flags.ISDIR:
                if event.mask & (flags.CREATE | flags.MOVED_TO):
                    self._watch_tree(path)
            elif event.mask & flags.CLOSE_WRITE:
                key = self._hold(path)
                if key is not None and self._held[key].rescan:
                    self._scan(key)
            elif event.mask & (flags.CREATE | flags.MODIFY | flags.MOVED_TO):
                self._hold(path)
            # a file deleted (or moved over) is released at the next look (`_look`): a process
            # may still hold it open, unlinked on open, and write on

    # -- holding and scanning ---------------------------------------------------------------

    def _hold(self, path: Path, opener: str | None = None, owner: tuple[int, int] | None = None
              ) -> tuple[int, int] | None:
        """Open `path` (or the /proc link `opener` to it) read-only and hold it; its key, or None
        when it is gone already, not a regular file, or the capture holds too many."""
        known = self._by_path.get(path)
        if known is not None and opener is None:
            return known
        try:
            fd = os.open(opener or path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            self.stats.not_held += 1
            return None
        info = os.fstat(fd)
        key = (info.st_dev, info.st_ino)
        if not stat.S_ISREG(info.st_mode) or key in self._held or len(self._held) >= MAX_HELD:
            os.close(fd)
            if stat.S_ISREG(info.st_mode) and key not in self._held:
                self.stats.not_held += 1
            return key if key in self._held else None
        self._held[key] = _Held(path=path, fd=fd, rescan=self.kind_of(self._relative(path)) in _RESCANNED, owner=owner)
        if opener is None:
            self._by_path[path] = key
        return key

    def _relative(self, path: Path) -> str:
        return os.path.relpath(path, self.root)

    def _judged_apart(self, path: Path) -> bool:
        """Whether `path` lies in a subdirectory of the root that the workload judges by itself
        (`apart`): its files are not the trial's database's."""
        if not self.apart or not path.is_relative_to(self.root):
            return False
        parts = path.relative_to(self.root).parts
        return bool(parts) and any(fnmatch.fnmatchcase(parts[0], pattern) for pattern in self.apart)

    def _scan(self, key: tuple[int, int]) -> FileScan:
        """Scan a held file as it is now, keep the scan if it found most, and return it."""
        held = self._held[key]
        found = verify.scan_file(Path(f"/proc/self/fd/{held.fd}"), self.canaries, self.root, self.signature,
                                 markers=self.markers, mapped=False)  # a lease would make the engine wait
        held.scanned_bytes = found.bytes
        self.stats.scans += 1
        self.stats.scanned_bytes += found.bytes
        found = replace(found, path=self._relative(held.path))
        held.keep(found)
        return found

    def _release(self, key: tuple[int, int], final: bool) -> None:
        """Stop holding a file. One that is gone (no link left) is scanned whole (unless its last
        scan saw it all) and kept as transient; one still there only keeps an earlier scan that
        found canaries or markers (the at-rest scan sees what it holds now)."""
        held = self._held[key]
        try:
            info = os.fstat(held.fd)
            gone = info.st_nlink == 0
            if final and gone and held.scanned_bytes != info.st_size:
                self._scan(key)
            best = held.best
            if best is not None and not gone and (best.hits or best.marker_hits):
                earlier = best  # what the file holds now is the at-rest scan's: keep only what it no longer holds
                now = self._scan(key)
                best = earlier if (earlier.hits, earlier.marker_hits) > (now.hits, now.marker_hits) else None
            if best is not None and (best.hits or best.marker_hits or (gone and best.bytes)):
                self._done.append(replace(best, transient=True))
        finally:
            del self._held[key]
            os.close(held.fd)
            if self._by_path.get(held.path) == key:
                del self._by_path[held.path]

    def _look(self) -> None:
        """What inotify cannot tell, looked at every `every_s`: the files the engine's processes
        hold open after unlinking them (`_sweep_processes`); then the held files whose last name
        is gone and that no process held at a sweep after the unlink (the look before may have
        listed the processes' files just before it), released (scanned whole); and the held logs
        that doubled since their last scan, scanned again."""
        self._sweep_processes()
        for key, held in list(self._held.items()):
            info = os.fstat(held.fd)
            if info.st_nlink == 0 and held.owner is None:
                held.unlinked_looks += 1
                if held.unlinked_looks > 1:  # a sweep after the unlink found no process holding it
                    self._release(key, final=True)
            elif held.rescan and info.st_size >= max(1, 2 * held.scanned_bytes):
                self._scan(key)

    # -- files unlinked on open, through /proc ----------------------------------------------

    def _sweep_processes(self) -> None:
        """Hold every file the engine's processes keep open after unlinking it, under the watched
        directories (one the capture already holds by its name is adopted: its owner is known
        now); release (scanning whole) the ones they have closed since."""
        processes = self.processes()
        pids = [os.getpid()] if processes is None else [p.pid for p in processes]
        open_now: set[tuple[int, int]] = set()
        own = {held.fd for held in self._held.values()}  # in this process, the capture's own are there too
        for pid in pids:
            for fd, target in _deleted_files(pid):
                if ((pid == os.getpid() and fd in own) or not any(target.is_relative_to(d) for d in self.directories)
                        or self._judged_apart(target)):
                    continue
                opener = f"/proc/{pid}/fd/{fd}"
                try:
                    info = os.stat(opener)
                except OSError:  # closed since the listing
                    continue
                key = (info.st_dev, info.st_ino)
                if key in self._held:
                    if self._held[key].owner is None:
                        self._held[key].owner = (pid, fd)
                elif self._hold(target, opener=opener, owner=(pid, fd)) is None:
                    continue
                open_now.add(key)
        for key, held in list(self._held.items()):
            if held.owner is not None and key not in open_now:
                self._release(key, final=True)


def _deleted_files(pid: int) -> list[tuple[int, Path]]:
    """(fd, the path it had) of every file process `pid` holds open after its unlink."""
    base = f"/proc/{pid}/fd"
    try:
        fds = os.listdir(base)
    except OSError:  # the process has ended
        return []
    found = []
    for name in fds:
        try:
            target = os.readlink(f"{base}/{name}")
        except OSError:
            continue
        if target.endswith(_DELETED) and target.startswith("/"):
            found.append((int(name), Path(target[:-len(_DELETED)])))
    return found
