"""The oltp workload's parts that need no server: input distributions (NURand, the mix, each
transaction's inputs) over many draws, the latency histogram, error classification, the
driver's timeline with fake transactions, the consistency checks against a deliberately
broken database, the data generator's rules and the plan keys."""

from __future__ import annotations

import os
import json
import pickle
import random
import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pytest

from tdebench.engines.base import Conflict, QueryTimeout, execute_in_turn
from tdebench.plan import PlanError, parse_plan
from tdebench.workloads.oltp import checks, data, schema
from tdebench.workloads.oltp.driver import Settings, UserLog, WorkerFailed, _merge, _Run, drive
from tdebench.workloads.oltp.errors import ROLLBACK_MARKER, classify
from tdebench.workloads.oltp.histogram import Histogram
from tdebench.workloads.oltp.inputs import (DELIVERY, KINDS, MIX, NEW_ORDER, PAYMENT, UNUSED_ITEM, Constants,
                                            Terminal, last_name, nurand)
from tdebench.workloads.oltp.transactions import COMMITTED, ROLLBACK
from tdebench.workloads.oltp.workload import LOAD, STRESS, settings
from tdebench.workloads.oltp.workload import share as share_of

DRAWS = 200_000


def terminal(warehouses: int = 1, user: int = 1, seed: int = 1) -> Terminal:
    return Terminal.for_user(user, warehouses, Constants.from_seed(seed), seed, "test")


# --- inputs ---------------------------------------------------------------------------


