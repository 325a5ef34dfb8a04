"""What a run needs ready before its first trial, and the records it starts with.

The checks a new or resumed run makes (every engine and encryption usable here, the workspace
directory fit for them, runs killed earlier cleaned up), the store's start (the plan and this
machine's environment), the raw cipher speeds and the cut of an interrupted run. They live
beside the runner, not in the CLI, so that whatever starts trials — `tdebench run` here, or a
cluster worker (cluster.py) — prepares them the same way. Each raises `SetupError` with the
message the user reads; the CLI only turns it into exit code 2.
"""

from __future__ import annotations

import os
import signal
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tdebench.errors import InputError
from tdebench import runstate
from tdebench.engines import Engine, get_engine, server
from tdebench.keys import KeyFileError, KeySource
from tdebench.plan import Plan, planned, to_run
from tdebench.results import ENCRYPTIONS, ENGINE_FACTS, Resumed, RunData
from tdebench.store import RESULTS, Cut, ResultStore, keep_complete, read_run


class SetupError(InputError):
    """A run that cannot start here (a key file, an engine, the workspace directory): the
    message says what and how to fix it."""


@dataclass(frozen=True)
class Ready:
    """A run's key source and engines, once every one can run here; `cleaned` lists what runs
    killed earlier had left in the workspace directory and was cleaned up."""

    keys: KeySource
    engines: dict[str, Engine]
    cleaned: list[runstate.Cleaned]


def usable_engines(plan: Plan) -> dict[str, Engine]:
    """The plan's engines by name; SetupError naming the first encryption that cannot run here."""
    engines = {}
    for choice in plan.engines:
        engine = get_engine(choice.name, remote=choice.remote)  # memory_mb does not change what can run
        for name in choice.encryptions:
            available = engine.encryption_availability(engine.encryption(name))
            if not available.usable:
                raise SetupError(f"{choice.name} {name} cannot run here: {available.reason}\n  fix: {available.fix}")
        engines[choice.name] = engine
    return engines


def default_data_dir() -> Path:
    """The cache of generated benchmark data when --data-dir is not given (each machine its own)."""
    return Path.home() / ".cache" / "tdebench" / "data"


def check_data_dir(data_dir: Path) -> None:
    """SetupError if the data cache cannot be used: a file, or a directory that cannot be made
    or written. Made here if missing, as preparing the data would."""
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise SetupError(f"--data-dir {data_dir} is a file, not a directory: name a directory for the "
                         "generated benchmark data") from None
    except OSError as exc:
        raise SetupError(f"--data-dir {data_dir} cannot be created: {exc.strerror or exc}") from None
    if not os.access(data_dir, os.W_OK | os.X_OK):
        raise SetupError(f"--data-dir {data_dir} is not writable by this user: name a directory it may write")


def handle_interrupts(interrupted: threading.Event, again: Callable[[], None] = lambda: None) -> None:
    """Ctrl-C (SIGINT) and SIGTERM set `interrupted` and raise KeyboardInterrupt in the main
    thread, where the run cleans up, its servers given seconds, not a clean shutdown
    (`server.hurry`); a second one only calls `again` (it must not break off the cleanup). Call
    from the main thread, as a run begins: the hurry of a run interrupted before it in this
    process ends here."""

    def interrupt(signum: int, frame: object) -> None:
        if interrupted.is_set():
            again()
            return
        interrupted.set()
        server.hurry()
        raise KeyboardInterrupt

    server.calm()
    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)


def workspace_parent(work_dir: Path | None) -> Path:
    """Where trial workspaces go: --work-dir, or the system's temporary directory."""
    return work_dir or Path(tempfile.gettempdir())


def check_workspace(engines: Mapping[str, Engine], work_dir: Path | None) -> None:
    """SetupError if `work_dir` is not a directory, or an engine cannot keep its workspace there."""
    if work_dir is not None and not work_dir.is_dir():
        raise SetupError(f"--work-dir {work_dir} is not an existing directory")
    for engine in engines.values():
        problem = engine.workspace_problem(workspace_parent(work_dir))
        if problem:
            raise SetupError(problem)


def clean_dead_runs(work_dir: Path | None) -> list[runstate.Cleaned]:
    """Clean up after runs killed earlier in the workspace directory (never a running one)."""
    return runstate.clean_dead_runs(workspace_parent(work_dir))


def ready(plan: Plan, key_file: Path | None, work_dir: Path | None, owned: bool = False) -> Ready:
    """The key source and the plan's engines, once every one can run here in `work_dir` (and every
    server reached by url has a target of nothing but tdebench's, unless `owned`: the user's
    --i-own-this-database), with what killed runs left there cleaned up."""
    try:
        keys = KeySource(key_file)
    except KeyFileError as exc:
        raise SetupError(str(exc)) from None
    engines = usable_engines(plan)
    for engine in engines.values():
        problem = None if owned else engine.target_problem()
        if problem:
            raise SetupError(problem)
    check_workspace(engines, work_dir)
    return Ready(keys, engines, clean_dead_runs(work_dir))


