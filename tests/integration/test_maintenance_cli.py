"""End to end through the CLI on real engines: the maintenance workload on a tiny plan (DuckDB,
SQLite and PostgreSQL's column layer, with their baselines), every step checked, the
time-to-encrypt table in the report, and nothing left running."""

from __future__ import annotations

import csv
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from tdebench.cli import main
from tdebench.store import read_run

PLAN = '''name = "maintenance-tiny"
repetitions = 1
warmups = 0
seed = 5

[[engines]]
name = "duckdb"
encryptions = ["aes-256-gcm"]

[[engines]]
name = "sqlite"
encryptions = ["chacha20-poly1305"]

[[engines]]
name = "postgres"
encryptions = ["column-aes-256"]

[[workloads]]
name = "maintenance"
scale = 0.01
tests = ["reindex", "encrypt", "rekey"]
'''
METHODS = {("duckdb", "encrypt"): "copy-database", ("duckdb", "rekey"): "copy-database",
           ("sqlite", "encrypt"): "pragma-rekey", ("sqlite", "rekey"): "pragma-rekey",
           ("postgres", "encrypt"): "seal-columns", ("postgres", "rekey"): "reseal-columns"}


@pytest.fixture(scope="module")
def run_dir(server_tmp_dir: Path) -> Path:
    base = server_tmp_dir  # the postgres user can enter it
    (base / "plan.toml").write_text(PLAN)
    result = CliRunner().invoke(main, ["run", str(base / "plan.toml"), "--out", str(base / "out"), "--quiet",
                                       "--work-dir", str(base)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert not [p for p in psutil.process_iter(["cmdline"]) if str(base) in " ".join(p.info["cmdline"] or ())]
    return base / "out"


def test_every_step_ran_and_was_checked(run_dir: Path) -> None:
    run = read_run(run_dir)
    assert len(run.trials) == 6 and all(t.status == "ok" for t in run.trials), [t.error for t in run.trials]
    steps = {(m.trial.engine, m.trial.encryption, m.test): m for m in run.measurements
             if m.test in ("reindex", "encrypt", "rekey")}
    for engine in ("duckdb", "sqlite", "postgres"):
        encrypted = next(e for (n, e, _) in steps if n == engine and e != "none")
        for test in ("encrypt", "rekey"):
            done = steps[(engine, encrypted, test)]
            assert (done.step, done.answer) == (METHODS[(engine, test)], "ok")
            assert done.metrics["elapsed_s"] > 0 and done.metrics["size_bytes"] > 1_000_000
            baseline = steps[(engine, "none", test)]
            assert (baseline.answer, baseline.metrics) == ("not applicable", {})
        assert steps[(engine, encrypted, "reindex")].answer == steps[(engine, "none", "reindex")].answer == "ok"
    assert all(v.as_expected for v in run.verdicts) and len(run.verdicts) == 6


def test_the_report_has_the_time_to_encrypt_table(run_dir: Path) -> None:
    with (run_dir / "maintenance.csv").open(newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["test"] == "encrypt" and r["encryption"] != "none"]
    assert {(r["engine"], r["method"], r["verified"]) for r in rows} == {
        ("duckdb", "copy-database", "yes"), ("sqlite", "pragma-rekey", "yes"), ("postgres", "seal-columns", "yes")}
    assert all(float(r["mb_per_s"]) > 0 and float(r["seconds"]) > 0 for r in rows)
    markdown = (run_dir / "report.md").read_text()
    assert "## Time to encrypt an existing database" in markdown and "## Index rebuild (lineitem)" in markdown
    summary = list(csv.DictReader((run_dir / "summary.csv").open()))
    assert any(r["test"] == "reindex" and r["encryption"] != "none" and r["overhead_pct"] for r in summary)
