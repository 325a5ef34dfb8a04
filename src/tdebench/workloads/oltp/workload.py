"""The oltp workload: TPC-C's five transactions in the mix of Madyatmadja et al. (2021)
(docs/references.md), run by virtual users in a load test and a stress test, every run
followed by the consistency checks.

What one run of a test stores (test `load` or `stress`; every record also says `warmup`):
- step `mix`: the measured window's length (`elapsed_s`), committed transactions and
  New-Orders, business rollbacks, retries and errors (in total and by reason), the engine's
  process counters over the window (`cpu_s`, I/O), the driver's own CPU time (servers only:
  the tdebench process and its worker processes, `driver_cpu_s`), how many virtual users ran,
  whether stored procedures did the work (`procedures` 1 or 0) and how many worker processes
  ran the users (`worker_processes`; 0: threads of tdebench); with `driver_hosts` > 1 (a
  cluster's drivers of one server reached by url) also `driver_hosts` and `committed_elsewhere`,
  what the other hosts' users committed in the window (every figure above is the sum over all
  hosts, the latency histograms merged bucket by bucket);
- one step per transaction type (`new_order`, `payment`, …): committed, rollbacks, retries,
  errors and latency percentiles from its histogram (`p50_elapsed_s` … `max_elapsed_s`);
- step `interval`, one per `interval_s` of the window (`stream` = its number): its length and
  the transactions and New-Orders committed in it, the throughput time series;
- step `consistency`: the conditions checked and the problems found (answer `ok`/`failed`);
  with `driver_hosts` > 1 also the New-Orders every driver committed over the whole run
  (`new_orders_counted`) and the database's own count of them (`new_orders_in_database`, from
  sum(d_next_o_id)), which must be equal.
TPM and NOPM are derived from these by the report (committed ÷ minutes).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from tdebench.engines import dialects
from tdebench.engines.base import Connection, Database
from tdebench.measure.affinity import available_cpus
from tdebench.workloads.base import LOAD_HEADLINES, Headline, Option, Reporting, RunContext, Workload, WrongAnswer
from tdebench.workloads.oltp import checks, data, procedures, schema, transactions
from tdebench.workloads.oltp.driver import Outcome, Settings, UserLog, drive
from tdebench.workloads.oltp.inputs import KINDS, MIX, NEW_ORDER, Constants, Terminal

LOAD, STRESS = "load", "stress"
PROCESSES, THREADS = "processes", "threads"
WINDOW_STEP, INTERVAL_STEP = "mix", "interval"
"""The steps of a test's records that hold its measured window (the mix, with every count) and
each interval of its throughput over time."""
MAX_USERS = 256
NO_PROCEDURES = tuple(name for name, d in dialects.DIALECTS.items()
                      if d.stored_procedures and not procedures.available(name))
"""Server dialects with no stored procedures written (servers by url): client-side only."""

OPTIONS: dict[str, Option] = {
    "virtual_users": Option(2, "load test: virtual users, each its own connection", low=1, high=MAX_USERS),
    "rampup_s": Option(2.0, "load test: seconds of unmeasured running before the window", low=0.0, high=86400.0),
    "duration_s": Option(10.0, "load test: seconds in the measured window", low=0.1, high=86400.0),
    "transactions": Option(0, "load test: end the window at this many committed transactions instead "
                              "(Madyatmadja et al. (2021): 100000); 0 = run for duration_s", low=0, high=10**9),
    "stress_virtual_users": Option(4, "stress test: virtual users (Madyatmadja et al. (2021): 4)",
                                   low=1, high=MAX_USERS),
    "stress_rampup_s": Option(2.0, "stress test: seconds of ramp-up", low=0.0, high=86400.0),
    "stress_duration_s": Option(20.0, "stress test: seconds in the window (Madyatmadja et al. (2021): 1800)",
                                low=0.1, high=86400.0),
    "interval_s": Option(2.0, "seconds per point of the throughput time series", low=0.1, high=3600.0),
    "procedures": Option(True, "on MariaDB and PostgreSQL, run each transaction as one stored-procedure "
                               "call (as HammerDB does); false: client-side statements. DuckDB and SQLite "
                               "always run client-side, as do SQL Server and Oracle by url, whose plans "
                               "may not say procedures = true (no procedures are written for them)"),
    "virtual_users_as": Option(PROCESSES, "on MariaDB and PostgreSQL (tdebench's or by url, and MySQL by url), "
                                          "the virtual users spread over worker processes, one per CPU "
                                          "tdebench may use (processes), or all threads of the tdebench process "
                                          "(threads: their Python shares one interpreter lock). DuckDB, SQLite, "
                                          "SQL Server and Oracle by url, and a cluster's driver_hosts always run "
                                          "threads",
                               choices=(PROCESSES, THREADS)),
    "driver_hosts": Option(1, "with servers reached by url, on a cluster (tdebench run --cluster): spread the "
                              "virtual users over this many hosts, each a driver of the same server, started "
                              "together and measured over the same window (as HammerDB's primary and "
                              "replicas); 1: the trial's own host drives them all", low=1, high=64),
    "max_retries": Option(100, "retries of one transaction after deadlocks, write conflicts or "
                               "serialization failures before it counts as an error", low=0, high=100_000),
    "foreign_keys": Option(False, "on MariaDB and PostgreSQL, add the TPC-C schema's foreign keys after the load "
                                  "(as BenchBase's and HammerDB's schemas have them; timed in the load's indexes "
                                  "step); false: none, tdebench's schema as it always was"),
}


def settings(test: str, options: dict[str, Any]) -> Settings:
    """A test's settings from the workload's plan keys (the stress test's have a prefix)."""
    prefix = "stress_" if test == STRESS else ""
    return Settings(virtual_users=options[f"{prefix}virtual_users"], rampup_s=options[f"{prefix}rampup_s"],
                    duration_s=options[f"{prefix}duration_s"],
                    transactions=options["transactions"] if test == LOAD else 0,
                    interval_s=options["interval_s"], max_retries=options["max_retries"])


def uses_procedures(dialect: str, options: dict[str, Any]) -> bool:
    return bool(options["procedures"]) and procedures.available(dialect)


def uses_processes(database: Database, options: dict[str, Any]) -> bool:
    """Worker processes for the virtual users: asked for, the engine a server whose connections
    can cross a fork (`Database.connections_cross_fork`: tdebench's own servers, MariaDB, MySQL
    and PostgreSQL by url; not an engine inside this process), and one driver host. A cluster's
    drivers of one server (`driver_hosts` > 1) run threads: each host runs where a Dask client or
    worker has threads of its own (event loop, communications), which a forked process would not
    take along, holding whatever locks they held."""
    return (options["virtual_users_as"] == PROCESSES and database.connections_cross_fork
            and options["driver_hosts"] == 1)


def worker_processes(database: Database, options: dict[str, Any], users: int) -> int:
    """How many worker processes run the users (0: threads of this process): one per CPU this
    process may run on (pin_cpus' driver CPUs when pinned), no more than there are users. One
    process per user cost 18-31% more driver CPU per transaction than threads on 2 cores (more
    interpreters taking turns); one per CPU about the same (docs/method/oltp-driver.md)."""
    return min(users, len(available_cpus())) if uses_processes(database, options) else 0


def share(users: int, hosts: int, index: int) -> list[int]:
    """The numbers of the virtual users (1..users) that driver `index` of `hosts` runs: dealt out
    in turn, so each user keeps its number, and so its terminal and inputs, wherever it runs."""
    return list(range(index + 1, users + 1, hosts))


def _drive_share(database: Database, dialect: str, options: dict[str, Any], test: str, seed: int, scale: float,
                 timeout: float | None, numbers: list[int], at: Callable[[], int] | None = None,
                 others: Callable[[], list[UserLog]] | None = None) -> Outcome:
    """Open a connection per virtual user of `numbers` (before the clock starts), run them, close
    them: the trial's own driver, or another host's share of its users (`drive_for_other`)."""
    chosen = settings(test, options)
    sql = transactions.dialect(dialect)
    constants = Constants.from_seed(seed)
    warehouses = data.warehouses(scale)
    users = []
    try:
        for number in numbers:  # opened before the clock starts
            user = database.connect()
            users.append(user)
            for statement in sql.session:
                user.execute(statement)
            user.set_timeout(timeout)
        runs = [(user, procedures.server_side(user, dialect) if uses_procedures(dialect, options)
                 else transactions.client_side(user, sql),
                 Terminal.for_user(number, warehouses, constants, seed, test))
                for number, user in zip(numbers, users)]
        return drive(chosen, runs, database.engine_processes,
                     processes=worker_processes(database, options, len(numbers)), at=at, others=others)
    finally:
        for user in users:
            user.close()


def drive_for_other(database: Database, dialect: str, options: dict[str, Any], test: str, seed: int,
                    scale: float, timeout: float | None, index: int, at: Callable[[], int]) -> UserLog:
    """Driver `index` (1, 2, …) of a cluster's `driver_hosts`: run its share of `test`'s virtual
    users on the trial's database, from `at()`, the start agreed with the trial's own driver
    (index 0), and return their log, which that driver merges with its own. Its users are
    threads (`uses_processes`)."""
    users = settings(test, options).virtual_users
    return _drive_share(database, dialect, options, test, seed, scale, timeout,
                        share(users, options["driver_hosts"], index), at=at).log


class OltpWorkload(Workload):
    name = "oltp"
    tests = (LOAD, STRESS)
    default_scale = 1
    scale_min = data.WAREHOUSES_MIN
    scale_max = data.WAREHOUSES_MAX
    whole_scale = True  # warehouses
    scale_format = "W={}"
    max_streams = 1  # oltp's concurrency is `virtual_users`, not `streams`
    dialects = tuple(d for d in schema.DIALECTS if d in transactions.DIALECTS)
    options = OPTIONS
    # for its report (report/data/records.py, oltp.py): the measured window (`_record`'s steps "mix"
    # and "interval") and its rates, TPM and NOPM of Madyatmadja et al. (2021); the mix
    reporting = Reporting(window_step=WINDOW_STEP, interval_step=INTERVAL_STEP,
                          per_minute={"tpm": "committed", "nopm": "new_orders"},
                          headlines=(Headline("tpm", (WINDOW_STEP,)), Headline("nopm", (WINDOW_STEP,)),
                                     *LOAD_HEADLINES))
    kinds: ClassVar[tuple[str, ...]] = KINDS
    mix: ClassVar[dict[str, float]] = MIX

    @classmethod
    def plan_problem(cls, dialect: str, given: Mapping[str, Any]) -> tuple[str, str] | None:
        """`procedures = true` written for SQL Server or Oracle: their servers would run
        HammerDB-style procedures, but none are written for them, and running client-side
        statements instead would not be what the plan says."""
        if given.get("procedures") is True and dialect in NO_PROCEDURES:
            return (f"the oltp workload's stored procedures are written for MariaDB and PostgreSQL only "
                    f"(dialects {', '.join(procedures.DIALECTS)}); set procedures = false, or leave it out, to run "
                    "the transactions as client-side statements", "procedures")
        if given.get("foreign_keys") is True and dialect not in schema.FOREIGN_KEY_DIALECTS:
            return (f"the TPC-C foreign keys are added to loaded tables by MariaDB and PostgreSQL servers only "
                    f"(dialects {', '.join(schema.FOREIGN_KEY_DIALECTS)}; not {dialect}): remove foreign_keys, "
                    "or run this engine in a plan of its own", "foreign_keys")
        return None

    def prepare(self, scale: float, data_dir: Path, seed: int) -> None:
        data.generate(scale, seed, data_dir)

    @classmethod
    def engines_problem(cls, options: Mapping[str, Any],
                        engines: Sequence[tuple[str, bool]]) -> tuple[str, str] | None:
        """driver_hosts > 1 needs servers reached by url (one server, many drivers), a window of
        fixed length (each driver ends its own at the agreed moment) and a user per host."""
        hosts = options["driver_hosts"]
        if hosts == 1:
            return None
        started = [name for name, remote in engines if not remote]
        if started:
            return (f"driver_hosts = {hosts} spreads the virtual users over the hosts of a cluster, each driving "
                    f"one server reached by url; {', '.join(started)} has no url (tdebench starts it on each trial's "
                    "host): give every engine a url, or remove driver_hosts", "driver_hosts")
        if options["transactions"]:
            return (f"driver_hosts = {hosts} ends every host's window at the same moment, so the window has a "
                    "length (duration_s), not a count: remove transactions", "transactions")
        fewest = min(options["virtual_users"], options["stress_virtual_users"])
        if fewest < hosts:
            return (f"driver_hosts = {hosts} needs at least a virtual user per host; virtual_users and "
                    f"stress_virtual_users give {fewest}", "driver_hosts")
        return None

    @staticmethod
    def _options(ctx: RunContext) -> dict[str, Any]:
        return {name: option.default for name, option in OPTIONS.items()} | dict(ctx.options)

    def load(self, ctx: RunContext, conn: Connection) -> None:
        files = data.generate(ctx.scale, ctx.seed, ctx.data_dir)  # cached by prepare(): no generation here
        for statement in schema.create_tables(ctx.dialect):
            conn.execute(statement)
        for table in schema.SCHEMA:
            if table.name in schema.SENSITIVE:  # a no-op unless the encryption is column-level
                ctx.database.seal_columns(conn, table.name, schema.SENSITIVE[table.name], table.primary_key)
        if uses_procedures(ctx.dialect, self._options(ctx)):
            for statement in procedures.statements(ctx.dialect):
                conn.execute(statement)
        with ctx.recorder.measure("load", "total"):
            with ctx.recorder.measure("load", "tables"):
                for name, columns in schema.TABLES.items():
                    ctx.database.bulk_load(conn, name, columns, files[name])
                for statement in schema.after_bulk_load(ctx.dialect, data.UNDELIVERED_FROM):
                    conn.execute(statement)
            with ctx.recorder.measure("load", "indexes"):
                for statement in schema.create_indexes(ctx.dialect):
                    conn.execute(statement)
                if self._options(ctx)["foreign_keys"]:
                    for statement in schema.add_foreign_keys(ctx.dialect):
                        conn.execute(statement)

    def run(self, test: str, ctx: RunContext, conn: Connection, *, warmup: bool) -> None:
        if test not in self.tests:
            raise ValueError(f"oltp has no test {test!r}; valid: {', '.join(self.tests)}")
        options = self._options(ctx)
        chosen = settings(test, options)
        server_side = uses_procedures(ctx.dialect, options)
        hosts, drivers = options["driver_hosts"], ctx.drivers
        if hosts > 1 and drivers is None:
            raise RuntimeError(f"driver_hosts = {hosts} needs the other drivers of a cluster run (tdebench run "
                               "--cluster)")
        numbers = share(chosen.virtual_users, hosts, 0)
        workers = worker_processes(ctx.database, options, len(numbers))
        before = checks.next_order_ids(conn)
        if drivers is not None and hosts > 1:
            key, database = ctx.recorder.trial, ctx.database
            outcome = _drive_share(database, ctx.dialect, options, test, ctx.seed, ctx.scale, ctx.query_timeout_s,
                                   numbers, at=lambda: drivers.begin(key, database, test),
                                   others=lambda: [UserLog.from_json(log) for log in drivers.results()])
        else:
            outcome = _drive_share(ctx.database, ctx.dialect, options, test, ctx.seed, ctx.scale,
                                   ctx.query_timeout_s, numbers)
        problems = checks.consistency(conn)
        after = checks.next_order_ids(conn)
        problems += checks.new_order_count(before, after, outcome.new_orders_total)
        _record(ctx, test, warmup, chosen, server_side, workers, outcome, problems, hosts, after - before)
        failures = [f"{count} × {kind}: {outcome.first_errors.get(kind, '')}".rstrip(": ")
                    for kind, count in sorted(outcome.errors.items())] + outcome.gave_up + problems
        if failures:
            raise WrongAnswer(f"oltp {test}: " + "; ".join(failures))


def _record(ctx: RunContext, test: str, warmup: bool, chosen: Settings, server_side: bool, workers: int,
            outcome: Outcome, problems: list[str], hosts: int, database_new_orders: int) -> None:
    """Store the run's records (see the module docstring)."""
    record = ctx.recorder.record
    mix: dict[str, float] = {
        "elapsed_s": outcome.window_s,
        "committed": outcome.committed,
        "new_orders": outcome.tallies[NEW_ORDER].committed,
        "rollbacks": sum(t.rollbacks for t in outcome.tallies.values()),
        "errors": sum(outcome.errors.values()),
        "virtual_users": chosen.virtual_users,
        "procedures": float(server_side),
        "worker_processes": float(workers),
        **outcome.engine,
    }
    if hosts > 1:  # a cluster's drivers: how many, and what the others committed in the window
        mix["driver_hosts"] = hosts
        mix["committed_elsewhere"] = outcome.elsewhere
    if ctx.database.server_user is not None:  # a server: the driver is a process (or processes) of its own
        mix["driver_cpu_s"] = outcome.driver_cpu_s
    retries: Counter[str] = Counter()
    for tally in outcome.tallies.values():
        retries.update(tally.retries)
    mix["retries"] = sum(retries.values())
    mix.update({f"retries.{reason}": n for reason, n in retries.items()})
    mix.update({f"errors.{kind}": n for kind, n in outcome.errors.items()})
    record(test, WINDOW_STEP, {k: float(v) for k, v in mix.items()}, warmup=warmup)
    for kind in KINDS:
        tally = outcome.tallies[kind]
        metrics = {"committed": tally.committed, "retries": sum(tally.retries.values()),
                   "errors": sum(tally.errors.values()), **tally.latency.metrics()}
        if kind == NEW_ORDER:
            metrics["rollbacks"] = tally.rollbacks
        record(test, kind, {k: float(v) for k, v in metrics.items()}, warmup=warmup)
    for number, interval in enumerate(outcome.intervals, start=1):
        record(test, INTERVAL_STEP, {"elapsed_s": interval.elapsed_s,
                                  "committed": float(sum(interval.committed.values())),
                                  "new_orders": float(interval.committed[NEW_ORDER])},
               stream=number, warmup=warmup)
    counts = {"new_orders_counted": float(outcome.new_orders_total),  # by every driver, over the whole run
              "new_orders_in_database": float(database_new_orders)} if hosts > 1 else {}
    record(test, "consistency", {"conditions": float(checks.CONDITIONS), "problems": float(len(problems)), **counts},
           warmup=warmup, answer="failed" if problems else "ok")
