"""Every engine by name and how it can be reached: the registry (`REGISTRY`), one `Reach` per
engine. An engine may be provisioned here (an `Engine` class: tdebench starts it on this machine),
reached by a plan's url on a server tdebench did not start (a `RemoteEngine` class,
engines/remote.py), scripted as a kit for a server that cannot run here (kit/targets.py), or
several of these under one name. The name is its classes' `name`; `tdebench engines`, the CLI's
choices, plan checking and the kit take names from here, never from a list of their own. Adding
an engine = one module here + its entry below + passing tests/contract/test_engine_contract.py."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

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


@dataclass(frozen=True)
class Reach:
    """The ways one engine can be reached, each None where it has not that way: `here`, the
    engine tdebench provisions on this machine; `url`, the engine on a server tdebench did not
    start, by a plan's url; `kit`, the name of its `Target` in kit/targets.py, the scripts for a
    server that cannot run here (a name, not the object: the kit is a tier above the engines and
    reads it). An imported kit run records its engine's facts as its engine by url has them
    (kit/importer.py), so an engine with a kit has `url` too."""

    here: type[Engine] | None = None
    url: type[RemoteEngine] | None = None
    kit: str | None = None

    @property
    def name(self) -> str:
        """The engine's name, its classes' (tests/unit/test_engine_registry.py: they agree)."""
        engine = self.here or self.url
        if engine is None:
            raise ValueError(f"an engine reached no way: {self!r}")
        return engine.name


def registry(*reaches: Reach) -> dict[str, Reach]:
    """`reaches` by name; ValueError for a name given twice (its ways belong in one entry) or a kit
    without its engine by url."""
    found: dict[str, Reach] = {}
    for reach in reaches:
        if reach.name in found:
            raise ValueError(f"engine {reach.name!r} is in the registry twice: give its ways in one entry")
        if reach.kit is not None and reach.url is None:
            raise ValueError(f"engine {reach.name!r} has a script kit but no engine by url to take its facts from")
        found[reach.name] = reach
    return found


REGISTRY = registry(
    Reach(here=DuckDBEngine),
    Reach(here=SQLiteEngine),
    Reach(here=SQLCipherEngine),
    Reach(here=MariaDBEngine, url=RemoteMariaDBEngine),
    Reach(url=RemoteMySQLEngine, kit="MYSQL"),
    Reach(here=PostgresEngine, url=RemotePostgresEngine),
    Reach(url=RemoteSQLServerEngine, kit="SQLSERVER"),
    Reach(url=RemoteOracleEngine, kit="ORACLE"),
)

PROVISIONED: dict[str, type[Engine]] = {name: reach.here for name, reach in REGISTRY.items() if reach.here}
"""The registry's engines tdebench provisions here, in its order."""
BY_URL: dict[str, type[RemoteEngine]] = {name: reach.url for name, reach in REGISTRY.items() if reach.url}
"""The registry's engines on servers tdebench did not start, reached by a plan's url (engines/remote.py)."""
KIT: tuple[str, ...] = tuple(name for name, reach in REGISTRY.items() if reach.kit)
"""The registry's engines the script kit writes scripts for (kit/targets.py)."""


def get_engine(name: str, memory_mb: int | None = None, remote: RemoteTarget | None = None,
               key_form: str = PASSPHRASE, settings: Mapping[str, str] | None = None) -> Engine:
    """The engine called `name` (on the server `remote` names, when given) taking keys in
    `key_form` (a plan checks that it takes that form); KeyError listing the valid names otherwise."""
    if remote is not None:
        if name not in BY_URL:
            raise KeyError(f"engine {name!r} cannot be reached by url; valid: {', '.join(BY_URL)}")
        return BY_URL[name](memory_mb=memory_mb, remote=remote)
    try:
        engine_class = PROVISIONED[name]
    except KeyError:
        raise KeyError(f"unknown engine {name!r}; valid: {', '.join(PROVISIONED)}") from None
    return engine_class(memory_mb=memory_mb, key_form=key_form, settings=settings)


__all__ = ["BY_URL", "KIT", "NONE", "PROVISIONED", "REGISTRY", "Availability", "Capabilities", "Connection",
           "Database", "Engine", "Encryption", "Reach", "get_engine", "registry"]
