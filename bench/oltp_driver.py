"""Is the oltp driver the bottleneck, and do worker processes lift it?

tdebench's virtual users on a server are worker processes by default (`virtual_users_as =
"processes"`); with "threads" they are threads of the tdebench process, whose Python work
shares one interpreter (the GIL). If the driver were the bottleneck, adding users would not add
throughput while the server still had CPU to spare. This runs the workload's load test on one
freshly loaded server database (PostgreSQL by default, or MariaDB) with 1, 2, 4, … virtual
users at the workload's default settings (stored procedures, no think time), each number of
users with threads and with processes back to back (the order alternating between rounds and
user counts, so a drift of the machine falls on both alike), and prints, side by side from this
one run:
  - TPM and NOPM (committed transactions and New-Orders per minute of the window), and the
    processes' NOPM over the threads' at the same users and round;
  - the server's CPU time (its whole process tree) and the driver's (the tdebench process and,
    with processes, its worker processes: every virtual user, the input generator, the
    histograms, the clock);
  - the driver's share of all the CPU the benchmark used, its CPU per transaction, and how
    many cores it kept busy (threads cannot hold more than about one);
  - the machine's CPU used by both together, of all its cores, and how busy its busiest disk
    was (over the whole run of each step: ramp-up, window and checks), which shows where the
    server spends the time its CPU does not.
With `--rounds` above 1 each figure is the median over the rounds, and each path's NOPM over
the first path's is the geometric mean of the rounds' ratios with its 95% t-interval. The
load average is printed after the runs (the machine may be shared).

A path may also name another client for the processes, to measure it side by side with
tdebench's own (PyMySQL; psycopg's binary build, which prepares a statement on the server
once a connection has run it 5 times):
  - either engine: `processes+unbatched`, tdebench's connections with `execute_batch` run one
    statement at a time (a round trip each, as before the batches): with `--client`, what
    sending a client-side transaction's statements together gains;
  - MariaDB: `processes+mysqlclient` (MySQLdb, libmariadb's C client) and
    `processes+mariadb-connector` (MariaDB Connector/Python, also C), whose batches run in turn
    (they are opened without multi-statement packets). Neither installs from a
    wheel on Linux: both build against libmariadb-dev (Debian) with a C compiler, e.g.
    `python3 -m venv /tmp/drivers && /tmp/drivers/bin/pip install mysqlclient mariadb==1.1.14`,
    then run this with PYTHONPATH=/tmp/drivers/lib/python3.11/site-packages;
  - PostgreSQL: `processes+unprepared` (prepare_threshold None: never prepared),
    `processes+prepared` (prepare_threshold 0: prepared at its first run), and
    `processes+psycopg-pipeline`, tdebench's connections with `execute_batch` through
    psycopg's own pipeline (a cursor per statement, sent and polled one by one), as it was
    before engines/pg_pipeline.py drove libpq's pipeline mode itself.

    .venv/bin/python bench/oltp_driver.py [--engine postgres|mariadb] [--users 1 2 4 8 16]
        [--duration 10] [--warehouses 1] [--client] [--rounds 1] [--paths threads processes …]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import psutil

from tdebench.engines import get_engine
from tdebench.engines.base import NONE, Connection, Database, Engine, Statement, execute_in_turn
from tdebench.engines.dbapi import qmark_to_format
from tdebench.engines.mariadb import SCHEMA, MariaDBConnection
from tdebench.engines.postgres import PostgresConnection, cursor_rows
from tdebench.measure.clock import MonotonicClock
from tdebench.measure.recorder import Recorder
from tdebench.results import TrialKey
from tdebench.stats import paired_overhead
from tdebench.store import ResultStore, read_run
from tdebench.workloads.base import RunContext
from tdebench.workloads.oltp.workload import LOAD, OPTIONS, PROCESSES, THREADS, OltpWorkload

Row = dict[str, float]
UNBATCHED = "unbatched"
PSYCOPG_PIPELINE = "psycopg-pipeline"
CLIENTS = {"mariadb": ("mysqlclient", "mariadb-connector", UNBATCHED),
           "postgres": ("unprepared", "prepared", PSYCOPG_PIPELINE, UNBATCHED)}
_DEADLOCKS = (1213, 1205)  # what the workload retries on MariaDB (errors.py), whichever client raised it


class _TranslatedConnection(MariaDBConnection):
    """A C client's connection that raises a lost race as PyMySQL would, so that the workload
    retries it as it does PyMySQL's."""

    def _run(self, method: Any, *args: Any) -> Any:
        import pymysql

        try:
            return method(*args)
        except Exception as exc:
            code = getattr(exc, "errno", None) or (exc.args[0] if exc.args else None)
            if code in _DEADLOCKS:
                raise pymysql.err.OperationalError(code, str(exc)) from exc
            raise

    def execute_batch(self, statements: Sequence[Statement]) -> list[list[tuple[Any, ...]]]:
        return execute_in_turn(self, statements)


