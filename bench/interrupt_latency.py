"""How long does Ctrl-C take to end a run, depending on when it lands?

Runs `tdebench run` on a one-engine TPC-H power-test plan (MariaDB on gocryptfs at scale 0.1,
two repetitions, by default) once per delay, in a session of its own (setsid), and sends SIGINT
to its whole process group, as a terminal's Ctrl-C does, that many seconds after the server
came up (its process first seen using the run's work directory). Per delay it prints the
seconds from the signal to the run's exit and to the last server or gocryptfs process of the
run gone, the exit code (130: interrupted), and any process of the run left afterwards (killed
then, so the next delay starts clean). A load of SF 0.1 takes seconds, so the delays fall into
the server's start, the load (LOAD DATA LOCAL, the index build) and the queries.

    .venv/bin/python bench/interrupt_latency.py [--engine mariadb] [--encryption fs-aes-256-gcm]
        [--scale 0.1] [--delays 2 5 8 9 10 12 16 20 25]

Needs root (the servers run as their own system users, gocryptfs mounts). Tiny, for CI:
--scale 0.01 --delays 1.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

SERVERS = {"mariadb": "mariadbd", "postgres": "postgres"}


@dataclass
class Interrupted:
    delay_s: float
    exit_s: float
    gone_s: float
    code: int
    left: list[str]


def plan(engine: str, encryption: str, scale: float, repetitions: int) -> str:
    return (f'name = "interrupt-latency"\nrepetitions = {repetitions}\n\n[[engines]]\nname = "{engine}"\n'
            f'encryptions = ["{encryption}"]\n\n[[workloads]]\nname = "tpch"\nscale = {scale}\n'
            'tests = ["power"]\n')


def users_of(directory: Path, but: int) -> list[psutil.Process]:
    """The processes (other than `but`, tdebench itself) whose command line names `directory`."""
    found = []
    for process in psutil.process_iter(["cmdline", "pid"]):
        if process.info["pid"] != but and any(str(directory) in part for part in process.info["cmdline"] or ()):
            found.append(process)
    return found


def interrupt_once(args: argparse.Namespace, delay_s: float, scratch: Path) -> Interrupted:
    """One run, SIGINT to its group `delay_s` after its server came up."""
    work = scratch / "work"
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(scratch / "out", ignore_errors=True)
    work.mkdir(mode=0o711)
    work.chmod(0o711)  # the servers' users pass through to their workspaces
    (scratch / "plan.toml").write_text(plan(args.engine, args.encryption, args.scale, args.repetitions))
    exe = Path(sys.executable).with_name("tdebench")
    run = subprocess.Popen([exe, "run", str(scratch / "plan.toml"), "--out", str(scratch / "out"),
                            "--work-dir", str(work), "--quiet"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, start_new_session=True)
    server = SERVERS[args.engine]
    try:
        deadline = time.monotonic() + 600
        while not any(p.info["name"] == server for p in psutil.process_iter(["name", "cmdline"])
                      if any(str(work) in part for part in p.info["cmdline"] or ())):
            if run.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the run ended (or 600 s passed) before {server} started: exit {run.poll()}")
            time.sleep(0.05)
        time.sleep(max(0.0, delay_s))
        sent = time.monotonic()
        os.killpg(run.pid, signal.SIGINT)
        gone = None
        while run.poll() is None and time.monotonic() - sent < args.timeout:
            if gone is None and not users_of(work, run.pid):
                gone = time.monotonic()
            time.sleep(0.02)
        ended = time.monotonic()
    finally:
        if run.poll() is None:
            run.kill()
        run.wait()
    left = users_of(work, run.pid)
    names = [f"{p.name()} ({p.pid})" for p in left if p.is_running()]
    for process in left:  # the next delay must start clean
        try:
            process.kill()
        except psutil.Error:
            pass
    return Interrupted(delay_s, ended - sent, (gone or ended) - sent, run.returncode, names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=sorted(SERVERS), default="mariadb")
    parser.add_argument("--encryption", default="fs-aes-256-gcm")
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--repetitions", type=int, default=2)
    parser.add_argument("--delays", type=float, nargs="+", default=[2, 5, 8, 9, 10, 12, 16, 20, 25])
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the exit")
    args = parser.parse_args()
    print(f"{args.engine} {args.encryption}, TPC-H SF {args.scale:g} power test, {args.repetitions} repetitions; "
          "SIGINT to the run's process group")
    print(f"{'after server up':>16}  {'signal->exit':>12}  {'servers gone':>12}  exit  left")
    scratch = Path(tempfile.mkdtemp(prefix="tdebench-interrupt-latency-"))
    scratch.chmod(0o711)
    try:
        for delay in args.delays:
            done = interrupt_once(args, delay, scratch)
            print(f"{done.delay_s:>14g} s  {done.exit_s:>10.1f} s  {done.gone_s:>10.1f} s  {done.code:>4}  "
                  f"{', '.join(done.left) or '-'}", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
