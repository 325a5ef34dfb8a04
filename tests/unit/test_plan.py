"""Plan parsing, its errors (with file and line), and trial scheduling."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from tdebench.engines import get_engine
from tdebench.plan import PlanError, as_stored, comparison_group, load_plan, parse_plan, planned, schedule, to_run

EXAMPLE_PLAN = '''
name = "quick"
repetitions = 3
warmups = 1
cache = "warm"          # or "cold"
order = "interleaved"   # or "sequential"
seed = 1

[[engines]]
name = "duckdb"
encryptions = ["none", "aes-256-gcm", "aes-256-ctr"]

[[workloads]]
name = "tpch"
scale = 0.01
tests = ["power", "throughput"]
streams = 2
'''


def test_the_example_plan_parses_as_written() -> None:
    plan = parse_plan(EXAMPLE_PLAN)
    assert (plan.name, plan.repetitions, plan.warmups, plan.cache, plan.order, plan.seed) == \
        ("quick", 3, 1, "warm", "interleaved", 1)
    assert plan.engines[0].encryptions == ("none", "aes-256-gcm", "aes-256-ctr")
    assert plan.workloads[0].scales == (0.01,) and plan.workloads[0].streams == 2
    assert plan.workloads[0].tests == ("power", "throughput")
    assert plan.text == EXAMPLE_PLAN


def test_shipped_plans_parse() -> None:
    plans = Path(__file__).parents[2] / "src" / "tdebench" / "plans"
    names = sorted(p.name for p in plans.glob("*.toml"))
    assert "quick.toml" in names and "embedded.toml" in names
    for path in plans.glob("*.toml"):
        assert load_plan(path).cells()


def test_all_leaves_out_the_legacy_ciphers_which_a_plan_names_to_get() -> None:
    plan = parse_plan('name = "x"\n[[engines]]\nname = "postgres"\nencryptions = "all"\n'
                      '[[workloads]]\nname = "tpch"\nscale = 0.01\n')
    assert plan.engines[0].encryptions == ("none", "column-aes-128", "column-aes-192", "column-aes-256",
                                           "fs-aes-256-gcm", "fs-xchacha20-poly1305")
    named = parse_plan('name = "x"\n[[engines]]\nname = "postgres"\nencryptions = ["column-3des"]\n'
                       '[[workloads]]\nname = "tpch"\nscale = 0.01\n')
    assert named.engines[0].encryptions == ("none", "column-3des")


def test_baseline_is_added_and_all_expands() -> None:
    plan = parse_plan(EXAMPLE_PLAN.replace('["none", "aes-256-gcm", "aes-256-ctr"]', '["aes-256-ctr"]'))
    assert plan.engines[0].encryptions == ("none", "aes-256-ctr")
    plan = parse_plan(EXAMPLE_PLAN.replace('["none", "aes-256-gcm", "aes-256-ctr"]', '"all"'))
    assert plan.engines[0].encryptions == tuple(e.name for e in get_engine("duckdb").encryptions
                                                if not e.plaintext_default and e.name != "fs-passthrough")
    assert "fs-passthrough" not in plan.engines[0].encryptions  # a control arm: a plan names it to get it
    assert plan.engines[0].encryptions[:3] == ("none", "aes-256-gcm", "aes-256-ctr")


def test_all_leaves_out_duckdbs_plaintext_temp_files_which_a_plan_names_to_get() -> None:
    everything = parse_plan(EXAMPLE_PLAN.replace('["none", "aes-256-gcm", "aes-256-ctr"]', '"all"'))
    assert not any(name.endswith("-plaintemp") for name in everything.engines[0].encryptions)
    named = parse_plan(EXAMPLE_PLAN.replace('["none", "aes-256-gcm", "aes-256-ctr"]', '["aes-256-gcm-plaintemp"]'))
    assert named.engines[0].encryptions == ("none", "aes-256-gcm-plaintemp")
    leak = get_engine("duckdb").encryption("aes-256-ctr-plaintemp")
    assert leak.by_name_only and "temp files" not in leak.covers and leak.cipher == "aes-256-ctr"


@pytest.mark.parametrize("old, new, message, line", [
    ('name = "duckdb"', 'name = "db2"', "unknown name 'db2'; valid: duckdb, sqlite", 10),
    ('name = "duckdb"', 'name = "oracle"', "does not start oracle servers: reach yours by url", 10),
    ('"aes-256-ctr"]', '"aes-512-xts"]', "no encryption 'aes-512-xts'; valid: none, aes-256-gcm, aes-256-ctr", 11),
    ("scale = 0.01", "scale = 100", "scale factor 100 is out of range for tpch: 0.01 to 10", 15),
    ("scale = 0.01", "scale = 0.001", "out of range", 15),
    ('cache = "warm"', 'cache = "lukewarm"', "unknown cache 'lukewarm'; valid: warm, cold", 5),
    ('order = "interleaved"', 'order = "random"', "valid: interleaved, lockstep, sequential", 6),
    ("repetitions = 3", "repetitions = 0", "repetitions = 0 is out of range: 1 to 1000", 3),
    ("streams = 2", "streams = 99", "streams = 99 is out of range: 1 to 10", 17),
    ('tests = ["power", "throughput"]', 'tests = ["speed"]', "no test 'speed'; valid: power, throughput, spill", 16),
    ('"aes-256-ctr"]', '"aes-256-ctr"]\ntemp_store = "file"',
     "temp_store is a setting of sqlite, sqlcipher only, not of duckdb", 12),
    ("seed = 1", "sed = 1", "unknown key 'sed' in plan", 7),
    ("seed = 1", "placebo = 1", "placebo must be true or false", 7),
    ("seed = 1", 'pool_hosts = "yes"', "pool_hosts must be true or false", 7),
    ("seed = 1", "max_minutes = 30", "max_minutes bounds adaptive repetitions, which target_ci_pct turns on", 7),
    ("seed = 1", "target_ci_pct = 0", "target_ci_pct must be a number from 0.01 to 100", 7),
    ("seed = 1", "quiet_wait_s = -1", "quiet_wait_s must be a number from 0 to 86400", 7),
    ("seed = 1", 'quiet_wait_s = "5 min"', "quiet_wait_s must be a number from 0 to 86400", 7),
    ("seed = 1", "quiet_wait_s = true", "quiet_wait_s must be a number from 0 to 86400", 7),
    ("seed = 1", "target_ci_pct = 2\nmax_repetitions = 2", "max_repetitions = 2 is below repetitions = 3", 8),
    ("seed = 1", 'target_tests = ["power"]', "target_tests names what adaptive repetitions wait on", 7),
    ("seed = 1", 'target_ci_pct = 2\ntarget_tests = ["powr"]',
     "unknown target_tests entry 'powr'; valid: load, power, throughput", 8),
    ('order = "interleaved"', 'order = "sequential"\ntarget_ci_pct = 2',
     'it needs order = "lockstep" or "interleaved"', 7),
    ('"aes-256-ctr"]', '"placebo"]', "no encryption 'placebo'", 11),
    ('cache = "warm"          # or "cold"\norder = "interleaved"', 'cache = "cold"\nevict = "os"\norder = "lockstep"',
     'would empty the others\' too: use evict = "files"', 7),
    ('cache = "warm"          # or "cold"', 'cache = "warm"\nevict = "files"',
     'evict says how a cold cache is made', 6),
    ('cache = "warm"          # or "cold"', 'cache = "cold"\nevict = "disk"',
     "unknown evict 'disk'; valid: files, os", 6),
    ("seed = 1", "seed = 1\nmeasured_s = 0", "measured_s must be the seconds the timed run took, a number above 0, "
     "e.g. measured_s = 508 for 8 min 28 s", 8),
    ("seed = 1", 'seed = 1\nmeasured_s = "8 min 28 s"', "measured_s must be the seconds the timed run took", 8),
    ("seed = 1", "seed = 1\nmeasured_s = inf", "measured_s must be the seconds the timed run took", 8),
    ("seed = 1", "seed = 1\nmeasured_s = true", "measured_s must be the seconds the timed run took", 8),
    ("seed = 1", "seed = 1\nmeasured_trials = 0", "measured_trials must be the trials the timed run had, a whole "
     "number above 0, e.g. measured_trials = 108", 8),
    ("seed = 1", "seed = 1\nmeasured_trials = 10.5", "measured_trials must be the trials the timed run had", 8),
    ("seed = 1", 'seed = 1\nmeasured_on = "6 Dec 2026"', "measured_on must be the day of the timed run, YYYY-MM-DD, "
     "e.g. measured_on = 2026-12-06", 8),
    ("seed = 1", 'seed = 1\nmeasured_on = "2026-02-30"', "measured_on must be the day of the timed run", 8),
    ("seed = 1", "seed = 1\nmeasured_on = 2026-12-06T10:00:00", "measured_on must be the day of the timed run", 8),
    ("seed = 1", "seed = 1\nmeasured_on = 20261206", "measured_on must be the day of the timed run", 8),
    ("seed = 1", "seed = 1\nmeasured_secs = 30", "unknown key 'measured_secs' in plan; valid: ", 8),
])
def test_errors_name_file_line_and_choices(old: str, new: str, message: str, line: int) -> None:
    with pytest.raises(PlanError) as info:
        parse_plan(EXAMPLE_PLAN.replace(old, new, 1), "my.toml")
    assert message in str(info.value)
    assert str(info.value).startswith(f"my.toml:{line}: ")


def test_malformed_toml_reports_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('name = "x"\nrepetitions = = 3\n')
    with pytest.raises(PlanError, match=r"bad.toml: not valid TOML: .*line 2"):
        load_plan(path)


def test_missing_sections_and_file(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match="no \\[\\[engines\\]\\]"):
        parse_plan('name = "x"\n[[workloads]]\nname = "tpch"\n')
    with pytest.raises(PlanError, match="cannot read plan"):
        load_plan(tmp_path / "absent.toml")


def test_interleaved_runs_every_configuration_each_round_in_seeded_order() -> None:
    plan = parse_plan(EXAMPLE_PLAN)
    trials = schedule(plan)
    assert len(trials) == 3 * 3
    rounds = [trials[i:i + 3] for i in range(0, 9, 3)]
    for number, round_ in enumerate(rounds, start=1):
        assert {t.key.repetition for t in round_} == {number}
        assert sorted(t.key.encryption for t in round_) == sorted(plan.engines[0].encryptions)
    assert [t.key for t in schedule(plan)] == [t.key for t in trials]  # same seed, same order
    other = schedule(parse_plan(EXAMPLE_PLAN.replace("seed = 1", "seed = 2")))
    assert [t.key for t in other] != [t.key for t in trials]


def test_sequential_keeps_repetitions_together() -> None:
    trials = schedule(parse_plan(EXAMPLE_PLAN.replace('"interleaved"', '"sequential"')))
    assert [t.key.encryption for t in trials[:3]] == ["none"] * 3
    assert [t.key.repetition for t in trials[:3]] == [1, 2, 3]
    assert Counter(t.key.encryption for t in trials) == {"none": 3, "aes-256-gcm": 3, "aes-256-ctr": 3}


def test_server_and_sampler_settings() -> None:
    text = EXAMPLE_PLAN.replace('name = "duckdb"\n', 'name = "duckdb"\nmemory_mb = 512\n')
    text = text.replace("streams = 2", "streams = 2\nquery_timeout_s = 30")
    text = text.replace("seed = 1", "seed = 1\nsample_interval_s = 0.5")
    plan = parse_plan(text)
    assert plan.engines[0].memory_mb == (512,) and plan.engine("duckdb").memory_mb == (512,)
    assert plan.workloads[0].query_timeout_s == 30.0 and plan.sample_interval_s == 0.5
    defaults = parse_plan(EXAMPLE_PLAN)
    assert defaults.engines[0].memory_mb == () and defaults.workloads[0].query_timeout_s == 600.0
    with pytest.raises(PlanError, match="my.toml:18: query_timeout_s must be a number from 0.001 to 86400"):
        parse_plan(EXAMPLE_PLAN.replace("streams = 2", "streams = 2\nquery_timeout_s = -1"), "my.toml")
    with pytest.raises(PlanError, match="memory_mb = 1 is out of range"):
        parse_plan(EXAMPLE_PLAN.replace('name = "duckdb"\n', 'name = "duckdb"\nmemory_mb = 1\n'))


def test_quiet_wait_is_off_unless_the_plan_asks_for_it() -> None:
    assert parse_plan(EXAMPLE_PLAN).quiet_wait_s == 0.0
    assert parse_plan(EXAMPLE_PLAN.replace("seed = 1", "seed = 1\nquiet_wait_s = 300")).quiet_wait_s == 300.0


def test_a_workloads_own_options_are_checked_typed_and_defaulted(monkeypatch: pytest.MonkeyPatch) -> None:
    from tdebench.workloads import WORKLOADS, Option
    from tdebench.workloads.tpch import TpchWorkload

    class WithOptions(TpchWorkload):
        name = "opts"
        options = {"virtual_users": Option(4, "connections at once", low=1, high=64),
                   "mode": Option("load", "which test", choices=("load", "stress")),
                   "ratio": Option(0.5, "a fraction", low=0.0, high=1.0),
                   "procedures": Option(True, "server-side")}

    monkeypatch.setitem(WORKLOADS, "opts", WithOptions)
    base = EXAMPLE_PLAN.replace('name = "tpch"', 'name = "opts"')
    spec = parse_plan(base).workloads[0]
    assert spec.option_values() == {"virtual_users": 4, "mode": "load", "ratio": 0.5, "procedures": True}
    spec = parse_plan(base + 'virtual_users = 8\nmode = "stress"\nprocedures = false\n').workloads[0]
    assert spec.option_values() == {"virtual_users": 8, "mode": "stress", "ratio": 0.5, "procedures": False}
    for bad, message in (("virtual_users = 0", "virtual_users = 0 is out of range: 1 to 64"),
                         ('mode = "soak"', "unknown mode 'soak'; valid: load, stress"),
                         ("ratio = 2", "ratio must be a number from 0 to 1"),
                         ('procedures = "yes"', "procedures must be true or false")):
        with pytest.raises(PlanError, match=message) as info:
            parse_plan(base + bad + "\n", "p.toml")
        assert info.value.line == len((base + bad).splitlines())
    with pytest.raises(PlanError,
                       match="unknown key 'virtual_users'.*valid: keys, load_part_rows, memory_mb, name, passes, "
                             "query_timeout_s"):
        parse_plan(EXAMPLE_PLAN + "virtual_users = 8\n")


def test_pool_hosts_is_off_unless_the_plan_turns_it_on() -> None:
    assert not parse_plan(EXAMPLE_PLAN).pool_hosts
    assert parse_plan(EXAMPLE_PLAN.replace("seed = 1", "seed = 1\npool_hosts = true")).pool_hosts


def test_placebo_adds_a_second_baseline_to_every_engine() -> None:
    plan = parse_plan(EXAMPLE_PLAN.replace("seed = 1", "seed = 1\nplacebo = true"))
    assert plan.placebo and plan.engines[0].encryptions == ("none", "placebo", "aes-256-gcm", "aes-256-ctr")
    placebo = get_engine("duckdb").encryption("placebo")
    assert placebo.is_baseline and placebo.layer == "none"  # provisioned, keyed and judged like none
    assert Counter(t.key.encryption for t in schedule(plan))["placebo"] == plan.repetitions


def test_adaptive_keys_and_the_default_repetitions() -> None:
    plain = parse_plan(EXAMPLE_PLAN.replace("repetitions = 3\n", ""))
    assert plain.repetitions == 5 and not plain.adaptive and plain.target_ci_pct is None
    plan = parse_plan(EXAMPLE_PLAN.replace("seed = 1", "seed = 1\ntarget_ci_pct = 2\nmax_minutes = 30"))
    assert plan.adaptive and (plan.target_ci_pct, plan.max_minutes, plan.max_repetitions) == (2.0, 30.0, 1000)
    assert plan.target_tests == ()  # every headline figure
    chosen = parse_plan(EXAMPLE_PLAN.replace("seed = 1", 'seed = 1\ntarget_ci_pct = 2\ntarget_tests = ["power"]'))
    assert chosen.target_tests == ("power",)


def test_a_resumed_adaptive_run_finishes_each_groups_own_rounds() -> None:
    """Adaptive rounds are added per comparison group, so each group's begun rounds are planned
    up to its own highest round: here scale 0.01 reached round 5 (round 5 one trial done), 0.1
    stayed at the plan's 3."""
    plan = parse_plan(EXAMPLE_PLAN.replace("seed = 1", "seed = 1\ntarget_ci_pct = 2").replace(
        "scale = 0.01", "scales = [0.01, 0.1]"))
    scheduled = [spec.key for spec in planned(plan)]
    first = [key for key in scheduled if key.scale == 0.01 and key.repetition == 1]
    assert len(first) == 3 and len(scheduled) == 18
    later = {rep: [replace(key, repetition=rep) for key in first] for rep in (4, 5)}
    done = set(scheduled) | set(later[4]) | set(later[5][:1])
    extra = [spec.key for spec in planned(plan, done)][len(scheduled):]
    assert {comparison_group(key) for key in extra} == {("duckdb", None, "tpch", 0.01)}
    assert sorted(key.repetition for key in extra) == [4, 4, 4, 5, 5, 5]
    assert [spec.key.repetition for spec in to_run(plan, done)] == [5, 5]


