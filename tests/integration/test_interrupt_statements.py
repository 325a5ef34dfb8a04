"""Ctrl-C while a server runs one of tdebench's statements — a bulk load (MariaDB's LOAD DATA
LOCAL, PostgreSQL's COPY), an index build, a long query — ends the run within 5 s, with no
server or gocryptfs left: the client's socket is shut down at once (engines/timeout.py), so no
driver waits on the server. PyMySQL, interrupted while sending LOAD DATA LOCAL's file, used to
wait for the server's net_read_timeout: 31-34 s. The signal is sent when the run's own progress
says the statement is under way (its records, the staging file being read), and the records
afterwards show it landed inside (the statement's measurement never came). TPC-H at scale 0.1,
where lineitem's load takes seconds and its index build and query 18 one or two; each engine
plain and on gocryptfs, each phase on each engine, one run a case."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from runs import interrupted_run, measured, mounts_under, one_trial_plan, reading, users_of
from workspaces import server_reachable_dir

pytestmark = pytest.mark.serial  # the 5 s bound: alone, not beside another test (scripts/test.sh)

Ready = Callable[[psutil.Process, list[dict]], bool]

# when to send Ctrl-C, and the measurement that must be missing afterwards (the statement did not end)
PHASES: dict[str, tuple[Ready, tuple[str, str]]] = {
    # lineitem's staging file open for reading: the client is sending it to the server
    "load": (lambda process, _: reading(process, "lineitem.csv"), ("load", "lineitem")),
    # lineitem loaded: the indexes are being built (their measurement, "indexes", comes after them)
    "index build": (lambda _, records: measured(records, "load", "lineitem"), ("load", "indexes")),
    # q17 measured: q18 (the power test's next, 1-2 s at this scale) runs
    "query": (lambda _, records: measured(records, "power", "q17"), ("power", "q18")),
}


@pytest.mark.parametrize(("engine", "encryption", "phase"), [
    ("mariadb", "fs-aes-256-gcm", "load"),  # LOAD DATA LOCAL: 31-34 s before
    ("mariadb", "none", "index build"),
    ("mariadb", "fs-aes-256-gcm", "query"),
    ("postgres", "none", "load"),  # COPY FROM STDIN
    ("postgres", "fs-aes-256-gcm", "index build"),
    ("postgres", "none", "query"),
])
def test_ctrl_c_inside_a_statement_ends_the_run_within_5_s(tmp_path: Path, engine: str, encryption: str,
                                                          phase: str) -> None:
    ready, unfinished = PHASES[phase]
    with server_reachable_dir("tdebench-statement-") as work:
        done = interrupted_run(tmp_path, work, one_trial_plan(engine, encryption, scale=0.1), ready,
                               f"{engine} {encryption} {phase}")
        print(f"{engine} {encryption} {phase}: servers gone {done.servers_gone_s:.1f} s, exit {done.exit_s:.1f} s "
              "after the signal")
        assert not measured(done.records, *unfinished), f"the signal came after the {phase}, not inside it"
        assert done.code == 130, done.output
        assert done.servers_gone_s < 5.0, f"{done.servers_gone_s:.1f} s from the signal to the last server gone"
        assert done.exit_s < 5.0, f"{done.exit_s:.1f} s from the signal to the run's exit"
        assert "Traceback" not in done.output
        assert users_of(work) == [], "a server or gocryptfs outlived the run"
        assert mounts_under(work) == [] and list(work.iterdir()) == []
