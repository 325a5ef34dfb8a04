"""What do the TPC-C foreign keys cost tdebench's oltp load test on PostgreSQL?

BenchBase's and HammerDB's TPC-C schemas declare the references of clause 1.3; tdebench's schema
has none unless a plan says `foreign_keys = true` (workloads/oltp/schema.py FOREIGN_KEYS), one of
the differences docs/method/oltp-driver.md names between their NOPM and tdebench's. This loads W warehouses
once into a fresh PostgreSQL server (no encryption, tdebench's settings) and runs the workload's
load test with the foreign keys and without them in turn on that one database (added, untimed,
before each run with them and dropped after it; the order alternating by round, so a drift of
the machine or the database's growth falls on both alike), and prints per number of users:
NOPM, TPM, the server's CPU time per transaction and the driver's (tdebench and its worker
processes), medians over the rounds, and NOPM and server CPU per transaction with the keys over
without them, paired by round (geometric mean of the rounds' ratios with its 95% t-interval).

    .venv/bin/python bench/oltp_foreign_keys.py [--users 1 4] [--duration 10] [--rampup 2]
        [--rounds 3] [--warehouses 1] [--client]
"""

from __future__ import annotations

import argparse
import os
import statistics
from pathlib import Path

from oltp_driver import Row, oltp_server, paired_ratio  # bench/, this script's directory
from tdebench.workloads.oltp.schema import add_foreign_keys, drop_foreign_keys

WITH, WITHOUT = "with foreign keys", "without"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--duration", type=float, default=10.0, help="seconds in each measured window")
    parser.add_argument("--rampup", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warehouses", type=int, default=1)
    parser.add_argument("--client", action="store_true", help="client-side statements instead of procedures")
    parser.add_argument("--data-dir", type=Path, default=Path.home() / ".cache" / "tdebench" / "data")
    args = parser.parse_args()
    if args.rounds < 1 or min(args.users) < 1:
        parser.error("--rounds and --users must be 1 or more")
    results: dict[tuple[int, str], list[Row]] = {}
    with oltp_server("postgres", args.warehouses, args.data_dir) as bench:
        def context(users: int):  # noqa: ANN202 - a RunContext
            return bench.context({"virtual_users": users, "duration_s": args.duration, "rampup_s": args.rampup,
                                  "procedures": not args.client})

        conn = bench.database.connect()
        print(f"loading {args.warehouses} warehouse(s) into {bench.engine.version()} …", flush=True)
        bench.workload.load(context(1), conn)
        for round_ in range(args.rounds):
            for index, users in enumerate(args.users):
                for side in (WITH, WITHOUT) if (round_ + index) % 2 == 0 else (WITHOUT, WITH):
                    if side == WITH:
                        for statement in add_foreign_keys("postgres"):
                            conn.execute(statement)
                    mix = bench.run(context(users), conn)
                    if side == WITH:
                        for statement in drop_foreign_keys("postgres"):
                            conn.execute(statement)
                    results.setdefault((users, side), []).append(mix)
                    print(f"  round {round_ + 1}, {users} users, {side}: {_nopm(mix):,.0f} NOPM, load average "
                          f"{os.getloadavg()[0]:.1f}", flush=True)
        conn.close()
    _print(args, results)


def _nopm(mix: Row) -> float:
    return mix["new_orders"] / mix["elapsed_s"] * 60


def _server_ms(mix: Row) -> float:
    """The server's CPU per committed transaction, in ms."""
    return mix["cpu_s"] / max(mix["committed"], 1) * 1000


def _print(args: argparse.Namespace, results: dict[tuple[int, str], list[Row]]) -> None:
    mode = "client-side statements" if args.client else "stored procedures"
    print(f"\npostgres, W={args.warehouses}, {mode}, {args.duration:g} s windows, {os.cpu_count()} cores, "
          f"median of {args.rounds} round(s)\n")
    header = ("users", "schema", "NOPM", "TPM", "server CPU ms/txn", "driver CPU ms/txn", "NOPM vs without",
              "server CPU/txn vs without")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for users in args.users:
        for side in (WITHOUT, WITH):
            runs = results[(users, side)]
            nopm = statistics.median(_nopm(m) for m in runs)
            tpm = statistics.median(m["committed"] / m["elapsed_s"] * 60 for m in runs)
            server = statistics.median(_server_ms(m) for m in runs)
            driver = statistics.median(m["driver_cpu_s"] / max(m["committed"], 1) * 1000 for m in runs)
            ratios = ("", "")
            if side == WITH:
                without = results[(users, WITHOUT)]
                ratios = (paired_ratio([_nopm(m) for m in without], [_nopm(m) for m in runs]),
                          paired_ratio([_server_ms(m) for m in without], [_server_ms(m) for m in runs]))
            print(f"| {users} | {side} | {nopm:,.0f} | {tpm:,.0f} | {server:.3f} | {driver:.3f} | {ratios[0]} "
                  f"| {ratios[1]} |")
    print(f"\nload average after the runs: {' '.join(f'{load:.1f}' for load in os.getloadavg())}")


if __name__ == "__main__":
    main()