PINNED = EXAMPLE_PLAN.replace("seed = 1\n", "seed = 1\npin_cpus = { engine = [0], driver = [0] }\n")


def test_pin_cpus_is_optional_and_read_as_given() -> None:
    assert parse_plan(EXAMPLE_PLAN).pin_cpus is None
    pinning = parse_plan(PINNED).pin_cpus
    assert pinning is not None and (pinning.engine, pinning.driver) == ((0,), (0,))
    table = PINNED.replace("pin_cpus = { engine = [0], driver = [0] }\n", "").replace(
        "[[engines]]", "[pin_cpus]\nengine = [0]\ndriver = [0]\n\n[[engines]]", 1)
    assert parse_plan(table).pin_cpus == pinning


@pytest.mark.parametrize("value, message", [
    ("[0]", "pin_cpus must be a table, e.g. pin_cpus = { engine = [1], driver = [0] }"),
    ("{ engine = [0] }", "pin_cpus needs driver (a list of CPUs)"),
    ("{ engine = [0], driver = [0], sampler = [0] }", "unknown key 'sampler' in pin_cpus; valid: driver, engine"),
    ("{ engine = [], driver = [0] }", "pin_cpus.engine must be a non-empty list of CPU numbers"),
    ('{ engine = [0], driver = ["0"] }', "pin_cpus.driver must be a non-empty list of CPU numbers"),
    ("{ engine = [true], driver = [0] }", "pin_cpus.engine must be a non-empty list of CPU numbers"),
    ("{ engine = [0, 0], driver = [0] }", "pin_cpus.engine lists a CPU twice"),
    ("{ engine = [4096], driver = [0] }", "pin_cpus.engine: CPU 4096 is not available on this machine; valid: "),
])
def test_pin_cpus_errors_name_file_and_line(value: str, message: str) -> None:
    with pytest.raises(PlanError) as info:
        parse_plan(PINNED.replace("{ engine = [0], driver = [0] }", value), "my.toml")
    assert message in str(info.value)
    assert str(info.value).startswith("my.toml:8: ")


