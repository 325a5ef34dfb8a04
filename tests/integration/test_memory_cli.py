"""memory_mb as a plan axis through the real command line: DuckDB and SQLite TPC-H runs and a
SQLite crud run, each at two memory sizes."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from click.testing import CliRunner

from tdebench.cli import main
from tdebench.store import read_run

PLAN = '''name = "memory"
repetitions = 1
warmups = 0
seed = 3

[[engines]]
name = "duckdb"
encryptions = ["none", "aes-256-gcm"]
memory_mb = [64, 128]

[[workloads]]
name = "tpch"
scale = 0.01
tests = ["power"]
'''


def test_a_memory_list_runs_each_value_and_compares_within_it(tmp_path: Path) -> None:
    plan = tmp_path / "memory.toml"
    plan.write_text(PLAN)
    result = CliRunner().invoke(main, ["run", str(plan), "--out", str(tmp_path / "out"), "--quiet"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    run = read_run(tmp_path / "out")
    assert sorted((t.trial.memory_mb, t.trial.encryption, t.cache_mb) for t in run.trials) == [
        (64, "aes-256-gcm", 64), (64, "none", 64), (128, "aes-256-gcm", 128), (128, "none", 128)]
    assert {t.trial.id for t in run.trials} >= {"duckdb/none/tpch/sf0.01/m64/r1", "duckdb/none/tpch/sf0.01/m128/r1"}
    with (tmp_path / "out" / "summary.csv").open() as fh:
        rows = [row for row in csv.DictReader(fh) if (row["test"], row["step"]) == ("power", "geomean")]
    # one overhead per memory value, each against none at that value
    compared = {row["memory_mb"]: row["overhead_pct"] for row in rows if row["encryption"] == "aes-256-gcm"}
    assert set(compared) == {"64", "128"} and all(compared.values())
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Cache fit" in report and "| duckdb | 64 | aes-256-gcm |" in report
    # SF 0.01 (a few MiB) fits in 64 MB, and the plan's cache is warm
    assert "tpch sf0.01 runs entirely in cache" in report
    engines = json.loads(CliRunner().invoke(main, ["engines", "--json"]).output)
    assert all(row["memory_mb"] for row in engines)  # what memory_mb sets, per engine


SQLITE_PLAN = '''name = "sqlite-caches"
repetitions = {repetitions}
warmups = 0
seed = 3

[[engines]]
name = "sqlite"
encryptions = {encryptions}
{memory}

[[workloads]]
{workload}
'''
POWER = 'name = "tpch"\nscale = 0.01\ntests = ["power"]'


def _run_plan(tmp_path: Path, text: str) -> Path:
    plan, out = tmp_path / "plan.toml", tmp_path / "out"
    plan.write_text(text)
    result = CliRunner().invoke(main, ["run", str(plan), "--out", str(out), "--quiet"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return out


def test_a_sqlite_database_larger_than_its_default_page_cache_does_not_fit(tmp_path: Path) -> None:
    """No memory_mb: SQLite's default page cache (2000 KiB a connection) against its 13 MiB of
    TPC-H SF 0.01 — recorded as the engine reports it, and reported as not fitting."""
    out = _run_plan(tmp_path, SQLITE_PLAN.format(repetitions=1, encryptions='["none"]', memory="", workload=POWER))
    run = read_run(out)
    (trial,) = run.trials
    assert trial.cache_mb == 2000 / 1024
    # each table's load is a step of its own, so a load's overhead can be located
    steps = {m.step for m in run.measurements if m.test == "load"}
    assert {"lineitem", "orders", "region", "tables", "indexes", "total"} <= steps
    report = (out / "report.md").read_text()
    assert "| sqlite | none | tpch | 0.01 | 1 |" in report
    row = next(line for line in report.splitlines() if line.startswith("| sqlite | none | tpch"))
    assert "| 1.95 MB |" in row and "| no |" in row and "no limit" not in report
    assert "the data is larger than the engine's cache on sqlite" in report


@pytest.mark.plots  # reads the report's plots
def test_two_cache_sizes_report_the_overhead_at_each_and_draw_the_cost_curve(tmp_path: Path) -> None:
    out = _run_plan(tmp_path, SQLITE_PLAN.format(repetitions=2, encryptions='["none", "aes-256-cbc"]',
                                                 memory="memory_mb = [2, 64]", workload=POWER))
    with (out / "summary.csv").open() as fh:
        rows = [row for row in csv.DictReader(fh) if (row["test"], row["step"]) == ("power", "geomean")]
    compared = {row["memory_mb"]: row["overhead_pct"] for row in rows if row["encryption"] == "aes-256-cbc"}
    assert set(compared) == {"2", "64"} and all(compared.values())
    report = (out / "report.md").read_text()
    assert "## Cost curve" in report and (out / "plots" / "cost-curve-sqlite--tpch-sf0.01.png").stat().st_size
    first = report.split("**Contents:**")[0]
    assert "the engine's 2 MB cache: pages decrypted again on every read" in first
    assert "data fits in the engine's 64 MB cache" in first


def test_crud_at_two_cache_sizes_reports_each_size_apart(tmp_path: Path) -> None:
    """crud takes several memory_mb values like TPC-H: each size is a configuration of its own,
    its trials record their cache, and summary.csv and crud.csv have every operation at each
    size, aes-256-cbc compared with none at the same size."""
    out = _run_plan(tmp_path, SQLITE_PLAN.format(repetitions=1, encryptions='["none", "aes-256-cbc"]',
                                                 memory="memory_mb = [2, 64]", workload='name = "crud"\nscale = 1000'))
    run = read_run(out)
    assert sorted((t.trial.memory_mb, t.trial.encryption, t.cache_mb) for t in run.trials) == [
        (2, "aes-256-cbc", 2), (2, "none", 2), (64, "aes-256-cbc", 64), (64, "none", 64)]
    with (out / "summary.csv").open() as fh:
        rows = [row for row in csv.DictReader(fh) if (row["workload"], row["step"], row["metric"]) ==
                ("crud", "total", "elapsed_s") and row["test"] != "load"]
    operations = {row["test"] for row in rows}
    assert operations == {"select", "insert", "update", "delete", "lookup", "scan"}
    assert sorted((row["memory_mb"], row["encryption"]) for row in rows) == sorted(
        (memory, encryption) for memory in ("2", "64") for encryption in ("none", "aes-256-cbc")
        for _ in operations)
    assert all(row["overhead_pct"] for row in rows if row["encryption"] == "aes-256-cbc")
    with (out / "crud.csv").open() as fh:
        crud = list(csv.DictReader(fh))
    assert {(row["memory_mb"], row["operation"]) for row in crud} == {(m, op) for m in ("2", "64") for op in operations}
    report = (out / "report.md").read_text()
    assert "sqlite 2 MB" in report and "sqlite 64 MB" in report
