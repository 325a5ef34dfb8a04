"""How far below its data can DuckDB's memory_limit go? The data ÷ cache a DuckDB plan can reach.

The answer table asks for each engine's cost with the data about 4x its cache. SQLite, MariaDB and
PostgreSQL get there by a smaller page cache or buffer pool; DuckDB's `memory_limit` bounds all of
its memory (data blocks, hash tables, sorts, the row groups an INSERT builds), so a limit far
below the data fails queries and loads with DuckDB's "Out of Memory Error" before it makes DuckDB
re-read its blocks. This script measures where: it loads TPC-H at `--scale` into a tdebench
DuckDB database (no encryption) as a trial does, at DuckDB's default limit, and then, for every
`--memory-mb`, opens that database at that limit and runs the 22 queries of the power test, and
loads a fresh database at that limit. It prints, per limit, the data ÷ limit, whether the load
ran, and the queries that ran out of memory; then the least limit at which everything ran.

    .venv/bin/python bench/duckdb_memory_floor.py [--scale 0.1] [--memory-mb 15 20 30 40 48] [--keys none]
                                                  [--threads 4]

`--keys none` loads without primary keys (TPC-H's `keys` plan setting): DuckDB builds a key's ART
index in memory, which is what ran out of memory first in the loads at SF 0.3 and SF 1. `--threads N`
opens the limited databases with DuckDB's threads at N (the plan's engine setting) instead of one per
core: each thread takes memory of its own, so the floor rises with the cores of the host.

Tiny, for CI: --scale 0.01 --memory-mb 4 64.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from harness_overhead import data_arguments, loaded_duckdb, tpch_context

from tdebench.engines import NONE, get_engine
from tdebench.engines.duckdb import THREADS, THREADS_DEFAULT, DuckDBDatabase
from tdebench.report.data.units import MIB
from tdebench.store import ResultStore
from tdebench.workloads.tpch import TpchWorkload, schema
from tdebench.workloads.tpch.queries import query
from tdebench.workloads.tpch.streams import POWER_ORDER

QUERIES = sorted(POWER_ORDER)


def out_of_memory(exc: Exception) -> bool:
    """DuckDB's OutOfMemoryException, or a failure it caused (the engine wraps the open's)."""
    return "Out of Memory" in str(exc) or type(exc).__name__ == "OutOfMemoryException"


def failed_queries(root: Path, memory_mb: int, threads: str) -> list[int]:
    """The queries of the power test that ran out of memory on the database in `root`/db opened
    at `memory_mb` with `threads`; another error is raised."""
    engine = get_engine("duckdb", memory_mb=memory_mb, settings={"threads": threads})
    database = engine.provision(root / "db", NONE, None)
    failed: list[int] = []
    try:
        conn = database.connect()
    except Exception as exc:  # not even the attach fits
        if not out_of_memory(exc):
            raise
        return list(QUERIES)
    try:
        for number in QUERIES:
            try:
                conn.execute(query(number, "duckdb"))
            except Exception as exc:
                if not out_of_memory(exc):
                    raise
                failed.append(number)
    finally:
        conn.close()
        database.close()
    return failed


def loads(root: Path, memory_mb: int, scale: float, data_dir: Path, seed: int, keys: str, threads: str) -> bool:
    """Whether a fresh database in `root` loads TPC-H at `scale` (primary keys as `keys` says)
    with `memory_mb` as its limit and `threads`."""
    engine = get_engine("duckdb", memory_mb=memory_mb, settings={"threads": threads})
    database = engine.provision(root, NONE, None)
    store = ResultStore(root / "out")
    store.start("name = 'bench'\n", {})
    try:
        database.create()
        conn = database.connect()
        try:
            TpchWorkload().load(tpch_context(engine, database, store, scale, data_dir, seed, options={"keys": keys}),
                                conn)
        finally:
            conn.close()
    except Exception as exc:
        if not out_of_memory(exc):
            raise
        return False
    finally:
        database.close()
    return True


def main() -> None:
    parser = data_arguments(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--memory-mb", type=int, nargs="+", default=[15, 20, 30, 40, 48])
    parser.add_argument("--keys", choices=schema.KEYS, default="default",
                        help="TPC-H's primary keys: as DuckDB's layout has them, or none")
    parser.add_argument("--threads", choices=THREADS, default=THREADS_DEFAULT,
                        help="DuckDB's threads in the limited databases (default: one per core)")
    args = parser.parse_args()
    import duckdb

    with tempfile.TemporaryDirectory(prefix="tdebench-bench-") as tmp:
        root = Path(tmp)
        _, ctx, conn = loaded_duckdb(root, args.scale, args.data_dir, args.seed, options={"keys": args.keys})
        conn.close()
        database = ctx.database
        assert isinstance(database, DuckDBDatabase)
        database.close()
        data_mib = database.data_bytes() / MIB
        print(f"DuckDB {duckdb.__version__}, TPC-H SF {args.scale:g}"
              f"{', no primary keys' if args.keys == 'none' else ''}: {data_mib:.1f} MiB of tables and indexes "
              "after the load (loaded at DuckDB's default memory_limit)")
        own = args.threads == THREADS_DEFAULT
        threads = "DuckDB's own threads (one per core)" if own else f"{args.threads} thread(s)"
        print(f"the limited databases: {threads}")
        print(f"{'memory_limit':>12}  {'data ÷ limit':>12}  {'the load':>15}  the power test's queries out of memory")
        whole = []
        for memory_mb in sorted(args.memory_mb):
            failed = failed_queries(root, memory_mb, args.threads)
            (root / f"load-{memory_mb}").mkdir()
            loaded = loads(root / f"load-{memory_mb}", memory_mb, args.scale, args.data_dir, args.seed, args.keys,
                           args.threads)
            print(f"{memory_mb:>9} MB  {data_mib / memory_mb:>11.1f}×  "
                  f"{'ran' if loaded else 'out of memory':>15}  {', '.join(map(str, failed)) or 'none'}")
            if loaded and not failed:
                whole.append(memory_mb)
        print(f"the least limit at which the load and every query ran: {min(whole)} MB "
              f"(data {data_mib / min(whole):.1f}× it)" if whole else "no limit given let the load and every query run")


if __name__ == "__main__":
    main()
