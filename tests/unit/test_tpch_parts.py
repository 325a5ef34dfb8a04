"""TPC-H's load in parts (`load_part_rows`): the same rows in the same order, cut into cached
files, each part a step of its own, and every load figure still the sum of its parts."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import duckdb
import pytest

from tdebench.workloads.base import RunContext
from tdebench.workloads.tpch import data, schema
from tdebench.workloads.tpch.workload import TpchWorkload


def table_file(directory: Path, name: str, rows: int) -> Path:
    path = directory / f"{name}.parquet"
    duckdb.connect().execute(f"COPY (SELECT range AS n, 'row ' || range AS s FROM range({rows})) "
                             f"TO '{path}' (FORMAT parquet)")
    return path


def rows_of(path: Path) -> list[int]:
    return [n for (n,) in duckdb.connect().execute(f"SELECT n FROM read_parquet('{path}')").fetchall()]


def test_a_table_is_cut_into_parts_of_at_most_so_many_rows_in_its_order(tmp_path: Path) -> None:
    lineitem = table_file(tmp_path, "lineitem", 25)
    made = data.parts({"lineitem": lineitem}, 10)["lineitem"]
    assert [path.name for path in made] == ["lineitem.000.parquet", "lineitem.001.parquet", "lineitem.002.parquet"]
    assert {path.parent for path in made} == {tmp_path / "parts-10"}
    assert [rows_of(path) for path in made] == [list(range(10)), list(range(10, 20)), list(range(20, 25))]
    assert sorted(p.name for p in (tmp_path / "parts-10").iterdir()) == [p.name for p in made]  # no partial left


def test_parts_are_made_once_and_reused(tmp_path: Path) -> None:
    lineitem = table_file(tmp_path, "lineitem", 25)
    first = data.parts({"lineitem": lineitem}, 10)["lineitem"]
    stamps = [path.stat().st_mtime_ns for path in first]
    again = data.parts({"lineitem": lineitem}, 10)["lineitem"]
    assert again == first and [path.stat().st_mtime_ns for path in again] == stamps


@pytest.mark.parametrize("rows", [0, 25, 100])
def test_a_table_of_no_more_rows_or_no_part_size_is_its_own_file(tmp_path: Path, rows: int) -> None:
    lineitem = table_file(tmp_path, "lineitem", 25)
    assert data.parts({"lineitem": lineitem}, rows) == {"lineitem": [lineitem]}
    assert not any(path.is_dir() for path in tmp_path.iterdir())


class Loads:
    """A database and recorder that note what the load did: each bulk load's table and rows, every
    statement, and each recorded figure; every timed call takes one second."""

    def __init__(self) -> None:
        self.loaded: list[tuple[str, int]] = []
        self.statements: list[str] = []
        self.records: dict[str, dict[str, float]] = {}
        self.notes: dict[str, str | None] = {}

    def seal_columns(self, *args: Any) -> None:
        pass

    def bulk_load(self, conn: Any, table: str, columns: Any, part: Path) -> None:
        self.loaded.append((table, len(rows_of(part))))

    def execute(self, sql: str) -> list[tuple[Any, ...]]:
        self.statements.append(sql)
        return []

    def timed(self, work: Any) -> tuple[Any, dict[str, float]]:
        return work(), {"elapsed_s": 1.0, "cpu_s": 0.5}

    def record(self, test: str, step: str, metrics: dict[str, float], note: str | None = None) -> None:
        self.records[step] = dict(metrics)
        self.notes[step] = note


def load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, part_rows: int, dialect: str = "duckdb",
         **options: Any) -> tuple[Loads, int]:
    """Run TPC-H's load steps on `Loads` with every table a small file (lineitem 25 rows, the
    others 5); returns it and the number of pauses (the steps a lockstep turn runs between)."""
    files = {name: table_file(tmp_path, name, 25 if name == "lineitem" else 5) for name in schema.TABLES}
    monkeypatch.setattr(data, "generate", lambda scale, directory: files)
    loads = Loads()
    ctx = cast(RunContext, SimpleNamespace(options={"load_part_rows": part_rows, **options}, scale=0.01,
                                           data_dir=tmp_path, dialect=dialect, database=loads, recorder=loads))
    pauses = sum(1 for _ in TpchWorkload().load_steps(ctx, cast(Any, loads)))
    return loads, pauses


def test_a_load_in_parts_pauses_after_every_part_and_every_index_statement(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loads, pauses = load(tmp_path, monkeypatch, 10)
    tables = len(schema.TABLES)
    assert loads.loaded == [(name, rows) for name in schema.TABLES
                            for rows in ([10, 10, 5] if name == "lineitem" else [5])]
    statements = len(schema.create_indexes("duckdb"))
    assert statements > 1
    assert pauses == (tables + 2) + (statements - 1)  # a pause after each table and between its parts
    assert loads.records["lineitem"] == {"elapsed_s": 3.0, "cpu_s": 1.5}  # the sum of its parts
    assert loads.records["tables"]["elapsed_s"] == tables + 2
    assert loads.records["indexes"]["elapsed_s"] == statements
    assert loads.records["total"]["elapsed_s"] == tables + 2 + statements


def test_a_load_without_parts_takes_each_table_whole_and_the_indexes_at_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loads, pauses = load(tmp_path, monkeypatch, 0)
    assert loads.loaded == [(name, 25 if name == "lineitem" else 5) for name in schema.TABLES]
    assert pauses == len(schema.TABLES)
    assert loads.records["indexes"]["elapsed_s"] == 1.0
    assert loads.records["total"]["elapsed_s"] == len(schema.TABLES) + 1


@pytest.mark.parametrize(("dialect", "statistics", "analyzed", "note"), [
    ("sqlite", "default", False, "no ANALYZE after the load"),  # its TPC-H plans were slower with statistics
    ("sqlite", "analyze", True, "ANALYZE after the load"),
    ("postgres", "default", True, "ANALYZE after the load"),
    ("postgres", "none", False, "no ANALYZE after the load"),
    ("duckdb", "default", False, "the engine's own statistics"),  # no statement to run
])
def test_the_load_gathers_planner_statistics_as_asked_and_its_record_says_which(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dialect: str, statistics: str, analyzed: bool,
        note: str) -> None:
    loads, _ = load(tmp_path, monkeypatch, 0, dialect, statistics=statistics)
    assert any(s.startswith("ANALYZE") for s in loads.statements) == analyzed
    assert loads.notes["indexes"] == note
    assert loads.notes["total"] is None  # the note belongs to the step that gathers them


@pytest.mark.parametrize("dialect", ["duckdb", "sqlite", "mysql", "postgres"])
def test_keys_none_leaves_every_primary_key_out_and_the_record_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dialect: str) -> None:
    kept, _ = load(tmp_path, monkeypatch, 0, dialect)
    assert any("PRIMARY KEY" in s for s in kept.statements)  # inline or after the load
    loads, _ = load(tmp_path, monkeypatch, 0, dialect, keys="none")
    assert not any("PRIMARY KEY" in s for s in loads.statements)
    assert loads.notes["indexes"].endswith(", no primary keys")
    assert not kept.notes["indexes"].endswith("primary keys")
    # the rest of the layout is the engine's: its tables, secondary indexes and statistics as before
    assert loads.statements == [re.sub(r",\n    PRIMARY KEY \([^)]*\)", "", s) for s in kept.statements
                                if not s.startswith("ALTER TABLE") or "PRIMARY KEY" not in s]
