"""The answer table from a real run (report/answer.py): the quick plan's shape at its smallest —
DuckDB and SQLite, TPC-H's power test in every round and the strength tests (spill included) in the
first — fills every column of DuckDB's and SQLite's rows from measurements: RC4 broken, DuckDB's
AES-256-CTR forgeable, AES-256-GCM refusing changes by its tag, and the temp files of the spill
encrypted against the baseline's plaintext (the positive control). `tdebench run --engine` runs one
engine's rows of the same plan."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from tdebench.cli import main
from tdebench.report.answer import rows
from tdebench.report.records import summary_records
from tdebench.store import read_run

PLAN = '''name = "answer"
repetitions = 2
warmups = 0
placebo = false
seed = 5

[[engines]]
name = "duckdb"
encryptions = ["none", "aes-256-gcm", "aes-256-ctr"]

[[engines]]
name = "sqlite"
encryptions = ["none", "aes-256-cbc", "rc4"]

[[workloads]]
name = "tpch"
scale = 0.01
tests = ["power"]

[[workloads]]
name = "strength"
scale = 2000
repetitions = 1
tests = ["spill", "repeats", "tamper", "forgery", "old-key"]
'''


def _run(tmp_path: Path, *extra: str) -> Path:
    plan = tmp_path / "answer.toml"
    plan.write_text(PLAN)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["run", str(plan), "--out", str(out), "--quiet", *extra],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "The answer" in result.output
    return out


def test_a_run_with_strength_tests_fills_every_column(tmp_path: Path) -> None:
    out = _run(tmp_path)
    run = read_run(out)
    assert {(t.trial.workload, t.trial.repetition) for t in run.trials} == {
        ("tpch", 1), ("tpch", 2), ("strength", 1)}  # the strength tests in the first round only
    found = {(r["engine"], r["encryption"]): r for r in rows(run, summary_records(run))}
    for (engine, encryption), row in found.items():
        if encryption == "none":
            assert row["temp"] == "plaintext (control)", (engine, row)  # the spill's positive control
            continue
        for column in ("cost", "data", "log", "temp", "integrity", "leaks", "keys", "advice"):
            assert "not measured" not in row[column], (engine, encryption, column, row[column])
        assert row["data"] == row["temp"] == "encrypted", (engine, encryption, row)
        assert row["cost"].startswith("power test "), row["cost"]
    assert found[("sqlite", "rc4")]["advice"].startswith("broken")
    assert found[("duckdb", "aes-256-ctr")]["advice"].startswith("confidentiality only")
    assert "forgeable" in found[("duckdb", "aes-256-ctr")]["integrity"]
    assert found[("sqlite", "aes-256-cbc")]["advice"].startswith("confidentiality only")
    assert found[("duckdb", "aes-256-gcm")]["advice"].startswith("recommended")
    assert "tag detects" in found[("duckdb", "aes-256-gcm")]["integrity"]
    report = (out / "report.md").read_text()
    table = report[report.index("**The answer:**"):report.index("**In full:**")]
    assert "| sqlite | rc4 |" in table and "broken" in table


def test_run_engine_runs_one_engines_rows_of_a_plan(tmp_path: Path) -> None:
    plan = tmp_path / "answer.toml"
    plan.write_text(PLAN.split("[[workloads]]")[0].replace("repetitions = 2", "repetitions = 1")
                    + '[[workloads]]\nname = "tpch"\nscale = 0.01\ntests = ["power"]\n')
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["run", str(plan), "--out", str(out), "--quiet", "--engine", "duckdb"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    run = read_run(out)
    assert {t.trial.engine for t in run.trials} == {"duckdb"}
    assert 'only = ["duckdb"]  # tdebench run --engine: the engines of this plan that ran' in (
        out / "plan.toml").read_text().splitlines()  # stored: a resume and the report read the plan as it ran
    wrong = CliRunner().invoke(main, ["run", str(plan), "--out", str(tmp_path / "other"), "--engine", "mysql"])
    assert wrong.exit_code == 2 and "has no such engine; its engines: duckdb, sqlite" in wrong.output
