"""CRUD by table size: the SELECT, INSERT and DELETE of k rows of Moulianitakis &
Asimakopoulos (2019) and the UPDATE of Dolyetyus (n.d.) (docs/references.md), plus point
lookups (a latency distribution) and a full scan, each measured on its own.

The table `persons` has N rows (the plan's scale) with ids 1..N; an operation touches
k = operation_fraction × N of them (Moulianitakis & Asimakopoulos touched 1M of 10M rows: 0.1,
the default):

| test     | measured statement                                    | checked (unmeasured)                  | undone (unmeasured)          |
|----------|-------------------------------------------------------|---------------------------------------|------------------------------|
| `select` | SELECT every column of ids 1..k (the thesis's TOP k)  | k rows, ids 1..k                      | –                            |
| `insert` | INSERT the k staging rows (ids N+1..N+k)              | k rows in N+1..N+k                    | DELETE them                  |
| `update` | UPDATE age = age + 1000 of ids k+1..2k                | k rows of k+1..2k have age ≥ 1000     | age − 1000                   |
| `delete` | DELETE ids N+1..N+k (inserted just before, unmeasured)| none left in N+1..N+k                 | –                            |
| `lookup` | `lookups` point SELECTs by id, each timed alone       | each returns its one row              | –                            |
| `scan`   | count(*), sum(age), sum(length(address)) of all rows  | equal to the generated data's         | –                            |

Each lookup is timed alone (the clock around one statement, nothing else) and the trial stores
the distribution of those times as step `point`: p50, p90, p99, max and mean. Repetitions
are the independent samples, so the report gives each percentile's median over them with
its interval and overhead, as for any other figure; one record per lookup would have put
thousands of correlated values into one statistical cell.

Every test leaves the table as it found it, so tests are independent of their order and of
how often they run (warm-ups run each one too), and `scan` checks it: a count or sum off by
one row fails the trial. The statements are plain SQL that DuckDB, SQLite, MariaDB and
PostgreSQL all accept, so there is one text per statement rather than one per dialect; SQL
Server and Oracle (servers reached by url) run it transpiled by sqlglot (workloads/transpile.py).

In cold plans (`cache = "cold"`) the session can go cold (`Session.go_cold`): as Dolyetyus (n.d.) emptied the
buffer cache before every statement, each measured statement starts cold. The runner has just
stopped the engine and dropped the OS cache before a measured run (docs/method/trial.md, step 6), so
the first statement of a test needs nothing more; a statement after unmeasured work (the
delete after its setup) has the session close the connection, go cold and reconnect, untimed. The
lookups go cold once, before the first: the distribution then shows the misses warming up.
"""  # noqa: E501 (a Markdown table, read as one)

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np

from tdebench.engines.base import Connection, QueryTimeout
from tdebench.workloads import transpile
from tdebench.workloads.base import LOAD_HEADLINES, Headline, Option, Reporting, RunContext, Workload, WrongAnswer
from tdebench.workloads.crud import data, schema
from tdebench.workloads.crud.data import COLUMNS

T = TypeVar("T")

ROWS_MIN = 1_000
ROWS_MAX = 10_000_000
STEP = "total"  # the measured operation (for `lookup`: all lookups together)
POINT = "point"  # a single lookup of the `lookup` test: the distribution of their times
PERCENTILES = (50.0, 90.0, 99.0)
LATENCY_METRICS = ("p50_elapsed_s", "p90_elapsed_s", "p99_elapsed_s", "max_elapsed_s", "mean_elapsed_s")
MARK = 1000  # added to age by the update: no generated age reaches it (ages are 18..90)

