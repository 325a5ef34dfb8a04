"""`tdebench import`: a script kit's console logs into a run directory's results.jsonl.

The records are the kinds a real run writes (`measurement`, `trial`), so `tdebench report` and
`tdebench compare` read an imported run like any other; each measurement carries
`imported_from` (the client whose log it came from): client-side timing for sqlplus and
mysql, the server's own CPU and elapsed time for sqlcmd's STATISTICS TIME. No `verdict` is
written: tdebench scanned nothing (`tdebench verify` checks the files copied off the server),
and no answer is checked (`unchecked`; `failed` where the log shows an error).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tdebench.run import setup as runsetup
from tdebench.engines import BY_URL
from tdebench.kit import logs
from tdebench.kit.scripts import LOGS, KitPlan, KitTrial, Script, marker_text, pass_labels, read_kit
from tdebench.results import Measurement, TrialKey, TrialOutcome
from tdebench.store import ResultStore
from tdebench.workloads.tpch import schema, streams

WORKLOAD = "tpch"


@dataclass(frozen=True)
class Imported:
    """What an import wrote: trials, of which failed (with their errors), and measurements."""

    trials: int
    failed: tuple[str, ...]
    measurements: int


def _log(kit: Path, trial: KitTrial, repetition: int, name: str) -> Path:
    return kit / LOGS / trial.directory / f"r{repetition}" / name


def missing_logs(kit: Path, plan: KitPlan, trials: list[KitTrial]) -> list[Path]:
    """Every log run.sh writes that is not there (a throughput pass's .wall file is optional)."""
    return [path for trial in trials for repetition in range(1, plan.repetitions + 1) for script in trial.scripts
            if not (path := _log(kit, trial, repetition, script.log)).is_file()]


def import_kit(kit: Path, engine: str, out: Path) -> Imported:
    """Read the kit in `kit` and its logs, and write the run into `out` (prepared by the caller).
    ValueError when the kit is for another engine; FileNotFoundError naming a missing log."""
    description = read_kit(kit)
    if description["engine"] != engine:
        raise ValueError(f"{kit} is a kit for {description['engine']}, not {engine}: "
                         f"tdebench import {kit} --engine {description['engine']}")
    plan: KitPlan = description["plan"]
    trials: list[KitTrial] = description["trials"]
    tool: str = description["tool"]
    missing = missing_logs(kit, plan, trials)
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise FileNotFoundError(f"log {missing[0]} is missing{more}: run the kit's scripts with run.sh "
                                "(or keep its log layout, see the kit's README.md) before importing")
    store = ResultStore(out)
    store.start((kit / "plan.toml").read_text(), _environment(kit, engine, tool))
    failed, count = [], 0
    for repetition in range(1, plan.repetitions + 1):
        for trial in trials:
            key = TrialKey(engine, trial.encryption, WORKLOAD, trial.scale, repetition)
            records, errors, elapsed = _trial(kit, tool, plan, trial, key)
            for record in records:
                store.append(record)
            count += len(records)
            status = "failed" if errors else "ok"
            store.append(TrialOutcome(trial=key, status=status, cache="warm", cache_dropped=False,
                                      elapsed_s=round(elapsed, 6), error="; ".join(errors)[:2000]))
            if errors:
                failed.append(f"{key.id}: {errors[0]}")
    store.sync()
    return Imported(trials=plan.repetitions * len(trials), failed=tuple(failed), measurements=count)


def _environment(kit: Path, engine: str, tool: str) -> dict[str, Any]:
    """environment.json of an imported run: where it came from, not this machine (which ran nothing),
    and the facts of the engine by url it stands for (runsetup.engine_facts), which the report reads."""
    return {**runsetup.engine_facts({engine: BY_URL[engine]}),
            "imported": True, "imported_from": tool, "engine": engine, "kit": str(kit.resolve()),
            "timestamp_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "note": "timings from the client's console logs; this machine's environment was not the server's"}


def _trial(kit: Path, tool: str, plan: KitPlan, trial: KitTrial,
           key: TrialKey) -> tuple[list[Measurement], list[str], float]:
    """The measurements of one trial's logs, its errors, and the time its timed steps took."""
    errors: list[str] = []
    records: list[Measurement] = []
    for script in trial.scripts:  # untimed scripts: an error there fails the trial
        if script.kind in ("setup", "schema", "canaries"):
            errors += [f"{script.file}: {e}" for e in _untimed_errors(tool, _log(kit, trial, key.repetition,
                                                                                   script.log))]
    by_kind: dict[str, list[Script]] = {}
    for script in trial.scripts:
        by_kind.setdefault(script.kind, []).append(script)
    load = _steps(kit, tool, trial, key.repetition, by_kind["load"][0])
    records += _load(key, tool, load, errors)
    if "power" in by_kind:
        steps = _steps(kit, tool, trial, key.repetition, by_kind["power"][0])
        records += _queries(key, tool, "power", 0, pass_labels(plan), steps, errors, by_kind["power"][0].file)
    for label in pass_labels(plan) if "throughput" in by_kind else []:
        sums = []
        for script in (s for s in by_kind["throughput"] if s.pass_label == label):
            steps = _steps(kit, tool, trial, key.repetition, script)
            measured = _queries(key, tool, "throughput", script.stream, [label], steps, errors, script.file)
            records += measured
            sums.append(sum(m.metrics.get("elapsed_s", 0.0) for m in measured if m.step != "total"))
        wall = _log(kit, trial, key.repetition, f"06-throughput-{label}.wall")
        total = float(wall.read_text().strip()) if wall.is_file() else max(sums, default=0.0)
        records.append(_measurement(key, tool, "throughput", "total", {"elapsed_s": total}, None, label, None))
    elapsed = sum(m.metrics.get("elapsed_s", 0.0) for m in records if m.step not in ("total", "tables"))
    return records, errors, elapsed


def _steps(kit: Path, tool: str, trial: KitTrial, repetition: int, script: Script) -> dict[tuple, logs.Step]:
    path = _log(kit, trial, repetition, script.log)
    steps = logs.parse(tool, path.read_text(errors="replace"))
    if steps and all(step.elapsed_s is None for step in steps):
        raise ValueError(f"{path} has no timing after any step: run {tool} with its timing on (see the kit's "
                         "README.md)")
    return {step.key: step for step in steps}


def _untimed_errors(tool: str, path: Path) -> list[str]:
    """The errors a log of an untimed script shows (it has no markers: every line is read)."""
    text = path.read_text(errors="replace")
    fake = logs.parse(tool, f"{marker_text('setup', 0, '1', 'all')}\n{text}")
    return [fake[0].error] if fake and fake[0].error else []


def _metrics(step: logs.Step) -> dict[str, float]:
    metrics = {} if step.elapsed_s is None else {"elapsed_s": round(step.elapsed_s, 6)}
    if step.cpu_s is not None:
        metrics["cpu_s"] = round(step.cpu_s, 6)
    return metrics


def _measurement(key: TrialKey, tool: str, test: str, step: str, metrics: dict[str, float], stream: int | None,
                 label: str, answer: str | None) -> Measurement:
    return Measurement(trial=key, test=test, step=step, metrics=metrics, stream=stream,
                       warmup=label.startswith("w"), answer=answer, pass_number=int(label.lstrip("w")),
                       imported_from=tool)


def _problem(step: logs.Step | None, where: str, name: str) -> str:
    """Why a step failed, or "" when it did not."""
    if step is None:
        return f"{where}: {name} is not in the log (the script stopped before it)"
    if step.error:
        return f"{where}: {name}: {step.error}"
    if step.elapsed_s is None:
        return f"{where}: {name} has no timing in the log"
    return ""


def _load(key: TrialKey, tool: str, steps: dict[tuple, logs.Step], errors: list[str]) -> list[Measurement]:
    """The load as a run records it: each table's step, `tables`, `indexes` and `total`; none when
    a step failed."""
    parts = [*schema.TABLES, "indexes"]
    found = {name: steps.get(("load", 0, "1", name)) for name in parts}
    problems = [p for name, step in found.items() if (p := _problem(step, "03-load.sql", name))]
    errors += problems
    if problems:
        return []

    def summed(names: list[str]) -> dict[str, float]:
        total: dict[str, float] = {}
        for name in names:
            for metric, value in _metrics(found[name]).items():  # type: ignore[arg-type]
                total[metric] = round(total.get(metric, 0.0) + value, 6)
        return total
    return [*(_measurement(key, tool, "load", name, summed([name]), None, "1", None) for name in schema.TABLES),
            _measurement(key, tool, "load", "tables", summed(list(schema.TABLES)), None, "1", None),
            _measurement(key, tool, "load", "indexes", summed(["indexes"]), None, "1", None),
            _measurement(key, tool, "load", "total", summed(parts), None, "1", None)]


def _queries(key: TrialKey, tool: str, test: str, stream: int, labels: list[str], steps: dict[tuple, logs.Step],
             errors: list[str], where: str) -> list[Measurement]:
    """Every query of a stream's passes (failed where the log shows an error, no timing, or the
    script ended before it) and, for the power test, each pass's total when every query has one."""
    records = []
    for label in labels:
        total: dict[str, float] = {}
        complete = True
        for number in streams.stream_order(stream):
            step = steps.get((test, stream, label, f"q{number}"))
            problem = _problem(step, where, f"pass {label} q{number}")
            if problem:
                errors.append(problem)
                complete = False
            metrics = _metrics(step) if step is not None else {}
            records.append(_measurement(key, tool, test, f"q{number}", metrics, stream, label,
                                        "failed" if problem else "unchecked"))
            for metric, value in metrics.items():
                total[metric] = round(total.get(metric, 0.0) + value, 6)
        if test == "power" and complete:
            records.append(_measurement(key, tool, test, "total", total, None, label, None))
    return records