class _InTurn:
    """One of tdebench's connections whose batches run one statement at a time, a round trip
    each: the client-side transactions as they ran before `Connection.execute_batch`."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def execute_batch(self, statements: Sequence[Statement]) -> list[list[tuple[Any, ...]]]:
        return execute_in_turn(self, statements)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


class _PsycopgPipeline:
    """One of tdebench's PostgreSQL connections whose batches go through psycopg's own
    pipeline, each statement through a cursor: `execute_batch` as it was before pg_pipeline.py."""

    def __init__(self, conn: PostgresConnection) -> None:
        self._conn = conn

    def execute_batch(self, statements: Sequence[Statement]) -> list[list[tuple[Any, ...]]]:
        import psycopg

        raw, cursors, failure = self._conn.raw, [], None
        pipeline = raw.pipeline()
        pipeline.__enter__()
        try:
            for sql, params in statements:
                cursors.append(raw.execute(qmark_to_format(sql), list(params)) if params else raw.execute(sql))
        except BaseException as exc:  # still end the pipeline, as the old path did
            failure = exc
        try:
            pipeline.__exit__(None, None, None)
        except psycopg.Error as exc:
            failure = failure or exc
        if failure is not None:
            raise failure
        return [cursor_rows(cursor) for cursor in cursors]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


class _Client:
    """The database, its connections opened by another client: the workload sees no difference."""

    def __init__(self, database: Database, connect: Callable[[], Connection]) -> None:
        self._database = database
        self.connect = connect

    def __getattr__(self, name: str) -> Any:
        return getattr(self._database, name)


def _connector(database: Any, client: str) -> Callable[[], Connection]:
    """How `client` opens a connection to `database` (a bench's own server: its password is read
    from the object, never printed)."""
    if client == UNBATCHED:
        return lambda: cast(Connection, _InTurn(database.connect()))
    if client == PSYCOPG_PIPELINE:
        return lambda: cast(Connection, _PsycopgPipeline(database.connect()))
    if client in ("unprepared", "prepared"):
        def prepared() -> Connection:
            conn = database.connect()
            conn.raw.prepare_threshold = None if client == "unprepared" else 0
            return conn
        return prepared
    login = {"unix_socket": str(database.socket), "user": "root", "password": database._password.hex(),
             "database": SCHEMA, "autocommit": True}
    if client == "mysqlclient":
        import MySQLdb

        return lambda: _TranslatedConnection(MySQLdb.connect(charset="utf8mb4", **login))
    import mariadb

    return lambda: _TranslatedConnection(mariadb.connect(**login))


@dataclass
class OltpBench:
    """A fresh server database (no encryption) with the oltp workload ready on it, and where its
    runs' records go: what the bench scripts that drive the oltp workload share."""

    engine: Engine
    database: Database
    workload: OltpWorkload
    store: ResultStore
    recorder: Recorder
    warehouses: int
    data_dir: Path

    def context(self, options: dict[str, Any], database: Any = None) -> RunContext:
        """A run's context: the workload's defaults with `options`, on `database` (default: ours)."""
        defaults = {name: option.default for name, option in OPTIONS.items()}
        return RunContext(database=database or self.database, dialect=self.engine.dialect, recorder=self.recorder,
                          scale=self.warehouses, streams=1, data_dir=self.data_dir, options=defaults | options)

    def run(self, context: RunContext, conn: Connection) -> Row:
        """One load test; the `mix` record it stored (window, counts, server and driver CPU)."""
        self.workload.run(LOAD, context, conn, warmup=False)
        return dict([m for m in read_run(self.store.directory).measurements if m.step == "mix"][-1].metrics)


