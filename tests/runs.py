"""Runs of the `tdebench` command that tests interrupt, kill or fault, and what such a run may leave
behind: the processes and mounts of a work directory (test_interrupt.py, test_killed_runs.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
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



@dataclass
class Interrupted:
    """A run given Ctrl-C (SIGINT to its process group) the moment its progress said so: exit
    code, output, its records (results.jsonl) and the seconds from the signal to the last server
    or gocryptfs gone and to the run's exit."""

    code: int
    output: str
    records: list[dict]
    servers_gone_s: float
    exit_s: float


def interrupted_run(tmp_path: Path, work: Path, plan: str, now: Callable[[psutil.Process, list[dict]], bool],
                    what: str) -> Interrupted:
    """Run `plan` in a session of its own and send its process group SIGINT, as a terminal's
    Ctrl-C does, as soon as `now(tdebench's process, the records stored so far)` (polled every
    20 ms, 300 s at most)."""
    (tmp_path / "plan.toml").write_text(plan)
    exe = Path(sys.executable).with_name("tdebench")
    run = subprocess.Popen([exe, "run", str(tmp_path / "plan.toml"), "--out", str(tmp_path / "out"),
                            "--work-dir", str(work), "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, start_new_session=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(run.stdout or ()), daemon=True)
    reader.start()
    results = tmp_path / "out" / "results.jsonl"
    gone = None
    try:
        deadline = time.monotonic() + 300
        while not now(psutil.Process(run.pid), read_records(results)):
            assert run.poll() is None, f"the run ended before {what}:\n{''.join(lines)}"
            assert time.monotonic() < deadline, f"no {what} within 300 s"
            time.sleep(0.02)
        os.killpg(run.pid, signal.SIGINT)
        sent = time.monotonic()
        while run.poll() is None and time.monotonic() - sent < 120:
            if gone is None and not [p for p in users_of(work) if p.pid != run.pid]:
                gone = time.monotonic()
            time.sleep(0.02)
    finally:
        if run.poll() is None:
            run.kill()
        run.wait()
        reader.join(timeout=10)
    ended = time.monotonic()
    return Interrupted(run.returncode, "".join(lines), read_records(results), (gone or ended) - sent, ended - sent)


def read_records(results: Path) -> list[dict]:
    """The records a run has stored so far (a line being written is left for the next look)."""
    try:
        text = results.read_text()
    except FileNotFoundError:
        return []
    records = []
    for line in text.splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return records


def measured(records: list[dict], test: str, step: str) -> bool:
    """Whether the records hold a measurement of `test`'s `step` (a load's table, a query)."""
    return any(r.get("kind") == "measurement" and r.get("test") == test and r.get("step") == step for r in records)


def reading(process: psutil.Process, suffix: str) -> bool:
    """Whether `process` has a file whose name ends in `suffix` open for reading only: the
    staging file a bulk load sends to its server (LOAD DATA LOCAL, COPY FROM STDIN) while it
    sends it."""
    for fd in Path(f"/proc/{process.pid}/fd").iterdir():
        try:
            if os.readlink(fd).endswith(suffix):
                info = (Path(f"/proc/{process.pid}/fdinfo") / fd.name).read_text()
                flags = int(info.split("flags:")[1].split()[0], 8)
                if flags & os.O_ACCMODE == os.O_RDONLY:
                    return True
        except (OSError, IndexError, ValueError):
            continue  # closed meanwhile
    return False