_ALL = ", ".join(COLUMNS)
SELECT_RANGE = f"SELECT {_ALL} FROM {schema.TABLE} WHERE id BETWEEN ? AND ?"
INSERT_STAGING = f"INSERT INTO {schema.TABLE} ({_ALL}) SELECT {_ALL} FROM {schema.STAGING}"
UPDATE_RANGE = f"UPDATE {schema.TABLE} SET age = age + {MARK} WHERE id BETWEEN ? AND ?"
UNDO_UPDATE = f"UPDATE {schema.TABLE} SET age = age - {MARK} WHERE id BETWEEN ? AND ? AND age >= {MARK}"
DELETE_RANGE = f"DELETE FROM {schema.TABLE} WHERE id BETWEEN ? AND ?"
LOOKUP = f"SELECT {_ALL} FROM {schema.TABLE} WHERE id = ?"
SCAN = f"SELECT count(*), sum(age), sum(length(address)) FROM {schema.TABLE}"
COUNT_RANGE = f"SELECT count(*) FROM {schema.TABLE} WHERE id BETWEEN ? AND ?"
COUNT_UPDATED = f"SELECT count(*) FROM {schema.TABLE} WHERE id BETWEEN ? AND ? AND age >= {MARK}"


def table_rows(scale: float) -> int:
    """The plan's scale is the number of rows in `persons` (a whole number: `whole_scale`)."""
    return int(scale)


def operation_rows(rows: int, fraction: float) -> int:
    return max(1, round(rows * fraction))


def lookup_ids(seed: int, rows: int, count: int) -> tuple[int, ...]:
    """The ids the lookup test fetches, in order: the same in every repetition and encryption,
    so every trial does the same work."""
    return tuple(int(key) for key in np.random.default_rng([seed, rows]).integers(1, rows + 1, size=count))


@dataclass(frozen=True)
class _Shape:
    """One trial's sizes and expected answers."""

    rows: int  # N: rows in persons
    k: int  # rows per select, insert, update and delete
    facts: data.Facts  # of the generated persons rows
    lookups: tuple[int, ...]  # the ids the lookup test fetches, in order

    @classmethod
    def of(cls, ctx: RunContext) -> "_Shape":
        rows = table_rows(ctx.scale)
        return cls(rows, operation_rows(rows, ctx.options["operation_fraction"]),
                   data.facts(data.path(ctx.data_dir, ctx.seed, 1, rows)),
                   lookup_ids(ctx.seed, rows, ctx.options["lookups"]))

    def processed(self, rows: int) -> float:
        """The bytes processed of Moulianitakis & Asimakopoulos (2019): rows × the table's
        average logical row size."""
        return rows * self.facts.row_bytes


class _Session:
    """The connection a test runs on, and the measurement of its statements.

    In a cold plan's measured run, a measured statement that follows other work on the
    connection first has the runner's session close it, stop the engine, drop the OS cache and
    reconnect (all untimed), and runs on the new connection.
    """

    def __init__(self, ctx: RunContext, conn: Connection, test: str, warmup: bool) -> None:
        self.ctx, self.test, self.warmup = ctx, test, warmup
        self.conn = conn
        self.cold = ctx.session.cold and not warmup
        self.used = False  # a statement ran since the engine went cold (the runner's, before this run)
        conn.set_timeout(ctx.query_timeout_s)

    def sql(self, statement: str) -> str:
        """A statement's text for the trial's dialect (transpiled for SQL Server and Oracle):
        taken before a measured statement's clock starts, since sqlglot takes milliseconds."""
        return transpile.statement(statement, self.ctx.dialect)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """An unmeasured statement: setup, check or undo."""
        self.used = True
        return self.conn.execute(self.sql(sql), params)

    def count(self, sql: str, params: Sequence[Any]) -> int:
        return int(self.execute(sql, params)[0][0])

    def measure(self, work: Callable[[Connection], T], shape: _Shape, rows: int) -> tuple[T, dict[str, float]]:
        """Run `work` timed (cold first, if asked), with the bytes processed for `rows` (as
        Moulianitakis & Asimakopoulos (2019) count them) and the database's size before and
        after; a timeout is recorded and fails the test."""
        self._go_cold()
        database, recorder = self.ctx.database, self.ctx.recorder
        size_before = database.size_bytes()
        started = recorder.clock.now_ns()
        try:
            result, metrics = recorder.timed(lambda: work(self.conn))
        except QueryTimeout:
            elapsed = (recorder.clock.now_ns() - started) / 1e9  # until the engine stopped it: a lower bound
            recorder.record(self.test, STEP, {"elapsed_s": elapsed}, warmup=self.warmup, answer="timeout")
            timeout = f"stopped by the {self.ctx.query_timeout_s:g} s query timeout"
            raise WrongAnswer(f"crud {self.test}: {timeout}") from None
        metrics.update(processed_bytes=shape.processed(rows), size_before_bytes=float(size_before),
                       size_after_bytes=float(database.size_bytes()))
        return result, metrics

    def record(self, metrics: dict[str, float], rows: int, wrong: str) -> list[str]:
        """Store the measurement with the rows its check found and its outcome; `wrong` says
        what was wrong, if anything."""
        metrics["rows"] = float(rows)
        self.ctx.recorder.record(self.test, STEP, metrics, warmup=self.warmup, answer="failed" if wrong else "ok")
        return [wrong] if wrong else []

    def _go_cold(self) -> None:
        if self.cold and self.used:
            self.conn = self.ctx.session.go_cold()
            self.conn.set_timeout(self.ctx.query_timeout_s)
        self.used = True