def _with_memory(value: str) -> str:
    return EXAMPLE_PLAN.replace('name = "duckdb"\n', f'name = "duckdb"\nmemory_mb = {value}\n')


def test_memory_is_an_axis_compared_within_each_value() -> None:
    """A list of memory_mb values makes one configuration per value, each with every encryption
    (none included), in the same round: an encryption at 64 MB is compared with none at 64 MB."""
    plan = parse_plan(_with_memory("[64, 1024]"))
    assert plan.engines[0].memory_mb == (64, 1024)
    assert [(cell[1], cell[4]) for cell in plan.cells()] == [
        ("none", 64), ("aes-256-gcm", 64), ("aes-256-ctr", 64),
        ("none", 1024), ("aes-256-gcm", 1024), ("aes-256-ctr", 1024)]
    trials = schedule(plan)
    assert len(trials) == 6 * plan.repetitions
    for rep in range(1, plan.repetitions + 1):  # every round runs every (encryption, memory) once
        assert Counter((t.key.encryption, t.key.memory_mb) for t in trials if t.key.repetition == rep) == \
            {(enc, memory): 1 for enc in ("none", "aes-256-gcm", "aes-256-ctr") for memory in (64, 1024)}
    assert trials[0].key.id.endswith(f"/m{trials[0].key.memory_mb}/r1")
    assert all(t.key.memory_mb is None and "/m" not in t.key.id for t in schedule(parse_plan(EXAMPLE_PLAN)))
    assert [t.key.memory_mb for t in schedule(parse_plan(_with_memory("64")))] == [64] * 9


