"""What runs on a Dask worker: the unit task, and the check of the worker before a run.

`run_unit` is one Dask task per unit. It starts `python -m tdebench.cluster.unit` (unit.py),
forwards each line it writes to the client as an event of the run's topic (Dask's own
`log_event`: the scheduler keeps them, so the client can read back any it missed), and keeps two
facts on the scheduler (`Client.set_metadata`, under the run's id) that outlive a worker: which
trials have ended, and how often each was in flight on a worker. When a worker dies, the
scheduler gives its task to another worker; that task skips the ended trials, runs the others,
and records a trial that was in flight twice as failed instead of running it a third time
(`work.LOST_LIMIT`). The client stops every unit by setting the run's Dask `Event`: the task
then sends SIGINT to its process, which cleans up as `tdebench run` does on Ctrl-C.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

from distributed import Event, get_client, get_worker

from tdebench import runstate
from tdebench.run import setup as runsetup
from tdebench.cluster import work
from tdebench.plan import parse_plan
from tdebench.results import TrialKey, to_json

STOP_POLL_S = 0.5
"""How often a running unit looks whether the client asked every unit to stop."""


def topic(run_id: str) -> str:
    """The event topic a run's records travel under."""
    return f"tdebench-{run_id}"


def stop_event(run_id: str) -> str:
    """The name of the Dask Event that asks every unit of a run to stop."""
    return f"tdebench-stop-{run_id}"


def check(plan_text: str, source: str, key_file: str | None, work_dir: str | None,
          dask_worker: Any = None) -> dict[str, Any]:
    """Run on every worker before the first unit (`Client.run`, which passes `dask_worker`):
    whether this machine can run the plan (as `tdebench run` checks it; runs killed earlier
    cleaned up), and its environment."""
    host = work.this_host(dask_worker.name, dask_worker.address)
    try:
        plan = parse_plan(plan_text, source)
        ready = runsetup.ready(plan, Path(key_file) if key_file else None, Path(work_dir) if work_dir else None)
    except (ValueError, runsetup.SetupError) as exc:
        return {"host": host, "problem": str(exc), "environment": None}
    return {"host": host, "problem": "", "environment": runsetup.environment(ready.engines)}


def clean(work_dir: str | None, dask_worker: Any = None) -> dict[str, Any]:
    """`tdebench clean --cluster` on every worker (`Client.run`): what killed runs left in this
    machine's work directory cleaned up, as `tdebench clean` does there (never a running run)."""
    cleaned = runsetup.clean_dead_runs(Path(work_dir) if work_dir else None)
    return {"host": work.this_host(dask_worker.name, dask_worker.address),
            "directory": str(runsetup.workspace_parent(Path(work_dir) if work_dir else None)),
            "cleaned": [str(one) for one in cleaned], "removed": all(one.removed for one in cleaned)}


class _Trials:
    """The run's facts about trials on the scheduler: which ended, how often each was in flight."""

    def __init__(self, run_id: str) -> None:
        self.client = get_client()
        self.run_id = run_id
        self.counted: set[str] = set()  # in flight in this attempt, already counted

    def ended(self) -> set[str]:
        return set(self.client.get_metadata([self.run_id, "ended"], default={}))

    def starts(self) -> dict[str, int]:
        return dict(self.client.get_metadata([self.run_id, "starts"], default={}))

    def end(self, trial_ids: list[str]) -> None:
        for trial_id in trial_ids:
            self.client.set_metadata([self.run_id, "ended", trial_id], True)

    def start(self, trial_ids: list[str]) -> None:
        """Count the trials now in flight (each once per attempt)."""
        starts = self.starts()
        for trial_id in trial_ids:
            if trial_id not in self.counted:
                self.counted.add(trial_id)
                self.client.set_metadata([self.run_id, "starts", trial_id], starts.get(trial_id, 0) + 1)


