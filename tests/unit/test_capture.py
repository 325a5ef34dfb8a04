"""The transient capture (capture.py) on files this process writes and deletes, and the rules
and report columns built on what it catches."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import time
from pathlib import Path

from tdebench.capture import Capture
from tdebench.engines.base import default_file_kind
from tdebench.report.summaries.findings import verdict_summary
from tdebench.report.summaries.tables import verdicts_table
from tdebench.results import (TRANSIENT_CANARIES, TRANSIENT_CLEAN, TRANSIENT_NONE, FileScan, RunData, TrialKey,
                              TrialOutcome, from_json, to_json)
from tdebench.verify import TrialScan, judge

CANARY = "TDEBENCH-CANARY-" + "c3" * 12
TRIAL = TrialKey("duckdb", "none", "tpch", 0.01, 1)


def _capture(workspace: Path, every_s: float = 0.05) -> Capture:
    return Capture([workspace], workspace, [CANARY], [], None, lambda: None, default_file_kind, every_s).start()


def _until(condition, seconds: float = 5.0) -> None:
    end = time.monotonic() + seconds
    while not condition() and time.monotonic() < end:
        time.sleep(0.01)


def test_a_file_written_and_deleted_while_the_capture_runs_is_scanned_whole(tmp_path: Path) -> None:
    capture = _capture(tmp_path)
    spill = tmp_path / "duckdb.tmp" / "spill_0.tmp"
    spill.parent.mkdir()
    with spill.open("wb") as fh:
        fh.write(b"x" * 1000)
        fh.flush()
        _until(lambda: capture.stats.scans or len(capture._held) > 0)  # the capture holds it
        fh.write(CANARY.encode() * 3)
    spill.unlink()
    caught = capture.stop()
    assert [(s.path, s.hits, s.transient) for s in caught] == [("duckdb.tmp/spill_0.tmp", 3, True)]


def test_a_file_unlinked_on_open_is_found_through_proc_and_scanned_when_closed(tmp_path: Path) -> None:
    """As SQLite and MariaDB do: open, unlink at once, then write; no directory shows the file."""
    capture = _capture(tmp_path)
    path = tmp_path / "etilqs_abc"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.unlink(path)
        os.write(fd, b"sorted run " + CANARY.encode("utf-16-le"))
        _until(lambda: any(h.owner is not None for h in list(capture._held.values())))
    finally:
        os.close(fd)
    caught = capture.stop()
    assert [(s.path, s.hits) for s in caught] == [("etilqs_abc", 1)]


def test_files_still_there_at_the_end_are_left_to_the_at_rest_scan(tmp_path: Path) -> None:
    capture = _capture(tmp_path)
    (tmp_path / "database.duckdb").write_bytes(CANARY.encode())
    (tmp_path / "database.duckdb.wal").write_bytes(b"no canary here")
    assert capture.stop() == ()


def test_a_log_overwritten_in_place_keeps_the_canaries_it_held(tmp_path: Path) -> None:
    capture = _capture(tmp_path)
    wal = tmp_path / "database.sqlite-wal"
    wal.write_bytes(CANARY.encode())  # closed after writing: scanned
    _until(lambda: capture.stats.scans > 0)
    wal.write_bytes(b"z" * len(CANARY))  # the WAL restarted over it
    caught = capture.stop()
    assert [(s.path, s.hits, s.transient) for s in caught] == [("database.sqlite-wal", 1, True)]


def test_settle_returns_once_the_watch_has_scanned_what_was_closed(tmp_path: Path) -> None:
    """The runner settles the capture before it evicts a stopped engine's files from the OS
    cache: a scan after the eviction would read them back."""
    capture = _capture(tmp_path, every_s=60.0)  # seldom a periodic look: the event and settle drive it
    wal = tmp_path / "database.sqlite-wal"
    try:
        for number in range(20):  # closed after writing, then settled at once: scanned whole before settle returns
            wal.write_bytes(CANARY.encode() * (number + 1))
            assert capture.settle() is True
            assert capture._held[capture._by_path[wal]].scanned_bytes == wal.stat().st_size
    finally:
        caught = capture.stop()
    assert caught == ()  # the file still holds all it held: the at-rest scan's to judge
    assert capture.settle() is False  # stopped: nothing to wait for


def test_default_file_kinds() -> None:
    assert [default_file_kind(p) for p in (
        "database.duckdb", "database.duckdb.wal", "duckdb.tmp/duckdb_temp_storage_S64K-0.tmp",
        "data/base/16384/2619", "data/pg_wal/000000010000000000000001", "data/base/pgsql_tmp/pgsql_tmp123.0",
        "datadir/ibdata1", "datadir/ib_logfile0", "tmp/#sql_1a2b_0.MAD", "backup/backup.duckdb.gz",
        "fs.pass", "database.sqlite-journal", "initdb.pw")] == [
        "data", "log", "temp", "data", "log", "temp", "data", "log", "temp", "backup", "other", "log", "other"]


def test_mariadb_calls_tdebenchs_own_load_staging_files_other() -> None:
    from tdebench.engines import get_engine

    database = get_engine("mariadb").provision(Path("/nonexistent"), get_engine("mariadb").encryption("none"), None)
    assert [database.file_kind(p) for p in ("load-orders.csv", "init.sql", "tmp/#sql-temptable-1.MAI",
                                            "data/tdebench/orders.ibd")] == ["other", "other", "temp", "data"]


def _scan(path: str, hits: int = 0, transient: bool = False) -> FileScan:
    return FileScan(path=path, bytes=8192, hits=hits, first_hit_offset=0 if hits else None, entropy_mean=7.9,
                    low_entropy_blocks=0, blocks=2, plaintext_header=None, transient=transient,
                    kind=default_file_kind(path))


def test_a_canary_in_a_transient_file_makes_an_encrypted_trial_plaintext() -> None:
    trial = dataclasses.replace(TRIAL, encryption="aes-256-gcm")
    scans = [_scan("database.duckdb"), _scan("duckdb.tmp/t.tmp", hits=5, transient=True)]
    verdict = judge(trial, "encrypted", scans, True, captured=True)
    assert verdict.verdict == "plaintext" and verdict.transient == TRANSIENT_CANARIES
    assert judge(trial, "encrypted", scans[:1], True, captured=True).transient == TRANSIENT_NONE
    assert judge(trial, "encrypted", scans[:1], True).transient == ""  # no capture ran


def test_a_baseline_whose_transient_files_hold_no_canary_says_coverage_was_not_exercised() -> None:
    scans = [_scan("database.duckdb", hits=2), _scan("duckdb.tmp/t.tmp", transient=True)]
    verdict = judge(TRIAL, "plaintext", scans, True, captured=True)
    assert verdict.verdict == "plaintext" and verdict.transient == TRANSIENT_CLEAN
    assert "transient coverage was not exercised" in verdict.detail
    shown = judge(TRIAL, "plaintext", [scans[0], _scan("duckdb.tmp/t.tmp", 1, True)], True, captured=True)
    assert "not exercised" not in shown.detail


def test_the_first_hit_of_a_gone_file_is_named_without_reading_it(tmp_path: Path) -> None:
    (tmp_path / "database.duckdb").write_bytes(b"\0" * 4096)
    verdict = TrialScan(TRIAL, (CANARY,), ()).judge(
        tmp_path, "encrypted", readable=True, transient=[_scan("duckdb.tmp/t.tmp", 3, True)],
        kind_of=default_file_kind)
    assert verdict.first_hit == "duckdb.tmp/t.tmp@0 (transient: gone before the trial ended)"
    assert {s.path: s.kind for s in verdict.files} == {"database.duckdb": "data", "duckdb.tmp/t.tmp": "temp"}


def test_verdicts_csv_counts_files_bytes_and_hits_per_kind_and_old_results_still_load() -> None:
    scans = [_scan("database.duckdb", hits=2), _scan("duckdb.tmp/a.tmp", 4, True), _scan("duckdb.tmp/b.tmp", 0, True)]
    verdict = judge(TRIAL, "plaintext", scans, True, captured=True)
    old = json.loads(json.dumps(to_json(verdict)))
    for scan in old["files"]:
        del scan["kind"], scan["transient"]
    del old["transient"]
    older = dataclasses.replace(from_json(old), trial=dataclasses.replace(TRIAL, repetition=2))
    run = RunData(directory=Path("."), plan_text="", environment={}, verdicts=[verdict, older])
    table = verdicts_table(run)
    out = io.StringIO()
    keys = [c.key for c in table.columns]
    writer = csv.DictWriter(out, keys, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(table.rows)
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert (rows[0]["temp_files"], rows[0]["temp_transient_files"], rows[0]["temp_bytes"], rows[0]["temp_hits"]) == (
        "0", "2", "16384", "4")
    assert (rows[0]["data_files"], rows[0]["data_hits"], rows[0]["transient"]) == ("1", "2", TRANSIENT_CANARIES)
    assert rows[1]["temp_files"] == "" and rows[1]["transient"] == ""  # from before kinds: no figures made up


def test_a_deleted_wal_with_canaries_is_no_positive_control_for_spills() -> None:
    """DuckDB deletes its WAL at a checkpoint: caught and judged, but it proves nothing about spills."""
    scans = [_scan("database.duckdb", hits=2), _scan("database.duckdb.wal", 4, True),
             _scan("duckdb.tmp/t.tmp", 0, True)]
    verdict = judge(TRIAL, "plaintext", scans, True, captured=True)
    assert verdict.transient == TRANSIENT_CLEAN and "not exercised" in verdict.detail


def test_what_a_workload_judges_by_itself_is_left_out(tmp_path: Path) -> None:
    """Workload.judged_apart: backup's plaintext export in its area (backup-*/) is judged by the
    backup workload's own rules, never as one of the trial's database's files; a spill beside it is."""
    capture = Capture([tmp_path], tmp_path, [CANARY], [], None, lambda: None, default_file_kind, 0.05,
                      apart=("backup-*",)).start()
    for area in ("backup-logical", "duckdb.tmp"):
        (tmp_path / area).mkdir()
        path = tmp_path / area / "rows.tmp"
        path.write_bytes(CANARY.encode())
        _until(lambda: str(path) in {str(h.path) for h in list(capture._held.values())}, 1.0)
        path.unlink()
    caught = capture.stop()
    assert [(s.path, s.hits) for s in caught] == [("duckdb.tmp/rows.tmp", 1)]


