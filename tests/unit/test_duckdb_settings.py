"""DuckDB's own settings in a plan: allocator "flush" reaches the engine and the instance it opens
(both of DuckDB's flush thresholds at zero), threads a count (written as a number or a string);
each default leaves DuckDB's own, and a bad value is refused with the plan's file, line and the
valid choices, the setting on another engine at its line."""

from __future__ import annotations

from pathlib import Path

import duckdb
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


def _current(settings: dict[str, str], workspace: Path, *names: str) -> tuple[str, ...]:
    """What DuckDB says its settings `names` are in the instance a database of `settings` opens."""
    database = get_engine("duckdb", settings=settings).provision(workspace, NONE, None)
    conn = database.connect()
    try:
        (found,) = conn.execute("SELECT " + ", ".join(f"current_setting('{name}')" for name in names))
    finally:
        conn.close()
    return tuple(str(value) for value in found)


THRESHOLDS = ("allocator_flush_threshold", "allocator_bulk_deallocation_flush_threshold")


def test_flush_reaches_the_duckdb_instance_and_the_default_keeps_duckdbs_thresholds(tmp_path: Path) -> None:
    choice = parse_plan(PLAN).engines[0]
    assert choice.settings == (("allocator", "flush"),)
    assert _current(dict(choice.settings), tmp_path / "flush", *THRESHOLDS) == ("0 bytes", "0 bytes")
    assert _current({}, tmp_path / "default", *THRESHOLDS) == ("128.0 MiB", "512.0 MiB")  # DuckDB 1.5's own


def test_threads_reach_the_duckdb_instance_and_the_default_keeps_one_per_core(tmp_path: Path) -> None:
    plan = PLAN.replace('allocator = "flush"', "threads = 1")
    choice = parse_plan(plan).engines[0]
    assert choice.settings == (("threads", "1"),)  # the number as its choice
    assert _current(dict(choice.settings), tmp_path / "one", "threads") == ("1",)
    assert parse_plan(plan.replace("threads = 1", 'threads = "1"')).engines[0].settings == (("threads", "1"),)
    own = duckdb.connect(":memory:")
    try:
        ((cores,),) = own.execute("SELECT current_setting('threads')").fetchall()  # DuckDB's own: a thread per core
    finally:
        own.close()
    assert _current({}, tmp_path / "default", "threads") == (str(cores),)


@pytest.mark.parametrize(("given", "bad", "choices"), [
    ('allocator = "flush"', 'allocator = "purge"', "valid: default, flush"),
    ("threads = 2", "threads = 3", "valid: default, 1, 2, 4, 8"),
    ("threads = 2", "threads = true", "valid: default, 1, 2, 4, 8"),
])
def test_a_bad_setting_names_file_line_and_choices(given: str, bad: str, choices: str) -> None:
    plan = PLAN.replace('allocator = "flush"', given)
    with pytest.raises(PlanError) as info:
        parse_plan(plan.replace(given, bad), "my.toml")
    assert str(info.value).startswith("my.toml:5: ") and choices in str(info.value)
    name = given.split(" ")[0]
    with pytest.raises(PlanError, match=f"{name} is a setting of duckdb only, not of sqlite"):
        parse_plan(plan.replace('"duckdb"', '"sqlite"'), "my.toml")
