"""Making a cold cache: the two ways tdebench empties the OS page cache before a measured test.

- `drop_all` writes every dirty page on the machine and drops the whole page cache (and the
  dentries and inodes), as `echo 3 > /proc/sys/vm/drop_caches` does. Root only. Afterwards
  everything is read from disk again: the database, but also the engine's binary and shared
  libraries, Python's modules and the driver, faulted in while the queries run.
- `evict_files` evicts only the pages of the files below one directory (the trial's
  workspace, where tdebench puts every file of the database): each is synced, then
  `posix_fadvise(POSIX_FADV_DONTNEED)`. The engine's code stays cached, as it is on a server
  that has run for a while; only the data is read from disk. No root needed.

`resident_pages` counts the pages of a tree the page cache still holds (mincore(2) on a
read-only mapping), so that eviction is checked, not assumed.
"""

from __future__ import annotations

import ctypes
import mmap
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["EVICTIONS", "drop_all", "empty", "evict_files", "resident_pages"]

EVICTIONS = ("files", "os")
"""A cold plan's `evict`: "files", only the database's files (the default: the engine's code
stays cached, no root needed, and one trial's eviction leaves the others' data alone, so cold
trials can run side by side), or "os", the whole page cache (root only)."""

_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.mmap.restype = ctypes.c_void_p
_LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_LIBC.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_LIBC.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
_MAP_FAILED = ctypes.c_void_p(-1).value


def empty(evict: str, root: Path) -> bool:
    """Empty the OS page cache as a plan's `evict` says, for the database whose files are all
    below `root` (its workspace); True only if it really was emptied."""
    return evict_files(root) if evict == "files" else drop_all()


def drop_all() -> bool:
    """Write dirty pages and drop the whole OS page cache; True only if the kernel accepted it."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as fh:
            fh.write("3\n")
    except OSError:
        return False
    return True


def _files(root: Path) -> Iterator[Path]:
    """The regular files below `root`, links not followed."""
    for directory, _, names in os.walk(root):
        for name in names:
            path = Path(directory, name)
            if path.is_file() and not path.is_symlink():
                yield path


def evict_files(root: Path) -> bool:
    """Sync each regular file below `root`, ask the kernel to drop its cached pages and check
    that none stayed; True only if every file was evicted so (pages a running process still
    maps, or a file that vanished meanwhile, make it False). One open per file does all three."""
    evicted = True
    for path in _files(root):
        try:
            with _opened(path) as fd:
                os.fdatasync(fd)  # DONTNEED drops only clean pages
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                evicted = _resident(fd) == 0 and evicted
        except OSError:
            evicted = False
    return evicted


def resident_pages(root: Path) -> int:
    """How many pages of the regular files below `root` are in the OS page cache (mincore(2)).
    The kernel answers for a file only to its owner, root or a writer; other files count 0."""
    resident = 0
    for path in _files(root):
        try:
            with _opened(path) as fd:
                resident += _resident(fd)
        except OSError:
            continue
    return resident


@contextmanager
def _opened(path: Path) -> Iterator[int]:
    """A read-only descriptor of `path` (a link is not followed), closed after the block."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        yield fd
    finally:
        os.close(fd)


def _resident(fd: int) -> int:
    """Pages of the open file `fd` in the page cache."""
    size = os.fstat(fd).st_size
    if size == 0:
        return 0
    address = _LIBC.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if address in (None, _MAP_FAILED):
        raise OSError(ctypes.get_errno(), "mmap")
    try:
        pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
        vector = (ctypes.c_ubyte * pages)()
        if _LIBC.mincore(ctypes.c_void_p(address), size, vector) != 0:
            raise OSError(ctypes.get_errno(), "mincore")
        return sum(byte & 1 for byte in vector)
    finally:
        _LIBC.munmap(ctypes.c_void_p(address), size)
