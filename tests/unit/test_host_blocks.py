"""A cluster run's statistics: the host is a block, hosts that differ are reported apart.

Hand-made runs (no engines): one query timed on hosts whose absolute speed differs twofold, so
any ratio taken across two hosts would be far from the encryption's true cost on either.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tdebench.run import setup as runsetup
from tdebench.engines import get_engine
from tdebench.report.summaries.cipher_cost import cipher_cost_table
from tdebench.report.summaries.findings import hosts_sentence
from tdebench.report.data.records import host_blocks, host_groups, summary_records
from tdebench.report.summaries.tables import summary_table
from tdebench.results import CipherSpeed, Measurement, RunData, TrialKey, TrialOutcome
from tdebench.stats import PAIRED

PLAN = 'name = "hosts"\norder = "lockstep"\n'
ALIKE = {"cpu_model": "Fake CPU", "cpu_flags": {"aes": True}, "kernel": "6.1", "engines": {"duckdb": "1.5.5"}}
FACTS = runsetup.engine_facts({"duckdb": get_engine("duckdb")})
"""What every host recorded of DuckDB and its encryptions, at the run's top as a cluster run keeps
what its hosts share (cluster.work.cluster_environment)."""


def trial(encryption: str, repetition: int, host: str, seconds: float, run: RunData) -> None:
    key = TrialKey("duckdb", encryption, "tpch", 0.01, repetition)
    run.measurements.append(Measurement(key, "power", "q1", {"elapsed_s": seconds}, stream=0))
    run.trials.append(TrialOutcome(key, "ok", "warm", False, 1.0, host=host))


SPEED = {"a": 1.0, "b": 2.0}  # q1's time without encryption on each host


def cluster_run(rounds: list[tuple[str, str]], cost: dict[str, float], hosts: dict[str, dict],
                plan: str = PLAN) -> RunData:
    """`rounds`: (host of none, host of aes-256-gcm) per round; `cost`: the encryption's true
    ratio per host, with a small spread from the round's number."""
    run = RunData(directory=Path("."), plan_text=plan, environment={"hosts": hosts})
    for repetition, (base_host, treated_host) in enumerate(rounds, start=1):
        trial("none", repetition, base_host, SPEED[base_host], run)
        wobble = 1 + 0.002 * (repetition % 3)
        trial("aes-256-gcm", repetition, treated_host, SPEED[treated_host] * cost[treated_host] * wobble, run)
    return run


def overheads(run: RunData) -> dict[str | None, tuple[float, int]]:
    """Per host group: the q1 overhead of aes-256-gcm (percent) and how many rounds it paired."""
    found = {}
    for record in summary_records(run):
        if record.cell.step == "q1" and record.cell.encryption == "aes-256-gcm":
            assert record.overhead is not None and record.overhead.method == PAIRED
            found[record.cell.host] = (record.overhead.pct, record.overhead.n_treatment)
    return found


def test_hosts_alike_are_pooled_and_each_round_pairs_only_within_its_host() -> None:
    # rounds 1-2 on a, 3-4 on b (twice as slow); round 5's encryption was rerun on b after a died
    hosts = {"a": ALIKE, "b": ALIKE}
    run = cluster_run([("a", "a"), ("a", "a"), ("b", "b"), ("b", "b"), ("a", "b")], {"a": 1.10, "b": 1.10}, hosts)
    (pct, rounds), = overheads(run).values()
    assert hosts_sentence(host_blocks(run)).startswith("The trials ran on 2 hosts of a cluster (a, b), each round")
    assert rounds == 4  # round 5 would pair none on a with the encryption on b (+120%): left out
    assert pct == pytest.approx(10.22, abs=0.05)  # 1.10 × the wobbles' mean 1.002
    assert list(overheads(run)) == [None]  # one group, labelled as on one machine


def test_hosts_that_differ_are_reported_apart_each_against_its_own_baseline() -> None:
    hosts = {"a": ALIKE, "b": {**ALIKE, "cpu_model": "Other CPU"}}
    run = cluster_run([("a", "a"), ("b", "b"), ("a", "a"), ("b", "b")], {"a": 1.10, "b": 1.30}, hosts)
    found = overheads(run)
    assert set(found) == {"a", "b"}
    assert found["a"][0] == pytest.approx(10.0, abs=0.5) and found["a"][1] == 2
    assert found["b"][0] == pytest.approx(30.0, abs=0.5) and found["b"][1] == 2
    assert "so each kind is reported apart, as “engine @ hosts”: a; b" in hosts_sentence(host_blocks(run))


def test_tables_name_the_kind_of_host_so_rows_apart_do_not_read_as_duplicates() -> None:
    hosts = {"a": ALIKE, "b": {**ALIKE, "cpu_model": "Other CPU"}}
    run = cluster_run([("a", "a"), ("b", "b"), ("a", "a"), ("b", "b")], {"a": 1.10, "b": 1.30}, hosts)
    records = summary_records(run)
    summary = summary_table(records)
    assert "hosts" in [column.key for column in summary.columns]
    assert {(row["engine"], row["hosts"]) for row in summary.rows} == {("duckdb", "a"), ("duckdb", "b")}
    pooled = summary_table(summary_records(cluster_run([("a", "a"), ("b", "b")], {"a": 1.1, "b": 1.1},
                                                       {"a": ALIKE, "b": ALIKE})))
    assert "hosts" not in [column.key for column in pooled.columns]


