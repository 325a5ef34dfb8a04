"""DuckDB extensions loaded from their PyPI wheels, never from the network.

A benchmark must not depend on extensions.duckdb.org being reachable, and the extension
binary must match the pinned DuckDB version exactly; the `duckdb-extension-<name>` wheels
give both, so autoinstall and autoload are switched off and the file is loaded by path.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import duckdb

Config = dict[str, str | bool | int | float | list[str]]  # duckdb.connect's config type
OFFLINE: Config = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}


def extension_path(name: str) -> Path:
    """The `<name>.duckdb_extension` file shipped in the `duckdb-extension-<name>` wheel."""
    package = f"duckdb-extension-{name}"
    spec = importlib.util.find_spec(f"duckdb_extension_{name}")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            f"DuckDB extension {name!r} is not installed: pip install {package}=={duckdb.__version__}"
        )
    root = Path(next(iter(spec.submodule_search_locations)))
    found = sorted(root.glob(f"extensions/*/{name}.duckdb_extension"))
    if not found:
        raise RuntimeError(
            f"package {package} holds no {name}.duckdb_extension under {root}/extensions; "
            f"reinstall it: pip install --force-reinstall {package}=={duckdb.__version__}"
        )
    return found[-1]


def duckdb_with_tpch(database: str | Path = ":memory:") -> duckdb.DuckDBPyConnection:
    """A DuckDB with the tpch extension loaded (dbgen, tpch_queries, tpch_answers).

    In memory by default; data generation passes a scratch file instead, because dbgen
    held in memory needs about 2.4 GB per scale unit and SF 10 would not fit.
    """
    con = duckdb.connect(str(database), config=OFFLINE)
    con.execute("SET enable_progress_bar = false")  # dbgen at SF >= 1 would draw on the terminal
    con.execute(f"LOAD '{extension_path('tpch')}'")
    return con