STRENGTH_AT = '\n[[workloads]]\nname = "strength"\nscale = 2000\nrepetitions = 1\nmemory_mb = {}\n'


def test_a_workload_runs_at_the_memory_values_it_picks() -> None:
    """A workload's memory_mb picks which of the engines' values it runs at (strength's outcomes at
    one cache, beside TPC-H at each); the others run at every value."""
    plan = parse_plan(_with_memory("[64, 1024]") + STRENGTH_AT.format(64))
    assert plan.workloads[1].memory_mb == (64,)
    assert Counter((cell[2].name, cell[4]) for cell in plan.cells()) == \
        {("tpch", 64): 3, ("tpch", 1024): 3, ("strength", 64): 3}
    assert {(t.key.workload, t.key.memory_mb) for t in schedule(plan)} == \
        {("tpch", 64), ("tpch", 1024), ("strength", 64)}


@pytest.mark.parametrize("engine_memory, picked, message", [
    ("[64, 1024]", "128", "memory_mb = 128 is none of the engines' memory_mb; valid: 64, 1024"),
    (None, "64", "duckdb gives none of [64]; its memory_mb: none (its default cache)"),
])
def test_a_workloads_memory_must_be_one_the_engines_give(engine_memory: str | None, picked: str, message: str) -> None:
    text = (_with_memory(engine_memory) if engine_memory else EXAMPLE_PLAN) + STRENGTH_AT.format(picked)
    with pytest.raises(PlanError, match=re.escape(message)) as error:
        parse_plan(text, "my.toml")
    assert error.value.line == len(text.splitlines())