def test_the_capture_records_the_cpu_its_watch_used_and_the_verdict_sentence_reports_it(tmp_path: Path) -> None:
    capture = _capture(tmp_path, every_s=0.01)
    for number in range(20):  # files to hold and scan, and sweeps of /proc: work on the watch's clock
        (tmp_path / f"t{number}.tmp").write_bytes(CANARY.encode() * 1000)
        time.sleep(0.005)
    capture.stop()
    assert 0 < capture.stats.cpu_s < 5.0
    trials = [TrialOutcome(dataclasses.replace(TRIAL, repetition=n), "ok", "warm", False, 10.0) for n in (1, 2, 3)]
    verdicts = [judge(t.trial, "plaintext", [_scan("database.duckdb", hits=1)], True) for t in trials]
    verdicts = [dataclasses.replace(v, capture_cpu_s=cpu) for v, cpu in zip(verdicts, (0.01, 0.03, 0.2))]
    run = RunData(directory=Path("."), plan_text="", environment={}, verdicts=verdicts, trials=trials)
    assert ("the transient capture's watch used 0.3% of a core while the trials ran (median of 3; at most 2.0%, "
            f"{trials[2].trial.id})") in verdict_summary(run)
    before = RunData(directory=Path("."), plan_text="", environment={}, trials=trials,
                     verdicts=[dataclasses.replace(v, capture_cpu_s=None) for v in verdicts])
    assert "capture's watch" not in verdict_summary(before)  # not recorded: nothing said
