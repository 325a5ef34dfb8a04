"""TPC-H: load, power test and throughput test, every answer checked.

The power test runs the 22 queries one after another in the spec's stream-0 order (the
order Carvalho (2025), docs/references.md, used); the throughput test runs S streams at
once, each on its own connection and in its own spec order. Connections for the streams are
opened before the test's clock starts, so key derivation never counts as query time.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from tdebench.engines.base import Connection, QueryTimeout
from tdebench.workloads.base import (GEOMEAN_STEP, LOAD_HEADLINES, Headline, Option, Reporting, RunContext, Workload,
                                     WrongAnswer)
from tdebench.workloads.tpch import answers, data, schema, spill, streams
from tdebench.workloads.tpch.queries import DIALECTS, query


def add_metrics(total: dict[str, float], metrics: dict[str, float]) -> dict[str, float]:
    """Add a part's metrics (time, CPU, I/O) into `total` and return it; a query's `rows` is
    not summed (a count of answers, not a cost)."""
    for name, value in metrics.items():
        if name != "rows":
            total[name] = total.get(name, 0.0) + value
    return total


def _in_turns(ctx: RunContext, works: Sequence[Callable[[], object]]) -> Generator[None, None, dict[str, float]]:
    """Each of `works` timed, with a pause (a lockstep turn) between two; their metrics summed."""
    total: dict[str, float] = {}
    for number, work in enumerate(works):
        if number:
            yield
        add_metrics(total, ctx.recorder.timed(work)[1])
    return total


class TpchWorkload(Workload):
    name = "tpch"
    tests = ("power", "throughput", "spill")
    default_tests = ("power", "throughput")  # spill only by name: it exists to make engines write temp files
    reporting = Reporting(
        query_tests=("power", "throughput"),
        headlines=(Headline("elapsed_s", (GEOMEAN_STEP,), "power", "power geomean", "power test", ranks=True),
                   Headline("elapsed_s", ("total",), "throughput", "throughput total", "throughput"),
                   *LOAD_HEADLINES))
    default_scale = 0.01
    scale_min = data.SCALE_MIN
    scale_max = data.SCALE_MAX
    max_streams = streams.MAX_STREAMS
    dialects = tuple(d for d in schema.DIALECTS if d in DIALECTS)  # a schema and the 22 queries
    options = {
        "passes": Option(1, "measured passes of each test per trial; statistics take each query's median over "
                            "them (the trial's database is loaded once)", low=1, high=100),
        "load_part_rows": Option(0, "the load takes each table in parts of at most this many rows, each a step of "
                                    "its own (in lockstep the configurations take turns part by part, and the "
                                    "index statements one by one); 0: each table in one statement",
                                 low=0, high=1_000_000_000),
        "statistics": Option("default", "planner statistics after the load: as the engine's layout has it "
                                        "(\"default\": ANALYZE everywhere but SQLite, whose TPC-H plans it made "
                                        "slower), \"analyze\" or \"none\"; the report names which beside the cost",
                             choices=schema.STATISTICS),
        "keys": Option("default", "primary keys: as the engine's layout has them (\"default\") or \"none\" (DuckDB "
                                  "builds a key's index in memory, so its load cannot run with the data far past "
                                  "its memory_limit with them); the report names which beside the cost",
                       choices=schema.KEYS),
    }

    @classmethod
    def plan_problem(cls, dialect: str, given: Mapping[str, Any]) -> tuple[str, str] | None:
        tests = given.get("tests")
        if isinstance(tests, list) and "spill" in tests and dialect not in spill.SPILL_DIALECTS:
            return (f"tpch's spill test has SQL for the dialects {', '.join(spill.SPILL_DIALECTS)} only "
                    f"(not {dialect}); leave it out of tests", "tests")
        return None

    def prepare(self, scale: float, data_dir: Path, seed: int) -> None:
        data.generate(scale, data_dir)

    def load(self, ctx: RunContext, conn: Connection) -> None:
        for _ in self.load_steps(ctx, conn):
            pass

    def load_steps(self, ctx: RunContext, conn: Connection) -> Iterator[None]:
        """Create the tables, then load them one by one, pausing after each; each table's load is a
        step of its own (named after the table, so the report can say where a load's overhead
        arises), `tables` their sum, `total` that and the indexes (their time alone: in lockstep,
        other configurations' loads run in between). With `load_part_rows` a table is loaded part
        by part and the indexes statement by statement, pausing after each, so that in lockstep
        the machine's noise of a second falls on every configuration alike, not on the one whose
        whole lineitem load it was; each figure is still the sum of its parts."""
        part_rows = int(ctx.options.get("load_part_rows", 0))
        # cached by prepare() (the parts by the first load that takes them): untimed either way
        files = data.parts(data.generate(ctx.scale, ctx.data_dir), part_rows)
        keys = str(ctx.options.get("keys", "default"))
        for statement in schema.create_tables(ctx.dialect, keys):
            conn.execute(statement)
        for table in schema.SCHEMA:
            if table.name in schema.SENSITIVE:  # a no-op unless the encryption is column-level
                ctx.database.seal_columns(conn, table.name, schema.SENSITIVE[table.name], table.primary_key)
        tables: dict[str, float] = {}
        for name, columns in schema.TABLES.items():
            loaded = yield from _in_turns(ctx, [functools.partial(ctx.database.bulk_load, conn, name, columns, part)
                                                for part in files[name]])
            ctx.recorder.record("load", name, loaded)
            add_metrics(tables, loaded)
            yield
        statistics = str(ctx.options.get("statistics", "default"))
        statements = schema.create_indexes(ctx.dialect, statistics, keys)
        indexes = yield from _in_turns(ctx, [functools.partial(conn.execute, s) for s in statements]
                                       if part_rows and statements else [lambda: [conn.execute(s) for s in statements]])
        ctx.recorder.record("load", "tables", tables)
        ctx.recorder.record("load", "indexes", indexes, note=schema.statistics_note(ctx.dialect, statistics, keys))
        ctx.recorder.record("load", "total", add_metrics(dict(tables), indexes))

    def plant_canaries(self, ctx: RunContext, conn: Connection, canaries: Sequence[str]) -> bool:
        """In c_address of customers without orders (spill.plant): no checked answer changes."""
        return spill.plant(conn, canaries, ctx.scale)

    def run(self, test: str, ctx: RunContext, conn: Connection, *, warmup: bool) -> None:
        for _ in self.steps(test, ctx, conn, warmup=warmup):
            pass

    def steps(self, test: str, ctx: RunContext, conn: Connection, *, warmup: bool) -> Iterator[None]:
        """The test's measured passes (`passes`; a warm-up is one pass): the power test pauses
        after every query, the throughput test after every pass. Wrong answers fail the test
        after its last pass."""
        if test not in self.tests:
            raise ValueError(f"tpch has no test {test!r}; valid: {', '.join(self.tests)}")
        wrong: list[str] = []
        for number in range(1, 2 if warmup else ctx.options.get("passes", 1) + 1):
            if test == "power":
                yield from self._power(ctx, conn, warmup, number, wrong)
            elif test == "spill":
                wrong.extend(self._spill(ctx, conn, warmup, number))
                yield
            else:
                wrong.extend(self._throughput(ctx, warmup, number))
                yield
        if wrong:
            raise WrongAnswer(f"tpch {test}: {len(wrong)} wrong or missing answer(s): " + "; ".join(wrong))

    def _power(self, ctx: RunContext, conn: Connection, warmup: bool, pass_number: int,
               wrong: list[str]) -> Iterator[None]:
        """One pass of the power test; its `total` is the sum of its queries' measurements (their
        time alone: in lockstep, other configurations' queries run between them)."""
        total: dict[str, float] = {}
        for metrics in self._stream(ctx, conn, "power", 0, warmup, pass_number, wrong, process=True):
            add_metrics(total, metrics)
            yield
        ctx.recorder.record("power", "total", total, warmup=warmup, pass_number=pass_number)

    def _spill(self, ctx: RunContext, conn: Connection, warmup: bool, pass_number: int) -> list[str]:
        """The spill test's one query (spill.spill_sql), timed, checked and recorded as step `sort`."""
        conn.set_timeout(ctx.query_timeout_s)
        rows, metrics = ctx.recorder.timed(lambda: conn.execute(spill.spill_sql(ctx.dialect, ctx.scale)), process=True)
        problem = spill.check(ctx.scale, rows)
        metrics["rows"] = float(len(rows))
        ctx.recorder.record("spill", "sort", metrics, warmup=warmup, answer="failed" if problem else "ok",
                            pass_number=pass_number)
        return [problem] if problem else []

    def _throughput(self, ctx: RunContext, warmup: bool, pass_number: int) -> list[str]:
        conns = [ctx.database.connect() for _ in range(ctx.streams)]
        wrong: list[str] = []
        failures: list[BaseException] = []

        def stream(number: int, conn: Connection) -> None:
            try:
                for _ in self._stream(ctx, conn, "throughput", number, warmup, pass_number, wrong, process=False):
                    pass
            except BaseException as exc:  # re-raised in the main thread below
                failures.append(exc)

        threads = [threading.Thread(target=stream, args=(n, c), name=f"tpch-stream-{n}")
                   for n, c in enumerate(conns, start=1)]
        try:
            with ctx.recorder.measure("throughput", "total", warmup=warmup, pass_number=pass_number):
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
        finally:
            for conn in conns:
                conn.close()
        if failures:
            raise failures[0]
        return wrong

    def _stream(self, ctx: RunContext, conn: Connection, test: str, number: int, warmup: bool, pass_number: int,
                wrong: list[str], *, process: bool) -> Iterator[dict[str, float]]:
        """Run one stream's 22 queries, yielding each one's metrics; each is timed alone, then
        checked, then recorded. A wrong answer is added to `wrong`; a query stopped by the
        timeout is recorded with answer "timeout" and the stream goes on."""
        conn.set_timeout(ctx.query_timeout_s)
        for q in streams.stream_order(number):
            sql = query(q, ctx.dialect)
            started = ctx.recorder.clock.now_ns()
            try:
                rows, metrics = ctx.recorder.timed(lambda: conn.execute(sql), process=process)
            except QueryTimeout:
                # the time until the engine stopped it: a lower bound of the query's time
                metrics = {"elapsed_s": (ctx.recorder.clock.now_ns() - started) / 1e9}
                wrong.append(f"q{q} stopped by the {ctx.query_timeout_s:g} s query timeout")
                ctx.recorder.record(test, f"q{q}", metrics, stream=number, warmup=warmup, answer="timeout",
                                    pass_number=pass_number)
                yield metrics
                continue
            result = answers.check(q, ctx.scale, rows)
            if result.status == "failed":
                wrong.append(result.message)
            metrics["rows"] = float(len(rows))
            ctx.recorder.record(test, f"q{q}", metrics, stream=number, warmup=warmup, answer=result.status,
                                pass_number=pass_number)
            yield metrics
