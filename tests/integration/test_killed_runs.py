"""A run killed where it cannot clean up (SIGKILL, also inside its own clean-up) is cleaned by
`tdebench clean` and the next run, and `clean` never touches a running run. These bound no time,
so they run beside other tests (test_interrupt.py has the Ctrl-C tests that bound one)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tdebench import runstate
from tdebench.plan import parse_plan, schedule
from tdebench.store import read_run

from runs import faulted_run, mounts_under, names_using, one_trial_plan, users_of
from workspaces import server_reachable_dir

KILLED_PLAN = one_trial_plan("postgres", "fs-aes-256-gcm")  # one trial: a server under the gocryptfs layer


def test_a_work_dir_the_postgres_user_cannot_enter_is_refused_before_the_run(tmp_path: Path) -> None:
    (tmp_path / "plan.toml").write_text(KILLED_PLAN)
    exe = Path(sys.executable).with_name("tdebench")
    done = subprocess.run([exe, "run", str(tmp_path / "plan.toml"), "--out", str(tmp_path / "out"),
                           "--work-dir", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 2
    assert "the postgres user cannot enter" in done.stderr and "chmod o+x" in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_killed_run_is_cleaned_up_by_the_next(tmp_path: Path) -> None:
    """SIGKILL leaves no chance to clean up: the servers die with their parent (SIGTERM from the
    kernel), and `tdebench clean` finds the rest through the run's state file — a live gocryptfs
    mount of the decrypted database, the workspace with its key files — and removes it all; then
    `run --resume` finishes the plan with the trials that ended kept."""
    with server_reachable_dir("tdebench-killed-") as work:
        (tmp_path / "plan.toml").write_text(KILLED_PLAN)
        exe = Path(sys.executable).with_name("tdebench")
        run = subprocess.Popen([exe, "run", str(tmp_path / "plan.toml"), "--out", str(tmp_path / "out"),
                                "--work-dir", str(work), "--quiet"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 240
            while not {"postgres", "gocryptfs"} <= names_using(work):
                assert run.poll() is None and time.monotonic() < deadline, "no fs trial on postgres started"
                time.sleep(0.2)
            time.sleep(1.0)
        finally:
            run.kill()
            run.wait()
        assert mounts_under(work), "the killed run's decrypted view is still mounted"
        [root] = list(work.iterdir())
        state = [json.loads(line) for line in (root / "run-state.jsonl").read_text().splitlines()]
        assert state[0] == {"kind": "run", "pid": run.pid, "started": state[0]["started"]}
        assert {"postgres", "gocryptfs", "initdb"} <= {entry["what"] for entry in state[1:] if "what" in entry}
        recorded = [entry["path"] for entry in state if entry["kind"] == "mount"]
        assert recorded and set(mounts_under(work)) <= set(recorded)  # every live mount was written down
        deadline = time.monotonic() + 30  # postgres got SIGTERM from the kernel when its parent died
        while "postgres" in names_using(work) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "postgres" not in names_using(work), "postgres outlived its killed parent"

        cleaned = subprocess.run([exe, "clean", "--work-dir", str(work)], capture_output=True, text=True, timeout=120)
        assert cleaned.returncode == 0, cleaned.stdout + cleaned.stderr
        assert f"cleaned up after a killed run (pid {run.pid})" in cleaned.stdout
        said = " ".join(cleaned.stdout.split())
        # gocryptfs unmounts when it is stopped; what stays mounted after that is unmounted
        assert "stopped gocryptfs" in said or "unmounted" in said, said
        assert f"removed {root}" in said
        assert users_of(work) == [] and mounts_under(work) == []
        assert list(work.iterdir()) == []
        again = subprocess.run([exe, "clean", "--work-dir", str(work)], capture_output=True, text=True, timeout=60)
        assert again.returncode == 0 and "nothing to clean" in again.stdout

        # and the killed run is finished where it stopped, every trial once, nothing left behind
        resumed = subprocess.run([exe, "run", "--resume", str(tmp_path / "out"), "--work-dir", str(work), "--quiet"],
                                 capture_output=True, text=True, timeout=600)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        finished = read_run(tmp_path / "out")
        planned = sorted(spec.key for spec in schedule(parse_plan(KILLED_PLAN)))
        assert sorted(o.trial for o in finished.trials) == planned
        assert all(v.as_expected for v in finished.verdicts) and len(finished.resumes) == 1
        assert users_of(work) == [] and mounts_under(work) == [] and list(work.iterdir()) == []


def test_clean_leaves_a_running_run_alone(tmp_path: Path) -> None:
    with server_reachable_dir("tdebench-alive-") as work:
        root = work / "tdebench-alive"
        root.mkdir()
        (root / "run-state.jsonl").write_text(json.dumps(
            {"kind": "run", "pid": os.getpid(), "started": psutil.Process().create_time()}) + "\n")
        exe = Path(sys.executable).with_name("tdebench")
        done = subprocess.run([exe, "clean", "--work-dir", str(work)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and "nothing to clean" in done.stdout
        assert (root / "run-state.jsonl").is_file()


def test_a_kill_inside_the_clean_up_of_a_terminated_run_leaves_nothing_clean_cannot_find(tmp_path: Path) -> None:
    """SIGTERM, then SIGKILL while the run cleans up (`timeout -k`, `docker stop`) had left
    MariaDB's data with its keys.txt where `clean` did not look. Killed as its clean-up begins
    (the encrypted trial's server up, its key file beside the data), the run leaves its workspace registered and
    marked: `clean` stops what is left and removes it all. (Killed at every later step of the
    clean-up: tests/unit/test_killed_cleanup.py.)"""
    with server_reachable_dir("tdebench-term-kill-") as work:
        done = faulted_run(tmp_path, work, one_trial_plan("mariadb", "aes-256-cbc"),
                           "trial-load#2:TERM:0.3,trial-closing")
        assert done.code == -signal.SIGKILL, done.output
        assert list(work.rglob("keys.txt")), "no key file at the kill: nothing was tested"
        exe = Path(sys.executable).with_name("tdebench")
        cleaned = subprocess.run([exe, "clean", "--work-dir", str(work)], capture_output=True, text=True, timeout=120)
        assert cleaned.returncode == 0, cleaned.stdout + cleaned.stderr
        assert "cleaned up after a killed run" in cleaned.stdout
        assert users_of(work) == [] and mounts_under(work) == [] and list(work.iterdir()) == []


def test_a_mount_left_below_a_workspace_is_unmounted_before_it_is_removed(tmp_path: Path) -> None:
    """An interrupt between a gocryptfs mount and its unmount can leave the view mounted when the
    run removes its workspace (a CI run left `…_r1/plain` mounted): the removal unmounts it first
    and never empties a mounted view through its mount."""
    root = runstate.new_root(tmp_path)
    view = root / "trial" / "plain"
    view.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tdebench-test", str(view)], check=True)
    try:
        (view / "kept").write_text("served through the mount")
        assert runstate.mounts_below(root) == [str(view.resolve())]
        assert runstate.remove_root(root)
        assert mounts_under(tmp_path) == [] and not root.exists()
    finally:
        if mounts_under(tmp_path):
            subprocess.run(["umount", "-l", str(view)], check=False)

