"""A work directory whose file system fills up fails the trial, never the run: on a small tmpfs,
real DuckDB and SQLite trials that fill it during their load, and the at-rest scan of database
files with holes on a tmpfs filled meanwhile (a memory map of a hole there ends the process with
SIGBUS: the scan reads holes). Each trial is recorded, its workspace removed, and the run ends
with one line per failed trial and no traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from tdebench import runstate
from tdebench.store import read_run


def plan(engines: list[str], warmups: int) -> str:
    """Each engine's baseline on TPC-H SF 0.01, one round, one trial after the other."""
    listed = "".join(f'[[engines]]\nname = "{engine}"\nencryptions = ["none"]\n\n' for engine in engines)
    return (f'name = "full-disk"\nrepetitions = 1\nwarmups = {warmups}\norder = "interleaved"\nseed = 1\n\n'
            f'{listed}[[workloads]]\nname = "tpch"\nscale = 0.01\ntests = ["power"]\npasses = 1\n')


@contextmanager
def small_tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def fill(directory: Path) -> Path:
    """A file tdebench did not write, grown until the file system holding it is full."""
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\1" * 4096)
        except OSError:
            pass
    while True:  # the last blocks, smaller than a page write
        try:
            with open(filler, "ab", buffering=0) as fh:
                fh.write(b"\1")
        except OSError:
            return filler


@dataclass
class Ended:
    code: int
    output: str


def run(tmp_path: Path, work: Path, text: str, fault: str = "",
        at_fault: object = None) -> Ended:
    """`tdebench run` of the plan `text` with --work-dir `work`, in a process of its own (a
    SIGBUS would end pytest too). With `fault` (runstate.FAULT, a STOP), `at_fault(pid)` runs
    each time the run has stopped itself there, then the run goes on."""
    (tmp_path / "plan.toml").write_text(text)
    exe = Path(sys.executable).with_name("tdebench")
    env = {**os.environ, runstate.FAULT: fault} if fault else dict(os.environ)
    process = subprocess.Popen([exe, "run", str(tmp_path / "plan.toml"), "--out", str(tmp_path / "out"),
                                "--work-dir", str(work), "--quiet"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env=env)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stdout or ()), daemon=True)
    reader.start()
    handled = 0
    try:
        deadline = time.monotonic() + 600
        while process.poll() is None:
            assert time.monotonic() < deadline, "the run did not end in 10 minutes:\n" + "".join(lines)
            stops = sum(line.startswith("tdebench fault: SIGSTOP") for line in list(lines))
            if stops > handled and psutil.Process(process.pid).status() == psutil.STATUS_STOPPED:
                handled += 1
                try:
                    assert callable(at_fault)
                    at_fault(process.pid)
                finally:
                    os.kill(process.pid, signal.SIGCONT)
            time.sleep(0.05)
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGCONT)
            process.kill()
        process.wait()
        reader.join(timeout=10)
    return Ended(process.returncode, "".join(lines))


def assert_one_clear_line_each(ended: Ended, out: Path, work: Path, failed: list[str]) -> None:
    """Every trial recorded; each of `failed` failed with "no space left on <work> (<n> MiB free)",
    said so in one line; no crash, no traceback; nothing of the run left in `work`."""
    assert ended.code == (1 if failed else 0), ended.output
    assert "Traceback" not in ended.output and "Fatal Python error" not in ended.output, ended.output
    trials = {outcome.trial.id: outcome for outcome in read_run(out).trials}
    assert set(failed) <= set(trials), ended.output
    for trial_id, outcome in trials.items():
        if trial_id not in failed:
            assert outcome.status == "ok", outcome
            continue
        assert outcome.status == "failed"
        assert outcome.error.startswith(f"no space left on {work} (") and outcome.error.endswith(" MiB free)"), \
            outcome.error
        said = " ".join(ended.output.split())  # as printed, wrapped to the terminal's width
        assert f"FAILED {trial_id}: {outcome.error} " in said, ended.output
        assert f"VERDICT {trial_id}:" not in said  # its scan found no leak: the failure is the one line
    assert [path.name for path in work.iterdir()] in ([], ["filler"]), list(work.rglob("*"))


def test_a_load_that_fills_the_work_dir_fails_its_trial_in_one_line_and_the_run_goes_on(tmp_path: Path) -> None:
    """1 MiB holds neither engine's TPC-H SF 0.01: DuckDB's load fails with its IOException
    ("No space left on device"), SQLite's with SQLITE_FULL under a failed rollback; the priming
    load before them fills it too. Both trials are recorded as failed, in one line each."""
    with small_tmpfs(tmp_path / "small", "1m") as work:
        ended = run(tmp_path, work, plan(["duckdb", "sqlite"], warmups=1))
        assert_one_clear_line_each(ended, tmp_path / "out", work,
                                   ["duckdb/none/tpch/sf0.01/r1", "sqlite/none/tpch/sf0.01/r1"])


@pytest.mark.parametrize("engine", ["duckdb", "sqlite"])
def test_a_scan_of_database_files_with_holes_on_a_full_work_dir_does_not_crash(tmp_path: Path, engine: str) -> None:
    """The run stops itself as the trial's at-rest scan begins (runstate.FAULT); meanwhile the
    database file grows by a hole (what an engine's extended file holds where its writes failed)
    and a file tdebench did not write fills the tmpfs. A memory map's first read of that hole
    needs a page the tmpfs cannot give: SIGBUS, the whole run gone without a record. Read, the
    hole is zeros: the trial ends ok, with its verdict (the baseline's canaries found)."""
    grown: dict[str, int] = {}  # the grown file, relative to its workspace: its size

    def grow_and_fill(_pid: int) -> None:
        [workspace] = [path for path in work.glob("tdebench-*/*") if path.is_dir()]
        database = max((path for path in workspace.rglob("*") if path.is_file()), key=lambda p: p.stat().st_size)
        os.truncate(database, database.stat().st_size + (4 << 20))
        grown[database.relative_to(workspace).as_posix()] = database.stat().st_size
        fill(work)

    with small_tmpfs(tmp_path / "small", "64m") as work:
        ended = run(tmp_path, work, plan([engine], warmups=0), "trial-scan:STOP", grow_and_fill)
        assert grown, ended.output
        assert_one_clear_line_each(ended, tmp_path / "out", work, [])
        [verdict] = read_run(tmp_path / "out").verdicts
        assert verdict.verdict == "plaintext" and verdict.first_hit, verdict
        assert grown.items() <= {scan.path: scan.bytes for scan in verdict.files}.items()  # the hole read too
