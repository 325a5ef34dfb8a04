"""The transient capture on a real DuckDB: a sort past its memory limit spills rows into
`duckdb_temp_storage_*.tmp` files that DuckDB deletes before the trial ends; the capture holds
and scans them, and the verdict judges them with the files at rest."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from click.testing import CliRunner

from tdebench import verify
from tdebench.capture import Capture
from tdebench.cli import main
from tdebench.engines import get_engine
from tdebench.keys import KeySource
from tdebench.results import TRANSIENT_CANARIES, TRANSIENT_CLEAN, TrialKey

CANARY = "TDEBENCH-CANARY-" + "5a" * 12
MARKER = "TDEBENCH-MARKER-" + "a5" * 12


def _spilled_trial(workspace: Path, encryption: str) -> tuple[list[Path], object]:
    """A DuckDB database (memory_limit 64 MiB) whose rows carry the canary, sorted whole so the
    sort spills; returns what the workspace holds at the end and the verdict."""
    engine = get_engine("duckdb", memory_mb=64)
    enc = engine.encryption(encryption)
    key = None if enc.is_baseline else KeySource().key_for("capture-test")
    database = engine.provision(workspace, enc, key)
    capture = Capture(database.capture_dirs(), workspace, [CANARY], [MARKER], database.plaintext_signature(),
                      database.engine_processes, database.file_kind, every_s=0.2).start()
    try:
        database.create()
        conn = database.connect()
        conn.execute(f"CREATE TABLE t AS SELECT i, md5(i::VARCHAR) || CASE WHEN i % 500 = 0 THEN '{CANARY}' "
                     "ELSE '' END AS s FROM range(1500000) r(i)")
        rows = conn.execute("SELECT count(*), max(x) FROM (SELECT s, row_number() OVER (ORDER BY s) x FROM t)")
        assert rows == [(1500000, 1500000)]
        conn.close()
        database.close()
        left = sorted(p.relative_to(workspace) for p in workspace.rglob("*") if p.is_file())
        transient = capture.stop()
    finally:
        capture.close()
    expected = "plaintext" if enc.is_baseline else "encrypted"
    trial = TrialKey("duckdb", encryption, "test", 0.0, 1)
    verdict = verify.TrialScan(trial, (CANARY,), (MARKER,)).judge(
        workspace, expected, readable=True, signature=database.plaintext_signature(), transient=transient,
        kind_of=database.file_kind)
    return left, verdict


def test_the_baselines_spill_files_show_canaries_after_duckdb_deleted_them(tmp_path: Path) -> None:
    left, verdict = _spilled_trial(tmp_path, "none")
    assert not any("duckdb_temp_storage" in str(p) for p in left)  # gone before the trial ended
    caught = [s for s in verdict.files if s.transient and "duckdb_temp_storage" in s.path]
    assert caught and all(s.kind == "temp" for s in caught)
    assert sum(s.hits for s in caught) > 0
    assert verdict.transient == TRANSIENT_CANARIES and verdict.verdict == "plaintext"


@pytest.mark.parametrize("cipher", ["aes-256-gcm-plaintemp"])
def test_an_encrypted_database_whose_temp_files_are_plaintext_is_judged_plaintext(tmp_path: Path,
                                                                                   cipher: str) -> None:
    """DuckDB's temp_file_encryption is off unless set (the -plaintemp variants keep it so): the
    database file is ciphertext, the spill is not, and only the capture sees it."""
    _, verdict = _spilled_trial(tmp_path, cipher)
    at_rest = [s for s in verdict.files if not s.transient]
    assert at_rest and sum(s.hits for s in at_rest) == 0  # what the at-rest scan alone sees: clean
    assert verdict.verdict == "plaintext", verdict.detail
    assert verdict.first_hit is not None and "duckdb_temp_storage" in verdict.first_hit
    assert "transient" in verdict.first_hit


def test_an_encrypted_databases_temp_files_are_caught_and_hold_no_canary(tmp_path: Path) -> None:
    """aes-256-gcm sets temp_file_encryption: the capture catches its spill files, and they hold
    no canary, so the trial is encrypted with its transient files judged too."""
    _, verdict = _spilled_trial(tmp_path, "aes-256-gcm")
    caught = [s for s in verdict.files if s.transient and "duckdb_temp_storage" in s.path]
    assert caught and sum(s.bytes for s in caught) > 0 and sum(s.hits for s in caught) == 0
    assert verdict.verdict == "encrypted", verdict.detail


PLAN = '''name = "spill"
repetitions = 1
warmups = 0
cache = "warm"
capture_every_s = 0.2
{engines}
[[workloads]]
name = "tpch"
scale = 0.01
tests = ["spill"]
'''
EMBEDDED = '''
[[engines]]
name = "duckdb"
encryptions = ["none", "aes-256-gcm"]
memory_mb = 64

[[engines]]
name = "sqlite"
encryptions = ["none", "aes-256-cbc"]
memory_mb = 16
temp_store = "file"
'''
SQLCIPHER = '''
[[engines]]
name = "sqlcipher"
encryptions = ["none", "aes-256-cbc-hmac-sha512"]
memory_mb = 16
temp_store = "file"
'''
SERVERS = '''
[[engines]]
name = "mariadb"
encryptions = ["none", "aes-256-cbc"]
memory_mb = 16

[[engines]]
name = "postgres"
encryptions = ["none", "column-aes-256"]
memory_mb = 16
'''


def _run(tmp_path: Path, engines: str, exit_code: int = 0) -> tuple[dict[tuple[str, str], dict[str, str]], str]:
    """tdebench run of TPC-H's spill test on `engines`, exiting with `exit_code` (1: a verdict
    was not the expected one): verdicts.csv's rows by (engine, encryption), and report.md."""
    (tmp_path / "plan.toml").write_text(PLAN.format(engines=engines))
    result = CliRunner().invoke(main, ["run", str(tmp_path / "plan.toml"), "--out", str(tmp_path / "out"), "--quiet"],
                                catch_exceptions=False)
    assert result.exit_code == exit_code, result.output
    rows = {(r["engine"], r["encryption"]): r for r in csv.DictReader((tmp_path / "out" / "verdicts.csv").open())}
    return rows, (tmp_path / "out" / "report.md").read_text()


