"""What a run has started, written down as it starts, so that a killed run can be cleaned up.

A run's workspace root (`tdebench-…` in the temporary directory or `--work-dir`) holds
`run-state.jsonl`: first the run itself (pid and start time), then one line for every server,
setup tool and gocryptfs it starts (pid, start time, what). A run that ends normally stops
them all and removes the root with the file. A run that is killed (SIGKILL, the OOM killer)
cannot: its servers get SIGTERM from the kernel as their parent dies (`PARENT_DEATH`, set by
`setpriv` before the server's own program starts), and what still remains — a server that
ignored it, a gocryptfs mount of a decrypted database (`register_mount`), key files, the
workspace — is found
by the next `tdebench run` or `tdebench clean` through this file: `dead_runs` lists the roots
whose run no longer exists, `clean` stops the processes the file names (only if the pid still
has the recorded start time: never a process by name, never a recycled pid), unmounts what
is mounted below the root and removes the root.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil

STATE = "run-state.jsonl"
ROOT_PREFIX = "tdebench-"
# a server's program starts under setpriv, which asks the kernel to send SIGTERM to it when the
# thread that started it dies: tdebench starts servers from its main thread only
PARENT_DEATH = ["setpriv", "--pdeathsig", "TERM", "--"]

_state: Path | None = None  # the state file of the run in this process, if one is recording


def _started(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def _append(path: Path, entry: dict) -> None:
    with path.open("a") as fh:
        fh.write(json.dumps(entry, sort_keys=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


@contextmanager
def recording(root: Path) -> Iterator[None]:
    """While inside, every process `register`ed is written to `root`'s state file."""
    global _state
    path = root / STATE
    _append(path, {"kind": "run", "pid": os.getpid(), "started": _started(os.getpid())})
    _state = path
    try:
        yield
    finally:
        _state = None


def register(pid: int, what: str) -> None:
    """Write down a process the run has just started (no-op outside a recording run)."""
    if _state is not None:
        _append(_state, {"kind": "process", "pid": pid, "started": _started(pid), "what": what})


def register_mount(path: Path) -> None:
    """Write down a mount point the run has just mounted (no-op outside a recording run)."""
    if _state is not None:
        _append(_state, {"kind": "mount", "path": str(path)})


def _alive(entry: dict) -> psutil.Process | None:
    """The process an entry names, if it is still that process (same pid and start time)."""
    started = entry.get("started")
    if not isinstance(entry.get("pid"), int) or started is None:
        return None
    try:
        process = psutil.Process(entry["pid"])
        if abs(process.create_time() - started) >= 0.01 or process.status() == psutil.STATUS_ZOMBIE:
            return None  # another process with a recycled pid, or one that has exited
        return process
    except psutil.Error:
        return None


def _entries(root: Path) -> list[dict]:
    entries = []
    for line in (root / STATE).read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:  # a torn last line
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def dead_runs(parent: Path) -> list[Path]:
    """The workspace roots below `parent` of runs that no longer exist."""
    dead = []
    for root in sorted(parent.glob(f"{ROOT_PREFIX}*")):
        if not (root / STATE).is_file() or root.is_symlink():
            continue
        runs = [e for e in _entries(root) if e.get("kind") == "run"]
        if runs and _alive(runs[0]) is None:
            dead.append(root)
    return dead


def file_system_of(path: Path) -> tuple[Path, int | None]:
    """The mount point holding `path` (a directory, or a file's directory) and the bytes free
    there (None if the file system cannot say): what a "no space left" message names."""
    mount = path if path.is_dir() else path.parent
    while not os.path.ismount(mount) and mount != mount.parent:
        mount = mount.parent
    try:
        return mount, shutil.disk_usage(mount).free
    except OSError:
        return mount, None


def mounts_below(root: Path) -> list[str]:
    """Mount points at or below `root`, deepest first."""
    prefix = str(root.resolve())
    with open("/proc/self/mounts") as mounts:
        points = [line.split()[1].replace("\\040", " ") for line in mounts]
    found = [p for p in points if p == prefix or p.startswith(prefix + "/")]
    return sorted(found, key=len, reverse=True)


@dataclass
class Cleaned:
    """What `clean` did for one dead run."""

    root: Path
    run_pid: int | None
    stopped: list[str] = field(default_factory=list)  # "postgres (pid 123)"
    unmounted: list[str] = field(default_factory=list)
    removed: bool = False
    problem: str = ""

    def __str__(self) -> str:
        done = [f"stopped {', '.join(self.stopped)}" if self.stopped else "",
                f"unmounted {', '.join(self.unmounted)}" if self.unmounted else "",
                f"removed {self.root}" if self.removed else f"could not remove {self.root}: {self.problem}"]
        return f"cleaned up after a killed run (pid {self.run_pid}): " + "; ".join(d for d in done if d)


def clean(root: Path, grace_s: float = 10.0) -> Cleaned:
    """Stop the dead run's processes, unmount what is mounted below its root, then remove the
    root — only if nothing is mounted there any more, so a live decrypted view is never
    emptied through its mount."""
    entries = _entries(root)
    runs = [e for e in entries if e.get("kind") == "run"]
    cleaned = Cleaned(root, runs[0].get("pid") if runs else None)
    living = [(e, p) for e in entries if e.get("kind") == "process" and (p := _alive(e)) is not None]
    for entry, process in living:
        _signal(process, signal.SIGTERM)
    _, still = psutil.wait_procs([p for _, p in living], timeout=grace_s)
    for process in still:
        _signal(process, signal.SIGKILL)
    psutil.wait_procs(still, timeout=5)
    cleaned.stopped = [f"{e.get('what', 'process')} (pid {e['pid']})" for e, _ in living]
    for point in mounts_below(root):  # every mount point the run recorded lies below its root
        for argv in (["fusermount3", "-u", point], ["umount", point], ["fusermount3", "-u", "-z", point]):
            subprocess.run(argv, capture_output=True, check=False)
            if point not in mounts_below(root):
                cleaned.unmounted.append(point)
                break
            time.sleep(0.2)
    left = mounts_below(root)
    if left:
        cleaned.problem = f"still mounted: {', '.join(left)}"
        return cleaned
    shutil.rmtree(root, ignore_errors=True)
    cleaned.removed = not root.exists()
    if not cleaned.removed:
        cleaned.problem = "some files could not be removed"
    return cleaned


def _signal(process: psutil.Process, sig: int) -> None:
    """`sig` to the process's group when it leads one (servers run in a session of their own), else to it."""
    try:
        if os.getpgid(process.pid) == process.pid:
            os.killpg(process.pid, sig)
        else:
            process.send_signal(sig)
    except (ProcessLookupError, psutil.Error):
        pass


def clean_dead_runs(parent: Path) -> list[Cleaned]:
    return [clean(root) for root in dead_runs(parent)]
