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

A root is also written into a registry outside it (`registry()`: one file per root in the
user's state directory) *before* it is made, and taken out only *after* it is gone, each step
fsynced; the state file itself is the root's marker, written first and removed last
(`new_root`, `remove_root`). So a run killed at any moment — inside its own clean-up too, as
`timeout -k` or `docker stop` do it — leaves nothing `clean` cannot find: a root without its
marker is in the registry, a root missing from the registry (another user's registry, a
home that could not be written) has its marker. `clean` removes nothing that has neither.
`fault_point` lets the tests kill the process at each of these steps.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
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


def _fsync_dir(path: Path) -> None:
    """Make a directory's entries (a file made, renamed or removed in it) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


FAULT = "TDEBENCH_FAULT"
"""For tests only: `STEP` makes the process SIGKILL itself when it reaches `fault_point(STEP)`;
`STEP:SIGNAL` sends that signal instead (`STEP:INT`), `STEP:SIGNAL:SECONDS` sends it that long
after the step began (a signal *during* a phase); `STEP#N` fires at the step's Nth time (the
second trial's load: `trial-load#2`). Several, comma-separated, fire in turn
(`trial-load:TERM,trial-closing`: SIGTERM, then SIGKILL inside the clean-up it started); each
fires once."""

_reached: dict[str, int] = {}


def fault_point(step: str) -> None:
    """A named step of a run's life (`FAULT`): nothing happens unless a test asked for this one."""
    specs = os.environ.get(FAULT, "").split(",")
    if not any(s.split(":")[0].split("#")[0] == step for s in specs):
        return
    _reached[step] = _reached.get(step, 0) + 1
    names = {step, f"{step}#{_reached[step]}"}
    spec = next((s for s in specs if s.split(":")[0] in names), None)
    if spec is None:
        return
    specs.remove(spec)
    os.environ[FAULT] = ",".join(specs)
    name, _, delay = spec.partition(":")[2].partition(":")
    sig = signal.Signals[f"SIG{name or 'KILL'}"]
    if not delay:
        _send(sig)
        return
    timer = threading.Timer(float(delay), _send, (sig,))
    timer.daemon = True
    timer.start()


def _send(sig: signal.Signals) -> None:
    """The fault's signal to this process, its time said first (a test measures how fast the run ends)."""
    print(f"tdebench fault: {sig.name} at monotonic {time.monotonic():.3f}", file=sys.stderr, flush=True)
    os.kill(os.getpid(), sig)


_UMASK = threading.Lock()


def make_dir(path: Path, mode: int) -> None:
    """`path` made with exactly `mode` from its first moment, whatever the umask: never wider
    for an instant (mkdir then chmod would show the umask's 0755 first), never narrowed by a
    umask of 077 into a directory a server's user cannot pass. FileExistsError if it exists."""
    with _UMASK:  # the umask is the process's: one directory at a time
        before = os.umask(0o777 & ~mode)
        try:
            os.mkdir(path, mode)
        finally:
            os.umask(before)


def registry() -> Path | None:
    """Where this user's workspace roots are written down (None: no home to keep it in)."""
    try:
        base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    except RuntimeError:
        return None
    return base / "tdebench" / "workspaces"


def _register_root(root: Path, run: dict) -> None:
    """Write `root` into the registry, durably, before it is made. A registry that cannot be
    written (no home) leaves the marker alone to find it."""
    directory = registry()
    if directory is None:
        return
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        part = directory / f".{root.name}.{os.getpid()}.part"
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, json.dumps({**run, "root": str(root)}).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(part, directory / root.name)
        _fsync_dir(directory)
    except OSError:
        return


def _unregister_root(root: Path) -> None:
    directory = registry()
    if directory is None:
        return
    try:
        (directory / root.name).unlink()
        _fsync_dir(directory)
    except OSError:
        return


def _registered(parent: Path) -> dict[str, dict]:
    """The registry's runs of roots below `parent`, by root name. A half-written entry of a
    writer that is gone is removed (its root was never made), and so is the entry of a root
    elsewhere whose run and root are both gone."""
    directory = registry()
    if directory is None or not directory.is_dir():
        return {}
    found = {}
    for entry in directory.iterdir():
        if entry.name.endswith(".part"):
            writer = entry.name.rsplit(".", 2)[-2]
            if writer.isdigit() and not psutil.pid_exists(int(writer)):
                entry.unlink(missing_ok=True)
            continue
        try:
            run = json.loads(entry.read_text())
            root = Path(run["root"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if root.parent == parent.resolve() and root.name == entry.name:
            found[entry.name] = run
        elif not os.path.lexists(root) and _alive(run) is None:  # elsewhere, and gone with its run
            entry.unlink(missing_ok=True)
    return found


def new_root(parent: Path, mode: int = 0o711) -> Path:
    """A new workspace root below `parent` for this run, with `mode` (0711: servers running as
    their own user must reach their workspaces in it): registered first, then made, then its
    marker (the state file, with this run) written before anything else goes in."""
    parent = parent.resolve()
    run = {"kind": "run", "pid": os.getpid(), "started": _started(os.getpid())}
    while True:
        root = parent / f"{ROOT_PREFIX}{secrets.token_hex(6)}"
        _register_root(root, run)
        fault_point("root-registered")
        try:
            make_dir(root, mode)
        except FileExistsError:
            _unregister_root(root)
            continue
        except BaseException:
            _unregister_root(root)
            raise
        fault_point("root-made")
        _append(root / STATE, run)
        _fsync_dir(root)
        return root


def remove_root(root: Path, tries: int = 5) -> bool:
    """Remove a workspace root in the order that keeps it findable: what is still mounted below
    it unmounted first (a mount an interrupt left between its mount and its unmount: never
    emptied through), its contents, then its marker, then the directory, then its registry
    entry (each step durable). A process that is still exiting may add a file meanwhile, so the
    contents are tried again briefly; what cannot be removed keeps its marker and entry for
    `clean`. True if the root is gone."""
    fault_point("root-removing")
    unmount_below(root)
    if mounts_below(root):
        return False
    for _ in range(tries):
        left = [child for child in _children(root) if child.name != STATE]
        for child in left:
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)
            fault_point("root-emptying")
        if not [child for child in _children(root) if child.name != STATE]:
            break
        time.sleep(0.2)
    else:
        return False
    if root.exists():
        (root / STATE).unlink(missing_ok=True)
        _fsync_dir(root)
        fault_point("marker-removed")
        try:
            root.rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            return False
        _fsync_dir(root.parent)
        fault_point("root-removed")
    _unregister_root(root)
    return True


def _children(root: Path) -> list[Path]:
    try:
        return list(root.iterdir())
    except FileNotFoundError:
        return []


@contextmanager
def recording(root: Path) -> Iterator[None]:
    """While inside, every process `register`ed is written to `root`'s state file (which
    `new_root` starts with the run; any other root gets its run line here)."""
    global _state
    path = root / STATE
    if not path.exists():
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


def new_dir(parent: Path, prefix: str) -> Path:
    """A new 0700 directory `prefix`-random below `parent` that a run needs outside its root (a
    server's socket directory where the workspace's path is too long for a socket): written
    into the state file before it is made, so that `clean` removes it after a kill."""
    while True:
        path = parent.resolve() / f"{prefix}{secrets.token_hex(6)}"
        if _state is not None:
            _append(_state, {"kind": "dir", "path": str(path)})
        try:
            make_dir(path, 0o700)
        except FileExistsError:
            continue
        return path


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
    """The lines of `root`'s state file (none if it has none: a root the registry found)."""
    try:
        text = (root / STATE).read_text(errors="replace")
    except FileNotFoundError:
        return []
    entries = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:  # a torn last line
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def dead_runs(parent: Path) -> list[Path]:
    """The workspace roots below `parent` of runs that no longer exist: the registry's (a root
    that is gone already only leaves the registry) and those holding tdebench's marker."""
    registered = _registered(parent)
    dead = []
    for name in sorted(set(registered) | {root.name for root in parent.glob(f"{ROOT_PREFIX}*")}):
        root = parent / name
        run = registered.get(name) or _run_of(root)
        if run is None or _alive(run) is not None:
            continue
        if root.is_symlink() or not (root.is_dir() or (root / STATE).is_file()):
            _unregister_root(root)  # gone (or replaced by a link, which is not followed)
            continue
        dead.append(root)
    return dead


def _run_of(root: Path) -> dict | None:
    """The run a root's marker names, if it has one."""
    if root.is_symlink() or not (root / STATE).is_file():
        return None
    runs = [e for e in _entries(root) if e.get("kind") == "run"]
    return runs[0] if runs else None


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


def no_space_left(path: Path) -> str:
    """"no space left on <mount> (<n> MiB free)" for the file system holding `path`: the one line
    a trial, or a server's start, that filled it up ends with."""
    mount, free = file_system_of(path)
    return f"no space left on {mount} ({f'{free / 2**20:,.1f} MiB free' if free is not None else 'free space unknown'})"


def mounts_below(root: Path) -> list[str]:
    """Mount points at or below `root`, deepest first."""
    prefix = str(root.resolve())
    with open("/proc/self/mounts") as mounts:
        points = [line.split()[1].replace("\\040", " ") for line in mounts]
    found = [p for p in points if p == prefix or p.startswith(prefix + "/")]
    return sorted(found, key=len, reverse=True)


def unmount_below(root: Path) -> list[str]:
    """Unmount every mount point at or below `root` (each a run's gocryptfs view: every one a
    run records lies below its root), deepest first, lazily if nothing else works; the points
    unmounted."""
    unmounted = []
    for point in mounts_below(root):
        for argv in (["fusermount3", "-u", point], ["umount", point], ["fusermount3", "-u", "-z", point]):
            subprocess.run(argv, capture_output=True, check=False)
            if point not in mounts_below(root):
                unmounted.append(point)
                break
            time.sleep(0.2)
    return unmounted


@dataclass
class Cleaned:
    """What `clean` did for one dead run."""

    root: Path
    run_pid: int | None
    stopped: list[str] = field(default_factory=list)  # "postgres (pid 123)"
    unmounted: list[str] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)  # its directories outside the root (new_dir)
    removed: bool = False
    problem: str = ""

    def __str__(self) -> str:
        done = [f"stopped {', '.join(self.stopped)}" if self.stopped else "",
                f"unmounted {', '.join(self.unmounted)}" if self.unmounted else "",
                f"removed {', '.join(self.dirs)}" if self.dirs else "",
                f"removed {self.root}" if self.removed else f"could not remove {self.root}: {self.problem}"]
        return f"cleaned up after a killed run (pid {self.run_pid}): " + "; ".join(d for d in done if d)


def clean(root: Path, grace_s: float = 10.0) -> Cleaned:
    """Stop the dead run's processes, unmount what is mounted below its root, then remove the
    root — only if nothing is mounted there any more, so a live decrypted view is never
    emptied through its mount."""
    entries = _entries(root)
    run = _registered(root.parent).get(root.name) or _run_of(root) or {}
    cleaned = Cleaned(root, run.get("pid"))
    living = [(e, p) for e in entries if e.get("kind") == "process" and (p := _alive(e)) is not None]
    for entry, process in living:
        _signal(process, signal.SIGTERM)
    _, still = psutil.wait_procs([p for _, p in living], timeout=grace_s)
    for process in still:
        _signal(process, signal.SIGKILL)
    psutil.wait_procs(still, timeout=5)
    cleaned.stopped = [f"{e.get('what', 'process')} (pid {e['pid']})" for e, _ in living]
    cleaned.unmounted = unmount_below(root)
    for entry in entries:
        path = Path(str(entry.get("path", ""))) if entry.get("kind") == "dir" else None
        if path is not None and path.name.startswith(ROOT_PREFIX) and path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
            cleaned.dirs.append(str(path))
    left = mounts_below(root)
    if left:
        cleaned.problem = f"still mounted: {', '.join(left)}"
        return cleaned
    cleaned.removed = remove_root(root)
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
