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

import logging
import socket
import uuid
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any

from distributed import Client, Event, LocalCluster, wait

from tdebench.cluster import work, worker
from tdebench.cluster.collect import Collector
from tdebench.plan import Plan, TrialSpec
from tdebench.results import TrialKey
from tdebench.runsetup import SetupError

CONNECT_TIMEOUT = "20s"
DRAIN_S = 0.5
"""How long the client waits for records before it looks at the units again."""
STOP_WAIT_S = 600.0
"""After Ctrl-C, how long the client waits for the running units to clean up on their workers."""


def key_fields(key: TrialKey) -> list[Any]:
    """A trial key as a unit's request carries it (unit.trial_specs reads it back)."""
    return [key.engine, key.encryption, key.workload, key.scale, key.repetition, key.memory_mb]


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
        self.client: Client | None = None

    def __enter__(self) -> "Cluster":
        if self.local_workers is not None:
            self._local = LocalCluster(n_workers=self.local_workers, threads_per_worker=1, processes=True,
                                       resources={"machine": 1}, host="127.0.0.1", dashboard_address=None,
                                       silence_logs=logging.ERROR)
            self.client = Client(self._local)
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
        if self.client is not None:
            self.client.close()
        if self._local is not None:
            self._local.close()

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
            options: dict[str, Any]) -> None:
        """Run `specs` unit by unit on the workers, storing their records through `collector`;
        KeyboardInterrupt (raised here by the CLI's handler) stops every unit first."""
        client = self._connected()
        run_id = uuid.uuid4().hex
        for host in collector.measured_ciphers():  # a resumed run keeps its hosts' cipher figures
            client.set_metadata([run_id, "ciphers", host], True)
        client.subscribe_topic(worker.topic(run_id), collector.receive)
        request = {"run": run_id, "plan": plan.text, "source": source, "cache": plan.cache,
                   "lockstep": plan.order == "lockstep", **options}
        futures = {client.submit(worker.run_unit, {**request, "trials": [key_fields(s.key) for s in unit.trials]},
                                 key=f"tdebench-{run_id}-{index}", resources={"machine": 1}, pure=False): unit
                   for index, unit in enumerate(work.units(specs))}
        try:
            while not all(future.done() for future in futures):
                collector.drain(DRAIN_S)
        except KeyboardInterrupt:
            Event(worker.stop_event(run_id), client=client).set()
            collector.progress.phase("interrupted: stopping the units on their workers, which clean up")
            try:  # the units not started return at once; the running ones once they have cleaned up
                wait(list(futures), timeout=STOP_WAIT_S)
            except TimeoutError:  # a worker that does not answer: its machine cleans up at its next run
                pass
            raise
        finally:
            for _, event in client.get_events(worker.topic(run_id)):  # any the live stream had not brought yet
                collector.take(event)
            collector.drain(0)
            client.unsubscribe_topic(worker.topic(run_id))
        for future, unit in futures.items():
            if future.status == "error":
                collector.lost(unit.trials, f"lost: {type(future.exception()).__name__}: {future.exception()}",
                               plan.cache)


def started_utc() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