def _canaries_in_the_baselines_temp_files_only(row: dict[str, str], encrypted: dict[str, str]) -> None:
    assert row["verdict"] == "plaintext" and row["transient"] == TRANSIENT_CANARIES, row["detail"]
    assert int(row["temp_transient_files"]) > 0 and int(row["temp_hits"]) > 0
    assert "not exercised" not in row["detail"]
    assert encrypted["verdict"] == "encrypted" and encrypted["transient"] == TRANSIENT_CLEAN, encrypted["detail"]
    assert int(encrypted["temp_transient_files"]) > 0 and encrypted["temp_hits"] == "0"


def test_the_spill_test_puts_the_canaries_in_embedded_engines_temp_files(tmp_path: Path) -> None:
    """Through the runner: TPC-H's canaries sit in customer rows that test spill sorts past DuckDB's
    64 MiB and SQLite's 16 MiB (temp_store = "file"): each baseline's caught temp files show its
    canaries, so the positive control fires and the report no longer says "not exercised"; the
    encrypted trials' caught temp files show none."""
    rows, report = _run(tmp_path, EMBEDDED)
    _canaries_in_the_baselines_temp_files_only(rows["duckdb", "none"], rows["duckdb", "aes-256-gcm"])
    _canaries_in_the_baselines_temp_files_only(rows["sqlite", "none"], rows["sqlite", "aes-256-cbc"])
    assert "not exercised" not in report


def test_sqlcipher_writes_its_sort_spills_in_plaintext(tmp_path: Path) -> None:
    """SQLCipher's codec encrypts the database's pages and its journals', not SQLite's other temp
    files (Zetetic, "SQLCipher Design": file-based temp stores are to be disabled): with temp_store
    = "file" the spill test's sort files (etilqs_*) hold the canaries under the key as without one,
    a true leak judged plaintext, where SQLite3MC's hold none (the test above)."""
    rows, _ = _run(tmp_path, SQLCIPHER, exit_code=1)  # the encrypted verdict plaintext, not as expected
    baseline, encrypted = rows["sqlcipher", "none"], rows["sqlcipher", "aes-256-cbc-hmac-sha512"]
    assert baseline["verdict"] == "plaintext" and baseline["transient"] == TRANSIENT_CANARIES, baseline["detail"]
    assert encrypted["verdict"] == "plaintext" and encrypted["transient"] == TRANSIENT_CANARIES, encrypted["detail"]
    assert int(encrypted["temp_hits"]) > 0 and "sqlite.tmp/etilqs_" in encrypted["first_hit"]
    assert "transient" in encrypted["first_hit"]


def test_the_spill_test_puts_the_canaries_in_servers_temp_files_and_the_column_layers(tmp_path: Path) -> None:
    """MariaDB's and PostgreSQL's baselines: their temp files (MariaDB's in tmp/, PostgreSQL's
    pgsql_tmp) show the canaries. As measured, both encrypted trials leak there: MariaDB's
    aes-256-cbc (encrypt_tmp_files and encrypt_tmp_disk_tables on) left the canaries in an Aria
    internal temp table of the window (tmp/#sql-temptable-*.MAD), and PostgreSQL's column layer
    sorts decrypted values into pgsql_tmp; each is judged plaintext, true leaks kept so."""
    rows, report = _run(tmp_path, SERVERS, exit_code=1)  # two verdicts plaintext, not as expected
    mariadb, encrypted = rows["mariadb", "none"], rows["mariadb", "aes-256-cbc"]
    assert mariadb["transient"] == TRANSIENT_CANARIES and int(mariadb["temp_hits"]) > 0
    assert encrypted["verdict"] == "plaintext" and int(encrypted["temp_hits"]) > 0, encrypted["detail"]
    assert "#sql-temptable-" in encrypted["first_hit"] and "transient" in encrypted["first_hit"]
    baseline, column = rows["postgres", "none"], rows["postgres", "column-aes-256"]
    assert baseline["transient"] == TRANSIENT_CANARIES and int(baseline["temp_hits"]) > 0
    assert column["verdict"] == "plaintext" and column["transient"] == TRANSIENT_CANARIES, column["detail"]
    assert int(column["temp_hits"]) > 0 and "pgsql_tmp" in column["first_hit"]
    assert "not exercised" not in report