@pytest.mark.parametrize("value, message", [
    ("[]", "my.toml:11: memory_mb must be a whole number or a non-empty list of them"),
    ("[64, 1]", "my.toml:11: memory_mb = 1 is out of range: 2 to 1048576"),
    ("[64, 64]", "my.toml:11: memory_mb lists a value twice"),
    ('["64"]', "my.toml:11: memory_mb must be a whole number from 2 to 1048576"),
    ("64.5", "my.toml:11: memory_mb must be a whole number from 2 to 1048576"),
])
def test_memory_errors_name_file_and_line(value: str, message: str) -> None:
    with pytest.raises(PlanError) as error:
        parse_plan(_with_memory(value), "my.toml")
    assert str(error.value).startswith(message)


@pytest.mark.parametrize("workload", ["crud", "oltp", "backup", "maintenance"])
def test_every_workload_takes_several_memory_values(workload: str) -> None:
    """Every workload's report keeps the memory sizes apart, so none refuses a list of them: each
    value is a configuration of its own, with every encryption."""
    tpch = 'name = "tpch"\nscale = 0.01\ntests = ["power", "throughput"]\nstreams = 2'
    plan = parse_plan(_with_memory("[2, 64]").replace(tpch, f'name = "{workload}"'))
    assert plan.engines[0].memory_mb == (2, 64)
    assert {(t.key.workload, t.key.memory_mb) for t in schedule(plan)} == {(workload, 2), (workload, 64)}


