"""Many drivers of one server (oltp's `driver_hosts = N`): one trial, N hosts running its users.

A unit whose workload spreads its virtual users is a *gang*: the client (client.py) submits its
unit task with N - 1 driver tasks (`run_driver`), each needing one "machine" resource like every
unit, so the N run on N hosts, one gang at a time (two gangs each holding some machines while
waiting for more would wait for ever). The unit's host owns the trial as in any unit: it creates
the server's database, loads it, runs the tests, checks consistency, judges it and drops it, and
stores the one set of records. The other hosts only run virtual users against the same url.

They talk through Dask queues on the scheduler (JSON text, never a password: each host reads the
plan's password_env or password_file itself, as it reads --key-file), one queue to each driver
and one back to the owner:

- the owner says "hello" and waits for every driver's "joined" before its first trial (a unit
  run again after its worker died says hello again);
- for each run of a test the owner sends a "job" (the trial, its database's name, the test);
  each driver opens its share of the users (oltp.workload.share: user k of V runs on host
  (k - 1) mod N) and says "ready"; once all are, the owner sends "go" with a start a moment
  ahead on the wall clock, which each host turns into its own monotonic clock: every host's
  ramp-up and window start and end at the same moments (to within the hosts' clock sync: keep
  them on NTP), each ends its own window;
- each driver sends its users' log merged into one ("log": counts, intervals and latency
  histograms, exactly mergeable), which the owner adds to its own; the database's New-Order
  count is then checked against the sum (oltp.checks.new_order_count);
- "done" (from the client, once the unit ended) or the run's stop event ends a driver.

Messages carry the job's number, so a late message of a job the owner gave up on is ignored.
Every host of a gang runs its users as threads (oltp.workload: `uses_processes`): the owner's
unit process holds a Dask client, a driver is a Dask task, and neither may fork.
"""

from __future__ import annotations

import json
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from distributed import Client, Event, Queue, get_client, get_worker

from tdebench.cluster import work
from tdebench.cluster.worker import stop_event
from tdebench.engines import get_engine
from tdebench.engines.base import Database
from tdebench.engines.remote import RemoteDatabase, RemoteError
from tdebench.plan import Plan, parse_plan
from tdebench.results import TrialKey
from tdebench.workloads.oltp.workload import drive_for_other

START_AHEAD_S = 0.5
"""How far ahead of the last driver's "ready" the start is set: time for "go" to reach them all."""
READY_TIMEOUT_S = 120.0
"""How long the owner waits for every driver to open its users (or to send its log after the window)."""
POLL_S = 0.5
"""How often a waiting driver or owner looks whether the run was stopped."""


class DriversFailed(RuntimeError):
    """Another host's driver failed, or did not answer in time: the trial fails, saying which."""


def inbox(run_id: str, gang: str, index: int) -> str:
    """The queue of driver `index` (1 … N-1) of a gang."""
    return f"tdebench-{run_id}-{gang}-to-{index}"


def outbox(run_id: str, gang: str) -> str:
    """The queue back to the gang's owner."""
    return f"tdebench-{run_id}-{gang}-back"


def wait_until(at_ns: int) -> int:
    """Sleep until the wall clock reads `at_ns`; return this machine's perf_counter_ns then (the
    clock the oltp driver times everything with)."""
    while (left := at_ns - time.time_ns()) > 0:
        time.sleep(min(left / 1e9, 0.05))
    return time.perf_counter_ns()


def _namespace(database: Database) -> str:
    if not isinstance(database, RemoteDatabase):
        raise DriversFailed("driver_hosts needs a server reached by url")  # the plan check refuses it first
    return database.namespace


class Owner:
    """The trial's own driver (in the unit's process): oltp's OtherDrivers over the gang's queues."""

    def __init__(self, scheduler: str, run_id: str, gang: str, hosts: int) -> None:
        self.client = Client(scheduler, timeout="20s", set_as_default=False)
        self.inboxes = [Queue(inbox(run_id, gang, index), client=self.client) for index in range(1, hosts)]
        self.back = Queue(outbox(run_id, gang), client=self.client)
        self.job = 0  # 0: the drivers' "joined"

    def close(self) -> None:
        self.client.close()

    def joined(self, interrupted: threading.Event) -> None:
        """Say hello and wait, without limit, until every driver task has answered (they may wait
        for a machine that a long unit holds; a unit run again after its worker died says hello
        again); KeyboardInterrupt if the run is interrupted meanwhile."""
        self._send({"kind": "hello"})
        self._gather("joined", None, interrupted)

    def begin(self, trial: TrialKey, database: Database, test: str) -> int:
        self.job += 1
        self._send({"kind": "job", "trial": work.key_fields(trial), "namespace": _namespace(database),
                    "test": test})
        self._gather("ready", READY_TIMEOUT_S)
        at_ns = time.time_ns() + int(START_AHEAD_S * 1e9)
        self._send({"kind": "go", "at_ns": at_ns})
        return wait_until(at_ns)

    def results(self) -> list[dict[str, Any]]:
        return [message["log"] for message in self._gather("log", READY_TIMEOUT_S)]

    def _send(self, message: dict[str, Any]) -> None:
        text = json.dumps({**message, "job": self.job})
        for queue in self.inboxes:
            queue.put(text)

    def _gather(self, kind: str, timeout: float | None,
                interrupted: threading.Event | None = None) -> list[dict[str, Any]]:
        """One `kind` message of this job from every driver, in their order; DriversFailed if one
        reports an error or the time is up."""
        deadline = None if timeout is None else time.monotonic() + timeout
        got: dict[int, dict[str, Any]] = {}
        while len(got) < len(self.inboxes):
            if interrupted is not None and interrupted.is_set():
                raise KeyboardInterrupt
            if deadline is not None and time.monotonic() > deadline:
                missing = sorted(set(range(1, len(self.inboxes) + 1)) - set(got))
                raise DriversFailed(f"driver(s) {', '.join(map(str, missing))} of driver_hosts did not say "
                                    f"{kind} within {timeout:g} s")
            try:
                message = json.loads(self.back.get(timeout=POLL_S))
            except TimeoutError:
                continue
            if message["job"] != self.job:
                continue  # a job given up on before
            if message["kind"] == "error":
                raise DriversFailed(f"the driver on {message['host']}: {message['error']}")
            if message["kind"] == kind:
                got[int(message["index"])] = message
        return [got[index] for index in sorted(got)]


