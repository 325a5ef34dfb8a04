"""The client of a cluster run: `tdebench run PLAN --out DIR --cluster ADDRESS`.

It connects to a Dask scheduler (or starts N local workers for `local:N`), checks every worker
as `tdebench run` checks its machine (worker.check), submits one task per unit (work.units)
that needs one "machine" resource, so each worker runs one unit at a time, and appends the
records the units send (events of the run's topic) to the one results.jsonl as they arrive,
each trial with its host's identity; environment.json gets every host's environment as it
first appears. The records are the source of truth, so an event seen twice (live and read
back from the scheduler at the end) is stored once.

Faults: a unit whose worker dies is given to another worker by the scheduler (worker.py says
what it then skips or fails); a unit that fails for good (the scheduler's `KilledWorker`, an
error on its host) has its trials that did not end recorded as failed with the reason. Ctrl-C
sets the run's stop event: every running unit stops and cleans up on its worker, waiting ones
return at once, and the client waits for them all before it returns.
"""

from __future__ import annotations

import json
import logging
import shutil
import socket
import tempfile
import uuid
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any
from collections.abc import Callable

import dask
from distributed import Client, Event, Future, LocalCluster, Queue, wait

from tdebench.cluster import drivers, work, worker
from tdebench.cluster.collect import Collector
from tdebench.plan import Plan, TrialSpec
from tdebench.run.setup import SetupError

CONNECT_TIMEOUT = "20s"
DRAIN_S = 0.5
"""How long the client waits for records before it looks at the units again."""
STOP_WAIT_S = 600.0
"""After Ctrl-C, how long the client waits for the running units to clean up on their workers."""


def _answers(address: str) -> None:
    """OSError at once if nothing listens at a tcp:// address (Dask's client would retry until
    its timeout before it says so)."""
    scheme, _, rest = address.partition("://")
    host, _, port = rest.rpartition(":")
    if scheme == "tcp" and port.isdigit():
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()


