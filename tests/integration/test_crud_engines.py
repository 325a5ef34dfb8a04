"""The crud workload end to end on real engines: every engine with `none` and real encryptions
through the CLI (answers, verdicts, every operation measured, the report's sections), a cold
plan going cold before each statement, and the checks failing loudly on a tampered table."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from click.testing import CliRunner

from plots import drawn
from tdebench.cli import main
from tdebench.engines.base import NONE
from tdebench.engines.sqlite import SQLiteEngine
from tdebench.measure.clock import MonotonicClock
from tdebench.measure.recorder import Recorder
from tdebench.results import RunData, TrialKey
from tdebench.store import ResultStore, read_run
from tdebench.workloads.base import RunContext, WrongAnswer
from tdebench.workloads.crud.workload import CrudWorkload, lookup_ids

ROWS, K, LOOKUPS = 2000, 200, 50
OPERATIONS = CrudWorkload.tests
EVERY_ENGINE = f'''name = "crud-every-engine"
repetitions = 1
warmups = 1
seed = 5

[[engines]]
name = "duckdb"
encryptions = ["none", "aes-256-gcm"]

[[engines]]
name = "sqlite"
encryptions = ["none", "chacha20-poly1305"]

[[engines]]
name = "mariadb"
encryptions = ["none", "aes-128-cbc"]

[[engines]]
name = "postgres"
encryptions = ["none", "fs-aes-256-gcm", "column-aes-256"]

[[workloads]]
name = "crud"
scale = {ROWS}
lookups = {LOOKUPS}
'''
COLD = '''name = "crud-cold"
repetitions = 1
warmups = 1
cache = "cold"
seed = 5

[[engines]]
name = "duckdb"
encryptions = ["none", "aes-256-ctr"]

[[workloads]]
name = "crud"
scales = [1000, 3000]
lookups = 20
'''


def run_plan(base: Path, text: str) -> Path:
    (base / "plan.toml").write_text(text)
    result = CliRunner().invoke(main, ["run", str(base / "plan.toml"), "--out", str(base / "out"),
                                       "--data-dir", str(base / "data"), "--quiet"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return base / "out"


@pytest.fixture(scope="module")
def every_engine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_plan(tmp_path_factory.mktemp("crud-every-engine"), EVERY_ENGINE)


def configs(run: RunData) -> set[tuple[str, str]]:
    return {(t.trial.engine, t.trial.encryption) for t in run.trials}


def assert_every_operation_measured_and_right(run: RunData, rows: int, k: int, lookups: int) -> None:
    assert all(t.status == "ok" for t in run.trials), [t.error for t in run.trials if t.status != "ok"]
    for engine, encryption in configs(run):
        mine = [m for m in run.measurements if (m.trial.engine, m.trial.encryption, m.trial.scale) ==
                (engine, encryption, float(rows)) and not m.warmup and m.test in OPERATIONS]
        totals = {m.test: m for m in mine if m.step == "total"}
        assert set(totals) == set(OPERATIONS), (engine, encryption)
        assert {m.answer for m in mine} == {"ok"}
        assert {test: m.metrics["rows"] for test, m in totals.items()} == {
            "select": k, "insert": k, "update": k, "delete": k, "lookup": lookups, "scan": rows}
        for m in totals.values():
            assert m.metrics["elapsed_s"] > 0 and m.metrics["cpu_s"] >= 0 and m.metrics["processed_bytes"] > 0
            assert m.metrics["size_after_bytes"] > 0 and m.metrics["size_before_bytes"] > 0
        (point,) = [m.metrics for m in mine if m.step == "point"]  # the distribution of single lookups
        assert 0 < point["p50_elapsed_s"] <= point["p90_elapsed_s"] <= point["p99_elapsed_s"] <= point["max_elapsed_s"]
        assert point["mean_elapsed_s"] * lookups <= totals["lookup"].metrics["elapsed_s"]


def test_every_engine_runs_every_operation_with_every_answer_right(every_engine: Path) -> None:
    run = read_run(every_engine)
    assert configs(run) == {("duckdb", "none"), ("duckdb", "aes-256-gcm"), ("sqlite", "none"),
                            ("sqlite", "chacha20-poly1305"), ("mariadb", "none"), ("mariadb", "aes-128-cbc"),
                            ("postgres", "none"), ("postgres", "fs-aes-256-gcm"), ("postgres", "column-aes-256")}
    assert_every_operation_measured_and_right(run, ROWS, K, LOOKUPS)


def test_every_verdict_is_as_expected(every_engine: Path) -> None:
    run = read_run(every_engine)
    assert len(run.verdicts) == 9
    for verdict in run.verdicts:
        assert verdict.verdict == ("plaintext" if verdict.trial.encryption == "none" else "encrypted"), verdict
    column = next(v for v in run.verdicts if v.trial.encryption == "column-aes-256")
    assert "pgcrypto" in column.engine_state  # persons' personal columns were sealed, not only the canaries


def test_the_report_has_the_crud_sections(every_engine: Path) -> None:
    with (every_engine / "crud.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 9 * len(OPERATIONS)
    assert all(float(row["mb_per_s"]) > 0 for row in rows)
    encrypted = [row for row in rows if row["encryption"] != "none"]
    assert all(row["overhead_pct"] != "" for row in encrypted)
    markdown = (every_engine / "report.md").read_text()
    assert "## CRUD operations by table size" in markdown and "## Point lookup latency" in markdown
    assert "scaling-" not in markdown  # one table size: a scaling figure would be a single point per line


@pytest.mark.plots  # reads the report's plots
def test_a_cold_plan_goes_cold_before_each_statement(tmp_path: Path) -> None:
    out = run_plan(tmp_path, COLD)
    run = read_run(out)
    assert all((t.cache, t.evicted, t.cache_dropped) == ("cold", "files", True) for t in run.trials)  # mincore-checked
    for rows in (1000, 3000):
        assert_every_operation_measured_and_right(run, rows, rows // 10, 20)
    assert {v.verdict for v in run.verdicts} == {"plaintext", "encrypted"}
    assert all(v.as_expected for v in run.verdicts)
    # two table sizes: the scaling figure (time against rows, a line per encryption) is drawn
    assert "plots/scaling-duckdb-crud.png" in (out / "report.md").read_text()
    assert drawn(out / "plots" / "scaling-duckdb-crud.png")


@pytest.fixture
def loaded(tmp_path: Path):
    """A real SQLite database with the crud tables loaded, outside the runner."""
    database = SQLiteEngine().provision(tmp_path / "ws", NONE, None)
    (tmp_path / "ws").mkdir()
    database.create()
    store = ResultStore(tmp_path / "out")
    store.start("", {})
    workload = CrudWorkload()
    workload.prepare(1000, tmp_path / "data", 9)
    recorder = Recorder(store, TrialKey("sqlite", "none", "crud", 1000.0, 1), MonotonicClock())
    ctx = RunContext(database=database, dialect="sqlite", recorder=recorder, scale=1000.0, streams=1,
                     data_dir=tmp_path / "data", seed=9, options={"operation_fraction": 0.1, "lookups": 30})
    conn = database.connect()
    workload.load(ctx, conn)
    yield workload, ctx, conn
    conn.close()
    database.close()


def test_tests_leave_the_table_as_they_found_it_in_any_order(loaded) -> None:
    workload, ctx, conn = loaded
    for test in (*reversed(OPERATIONS), "delete", "insert", "update", "update", "select"):
        workload.run(test, ctx, conn, warmup=True)
    workload.run("scan", ctx, conn, warmup=False)  # count and sums of the generated data, still
    assert conn.execute("SELECT count(*) FROM persons_staging") == [(100,)]


def test_a_wrong_answer_fails_the_test_after_its_measurement_is_stored(loaded) -> None:
    workload, ctx, conn = loaded
    missing = lookup_ids(9, 1000, 30)[0]
    conn.execute("DELETE FROM persons WHERE id IN (7, ?)", [missing])
    with pytest.raises(WrongAnswer, match=r"crud select: select returned 9[89] rows"):
        workload.run("select", ctx, conn, warmup=False)
    with pytest.raises(WrongAnswer,
                       match=rf"crud lookup: \d+ of 30 lookups did not return their one row: id {missing}"):
        workload.run("lookup", ctx, conn, warmup=False)
    with pytest.raises(WrongAnswer, match=r"crud scan: scan found \(rows, sum of ages, address characters\) = \(998,"):
        workload.run("scan", ctx, conn, warmup=False)
    stored = read_run(ctx.recorder.store.directory).measurements
    answers = {m.test: m.answer for m in stored if m.step == "total" and m.test in OPERATIONS}
    assert answers == {"select": "failed", "lookup": "failed", "scan": "failed"}
    assert next(m for m in stored if m.test == "scan").metrics["rows"] == 998
    with pytest.raises(ValueError, match="crud has no test 'merge'; valid: select, insert"):
        workload.run("merge", ctx, conn, warmup=False)
