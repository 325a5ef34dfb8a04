"""How long a plan takes, as data: the keys `measured_s`, `measured_trials` and `measured_on`,
their errors (with file and line), their agreement with each built-in plan's free-text
`measured`, and the expected duration `run` prints and `plans` lists (cli/plans.expected)."""

from __future__ import annotations

import datetime
import importlib.util
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tdebench.cli import main
from tdebench.cli.plans import builtin_plans
from tdebench.cli.plans import duration, expected, trial_count
from tdebench.plan import PlanError, load_plan, only_engines, parse_plan

ROOT = Path(__file__).resolve().parents[2]
NOT_YET_TIMED: set[str] = set()
"""The built-in plans without both `measured_s` and `measured_trials`, each with why."""

DURATION = re.compile(r"(?:(\d+) h )?(?:(\d+) min )?(\d+) s\b")
TRIALS = re.compile(r"(\d+) trials\b")
DAY = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")


def _timed(name: str) -> bool:
    plan = load_plan(builtin_plans()[name])
    return plan.measured_s is not None and plan.measured_trials is not None


def _estimated(name: str) -> bool:
    plan = load_plan(builtin_plans()[name])
    return plan.estimated_s is not None and plan.estimated_trials is not None and not _timed(name)


def test_every_built_in_plan_is_timed_estimated_or_listed_as_not_yet_timed() -> None:
    known = {name for name in builtin_plans() if _timed(name) or _estimated(name)}
    assert known == set(builtin_plans()) - NOT_YET_TIMED
    assert NOT_YET_TIMED <= set(builtin_plans())  # no name of a plan that is gone


UNKNOWN_HOST: set[str] = set()
"""Timed plans whose timing run's host is not known: runs on a shared machine whose record did not
keep it."""


def test_every_timed_plan_names_the_host_it_was_timed_on_or_is_listed() -> None:
    named = {name for name in builtin_plans() if _timed(name) and load_plan(builtin_plans()[name]).measured_host}
    assert named == {name for name in builtin_plans() if _timed(name)} - UNKNOWN_HOST
    assert all(_timed(name) for name in UNKNOWN_HOST)


def test_the_expected_line_names_the_host_of_the_timed_run() -> None:
    host = 'measured_host = "AMD EPYC with aes; raw AES-256-GCM 9,951 MiB/s"'
    hosted = parse_plan(TIMED.replace("seed = 1", f"seed = 1\n{host}"))
    assert expected(hosted) == ("expected: about 2 min 30 s (measured 2026-12-06, 12 trials; host: AMD EPYC with aes; "
                                "raw AES-256-GCM 9,951 MiB/s)" + NOTES)
    assert expected(parse_plan(only_engines(hosted.text, ["sqlite"]))).startswith(
        "expected: about 1 min 20 s for 6 trials, estimated from the measured 12 trials (2 min 30 s, 2026-12-06; host: "
        "AMD EPYC with aes;")


@pytest.mark.parametrize("name", sorted(name for name in builtin_plans() if _estimated(name)))
def test_a_plan_only_estimated_names_the_timed_plan_cut_from_it(name: str) -> None:
    """A plan too long to run here says how it was estimated and which plan, timed, runs here instead."""
    text = load_plan(builtin_plans()[name]).estimated
    cut = re.search(r"cut to run here: (\S+?)[,;.)]", text)
    assert cut, f"{name}: its estimated text names no plan cut from it ('cut to run here: NAME,'): {text!r}"
    assert cut.group(1) in builtin_plans() and _timed(cut.group(1)), f"{name}: {cut.group(1)} is no timed plan"


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


@pytest.mark.parametrize("name", sorted(name for name in builtin_plans() if _estimated(name)))
def test_a_plans_estimate_is_what_scripts_estimate_computes_from_the_published_runs(name: str) -> None:
    """`estimated_s` and `estimated_trials` are scripts/estimate.py's, from the examples' stored
    per-trial times: an estimate changes with the runs it stands on, or this test says so."""
    spec = importlib.util.spec_from_file_location("estimate", ROOT / "scripts" / "estimate.py")
    assert spec and spec.loader
    estimate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(estimate)
    plan = load_plan(builtin_plans()[name])
    seconds, trials = estimate.ESTIMATES[name]()
    assert (plan.estimated_s, plan.estimated_trials) == (round(seconds), trials), \
        f"{name}: scripts/estimate.py {name} gives estimated_s = {seconds:.0f}, estimated_trials = {trials}"


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


TIMED = '''name = "timed"
measured = "2 min 30 s, 12 trials, 2 cores, nothing else running, 2026-12-06"
measured_s = 150
measured_trials = 12
measured_on = 2026-12-06
repetitions = 3
warmups = 0
seed = 1

[[engines]]
name = "duckdb"
encryptions = ["aes-256-gcm"]

[[engines]]
name = "sqlite"
encryptions = ["aes-256-cbc"]

[[workloads]]
name = "tpch"
scale = 0.01
tests = ["power"]
'''
NOTES = "; the plan notes: 2 min 30 s, 12 trials, 2 cores, nothing else running, 2026-12-06"


def test_a_run_of_the_trials_timed_expects_the_measured_time() -> None:
    plan = parse_plan(TIMED)
    assert trial_count(plan) == 12  # two engines × none and one encryption × 3 rounds
    assert expected(plan) == "expected: about 2 min 30 s (measured 2026-12-06, 12 trials)" + NOTES