class Cluster:
    """A connection to the scheduler (and, for local:N, the local workers), closed on exit."""

    def __init__(self, address: str) -> None:
        try:
            self.local_workers = work.parse_address(address)
        except ValueError as exc:
            raise SetupError(str(exc)) from None
        self.address = address
        self._local: LocalCluster | None = None
        self._scratch: Path | None = None  # the local workers' directory, removed with them
        self.client: Client | None = None

    def __enter__(self) -> "Cluster":
        if self.local_workers is not None:
            # the scheduler's and the workers' scratch: Dask's own default, /tmp/dask-scratch-space,
            # stays behind after they stop
            self._scratch = Path(tempfile.mkdtemp(prefix="tdebench-dask-"))
            try:
                with dask.config.set({"temporary-directory": str(self._scratch)}):
                    self._local = LocalCluster(n_workers=self.local_workers, threads_per_worker=1, processes=True,
                                               resources={"machine": 1}, host="127.0.0.1", dashboard_address=None,
                                               silence_logs=logging.ERROR)
                self.client = Client(self._local)
            except BaseException:
                self.__exit__(None, None, None)
                raise
            return self
        try:
            _answers(self.address)
            self.client = Client(self.address, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            raise SetupError(f"--cluster {self.address}: no Dask scheduler answers there ({exc}); start one with "
                             "`dask scheduler` (docs/cluster.md)") from None
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        try:
            if self.client is not None:
                self.client.close()
            if self._local is not None:
                self._local.close()
        finally:
            if self._scratch is not None:
                shutil.rmtree(self._scratch, ignore_errors=True)

    def _connected(self) -> Client:
        assert self.client is not None, "use Cluster in a with block"
        return self.client

    def check(self, plan: Plan, source: str, key_file: Path | None, work_dir: Path | None) -> dict[str, dict[str, Any]]:
        """Every worker's environment by host, once each has one "machine" resource, a host
        identity of its own and can run the plan; SetupError naming the worker otherwise."""
        client = self._connected()
        workers = client.scheduler_info(n_workers=-1)["workers"]
        if not workers:
            raise SetupError(f"--cluster {self.address}: no workers are connected; start one per machine with "
                             f"`dask worker {self.address} --nthreads 1 --resources machine=1`")
        for address, info in workers.items():
            if info.get("resources", {}).get("machine") != 1:
                raise SetupError(f"--cluster: worker {address} has no resource machine=1, so it could run two trials "
                                 "at once; start it with --nthreads 1 --resources machine=1")
        if plan.driver_hosts > len(workers):
            raise SetupError(f"--cluster: the plan's driver_hosts = {plan.driver_hosts} needs as many workers, one "
                             f"per host; {len(workers)} are connected")
        answers = client.run(worker.check, plan.text, source, str(key_file) if key_file else None,
                             str(work_dir) if work_dir else None)
        hosts: dict[str, dict[str, Any]] = {}
        for address, answer in sorted(answers.items()):
            if answer["problem"]:
                raise SetupError(f"--cluster: worker {answer['host']} ({address}) cannot run the plan: "
                                 f"{answer['problem']}")
            if answer["host"] in hosts:
                raise SetupError(f"--cluster: two workers run on {answer['host']}: trials on one machine disturb each "
                                 "other; run one worker per machine (or give each a --name, for testing only)")
            hosts[answer["host"]] = answer["environment"]
        return hosts

    def clean(self, work_dir: Path | None) -> list[dict[str, Any]]:
        """`tdebench clean` on every worker, one after another (workers of one machine would
        race for the same dead runs), each answer naming its host (worker.clean)."""
        client = self._connected()
        return [client.run(worker.clean, str(work_dir) if work_dir else None, workers=[address])[address]
                for address in sorted(client.scheduler_info(n_workers=-1)["workers"])]

    def run(self, plan: Plan, source: str, specs: list[TrialSpec], collector: Collector,
            options: dict[str, Any], more: Callable[[], list[TrialSpec]] | None = None) -> None:
        """Run `specs` unit by unit on the workers, storing their records through `collector`,
        then, while `more()` (an adaptive plan's next rounds, decided from the records stored)
        gives trials, those; KeyboardInterrupt (raised here by the CLI's handler) stops every
        unit first."""
        client = self._connected()
        run_id = uuid.uuid4().hex
        for host in collector.measured_ciphers():  # a resumed run keeps its hosts' cipher figures
            client.set_metadata([run_id, "ciphers", host], True)
        client.subscribe_topic(worker.topic(run_id), collector.receive)
        request = {"run": run_id, "plan": plan.text, "source": source, "cache": plan.cache,
                   "lockstep": plan.order == "lockstep", **options}
        batch = _Batch(client, plan, request, specs, 0)
        try:
            while True:
                batch.run(collector, self._submit)
                trials = more() if more is not None else []  # a resumed run may have only rounds to add
                if not trials:
                    break
                batch = _Batch(client, plan, request, trials, batch.next_index)
        except KeyboardInterrupt:
            Event(worker.stop_event(run_id), client=client).set()
            collector.progress.phase("interrupted: stopping the units on their workers, which clean up")
            try:  # the units not started return at once; the running ones once they have cleaned up
                wait(batch.tasks(), timeout=STOP_WAIT_S)
            except TimeoutError:  # a worker that does not answer: its machine cleans up at its next run
                pass
            raise
        finally:
            _collect_all(client, run_id, collector)
            client.unsubscribe_topic(worker.topic(run_id))

    def _submit(self, request: dict[str, Any], index: int, unit: work.Unit, **extra: Any) -> Future:
        """The task of one unit, needing one "machine" resource."""
        return self._connected().submit(worker.run_unit, {**request, **extra,
                                                          "trials": [work.key_fields(s.key) for s in unit.trials]},
                                        key=f"tdebench-{request['run']}-{index}", resources={"machine": 1}, pure=False)


def _collect_all(client: Client, run_id: str, collector: Collector) -> None:
    """Store every record the scheduler holds that the live stream has not brought yet."""
    for _, event in client.get_events(worker.topic(run_id)):
        collector.take(event)
    collector.drain(0)


class _Batch:
    """Units run together (the plan's trials, or an adaptive plan's next rounds), numbered from
    `first`: every unit at once, but the gangs of oltp drivers one at a time (drivers.py)."""

    def __init__(self, client: Client, plan: Plan, request: dict[str, Any], specs: list[TrialSpec],
                 first: int) -> None:
        self.client, self.plan, self.request = client, plan, request
        self.units = list(enumerate(work.units(specs), start=first))
        self.next_index = first + len(self.units)
        self.futures: dict[Future, work.Unit] = {}
        self.gangs = [_Gang(client, request, index, unit, self._hosts(unit)) for index, unit in self.units
                      if self._hosts(unit) > 1]

    def _hosts(self, unit: work.Unit) -> int:
        return self.plan.workload(unit.trials[0].key.workload).driver_hosts

    def tasks(self) -> list[Future]:
        return [*self.futures, *(other for gang in self.gangs for other in gang.others)]

    def run(self, collector: Collector, submit: Callable[..., Future]) -> None:
        """Run every unit, storing records as they come; a unit that failed for good has its
        trials that did not end recorded as failed."""
        self.futures = {submit(self.request, index, unit): unit for index, unit in self.units
                        if self._hosts(unit) == 1}
        gangs, cache = self.gangs, self.plan.cache
        while not all(future.done() for future in self.futures) or any(not gang.ended() for gang in gangs):
            collector.drain(DRAIN_S)
            running = next((gang for gang in gangs if gang.started() and not gang.ended()), None)
            if running is not None and running.stranded(len(self.client.scheduler_info(n_workers=-1)["workers"])):
                collector.lost(running.unit.trials, f"lost: a worker of its {running.hosts} drivers died and fewer "
                               "workers are left", cache)
            waiting = next((gang for gang in gangs if not gang.started()), None)
            if running is None and waiting is not None:  # one gang at a time: see drivers.py
                self.futures[waiting.start(submit)] = waiting.unit
        _collect_all(self.client, str(self.request["run"]), collector)
        for future, unit in self.futures.items():
            if future.status == "error":
                collector.lost(unit.trials, f"lost: {type(future.exception()).__name__}: {future.exception()}", cache)


class _Gang:
    """A unit whose oltp users are spread over `hosts` hosts (drivers.py): its task and the other
    drivers' tasks, submitted together once no other gang runs, each needing a "machine"."""

    def __init__(self, client: Client, request: dict[str, Any], index: int, unit: work.Unit, hosts: int) -> None:
        self.client, self.request, self.index, self.unit, self.hosts = client, request, index, unit, hosts
        self.owner: Future | None = None
        self.others: list[Future] = []  # the other drivers' tasks
        self._told = False

    def start(self, submit: Any) -> Future:
        gang = f"gang{self.index}"
        self.owner = submit(self.request, self.index, self.unit,
                            drivers={"scheduler": self.client.scheduler.address, "gang": gang, "hosts": self.hosts})
        request = {"run": self.request["run"], "plan": self.request["plan"], "source": self.request["source"],
                   "gang": gang}
        self.others = [self.client.submit(drivers.run_driver, {**request, "index": number},
                                          key=f"tdebench-{self.request['run']}-{gang}-driver{number}",
                                          resources={"machine": 1}, pure=False)
                       for number in range(1, self.hosts)]
        return self.owner

    def started(self) -> bool:
        return self.owner is not None

    def stranded(self, workers: int) -> bool:
        """Whether the gang can no longer run, fewer workers being left than its hosts (one died):
        then its tasks are cancelled (the drivers told to end), so they do not wait for ever."""
        if workers >= self.hosts or self.owner is None or self.owner.done():
            return False
        self.owner.cancel()
        self.ended()
        return True

    def ended(self) -> bool:
        """Whether the unit and its drivers are done; the drivers are told to end once the unit is."""
        if self.owner is None or not self.owner.done():
            return False
        if not self._told:
            self._told = True
            for number in range(1, self.hosts):
                Queue(drivers.inbox(self.request["run"], f"gang{self.index}", number), client=self.client).put(
                    json.dumps({"kind": "done", "job": -1}))
        return all(other.done() for other in self.others)


def started_utc() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
