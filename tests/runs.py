"""Runs of the `tdebench` command that tests interrupt, kill or fault, and what such a run may leave
behind: the processes and mounts of a work directory (test_interrupt.py, test_killed_runs.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from tdebench import runstate


def users_of(directory: Path) -> list[psutil.Process]:
    """Processes whose command line names `directory` (servers and gocryptfs started for it)."""
    found = []
    for process in psutil.process_iter(["cmdline", "name"]):
        if any(str(directory) in part for part in process.info["cmdline"] or ()):
            found.append(process)
    return found


def names_using(directory: Path) -> set[str]:
    """The names of `users_of(directory)`, read with their command lines: a process that ends
    between the listing and a later `name()` (initdb does, within a second) cannot fail the test."""
    return {process.info["name"] for process in users_of(directory)}


def mounts_under(directory: Path) -> list[str]:
    with open("/proc/mounts") as mounts:
        return [line.split()[1] for line in mounts if line.split()[1].startswith(str(directory))]


def one_trial_plan(engine: str, encryption: str, scale: float = 0.01) -> str:
    return (f'name = "one"\nrepetitions = 1\nwarmups = 0\n\n[[engines]]\nname = "{engine}"\n'
            f'encryptions = ["{encryption}"]\n\n[[workloads]]\nname = "tpch"\nscale = {scale}\n'
            'tests = ["power"]\n')


@dataclass
class Faulted:
    """A run that ended after its fault (runstate.FAULT): exit code, output, and the seconds from
    the fault's signal to the last server or gocryptfs gone and to the run's exit."""

    code: int
    output: str
    servers_gone_s: float
    exit_s: float


def faulted_run(tmp_path: Path, work: Path, plan: str, fault: str) -> Faulted:
    (tmp_path / "plan.toml").write_text(plan)
    exe = Path(sys.executable).with_name("tdebench")
    run = subprocess.Popen([exe, "run", str(tmp_path / "plan.toml"), "--out", str(tmp_path / "out"),
                            "--work-dir", str(work), "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, env={**os.environ, runstate.FAULT: fault})
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(run.stdout or ()), daemon=True)
    reader.start()
    sent = gone = None
    try:
        deadline = time.monotonic() + 600
        while run.poll() is None and time.monotonic() < deadline:
            fired = [line for line in lines if line.startswith("tdebench fault:")]
            if fired and sent is None:
                sent = float(fired[0].split()[-1])
            if sent is not None and gone is None and not [p for p in users_of(work) if p.pid != run.pid]:
                gone = time.monotonic()
            time.sleep(0.05)
    finally:
        if run.poll() is None:
            run.kill()
        run.wait()
        reader.join(timeout=10)
    ended = time.monotonic()
    output = "".join(lines)
    fired = [line for line in output.splitlines() if line.startswith("tdebench fault:")]
    assert fired, f"the fault {fault} never fired:\n{output}"
    sent = float(fired[0].split()[-1])
    return Faulted(run.returncode, output, (gone or ended) - sent, ended - sent)

