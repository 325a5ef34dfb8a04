"""A cluster run's pieces without Dask: the units of work, the trials in flight, hosts, the
addresses and plans --cluster takes, and the client's storing of what units send."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tdebench.cluster import work
from tdebench.cluster.collect import Collector
from tdebench.plan import group_of, parse_plan, schedule
from tdebench.results import CipherSpeed, Measurement, TrialKey, TrialOutcome, Verdict, to_json
from tdebench.run.runner import RunSummary, SilentProgress
from tdebench.store import ResultStore, read_run

PLAN = '''name = "units"
repetitions = 3
placebo = true
order = "{order}"
seed = 7

[[engines]]
name = "duckdb"
encryptions = ["none", "aes-256-gcm"]

[[engines]]
name = "sqlite"
encryptions = ["none", "aes-256-cbc", "rc4"]

[[workloads]]
name = "tpch"
scales = [0.01, 0.1]
tests = ["power"]
'''


@pytest.mark.parametrize("order", ["lockstep", "interleaved"])
def test_a_unit_is_one_round_of_one_comparison_group_with_its_baseline_and_placebo(order: str) -> None:
    plan = parse_plan(PLAN.format(order=order))
    trials = schedule(plan)
    units = work.units(trials)
    assert len(units) == 2 * 2 * 3  # engines × scales × rounds
    assert sorted(spec.key for unit in units for spec in unit.trials) == sorted(spec.key for spec in trials)
    for unit in units:
        assert len({group_of(spec.key) for spec in unit.trials}) == 1
        encryptions = {spec.key.encryption for spec in unit.trials}
        assert {"none", "placebo"} <= encryptions
        assert encryptions == set(plan.engine(unit.trials[0].key.engine).encryptions)
        order_in_schedule = [spec for spec in trials if group_of(spec.key) == group_of(unit.trials[0].key)]
        assert list(unit.trials) == order_in_schedule  # the schedule's order within the unit
    assert [unit.id for unit in units][:1] == [work.Unit((trials[0],)).id]  # units in the schedule's order


def test_a_unit_is_named_by_its_group_and_round() -> None:
    plan = parse_plan(PLAN.format(order="lockstep"))
    unit = work.units([spec for spec in schedule(plan) if spec.key.engine == "duckdb"
                       and spec.key.scale == 0.1 and spec.key.repetition == 2])[0]
    assert unit.id == "duckdb/tpch/sf0.1/r2"


def test_in_flight_is_the_whole_lockstep_group_or_the_next_trial() -> None:
    assert work.in_flight(["a", "b", "c"], lockstep=True) == ["a", "b", "c"]
    assert work.in_flight(["a", "b", "c"], lockstep=False) == ["a"]
    assert work.in_flight([], lockstep=False) == []


@pytest.mark.parametrize("name, address, host", [
    ("tcp://10.0.0.5:40123", "tcp://10.0.0.5:40123", "node1"),  # named by its address: the machine
    (None, "tcp://10.0.0.5:40123", "node1"),
    ("w2", "tcp://10.0.0.5:40123", "node1/w2"),
    (0, "tcp://127.0.0.1:40123", "node1/0"),  # a LocalCluster's worker
])
def test_a_host_is_its_machine_and_a_named_worker(name: object, address: str, host: str) -> None:
    assert work.host_identity("node1", name, address) == host


def test_cluster_addresses() -> None:
    assert work.parse_address("tcp://scheduler:8786") is None
    assert work.parse_address("local:2") == 2
    for wrong in ("local:0", "local:x", "local:65", "scheduler:8786", "http://x:1"):
        with pytest.raises(ValueError, match="--cluster .*(local:N|tcp://HOST:8786)"):
            work.parse_address(wrong)


def test_plans_a_cluster_refuses() -> None:
    assert work.cluster_problem(parse_plan(PLAN.format(order="lockstep"))) == ""
    assert "not \"sequential\"" in work.cluster_problem(parse_plan(PLAN.format(order="sequential")))
    text = PLAN.format(order="lockstep").replace("seed = 7", "seed = 7\ntarget_ci_pct = 2")
    assert work.cluster_problem(parse_plan(text)) == ""  # adaptive rounds are added by the client


def test_the_environment_keeps_every_host_and_what_they_share_on_top() -> None:
    a = {"hostname": "a", "kernel": "6.1", "cpu_model": "X", "load_average": [0.1]}
    b = {"hostname": "b", "kernel": "6.1", "cpu_model": "Y", "load_average": [0.2]}
    environment = work.cluster_environment({"b": b, "a": a}, "tcp://s:8786", "2026-11-24T08:00:00+00:00")
    assert environment["hosts"] == {"a": a, "b": b} and list(environment["hosts"]) == ["a", "b"]
    assert environment["kernel"] == "6.1" and "cpu_model" not in environment and "hostname" not in environment
    assert environment["cluster"] == "tcp://s:8786"
    assert environment["timestamp_utc"] == "2026-11-24T08:00:00+00:00"


def test_a_lost_trial_is_complete_and_failed() -> None:
    key = TrialKey("duckdb", "aes-256-gcm", "tpch", 0.01, 2)
    verdict, outcome = work.lost_records(key, "node2", "lost: the worker died twice", "warm")
    assert isinstance(verdict, Verdict) and verdict.verdict == "error" and verdict.expected == "encrypted"
    assert isinstance(outcome, TrialOutcome) and outcome.status == "failed" and outcome.host == "node2"
    assert outcome.error == "lost: the worker died twice"


def _event(number: int, host: str, message: dict) -> dict:
    return {"id": f"attempt/{number}", "host": host, "line": json.dumps(message)}


def _batch(key: TrialKey, host: str) -> dict:
    records = [Measurement(key, "power", "q1", {"elapsed_s": 0.1}, stream=0),
               Verdict(key, "plaintext", "plaintext", 1, 10, "x@0"),
               TrialOutcome(key, "ok", "warm", False, 1.0, host=host)]
    return {"records": [to_json(record) for record in records], "ended": [key.id]}


def test_the_collector_stores_each_batch_once_and_adds_hosts_as_they_appear(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.start('name = "x"\n', {"hosts": {"a": {"kernel": "6.1"}}})
    environment = read_run(tmp_path).environment
    summary = RunSummary()
    collector = Collector(store, environment, (), summary, 2, [], SilentProgress())
    first, second = (TrialKey("duckdb", "none", "tpch", 0.01, rep) for rep in (1, 2))
    speed = CipherSpeed("aes-256-gcm", 4096, 1000.0, "openssl", host="b")
    events = [_event(1, "b", {"environment": {"kernel": "6.12"}}),
              _event(2, "b", {"records": [to_json(speed)], "ended": []}),
              _event(3, "b", _batch(first, "b")),
              _event(1, "c", _batch(first, "c"))]  # the same trial sent again by another attempt
    for event in events + events:  # live, then read back from the scheduler
        collector.receive((0.0, event))
    collector.drain(0.1)
    collector.take(_event(4, "b", _batch(second, "b")))
    run = read_run(tmp_path)
    assert [outcome.host for outcome in run.trials] == ["b", "b"]
    assert [outcome.trial for outcome in run.trials] == [first, second]
    assert len(run.measurements) == 2 and len(run.ciphers) == 1
    assert run.environment["hosts"] == {"a": {"kernel": "6.1"}, "b": {"kernel": "6.12"}}
    assert summary.trials == 2 and summary.ok
    assert collector.measured_ciphers() == {"b"}


def test_the_trials_of_a_unit_that_failed_for_good_are_recorded_failed(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.start('name = "x"\n', {})
    plan = parse_plan(PLAN.format(order="lockstep"))
    unit = work.units(schedule(plan))[0]
    done = unit.trials[0].key
    summary = RunSummary()
    collector = Collector(store, {}, [done], summary, len(unit.trials), list(unit.trials), SilentProgress())
    collector.lost(unit.trials, "lost: KilledWorker: all workers died", plan.cache)
    run = read_run(tmp_path)
    assert {outcome.trial for outcome in run.trials} == {spec.key for spec in unit.trials[1:]}
    assert all(outcome.status == "failed" and "KilledWorker" in outcome.error for outcome in run.trials)
    assert run.complete_trials() == {spec.key for spec in unit.trials[1:]}
    assert len(summary.failed) == len(unit.trials) - 1