@contextmanager
def oltp_server(engine_name: str, warehouses: int, data_dir: Path) -> Iterator[OltpBench]:
    """A server of `engine_name` created with tdebench's settings in a temporary directory, its
    workload's data generated (not loaded); stopped and removed afterwards, however this ends."""
    root = Path(tempfile.mkdtemp(prefix="tdebench-bench-"))  # below /tmp: the server's user can enter it
    root.chmod(0o711)
    engine = get_engine(engine_name)
    database = engine.provision(root / "db", NONE, None)
    try:
        (root / "db").mkdir()
        workload = OltpWorkload()
        workload.prepare(warehouses, data_dir, 1)
        store = ResultStore(root / "out")
        store.start("name = 'bench'\n", {})
        recorder = Recorder(store, TrialKey(engine_name, "none", "oltp", warehouses, 1), MonotonicClock(),
                            processes=database.engine_processes)
        database.create()
        yield OltpBench(engine, database, workload, store, recorder, warehouses, data_dir)
    finally:
        database.close()
        shutil.rmtree(root, ignore_errors=True)


def _path_choices(engine: str) -> Sequence[str]:
    return (THREADS, PROCESSES, *(f"{PROCESSES}+{client}" for client in CLIENTS[engine]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=("postgres", "mariadb"), default="postgres")
    parser.add_argument("--users", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--duration", type=float, default=10.0, help="seconds in each measured window")
    parser.add_argument("--rampup", type=float, default=2.0)
    parser.add_argument("--warehouses", type=int, default=1)
    parser.add_argument("--client", action="store_true", help="client-side statements instead of procedures")
    parser.add_argument("--rounds", type=int, default=1, help="times each (users, path) runs; medians printed")
    parser.add_argument("--paths", nargs="+", default=[THREADS, PROCESSES],
                        help="the virtual users' paths to compare: threads, processes, processes+unbatched, "
                             "and (MariaDB) processes+mysqlclient, processes+mariadb-connector or (PostgreSQL) "
                             "processes+unprepared, processes+prepared, processes+psycopg-pipeline")
    parser.add_argument("--data-dir", type=Path, default=Path.home() / ".cache" / "tdebench" / "data")
    args = parser.parse_args()
    unknown = [path for path in args.paths if path not in _path_choices(args.engine)]
    if unknown:
        parser.error(f"no path {unknown[0]!r} on {args.engine}; valid: {', '.join(_path_choices(args.engine))}")

    results: dict[tuple[int, str], list[Row]] = {}
    with oltp_server(args.engine, args.warehouses, args.data_dir) as bench:
        def context(users: int, path: str) -> RunContext:
            users_as, _, client = path.partition("+")
            used = _Client(bench.database, _connector(bench.database, client)) if client else None
            return bench.context({"virtual_users": users, "duration_s": args.duration, "rampup_s": args.rampup,
                                  "procedures": not args.client, "virtual_users_as": users_as}, used)

        conn = bench.database.connect()
        print(f"loading {args.warehouses} warehouse(s) into {bench.engine.version()} …", flush=True)
        bench.workload.load(context(1, THREADS), conn)
        for round_ in range(args.rounds):
            for index, users in enumerate(args.users):
                paths = args.paths if (round_ + index) % 2 == 0 else list(reversed(args.paths))
                for path in paths:
                    disks, started = psutil.disk_io_counters(perdisk=True), time.perf_counter()
                    mix = bench.run(context(users, path), conn)
                    mix["disk_busy"] = _busiest(disks, psutil.disk_io_counters(perdisk=True),
                                                time.perf_counter() - started)
                    results.setdefault((users, path), []).append(mix)
                    print(f"  round {round_ + 1}, {users} users, {path}: "
                          f"{mix['new_orders'] / mix['elapsed_s'] * 60:,.0f} NOPM", flush=True)
        conn.close()
    _print(args, results)


def _busiest(before: dict, after: dict, seconds: float) -> float:
    """The busiest disk's busy time over `seconds`, as a fraction."""
    busy = [after[d].busy_time - before[d].busy_time for d in after if d in before and hasattr(after[d], "busy_time")]
    return max(busy, default=0) / 1000 / seconds


def _figures(mix: Row, cores: int) -> Row:
    """One run's figures, as the table shows them."""
    minutes = mix["elapsed_s"] / 60
    server, driver = mix["cpu_s"], mix["driver_cpu_s"]
    return {"tpm": mix["committed"] / minutes, "nopm": mix["new_orders"] / minutes, "server": server,
            "driver": driver, "share": driver / (server + driver) if server + driver else 0.0,
            "per_txn": driver / max(mix["committed"], 1) * 1e6, "driver_cores": driver / mix["elapsed_s"],
            "machine": (server + driver) / mix["elapsed_s"] / cores, "disk": mix["disk_busy"]}


def _median(runs: list[Row], cores: int) -> Row:
    figures = [_figures(mix, cores) for mix in runs]
    return {name: statistics.median(f[name] for f in figures) for name in figures[0]}


def _print(args: argparse.Namespace, results: dict[tuple[int, str], list[Row]]) -> None:
    cores = os.cpu_count() or 1
    mode = "client-side statements" if args.client else "stored procedures"
    rounds = f"median of {args.rounds} rounds" if args.rounds > 1 else "1 round"
    print(f"\n{args.engine}, W={args.warehouses}, {mode}, {args.duration:g} s windows, {cores} cores, {rounds}\n")
    baseline = args.paths[0]
    header = ("users", "path", "TPM", "NOPM", f"NOPM vs {baseline}", "server CPU s", "driver CPU s", "driver share",
              "driver µs/txn", "driver cores busy", "machine CPU", "disk busy")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    ratios: dict[str, dict[int, str]] = {}
    for users in args.users:
        for path in args.paths:
            row = _median(results[(users, path)], cores)
            ratio = ""
            if path != baseline:  # per round, this path's NOPM over the first path's of the same round
                ratio = paired_ratio([_nopm(mix) for mix in results[(users, baseline)]],
                                     [_nopm(mix) for mix in results[(users, path)]])
                ratios.setdefault(path, {})[users] = ratio
            print(f"| {users} | {path} | {row['tpm']:,.0f} | {row['nopm']:,.0f} | {ratio} | {row['server']:.2f} "
                  f"| {row['driver']:.2f} | {row['share']:.0%} | {row['per_txn']:,.0f} | {row['driver_cores']:.2f} "
                  f"| {row['machine']:.0%} | {row['disk']:.0%} |")
    print()
    for path, by_users in ratios.items():
        print(f"NOPM of {path} over {baseline}, per users: " + ", ".join(
            f"{users}: {ratio}" for users, ratio in by_users.items()))
    for path in args.paths:
        nopms = {users: _median(results[(users, path)], cores)["nopm"] for users in args.users}
        first, best = args.users[0], max(nopms, key=lambda users: nopms[users])
        print(f"{path}: NOPM from {nopms[first]:,.0f} with {first} user(s) to its peak of {nopms[best]:,.0f} "
              f"with {best} users ({nopms[best] / nopms[first]:.1f}×).")
    print(f"load average after the runs: {' '.join(f'{load:.1f}' for load in os.getloadavg())}")


def _nopm(mix: Row) -> float:
    return mix["new_orders"] / mix["elapsed_s"] * 60


def paired_ratio(baseline: Sequence[float], treatment: Sequence[float]) -> str:
    """`treatment` over `baseline`, paired by round: the geometric mean of the rounds' ratios
    [its 95% t-interval] (one round: its ratio)."""
    if not baseline or not all(baseline):
        return ""
    if len(baseline) < 2:
        return f"{treatment[0] / baseline[0]:.2f}×"
    compared = paired_overhead(np.array([[b] for b in baseline]), np.array([[t] for t in treatment]))
    return f"{1 + compared.pct / 100:.2f}× [{1 + compared.ci_low / 100:.2f}, {1 + compared.ci_high / 100:.2f}]"


if __name__ == "__main__":
    main()
