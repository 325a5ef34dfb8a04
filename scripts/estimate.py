"""What a built-in plan too long to run here would take, estimated from the per-trial times of
the published run of the plan cut from it; what each such plan's `estimated_s` holds
(tests/unit/test_plan_timing.py checks that the two agree).

    .venv/bin/python scripts/estimate.py [oltp-long] [crud-large]

A trial's time is its share of its round: the trials of a round run side by side, taking turns
step by step (lockstep), so a round takes as long as its longest trial's span, and each of its
trials is charged that span divided by the round's trials. Those shares add up to the run's
rounds, the time a plan takes less its preparation (the data generated, the raw cipher measured).

oltp-long (docs/examples/oltp): each trial of the cut plan (`oltp`: one warehouse, a 3 s load test
after 1 s of ramp-up, a 4 s stress test after 1 s) is taken with what the long one adds: three
more warehouses loaded at the speed the trial loaded its one, two ramp-ups of 120 s instead of
1 s, the 100,000 transactions of its load test at the rate of the trial's own load test, and a
stress test of 1,800 s instead of 4 s; per encryption the median over its rounds, times the long
plan's three repetitions. The transactions' time assumes 4 users on 4 warehouses commit at the
rate of 2 on one (they may be faster or slower); the fixed windows, 2,040 s a trial, are most of it.

crud-large (docs/examples/crud and docs/examples/crud-servers): per engine and encryption, the
straight line through its per-trial times at the two largest tables the cut plans measured (500,000
rows embedded, 100,000 on MariaDB), read at each of crud-large's 1 to 5 million rows, times its
repetitions. A table that outgrows a cache on the way costs more per row than the line says, so
the estimate may fall short.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from tdebench.cli.plans import builtin_plans, duration
from tdebench.plan import load_plan
from tdebench.results import RunData, TrialKey
from tdebench.store import read_published

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples"


def published_run(name: str) -> RunData:
    """The published example `name`, read from its stored raw data."""
    return read_published(EXAMPLES / name)


def shares(run: RunData) -> dict[TrialKey, float]:
    """Each trial's share of its round: the round's span (its longest trial's) over its trials."""
    rounds: dict[tuple, list[tuple[TrialKey, float]]] = defaultdict(list)
    for outcome in run.trials:
        key = outcome.trial
        rounds[(key.engine, key.workload, key.scale, key.memory_mb, key.repetition)].append((key, outcome.elapsed_s))
    return {key: max(span for _, span in trials) / len(trials) for trials in rounds.values() for key, _ in trials}


def oltp_long() -> tuple[float, int]:
    """oltp-long's seconds and trials, from the oltp example's per-trial times."""
    cut, full = load_plan(builtin_plans()["oltp"]), load_plan(builtin_plans()["oltp-long"])
    short, long = dict(cut.workloads[0].options), dict(full.workloads[0].options)
    run = published_run("oltp")
    loaded: dict[TrialKey, float] = {}
    rate: dict[TrialKey, float] = {}
    for m in run.measurements:
        if m.test == "load" and m.step == "total" and not m.warmup:
            loaded[m.trial] = m.metrics["elapsed_s"]
        if m.test == "load" and m.step == "mix" and not m.warmup:
            rate[m.trial] = m.metrics["committed"] / m.metrics["elapsed_s"]
    added_warehouses = full.workloads[0].scales[0] / cut.workloads[0].scales[0] - 1
    per_config: dict[tuple, list[float]] = defaultdict(list)
    for key, share in shares(run).items():
        seconds = (share + added_warehouses * loaded[key]
                   + (long["rampup_s"] - short["rampup_s"]) + (long["transactions"] / rate[key] - short["duration_s"])
                   + (long["stress_rampup_s"] - short["stress_rampup_s"])
                   + (long["stress_duration_s"] - short["stress_duration_s"]))
        per_config[(key.engine, key.encryption)].append(seconds)
    total = sum(statistics.median(times) for times in per_config.values()) * full.repetitions
    return total, len(per_config) * full.repetitions


def crud_large() -> tuple[float, int]:
    """crud-large's seconds and trials, from the crud and crud-servers examples' per-trial times:
    per engine and encryption, the line through its median times at the two largest tables
    measured, read at each of crud-large's."""
    full = load_plan(builtin_plans()["crud-large"])
    measured: dict[tuple[str, str], dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for name in ("crud", "crud-servers"):
        for key, share in shares(published_run(name)).items():
            measured[(key.engine, key.encryption)][key.scale].append(share)
    total, trials = 0.0, 0
    for engine in full.engines:
        for encryption in engine.encryptions:  # the placebo among them
            by_rows = measured[(engine.name, encryption)]
            (small, at_small), (large, at_large) = sorted((rows, statistics.median(times))
                                                          for rows, times in by_rows.items())[-2:]
            per_row = (at_large - at_small) / (large - small)
            for rows in full.workloads[0].scales:
                total += (at_large + per_row * (rows - large)) * full.repetitions
                trials += full.repetitions
    return total, trials


ESTIMATES = {"oltp-long": oltp_long, "crud-large": crud_large}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("plans", nargs="*", help=f"the plans to estimate (default: all: {', '.join(ESTIMATES)})")
    names = parser.parse_args().plans or list(ESTIMATES)
    unknown = [name for name in names if name not in ESTIMATES]
    if unknown:
        parser.error(f"no estimate for {', '.join(unknown)}; the plans estimated: {', '.join(ESTIMATES)}")
    for name in names:
        seconds, trials = ESTIMATES[name]()
        print(f"{name}: about {duration(seconds)} for {trials} trials (estimated_s = {seconds:.0f}, "
              f"estimated_trials = {trials})")


if __name__ == "__main__":
    sys.exit(main())
