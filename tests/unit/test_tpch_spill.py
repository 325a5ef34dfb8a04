"""TPC-H's canaries in its own data and its spill test: the answer computed from the scale, the
SQL per dialect, the test only by name, and sqlite's temp_store setting in a plan."""

from __future__ import annotations

import duckdb
import pytest

from tdebench.engines import get_engine
from tdebench.engines.duckdb import DuckDBConnection
from tdebench.plan import PlanError, parse_plan
from tdebench.workloads.tpch import spill

PLAN = '''name = "p"
[[engines]]
name = "sqlite"
encryptions = ["none"]
temp_store = "file"

[[workloads]]
name = "tpch"
scale = 0.01
'''


def test_the_spill_tests_answer_at_sf_001_is_1500_customers_1000_times_each() -> None:
    assert spill.copies(0.01) == 1000 and spill.customers(0.01) == 1500
    assert spill.expected(0.01) == (1_500_000, 1500 * 1000 * 1001 // 2)
    assert spill.check(0.01, [(1_500_000, 1500 * 1000 * 1001 // 2)]) == ""
    assert "expected" in spill.check(0.01, [(1_500_000, 1)]) and "expected" in spill.check(0.01, [])


def test_the_planted_customers_have_no_orders_in_dbgens_data() -> None:
    keys = spill.planted_keys(0.01)
    assert len(keys) == 500 and all(key % 3 == 0 for key in keys)  # dbgen: orders never name such a customer


def test_the_spill_sql_runs_on_duckdb_and_gives_the_computed_answer() -> None:
    conn = duckdb.connect()
    conn.execute("CREATE TABLE customer AS SELECT i AS c_custkey, 'street ' || i AS c_address FROM range(1, 16) r(i)")
    rows = conn.execute(spill.spill_sql("duckdb", 0.0001)).fetchall()
    assert spill.check(0.0001, rows) == ""
    with pytest.raises(ValueError, match="no SQL for dialect 'oracle'"):
        spill.spill_sql("oracle", 0.01)


def test_planting_writes_the_canaries_into_customers_without_orders_and_reads_them_back() -> None:
    raw = duckdb.connect()
    raw.execute("CREATE TABLE customer AS SELECT i AS c_custkey, 'street ' || i AS c_address FROM range(1, 1501) r(i)")
    conn = DuckDBConnection(raw.cursor(), None)  # type: ignore[arg-type]
    canaries = ["TDEBENCH-CANARY-" + h * 12 for h in ("0a", "0b", "0c", "0d")]
    assert spill.plant(conn, canaries, 0.01)
    planted = raw.execute("SELECT c_custkey FROM customer WHERE c_address LIKE 'TDEBENCH-CANARY-%'").fetchall()
    assert sorted(k for (k,) in planted) == list(spill.planted_keys(0.01))


def test_spill_runs_only_when_a_plan_names_it() -> None:
    assert parse_plan(PLAN).workloads[0].tests == ("power", "throughput")
    assert parse_plan(PLAN.replace("scale = 0.01", 'scale = 0.01\ntests = ["spill"]')).workloads[0].tests == ("spill",)


def test_temp_store_reaches_the_sqlite_engine_and_bad_values_name_line_and_choices() -> None:
    choice = parse_plan(PLAN).engines[0]
    assert choice.settings == (("temp_store", "file"),)
    assert get_engine("sqlite", settings=dict(choice.settings)).setting == {"temp_store": "file"}
    assert get_engine("sqlite").setting == {"temp_store": "memory"}
    with pytest.raises(PlanError) as info:
        parse_plan(PLAN.replace('temp_store = "file"', 'temp_store = "disk"'), "my.toml")
    assert str(info.value).startswith("my.toml:5: ") and "valid: memory, file" in str(info.value)
