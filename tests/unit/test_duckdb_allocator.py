"""DuckDB's allocator setting in a plan: "flush" reaches the engine and the instance it opens
(both of DuckDB's flush thresholds at zero), the default leaves DuckDB's own, and a bad value is
refused with the plan's file, line and the valid choices."""

from __future__ import annotations

from pathlib import Path

import pytest

from tdebench.engines import NONE, get_engine
from tdebench.plan import PlanError, parse_plan

PLAN = '''name = "p"
[[engines]]
name = "duckdb"
encryptions = ["none"]
allocator = "flush"

[[workloads]]
name = "tpch"
scale = 0.01
'''
ASK = ("SELECT current_setting('allocator_flush_threshold'), "
       "current_setting('allocator_bulk_deallocation_flush_threshold')")


def _thresholds(settings: dict[str, str], workspace: Path) -> tuple[str, str]:
    database = get_engine("duckdb", settings=settings).provision(workspace, NONE, None)
    conn = database.connect()
    try:
        ((flush, bulk),) = conn.execute(ASK)
    finally:
        conn.close()
    return flush, bulk


def test_flush_reaches_the_duckdb_instance_and_the_default_keeps_duckdbs_thresholds(tmp_path: Path) -> None:
    choice = parse_plan(PLAN).engines[0]
    assert choice.settings == (("allocator", "flush"),)
    assert _thresholds(dict(choice.settings), tmp_path / "flush") == ("0 bytes", "0 bytes")
    assert _thresholds({}, tmp_path / "default") == ("128.0 MiB", "512.0 MiB")  # DuckDB 1.5's own


def test_a_bad_allocator_names_file_line_and_choices() -> None:
    with pytest.raises(PlanError) as info:
        parse_plan(PLAN.replace('allocator = "flush"', 'allocator = "purge"'), "my.toml")
    assert str(info.value).startswith("my.toml:5: ") and "valid: default, flush" in str(info.value)
    with pytest.raises(PlanError, match="allocator is a setting of duckdb only, not of sqlite"):
        parse_plan(PLAN.replace('"duckdb"', '"sqlite"'), "my.toml")