def test_pool_hosts_pools_hosts_that_differ() -> None:
    hosts = {"a": ALIKE, "b": {**ALIKE, "kernel": "6.12"}}
    run = cluster_run([("a", "a"), ("b", "b"), ("a", "a"), ("b", "b")], {"a": 1.10, "b": 1.30}, hosts,
                      PLAN + "pool_hosts = true\n")
    (pct, rounds), = overheads(run).values()
    assert rounds == 4 and 10.0 < pct < 30.0
    assert hosts_sentence(host_blocks(run)).endswith("engine versions are pooled: pool_hosts = true.")


@pytest.mark.parametrize("changed", ["cpu_model", "cpu_flags", "kernel", "engines"])
def test_each_machine_fact_splits_hosts(changed: str) -> None:
    other = {**ALIKE, changed: "something else"}
    groups = host_groups({"a": ALIKE, "b": other, "c": ALIKE}, pool=False)
    assert groups == {"a": "a, c", "c": "a, c", "b": "b"}


def test_hosts_alike_or_pooled_have_no_group() -> None:
    assert host_groups({"a": ALIKE, "b": {**ALIKE, "hostname": "b", "load_average": [3.0]}}, pool=False) == {
        "a": None, "b": None}
    assert host_groups({"a": ALIKE, "b": {**ALIKE, "kernel": "7"}}, pool=True) == {"a": None, "b": None}


def test_many_hosts_alike_are_named_by_the_first() -> None:
    hosts = {f"n{i}": ALIKE for i in range(1, 6)} | {"odd": {**ALIKE, "kernel": "7"}}
    assert host_groups(hosts, pool=False)["n3"] == "n1 and 4 alike"


def test_a_local_run_has_no_host_groups() -> None:
    run = RunData(directory=Path("."), plan_text=PLAN, environment={})
    for repetition in (1, 2, 3):
        key = TrialKey("duckdb", "none", "tpch", 0.01, repetition)
        run.measurements.append(Measurement(key, "power", "q1", {"elapsed_s": 1.0 + repetition / 100}, stream=0))
        run.trials.append(TrialOutcome(key, "ok", "warm", False, 1.0))
    assert {record.cell.host for record in summary_records(run)} == {None}
    assert hosts_sentence(host_blocks(run)) == ""


def _loaded(encryption: str, repetition: int, host: str, seconds: float, run: RunData) -> None:
    key = TrialKey("duckdb", encryption, "tpch", 0.01, repetition)
    run.measurements.append(Measurement(key, "load", "total", {"elapsed_s": seconds, "read_bytes": 0.0,
                                                               "write_bytes": 64 * 2**20}))
    run.measurements.append(Measurement(key, "load", "database", {"size_bytes": 64 * 2**20}))
    run.trials.append(TrialOutcome(key, "ok", "warm", False, 1.0, host=host))


def test_against_the_raw_cipher_each_kind_of_host_is_set_against_its_own_cipher_speed() -> None:
    # host b's CPU has no fast AES: its cipher is 4× slower and its load's overhead larger
    hosts = {"a": ALIKE, "b": {**ALIKE, "cpu_model": "Other CPU"}}
    run = RunData(directory=Path("."), plan_text=PLAN, environment={**FACTS, "hosts": hosts})
    for repetition in range(1, 5):
        host = "ab"[repetition % 2]
        wobble = 0.001 * repetition
        _loaded("none", repetition, host, 1.0 + wobble, run)
        _loaded("aes-256-gcm", repetition, host, (1.1 if host == "a" else 1.4) + wobble, run)
    run.ciphers += [CipherSpeed("aes-256-gcm", 262144, 4000.0, host="a"),
                    CipherSpeed("aes-256-gcm", 262144, 1000.0, host="b")]
    table = cipher_cost_table(run, summary_records(run))
    rows = {row["hosts"]: row for row in table.rows}
    assert set(rows) == {"a", "b"} and "hosts" in [column.key for column in table.columns]
    assert rows["a"]["mib_per_s"] == 4000.0 and rows["b"]["mib_per_s"] == 1000.0
    # the 64 MiB each load wrote, at each kind of host's own speed
    assert rows["a"]["cipher_s"] == pytest.approx(0.016) and rows["b"]["cipher_s"] == pytest.approx(0.064)
    assert rows["a"]["cost_s"] == pytest.approx(0.1, rel=0.02) and rows["b"]["cost_s"] == pytest.approx(0.4, rel=0.02)


def test_against_the_raw_cipher_hosts_alike_share_the_median_of_their_cipher_speeds() -> None:
    run = RunData(directory=Path("."), plan_text=PLAN,
                  environment={**FACTS, "hosts": {"a": ALIKE, "b": ALIKE, "c": ALIKE}})
    for repetition in range(1, 4):
        _loaded("none", repetition, "abc"[repetition - 1], 1.0 + 0.001 * repetition, run)
        _loaded("aes-256-gcm", repetition, "abc"[repetition - 1], 1.1 + 0.001 * repetition, run)
    run.ciphers += [CipherSpeed("aes-256-gcm", 262144, speed, host=host)
                    for host, speed in (("a", 3000.0), ("b", 3900.0), ("c", 4000.0))]
    table = cipher_cost_table(run, summary_records(run))
    [row] = table.rows
    assert row["hosts"] == "" and row["mib_per_s"] == 3900.0  # not the first host's 3000
    assert "hosts" not in [column.key for column in table.columns]
