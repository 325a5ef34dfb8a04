"""gocryptfs mounts only the server's user can enter, and an fs verdict that needs its positive
control: real trials through the Runner (a tiny plan, real engines
and real gocryptfs mounts) probed by another local user (`nobody`) while they run, and a mount
that vanishes mid-trial."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

from tdebench.engines.base import Connection, Database
from tdebench.engines.fs import GocryptfsDatabase
from tdebench.engines.server import user_ids
from tdebench.plan import EngineChoice, Plan, WorkloadSpec
from tdebench.run.runner import Runner, RunSummary
from tdebench.results import RunData
from tdebench.store import ResultStore, read_run
from tdebench.workloads.base import RunContext, Workload, WrongAnswer
from workspaces import as_hostile_user, server_reachable_dir

ENCRYPTION = "fs-aes-256-gcm"
ROWS = 100


class Probe(Workload):
    """A tiny real workload: one table; its test calls `during(database)` while the trial runs
    (the test's probe, or an unmount), then asks the engine a question it must still answer."""

    name = "probe"
    tests = ("probe",)
    default_scale = scale_min = scale_max = 1.0
    max_streams = 1

    def __init__(self, during: Callable[[Database], None]) -> None:
        self.during = during

    def prepare(self, scale: float, data_dir: Path, seed: int) -> None:
        pass

    def load(self, ctx: RunContext, conn: Connection) -> None:
        with ctx.recorder.measure("load", "total", process=False):
            conn.execute("CREATE TABLE probe (id INTEGER PRIMARY KEY, label VARCHAR(32) NOT NULL)")
            conn.executemany("INSERT INTO probe (id, label) VALUES (?, ?)",
                             [(i, f"row-{i}") for i in range(1, ROWS + 1)])

    def run(self, test: str, ctx: RunContext, conn: Connection, *, warmup: bool) -> None:
        self.during(ctx.database)
        with ctx.recorder.measure(test, "count", warmup=warmup, process=False) as step:
            ((count, total),) = conn.execute("SELECT COUNT(*), SUM(id) FROM probe")
            step.answer = "ok" if (int(count), int(total)) == (ROWS, ROWS * (ROWS + 1) // 2) else "failed"
        if step.answer != "ok":
            raise WrongAnswer(f"probe: {count} rows, ids summing to {total}")


def run_trial(engine: str, work: Path, during: Callable[[Database], None]) -> tuple[RunSummary, RunData]:
    """One fs trial of `engine` through the Runner, its workspace below `work`."""
    plan = Plan(name="private-mounts", repetitions=1, warmups=0, cache="warm", order="sequential", seed=1,
                engines=(EngineChoice(engine, (ENCRYPTION,)),),
                workloads=(WorkloadSpec("probe", (1.0,), ("probe",), 1),), text="name = 'private-mounts'\n")
    out = work / "out"
    store = ResultStore(out)
    store.start(plan.text, {})
    workload = Probe(during)
    summary = Runner(plan=plan, store=store, data_dir=work / "data", workload_factory=lambda name: workload,
                     workspace_parent=work).run()
    return summary, read_run(out)


def mount_options(path: Path) -> list[str]:
    with open("/proc/mounts") as mounts:
        return next(line.split()[3].split(",") for line in mounts if line.split()[1] == str(path))


def left_behind(work: Path) -> list[str]:
    """Mounts and processes (gocryptfs, servers) that still name `work`."""
    with open("/proc/mounts") as mounts:
        found = [line.split()[1] for line in mounts if line.split()[1].startswith(str(work))]
    return found + [" ".join(p.info["cmdline"]) for p in psutil.process_iter(["cmdline"])
                    if any(str(work) in part for part in p.info["cmdline"] or ())]


@dataclass
class Seen:
    """What the probe saw during the trial (asserted afterwards, so a refusal that fails shows
    as the test's failure, not as the trial's error)."""

    attempts: dict[str, subprocess.CompletedProcess] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)  # the engine's, in the decrypted view
    cipher_files: list[Path] = field(default_factory=list)
    owner: tuple[int, int, int] | None = None  # the mount root's uid, gid and mode as root sees them
    cipher_mode: int | None = None
    options: list[str] = field(default_factory=list)
    pass_file_there: bool = True


def probe_as_nobody(seen: Seen) -> Callable[[Database], None]:
    def during(database: Database) -> None:
        assert isinstance(database, GocryptfsDatabase) and database.inner is not None
        mount, inner = database.mount_point, database.inner.workspace
        info = mount.stat()
        seen.owner = info.st_uid, info.st_gid, info.st_mode & 0o777
        seen.cipher_mode = database.cipher_dir.stat().st_mode & 0o777
        seen.options = mount_options(mount)
        seen.files = sorted(p for p in inner.rglob("*") if p.is_file())
        seen.cipher_files = database.files()
        seen.pass_file_there = (database.workspace / "fs.pass").exists()
        seen.attempts = {
            "stat workspace": as_hostile_user(["stat", str(database.workspace)]),  # gets that far
            "ls mount point": as_hostile_user(["ls", "-la", str(mount)]),
            "ls engine's directory": as_hostile_user(["ls", "-la", str(inner)]),
            # the contents go nowhere (they are binary): what counts is whether each file opened
            "cat database files": as_hostile_user(["sh", "-c", 'cat -- "$@" >/dev/null', "cat",
                                                   *map(str, seen.files)]),
            "write into the mount": as_hostile_user(["touch", str(mount / "intruder")]),
            "ls cipher directory": as_hostile_user(["ls", "-la", str(database.cipher_dir)]),
            "cat gocryptfs.conf": as_hostile_user(["cat", str(database.cipher_dir / "gocryptfs.conf")]),
            "cat the cipher files": as_hostile_user(["sh", "-c", 'cat -- "$@" >/dev/null', "cat",
                                                     *map(str, seen.cipher_files)]),
            "cat gocryptfs.log": as_hostile_user(["cat", str(database.log)]),
        }
    return during


@pytest.mark.parametrize("engine", ["postgres", "sqlite"])  # a server's user; root for an embedded engine
def test_only_the_servers_user_enters_the_mount_and_the_trial_still_runs(engine: str) -> None:
    seen = Seen()
    with server_reachable_dir("tdebench-private-") as work:  # the postgres user can enter it
        summary, run = run_trial(engine, work, probe_as_nobody(seen))
        assert left_behind(work) == []
    # the server (or the engine in this process) used the mount all along
    assert summary.ok, [o.error for o in summary.failed] + [v.detail for v in summary.unexpected_verdicts]
    assert [m.answer for m in run.measurements if m.step == "count"] == ["ok"]
    (verdict,) = run.verdicts
    assert verdict.verdict == "encrypted" and verdict.view_hits, verdict.detail
    # who may enter: the server's user (root for an engine in this process), nobody else
    user = {"postgres": "postgres"}.get(engine)
    uid, gid = user_ids(user) if user else (0, 0)
    assert seen.owner == (uid, gid, 0o700)
    assert seen.cipher_mode == 0o700
    assert {"allow_other", "default_permissions"} <= set(seen.options)
    assert seen.files  # there was something to steal
    assert not seen.pass_file_there  # read by gocryptfs, then removed
    attempts = seen.attempts
    assert attempts.pop("stat workspace").returncode == 0, "nobody must get as far as the workspace"
    for what, attempt in attempts.items():
        assert attempt.returncode != 0, f"nobody could {what}: {attempt.stdout}"
        assert "Permission denied" in attempt.stdout, f"{what}: {attempt.stdout}"
    for what, files in (("cat database files", seen.files), ("cat the cipher files", seen.cipher_files)):
        lines = attempts[what].stdout.splitlines()  # one refusal per file, not only the first
        assert len(lines) == len(files) and all(line.endswith("Permission denied") for line in lines), what


def lazy_unmount(database: Database) -> None:
    """The mount vanishes under the running engine, which keeps its open files (and a server
    its working directory) on the detached mount."""
    assert isinstance(database, GocryptfsDatabase)
    subprocess.run(["fusermount3", "-u", "-z", str(database.mount_point)], check=True, capture_output=True)
    assert not database.is_mounted


@pytest.mark.parametrize("engine", ["postgres"])  # the verdict rule does not depend on the engine
def test_a_mount_that_vanished_mid_trial_makes_the_verdict_an_error(engine: str) -> None:
    with server_reachable_dir("tdebench-vanished-") as work:
        summary, run = run_trial(engine, work, lazy_unmount)
        assert left_behind(work) == []
    assert [m.answer for m in run.measurements if m.step == "count"] == ["ok"]  # the engine went on
    (verdict,) = run.verdicts
    assert verdict.verdict == "error", verdict.detail
    assert "was gone before verification" in verdict.detail and "positive control failed" in verdict.detail
    assert verdict.view_hits is None
    assert not summary.ok and summary.unexpected_verdicts == [verdict]  # the run exits 1
