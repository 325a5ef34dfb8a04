"""Engines tdebench can provision, by name. Adding an engine = one module here + its entry
below + passing tests/contract/test_engine_contract.py."""

from __future__ import annotations

from tdebench.engines.base import NONE, Availability, Capabilities, Connection, Database, Engine, Encryption
from tdebench.engines.duckdb import DuckDBEngine
from tdebench.engines.mariadb import MariaDBEngine
from tdebench.engines.postgres import PostgresEngine
from tdebench.engines.sqlite import SQLiteEngine

ENGINES: dict[str, type[Engine]] = {
    DuckDBEngine.name: DuckDBEngine,
    SQLiteEngine.name: SQLiteEngine,
    MariaDBEngine.name: MariaDBEngine,
    PostgresEngine.name: PostgresEngine,
}


def get_engine(name: str, memory_mb: int | None = None) -> Engine:
    """The engine called `name`; KeyError listing the valid names otherwise."""
    try:
        engine_class = ENGINES[name]
    except KeyError:
        raise KeyError(f"unknown engine {name!r}; valid: {', '.join(ENGINES)}") from None
    return engine_class(memory_mb=memory_mb)


__all__ = ["ENGINES", "NONE", "Availability", "Capabilities", "Connection", "Database", "Engine",
           "Encryption", "get_engine"]
