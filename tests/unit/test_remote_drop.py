"""A PostgreSQL trial database by URL is dropped WITH (FORCE), which an autovacuum worker in it
refuses to a non-superuser: the drop is tried again until the worker is gone, and a refusal that
lasts is raised, not swallowed."""

from __future__ import annotations

from types import SimpleNamespace

import psycopg
import pytest

from tdebench.engines import remote_postgres
from tdebench.engines.remote_postgres import RemotePostgresDatabase


class _Server:
    def __init__(self, refusals: int) -> None:
        self.refusals = refusals
        self.statements: list[str] = []
        self.open = 0

    def raw_connect(self, database: str) -> _Server:
        self.open += 1
        return self

    def execute(self, sql: str) -> None:
        self.statements.append(sql)
        if self.refusals:
            self.refusals -= 1
            raise psycopg.errors.InsufficientPrivilege("permission denied to terminate process")

    def close(self) -> None:
        self.open -= 1


def _database(server: _Server) -> SimpleNamespace:
    return SimpleNamespace(close=lambda: None, engine=server, target=SimpleNamespace(database="postgres"),
                           namespace="tdebench_0123")


def test_a_drop_refused_while_autovacuum_is_in_the_database_is_tried_again() -> None:
    server = _Server(refusals=2)
    RemotePostgresDatabase._drop_namespace(_database(server))  # type: ignore[arg-type]
    assert server.statements == ["DROP DATABASE IF EXISTS tdebench_0123 WITH (FORCE)"] * 3
    assert server.open == 0


def test_a_refusal_that_lasts_is_raised(monkeypatch) -> None:
    monkeypatch.setattr(remote_postgres, "DROP_RETRY_S", 0.0)
    server = _Server(refusals=5)
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        RemotePostgresDatabase._drop_namespace(_database(server))  # type: ignore[arg-type]
    assert len(server.statements) == 1 and server.open == 0
