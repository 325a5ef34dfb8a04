"""The fs layer without its cipher (`fs-passthrough`: bindfs), for real: the engine runs in the
mount's view as under gocryptfs, what is on disk is its own plaintext files (its verdict is
`plaintext`, as the baseline's), every file is the server's user's and nobody else gets in,
and no mount or bindfs process outlives the database: on close, on a failure, and for
`tdebench clean` after a killed run."""

from __future__ import annotations

import ast
import stat
import subprocess
from pathlib import Path

import psutil
import pytest

from tdebench import runstate, verify
from tdebench.engines import get_engine
from tdebench.engines.base import PlaintextViewGone
from tdebench.engines.fs import PassthroughDatabase, mounted
from tdebench.engines.server import user_ids
from tdebench.results import TrialKey
from tdebench.workloads.base import write_canaries

CANARY = "TDEBENCH-CANARY-passthrough-0123456789"
MARKER = "TDEBENCH-MARKER-passthrough-0123456789"


def passthrough(engine: str, workspace: Path) -> PassthroughDatabase:
    chosen = get_engine(engine)
    database = chosen.provision(workspace, chosen.encryption("fs-passthrough"), None)
    assert isinstance(database, PassthroughDatabase)
    return database


def names(processes: list[psutil.Process] | None) -> list[str]:
    """The processes' names, skipping any that ended since they were listed (PostgreSQL's
    backends come and go)."""
    named = []
    for process in processes or ():
        try:
            named.append(process.name())
        except psutil.NoSuchProcess:
            continue
    return named


def hits(path: Path) -> int:
    return sum(scan.hits for scan in verify.scan([path], [CANARY], path))


def bindfs_serving(database: PassthroughDatabase) -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["name", "cmdline"])
            if p.info["name"] == "bindfs" and str(database.mount_point) in " ".join(p.info["cmdline"] or ())]


def test_an_embedded_engine_writes_plaintext_through_the_mount_and_close_unmounts(tmp_path: Path) -> None:
    database = passthrough("sqlite", tmp_path)
    try:
        database.create()
        conn = database.connect()
        write_canaries(database, conn, [CANARY], [MARKER])
        conn.close()
        view = database.plaintext_view()
        assert view == database.mount_point and mounted(view)
        assert names(database.engine_processes())[-1] == "bindfs"  # this process, then bindfs
        assert hits(view) > 0 and hits(database.source_dir) > 0  # the same files: no cipher between them
        conn = database.connect()  # left open on purpose: close() must still unmount
    finally:
        database.close()
    assert not mounted(database.mount_point) and not bindfs_serving(database)
    with pytest.raises(PlaintextViewGone, match="bindfs mount .* was gone before verification"):
        database.plaintext_view()
    assert database.files() and all(database.source_dir in p.parents for p in database.files())
    scans = verify.scan(database.files(), [CANARY], tmp_path)
    verdict = verify.judge(TrialKey("sqlite", "fs-passthrough", "tpch", 0.01, 1), "plaintext", scans, True)
    assert verdict.verdict == "plaintext" and verdict.as_expected  # what the runner expects of it, as of none
    # each file's kind is the engine's for its own name, below files/<engine>/; the layer's log is no engine's
    kinds = {database.file_kind(str(p.relative_to(tmp_path))) for p in database.files()}
    assert {"data"} <= kinds <= {"data", "log"}  # the database, its WAL if kept
    assert database.file_kind("files/sqlite/tmp/etilqs_0123") == "temp" and database.file_kind("bindfs.log") == "other"
    database.close()  # idempotent


def test_postgres_on_the_mount_owns_every_file_and_nobody_else_gets_in(tmp_path: Path) -> None:
    tmp_path.chmod(0o711)  # the server's user passes through to its workspace
    database = passthrough("postgres", tmp_path / "db")
    try:
        database.create()
        conn = database.connect()
        write_canaries(database, conn, [CANARY], [MARKER])
        conn.execute("CHECKPOINT")
        conn.close()
        uid, gid = user_ids("postgres")
        assert {"postgres", "bindfs"} <= set(names(database.engine_processes()))
        pgdata = database.source_dir / "postgres" / "pgdata"
        assert all(p.stat().st_uid == uid for p in pgdata.rglob("*"))  # bindfs gives each file its creator
        info = database.source_dir.stat()
        assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (uid, 0o700)
        done = subprocess.run(["python3", "-c", CONCURRENT_CREATES, str(database.inner.workspace / "pgdata" / "base")],
                              capture_output=True, text=True, user=uid, group=gid, extra_groups=[], timeout=120,
                              check=True)
        # no creation refused (gocryptfs 2.3's own mount refused hundreds: test_fs_layer.py). An rmdir
        # right after an unlink may find the directory not empty: libfuse 2 renames a file the kernel
        # has not released yet to .fuse_hidden* (hard_remove would unlink it at once, but then bindfs
        # fails a write to a file unlinked while open: MariaDB's temp files, "Temporary file write failure")
        count, refused = done.stdout.split(maxsplit=1)
        assert count == "0" or set(ast.literal_eval(refused)) == {"Directory not empty"}, done.stdout
        stranger = subprocess.run(["ls", str(database.mount_point)], capture_output=True, text=True,
                                  user="nobody", group="nogroup", extra_groups=[], check=False)
        assert stranger.returncode != 0 and "Permission denied" in stranger.stderr
        assert hits(database.plaintext_view()) > 0
    finally:
        database.close()
    assert not mounted(database.mount_point) and not bindfs_serving(database)
    assert hits(database.source_dir) > 0  # at rest in plaintext


CONCURRENT_CREATES = '''
import os, sys, threading
base, errors = sys.argv[1], []
def work(t):
    for i in range(100):
        d = os.path.join(base, f"t{t}_{i}.fileset")
        try:
            os.mkdir(d, 0o700)
            fd = os.open(os.path.join(d, "0.0"), os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
            os.write(fd, b"x" * 8192)
            os.close(fd)
            os.unlink(os.path.join(d, "0.0"))
            os.rmdir(d)
        except OSError as exc:
            errors.append(exc.strerror)
threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
[t.start() for t in threads]
[t.join() for t in threads]
print(len(errors), sorted(set(errors)))
'''


def test_an_exception_inside_create_leaves_no_mount(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    database = passthrough("duckdb", tmp_path)

    def broken_create() -> None:
        assert mounted(database.mount_point)
        raise RuntimeError("engine failed to create")

    monkeypatch.setattr(database.inner, "create", broken_create)
    with pytest.raises(RuntimeError, match="engine failed to create"):
        database.create()
    assert not mounted(database.mount_point) and not bindfs_serving(database)


def test_clean_unmounts_a_mount_a_killed_run_left(tmp_path: Path) -> None:
    """A run killed between mount and unmount leaves the view mounted: `tdebench clean` unmounts
    what is mounted below the dead run's root (runstate.unmount_below) before removing it."""
    root = tmp_path / "root"
    root.mkdir()
    database = passthrough("sqlite", root / "trial")
    database.create()
    try:
        served = bindfs_serving(database)
        assert mounted(database.mount_point) and len(served) == 1
        assert runstate.unmount_below(root) == [str(database.mount_point)]  # the database never closed
        assert not mounted(database.mount_point)
        served[0].wait(timeout=10)  # bindfs ends with its mount
    finally:
        database._daemon = None  # its process already ended with the mount
        if mounted(database.mount_point):
            database.close()