def _select(s: _Session, shape: _Shape) -> list[str]:
    low, high = 1, shape.k
    sql = s.sql(SELECT_RANGE)
    rows, metrics = s.measure(lambda conn: conn.execute(sql, [low, high]), shape, shape.k)
    ids = sum(row[0] for row in rows)
    expected = shape.k * (low + high) // 2
    wrong = "" if len(rows) == shape.k and ids == expected else (
        f"select returned {len(rows)} rows whose ids sum to {ids}; expected {shape.k} rows, ids {low}..{high}")
    return s.record(metrics, len(rows), wrong)


def _insert(s: _Session, shape: _Shape) -> list[str]:
    low, high = shape.rows + 1, shape.rows + shape.k
    sql = s.sql(INSERT_STAGING)
    _, metrics = s.measure(lambda conn: conn.execute(sql), shape, shape.k)
    found = s.count(COUNT_RANGE, [low, high])
    wrong = "" if found == shape.k else f"insert added {found} rows with ids {low}..{high}; expected {shape.k}"
    s.execute(DELETE_RANGE, [low, high])
    return s.record(metrics, found, wrong)


def _update(s: _Session, shape: _Shape) -> list[str]:
    low, high = shape.k + 1, 2 * shape.k
    sql = s.sql(UPDATE_RANGE)
    _, metrics = s.measure(lambda conn: conn.execute(sql, [low, high]), shape, shape.k)
    updated = s.count(COUNT_UPDATED, [low, high])
    s.execute(UNDO_UPDATE, [low, high])
    left = s.count(COUNT_UPDATED, [low, high])
    wrong = "" if updated == shape.k and left == 0 else (
        f"update changed {updated} of ids {low}..{high} (expected {shape.k}) and {left} stayed changed after the undo")
    return s.record(metrics, updated, wrong)


def _delete(s: _Session, shape: _Shape) -> list[str]:
    low, high = shape.rows + 1, shape.rows + shape.k
    s.execute(INSERT_STAGING)  # the rows to delete, so the table ends as it began
    sql = s.sql(DELETE_RANGE)
    _, metrics = s.measure(lambda conn: conn.execute(sql, [low, high]), shape, shape.k)
    left = s.count(COUNT_RANGE, [low, high])
    wrong = "" if left == 0 else f"delete left {left} of the {shape.k} rows with ids {low}..{high}"
    return s.record(metrics, shape.k - left, wrong)


