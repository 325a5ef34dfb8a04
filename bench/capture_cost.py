"""What does the transient capture (capture.py) add to the power test it watches?

Side by side in one run, on the same DuckDB database and connection: the TPC-H power test as
the runner times it (tdebench's Recorder), once with a `Capture` watching the database's
workspace (inotify, /proc sweeps every --every-s, scans of what it holds) and once without.
The two alternate for --rounds rounds (which goes first alternates too), so drift of this noisy
machine hits both alike. With --memory-mb DuckDB spills to its temp directory, which gives the
capture files to hold and scan. Printed: the measured ratio (the sum of the 22 recorded query
times with capture / without) as a ratio of medians and as the median of each round's own ratio
(paired), each with its CI, what the capture scanned, and the CPU time its watch used as a share
of the power tests it watched (what every run reports per trial: verdicts.csv's capture_cpu_s).

    .venv/bin/python bench/capture_cost.py [--scale 0.1] [--rounds 11] [--memory-mb M] [--every-s 0.5]

(DuckDB 1.5.5 at SF 0.1 runs out of memory with --memory-mb 64 and does not spill from 80 on, so
the capture has nothing to scan there: what this measures is its watch and its /proc sweeps.)

Tiny, for CI: --scale 0.01 --rounds 2.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from harness_overhead import data_arguments, loaded_duckdb, print_ratios

from tdebench.capture import CAPTURE_EVERY_S, Capture
from tdebench.store import read_run

CANARY = "TDEBENCH-CANARY-" + "be" * 12


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--memory-mb", type=int, default=None, help="DuckDB's memory_limit: below the queries' need, "
                                                                     "they spill")
    parser.add_argument("--every-s", type=float, default=CAPTURE_EVERY_S, help="the capture's cadence")
    args = data_arguments(parser).parse_args()
    started_load = os.getloadavg()

    with tempfile.TemporaryDirectory(prefix="tdebench-bench-") as tmp:
        root = Path(tmp)
        workload, ctx, conn = loaded_duckdb(root, args.scale, args.data_dir, args.seed, args.memory_mb)
        database = ctx.database
        workload.run("power", ctx, conn, warmup=True)  # warm the path once
        order: list[str] = []
        scans = scanned = 0
        watch_cpu_s = 0.0
        for number in range(args.rounds):
            for captured in (True, False) if number % 2 == 0 else (False, True):  # neither always goes first
                capture = None
                if captured:
                    capture = Capture(database.capture_dirs(), database.workspace, [CANARY], [], None,
                                      database.engine_processes, database.file_kind, args.every_s).start()
                try:
                    workload.run("power", ctx, conn, warmup=False)
                finally:
                    if capture is not None:
                        capture.stop()
                        scans += capture.stats.scans
                        scanned += capture.stats.scanned_bytes
                        watch_cpu_s += capture.stats.cpu_s
                order.append("with capture" if captured else "without")
        recorded = [m for m in read_run(root / "out").measurements if m.test == "power" and m.step == "total"
                    and not m.warmup]
        conn.close()
        database.close()

    times: dict[str, list[float]] = {"with capture": [], "without": []}
    for name, m in zip(order, recorded):
        times[name].append(m.metrics["elapsed_s"])
    memory = f"memory_limit {args.memory_mb} MiB" if args.memory_mb else "no memory_limit"
    print(f"TPC-H power test on DuckDB, scale {args.scale:g}, {memory}, capture every {args.every_s:g} s, "
          f"{args.rounds} interleaved rounds; load average {' / '.join(f'{v:.2f}' for v in started_load)} at start, "
          f"{' / '.join(f'{v:.2f}' for v in os.getloadavg())} at end")
    print(f"the capture scanned {scans} times, {scanned / 2**20:,.1f} MiB in all ({scanned / 2**20 / args.rounds:,.1f} "
          "MiB per power test)")
    captured_s = sum(times["with capture"])
    print(f"the capture's watch used {watch_cpu_s:.3f} s of CPU (its thread's clock, as verdicts.csv's capture_cpu_s): "
          f"{100 * watch_cpu_s / captured_s:.2f}% of the {captured_s:.1f} s the power tests it watched took")
    print_ratios("measured", times, "with capture", "without")
    print("target: ratio under 1.02")


if __name__ == "__main__":
    main()
