"""Engines tdebench can provision, by name. Adding an engine = one module here + its entry
below + passing tests/contract/test_engine_contract.py."""

from __future__ import annotations

from collections.abc import Mapping

from tdebench.engines.base import NONE, Availability, Capabilities, Connection, Database, Engine, Encryption
from tdebench.engines.duckdb import DuckDBEngine
from tdebench.engines.mariadb import MariaDBEngine
from tdebench.engines.postgres import PostgresEngine
from tdebench.engines.remote import RemoteEngine, RemoteTarget
from tdebench.engines.remote_mysql import RemoteMariaDBEngine, RemoteMySQLEngine
from tdebench.engines.remote_oracle import RemoteOracleEngine
from tdebench.engines.remote_postgres import RemotePostgresEngine
from tdebench.engines.remote_sqlserver import RemoteSQLServerEngine
from tdebench.engines.sqlcipher import SQLCipherEngine
from tdebench.engines.sqlite import SQLiteEngine
from tdebench.results import PASSPHRASE

ENGINES: dict[str, type[Engine]] = {
    DuckDBEngine.name: DuckDBEngine,
    SQLiteEngine.name: SQLiteEngine,
    SQLCipherEngine.name: SQLCipherEngine,
    MariaDBEngine.name: MariaDBEngine,
    PostgresEngine.name: PostgresEngine,
}

REMOTE_ENGINES: dict[str, type[RemoteEngine]] = {
    RemoteMariaDBEngine.name: RemoteMariaDBEngine,
    RemoteMySQLEngine.name: RemoteMySQLEngine,
    RemotePostgresEngine.name: RemotePostgresEngine,
    RemoteSQLServerEngine.name: RemoteSQLServerEngine,
    RemoteOracleEngine.name: RemoteOracleEngine,
}
"""Engines on servers tdebench did not start, reached by a plan's url (engines/remote.py)."""


def get_engine(name: str, memory_mb: int | None = None, remote: RemoteTarget | None = None,
               key_form: str = PASSPHRASE, settings: Mapping[str, str] | None = None) -> Engine:
    """The engine called `name` (on the server `remote` names, when given) taking keys in
    `key_form` (a plan checks that it takes that form); KeyError listing the valid names otherwise."""
    if remote is not None:
        if name not in REMOTE_ENGINES:
            raise KeyError(f"engine {name!r} cannot be reached by url; valid: {', '.join(REMOTE_ENGINES)}")
        return REMOTE_ENGINES[name](memory_mb=memory_mb, remote=remote)
    try:
        engine_class = ENGINES[name]
    except KeyError:
        raise KeyError(f"unknown engine {name!r}; valid: {', '.join(ENGINES)}") from None
    return engine_class(memory_mb=memory_mb, key_form=key_form, settings=settings)


__all__ = ["ENGINES", "REMOTE_ENGINES", "NONE", "Availability", "Capabilities", "Connection", "Database", "Engine",
           "Encryption", "get_engine"]