def _lookup(s: _Session, shape: _Shape) -> list[str]:
    clock = s.ctx.recorder.clock
    lookup = s.sql(LOOKUP)

    def lookups(conn: Connection) -> list[tuple[int, list[tuple[Any, ...]]]]:
        timed = []
        for key in shape.lookups:
            start = clock.now_ns()
            rows = conn.execute(lookup, [key])
            timed.append((clock.now_ns() - start, rows))
        return timed

    timed, metrics = s.measure(lookups, shape, len(shape.lookups))
    missed = [f"id {key}" for key, (_, rows) in zip(shape.lookups, timed) if len(rows) != 1 or rows[0][0] != key]
    seconds = np.array([nanoseconds for nanoseconds, _ in timed]) / 1e9
    distribution = dict(zip(LATENCY_METRICS, [*np.percentile(seconds, PERCENTILES), seconds.max(), seconds.mean()]))
    s.ctx.recorder.record(s.test, POINT, {name: float(value) for name, value in distribution.items()},
                          warmup=s.warmup, answer="failed" if missed else "ok")
    wrong = f"{len(missed)} of {len(shape.lookups)} lookups did not return their one row: {', '.join(missed[:5])}"
    return s.record(metrics, len(shape.lookups) - len(missed), wrong if missed else "")


def _scan(s: _Session, shape: _Shape) -> list[str]:
    sql = s.sql(SCAN)
    result, metrics = s.measure(lambda conn: conn.execute(sql), shape, shape.rows)
    got = tuple(int(value or 0) for value in result[0])
    facts = shape.facts
    expected = (facts.rows, facts.age_sum, facts.address_chars)
    wrong = "" if got == expected else (
        f"scan found (rows, sum of ages, address characters) = {got}; expected {expected}")
    return s.record(metrics, got[0], wrong)


OPERATIONS: dict[str, Callable[[_Session, _Shape], list[str]]] = {
    "select": _select, "insert": _insert, "update": _update, "delete": _delete,
    "lookup": _lookup, "scan": _scan,
}


class CrudWorkload(Workload):
    name = "crud"
    dialects = schema.DIALECTS
    tests = tuple(OPERATIONS)
    default_scale = 10_000
    scale_min = ROWS_MIN
    scale_max = ROWS_MAX
    whole_scale = True  # rows
    scale_format = "{} rows"
    max_streams = 1
    # for its report (report/sections/crud.py): every operation's measured step, the lookups' distribution
    reporting = Reporting(headlines=(Headline("elapsed_s", (STEP,)), *LOAD_HEADLINES))
    step: ClassVar[str] = STEP
    point_step: ClassVar[str] = POINT
    latency_metrics: ClassVar[tuple[str, ...]] = LATENCY_METRICS
    options = {
        "operation_fraction": Option(0.1, "share of the table's rows each select, insert, update and "
                                          "delete touches", low=0.001, high=0.5),
        "lookups": Option(1000, "point lookups by id in the lookup test, each timed alone", low=1, high=100_000),
    }

    def prepare(self, scale: float, data_dir: Path, seed: int) -> None:
        data.generate(data_dir, seed, 1, table_rows(scale))

    def load(self, ctx: RunContext, conn: Connection) -> None:
        rows = table_rows(ctx.scale)
        k = operation_rows(rows, ctx.options["operation_fraction"])
        persons = data.generate(ctx.data_dir, ctx.seed, 1, rows)  # made by prepare()
        staging = data.generate(ctx.data_dir, ctx.seed, rows + 1, k)  # made by the first trial, then cached
        for statement in schema.create_tables(ctx.dialect):
            conn.execute(statement)
        for table in (schema.TABLE, schema.STAGING):  # a no-op unless the encryption is column-level
            ctx.database.seal_columns(conn, table, schema.SENSITIVE, (schema.KEY,))
        with ctx.recorder.measure("load", "total"):
            with ctx.recorder.measure("load", "tables"):
                ctx.database.bulk_load(conn, schema.TABLE, COLUMNS, persons)
                ctx.database.bulk_load(conn, schema.STAGING, COLUMNS, staging)
            with ctx.recorder.measure("load", "indexes"):
                for statement in schema.create_indexes(ctx.dialect):
                    conn.execute(statement)

    def run(self, test: str, ctx: RunContext, conn: Connection, *, warmup: bool) -> None:
        if test not in OPERATIONS:
            raise ValueError(f"crud has no test {test!r}; valid: {', '.join(self.tests)}")
        wrong = OPERATIONS[test](_Session(ctx, conn, test, warmup), _Shape.of(ctx))
        if wrong:
            raise WrongAnswer(f"crud {test}: " + "; ".join(wrong))
