"""`python -m tdebench.cluster.unit`: one unit of a cluster run in a process of its own.

The Dask task (worker.py) starts this process for each unit, as pyperf's runner starts a
worker: a crash here cannot take the worker down, signals work as in `tdebench run` (the
runner's Ctrl-C path: SIGINT or SIGTERM stops the trials, servers and mounts and removes the
workspaces), and the process dies with the worker (started under `setpriv --pdeathsig TERM`).

It reads the request (JSON) on stdin: the plan's text and source, the unit's trial keys, the
data and work directories, the key file's path on this machine (never a key), this host's
identity, whether to measure the raw cipher speeds and, for a unit whose oltp users are spread over
several hosts, where its other drivers listen (drivers.py). It writes JSON lines on stdout, and
nothing else (anything printed goes to stderr):
  {"environment": {...}}                     this machine's snapshot, once the engines are checked
  {"records": [...], "ended": [trial ids]}  at every sync: the records since the last one, and
                                             the trials whose `trial` record is among them
  {"error": "..."}                           the unit cannot run here (exit 2)
Exit codes: 0 done (trials may have failed: their records say so), 2 setup error, 130
interrupted, 1 the parent stopped reading.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from tdebench.run import setup as runsetup
from tdebench.engines.timeout import interrupt_on_signals
from tdebench.plan import Plan, PlanError, TrialSpec, parse_plan
from tdebench.results import Record, TrialKey, TrialOutcome, to_json
from tdebench.store import OutputError, ResultStore

if TYPE_CHECKING:
    from tdebench.cluster.drivers import Owner


class StreamedStore(ResultStore):
    """A store that sends its records to the parent process instead of a file: each `sync` (the
    runner's, after every trial) writes the records since the last one as one line, so the
    parent forwards a trial's records together once it has ended."""

    def __init__(self, directory: Path, out: IO[str]) -> None:
        super().__init__(directory)
        self._out = out
        self._buffer: list[Record] = []

    def append(self, record: Record) -> None:
        with self._lock:
            self._buffer.append(record)

    def sync(self) -> None:
        with self._lock:
            batch, self._buffer = self._buffer, []
            ended = [record.trial.id for record in batch if isinstance(record, TrialOutcome)]
            try:
                emit(self._out, {"records": [to_json(record) for record in batch], "ended": ended})
            except OSError as exc:  # the worker is gone: stop the run, cleaning up
                raise OutputError(f"the cluster worker stopped reading this unit's records: {exc}") from None


def emit(out: IO[str], message: dict[str, Any]) -> None:
    out.write(json.dumps(message, sort_keys=True) + "\n")
    out.flush()


def trial_specs(plan: Plan, keys: list[list[Any]]) -> list[TrialSpec]:
    """The unit's trials from their keys as sent: [engine, encryption, workload, scale, round, memory_mb]."""
    return [TrialSpec(TrialKey(str(e), str(c), str(w), float(s), int(r), None if m is None else int(m)),
                      plan.workload(str(w)))
            for e, c, w, s, r, m in keys]


@contextmanager
def other_drivers(request: dict[str, Any], interrupted: threading.Event) -> Iterator[Owner | None]:
    """A gang's unit (drivers.py): the other drivers, once every one has started; else None.
    Imported here: drivers.py brings in Dask's client (about a second and a half of the unit's
    start on a loaded 2-core machine), which only a gang's unit uses."""
    if not request.get("drivers"):
        yield None
        return
    from tdebench.cluster.drivers import Owner

    gang = request["drivers"]
    owner = Owner(str(gang["scheduler"]), str(request["run"]), str(gang["gang"]), int(gang["hosts"]))
    try:
        owner.joined(interrupted)
        yield owner
    finally:
        owner.close()


def run(request: dict[str, Any], out: IO[str]) -> int:
    """Check this machine, then run the unit's trials, streaming their records to `out`."""
    from tdebench.run.runner import Runner

    interrupted = threading.Event()
    runsetup.handle_interrupts(interrupted)
    work_dir = Path(request["work_dir"]) if request.get("work_dir") else None
    try:
        plan = parse_plan(request["plan"], request["source"])
        ready = runsetup.ready(plan, Path(request["key_file"]) if request.get("key_file") else None, work_dir)
    except (PlanError, runsetup.SetupError) as exc:
        emit(out, {"error": str(exc)})
        return 2
    emit(out, {"environment": runsetup.environment(ready.engines)})
    store = StreamedStore(runsetup.workspace_parent(work_dir), out)
    host = str(request["host"])
    try:
        with interrupt_on_signals():  # Ctrl-C also stops a long embedded query at once
            if request.get("ciphers"):
                runsetup.measure_cipher_speeds(store, plan, ready.engines, host)
                store.sync()
            data_dir = Path(request["data_dir"]) if request.get("data_dir") else runsetup.default_data_dir()
            with other_drivers(request, interrupted) as drivers:
                Runner(plan=plan, store=store, data_dir=data_dir, keys=ready.keys, workspace_parent=work_dir,
                       interrupted=interrupted, host=host, drivers=drivers).run_trials(
                    trial_specs(plan, request["trials"]))
    except OutputError:
        return 1
    except (KeyboardInterrupt, Exception) as exc:
        if not (isinstance(exc, KeyboardInterrupt) or interrupted.is_set()):
            raise
        return 130
    return 0


def main() -> int:
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # only records on the pipe: prints go to stderr
    return run(json.load(sys.stdin), out)


if __name__ == "__main__":
    sys.exit(main())
