"""Does loading a table in parts make a lockstep load as precise as a lockstep power test?

In lockstep the configurations of a round take turns step by step. A power test's step is one
query (milliseconds to a second), but a load's was a whole table: lineitem, 60% of the load, in
one statement of 4 to 6 seconds at SF 0.1. Drift of this machine over those seconds falls on one
configuration and not the others, so the io-bound run of 2026-11-27 had load floors of ±5.7% to
±8.5% where its power tests' were ±1.8% to ±5.5%. With TPC-H's
`load_part_rows` a table is loaded part by part and the indexes statement by statement, each a
step of its own, so the configurations take turns every fraction of a second.

An A/A comparison (or, with --encryption, B encrypted against A), side by side in one run: every
round loads two fresh databases A and B side by side in turn (the runner's lockstep: the first to
go alternates every turn), once with each table whole and once in parts of --part-rows rows, the
two grains in an order shuffled per round, so drift of the machine hits both alike. Per grain it
prints the median load (the `total` figure: tables and indexes), the spread of ln(A/B) over the
rounds (about the round CV in %), the placebo's 95% CI half-width for this many rounds (the
report's noise floor) and the rounds a ±3% floor would need at that spread; then the same for the
lineitem step alone.

    .venv/bin/python bench/load_parts.py [--engine sqlite|duckdb|mariadb|postgres] [--scale 0.1]
        [--memory-mb 8] [--rounds 8] [--part-rows 50000] [--encryption aes-256-cbc]

Tiny, for CI: --scale 0.01 --rounds 2 --part-rows 20000.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
from pathlib import Path

from cold_eviction import TARGET_PCT, ab_columns, against_text, load_averages, side_by_side
from harness_overhead import data_arguments, tpch_context

from tdebench.engines import NONE, get_engine
from tdebench.keys import KeySource
from tdebench.store import ResultStore, read_run
from tdebench.workloads.tpch import TpchWorkload

STEPS = ("total", "lineitem")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=("sqlite", "duckdb", "mariadb", "postgres"), default="sqlite")
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--memory-mb", type=int, default=8, help="the engine's cache (the io-bound plan's by default)")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--part-rows", type=int, default=50_000, help="rows per part of the parted load")
    parser.add_argument("--encryption", default="none",
                        help="B's encryption (default none: the placebo); A is always unencrypted")
    args = data_arguments(parser).parse_args()
    grains = {"whole": 0, "parts": args.part_rows}
    started_load = os.getloadavg()

    engine = get_engine(args.engine, memory_mb=args.memory_mb)
    workload = TpchWorkload()
    workload.prepare(args.scale, args.data_dir, args.seed)
    keys = KeySource()
    loaded: dict[int, tuple[str, str]] = {}  # repetition -> (grain, A or B)
    with tempfile.TemporaryDirectory(prefix="tdebench-bench-") as tmp:
        root = Path(tmp)
        root.chmod(0o711)  # a server's own user enters its workspace below
        store = ResultStore(root / "out")
        store.start("name = 'bench'\n", {})
        rng = random.Random(1)
        repetition = 0
        for _ in range(args.rounds):
            for grain in rng.sample(list(grains), len(grains)):
                contexts = []
                for name in rng.sample(["A", "B"], 2):
                    repetition += 1
                    workspace = root / f"db{repetition}"
                    workspace.mkdir()
                    workspace.chmod(0o711)
                    encryption = engine.encryption(args.encryption) if name == "B" else NONE
                    key = None if encryption.is_baseline else keys.key_for(f"{name}{repetition}")
                    database = engine.provision(workspace, encryption, key)
                    database.create()
                    contexts.append(tpch_context(engine, database, store, args.scale, args.data_dir, args.seed,
                                                 repetition, options={"load_part_rows": grains[grain]}))
                    loaded[repetition] = (grain, name)
                try:
                    side_by_side(contexts, workload.load_steps)
                finally:
                    for ctx in contexts:
                        ctx.database.close()
                        shutil.rmtree(ctx.database.workspace, ignore_errors=True)
        run = read_run(root / "out")

    seconds: dict[tuple[str, str, str], list[float]] = {}  # (step, grain, name) -> the rounds' load times
    for m in run.measurements:
        if m.test == "load" and m.step in STEPS:
            grain, name = loaded[m.trial.repetition]
            seconds.setdefault((m.step, grain, name), []).append(m.metrics["elapsed_s"])

    encrypted = args.encryption != "none"
    print(f"{against_text(args.encryption)}; {args.engine} {args.memory_mb} MB cache, TPC-H SF {args.scale:g}, the "
          f"load side by side, {args.rounds} rounds, parts of {args.part_rows:,} rows; {load_averages(started_load)}")
    print(f"{'step':8s}  {'grain':5s}  {'median (s)':>10s}  {'spread of ln(A/B)':>17s}  {'placebo floor':>13s}  "
          f"rounds for ±{TARGET_PCT:g}%" + ("  B's cost over A [95% CI]" if encrypted else ""))
    for step in STEPS:
        for grain in grains:
            a, b = seconds[(step, grain, "A")], seconds[(step, grain, "B")]
            print(f"{step:8s}  {grain:5s}  {statistics.median(a + b):10.3f}  " + ab_columns(a, b, encrypted))


if __name__ == "__main__":
    main()
