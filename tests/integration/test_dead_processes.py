"""A trial whose server or gocryptfs dies says so: its error names the process and how it ended
("mariadbd ended by signal 9 (SIGKILL)"), not only the client's "Lost connection to MySQL server
during query", and its verdict is `error`: a dead gocryptfs leaves a cipher directory that looks
encrypted, and the trial was judged `encrypted` with its decrypted view never read."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from tdebench import runstate
from tdebench.store import read_run

from runs import mounts_under, one_trial_plan, users_of
from workspaces import server_reachable_dir

PLAN = one_trial_plan("mariadb", "fs-aes-256-gcm")  # MariaDB on gocryptfs beside its baseline (lockstep)
KILLED_TRIAL = "mariadb/fs-aes-256-gcm/tpch/sf0.01/r1"
KILLED_WORKSPACE = KILLED_TRIAL.replace("/", "_")


@pytest.mark.parametrize("process", ["mariadbd", "gocryptfs"])
def test_a_process_killed_during_the_queries_is_named_in_the_failed_trials_error(tmp_path: Path,
                                                                                 process: str) -> None:
    with server_reachable_dir("tdebench-dead-") as work:
        code, output = _kill_during_queries(tmp_path, work, process)
        assert code == 1, output
        run = read_run(tmp_path / "out")
        outcome = next(o for o in run.trials if o.trial.id == KILLED_TRIAL)
        assert outcome.status == "failed"
        assert outcome.error.startswith(f"{process} ended by signal 9 (SIGKILL)"), outcome.error
        verdict = next(v for v in run.verdicts if v.trial.id == KILLED_TRIAL)
        assert verdict.verdict == "error", verdict
        assert process in verdict.detail
        baseline = next(o for o in run.trials if o.trial.id != KILLED_TRIAL)
        assert baseline.status == "ok", baseline.error  # the other trial ran as before
        assert users_of(work) == [] and mounts_under(work) == [] and list(work.iterdir()) == []


def _kill_during_queries(tmp_path: Path, work: Path, name: str) -> tuple[int, str]:
    """Run PLAN, which stops itself (SIGSTOP) as its gocryptfs trial's queries begin; SIGKILL
    that trial's process `name`, and let the run go on. Its exit code and output."""
    (tmp_path / "plan.toml").write_text(PLAN)
    exe = Path(sys.executable).with_name("tdebench")
    run = subprocess.Popen([exe, "run", str(tmp_path / "plan.toml"), "--out", str(tmp_path / "out"),
                            "--work-dir", str(work), "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, env={**os.environ, runstate.FAULT: "trial-queries#2:STOP"})
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(run.stdout or ()), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 300
        while psutil.Process(run.pid).status() != psutil.STATUS_STOPPED:
            assert run.poll() is None and time.monotonic() < deadline, "".join(lines)
            time.sleep(0.05)
        victims = [p for p in users_of(work) if p.name() == name and KILLED_WORKSPACE in " ".join(p.cmdline())]
        assert len(victims) == 1, victims
        victims[0].send_signal(signal.SIGKILL)
        while victims[0].is_running() and victims[0].status() != psutil.STATUS_ZOMBIE:  # tdebench reaps it
            time.sleep(0.05)
        os.kill(run.pid, signal.SIGCONT)
        run.wait(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        reader.join(timeout=10)
    return run.returncode, "".join(lines)