def engine_versions(engines: Mapping[str, Engine]) -> dict[str, str]:
    return {name: engine.version() for name, engine in engines.items()}


def engine_facts(engines: Mapping[str, Engine | type[Engine]]) -> dict[str, Any]:
    """What a run records of its engines for the report, which reads them from the run alone:
    each engine's facts (results.ENGINE_FACTS) and its encryptions (results.ENCRYPTIONS: each
    one's cipher, page size and key handling)."""
    return {ENGINE_FACTS: {name: asdict(engine.facts()) for name, engine in engines.items()},
            ENCRYPTIONS: {name: {encryption: asdict(facts) for encryption, facts in engine.encryption_facts().items()}
                          for name, engine in engines.items()}}


def environment(engines: Mapping[str, Engine]) -> dict[str, Any]:
    """This machine's environment snapshot with the engines' versions and facts (`engine_facts`)."""
    from tdebench.measure.environment import snapshot

    return {**snapshot(engine_versions(engines)), **engine_facts(engines)}


def measure_cipher_speeds(store: ResultStore, plan: Plan, engines: Mapping[str, Engine],
                          host: str | None = None) -> None:
    """Store this machine's raw throughput of every cipher the plan's encryptions use (`host`:
    a cluster worker's identity, stored with each figure)."""
    from tdebench.measure.ciphers import measure_ciphers, used_by

    used = [engines[choice.name].encryption(name).cipher for choice in plan.engines for name in choice.encryptions]
    for speed in measure_ciphers(ciphers=used_by(used)):  # `tdebench ciphers` measures them all
        store.append(replace(speed, host=host))


KEY_SOURCE = "key_source"
"""environment.json's record of the run's key source (KeySource.describe)."""


def _key_source_text(source: Mapping[str, Any]) -> str:
    if source.get("kind") == "key file":
        return f"a key file (fingerprint {source.get('fingerprint')})"
    return "random keys (no --key-file)"


def check_resume_keys(stored: RunData, derived: bool, directory: Path,
                      source: Mapping[str, Any] | None = None) -> None:
    """SetupError if the resumed run's key source (`source`, KeySource.describe; `derived`:
    whether it has a key file) is not the one the run started with, naming both: a mix of
    random and derived keys, or keys of two files, could not be repeated with either."""
    first = stored.environment.get(KEY_SOURCE)
    if isinstance(first, dict) and source is not None and dict(first) != dict(source):
        raise SetupError(f"--resume: the run in {directory} started with {_key_source_text(first)}; this resume "
                         f"has {_key_source_text(source)}: resume it with the run's own key source")
    if not derived and any(outcome.key_derived for outcome in stored.trials):
        raise SetupError(f"--resume: the trials of {directory} so far used keys derived from a key file; pass that "
                         "file again with --key-file, so the rest are derived from it too (without it, they would "
                         "get random keys and the run could not be repeated with the file)")


@dataclass(frozen=True)
class ResumeCut:
    """What `cut_for_resume` did and what is left: `total` trials planned, `left` to run,
    `changed` what of the environment differs from the run's start."""

    cut: Cut
    total: int
    left: int
    changed: tuple[str, ...]
    more_rounds: bool  # an adaptive run that had not stopped adding rounds yet


def cut_for_resume(directory: Path, plan: Plan, now_environment: dict[str, Any],
                   retry_failed: bool = False) -> ResumeCut:
    """Cut the locked run in `directory` down to its complete trials, store a `resume` record
    (with what of `now_environment` differs from the run's start) and say what is left to run.
    OutputError if the run directory cannot be written."""
    from tdebench.measure.environment import differences

    results = directory / RESULTS
    last_write = results.stat().st_mtime  # about when the run was interrupted
    stored = read_run(directory)
    cut = keep_complete(directory, retry_failed)
    now = datetime.now(timezone.utc)
    since = stored.resumes[-1].at_utc if stored.resumes else stored.environment.get("timestamp_utc")
    before_s = stored.resumes[-1].elapsed_before_s if stored.resumes else 0.0
    try:  # this part of the run: from its start (or the last resume) to its last record
        before_s += max(0.0, last_write - datetime.fromisoformat(str(since)).timestamp())
    except ValueError:  # an environment.json without its time: the budget counts from here
        pass
    changed = tuple(differences(stored.environment, now_environment))
    store = ResultStore(directory)
    store.append(Resumed(kept=cut.kept, dropped=cut.dropped, torn_line=cut.torn_line,
                         at_utc=now.isoformat(timespec="seconds"), elapsed_before_s=round(before_s, 1),
                         changed=changed, retried=cut.retried))
    store.sync()
    done = stored.complete_trials()
    return ResumeCut(cut=cut, total=len(planned(plan, done)), left=len(to_run(plan, done)), changed=changed,
                     more_rounds=plan.adaptive and stored.stopping is None)
