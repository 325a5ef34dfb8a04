"""A workload's generated data written once as Parquet: under a temporary name in the target's
directory and renamed into place, so an interrupted run never leaves a truncated file that a
later run would take for a finished one."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def write_once(target: Path, select: str, parameters: Mapping[str, Any]) -> Path:
    """`select` (DuckDB SQL with `$name` parameters) written to `target` as Parquet, unless it is
    there already; returns `target`."""
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    import duckdb

    fd, partial = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial")
    os.close(fd)
    try:
        con = duckdb.connect(":memory:")
        try:
            quoted = partial.replace("'", "''")
            con.execute(f"COPY ({select}) TO '{quoted}' (FORMAT parquet)", dict(parameters))
        finally:
            con.close()
        os.replace(partial, target)
    finally:
        Path(partial).unlink(missing_ok=True)
    return target
