"""Is the oltp driver the bottleneck?

tdebench's virtual users are threads of the tdebench process, so their Python work shares one
interpreter (the GIL). If the driver were the bottleneck, adding users would not add
throughput while the server still had CPU to spare. This runs the workload's load test on one
freshly loaded server database (PostgreSQL by default, or MariaDB) with 1, 2, 4, … virtual
users at the workload's default settings (stored procedures, no think time) and prints, side
by side from this one run:
  - TPM and NOPM (committed transactions and New-Orders per minute of the window);
  - the server's CPU time (its whole process tree) and the driver's (the tdebench process:
    every virtual user, the input generator, the histograms, the clock);
  - the driver's share of all the CPU the benchmark used, its CPU per transaction, and how
    busy it kept one core (the most a GIL-bound driver can use);
  - the machine's CPU used by both together, of all its cores, and how busy its busiest disk
    was (over the whole run of each step: ramp-up, window and checks), which shows where the
    server spends the time its CPU does not.

    .venv/bin/python bench/oltp_driver.py [--engine postgres|mariadb] [--users 1 2 4 8 16]
        [--duration 10] [--warehouses 1] [--client]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import psutil

from tdebench.engines import get_engine
from tdebench.engines.base import NONE
from tdebench.measure.clock import MonotonicClock
from tdebench.measure.recorder import Recorder
from tdebench.results import TrialKey
from tdebench.store import ResultStore, read_run
from tdebench.workloads.base import RunContext
from tdebench.workloads.oltp.workload import LOAD, OPTIONS, OltpWorkload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=("postgres", "mariadb"), default="postgres")
    parser.add_argument("--users", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--duration", type=float, default=10.0, help="seconds in each measured window")
    parser.add_argument("--rampup", type=float, default=2.0)
    parser.add_argument("--warehouses", type=int, default=1)
    parser.add_argument("--client", action="store_true", help="client-side statements instead of procedures")
    parser.add_argument("--data-dir", type=Path, default=Path.home() / ".cache" / "tdebench" / "data")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="tdebench-bench-"))  # below /tmp: the postgres user can enter it
    root.chmod(0o711)
    engine = get_engine(args.engine)
    database = engine.provision(root / "db", NONE, None)
    try:
        (root / "db").mkdir()
        workload = OltpWorkload()
        workload.prepare(args.warehouses, args.data_dir, 1)
        store = ResultStore(root / "out")
        store.start("name = 'bench'\n", {})
        recorder = Recorder(store, TrialKey(args.engine, "none", "oltp", args.warehouses, 1), MonotonicClock(),
                            processes=database.engine_processes)
        defaults = {name: option.default for name, option in OPTIONS.items()}

        def context(users: int) -> RunContext:
            options = defaults | {"virtual_users": users, "duration_s": args.duration, "rampup_s": args.rampup,
                                  "procedures": not args.client}
            return RunContext(database=database, dialect=engine.dialect, recorder=recorder,
                              scale=args.warehouses, streams=1, data_dir=args.data_dir, options=options)

        database.create()
        conn = database.connect()
        print(f"loading {args.warehouses} warehouse(s) into {engine.version()} …", flush=True)
        workload.load(context(1), conn)
        rows = []
        for users in args.users:
            disks, started = psutil.disk_io_counters(perdisk=True), time.perf_counter()
            workload.run(LOAD, context(users), conn, warmup=False)
            mix = dict([m for m in read_run(store.directory).measurements if m.step == "mix"][-1].metrics)
            mix["disk_busy"] = _busiest(disks, psutil.disk_io_counters(perdisk=True), time.perf_counter() - started)
            rows.append((users, mix))
            print(f"  {users} users: {mix['committed'] / mix['elapsed_s'] * 60:,.0f} TPM", flush=True)
        conn.close()
    finally:
        database.close()
        shutil.rmtree(root, ignore_errors=True)
    _print(args, rows)


def _busiest(before: dict, after: dict, seconds: float) -> float:
    """The busiest disk's busy time over `seconds`, as a fraction."""
    busy = [after[d].busy_time - before[d].busy_time for d in after if d in before and hasattr(after[d], "busy_time")]
    return max(busy, default=0) / 1000 / seconds


def _print(args: argparse.Namespace, rows: list[tuple[int, dict[str, float]]]) -> None:
    cores = os.cpu_count() or 1
    mode = "client-side statements" if args.client else "stored procedures"
    print(f"\n{args.engine}, W={args.warehouses}, {mode}, {args.duration:g} s windows, {cores} cores\n")
    header = ("users", "TPM", "NOPM", "server CPU s", "driver CPU s", "driver share", "driver µs/txn",
              "driver core busy", "machine CPU", "disk busy")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    shares, nopms, busy = [], [], []
    for users, mix in rows:
        minutes = mix["elapsed_s"] / 60
        server, driver = mix["cpu_s"], mix["driver_cpu_s"]
        share = driver / (server + driver) if server + driver else 0.0
        shares.append(share)
        busy.append(driver / mix["elapsed_s"])
        nopms.append(mix["new_orders"] / minutes)
        print(f"| {users} | {mix['committed'] / minutes:,.0f} | {nopms[-1]:,.0f} | {server:.2f} | {driver:.2f} "
              f"| {share:.0%} | {driver / max(mix['committed'], 1) * 1e6:,.0f} "
              f"| {driver / mix['elapsed_s']:.0%} | {(server + driver) / mix['elapsed_s'] / cores:.0%} "
              f"| {mix['disk_busy']:.0%} |")
    best = max(range(len(rows)), key=lambda i: nopms[i])
    print(f"\nNOPM from {nopms[0]:,.0f} with {rows[0][0]} user(s) to its peak of {nopms[best]:,.0f} with "
          f"{rows[best][0]} users ({nopms[best] / nopms[0]:.1f}×); the driver's share of the CPU stayed "
          f"between {min(shares):.0%} and {max(shares):.0%}, and it kept one core at most "
          f"{max(busy):.0%} busy.")


if __name__ == "__main__":
    main()
