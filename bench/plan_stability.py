"""Do two loads of the same data get the same query plans? Planner statistics, sampled or read whole.

A trial loads its own database, so the placebo (none against none) and every encryption compare
databases that were each loaded and analyzed on their own. Where the planner's statistics come
from a random sample, two loads of the same rows can get different join orders, and a query's
time then differs by its plan, not by its encryption. The io-bound example's MariaDB placebo had
TPC-H Q18 at about 1.0 s in some rounds and 3.5-4.5 s in others (the spread of its ln ratio 101%,
most of the power test's 5.5% floor): InnoDB's persistent statistics sample 20 leaf pages per
index by default (`innodb_stats_persistent_sample_pages`), at random.

This script provisions the engine as a trial does, loads TPC-H into `--databases` fresh databases
one after the other (each analyzed as the workload analyzes it), and prints, per database, a short
hash of each query's plan (EXPLAIN without the row estimates and costs), then the queries whose
plans differ between the databases. MariaDB: `--sample-pages N` sets the pages InnoDB samples
before the load (20 is MariaDB's default; without it, tdebench's own setting: every leaf page).
PostgreSQL's ANALYZE samples 300 x default_statistics_target rows per table; DuckDB's statistics
are not sampled.

    .venv/bin/python bench/plan_stability.py [--engine mariadb|postgres|duckdb] [--scale 0.1]
        [--databases 3] [--sample-pages 20]

Tiny, for CI: --scale 0.01 --databases 2.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import tempfile
from pathlib import Path

from harness_overhead import data_arguments, tpch_context

from tdebench.engines import NONE, get_engine
from tdebench.engines.base import Connection
from tdebench.store import ResultStore
from tdebench.workloads.tpch import TpchWorkload
from tdebench.workloads.tpch.queries import query

QUERIES = range(1, 23)


def plan(conn: Connection, engine: str, number: int) -> str:
    """The query's plan without estimates: MariaDB's EXPLAIN rows as (id, table, access type, key,
    Extra); PostgreSQL's EXPLAIN (COSTS OFF) text; DuckDB's physical plan without row estimates."""
    sql = query(number, get_engine(engine).dialect)
    if engine == "postgres":
        return "\n".join(str(row[0]) for row in conn.execute("EXPLAIN (COSTS OFF) " + sql))
    if engine == "duckdb":  # the physical plan's boxes, without their "~N rows" estimates
        return re.sub(r"~[\d,.]+\s*\w*\s*rows", "", "\n".join(str(row[-1]) for row in conn.execute("EXPLAIN " + sql)))
    # MariaDB numbers derived tables by their select id (<derived2>), stable between databases
    return "\n".join(repr((row[0], row[2], row[3], row[5], row[9])) for row in conn.execute("EXPLAIN " + sql))


def short(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:4]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=("mariadb", "postgres", "duckdb"), default="mariadb")
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--databases", type=int, default=3)
    parser.add_argument("--memory-mb", type=int, default=128)
    parser.add_argument("--sample-pages", type=int, default=None,
                        help="MariaDB: innodb_stats_persistent_sample_pages for the load (default: tdebench's)")
    args = data_arguments(parser).parse_args()
    if args.sample_pages is not None and args.engine != "mariadb":
        parser.error("--sample-pages is MariaDB's")
    engine = get_engine(args.engine, memory_mb=args.memory_mb)
    workload = TpchWorkload()
    workload.prepare(args.scale, args.data_dir, args.seed)
    plans: list[dict[int, str]] = []
    with tempfile.TemporaryDirectory(prefix="tdebench-bench-") as tmp:
        root = Path(tmp)
        root.chmod(0o711)  # the server's own user enters its workspace below
        store = ResultStore(root / "out")
        store.start("name = 'bench'\n", {})
        for number in range(args.databases):
            (root / str(number)).mkdir()
            database = engine.provision(root / str(number), NONE, None)
            try:
                database.create()
                ctx = tpch_context(engine, database, store, args.scale, args.data_dir, args.seed, number + 1)
                conn = database.connect()
                try:
                    if args.sample_pages is not None:
                        conn.execute(f"SET GLOBAL innodb_stats_persistent_sample_pages = {args.sample_pages}")
                    sampled = (conn.execute("SELECT @@innodb_stats_persistent_sample_pages")[0][0]
                               if args.engine == "mariadb" else None)
                    workload.load(ctx, conn)
                    plans.append({q: plan(conn, args.engine, q) for q in QUERIES})
                finally:
                    conn.close()
            finally:
                database.close()
            print(f"database {number + 1}: " + " ".join(f"q{q}:{short(plans[-1][q])}" for q in QUERIES), flush=True)
    setting = f", innodb_stats_persistent_sample_pages = {sampled}" if sampled is not None else ""
    differ = [q for q in QUERIES if len({p[q] for p in plans}) > 1]
    print(f"{args.engine} TPC-H SF {args.scale:g}, {args.databases} databases loaded one after the other{setting}: "
          f"{len(differ)} of {len(QUERIES)} queries' plans differ between them"
          + (": " + ", ".join(f"q{q} ({len({p[q] for p in plans})} plans)" for q in differ) if differ else ""))
    for q in differ:
        for number, p in enumerate(plans, start=1):
            print(f"  q{q}, database {number}:\n" + re.sub(r"(?m)^", "    ", p[q]))


if __name__ == "__main__":
    main()
