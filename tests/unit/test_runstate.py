"""Recovery from a killed run (runstate.py): what a run starts is written down, and a dead
run's processes are stopped by pid *and* start time, never a process that merely reuses a pid."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import psutil
import pytest

from fake_engine import FakeEngine, run_fake
from tdebench import runstate
from tdebench.engines.base import Database, Encryption
from tdebench.keys import Secret


def dead_pid() -> tuple[int, float]:
    """The pid and start time of a process that has exited."""
    process = subprocess.Popen(["true"])
    started = psutil.Process(process.pid).create_time()
    process.wait()
    return process.pid, started


def state(root: Path, *entries: dict) -> Path:
    root.mkdir()
    (root / runstate.STATE).write_text("".join(json.dumps(e) + "\n" for e in entries))
    return root


def test_a_recording_run_writes_itself_and_what_it_starts(tmp_path: Path) -> None:
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        runstate.register(sleeper.pid, "outside a run")  # no run recording: nothing written
        with runstate.recording(tmp_path):
            runstate.register(sleeper.pid, "sleep")
            runstate.register_mount(tmp_path / "plain")
        runstate.register(sleeper.pid, "after the run")
        runstate.register_mount(tmp_path / "after")
        lines = [json.loads(line) for line in (tmp_path / runstate.STATE).read_text().splitlines()]
        assert [e["kind"] for e in lines] == ["run", "process", "mount"]
        assert lines[2] == {"kind": "mount", "path": str(tmp_path / "plain")}
        assert lines[0]["pid"] == os.getpid() and lines[1] == {
            "kind": "process", "pid": sleeper.pid, "what": "sleep",
            "started": psutil.Process(sleeper.pid).create_time()}
        assert runstate.dead_runs(tmp_path.parent) == []  # this run is alive
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_dead_runs_processes_are_stopped_and_its_root_removed(tmp_path: Path) -> None:
    pid, started = dead_pid()
    server = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        root = state(tmp_path / "tdebench-dead", {"kind": "run", "pid": pid, "started": started},
                     {"kind": "process", "pid": server.pid, "what": "sleep",
                      "started": psutil.Process(server.pid).create_time()})
        (root / "key.pem").write_text("secret")
        (tmp_path / "tdebench-unrelated").mkdir()  # no state file: not tdebench's to judge
        assert runstate.dead_runs(tmp_path) == [root]
        [cleaned] = runstate.clean_dead_runs(tmp_path)
        assert server.wait(timeout=15) is not None
        assert cleaned.removed and not root.exists() and (tmp_path / "tdebench-unrelated").is_dir()
        assert str(cleaned) == (f"cleaned up after a killed run (pid {pid}): stopped sleep (pid {server.pid}); "
                                f"removed {root}")
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_a_recycled_pid_is_never_signalled(tmp_path: Path) -> None:
    pid, started = dead_pid()
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        state(tmp_path / "tdebench-dead", {"kind": "run", "pid": pid, "started": started},
              {"kind": "process", "pid": bystander.pid, "what": "postgres",
               "started": started - 60})  # another start time
        [cleaned] = runstate.clean_dead_runs(tmp_path)
        assert cleaned.stopped == [] and cleaned.removed
        assert bystander.poll() is None  # the process now holding that pid lives on
    finally:
        bystander.kill()
        bystander.wait()


def test_a_torn_state_line_is_skipped(tmp_path: Path) -> None:
    pid, started = dead_pid()
    root = state(tmp_path / "tdebench-torn", {"kind": "run", "pid": pid, "started": started})
    with (root / runstate.STATE).open("a") as fh:
        fh.write('{"kind": "process", "pid": 12')
    assert runstate.dead_runs(tmp_path) == [root]
    assert runstate.clean(root).removed


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o000])
def test_workspace_directories_have_their_final_mode_from_the_start(tmp_path: Path, umask: int) -> None:
    """Trial directories used to be 0755 for a moment before they were narrowed
    (and a umask of 077 would make a root the servers' users cannot pass)."""
    before = os.umask(umask)
    try:
        seen: dict[str, int] = {}

        class Recording(FakeEngine):
            def provision_native(self, workspace: Path, encryption: Encryption, key: Secret | None) -> Database:
                seen.setdefault("workspace", stat.S_IMODE(workspace.stat().st_mode))
                seen.setdefault("root", stat.S_IMODE(workspace.parent.stat().st_mode))
                return super().provision_native(workspace, encryption, key)

        run_fake(tmp_path, Recording, tmp_path)
        assert os.umask(umask) == umask  # the run left the process's umask as it was
    finally:
        os.umask(before)
    assert seen == {"workspace": 0o711, "root": 0o711}


def test_registry_entries_of_roots_gone_with_their_runs_are_dropped(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    pid, started = dead_pid()
    registry = tmp_path / "state" / "tdebench" / "workspaces"
    registry.mkdir(parents=True)
    for name, alive in (("tdebench-gone", False), ("tdebench-starting", True)):
        run = {"kind": "run", "pid": os.getpid(), "started": psutil.Process().create_time()} if alive else \
            {"kind": "run", "pid": pid, "started": started}
        (registry / name).write_text(json.dumps({**run, "root": str(tmp_path / "elsewhere" / name)}))
    (tmp_path / "here").mkdir()
    assert runstate.clean_dead_runs(tmp_path / "here") == []
    assert [p.name for p in registry.iterdir()] == ["tdebench-starting"]  # a live run's, about to make its root


def test_a_directory_a_run_made_outside_its_root_is_removed_with_it(tmp_path: Path) -> None:
    """A MariaDB socket directory in /tmp (the workspace's path too long for a socket) was left
    by a killed run where clean did not look: it is written down before it is made."""
    pid, started = dead_pid()
    root = state(tmp_path / "tdebench-dead", {"kind": "run", "pid": pid, "started": started})
    with runstate.recording(root):
        socket_dir = runstate.new_dir(tmp_path, "tdebench-mariadb-")
    assert stat.S_IMODE(socket_dir.stat().st_mode) == 0o700
    (socket_dir / "mysqld.sock").write_text("")
    [cleaned] = runstate.clean_dead_runs(tmp_path)
    assert cleaned.removed and cleaned.dirs == [str(socket_dir)] and not socket_dir.exists()
    assert list(tmp_path.iterdir()) == []
