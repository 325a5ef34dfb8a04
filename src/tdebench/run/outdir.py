"""The `--out` directory of `tdebench run`: never destroy a file tdebench did not write.

- A directory that is not empty and holds no tdebench run is refused, `--force` or not.
- A run directory is replaced only with `--force`, which removes the files its manifest lists
  (store.MANIFEST: the raw files and the report's) and nothing else; a directory they leave
  empty (plots/) goes too. For a run written before manifests, the files tdebench is known to
  write there stand in for it: the raw files, the report's top-level files and the plots that
  its report.md shows.
- A lock (`.tdebench.lock`, an flock held for the whole run) keeps a second run out of a
  directory that a run is writing: it is refused with the other run's pid. The kernel drops
  the lock when its process dies, so a killed run never leaves the directory locked.
"""

from __future__ import annotations

import fcntl
import os
import re
from pathlib import Path
from typing import IO

from tdebench.errors import InputError
from tdebench.store import RAW_FILES, manifest

LOCK = ".tdebench.lock"
_PLOT_LINK = re.compile(r"\]\((plots/[^)\s]+\.png)\)")


class OutDirError(InputError):
    """An --out directory tdebench may not use; the message says why and what to do."""


def written_files(directory: Path) -> list[str] | None:
    """What tdebench wrote into `directory` (relative paths), or None if it holds no run."""
    listed = manifest(directory)
    if listed is not None:
        return listed
    if not all((directory / name).is_file() for name in RAW_FILES):
        return None
    # imported here, for a run from before manifests only: the report's modules bring in matplotlib
    # and SciPy, which `tdebench run` otherwise needs only once its trials have ended
    from tdebench.report import DERIVED

    files = [name for name in (*RAW_FILES, *DERIVED) if (directory / name).is_file()]
    report = directory / "report.md"
    if report.is_file():
        files += sorted(set(_PLOT_LINK.findall(report.read_text(errors="replace"))))
    return files


def remove_written(directory: Path, files: list[str]) -> None:
    """Remove `files` (relative to `directory`), then the directories they leave empty. A name
    that leads out of `directory` (.., a symlinked directory) or to a directory is skipped."""
    root = directory.resolve()
    emptied = set()
    for name in files:
        path = directory / name
        if Path(name).is_absolute() or not path.parent.resolve().is_relative_to(root):
            continue
        if path.is_symlink() or path.is_file():
            path.unlink()
            if path.parent.resolve() != root:
                emptied.add(path.parent)
    for parent in sorted(emptied, key=lambda p: len(p.parts), reverse=True):
        try:
            parent.rmdir()
        except OSError:  # holds files tdebench did not write: they stay
            pass


def lock(directory: Path, option: str = "--out") -> IO[str]:
    """Take the directory's run lock for as long as the returned file stays open (close it with
    `unlock`); OutDirError naming the other run's pid if a run holds it (`option`: how the
    command line named the directory, "--out" or "--resume")."""
    handle = open(directory / LOCK, "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "unknown"
        handle.close()
        other = " or choose another directory" if option == "--out" else ""
        raise OutDirError(f"{option} {directory} is in use by another tdebench run (pid {holder}); wait for it "
                          f"to finish{other}") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


def unlock(directory: Path, handle: IO[str]) -> None:
    (directory / LOCK).unlink(missing_ok=True)
    handle.close()


def prepare(directory: Path, force: bool) -> IO[str]:
    """Make `directory` ready for a new run and lock it; returns the lock (see `unlock`).
    OutDirError when it may not be used."""
    if directory.exists() and not directory.is_dir():
        raise OutDirError(f"--out {directory} exists and is not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutDirError(f"--out {directory} is not writable: {exc.strerror}") from None
    files = written_files(directory)
    others = [entry.name for entry in directory.iterdir() if entry.name != LOCK]
    if files is None and others:
        shown = ", ".join(sorted(others)[:3]) + (", …" if len(others) > 3 else "")
        raise OutDirError(f"--out {directory} is not empty ({shown}) and holds no tdebench run; choose an "
                          "empty or new directory (--force replaces only a tdebench run)")
    try:
        handle = lock(directory)
    except PermissionError as exc:
        raise OutDirError(f"--out {directory} is not writable: {exc.strerror}") from None
    if files is not None:
        if not force:
            unlock(directory, handle)
            raise OutDirError(f"--out {directory} already holds a run; choose another directory or pass "
                              "--force to replace it (only the files that run wrote are removed)")
        remove_written(directory, files)
    return handle

