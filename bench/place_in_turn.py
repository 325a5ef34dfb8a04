"""Does a query's time in a stored lockstep run depend on the arm's place in the turn?

In lockstep a group's configurations take turns query by query, the first to go rotating every
turn, so an arm's place in a query's turn (first, second, ...) says what ran just before it: the
other arms' same query, or its own previous one. A query whose time (or I/O) follows the place,
not the arm, adds to every ratio's spread an effect of the order, not of the encryption. This
script reads a run's results.jsonl (or .jsonl.xz) and prints, for one engine's query of the power
test, its time, CPU and bytes read by place in the turn (the order of the records: the runner
appends each query's as it ends); then the spread over rounds of the placebo's composite ln ratio
(the mean of its queries' ln times) with every query, and with each of the three queries left
out whose leaving out narrows it most: the queries the floor is made of.

    .venv/bin/python bench/place_in_turn.py docs/examples/io-bound/results.jsonl.xz --engine mariadb --query 18

It reads a stored run only, so it needs no database and runs in CI on the published example.
"""

from __future__ import annotations

import argparse
import json
import lzma
import math
import re
import statistics
from pathlib import Path

from tdebench.report.data.records import BASELINE, PLACEBO

ENGINE_NAMES = {"duckdb": "DuckDB", "sqlite": "SQLite", "mariadb": "MariaDB", "postgres": "PostgreSQL"}


def from_run(results: Path, engine: str, number: int, shown: int = 3) -> None:
    """`engine`'s Q`number` in a stored run by its place in each round's lockstep turn; then how
    much each query adds to the placebo's spread (`left_out`)."""
    opened = lzma.open(results, "rt") if results.suffix == ".xz" else results.open()
    by_round: dict[tuple[str, int], list[dict[str, float]]] = {}
    logs: dict[tuple[int, str], dict[str, float]] = {}  # (round, query) -> arm -> ln(elapsed)
    with opened as lines:
        for line in lines:
            record = json.loads(line)
            trial = record.get("trial", {})
            if (record.get("kind") != "measurement" or trial.get("engine") != engine or record.get("warmup")
                    or record.get("test") != "power" or not re.fullmatch(r"q\d+", record.get("step", ""))):
                continue
            logs.setdefault((trial["repetition"], record["step"]), {})[trial["encryption"]] = math.log(
                record["metrics"]["elapsed_s"])
            if record["step"] == f"q{number}":
                group = (json.dumps({k: v for k, v in trial.items() if k not in ("encryption", "repetition")}),
                         trial["repetition"])
                by_round.setdefault(group, []).append(record["metrics"])
    places = max((len(q) for q in by_round.values()), default=0)
    print(f"{ENGINE_NAMES.get(engine, engine)}'s Q{number} in {results}: {len(by_round)} rounds, "
          "by place in the lockstep turn")
    for place in range(places):
        metrics = [q[place] for q in by_round.values() if len(q) > place]
        times = sorted(round(1000 * m["elapsed_s"]) for m in metrics)
        read = [m.get("read_bytes", 0.0) / 2**20 for m in metrics]
        print(f"  {place + 1}: {len(metrics)} runs, median {statistics.median(times):.0f} ms "
              f"(CPU {1000 * statistics.median(m['cpu_s'] for m in metrics):.0f} ms, read "
              f"{statistics.median(read):.0f} MiB, {min(read):.0f}–{max(read):.0f}); times {times} ms")
    left_out(logs, shown)


def left_out(logs: dict[tuple[int, str], dict[str, float]], shown: int = 3) -> None:
    """The spread over rounds of ln(placebo / none) on the power test's composite (the mean of its
    queries' ln times), with every query and with each one left out: the queries whose leaving out
    narrows it most are what the floor is made of."""
    def spread(skip: str | None) -> float:
        rounds = sorted({r for r, _ in logs})
        diffs = []
        for r in rounds:
            cells = [arms for (rr, q), arms in logs.items()
                     if rr == r and q != skip and {PLACEBO, BASELINE} <= arms.keys()]
            diffs.append(statistics.fmean(arms[PLACEBO] - arms[BASELINE] for arms in cells))
        return statistics.stdev(diffs)

    if not any(PLACEBO in arms for arms in logs.values()):
        return
    queries = sorted({q for _, q in logs}, key=lambda q: int(q[1:]))
    without = sorted((spread(q), q) for q in queries)
    print(f"the placebo's spread over rounds (composite ln ratio): {100 * spread(None):.1f}% with every query; "
          "without " + ", ".join(f"{q} {100 * value:.1f}%" for value, q in without[:shown]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, help="a run's results.jsonl or results.jsonl.xz")
    parser.add_argument("--engine", default="duckdb", help="the engine whose query is read (default duckdb)")
    parser.add_argument("--query", type=int, default=10, help="the TPC-H query's number (default 10)")
    args = parser.parse_args()
    from_run(args.results, args.engine, args.query)


if __name__ == "__main__":
    main()
