"""The work of a cluster run: units, the trials in flight, hosts (pure: no Dask here).

A unit is one round of one comparison group (`plan.group_of`: every encryption of an engine,
memory, workload and scale, its baseline and placebo included, in one round). One worker runs
a whole unit, so each round's overheads are measured on one host, where the machine's noise of
the moment falls on baseline and encryption alike, as in a local run.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Any

from tdebench.engines import get_engine
from tdebench.plan import Plan, TrialSpec, group_of
from tdebench.results import TrialKey, TrialOutcome, Verdict

LOST_LIMIT = 2
"""How often a trial may be in flight on a worker that died: rescheduled once, then failed."""


@dataclass(frozen=True)
class Unit:
    """One round of one comparison group, its trials in the order they run."""

    trials: tuple[TrialSpec, ...]

    @property
    def id(self) -> str:
        """E.g. "duckdb/tpch/sf0.01/r2" ("duckdb/tpch/sf0.01/m64/r2" with memory_mb)."""
        key = self.trials[0].key
        memory = f"/m{key.memory_mb}" if key.memory_mb is not None else ""
        return f"{key.engine}/{key.workload}/sf{key.scale:g}{memory}/r{key.repetition}"


def key_fields(key: TrialKey) -> list[Any]:
    """A trial key as a unit's request carries it (unit.trial_specs reads it back)."""
    return [key.engine, key.encryption, key.workload, key.scale, key.repetition, key.memory_mb]


def units(trials: list[TrialSpec]) -> list[Unit]:
    """The trials to run, cut into units: each comparison group's trials of a round together,
    in the order given (a group's first trial decides where its unit comes)."""
    groups: dict[tuple[str, int | None, str, float, int], list[TrialSpec]] = {}
    for spec in trials:
        groups.setdefault(group_of(spec.key), []).append(spec)
    return [Unit(tuple(group)) for group in groups.values()]


def in_flight(pending: list[str], lockstep: bool) -> list[str]:
    """Which of a unit's pending trials (ids, in order) a worker is running: a lockstep group's
    all at once (side by side), else the first, the others waiting their turn."""
    return list(pending) if lockstep else list(pending[:1])


def host_identity(hostname: str, worker_name: Any, worker_address: str) -> str:
    """A host as a cluster run records it: its hostname, and the worker's name when the worker
    was given one (`dask worker --name`, a LocalCluster's 0, 1, …), so several workers on one
    machine (testing) stay apart; a worker named by its address only is its machine."""
    name = str(worker_name) if worker_name is not None else ""
    return hostname if not name or name == worker_address else f"{hostname}/{name}"


def this_host(worker_name: Any, worker_address: str) -> str:
    return host_identity(socket.gethostname(), worker_name, worker_address)


def lost_records(key: TrialKey, host: str | None, why: str, cache: str) -> list[TrialOutcome | Verdict]:
    """What a trial that could not be run to its end leaves: a failed outcome and an error
    verdict (nothing is claimed about its files), so the run counts it as complete and failed."""
    encryption = get_engine(key.engine).encryption(key.encryption)
    expected = "plaintext" if encryption.is_baseline else "encrypted"
    verdict = Verdict(trial=key, verdict="error", expected=expected, files_scanned=0, bytes_scanned=0,
                      first_hit=None, detail=why)
    return [verdict, TrialOutcome(trial=key, status="failed", cache=cache, cache_dropped=False, elapsed_s=0.0,
                                  error=why, host=host)]


def cluster_environment(hosts: dict[str, dict[str, Any]], address: str, started_utc: str) -> dict[str, Any]:
    """A cluster run's environment.json: what every host has in common at the top (so a report
    reads it as a local run's), the cluster's address and start, and each host's own snapshot
    under `hosts`."""
    snapshots = list(hosts.values())
    common = {key: value for key, value in (snapshots[0].items() if snapshots else ())
              if all(other.get(key) == value for other in snapshots[1:])}
    return {**common, "timestamp_utc": started_utc, "cluster": address, "hosts": dict(sorted(hosts.items()))}


LOCAL = "local:"
MOST_LOCAL_WORKERS = 64


def parse_address(address: str) -> int | None:
    """`--cluster`: the number of local workers of "local:N", or None for a scheduler's address
    ("tcp://HOST:8786", "tls://…"); ValueError naming the valid forms otherwise."""
    if address.startswith(LOCAL):
        count = address[len(LOCAL):]
        if not count.isdigit() or not 1 <= int(count) <= MOST_LOCAL_WORKERS:
            raise ValueError(f"--cluster {address}: give local:N with N from 1 to {MOST_LOCAL_WORKERS} workers")
        return int(count)
    scheme, sep, rest = address.partition("://")
    if not sep or scheme not in ("tcp", "tls", "inproc", "ucx") or not rest:
        raise ValueError(f"--cluster {address}: give a Dask scheduler's address, e.g. tcp://HOST:8786, "
                         f"or local:N (N local workers, for testing)")
    return None


def cluster_problem(plan: Plan) -> str:
    """Why `plan` cannot run on a cluster, or "": rounds must be rounds (each one a unit)."""
    if plan.order == "sequential":
        return ("--cluster runs each round of a comparison group on one host, so the rounds are paired within "
                'a host: the plan\'s order must be "lockstep" or "interleaved", not "sequential"')
    return ""
