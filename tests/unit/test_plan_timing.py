"""How long a plan takes, as data: the keys `measured_s`, `measured_trials` and `measured_on`,
their errors (with file and line) and their agreement with each built-in plan's free-text
`measured`."""

from __future__ import annotations

import datetime
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tdebench.cli import builtin_plans, main
from tdebench.plan import load_plan, parse_plan

NOT_YET_TIMED = {
    # no run of the plan as it is has been timed: its `measured` is empty
    "assess-mariadb", "assess-postgres", "backup", "claims-sqlcipher", "connections", "connections-raw",
    "crud", "crud-large", "crud-servers", "embedded", "maintenance", "oltp", "oltp-long", "servers",
    # timed only with the earlier four SQLite caches (a comment in the plan says so), not its six
    "cost-curve",
    # its 6 min 40 s are scripts/demo.sh's, the install included: the run's own time is not stated
    # (its trials and day are: measured_trials, measured_on)
    "quick",
    # two runs, 1 min 30 s and 5 min 27 s: a range, not one duration (its trials and day are given)
    "strength",
}
"""The built-in plans without both `measured_s` and `measured_trials`, each with why."""

DURATION = re.compile(r"(?:(\d+) h )?(?:(\d+) min )?(\d+) s\b")
TRIALS = re.compile(r"(\d+) trials\b")
DAY = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")


def test_every_built_in_plan_is_timed_or_listed_as_not_yet_timed() -> None:
    timed = {name for name, path in builtin_plans().items()
             if (plan := load_plan(path)).measured_s is not None and plan.measured_trials is not None}
    assert timed == set(builtin_plans()) - NOT_YET_TIMED
    assert NOT_YET_TIMED <= set(builtin_plans())  # no name of a plan that is gone


@pytest.mark.parametrize("name", sorted(builtin_plans()))
def test_a_built_in_plans_figures_are_what_its_measured_text_says(name: str) -> None:
    """The first duration, trial count and day the free text names are the keys' values, and a
    text that names trials or a day has the key for it: the two cannot drift apart."""
    plan = load_plan(builtin_plans()[name])
    text = plan.measured
    if plan.measured_s is not None:
        first = DURATION.search(text)
        assert first, f"{name}: measured_s = {plan.measured_s:g} but its measured text names no duration"
        hours, minutes, seconds = (int(part or 0) for part in first.groups())
        assert hours * 3600 + minutes * 60 + seconds == plan.measured_s, f"{name}: {first.group()} in {text!r}"
    trials = TRIALS.search(text)
    assert plan.measured_trials == (int(trials.group(1)) if trials else None), f"{name}: {text!r}"
    day = DAY.search(text)
    assert plan.measured_on == (datetime.date.fromisoformat(day.group()) if day else None), f"{name}: {text!r}"


def test_the_timing_keys_are_read_as_written() -> None:
    base = 'name = "x"\n{}\n[[engines]]\nname = "duckdb"\n[[workloads]]\nname = "tpch"\nscale = 0.01\n'
    plan = parse_plan(base.format("measured_s = 508\nmeasured_trials = 108\nmeasured_on = 2026-12-06"))
    assert (plan.measured_s, plan.measured_trials, plan.measured_on) == (508.0, 108, datetime.date(2026, 12, 6))
    quoted = parse_plan(base.format('measured_s = 12.5\nmeasured_on = "2026-11-27"'))
    assert (quoted.measured_s, quoted.measured_trials, quoted.measured_on) == (12.5, None, datetime.date(2026, 11, 27))
    assert parse_plan(base.format("")).measured_s is None


def test_a_bad_timing_key_is_exit_2_with_the_file_and_line(tmp_path: Path) -> None:
    plan = tmp_path / "timed.toml"
    plan.write_text('name = "timed"\nmeasured = "8 min 28 s"\nmeasured_s = -508\n'
                    '[[engines]]\nname = "duckdb"\n[[workloads]]\nname = "tpch"\nscale = 0.01\n')
    done = CliRunner().invoke(main, ["run", str(plan), "--out", str(tmp_path / "out")])
    assert done.exit_code == 2, done.output
    assert (f"{plan}:3: measured_s must be the seconds the timed run took, a number above 0, e.g. measured_s = 508 "
            "for 8 min 28 s") in " ".join(done.output.split())
    assert not (tmp_path / "out").exists()
