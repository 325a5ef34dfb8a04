"""A run killed at any step of its workspace's life — its own clean-up included, as `timeout -k`
or `docker stop` kill it — leaves nothing `clean` cannot find.

The run is a forked copy of this process running the runner with the fake engine, whose
"server" is a `sleep` in a session of its own and whose workspace holds a key file;
`runstate.FAULT` makes it SIGKILL itself at the named step, not a timer racing it. Then the
clean must leave no workspace, no key file, no registry entry and no process. (Killed with
real servers and a mount: tests/integration/test_interrupt.py.)"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from fake_engine import FakeDatabase, FakeEngine, run_fake
from tdebench import runstate
from tdebench.engines.base import Database, Encryption
from tdebench.keys import Secret


class ServedDatabase(FakeDatabase):
    """The fake database with what a server leaves: a key file and a process of its own."""

    server: subprocess.Popen | None = None

    def create(self) -> None:
        super().create()
        (self.workspace / "keys.txt").write_text("1;" + "ab" * 32)
        self.server = subprocess.Popen(["sleep", "300"], start_new_session=True)
        runstate.register(self.server.pid, "fake-server")
        with open(self.workspace.parents[2] / "pids", "a") as pids:
            pids.write(f"{self.server.pid}\n")

    def close(self) -> None:
        super().close()
        if self.server is not None and self.server.poll() is None:
            self.server.kill()
            self.server.wait()


class ServedEngine(FakeEngine):
    def provision_native(self, workspace: Path, encryption: Encryption, key: Secret | None) -> Database:
        return ServedDatabase(workspace=workspace, encryption=encryption, key=key)


def killed(work: Callable[[], object], step: str) -> None:
    """Do `work` in a forked copy of this process that SIGKILLs itself at `step`."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.environ[runstate.FAULT] = step
            work()
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, f"not killed at {step}"


def run_served(tmp_path: Path) -> None:
    run_fake(tmp_path, ServedEngine, tmp_path / "work")


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    (tmp_path / "work").mkdir()
    return tmp_path / "work"


def assert_nothing_left(tmp_path: Path) -> None:
    assert list((tmp_path / "work").iterdir()) == [], "a workspace (or its key file) outlived clean"
    registry = tmp_path / "state" / "tdebench" / "workspaces"
    assert not registry.exists() or list(registry.iterdir()) == []
    pids = (tmp_path / "pids").read_text().split() if (tmp_path / "pids").exists() else []
    for pid in map(int, pids):
        try:
            assert psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, f"the fake server {pid} outlived clean"
        except psutil.NoSuchProcess:
            pass


STEPS = ["root-registered", "root-made", "trial-closing", "trial-removing", "root-removing", "marker-removed",
         "root-removed"]


@pytest.mark.parametrize("step", STEPS)
def test_a_run_killed_at_any_step_leaves_nothing_clean_cannot_find(tmp_path: Path, work: Path, step: str) -> None:
    killed(lambda: run_served(tmp_path), step)
    cleaned = runstate.clean_dead_runs(work)
    assert all(c.removed for c in cleaned)
    assert_nothing_left(tmp_path)
    assert runstate.clean_dead_runs(work) == []


def test_a_clean_killed_in_its_turn_is_finished_by_the_next(tmp_path: Path, work: Path) -> None:
    killed(lambda: run_served(tmp_path), "trial-closing")
    [root] = list(work.iterdir())
    assert (tmp_path / "pids").exists() and any(root.rglob("keys.txt"))
    killed(lambda: runstate.clean_dead_runs(work), "root-emptying")
    [cleaned] = runstate.clean_dead_runs(work)
    assert cleaned.removed
    assert_nothing_left(tmp_path)


def test_without_the_registry_the_marker_finds_the_workspace(tmp_path: Path, work: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    killed(lambda: run_served(tmp_path), "trial-closing")
    unrelated = work / "tdebench-not-ours"  # no marker, no registry entry: never touched
    unrelated.mkdir()
    (unrelated / "data").write_text("a user's file")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "another-home"))
    [cleaned] = runstate.clean_dead_runs(work)
    assert cleaned.removed and cleaned.stopped == [f"fake-server (pid {(tmp_path / 'pids').read_text().split()[-1]})"]
    assert [p.name for p in work.iterdir()] == [unrelated.name] and (unrelated / "data").is_file()