@pytest.mark.parametrize("extra, kind, name", [
    ('\n[[engines]]\nname = "duckdb"\nencryptions = ["aes-256-ctr"]\n', "engines", "duckdb"),
    ('\n[[workloads]]\nname = "tpch"\nscale = 0.1\n', "workloads", "tpch"),
])
def test_an_engine_or_workload_given_twice_is_refused(extra: str, kind: str, name: str) -> None:
    with pytest.raises(PlanError) as info:
        parse_plan(EXAMPLE_PLAN + extra, "my.toml")
    text = EXAMPLE_PLAN + extra
    lines = [n for n, line in enumerate(text.splitlines(), start=1) if line == f'name = "{name}"']
    assert len(lines) == 2
    assert (f"[[{kind}]] '{name}' is given twice (lines {lines[0]}, {lines[1]}); merge its settings into one "
            "table") in str(info.value)
    assert str(info.value).startswith(f"my.toml:{lines[0]}:")


def test_the_default_order_is_lockstep_unless_the_whole_os_cache_is_dropped() -> None:
    base = '[[engines]]\nname = "duckdb"\n[[workloads]]\nname = "tpch"\n'
    assert parse_plan(base).order == "lockstep"
    assert parse_plan('cache = "cold"\n' + base).order == "lockstep"  # evict = "files", the default
    assert parse_plan('cache = "cold"\nevict = "os"\n' + base).order == "interleaved"
    assert parse_plan('cache = "cold"\norder = "sequential"\n' + base).order == "sequential"


def test_a_run_stores_the_order_it_chose_and_an_older_run_resumes_in_the_order_it_ran() -> None:
    """A plan naming no order is stored with the one tdebench chose on a line of its own, so the run
    reads and resumes as it ran whatever a later default; a stored plan without one is from before,
    when a cold plan ran interleaved."""
    base = 'name = "x"\ncache = "cold"\n[[engines]]\nname = "duckdb"\n[[workloads]]\nname = "tpch"\n'
    stored = parse_plan(base).as_run
    assert stored.startswith('order = "lockstep"  # not in the plan as written') and stored.endswith(base)
    assert parse_plan(stored).order == "lockstep" and as_stored(parse_plan(stored)).order == "lockstep"
    named = 'order = "interleaved"\n' + base
    assert parse_plan(named).as_run == named
    assert as_stored(parse_plan(base)).order == "interleaved"  # an older run's cold plan
    assert as_stored(parse_plan(base.replace('cache = "cold"', 'cache = "warm"'))).order == "lockstep"