class _Abandoned(Exception):
    """A driver waiting for "go" got something else: the owner gave the job up (or the run stopped)."""

    def __init__(self, message: dict[str, Any] | None) -> None:
        super().__init__("the owner gave the job up")
        self.message = message


class _Driver:
    """One of the other drivers (a Dask task on its host): serves the owner's jobs until done."""

    def __init__(self, plan: Plan, index: int, host: str, run_id: str, gang: str) -> None:
        client = get_client()
        self.plan, self.index, self.host = plan, index, host
        self.inbox = Queue(inbox(run_id, gang, index), client=client)
        self.back = Queue(outbox(run_id, gang), client=client)
        self.stop = Event(stop_event(run_id), client=client)

    def serve(self) -> None:
        message = self._next()
        while message is not None and message["kind"] != "done":
            following = None
            if message["kind"] == "hello":
                self._send(0, "joined")
            elif message["kind"] == "job":
                try:
                    log = self._drive(message)
                    self._send(message["job"], "log", log=log)
                except _Abandoned as gone:
                    following = gone.message
                    if following is None:
                        return
                except Exception as exc:  # noqa: BLE001 - the owner's trial fails with it, saying where
                    self._send(message["job"], "error", error=self._scrubbed(message, exc))
            message = following if following is not None else self._next()

    def _next(self, timeout: float | None = None) -> dict[str, Any] | None:
        """The next message, or None once the run is stopped (or `timeout` passed)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.stop.is_set() and (deadline is None or time.monotonic() < deadline):
            try:
                return dict(json.loads(self.inbox.get(timeout=POLL_S)))
            except TimeoutError:
                continue
        return None

    def _send(self, job: int, kind: str, **fields: Any) -> None:
        self.back.put(json.dumps({"job": job, "kind": kind, "index": self.index, "host": self.host, **fields}))

    def _database(self, job: dict[str, Any]) -> tuple[TrialKey, Database, str]:
        """The trial's database on the server, by its name: this host never creates or drops it."""
        trial = TrialKey(*job["trial"])
        engine = get_engine(trial.engine, memory_mb=trial.memory_mb, remote=self.plan.engine(trial.engine).remote)
        database = engine.provision(Path(tempfile.gettempdir()), engine.encryption(trial.encryption), None)
        assert isinstance(database, RemoteDatabase), "driver_hosts needs a server reached by url"
        database.namespace = str(job["namespace"])
        return trial, database, engine.dialect

    def _drive(self, job: dict[str, Any]) -> dict[str, Any]:
        trial, database, dialect = self._database(job)
        spec = self.plan.workload(trial.workload)

        def at() -> int:  # this host's users are open: ready; then the start the owner sets
            self._send(job["job"], "ready")
            reply = self._next(READY_TIMEOUT_S)
            if reply is None or reply["kind"] != "go" or reply["job"] != job["job"]:
                raise _Abandoned(reply)
            return wait_until(int(reply["at_ns"]))

        try:
            log = drive_for_other(database, dialect, spec.option_values(), str(job["test"]), self.plan.seed,
                                  trial.scale, spec.query_timeout_s, self.index, at)
        finally:
            database.close()
        return log.to_json()

    def _scrubbed(self, job: dict[str, Any], exc: Exception) -> str:
        """The error as the owner's trial records it, without the server's password."""
        text = f"{type(exc).__name__}: {exc}"
        target = self.plan.engine(TrialKey(*job["trial"]).engine).remote
        try:
            return target.password().scrub(text) if target is not None else text
        except RemoteError:  # no password here: none can be in the text
            return text


def run_driver(request: dict[str, Any]) -> dict[str, Any]:
    """The Dask task of one of a gang's other drivers: serve the owner's jobs until the unit ends."""
    me = get_worker()
    host = work.this_host(me.name, me.address)
    plan = parse_plan(request["plan"], request["source"])
    _Driver(plan, int(request["index"]), host, str(request["run"]), str(request["gang"])).serve()
    return {"host": host}
