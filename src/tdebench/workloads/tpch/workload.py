"""TPC-H: load, power test and throughput test, every answer checked.

The power test runs the 22 queries one after another in the spec's stream-0 order (the
order seed 004 used); the throughput test runs S streams at once, each on its own
connection and in its own spec order. Connections for the streams are opened before the
test's clock starts, so key derivation never counts as query time.
"""

from __future__ import annotations

import threading
from pathlib import Path

from tdebench.engines.base import Connection, QueryTimeout
from tdebench.workloads.base import RunContext, Workload, WrongAnswer
from tdebench.workloads.tpch import answers, data, schema, streams
from tdebench.workloads.tpch.queries import query


class TpchWorkload(Workload):
    name = "tpch"
    tests = ("power", "throughput")
    default_scale = 0.01
    scale_min = data.SCALE_MIN
    scale_max = data.SCALE_MAX
    max_streams = streams.MAX_STREAMS
    memory_axis = True

    def prepare(self, scale: float, data_dir: Path, seed: int) -> None:
        data.generate(scale, data_dir)

    def load(self, ctx: RunContext, conn: Connection) -> None:
        files = data.generate(ctx.scale, ctx.data_dir)  # cached by prepare(): no generation here
        for statement in schema.create_tables(ctx.dialect):
            conn.execute(statement)
        for table in schema.SCHEMA:
            if table.name in schema.SENSITIVE:  # a no-op unless the encryption is column-level
                ctx.database.seal_columns(conn, table.name, schema.SENSITIVE[table.name], table.primary_key)
        with ctx.recorder.measure("load", "total"):
            with ctx.recorder.measure("load", "tables"):
                for table, columns in schema.TABLES.items():
                    ctx.database.bulk_load(conn, table, columns, files[table])
            with ctx.recorder.measure("load", "indexes"):
                for statement in schema.create_indexes(ctx.dialect):
                    conn.execute(statement)

    def run(self, test: str, ctx: RunContext, conn: Connection, *, warmup: bool) -> None:
        if test == "power":
            with ctx.recorder.measure("power", "total", warmup=warmup):
                wrong = self._stream(ctx, conn, "power", 0, warmup, process=True)
        elif test == "throughput":
            wrong = self._throughput(ctx, warmup)
        else:
            raise ValueError(f"tpch has no test {test!r}; valid: {', '.join(self.tests)}")
        if wrong:
            raise WrongAnswer(f"tpch {test}: {len(wrong)} wrong or missing answer(s): " + "; ".join(wrong))

    def _throughput(self, ctx: RunContext, warmup: bool) -> list[str]:
        conns = [ctx.database.connect() for _ in range(ctx.streams)]
        wrong: list[str] = []
        failures: list[BaseException] = []

        def stream(number: int, conn: Connection) -> None:
            try:
                wrong.extend(self._stream(ctx, conn, "throughput", number, warmup, process=False))
            except BaseException as exc:  # re-raised in the main thread below
                failures.append(exc)

        threads = [threading.Thread(target=stream, args=(n, c), name=f"tpch-stream-{n}")
                   for n, c in enumerate(conns, start=1)]
        try:
            with ctx.recorder.measure("throughput", "total", warmup=warmup):
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

    def _stream(self, ctx: RunContext, conn: Connection, test: str, number: int, warmup: bool,
                *, process: bool) -> list[str]:
        """Run one stream's 22 queries; each is timed alone, then checked, then recorded.
        A query stopped by the timeout is recorded with answer "timeout" and the stream goes on."""
        wrong = []
        conn.set_timeout(ctx.query_timeout_s)
        for q in streams.stream_order(number):
            sql = query(q, ctx.dialect)
            started = ctx.recorder.clock.now_ns()
            try:
                rows, metrics = ctx.recorder.timed(lambda: conn.execute(sql), process=process)
            except QueryTimeout:
                # the time until the engine stopped it: a lower bound of the query's time
                elapsed = (ctx.recorder.clock.now_ns() - started) / 1e9
                wrong.append(f"q{q} stopped by the {ctx.query_timeout_s:g} s query timeout")
                ctx.recorder.record(test, f"q{q}", {"elapsed_s": elapsed}, stream=number, warmup=warmup,
                                    answer="timeout")
                continue
            result = answers.check(q, ctx.scale, rows)
            if result.status == "failed":
                wrong.append(result.message)
            metrics["rows"] = float(len(rows))
            ctx.recorder.record(test, f"q{q}", metrics, stream=number, warmup=warmup, answer=result.status)
        return wrong
