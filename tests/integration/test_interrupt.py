"""Ctrl-C during a trial leaves no server, mount or workspace behind;
these tests bound a time, so they run alone (tests/integration/test_killed_runs.py has the kills
and cleans that bound none)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from runs import faulted_run, mounts_under, names_using, one_trial_plan, users_of
from workspaces import server_reachable_dir

pytestmark = pytest.mark.serial  # the 5 s bounds: alone, not beside another test (scripts/test.sh)

PLAN = '''name = "interrupted"
repetitions = 3
warmups = 1

[[engines]]
name = "postgres"
encryptions = ["fs-aes-256-gcm"]

[[engines]]
name = "mariadb"
encryptions = ["aes-256-cbc"]

[[workloads]]
name = "tpch"
scale = 0.01
'''


OLTP_PLAN = '''name = "interrupted-oltp"
repetitions = 1
warmups = 0

[[engines]]
name = "mariadb"
encryptions = ["none"]

[[workloads]]
name = "oltp"
scale = 1
tests = ["load"]
virtual_users = 3
rampup_s = 1
duration_s = 120
'''


@pytest.mark.parametrize("wait_for", ["postgres", "mariadbd"])
def test_ctrl_c_during_a_trial_cleans_up_everything(tmp_path: Path, wait_for: str) -> None:
    with server_reachable_dir("tdebench-interrupt-") as work:  # the postgres user can enter it
        check_interrupt(tmp_path, work, wait_for)


def check_interrupt(tmp_path: Path, work: Path, wait_for: str) -> None:
    code, output = interrupt_when(tmp_path, work, PLAN, lambda _: wait_for in names_using(work),
                                  f"{wait_for} started")
    assert code == 130, output
    assert "interrupted" in output
    assert users_of(work) == [], "a server or gocryptfs outlived the run"
    assert mounts_under(work) == []
    assert list(work.iterdir()) == [], "a workspace outlived the run"
    assert (tmp_path / "out" / "results.jsonl").is_file() and f"tdebench report {tmp_path / 'out'}" in output


def interrupt_when(tmp_path: Path, work: Path, plan: str, ready: Callable[[int], bool], what: str,
                   group: bool = False) -> tuple[int, str]:
    """Run `plan`, wait (240 s at most) until `ready(tdebench's pid)`, a second more (inside the
    trial), then SIGINT: to tdebench, or with `group` to its whole process group, as a terminal's
    Ctrl-C does. Its exit code and output."""
    (tmp_path / "plan.toml").write_text(plan)
    exe = Path(sys.executable).with_name("tdebench")
    run = subprocess.Popen([exe, "run", str(tmp_path / "plan.toml"), "--out", str(tmp_path / "out"),
                            "--work-dir", str(work), "--quiet"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, start_new_session=group)
    try:
        deadline = time.monotonic() + 240
        while not ready(run.pid):
            assert run.poll() is None, run.stdout.read() if run.stdout else ""
            assert time.monotonic() < deadline, f"no {what} within 240 s"
            time.sleep(0.2)
        time.sleep(1.0)
        if group:
            os.killpg(run.pid, signal.SIGINT)
        else:
            run.send_signal(signal.SIGINT)
        output, _ = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    return run.returncode, output


def test_ctrl_c_during_a_multi_process_oltp_run_leaves_no_worker_process(tmp_path: Path) -> None:
    """Ctrl-C as a terminal sends it: SIGINT to tdebench's whole process group, its oltp worker
    processes included; the run ends 130 and no worker (nor server) is left."""
    workers: list[psutil.Process] = []
    expected = min(3, len(os.sched_getaffinity(0)))  # one per CPU, no more than the 3 users

    def all_workers(pid: int) -> bool:
        workers[:] = _forks_of(psutil.Process(pid))
        return len(workers) >= expected

    with server_reachable_dir("tdebench-interrupt-oltp-") as work:
        code, output = interrupt_when(tmp_path, work, OLTP_PLAN, all_workers, f"{expected} oltp worker processes",
                                      group=True)
        assert code == 130, output
        assert [w.pid for w in workers if w.is_running() and w.status() != psutil.STATUS_ZOMBIE] == [], \
            "an oltp worker process outlived the run"
        assert users_of(work) == [] and list(work.iterdir()) == []


def _forks_of(parent: psutil.Process) -> list[psutil.Process]:
    """`parent`'s children running its own command line: its forked workers (a setup tool that
    just ended, a zombie until reaped, is passed over)."""
    forks = []
    for child in parent.children():
        try:
            if child.cmdline() == parent.cmdline():
                forks.append(child)
        except psutil.Error:
            continue
    return forks


@pytest.mark.parametrize(("engine", "encryption", "scale", "phase"), [
    ("mariadb", "fs-aes-256-gcm", 0.01, "trial-create:INT:0.5"),  # while the server starts
    # a Ctrl-C here once took 24-30 s to end the run at scale 0.1, 6 s into the load (here, before
    # HURRY_S, 0.4-0.8 s: at 0.01 and at 0.1 4 s in; the bound holds whatever the server's clean
    # shutdown would take)
    ("mariadb", "fs-aes-256-gcm", 0.01, "trial-load:INT:0.3"),
    ("postgres", "fs-aes-256-gcm", 0.01, "trial-queries:INT:0.3"),
    ("postgres", "none", 0.01, "trial-scan:TERM"),
])
def test_an_interrupt_at_any_phase_ends_the_run_within_5_s(tmp_path: Path, engine: str, encryption: str,
                                                           scale: float, phase: str) -> None:
    """Ctrl-C (or SIGTERM) at server start, load, queries and scan: exit 130 within 5 s, with
    nothing left — a trial's server holds disposable data, so it is not given a clean shutdown."""
    with server_reachable_dir("tdebench-hurry-") as work:
        done = faulted_run(tmp_path, work, one_trial_plan(engine, encryption, scale), phase)
        assert done.code == 130, done.output
        print(f"{engine} {encryption} {phase}: servers gone {done.servers_gone_s:.1f} s, exit {done.exit_s:.1f} s "
              "after the signal")
        assert done.servers_gone_s < 5.0, f"{done.servers_gone_s:.1f} s from the signal to the last server gone"
        # no report is built after an interrupt (it took 5-13 s at a load of 12 on 2 cores)
        assert done.exit_s < 5.0, f"{done.exit_s:.1f} s from the signal to the run's exit"
        assert "Traceback" not in done.output
        assert users_of(work) == [] and mounts_under(work) == [] and list(work.iterdir()) == []


