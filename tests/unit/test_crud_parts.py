"""The crud workload's pieces without an engine under test: the data generator (deterministic
from the seed), the schema per dialect, its plan keys, and the runner's handling of a workload
that goes cold before a statement (the fake engine)."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from fake_engine import FAKE_ENC, FakeConnection, FakeDatabase, FakeEngine, FakeWorkload
from fake_clock import FakeClock
from tdebench.plan import EngineChoice, Plan, PlanError, WorkloadSpec, parse_plan
from tdebench.run.runner import Runner
from tdebench.store import ResultStore, read_run
from tdebench.workloads.crud import data, names, schema
from tdebench.workloads.crud.workload import CrudWorkload, lookup_ids, operation_rows, table_rows


def rows_of(parquet: Path) -> list[tuple]:
    return duckdb.sql(f"SELECT * FROM read_parquet('{parquet}') ORDER BY id").fetchall()


def test_the_same_seed_gives_the_same_rows_and_another_seed_other_rows(tmp_path: Path) -> None:
    first = data.generate(tmp_path / "a", 7, 1, 3000)
    again = data.generate(tmp_path / "b", 7, 1, 3000)
    other = data.generate(tmp_path / "c", 8, 1, 3000)
    assert rows_of(first) == rows_of(again)
    assert first.read_bytes() == again.read_bytes()
    changed = [a != b for a, b in zip(rows_of(first), rows_of(other))]
    assert sum(changed) > 0.99 * 3000
    assert [row[0] for row in rows_of(other)] == list(range(1, 3001))  # the ids stay 1..N


def test_a_row_depends_only_on_its_id_and_the_seed(tmp_path: Path) -> None:
    """The staging rows N+1..N+k are the same people whatever N the table has."""
    whole = rows_of(data.generate(tmp_path, 7, 1, 1500))
    assert rows_of(data.generate(tmp_path, 7, 1001, 500)) == whole[1000:]


def test_rows_are_the_persons_of_moulianitakis_and_asimakopoulos_in_realistic_ascii(tmp_path: Path) -> None:
    rows = rows_of(data.generate(tmp_path, 1, 1, 5000))
    assert len(rows) == 5000 and len({row[0] for row in rows}) == 5000
    ids, first, last, ages, cards, addresses, cities, genders = zip(*rows)
    assert set(first) <= set(names.FIRST_NAMES) and len(set(first)) > 150
    assert set(last) <= set(names.LAST_NAMES) and len(set(last)) > 150
    assert set(cities) <= set(names.CITIES) and set(genders) == set(names.GENDERS)
    assert min(ages) == data.AGE_MIN and max(ages) == data.AGE_MAX
    assert all(re.fullmatch(r"4\d{15}", str(card)) for card in cards)
    streets, suffixes = "|".join(names.STREETS), "|".join(names.STREET_SUFFIXES)
    assert all(re.fullmatch(rf"\d{{1,4}} ({streets}) ({suffixes})", address) for address in addresses)
    assert all(text.isascii() for row in rows for text in row if isinstance(text, str))


def test_facts_are_what_the_rows_add_up_to(tmp_path: Path) -> None:
    parquet = data.generate(tmp_path, 3, 1, 2000)
    rows = rows_of(parquet)
    logical = sum(data.FIXED_BYTES + sum(len(v) for v in row if isinstance(v, str)) for row in rows)
    assert data.facts(parquet) == data.Facts(rows=2000, id_sum=2000 * 2001 // 2, age_sum=sum(r[3] for r in rows),
                                             address_chars=sum(len(r[5]) for r in rows), logical_bytes=logical)
    assert data.facts(parquet).row_bytes == logical / 2000


def test_a_file_is_made_once_and_never_left_half_written(tmp_path: Path) -> None:
    parquet = data.generate(tmp_path, 1, 1, 1000)
    made = parquet.stat().st_mtime_ns
    assert data.generate(tmp_path, 1, 1, 1000) == parquet and parquet.stat().st_mtime_ns == made
    assert [p.name for p in parquet.parent.iterdir()] == [parquet.name]
    with pytest.raises(ValueError, match="at least one row"):
        data.generate(tmp_path, 1, 1, 0)


def test_the_schema_per_dialect_keys_the_table_where_the_engine_wants_it() -> None:
    for dialect in schema.DIALECTS:
        persons, staging = schema.create_tables(dialect)
        assert persons.startswith("CREATE TABLE persons (id ") and staging.startswith("CREATE TABLE persons_staging (")
        assert all(column in persons and column in staging for column in data.COLUMNS)
        assert "PRIMARY KEY" not in staging
        inline = "PRIMARY KEY (id)" in persons
        deferred = "ALTER TABLE persons ADD PRIMARY KEY (id)" in schema.create_indexes(dialect)
        assert inline != deferred, dialect
    assert "ENGINE=InnoDB" in schema.create_tables("mysql")[0]
    with pytest.raises(ValueError, match="no crud schema for dialect 'db2'; known: duckdb, sqlite"):
        schema.create_tables("db2")


CRUD_PLAN = '''name = "crud"

[[engines]]
name = "duckdb"

[[workloads]]
name = "crud"
scales = [1000, 20000]
'''


def test_crud_plan_keys_are_checked_and_defaulted() -> None:
    spec = parse_plan(CRUD_PLAN).workloads[0]
    assert spec.scales == (1000.0, 20000.0) and spec.tests == CrudWorkload.tests and spec.streams == 1
    assert spec.option_values() == {"lookups": 1000, "operation_fraction": 0.1}
    spec = parse_plan(CRUD_PLAN + "operation_fraction = 0.5\nlookups = 10\n").workloads[0]
    assert spec.option_values() == {"lookups": 10, "operation_fraction": 0.5}
    for bad, message in (("operation_fraction = 0.6", "operation_fraction must be a number from 0.001 to 0.5"),
                         ("lookups = 0", "lookups = 0 is out of range: 1 to 100000"),
                         ("streams = 2", "streams = 2 is out of range: 1 to 1")):
        with pytest.raises(PlanError, match=message) as info:
            parse_plan(CRUD_PLAN + bad + "\n", "crud.toml")
        assert info.value.line == len(CRUD_PLAN.splitlines()) + 1
    with pytest.raises(PlanError, match="scale factor 100 is out of range for crud: 1000 to 1e"):
        parse_plan(CRUD_PLAN.replace("1000,", "100,"))
    with pytest.raises(PlanError, match="scale 1500.5 is not a whole number; crud's scale counts whole things"):
        parse_plan(CRUD_PLAN.replace("1000,", "1500.5,"))


def test_sizes_follow_the_scale_and_the_fraction_and_lookups_the_seed() -> None:
    assert table_rows(20000.0) == 20000 and operation_rows(20000, 0.1) == 2000
    assert operation_rows(1000, 0.001) == 1  # never an empty operation
    ids = lookup_ids(1, 5000, 1000)
    assert ids == lookup_ids(1, 5000, 1000) != lookup_ids(2, 5000, 1000)
    assert min(ids) >= 1 and max(ids) <= 5000 and len(set(ids)) > 800


class StrictConnection(FakeConnection):
    """Refuses what a real driver refuses (or, worse, silently miscounts): use after close,
    and closing twice."""

    def __init__(self, db: FakeDatabase) -> None:
        super().__init__(db)
        self.closed = False

    def execute(self, sql, params=()):
        assert not self.closed, "a closed connection was used"
        return super().execute(sql, params)

    def close(self) -> None:
        assert not self.closed, "a connection was closed twice"
        self.closed = True
        super().close()


def test_a_workload_that_goes_cold_before_a_statement_gets_an_open_connection_for_every_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As the crud delete does: have the session go cold and work on the new connection it gives."""
    def connect(self: FakeDatabase) -> StrictConnection:
        self.connections += 1
        return StrictConnection(self)

    monkeypatch.setattr(FakeDatabase, "connect", connect)
    clock = FakeClock()
    went_cold = []

    class ColdBeforeAStatement(FakeWorkload):
        def run(self, test, ctx, conn, *, warmup):
            conn.execute("SELECT 1")  # the connection the runner gives must be open
            if ctx.session.cold and not warmup:
                cold = ctx.session.go_cold()
                went_cold.append(cold is not conn and cold is ctx.session.connection())
                cold.execute("SELECT 2")  # open: the runner closes it, not the workload
                conn = cold
            super().run(test, ctx, conn, warmup=warmup)

    plan = Plan(name="cold", repetitions=1, warmups=2, cache="cold", order="sequential", seed=1,
                engines=(EngineChoice("fake", ("none", FAKE_ENC.name)),),
                workloads=(WorkloadSpec("fakeload", (1.0,), ("power", "throughput", "again"), 1),),
                text="name = 'cold'\n")
    store = ResultStore(tmp_path / "out")
    store.start(plan.text, {})
    FakeEngine.provisioned.clear()
    summary = Runner(plan=plan, store=store, data_dir=tmp_path, clock=clock,
                     engine_factory=lambda name, **settings: FakeEngine(**settings),
                     workload_factory=lambda name: ColdBeforeAStatement(clock), empty_cache=lambda evict, root: True,
                     workspace_parent=tmp_path).run()
    run = read_run(tmp_path / "out")
    assert summary.ok, [t.error for t in run.trials]
    assert went_cold == [True] * 6  # 2 trials × 3 measured tests
    assert all(db.connections == 0 for db in FakeEngine.provisioned)  # every connection closed, once
    assert {m.test for m in run.measurements if not m.warmup} >= {"power", "throughput", "again"}
