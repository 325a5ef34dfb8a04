"""TPC-H data: one Parquet file per table, generated once per scale and reused.

DuckDB's dbgen is the reference generator rewritten in C++ and deterministic, so a cached
file set is identical to a fresh one and every engine loads exactly the same rows. Parquet
keeps the spec types (DECIMAL, DATE) and is readable by every loader through DuckDB.

A load may take a table in parts (`parts`): the same rows, in the same order, cut into files of
at most so many rows, so that each part is a step of its own and the configurations of a
lockstep round take turns part by part, as their queries do.
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

import duckdb

from tdebench.engines.duckdb_extensions import OFFLINE, duckdb_with_tpch
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
                con.execute(f"COPY {table} TO {_quoted(partial)} (FORMAT parquet)")
                os.replace(partial, path)
        finally:
            con.close()


def parts(files: dict[str, Path], rows: int) -> dict[str, list[Path]]:
    """Each table's rows in files of at most `rows` rows (0: the table's one file), in the order of
    its file, beside it in `parts-<rows>/` (`lineitem.003.parquet`), made if missing: a table of
    no more rows is its own file. Each part is written under a name of its own and renamed into
    place, so two processes making the same part (a cluster's workers on one machine) never mix
    their bytes and an interrupted one leaves no truncated part."""
    if rows == 0:
        return {table: [path] for table, path in files.items()}
    reader = duckdb.connect(":memory:", config=OFFLINE)
    try:
        return {table: _parts_of(reader, path, rows) for table, path in files.items()}
    finally:
        reader.close()


def _quoted(path: Path | str) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def _parts_of(reader: duckdb.DuckDBPyConnection, path: Path, rows: int) -> list[Path]:
    total = int(reader.execute("SELECT sum(num_rows) FROM parquet_file_metadata(?)", [str(path)]).fetchall()[0][0])
    count = math.ceil(total / rows)
    if count <= 1:
        return [path]
    directory = path.parent / f"parts-{rows}"
    directory.mkdir(exist_ok=True)
    table = path.name.removesuffix(".parquet")
    made = [directory / f"{table}.{number:03d}.parquet" for number in range(count)]
    for number, part in enumerate(made):
        if part.is_file():
            continue
        handle, partial = tempfile.mkstemp(dir=directory, prefix=f".{part.name}.", suffix=".partial")
        os.close(handle)
        try:
            reader.execute(f"COPY (SELECT * EXCLUDE (file_row_number) FROM read_parquet({_quoted(path)}, "
                           f"file_row_number = true) WHERE file_row_number >= {number * rows} AND "
                           f"file_row_number < {(number + 1) * rows} ORDER BY file_row_number) "
                           f"TO {_quoted(partial)} (FORMAT parquet)")
            os.replace(partial, part)
        finally:
            Path(partial).unlink(missing_ok=True)
    return made