def test_a_run_of_other_trials_is_an_estimate_scaled_by_trials_never_called_measured() -> None:
    """`run --engine sqlite` runs half the trials timed: half the time, said to be estimated."""
    some = parse_plan(only_engines(TIMED, ["sqlite"]))
    assert trial_count(some) == 6
    assert expected(some) == ("expected: about 1 min 20 s for 6 trials, estimated from the measured 12 trials "
                              "(2 min 30 s, 2026-12-06)" + NOTES)  # 75 s, to 10 s
    undated = parse_plan(TIMED.replace("measured_on = 2026-12-06\n", "")
                         .replace("scale = 0.01", "scales = [0.01, 0.1]"))
    assert expected(undated).startswith("expected: about 5 min for 24 trials, estimated from the measured 12 trials "
                                        "(2 min 30 s);")


def test_a_resumed_run_expects_the_measured_time_scaled_to_the_trials_it_has_left() -> None:
    plan = parse_plan(TIMED)
    assert expected(plan, left=3) == ("expected: about 40 s for the 3 trials left, estimated from the measured "
                                      "12 trials (2 min 30 s, 2026-12-06)" + NOTES)  # 37.5 s, to 10 s
    assert expected(plan, left=12).startswith("expected: about 2 min 30 s for the 12 trials left, estimated")


def test_an_adaptive_plan_expects_its_measured_time_with_the_rounds_its_timed_run_added() -> None:
    """Its first rounds' trials are all a plan can count; a new run adds rounds as the timed one
    did, so the time stands, not scaled down to the first rounds."""
    adaptive = TIMED.replace("seed = 1", "seed = 1\ntarget_ci_pct = 2\nmax_minutes = 5")
    rounds = (", as its rounds go: added until every headline CI is within ±2% (its budget: 5 min of rounds)"
              + NOTES)
    assert expected(parse_plan(adaptive)) == "expected: about 2 min 30 s (measured 2026-12-06, 12 trials)" + rounds
    added = parse_plan(adaptive.replace("measured_trials = 12", "measured_trials = 30"))
    assert expected(added) == ("expected: about 2 min 30 s (measured 2026-12-06, 30 trials, its added rounds "
                               "included)" + rounds)


def test_a_plan_without_both_figures_is_not_yet_timed() -> None:
    assert expected(parse_plan(TIMED.replace("measured_trials = 12\n", ""))) == \
        "not yet timed: no expected duration" + NOTES
    assert expected(parse_plan(TIMED.replace("measured_s = 150\n", ""))) == \
        "not yet timed: no expected duration" + NOTES
    untimed = "\n".join(line for line in TIMED.splitlines() if not line.startswith("measured")) + "\n"
    assert expected(parse_plan(untimed)) == "not yet timed: no expected duration"


ESTIMATED = "\n".join(line for line in TIMED.splitlines() if not line.startswith("measured")).replace(
    "seed = 1", 'seed = 1\nestimated = "from measured per-trial times: 1 h 5 min a trial × 12 trials"'
    "\nestimated_s = 46800\nestimated_trials = 12") + "\n"


def test_a_plan_too_long_to_run_here_is_expected_as_an_estimate_never_as_measured() -> None:
    """A plan of days carries its author's estimate: `run` and `plans` call it one, with its basis."""
    plan = parse_plan(ESTIMATED)
    basis = ": from measured per-trial times: 1 h 5 min a trial × 12 trials"
    assert expected(plan) == "expected: about 13 h, estimated (a whole run was never measured here)" + basis
    assert "measured 2026" not in expected(plan)
    assert expected(parse_plan(only_engines(ESTIMATED, ["sqlite"]))) == (
        "expected: about 6 h 30 min for 6 trials, scaled from the estimate of 13 h for 12 trials (a whole run was "
        "never measured here)" + basis)
    assert expected(plan, left=3).startswith("expected: about 3 h 15 min for the 3 trials left, scaled from the "
                                             "estimate")
    days = parse_plan(ESTIMATED.replace("estimated_s = 46800", "estimated_s = 208800"))
    assert expected(days).startswith("expected: about 2 d 10 h, estimated")
    assert expected(parse_plan(ESTIMATED.replace("estimated_trials = 12\n", ""))).startswith("not yet timed")


@pytest.mark.parametrize("key", ["estimated_s = 0", "estimated_s = \"2 days\"", "estimated_trials = 1.5",
                                 "measured_trials = 0"])
def test_a_bad_estimate_or_count_is_an_error_with_its_line(key: str) -> None:
    with pytest.raises(PlanError, match=rf":2: {key.split()[0]} must be the (seconds|trials) "):
        parse_plan(f'name = "x"\n{key}\n[[engines]]\nname = "duckdb"\n[[workloads]]\nname = "tpch"\n', "x.toml")


@pytest.mark.parametrize("seconds, text", [(45, "45 s"), (305, "5 min 5 s"), (508.4, "8 min 28 s"), (540, "9 min"),
                                           (3062, "51 min 2 s"), (3900, "1 h 5 min"), (90000, "1 d 1 h"),
                                           (172800, "2 d")])
def test_a_duration_reads_as_a_clock(seconds: float, text: str) -> None:
    assert duration(seconds) == text
