"""The crud workload's report section from a hand-made run: the operations table (crud.csv),
the scaling figures and the lookup latency percentiles, alone and beside TPC-H."""

from __future__ import annotations

import csv
import itertools
import random
from pathlib import Path

import pytest

from fakes import write_fake_run
from tdebench.report import build
from tdebench.results import Measurement, TrialKey, TrialOutcome
from tdebench.store import ResultStore

MIB = 1024 * 1024
SCALES = (1000.0, 10000.0)
FACTORS = {"none": 1.0, "aes-256-gcm": 1.2}  # every operation 20% slower encrypted
REPETITIONS = 3
BASE_MS = {"select": 4.0, "insert": 6.0, "update": 5.0, "delete": 3.0, "lookup": 20.0, "scan": 2.0}
ROW_BYTES = 50.0
LATENCY_US = {"p50_elapsed_s": 50.0, "p90_elapsed_s": 90.0, "p99_elapsed_s": 99.0, "max_elapsed_s": 150.0,
              "mean_elapsed_s": 55.0}  # of a trial's lookups, times the factor
LOOKUPS = 100
FAILED = TrialKey("duckdb", "aes-256-gcm", "crud", 10000.0, 3)
SQUEEZE = {2: 3.0}  # at this memory_mb, encryption costs three times as much (60%, not 20%)
PLAN = '''name = "crud-fake"
repetitions = 3

[[engines]]
name = "duckdb"

[[workloads]]
name = "crud"
scales = [1000, 10000]
'''


def _noise(*identity: object) -> float:
    return 1.0 + random.Random("/".join(map(str, identity))).uniform(-0.005, 0.005)