def test_a_list_option_takes_distinct_choices_in_the_order_written() -> None:
    """backup's backup_encryptions: a list of names from its choices, defaulted, errors at the line."""
    base = ('name = "b"\n\n[[engines]]\nname = "duckdb"\nencryptions = ["none"]\n\n'
            '[[workloads]]\nname = "backup"\nscale = 0.01\n')
    assert parse_plan(base).workloads[0].option_values() == {"backup_encryptions": ("none",)}
    spec = parse_plan(base + 'backup_encryptions = ["3des", "none", "aes-128"]\n').workloads[0]
    assert spec.option_values() == {"backup_encryptions": ("3des", "none", "aes-128")}
    for bad, message in (('backup_encryptions = ["aes-512"]',
                          "unknown backup_encryptions entry 'aes-512'; valid: none, aes-128, aes-192, aes-256, 3des"),
                         ('backup_encryptions = ["3des", "3des"]', "backup_encryptions names 3des more than once"),
                         ("backup_encryptions = []", "backup_encryptions must be a non-empty list of names"),
                         ('backup_encryptions = "aes-128"', "backup_encryptions must be a non-empty list of names")):
        with pytest.raises(PlanError, match=message) as info:
            parse_plan(base + bad + "\n", "p.toml")
        assert info.value.line == len((base + bad).splitlines())


def test_plans_command_reads_at_80_columns() -> None:
    """`tdebench plans`: a block per built-in plan, no line past 80 columns, and each
    description and expected duration (what `run` prints) whole when its lines are joined again
    (wrapped between words only)."""
    from click.testing import CliRunner

    from tdebench.cli import main
    from tdebench.cli.plans import builtin_plans, expected

    printed = CliRunner().invoke(main, ["plans"], catch_exceptions=False, terminal_width=80)
    assert printed.exit_code == 0, printed.output
    lines = printed.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    for name, path in builtin_plans().items():
        title = next(i for i, line in enumerate(lines) if line.startswith(f"{name} · "))
        body = []
        for line in lines[title + 1:]:
            if not line.startswith("  "):
                break
            body.append(line.strip())
        plan = load_plan(path)
        assert " ".join(body) == f"{plan.description}; {expected(plan)}", name


def _key_form_plan(engine: str, encryptions: str, key_form: str) -> str:
    return (f'name = "x"\n[[engines]]\nname = "{engine}"\nencryptions = {encryptions}\nkey_form = "{key_form}"\n'
            '[[workloads]]\nname = "tpch"\nscale = 0.01\n')


def test_key_form_raw_is_kept_for_an_engine_with_a_raw_key_and_passphrase_is_the_default() -> None:
    raw = parse_plan(_key_form_plan("sqlite", '["sqlcipher", "aes-256-cbc"]', "raw"))
    assert raw.engines[0].key_form == "raw"  # aes-256-cbc keeps its derivation: each trial records its form
    assert parse_plan(EXAMPLE_PLAN).engines[0].key_form == "passphrase"


@pytest.mark.parametrize("engine, encryptions, key_form, message", [
    ("duckdb", '["aes-256-gcm"]', "raw",
     'x.toml:5: key_form = "raw": duckdb takes no raw key (ATTACH derives the file\'s key from ENCRYPTION_KEY'),
    ("mariadb", '["aes-256-ctr"]', "raw", 'x.toml:5: key_form = "raw": mariadb takes no raw key (the server reads'),
    ("sqlite", '["aes-256-cbc", "rc4"]', "raw",
     "x.toml:5: key_form = \"raw\": none of sqlite's listed encryptions takes a raw key; those that do: "
     "chacha20-poly1305, sqlcipher, ascon-128, aegis-256"),
    ("sqlite", '["sqlcipher"]', "hex", "x.toml:5: unknown key_form 'hex'; valid: passphrase, raw"),
])
def test_key_form_errors_name_file_line_and_why(engine: str, encryptions: str, key_form: str, message: str) -> None:
    with pytest.raises(PlanError) as caught:
        parse_plan(_key_form_plan(engine, encryptions, key_form), source="x.toml")
    assert str(caught.value).startswith(message)


def test_a_plan_starting_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    """A BOM (Notepad writes one) used to make "not valid TOML (line 1, column 1)", naming nothing."""
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + EXAMPLE_PLAN.encode())
    assert load_plan(path).name == "quick"


def test_an_engine_name_with_escape_codes_is_reported_at_its_line_escaped() -> None:
    """A control character written as TOML's \\u001b is not in the text as written,
    so the error named no line; it names the key's line, and quotes the value escaped."""
    text = EXAMPLE_PLAN.replace('name = "duckdb"', 'name = "duck\\u001b[31mdb"')
    with pytest.raises(PlanError) as caught:
        parse_plan(text, "p.toml")
    assert str(caught.value).startswith("p.toml:10: unknown name 'duck\\x1b[31mdb'")
    assert "\x1b" not in str(caught.value)


