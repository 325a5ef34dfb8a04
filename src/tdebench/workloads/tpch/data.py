"""TPC-H data: one Parquet file per table, generated once per scale and reused.

DuckDB's dbgen is the reference generator rewritten in C++ and deterministic, so a cached
file set is identical to a fresh one and every engine loads exactly the same rows. Parquet
keeps the spec types (DECIMAL, DATE) and is readable by every loader through DuckDB.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from tdebench.engines.duckdb_extensions import duckdb_with_tpch
from tdebench.workloads.tpch.schema import TABLES

SCALE_MIN = 0.01
SCALE_MAX = 10.0


def scale_name(scale: float) -> str:
    """The directory name of a scale: sf0.01, sf0.1, sf1, sf10."""
    return f"sf{scale:g}"


def generate(scale: float, directory: Path) -> dict[str, Path]:
    """Parquet files of every table at `scale`, in `directory/sf<scale>/`, made if missing.

    Each file is written under a temporary name and renamed into place, so an interrupted
    run never leaves a truncated file that a later run would take for a finished one.
    """
    if not SCALE_MIN <= scale <= SCALE_MAX:
        raise ValueError(f"TPC-H scale factor {scale:g} is outside {SCALE_MIN:g}..{SCALE_MAX:g}")
    target = Path(directory) / scale_name(scale)
    files = {table: target / f"{table}.parquet" for table in TABLES}
    missing = [table for table, path in files.items() if not path.is_file()]
    if missing:
        target.mkdir(parents=True, exist_ok=True)
        _write(scale, target, {table: files[table] for table in missing})
    return files


def _write(scale: float, target: Path, files: dict[str, Path]) -> None:
    """Run dbgen in a scratch DuckDB file (so large scales spill to disk instead of
    exhausting memory) and copy each requested table out to Parquet."""
    with tempfile.TemporaryDirectory(dir=target, prefix=".dbgen-") as scratch:
        con = duckdb_with_tpch(Path(scratch) / "dbgen.duckdb")
        try:
            con.execute("CALL dbgen(sf = ?)", [scale])
            for table, path in files.items():
                partial = path.with_name(f".{path.name}.partial")
                quoted = str(partial).replace("'", "''")
                con.execute(f"COPY {table} TO '{quoted}' (FORMAT parquet)")
                os.replace(partial, path)
        finally:
            con.close()
