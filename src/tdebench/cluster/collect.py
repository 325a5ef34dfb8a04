"""The client's side of a cluster run's records: each unit's messages stored as they arrive.

No Dask here (client.py hands the messages over), so it is tested with hand-made messages.
A message is an event of the run's topic: {"id", "host", "line"}, the line one that
`python -m tdebench.cluster.unit` wrote (its environment, or a batch of records).
"""

from __future__ import annotations

import json
import queue
from collections.abc import Iterable
from typing import Any

from tdebench.cluster import work
from tdebench.plan import TrialSpec
from tdebench.results import CipherSpeed, Record, TrialKey, TrialOutcome, Verdict, from_json
from tdebench.run.runner import Progress, RunSummary
from tdebench.store import ResultStore


class Collector:
    """Receives the units' messages and stores them: records appended and synced per batch,
    each host's environment added to environment.json, progress and the summary kept."""

    def __init__(self, store: ResultStore, environment: dict[str, Any], done: Iterable[TrialKey],
                 summary: RunSummary, total: int, specs: list[TrialSpec], progress: Progress,
                 ciphers: Iterable[CipherSpeed] = ()) -> None:
        self.store = store
        self.environment = environment
        self.ended = set(done)
        self.summary = summary
        self.total = total
        self.specs = {spec.key: spec for spec in specs}
        self.progress = progress
        self.seen: set[str] = set()
        self.queue: queue.Queue[dict[str, Any]] = queue.Queue()
        self._cipher_hosts = {speed.host for speed in ciphers if speed.host is not None}

    def expect(self, trials: Iterable[TrialSpec]) -> None:
        """More trials to come (an adaptive plan's next rounds): counted in the progress."""
        for spec in trials:
            self.specs[spec.key] = spec
            self.total += 1

    def measured_ciphers(self) -> set[str]:
        return set(self._cipher_hosts)

    def receive(self, event: tuple[float, dict[str, Any]]) -> None:
        """The topic's handler (on the client's event loop): hand the message to the main thread."""
        self.queue.put(event[1])

    def drain(self, timeout: float) -> None:
        """Store every message received, waiting up to `timeout` seconds for the first."""
        try:
            message = self.queue.get(timeout=timeout) if timeout > 0 else self.queue.get_nowait()
        except queue.Empty:
            return
        while True:
            self.take(message)
            try:
                message = self.queue.get_nowait()
            except queue.Empty:
                return

    def take(self, event: dict[str, Any]) -> None:
        """One message of a unit: its host's environment, or a batch of records."""
        if event["id"] in self.seen:
            return
        self.seen.add(event["id"])
        host, message = str(event["host"]), json.loads(event["line"])
        if "environment" in message:
            self._host(host, message["environment"])
        if "records" in message:
            self._store(host, [from_json(record) for record in message["records"]])

    def _host(self, host: str, environment: dict[str, Any]) -> None:
        hosts = self.environment.setdefault("hosts", {})
        if host not in hosts:
            hosts[host] = environment
            self.store.rewrite_environment(self.environment)

    def _store(self, host: str, records: list[Record]) -> None:
        """Append a batch unless it holds a trial already stored (a unit run again after its worker
        died re-sends nothing it had finished, but an event may arrive twice)."""
        outcomes = [record for record in records if isinstance(record, TrialOutcome)]
        if any(outcome.trial in self.ended for outcome in outcomes):
            return
        for record in records:
            self.store.append(record)
        self.store.sync()
        verdicts = {record.trial: record for record in records if isinstance(record, Verdict)}
        for outcome in outcomes:
            self._ended(outcome, verdicts.get(outcome.trial))
        self._cipher_hosts |= {host for record in records if isinstance(record, CipherSpeed)}

    def _ended(self, outcome: TrialOutcome, verdict: Verdict | None) -> None:
        self.ended.add(outcome.trial)
        self.summary.trials += 1
        if outcome.status != "ok":
            self.summary.failed.append(outcome)
        if verdict is not None and verdict.unexpected:
            self.summary.unexpected_verdicts.append(verdict)
        if outcome.trial in self.specs:
            self.progress.trial_started(self.summary.trials, self.total, self.specs[outcome.trial])
        self.progress.trial_finished(outcome, verdict)

    def lost(self, trials: Iterable[TrialSpec], why: str, cache: str) -> None:
        """Record as failed each of `trials` that has not ended: its unit failed for good."""
        for spec in trials:
            if spec.key not in self.ended:
                self._store("", list(work.lost_records(spec.key, None, why, cache)))