def _trial(trial: TrialKey) -> list[Measurement]:
    factor = 1 + (FACTORS[trial.encryption] - 1) * SQUEEZE.get(trial.memory_mb or 0, 1.0)
    k = int(trial.scale // 10)
    records = [Measurement(trial, "load", "database", {"size_bytes": trial.scale * ROW_BYTES * 2})]
    for test, base in BASE_MS.items():
        rows = {"lookup": LOOKUPS, "scan": int(trial.scale)}.get(test, k)
        seconds = base / 1000 * trial.scale / 1000 * factor * _noise(trial.id, test)
        metrics = {"elapsed_s": seconds, "cpu_s": seconds / 2, "rows": float(rows),
                   "processed_bytes": rows * ROW_BYTES, "read_bytes": 0.0, "write_bytes": 4096.0,
                   "size_before_bytes": 2 * MIB, "size_after_bytes": 2 * MIB + 8192}
        records.append(Measurement(trial, test, "total", {**metrics, "elapsed_s": seconds * 100}, warmup=True,
                                   answer="ok"))  # a slow warm-up, never counted
        if test == "lookup":
            distribution = {metric: us * factor * _noise(trial.id, metric) / 1e6 for metric, us in LATENCY_US.items()}
            records.append(Measurement(trial, test, "point", distribution, answer="ok"))
        records.append(Measurement(trial, test, "total", metrics, answer="ok"))
        if trial == FAILED and test == "update":
            records[-1] = Measurement(trial, test, "total", metrics, answer="failed")
            break
    return records


def write_crud_run(directory: Path, start: bool = True, memories: tuple[int | None, ...] = (None,)) -> None:
    """A duckdb crud run at two table sizes, or (start=False) the same records added to an
    existing run directory; with `memories`, at each of those memory_mb values (SQUEEZE: what
    encryption costs more at one)."""
    store = ResultStore(directory)
    if start:
        given = f"memory_mb = {list(memories)}\n" if memories != (None,) else ""
        store.start(PLAN.replace('name = "duckdb"\n', f'name = "duckdb"\n{given}'), {"cpu": {"model": "Fake CPU"}})
    for repetition in range(1, REPETITIONS + 1):
        for scale, memory, encryption in itertools.product(SCALES, memories, FACTORS):
            trial = TrialKey("duckdb", encryption, "crud", scale, repetition, memory)
            for record in _trial(trial):
                store.append(record)
            failed = trial == FAILED
            store.append(TrialOutcome(trial, "failed" if failed else "ok", cache="warm", cache_dropped=False,
                                      elapsed_s=1.0, error="WrongAnswer: crud update" if failed else ""))


@pytest.fixture(scope="module")
def crud_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    directory = tmp_path_factory.mktemp("crud")
    write_crud_run(directory)
    return directory, build(directory)


def rows_of(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_crud_csv_has_every_operation_by_table_size_with_its_overhead(crud_run: tuple[Path, list[Path]]) -> None:
    directory, written = crud_run
    rows = rows_of(directory / "crud.csv")
    assert len(rows) == len(SCALES) * len(FACTORS) * len(BASE_MS)
    assert [row["operation"] for row in rows[:12]] == [op for op in BASE_MS for _ in FACTORS]  # baseline first
    select = next(r for r in rows
                  if (r["encryption"], r["table_rows"], r["operation"]) == ("aes-256-gcm", "1000.0", "select"))
    assert select["n"] == "3" and select["rows"] == "100.0"
    assert float(select["median_ms"]) == pytest.approx(4.0 * 1.2, rel=0.01)
    assert float(select["overhead_pct"]) == pytest.approx(20.0, abs=1.5)
    assert float(select["cpu_ms"]) == pytest.approx(float(select["median_ms"]) / 2)
    # the throughput of Moulianitakis & Asimakopoulos (2019): bytes processed / elapsed / 1024²
    assert float(select["mb_per_s"]) == pytest.approx(100 * ROW_BYTES / (float(select["median_ms"]) / 1000) / MIB)
    assert float(select["size_after_mib"]) - float(select["size_before_mib"]) == pytest.approx(8192 / MIB)
    # the failed trial's operations are left out: its update and everything it never ran
    by_op = {r["operation"]: r["n"] for r in rows if (r["encryption"], r["table_rows"]) == ("aes-256-gcm", "10000.0")}
    assert by_op == {"select": "2", "insert": "2", "update": "2", "delete": "2", "lookup": "2", "scan": "2"}
    baseline = next(r for r in rows if (r["encryption"], r["operation"]) == ("none", "scan"))
    assert baseline["overhead_pct"] == "" and baseline["noisy"] == "false"


def test_lookup_latency_shows_each_percentile_over_the_repetitions(crud_run: tuple[Path, list[Path]]) -> None:
    directory, _ = crud_run
    report = (directory / "report.md").read_text()
    section = report.split("## Point lookup latency", 1)[1].split("## ", 1)[0]
    lines = {tuple(cell.strip() for cell in line.split("|")[1:4]): [cell.strip() for cell in line.split("|")[4:-1]]
             for line in section.splitlines() if line.startswith("| duckdb |")}
    lookups, n, p50, p50_vs, p50_ci, p90, p99, p99_vs, p99_ci, largest, mean = lines[("duckdb", "none", "1,000")]
    assert (lookups, n, p50_vs, p99_vs) == ("100", "3", "–", "–")
    assert [float(v) for v in (p50, p90, p99, largest, mean)] == pytest.approx([50, 90, 99, 150, 55], rel=0.01)
    lookups, n, p50, p50_vs, p50_ci, p90, p99, p99_vs, p99_ci, largest, mean = \
        lines[("duckdb", "aes-256-gcm", "10,000")]
    assert (lookups, n) == ("100", "2")  # the failed trial is left out
    assert float(p99) == pytest.approx(99 * 1.2, rel=0.01) and float(p99_vs[:-1]) == pytest.approx(20, abs=1.5)
    assert p50_ci.startswith("\\[+") and p99_ci.endswith("%\\]")  # markdown-escaped brackets


def test_the_report_shows_the_section_and_one_scaling_figure_per_engine(crud_run: tuple[Path, list[Path]]) -> None:
    directory, written = crud_run
    assert (directory / "plots" / "scaling-duckdb-crud.png") in written
    markdown = (directory / "report.md").read_text()
    assert "## CRUD operations by table size" in markdown and "scaling-duckdb-crud.png" in markdown
    assert "## Per-query" not in markdown and "Per-query" not in (directory / "report.html").read_text()
    html = (directory / "report.html").read_text()
    assert "<h2>CRUD operations by table size</h2>" in html and "<h2>Point lookup latency</h2>" in html
    assert html.count("data:image/png;base64,") == markdown.count("](plots/")


def test_a_run_without_crud_has_no_section_and_no_crud_csv(tmp_path: Path) -> None:
    write_fake_run(tmp_path)
    written = build(tmp_path)
    assert (tmp_path / "crud.csv") not in written and not (tmp_path / "crud.csv").exists()
    assert "CRUD operations" not in (tmp_path / "report.md").read_text()
    assert "Point lookup latency" not in (tmp_path / "report.html").read_text()
    assert not list((tmp_path / "plots").glob("scaling-*"))


def test_a_run_with_tpch_and_crud_reports_both(tmp_path: Path) -> None:
    write_fake_run(tmp_path)
    write_crud_run(tmp_path, start=False)
    build(tmp_path)
    markdown = (tmp_path / "report.md").read_text()
    assert "## CRUD operations by table size" in markdown and "queries-duckdb-tpch" in markdown
    assert {row["operation"] for row in rows_of(tmp_path / "crud.csv")} == set(BASE_MS)
    assert {row["workload"] for row in rows_of(tmp_path / "summary.csv")} == {"tpch", "crud"}


def test_two_memory_sizes_are_kept_apart_in_every_crud_table(tmp_path: Path) -> None:
    """crud at memory_mb 2 and 64: summary.csv, crud.csv and the report each have a row per size,
    every encryption compared with `none` at its own size (60% at 2 MB, 20% at 64 MB; pooled,
    the two would read as one 40%), and a scaling figure per size."""
    write_crud_run(tmp_path, memories=(2, 64))
    written = build(tmp_path)
    summary = [row for row in rows_of(tmp_path / "summary.csv")
               if (row["test"], row["step"], row["metric"]) == ("select", "total", "elapsed_s")]
    assert sorted((row["memory_mb"], row["encryption"], row["scale"]) for row in summary) == [
        (memory, encryption, scale) for memory in ("2", "64") for encryption in ("aes-256-gcm", "none")
        for scale in ("1000.0", "10000.0")]
    compared = {(row["memory_mb"], row["scale"]): float(row["overhead_pct"]) for row in summary if row["overhead_pct"]}
    assert compared == pytest.approx({(m, s): 100 * (SQUEEZE.get(int(m), 1.0) * 0.2) for m, s in compared}, abs=1.5)
    assert set(compared) == {(m, s) for m in ("2", "64") for s in ("1000.0", "10000.0")}
    operations = rows_of(tmp_path / "crud.csv")
    assert list(operations[0])[:3] == ["engine", "memory_mb", "encryption"]
    assert len(operations) == 2 * len(SCALES) * len(FACTORS) * len(BASE_MS)
    assert [row["memory_mb"] for row in operations] == ["2"] * (len(operations) // 2) + ["64"] * (len(operations) // 2)
    markdown = (tmp_path / "report.md").read_text()
    for memory in (2, 64):
        select = next(line for line in markdown.split("## CRUD operations by table size", 1)[1].splitlines()
                      if line.startswith(f"| duckdb | {memory} | aes-256-gcm | 1,000 | select |"))
        vs_none = select.split("|")[9].strip()  # the 9th cell: vs none
        assert float(vs_none.rstrip("%")) == pytest.approx(SQUEEZE.get(memory, 1.0) * 20, abs=1.5)
        assert f"| duckdb | {memory} | aes-256-gcm | 1,000 |" in markdown.split("## Point lookup latency", 1)[1]
        assert tmp_path / "plots" / f"scaling-duckdb_{memory}_MB-crud.png" in written
    assert "duckdb 2 MB" in markdown and "duckdb 64 MB" in markdown  # In one minute and the findings name both