def test_memory_below_what_an_engine_starts_with_is_refused_at_its_line() -> None:
    """MariaDB 10.11 will not start InnoDB (16 KiB pages) with a buffer pool under 6 MiB: a plan
    asking for less is bad input, not a trial that fails at its server's start."""
    plan = ('name = "small"\n[[engines]]\nname = "mariadb"\nencryptions = ["none"]\nmemory_mb = [16, 4]\n'
            '[[workloads]]\nname = "tpch"\nscale = 0.01\n')
    with pytest.raises(PlanError) as error:
        parse_plan(plan, "my.toml")
    assert str(error.value).startswith("my.toml:5: memory_mb = 4 is below what mariadb starts with: InnoDB with "
                                       "16 KiB pages needs a buffer pool of at least 6 MiB; valid: 6 to 1048576")
    assert [c.memory_mb for c in parse_plan(plan.replace("[16, 4]", "[16, 6]")).engines] == [(16, 6)]
    assert parse_plan(plan.replace('"mariadb"', '"sqlite"').replace("[16, 4]", "2")).engines[0].memory_mb == (2,)


def test_a_workload_may_run_in_fewer_rounds_than_the_plan() -> None:
    """`repetitions` of a workload: the strength tests of the quick plan run in the first round only,
    in every order, beside a timed workload that runs in every round."""
    text = EXAMPLE_PLAN + '\n[[workloads]]\nname = "strength"\nscale = 20000\nrepetitions = 1\n'
    for order in ("interleaved", "lockstep", "sequential"):
        plan = parse_plan(text.replace('order = "interleaved"', f'order = "{order}"'))
        rounds = Counter((spec.key.workload, spec.key.repetition) for spec in schedule(plan))
        assert rounds == {("tpch", 1): 3, ("tpch", 2): 3, ("tpch", 3): 3, ("strength", 1): 3}, order
    assert parse_plan(EXAMPLE_PLAN).workloads[0].repetitions is None
    with pytest.raises(PlanError, match="repetitions = 0 is out of range: 1 to 1000"):
        parse_plan(text.replace("repetitions = 1\n", "repetitions = 0\n"))


def test_only_runs_the_engines_named_and_the_stored_plan_says_so() -> None:
    """`tdebench run PLAN --engine NAME` (plan.only_engines): the plan as written under a line `only`,
    which the run stores; the other engines are not even checked (a server missing here)."""
    from tdebench.plan import only_engines

    text = EXAMPLE_PLAN.replace('[[engines]]\nname = "duckdb"', '[[engines]]\nname = "nosuchserver"\n\n'
                                                               '[[engines]]\nname = "duckdb"')
    with pytest.raises(PlanError):
        parse_plan(text)
    plan = parse_plan(only_engines(text, ["duckdb"]))
    assert [e.name for e in plan.engines] == ["duckdb"]
    assert plan.as_run.startswith('only = ["duckdb"]') and parse_plan(plan.as_run).engines == plan.engines
    with pytest.raises(PlanError, match="the plan has no engine 'sqlite'; its engines: nosuchserver, duckdb"):
        parse_plan(only_engines(text, ["sqlite"]))


def test_lockstep_runs_each_group_whole_in_a_plan_of_two_workloads() -> None:
    """A plan's cells run an engine's encryptions × its workloads, so one workload's trials of a
    round are not next to each other in it; lockstep must still run each group's configurations side
    by side, whole (the quick plan's first round had run its TPC-H group in pieces of 1 to 4 beside
    the strength trials)."""
    from tdebench.plan import group_of, lockstep_groups

    text = EXAMPLE_PLAN.replace('order = "interleaved"', 'order = "lockstep"') + (
        '\n[[workloads]]\nname = "strength"\nscale = 20000\nrepetitions = 1\n')
    plan = parse_plan(text)
    groups = lockstep_groups(schedule(plan))
    assert len(groups) == len({group_of(group[0].key) for group in groups})  # no group in pieces
    assert sorted(len(group) for group in groups) == [3, 3, 3, 3]  # tpch's 3 rounds, strength's 1


def test_a_workloads_own_rounds_are_its_rounds_in_the_adaptive_count() -> None:
    """The runner's count of each group's rounds (what the report's stopping sentence names): a
    workload that runs in the first round only has run 1, not the plan's 3."""
    from tdebench.results import RunData
    from tdebench.run.runner import _rounds_by_group

    plan = parse_plan(EXAMPLE_PLAN + '\n[[workloads]]\nname = "strength"\nscale = 20000\nrepetitions = 1\n')
    rounds = _rounds_by_group(plan, RunData(Path("."), plan.text, {}))
    assert {group[2]: count for group, count in rounds.items()} == {"tpch": 3, "strength": 1}
