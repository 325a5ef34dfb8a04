"""The workload contract: load data into a database, then run named tests on it.

A workload owns its SQL, data and correctness checks (per dialect where engines differ);
it sees an engine only through `Database` and `Connection`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from tdebench.engines.base import Connection, Database
from tdebench.measure.recorder import Recorder

CANARY_TABLE = "tdebench_canary"


class WrongAnswer(AssertionError):
    """A query returned a wrong result, or ran into the plan's timeout: the trial fails after
    its measurements are stored."""


@dataclass(frozen=True)
class RunContext:
    """What a workload needs to know about the trial it runs in."""

    database: Database
    dialect: str  # the engine's SQL dialect, which selects the workload's per-dialect SQL
    recorder: Recorder
    scale: float
    streams: int
    data_dir: Path
    query_timeout_s: float | None = None  # None: no limit


class Workload(ABC):
    name: ClassVar[str]
    tests: ClassVar[tuple[str, ...]]
    default_scale: ClassVar[float]
    scale_min: ClassVar[float]
    scale_max: ClassVar[float]
    max_streams: ClassVar[int]

    @abstractmethod
    def prepare(self, scale: float, data_dir: Path) -> None:
        """Make the data for `scale` (once per run, outside every measurement)."""

    @abstractmethod
    def load(self, ctx: RunContext, conn: Connection) -> None:
        """Create the schema and load the data, measured as test `load`."""

    @abstractmethod
    def run(self, test: str, ctx: RunContext, conn: Connection, *, warmup: bool) -> None:
        """Run one test once, measuring every step; raise WrongAnswer after the test if any
        answer was wrong (the measurements are stored first)."""


def write_canaries(conn: Connection, canaries: Sequence[str]) -> None:
    """Store the trial's canary strings; the at-rest scan looks for exactly these bytes."""
    conn.execute(f"CREATE TABLE {CANARY_TABLE} (id INTEGER PRIMARY KEY, canary VARCHAR(64) NOT NULL)")
    conn.executemany(f"INSERT INTO {CANARY_TABLE} (id, canary) VALUES (?, ?)",
                     list(enumerate(canaries, start=1)))


def read_canaries(conn: Connection) -> set[str]:
    """The canaries readable through the engine: proof that they were written."""
    return {row[0] for row in conn.execute(f"SELECT canary FROM {CANARY_TABLE}")}
