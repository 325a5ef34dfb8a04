"""End to end on the real embedded engines: DuckDB's and SQLite's encryptions run TPC-H at SF 0.01
(power and throughput), with every answer checked and every verdict right: every cipher of
SQLite3MC but AES-128-CBC (its AES-256-CBC code with a shorter key), both of DuckDB's modes, and
gocryptfs with each of its ciphers on one engine. Every encryption of both engines is proven for
real in tests/contract/test_engine_contract.py (round trip, files, at-rest verdict, wrong key,
bulk load), and what `encryptions = "all"` means in tests/unit/test_plan.py."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from click.testing import CliRunner

from tdebench.cli import main
from tdebench.engines import PROVISIONED
from tdebench.stats import ONE_VALUE
from tdebench.store import read_run

PLAN = '''name = "every-embedded-encryption"
repetitions = 1
warmups = 0
cache = "cold"
seed = 11

[[engines]]
name = "duckdb"
encryptions = ["none", "aes-256-gcm", "aes-256-ctr", "fs-xchacha20-poly1305"]

[[engines]]
name = "sqlite"
encryptions = ["none", "aes-256-cbc", "chacha20-poly1305", "sqlcipher", "ascon-128", "aegis-256", "rc4",
               "fs-aes-256-gcm"]

[[workloads]]
name = "tpch"
scale = 0.01
tests = ["power", "throughput"]
streams = 2
load_part_rows = 20000  # lineitem in four parts, through every cipher and gocryptfs: every answer must still be right
'''
LEFT_OUT = {("duckdb", "fs-aes-256-gcm"), ("sqlite", "aes-128-cbc"), ("sqlite", "fs-xchacha20-poly1305")}
"""What "all" would add: each differs from a configuration here only in its key length or its
gocryptfs cipher."""
EVERY = {(engine, enc.name) for engine, cls in PROVISIONED.items() for enc in cls.encryptions
         if cls.capabilities.embedded and not enc.by_name_only and engine != "sqlcipher"} - LEFT_OUT
"""sqlcipher, Zetetic's SQLCipher, runs every workload in test_sqlcipher_engine.py instead: the same
SQLite files and SQL as sqlite's, its power and throughput tests here would add five trials."""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("embedded")
    (base / "plan.toml").write_text(PLAN)
    result = CliRunner().invoke(main, ["run", str(base / "plan.toml"), "--out", str(base / "out"), "--quiet"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return base / "out"


def test_every_encryption_ran_and_every_answer_is_right(run_dir: Path) -> None:
    run = read_run(run_dir)
    assert {(t.trial.engine, t.trial.encryption) for t in run.trials} == EVERY
    assert all(t.status == "ok" for t in run.trials), [t.error for t in run.trials if t.status != "ok"]
    queries = [m for m in run.measurements if m.step.startswith("q")]
    assert {m.answer for m in queries} == {"ok"}
    for engine, enc in EVERY:
        power = {m.step for m in queries if (m.trial.engine, m.trial.encryption, m.test) == (engine, enc, "power")}
        streams = {m.stream for m in queries
                   if (m.trial.engine, m.trial.encryption, m.test) == (engine, enc, "throughput")}
        assert power == {f"q{n}" for n in range(1, 23)} and streams == {1, 2}


def test_verdicts_encrypted_clean_and_baselines_show_their_canaries(run_dir: Path) -> None:
    rows = list(csv.DictReader((run_dir / "verdicts.csv").open()))
    assert {(r["engine"], r["encryption"]) for r in rows} == EVERY
    for row in rows:
        expected = "plaintext" if row["encryption"] == "none" else "encrypted"
        assert row["verdict"] == expected, row
        assert int(row["files_scanned"]) >= 1 and int(row["bytes_scanned"]) > 0
        assert bool(row["first_hit"]) == (expected == "plaintext")


def test_measurements_are_real_and_cold_cache_is_recorded(run_dir: Path) -> None:
    run = read_run(run_dir)
    assert all((t.cache, t.evicted, t.cache_dropped) == ("cold", "files", True) for t in run.trials)  # mincore-checked
    sizes = [m.metrics["size_bytes"] for m in run.measurements if m.step == "database"]
    assert len(sizes) == len(EVERY) and min(sizes) > 1_000_000  # SF 0.01 is over a megabyte
    power = [m for m in run.measurements if m.test == "power" and m.step.startswith("q")]
    assert all(m.metrics["elapsed_s"] > 0 and m.metrics["cpu_s"] >= 0 for m in power)
    assert sum(m.metrics["cpu_s"] for m in power) > 0
    assert any(m.metrics["read_chars"] > 0 for m in power)  # the queries read the database file
    opened = {m.trial.encryption: m.metrics["elapsed_s"] for m in run.measurements
              if m.trial.engine == "sqlite" and m.step == "connect"}
    assert opened["sqlcipher"] > opened["none"]  # PBKDF2 is paid on open, measured there


def test_report_covers_every_engine_and_encryption(run_dir: Path) -> None:
    html = (run_dir / "report.html").read_text()
    summary = list(csv.DictReader((run_dir / "summary.csv").open()))
    for engine, enc in EVERY:
        assert enc in html
        assert any(r["engine"] == engine and r["encryption"] == enc for r in summary)
    overheads = [r for r in summary if r["encryption"] != "none" and r["step"] == "geomean"]
    # one round: each overhead a ratio with no interval or p, and the reason written beside it
    assert overheads and all(r["overhead_pct"] != "" and r["overhead_ci_low"] == r["p_value"] == ""
                             and r["overhead_note"] == ONE_VALUE for r in overheads)
