"""A batch of statements in one round trip on PostgreSQL: libpq's pipeline mode, driven directly.

psycopg's own pipeline (`Connection.pipeline()`) runs every statement through a cursor, whose
Python makes the cursor, converts the query, looks its prepared statement up and sends and
polls the socket after each statement: a client-side TPC-C transaction (ten statements) took
2.5 times the driver CPU it takes here (`bench/oltp_driver.py --client --paths
processes+psycopg-pipeline processes`; docs/method/oltp-driver.md). Here a statement costs what libpq and
psycopg's C adapters cost, and the same work is done as psycopg's:
  - its parameters are dumped by a Transformer of the connection (psycopg's C one), so they
    are sent with the types and formats `Connection.execute` sends;
  - a statement is prepared on the server when psycopg would prepare it: once the connection
    has run it with the same parameter types `prepare_threshold` times (psycopg's default 5; 0:
    at once; None: never), under a name of ours (psycopg's are `_pg3_…`), and run by that name
    after; at most `PREPARED_MAX` per connection, then the rest run unnamed, so a workload of
    ever new texts cannot fill the server's memory;
  - its rows are loaded by the Transformer as `fetchall` loads them (text format, tuples);
  - a statement that fails is raised as psycopg raises it (`psycopg.errors`, by SQLSTATE), the
    first one only: the server skips the rest of the batch up to its Sync.
The socket is waited on with poll(), which lets go of the interpreter while it waits. However
the batch ends, the pipeline's results are read up to its Sync and pipeline mode is left, so
the connection is as psycopg left it; Ctrl-C while the server runs a statement first asks the
server to cancel it, as psycopg does.
"""

from __future__ import annotations

import itertools
import select
from collections.abc import Sequence
from typing import Any

from tdebench.engines.base import Statement
from tdebench.engines.dbapi import qmark_to_dollar

PREPARED_MAX = 200  # named statements per connection; psycopg keeps 100
_NAME_PREFIX = "_tdebench_"
_NUMBERS = itertools.count(1)  # for the whole process: two Pipelines on one connection never share a name
_Key = tuple[str, tuple[int, ...]]  # a statement's text and its parameters' types


class Pipeline:
    """Batches on one psycopg connection (autocommit or not, in whatever transaction is open)."""

    def __init__(self, conn: Any) -> None:
        from psycopg.adapt import PyFormat, Transformer

        self._conn = conn
        self._pgconn = conn.pgconn
        self._tx = Transformer(conn)
        self._auto = PyFormat.AUTO
        self._encoding = conn.info.encoding
        self._runs: dict[_Key, int] = {}  # runs unprepared
        self._names: dict[_Key, bytes] = {}  # prepared (or being prepared in this batch)
        self._poll = select.poll()
        self._poll.register(self._pgconn.socket, select.POLLIN)

    def run(self, statements: Sequence[Statement]) -> list[list[tuple[Any, ...]]]:
        """Each statement's rows, in order; the first statement that failed raises."""
        from psycopg import errors
        from psycopg.pq import ExecStatus

        pg = self._pgconn
        # what each of the pipeline's results answers: a statement's index, or the key of a
        # statement prepared by this batch (the Parse's result comes before its run's)
        answers: list[int | _Key] = []
        synced = False
        pg.enter_pipeline_mode()
        try:
            for index, (sql, params) in enumerate(statements):
                answers += self._send(index, sql, params)
            pg.pipeline_sync()
            synced = True
            self._flush()
            results = self._results()
        except BaseException:
            # whether the server prepared them is not known: they are prepared again if sent again
            for answer in answers:
                if isinstance(answer, tuple):
                    self._names.pop(answer, None)
            self._recover(synced)
            raise
        pg.exit_pipeline_mode()
        rows: list[list[tuple[Any, ...]]] = [[] for _ in statements]
        failure = None
        for answer, result in zip(answers, results):
            status = result.status
            if status == ExecStatus.FATAL_ERROR and failure is None:
                failure = errors.error_from_result(result, encoding=self._encoding)
            if isinstance(answer, tuple):
                if status != ExecStatus.COMMAND_OK:  # failed, or skipped after a failure
                    self._names.pop(answer, None)
            elif status == ExecStatus.TUPLES_OK:
                self._tx.set_pgresult(result)
                rows[answer] = self._tx.load_rows(0, result.ntuples, tuple)
        if failure is not None:
            raise failure
        return rows

    def _send(self, index: int, sql: str, params: Sequence[Any]) -> list[int | _Key]:
        """Queue one statement (prepared first if its time has come); what its results answer."""
        pg = self._pgconn
        values = self._tx.dump_sequence(params, [self._auto] * len(params)) if params else None
        types, formats = (tuple(self._tx.types or ()), self._tx.formats) if params else ((), None)
        key = (sql, types)
        name = self._names.get(key)
        if name is not None:
            pg.send_query_prepared(name, values, formats)
            return [index]
        query = qmark_to_dollar(sql).encode(self._encoding)
        threshold, runs = self._conn.prepare_threshold, self._runs.get(key, 0)
        if threshold is None or runs < threshold or len(self._names) >= PREPARED_MAX:
            if len(self._runs) >= 10 * PREPARED_MAX:  # ever new texts: forget the old
                self._runs.clear()
            self._runs[key] = runs + 1
            pg.send_query_params(query, values, types or None, formats)
            return [index]
        name = self._names[key] = f"{_NAME_PREFIX}{next(_NUMBERS)}".encode()
        pg.send_prepare(name, query, types or None)
        pg.send_query_prepared(name, values, formats)
        return [key, index]

    def _flush(self) -> None:
        """Send everything queued (a batch larger than the socket's buffer waits for room)."""
        pg = self._pgconn
        while pg.flush():
            self._poll.modify(pg.socket, select.POLLIN | select.POLLOUT)
            try:
                if any(event & select.POLLIN for _, event in self._poll.poll()):
                    pg.consume_input()  # the server may be waiting for us to read before it reads on
            finally:
                self._poll.modify(pg.socket, select.POLLIN)

    def _results(self) -> list[Any]:
        """The pipeline's results up to its Sync, one per command sent."""
        from psycopg.pq import ExecStatus

        pg = self._pgconn
        results: list[Any] = []
        current = None
        while True:
            while pg.is_busy():
                self._poll.poll()
                pg.consume_input()
            result = pg.get_result()
            if result is None:  # the end of one command's results
                if current is not None:
                    results.append(current)
                current = None
            elif result.status == ExecStatus.PIPELINE_SYNC:
                return results
            elif current is None:  # a command's result (one each; of a COPY's several, the first)
                current = result

    def _recover(self, synced: bool) -> None:
        """After an interrupt or an error of the connection: cancel what the server runs, read
        the rest of the pipeline up to its Sync, so that the connection leaves pipeline mode
        idle. A connection that cannot is left to its owner to close."""
        from psycopg import pq

        try:
            if self._pgconn.transaction_status == pq.TransactionStatus.ACTIVE:
                self._conn.cancel_safe(timeout=5.0)
            if not synced:
                self._pgconn.pipeline_sync()
            self._flush()
            self._results()
            self._pgconn.exit_pipeline_mode()
        except Exception:
            pass