@pytest.mark.parametrize("a, x, y", [(255, 0, 999), (1023, 1, 3000)])  # last names, customer ids
def test_nurand_matches_its_exact_distribution(a: int, x: int, y: int) -> None:
    """The empirical distribution of NURand over many draws is the formula's exact one
    (enumerated over every pair of uniform draws), within sampling noise. (Item ids, NURand(8191,
    1, 100000), would need 819 million pairs; they share the code.)"""
    c = 123 % (a + 1)
    span = y - x + 1
    exact = np.zeros(span)
    lows = np.arange(a + 1)[:, None]
    highs = np.arange(x, y + 1)[None, :]
    np.add.at(exact, (((lows | highs) + c) % span).ravel(), 1.0)
    exact /= exact.sum()
    rng = random.Random(7)
    drawn = np.array([nurand(rng, a, x, y, c) for _ in range(DRAWS)])
    assert drawn.min() >= x and drawn.max() <= y
    empirical = np.bincount(drawn - x, minlength=span) / DRAWS
    # total variation distance; pure sampling noise gives about sqrt(span / DRAWS) / 2.5
    assert 0.5 * np.abs(empirical - exact).sum() < 2 * np.sqrt(span / DRAWS) / 2.5 + 0.01
    # and it is non-uniform: the most popular tenth of the values gets far more than a tenth
    assert np.sort(exact)[::-1][: span // 10].sum() > 0.15


def test_the_mix_is_madyatmadja_et_als_within_tolerance() -> None:
    user = terminal()
    counts = Counter(user.kind() for _ in range(DRAWS))
    for kind, share in MIX.items():
        tolerance = 5 * np.sqrt(share * (1 - share) / DRAWS)  # five standard deviations
        assert abs(counts[kind] / DRAWS - share) < tolerance, (kind, counts[kind] / DRAWS)
    assert sum(MIX.values()) == pytest.approx(1.0)


def test_new_order_inputs_follow_the_spec() -> None:
    user = terminal(warehouses=4)
    orders = [user.new_order() for _ in range(50_000)]
    lines = [len(o.items) for o in orders]
    assert min(lines) == 5 and max(lines) == 15 and np.mean(lines) == pytest.approx(10, abs=0.1)
    rollbacks = sum(o.rollback for o in orders) / len(orders)
    assert rollbacks == pytest.approx(0.01, abs=0.002)
    assert all(UNUSED_ITEM not in o.items[:-1] for o in orders)  # only the last item is unused
    remote = [w != o.w_id for o in orders for w in o.supply_w_ids]
    assert sum(remote) / len(remote) == pytest.approx(0.01, abs=0.002)
    assert all(1 <= q <= 10 for o in orders for q in o.quantities)
    assert all(1 <= o.c_id <= 3000 and 1 <= o.d_id <= 10 and o.w_id == 1 for o in orders)
    single = terminal(warehouses=1)
    assert all(o.all_local for o in (single.new_order() for _ in range(5000)))


def test_payment_inputs_follow_the_spec() -> None:
    user = terminal(warehouses=3, user=2)
    payments = [user.payment() for _ in range(50_000)]
    by_name = sum(p.customer.c_last is not None for p in payments) / len(payments)
    assert by_name == pytest.approx(0.60, abs=0.01)
    assert all((p.customer.c_id is None) != (p.customer.c_last is None) for p in payments)
    remote = sum(p.customer.w_id != p.w_id for p in payments) / len(payments)
    assert remote == pytest.approx(0.15, abs=0.01)
    assert all(1.0 <= p.amount <= 5000.0 and round(p.amount, 2) == p.amount for p in payments)
    assert {p.w_id for p in payments} == {2}


def test_terminals_are_repeatable_and_spread_over_warehouses() -> None:
    first, again = terminal(seed=5), terminal(seed=5)
    assert [first.next(first.kind()) for _ in range(200)] == [again.next(again.kind()) for _ in range(200)]
    assert [terminal(warehouses=2, user=u).w_id for u in (1, 2, 3, 4)] == [1, 2, 1, 2]
    assert [terminal(warehouses=1, user=u).d_id for u in (1, 2, 11)] == [1, 2, 1]


def test_last_names_and_run_constants_follow_clause_4_3_2_3_and_2_1_6() -> None:
    assert last_name(371) == "PRICALLYOUGHT" and last_name(40) == "BARPRESBAR"
    for seed in range(300):
        constants = Constants.from_seed(seed)
        delta = abs(constants.c_last_run - constants.c_last_load)
        assert 65 <= delta <= 119 and delta not in (96, 112)
        assert 0 <= constants.c_id <= 1023 and 0 <= constants.ol_i_id <= 8191


# --- histogram ------------------------------------------------------------------------


def test_histogram_percentiles_are_within_one_bucket() -> None:
    values = np.random.default_rng(3).lognormal(mean=-6, sigma=1.2, size=100_000)
    histogram = Histogram()
    for value in values:
        histogram.add(float(value))
    for q in (50, 90, 95, 99):
        true = np.percentile(values, q, method="inverted_cdf")
        assert true <= histogram.percentile(q) <= true * 2 ** (1 / 32) * 1.0001
    assert histogram.percentile(100) == histogram.max_s == values.max()
    metrics = histogram.metrics()
    assert metrics["mean_elapsed_s"] == pytest.approx(values.mean())
    assert set(metrics) == {"p50_elapsed_s", "p90_elapsed_s", "p95_elapsed_s", "p99_elapsed_s",
                            "max_elapsed_s", "mean_elapsed_s"}


def test_histograms_merge_exactly_and_an_empty_one_has_no_figures() -> None:
    values = [0.001 * n for n in range(1, 1001)]
    whole, left, right = Histogram(), Histogram(), Histogram()
    for n, value in enumerate(values):
        whole.add(value)
        (left if n % 2 else right).add(value)
    left.merge(right)
    assert left.metrics() == pytest.approx(whole.metrics())
    assert Histogram().metrics() == {}
    with pytest.raises(ValueError, match="no values"):
        Histogram().percentile(50)


# --- errors ---------------------------------------------------------------------------


def test_lost_races_are_retried_and_everything_else_counted_by_type() -> None:
    """Which driver errors are lost races is each connection's to say (tests/unit/test_conflicts.py):
    they reach the workload as Conflict; any other error is counted by its type."""
    import duckdb
    import pymysql

    for kind in ("deadlock", "serialization failure", "lock wait timeout", "write conflict", "busy"):
        assert (classify(Conflict(kind)).kind, classify(Conflict(kind)).retryable) == (kind, True)
    assert classify(RuntimeError(f"{ROLLBACK_MARKER}: item 100001")).rollback
    assert classify(QueryTimeout("stopped")).kind == "timeout"
    other = classify(pymysql.err.OperationalError(2013, "Lost connection"))
    assert (other.kind, other.retryable) == ("OperationalError", False)
    assert classify(duckdb.ConstraintException("duplicate key")).kind == "ConstraintException"


# --- driver ---------------------------------------------------------------------------


class FakeConnection:
    """Counts the ROLLBACKs the driver sends after an error."""

    def __init__(self) -> None:
        self.rollbacks = 0

    def execute(self, sql: str, params: Any = ()) -> list:
        assert sql == "ROLLBACK"
        self.rollbacks += 1
        return []

    def close(self) -> None:
        pass


def fake_run(fail_first: dict[str, int] | None = None, error: type[Exception] | None = None):
    """A transaction that takes a millisecond; New-Order rolls back on the spec's unused item;
    `fail_first` makes a type fail that many times with a conflict first; `error` makes Delivery fail."""
    failures = Counter(fail_first or {})
    lock = threading.Lock()

    def run(kind: str, inputs: Any) -> str:
        time.sleep(0.001)
        with lock:
            if failures[kind] > 0:
                failures[kind] -= 1
                raise Conflict("write conflict")  # as DuckDB's connection raises its write conflict
        if error is not None and kind == DELIVERY:
            raise error("boom")
        if kind == NEW_ORDER and inputs.rollback:
            return ROLLBACK
        return COMMITTED

    return run


def run_fake(settings_: Settings, run, processes: int = 0, terminals: list | None = None
             ) -> tuple[Any, list[FakeConnection]]:
    connections = [FakeConnection() for _ in range(settings_.virtual_users)]
    users = [(conn, run, terminals[n - 1] if terminals else terminal(user=n))
             for n, conn in enumerate(connections, start=1)]
    return drive(settings_, users, lambda: None, processes=processes), connections


@pytest.mark.parametrize("processes", [0, 2, 3], ids=["threads", "2-processes", "a-process-each"])
def test_duration_mode_counts_the_window_and_its_intervals(processes: int) -> None:
    outcome, _ = run_fake(Settings(virtual_users=3, rampup_s=0.2, duration_s=0.6, transactions=0,
                                   interval_s=0.25, max_retries=5), fake_run(), processes)
    assert outcome.window_s == pytest.approx(0.6)
    assert [round(i.elapsed_s, 6) for i in outcome.intervals] == [0.25, 0.25, 0.1]
    assert sum(sum(i.committed.values()) for i in outcome.intervals) == outcome.committed > 0
    assert outcome.new_orders_total >= outcome.tallies[NEW_ORDER].committed  # ramp-up ones too
    assert all(t.latency.count == t.committed + t.rollbacks for t in outcome.tallies.values())
    assert not outcome.errors and outcome.driver_cpu_s > 0 and "cpu_s" in outcome.engine


@pytest.mark.parametrize("processes", [0, 2], ids=["threads", "processes"])
def test_count_mode_ends_the_window_at_the_nth_commit(processes: int) -> None:
    """In worker processes too: the tickets are handed out once over all of them."""
    outcome, _ = run_fake(Settings(virtual_users=2, rampup_s=0.0, duration_s=60, transactions=150,
                                   interval_s=1.0, max_retries=5), fake_run(), processes)
    assert outcome.committed == 150
    assert outcome.window_s < 10


def test_conflicts_are_retried_and_counted_and_errors_counted_by_type() -> None:
    outcome, connections = run_fake(
        Settings(virtual_users=1, rampup_s=0.0, duration_s=0.5, transactions=0, interval_s=1.0, max_retries=5),
        fake_run(fail_first={PAYMENT: 3}, error=KeyError))
    assert outcome.tallies[PAYMENT].retries == Counter({"write conflict": 3})
    assert outcome.tallies[PAYMENT].committed > 0
    errors = outcome.errors
    assert set(errors) == {"KeyError"} and errors["KeyError"] == sum(t.errors["KeyError"]
                                                                     for t in outcome.tallies.values()) + \
        outcome.errors_outside["KeyError"]
    assert "delivery: KeyError" in outcome.first_errors["KeyError"]
    assert connections[0].rollbacks == 3 + errors["KeyError"]  # every failed attempt rolled back


def test_worker_processes_retry_count_errors_and_send_their_first_messages() -> None:
    outcome, _ = run_fake(
        Settings(virtual_users=2, rampup_s=0.0, duration_s=0.5, transactions=0, interval_s=1.0, max_retries=5),
        fake_run(fail_first={PAYMENT: 3}, error=KeyError), processes=2)
    # each worker process has its own copy of the fake's failure budget: 3 conflicts in each
    assert outcome.tallies[PAYMENT].retries == Counter({"write conflict": 6})
    assert set(outcome.errors) == {"KeyError"} and "delivery: KeyError" in outcome.first_errors["KeyError"]


def _user_log(seed: int) -> UserLog:
    rng = random.Random(seed)
    log = UserLog()
    for kind in KINDS:
        tally = log.tallies[kind]
        tally.committed, tally.rollbacks = rng.randrange(100), rng.randrange(3)
        tally.retries.update({"deadlock": rng.randrange(4)})
        tally.errors.update({"KeyError": rng.randrange(2)})
        for _ in range(tally.committed + tally.rollbacks):
            tally.latency.add(rng.lognormvariate(-6, 1))
        log.committed_all[kind] = tally.committed + rng.randrange(10)
    log.intervals = {i: Counter({NEW_ORDER: rng.randrange(50)}) for i in range(3)}
    log.errors_outside["KeyError"] = seed
    log.first_errors["KeyError"] = f"from user {seed}"
    return log


def test_another_hosts_log_merges_exactly_after_crossing_the_network_as_json() -> None:
    """A cluster's other driver sends its users' log merged into one, as JSON: the owner's outcome
    is the one all the logs would give in one process, percentiles included."""
    logs = [_user_log(seed) for seed in (1, 2, 3)]
    state = _Run(Settings(virtual_users=3, rampup_s=0.0, duration_s=1.0, transactions=0, interval_s=0.4,
                          max_retries=5))
    state.begin(0)
    direct = _merge(state, state.window_end, logs, {}, 0.0)
    other = _merge(state, state.window_end, logs[1:], {}, 0.0).log
    sent = UserLog.from_json(json.loads(json.dumps(other.to_json())))
    assert sent == other
    assert sent.tallies[NEW_ORDER].latency.percentile(99) == other.tallies[NEW_ORDER].latency.percentile(99)
    spread = _merge(state, state.window_end, [logs[0], sent], {}, 0.0, elsewhere=7)
    for kind in KINDS:  # the sums of latencies only as exact as floating point's order of addition
        ours, whole = spread.tallies[kind], direct.tallies[kind]
        assert ours.latency.total_s == pytest.approx(whole.latency.total_s, rel=1e-12)
        ours.latency.total_s = whole.latency.total_s
        assert ours == whole
    assert spread.intervals == direct.intervals
    assert spread.committed_all == direct.committed_all and spread.elsewhere == 7


def test_user_logs_merge_exactly_after_crossing_a_pipe() -> None:
    """What a worker sends (a pickled UserLog) merges into the same outcome as the log itself:
    every count adds up, every histogram bucket too."""
    logs = [_user_log(seed) for seed in (1, 2, 3)]
    state = _Run(Settings(virtual_users=3, rampup_s=0.0, duration_s=1.0, transactions=0, interval_s=0.4,
                          max_retries=5))
    state.begin(0)
    assert state.window_end == 10**9
    direct = _merge(state, state.window_end, logs, {"cpu_s": 1.0}, 0.5)
    piped = _merge(state, state.window_end, [pickle.loads(pickle.dumps(log)) for log in logs], {"cpu_s": 1.0}, 0.5)
    assert piped == direct
    for kind in KINDS:
        merged = direct.tallies[kind]
        assert merged.committed == sum(log.tallies[kind].committed for log in logs)
        assert merged.retries == sum((log.tallies[kind].retries for log in logs), Counter())
        assert merged.latency.counts == sum((log.tallies[kind].latency.counts for log in logs), Counter())
        assert merged.latency.count == merged.committed + merged.rollbacks
        assert merged.latency.max_s == max(log.tallies[kind].latency.max_s for log in logs)
    assert direct.committed_all == sum((log.committed_all for log in logs), Counter())
    assert [round(i.elapsed_s, 9) for i in direct.intervals] == [0.4, 0.4, 0.2]
    assert [i.committed[NEW_ORDER] for i in direct.intervals] == [
        sum(log.intervals[i][NEW_ORDER] for log in logs) for i in range(3)]
    assert direct.errors["KeyError"] == sum(t.errors["KeyError"] for t in direct.tallies.values()) + 6
    assert direct.first_errors == {"KeyError": "from user 1"}


class CrashingTerminal:
    """A terminal that fails (a bug, not a database error) after `after` transactions, once its
    process has written its pid down, so the test can look for it afterwards."""

    def __init__(self, pids: Path, after: int | None) -> None:
        self.pids, self.after, self.inner = pids, after, terminal()

    def kind(self) -> str:
        (self.pids / str(os.getpid())).touch()
        if self.after is not None:
            self.after -= 1
            if self.after < 0:
                raise RuntimeError("a bug in a virtual user")
        return self.inner.kind()

    def next(self, kind: str) -> Any:
        return self.inner.next(kind)


def _assert_no_worker_left(pids: Path, children_before: set[int]) -> None:
    workers = {int(path.name) for path in pids.iterdir()} - {os.getpid()}
    assert workers, "no worker process ran"
    assert not [pid for pid in workers if psutil.pid_exists(pid)], "a worker process outlived the run"
    assert {p.pid for p in psutil.Process().children(recursive=True)} <= children_before


def test_a_crashing_worker_fails_the_run_and_leaves_no_worker_process(tmp_path: Path) -> None:
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    terminals = [CrashingTerminal(tmp_path, None), CrashingTerminal(tmp_path, 20), CrashingTerminal(tmp_path, None)]
    started = time.monotonic()
    # users 1 and 3 share worker 1, user 2 has worker 2
    with pytest.raises(WorkerFailed, match=r"worker process 2 crashed:(.|\n)*RuntimeError: a bug in a virtual user"):
        run_fake(Settings(virtual_users=3, rampup_s=0.0, duration_s=30.0, transactions=0, interval_s=1.0,
                          max_retries=5), fake_run(), processes=2, terminals=terminals)
    assert time.monotonic() - started < 10  # the crash stopped the run, not the window's end
    _assert_no_worker_left(tmp_path, before)


def test_ctrl_c_during_a_multi_process_run_leaves_no_worker_process(tmp_path: Path) -> None:
    """Ctrl-C reaches the terminal's whole process group: the driver and every worker get SIGINT;
    the workers ignore it, the driver stops them and raises KeyboardInterrupt."""
    before = {p.pid for p in psutil.Process().children(recursive=True)}

    def ctrl_c() -> None:
        time.sleep(0.8)
        for pid in [int(path.name) for path in tmp_path.iterdir()] + [os.getpid()]:
            os.kill(pid, signal.SIGINT)

    # Python's own Ctrl-C handler, even where this test's process was started with SIGINT ignored
    # (as a shell does for a job it runs in the background without job control)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=ctrl_c, daemon=True).start()
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_fake(Settings(virtual_users=4, rampup_s=0.2, duration_s=30.0, transactions=0, interval_s=1.0,
                              max_retries=5), fake_run(), processes=2,
                     terminals=[CrashingTerminal(tmp_path, None) for _ in range(4)])
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - started < 10
    _assert_no_worker_left(tmp_path, before)


def test_a_transaction_that_keeps_failing_is_an_error_after_max_retries() -> None:
    outcome, _ = run_fake(
        Settings(virtual_users=1, rampup_s=0.0, duration_s=0.3, transactions=0, interval_s=1.0, max_retries=2),
        fake_run(fail_first={kind: 10**6 for kind in KINDS}))
    assert outcome.committed == 0
    assert set(outcome.errors) == {"retries exhausted (write conflict)"}
    assert outcome.gave_up and "10 errors in a row" in outcome.gave_up[0]


# --- consistency checks ---------------------------------------------------------------


class DuckConnection:
    """A DuckDB in memory behind the Connection protocol: a real engine, no files."""

    def __init__(self) -> None:
        import duckdb

        self.con = duckdb.connect()

    def execute(self, sql: str, params: Any = ()) -> list[tuple]:
        return self.con.execute(sql, list(params) if params else None).fetchall()

    def execute_batch(self, statements: Any) -> list[list[tuple]]:
        self.batches = getattr(self, "batches", 0) + 1
        return execute_in_turn(self, statements)


@pytest.fixture
def consistent() -> DuckConnection:
    """Two districts of one warehouse after some New-Orders, Payments and Deliveries."""
    conn = DuckConnection()
    for statement in schema.create_tables("duckdb"):
        conn.execute(statement)
    address = "'s1', 's2', 'city', 'ST', '123411111'"
    conn.execute(f"INSERT INTO warehouse VALUES (1, 'w', {address}, 0.1, 300.50)")
    conn.execute(f"INSERT INTO district VALUES (1, 1, 'd', {address}, 0.1, 150.25, 5), "
                 f"(2, 1, 'd', {address}, 0.1, 150.25, 3)")
    for d_id, last in ((1, 4), (2, 2)):
        for o_id in range(1, last + 1):
            conn.execute("INSERT INTO orders VALUES (?, ?, 1, 1, TIMESTAMP '2024-01-01', NULL, 2, 1)", [o_id, d_id])
            for number in (1, 2):
                conn.execute("INSERT INTO order_line VALUES (?, ?, 1, ?, 1, 1, NULL, 5, 1.00, 'x')",
                             [o_id, d_id, number])
        conn.execute("INSERT INTO new_order SELECT range, ?, 1 FROM range(2, ? + 1)", [d_id, last])
    assert checks.consistency(conn) == []
    return conn


@pytest.mark.parametrize(("one_update", "in_text", "stock_statements"), [
    (True, False, ["SELECT", "SELECT", "UPDATE", "UPDATE"]), (True, True, ["SELECT", "SELECT", "UPDATE", "UPDATE"]),
    (False, False, ["SELECT", "SELECT", "UPDATE", "UPDATE", "UPDATE"])])
def test_a_new_order_takes_its_stock_as_line_by_line_in_one_read_per_supplying_warehouse(
        consistent: DuckConnection, one_update: bool, in_text: bool, stock_statements: list[str]) -> None:
    """Item 3 twice (5 + 4 of its 14: below 10 left, so +91 the second time), item 5, and item 7
    from warehouse 2 (remote): one read per warehouse, and one UPDATE each or one per row; the
    reads in one batch and the writes in another (two round trips on a server)."""
    from dataclasses import replace

    from tdebench.workloads.oltp.inputs import NewOrder
    from tdebench.workloads.oltp.transactions import dialect, new_order

    conn = consistent
    address = "'s1', 's2', 'city', 'ST', '123411111'"
    conn.execute(f"INSERT INTO warehouse VALUES (2, 'w', {address}, 0.1, 0)")
    conn.execute(f"INSERT INTO customer VALUES (1, 1, 1, 'f', 'OE', 'last', {address}, 'p', "
                 "TIMESTAMP '2024-01-01', 'GC', 50000, 0.1, 0, 0, 0, 0, 'data')")
    conn.execute("INSERT INTO item VALUES (3, 1, 'i3', 2.50, 'd'), (5, 1, 'i5', 3.00, 'd'), (7, 1, 'i7', 1.00, 'd')")
    dists = ", ".join(f"'dist{n}'" for n in range(1, 11))
    conn.execute(f"INSERT INTO stock VALUES (3, 1, 14, {dists}, 0, 0, 0, 'd'), (5, 1, 30, {dists}, 0, 0, 0, 'd'), "
                 f"(7, 2, 50, {dists}, 0, 0, 0, 'd')")
    statements: list[str] = []
    execute = conn.execute

    def counted(sql: str, params: Any = ()) -> list[tuple]:
        statements.append(sql)
        return execute(sql, params)

    conn.execute = counted  # type: ignore[method-assign]
    conn.batches = 0
    sql = replace(dialect("duckdb"), one_stock_update=one_update, numbers_in_text=in_text)
    assert new_order(conn, sql, NewOrder(1, 1, 1, (3, 7, 3, 5), (1, 2, 1, 1), (5, 2, 4, 1))) == COMMITTED
    assert conn.batches == 2 and len(statements) == 9 + len(stock_statements)
    conn.execute = execute  # type: ignore[method-assign]
    assert sorted(conn.execute("SELECT s_i_id, s_w_id, s_quantity, s_ytd, s_order_cnt, s_remote_cnt FROM stock")) == [
        (3, 1, 14 - 5 - 4 + 91, 9, 2, 0), (5, 1, 29, 1, 1, 0), (7, 2, 48, 2, 1, 1)]
    assert [s.split(" ")[0] for s in statements if " stock " in s] == stock_statements
    assert conn.execute("SELECT ol_number, ol_i_id, ol_dist_info, ol_amount FROM order_line WHERE ol_o_id = 5 "
                        "ORDER BY ol_number") == [(1, 3, "dist1", 12.5), (2, 7, "dist1", 2.0), (3, 3, "dist1", 10.0),
                                                  (4, 5, "dist1", 3.0)]


@pytest.mark.parametrize("named", [1, 2, 3, 4, 5])
def test_a_customer_chosen_by_last_name_is_at_position_ceil_n_over_2_by_first_name(named: int) -> None:
    """Clause 2.5.2.2, in one statement: of `named` customers of a last name (their first
    names not in c_id order), the one at position ceil(n/2) in c_first order; another
    district's and another name's customers are not counted."""
    from tdebench.workloads.oltp.inputs import Customer
    from tdebench.workloads.oltp.transactions import _customer

    conn = DuckConnection()
    for statement in schema.create_tables("duckdb"):
        conn.execute(statement)
    firsts = ["delta", "alpha", "echo", "charlie", "bravo"][:named]
    rows = [(1, 1, c_id, first, "ABLE") for c_id, first in enumerate(firsts, start=1)]
    rows += [(1, 2, 1, "aaa", "ABLE"), (1, 1, 9, "aaa", "BAKER")]
    for w_id, d_id, c_id, first, last in rows:
        conn.execute("INSERT INTO customer VALUES (?, ?, ?, ?, 'OE', ?, 's1', 's2', 'city', 'ST', '123411111', 'p', "
                     "TIMESTAMP '2024-01-01', 'GC', 50000, 0.1, 0, 0, 0, 0, 'data')", [c_id, d_id, w_id, first, last])
    found, params = _customer(Customer(1, 1, None, "ABLE"))
    by_first = sorted(range(1, named + 1), key=lambda c_id: firsts[c_id - 1])
    assert conn.execute("SELECT c_id FROM customer WHERE " + found, params) == [(by_first[(named + 1) // 2 - 1],)]


def test_consistency_holds_on_a_consistent_database(consistent: DuckConnection) -> None:
    assert checks.next_order_ids(consistent) == 8
    assert checks.new_order_count(5, 8, 3) == []


@pytest.mark.parametrize("breakage, condition", [
    ("UPDATE warehouse SET w_ytd = w_ytd + 0.01", "condition 1: warehouse 1 has w_ytd 300.51"),
    ("UPDATE district SET d_next_o_id = 6 WHERE d_id = 1", "condition 2: district 1/1 has d_next_o_id 6"),
    ("DELETE FROM orders WHERE o_d_id = 2 AND o_id = 2", "condition 2: district 1/2"),
    ("DELETE FROM new_order WHERE no_d_id = 1 AND no_o_id = 4", "condition 2: district 1/1"),
    ("DELETE FROM new_order WHERE no_d_id = 1 AND no_o_id = 3",
     "condition 3: district 1/1 has new orders 2..4 but 2 rows"),
    ("DELETE FROM new_order WHERE no_d_id = 1 AND no_o_id = 2", ""),  # a delivery: still consistent
    ("DELETE FROM order_line WHERE ol_d_id = 1 AND ol_o_id = 1 AND ol_number = 2",
     "condition 4: district 1/1 has sum(o_ol_cnt) 8 but 7 order lines"),
])
def test_each_broken_condition_is_found(consistent: DuckConnection, breakage: str, condition: str) -> None:
    consistent.execute(breakage)
    problems = checks.consistency(consistent)
    if condition:
        assert any(p.startswith(condition) for p in problems), problems
    else:
        assert problems == []


def test_the_drivers_new_order_count_must_match_the_database() -> None:
    assert checks.new_order_count(6000, 6100, 99) == [
        "the driver counted 99 committed New-Orders, the database 100 (sum(d_next_o_id) 6000 → 6100)"]


# --- data -----------------------------------------------------------------------------


def _rows(table: str, seed: int = 1, where: str = "") -> list[tuple]:
    import duckdb

    return duckdb.connect().execute(f"SELECT * FROM ({data.table_sql(table, 2, seed)}) {where}").fetchall()


def test_generated_data_follows_clause_4_3_3_and_the_seed() -> None:
    assert len(_rows("warehouse")) == 2 and len(_rows("district")) == 20
    assert _rows("district") == _rows("district") != _rows("district", seed=2)
    orders = _rows("orders", where="WHERE o_w_id = 2 AND o_d_id = 3")
    assert sorted(o[3] for o in orders) == list(range(1, 3001))  # o_c_id: a permutation
    assert [o[0] for o in orders] == list(range(1, 3001))  # in key order
    assert all((o[5] is None) == (o[0] >= data.UNDELIVERED_FROM) and 5 <= o[6] <= 15 for o in orders)
    assert len(_rows("new_order")) == 2 * 10 * 900
    names = _rows("customer", where="WHERE c_w_id = 1 AND c_d_id = 1 AND c_id <= 1000 ORDER BY c_id")
    assert [c[5] for c in names] == [last_name(n) for n in range(1000)]
    street, first, phone = names[0][6], names[0][3], names[0][11]
    assert 10 <= len(street) <= 20 and street.isalnum() and 8 <= len(first) <= 16
    assert len(phone) == 16 and phone.isdigit()


def test_scale_is_a_whole_number_of_warehouses() -> None:
    assert data.warehouses(3.0) == 3
    for bad in (1.5, 0, 101):
        with pytest.raises(ValueError, match="number of warehouses, a whole number"):
            data.warehouses(bad)


# --- plan keys ------------------------------------------------------------------------


PLAN = '''name = "oltp-keys"
[[engines]]
name = "duckdb"
[[workloads]]
name = "oltp"
scale = 2
'''


def test_plan_keys_are_typed_defaulted_and_split_by_test() -> None:
    spec = parse_plan(PLAN).workloads[0]
    assert spec.tests == (LOAD, STRESS) and spec.scales == (2.0,)
    options = spec.option_values()
    assert settings(LOAD, options) == Settings(2, 2.0, 10.0, 0, 2.0, 100)
    assert settings(STRESS, options) == Settings(4, 2.0, 20.0, 0, 2.0, 100)
    custom = parse_plan(PLAN + "virtual_users = 3\ntransactions = 500\nstress_duration_s = 1800\n"
                               "procedures = false\n").workloads[0].option_values()
    assert settings(LOAD, custom).transactions == 500 and settings(STRESS, custom).transactions == 0
    assert settings(STRESS, custom).duration_s == 1800 and custom["procedures"] is False
    with pytest.raises(PlanError, match="virtual_users = 0 is out of range: 1 to 256"):
        parse_plan(PLAN + "virtual_users = 0\n", "p.toml")
    assert options["virtual_users_as"] == "processes"
    assert parse_plan(PLAN + 'virtual_users_as = "threads"\n').workloads[0].option_values()["virtual_users_as"] \
        == "threads"
    with pytest.raises(PlanError) as bad:
        parse_plan(PLAN + 'virtual_users_as = "forks"\n', "p.toml")
    assert "p.toml:7" in str(bad.value) and "forks" in str(bad.value) and "processes, threads" in str(bad.value)
    with pytest.raises(PlanError, match="p.toml:6: scale 1.5 is not a whole number; oltp's scale counts"):
        parse_plan(PLAN.replace("scale = 2", "scale = 1.5"), "p.toml")


BY_URL = '''name = "oltp-drivers"
[[engines]]
name = "mariadb"
url = "mariadb://bench@127.0.0.1:3306/bench"
password_env = "NOT_READ_BY_THE_PLAN"
[[workloads]]
name = "oltp"
scale = 1
driver_hosts = 2
'''


def test_driver_hosts_needs_servers_by_url_a_window_of_fixed_length_and_a_user_per_host() -> None:
    plan = parse_plan(BY_URL)
    assert plan.driver_hosts == 2 and plan.workloads[0].driver_hosts == 2
    assert parse_plan(PLAN).driver_hosts == 1
    with pytest.raises(PlanError) as started:
        parse_plan(BY_URL + '[[engines]]\nname = "duckdb"\n', "p.toml")
    assert "p.toml:9: driver_hosts = 2" in str(started.value) and "duckdb has no url" in str(started.value)
    with pytest.raises(PlanError, match="p.toml:10: driver_hosts = 2 ends every host's window at the same moment"):
        parse_plan(BY_URL + "transactions = 1000\n", "p.toml")
    with pytest.raises(PlanError, match="p.toml:9: driver_hosts = 3 needs at least a virtual user per host; "
                                        "virtual_users and stress_virtual_users give 2"):
        parse_plan(BY_URL.replace("driver_hosts = 2", "driver_hosts = 3"), "p.toml")


def test_each_host_drives_its_share_of_the_users_by_number() -> None:
    shares = [share_of(5, 2, index) for index in range(2)]
    assert shares == [[1, 3, 5], [2, 4]]
    assert sorted(sum(shares, [])) == [1, 2, 3, 4, 5]  # every user once, keeping its number (its terminal)
    assert share_of(4, 1, 0) == [1, 2, 3, 4]


def test_foreign_keys_are_added_where_a_server_can_and_refused_elsewhere_at_the_plan_s_line() -> None:
    from tdebench.plan import PlanError, parse_plan
    from tdebench.workloads.oltp import schema

    statements = schema.add_foreign_keys("postgres")
    assert len(statements) == len(schema.FOREIGN_KEYS) == 10
    assert statements[0] == ("ALTER TABLE district ADD CONSTRAINT fk_district_warehouse FOREIGN KEY (d_w_id) "
                             "REFERENCES warehouse (w_id)")
    assert schema.drop_foreign_keys("postgres")[-1] == "ALTER TABLE stock DROP CONSTRAINT fk_stock_item"
    for table, columns in ((t, c) for _, t, c, _, _ in schema.FOREIGN_KEYS):
        assert set(columns) <= set(schema.TABLES[table])
    plan = ('name = "x"\n[[engines]]\nname = "{}"\n[[workloads]]\nname = "oltp"\nscale = 1\n'
            'foreign_keys = true\n')
    assert parse_plan(plan.format("postgres")).workloads[0].option_values()["foreign_keys"] is True
    with pytest.raises(PlanError) as refused:
        parse_plan(plan.format("sqlite"), source="x.toml")
    assert str(refused.value).startswith("x.toml:7: foreign_keys cannot run on sqlite: the TPC-C foreign keys are "
                                         "added to loaded tables by MariaDB and PostgreSQL servers only")


# --- stored procedures ------------------------------------------------------------------


class CallRecorder:
    """A connection that records the statements it is given."""

    def __init__(self) -> None:
        self.sql: list[str] = []

    def execute(self, sql: str, params: Any = ()) -> list:
        self.sql.append(sql)
        return []


def test_a_procedure_call_casts_the_money_argument_where_the_dialect_needs_it() -> None:
    """psycopg binds a float as float8, which PostgreSQL does not cast to the payment procedure's
    numeric argument by itself (engines/dialects.py, `decimal_argument`); MariaDB takes it as is."""
    from tdebench.workloads.oltp import procedures

    payment = Terminal.for_user(1, 1, Constants.from_seed(1), 1, "test").next(PAYMENT)
    calls = {}
    for dialect in procedures.DIALECTS:
        conn = CallRecorder()
        procedures.server_side(conn, dialect)(PAYMENT, payment)  # type: ignore[arg-type]
        calls[dialect] = conn.sql[0]
    assert calls == {"postgres": "SELECT tdebench_payment(?, ?, ?, ?, ?, ?, CAST(? AS numeric))",
                     "mysql": "CALL tdebench_payment(?, ?, ?, ?, ?, ?, ?)"}