def run_unit(request: dict[str, Any]) -> dict[str, Any]:
    """The Dask task of one unit: run its trials that have not ended in a process of their own,
    sending their records to the client; returns this host and what was left unrun."""
    me = get_worker()
    host = work.this_host(me.name, me.address)
    run_id = str(request["run"])
    stop = Event(stop_event(run_id), client=get_client())
    if stop.is_set():
        return {"host": host, "stopped": True}
    trials, sender = _Trials(run_id), _Sender(run_id, host)
    keys = {TrialKey(*key).id: key for key in request["trials"]}
    ended, starts = trials.ended(), trials.starts()
    pending = [trial_id for trial_id in keys if trial_id not in ended]
    lost = [trial_id for trial_id in pending if starts.get(trial_id, 0) >= work.LOST_LIMIT]
    for trial_id in lost:  # in flight on two workers that died: not a third time
        why = (f"lost: the worker running it died {starts[trial_id]} times (the last on or after a move "
               f"to {host}); not run again")
        records = work.lost_records(TrialKey(*keys[trial_id]), host, why, str(request["cache"]))
        sender.send({"records": [to_json(r) for r in records], "ended": [trial_id]})
        trials.end([trial_id])
    pending = [trial_id for trial_id in pending if trial_id not in lost]
    if not pending:
        return {"host": host, "stopped": False}
    ciphers = not trials.client.get_metadata([run_id, "ciphers", host], default=False)
    trials.client.set_metadata([run_id, "ciphers", host], True)  # each host measures them once per run
    return _run_process({**request, "ciphers": ciphers}, [keys[trial_id] for trial_id in pending], pending, trials,
                        stop, sender)


class _Sender:
    """Sends a unit's messages as events of the run's topic, each with an id of its own (this
    attempt's, and its number), so the client stores each once however often it reads it."""

    def __init__(self, run_id: str, host: str) -> None:
        self.worker = get_worker()
        self.topic, self.host = topic(run_id), host
        self.attempt, self.sent = uuid.uuid4().hex, 0

    def send(self, message: dict[str, Any]) -> None:
        self.sent += 1
        self.worker.log_event(self.topic, {"id": f"{self.attempt}/{self.sent}", "host": self.host,
                                           "line": json.dumps(message, sort_keys=True)})


def _run_process(request: dict[str, Any], keys: list[Any], pending: list[str], trials: _Trials, stop: Event,
                 sender: _Sender) -> dict[str, Any]:
    """Run the pending trials in `python -m tdebench.cluster.unit`, forwarding what it writes."""
    host, lockstep = sender.host, bool(request["lockstep"])
    process = subprocess.Popen([*runstate.PARENT_DEATH, sys.executable, "-m", "tdebench.cluster.unit"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps({**request, "trials": keys, "host": host}))
    process.stdin.close()
    watcher = threading.Thread(target=_stop_when_asked, args=(process, stop), daemon=True)
    watcher.start()
    trials.start(work.in_flight(pending, lockstep))
    error = ""
    for line in process.stdout:
        message = json.loads(line)
        if "error" in message:
            error = str(message["error"])
            continue
        sender.send(message)
        ended = [str(trial_id) for trial_id in message.get("ended", ())]
        trials.end(ended)
        pending = [trial_id for trial_id in pending if trial_id not in ended]
        trials.start(work.in_flight(pending, lockstep))
    code = process.wait()
    watcher.join()
    if code == 2:
        raise RuntimeError(f"{host} cannot run this unit: {error}")
    if code not in (0, 130):
        raise RuntimeError(f"the unit's process on {host} ended with exit code {code} (its stderr is in the "
                           "worker's log)")
    return {"host": host, "stopped": code == 130}


def _stop_when_asked(process: subprocess.Popen[str], stop: Event) -> None:
    """SIGINT the unit's process once the client asks every unit to stop (it cleans up and exits)."""
    while process.poll() is None:
        try:
            asked = stop.wait(timeout=STOP_POLL_S)
        except Exception:  # noqa: BLE001 - the scheduler is gone: the unit ends with its worker
            asked = False
        if asked:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
            return
