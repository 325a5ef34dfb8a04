"""A fake engine and workload for testing the runner in milliseconds, with an exact clock.

The fake database is one file. Unencrypted, it holds the canaries as they are (so the at-rest
scan must find them); encrypted, it holds them XORed with the key stream, which the scan
must not find. The fake workload advances the fake clock by a fixed time per query that
depends on the encryption, so overheads are known exactly.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tdebench.engines.base import NONE, Availability, Capabilities, Connection, Database, Engine, Encryption
from tdebench.keys import Secret
from fake_clock import FakeClock
from tdebench.plan import EngineChoice, Plan, WorkloadSpec
from tdebench.workloads.base import RunContext, Workload, WrongAnswer

FAKE_ENC = Encryption("fake-256", "FAKE", 256, "XOR", "native", ("main file",))
QUERY_NS = {"none": 100_000_000, "placebo": 100_000_000, "fake-256": 110_000_000}


def fake_plan(**overrides: Any) -> Plan:
    """A plan of the fake engine (none and FAKE_ENC) and workload, interleaved, 2 repetitions."""
    values: dict[str, Any] = dict(
        name="fake", repetitions=2, warmups=1, cache="warm", order="interleaved", seed=7,
        engines=(EngineChoice("fake", ("none", FAKE_ENC.name)),),
        workloads=(WorkloadSpec("fakeload", (1.0,), ("power",), 1),), text="name = 'fake'\n")
    values.update(overrides)
    return Plan(**values)


class FakeConnection:
    def __init__(self, db: "FakeDatabase") -> None:
        self.db = db

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        if sql.startswith("SELECT canary"):
            return [(c,) for c in self.db.rows]
        return []

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self.db.rows.extend(str(r[1]) for r in rows)
        self.db.flush()

    def set_timeout(self, seconds: float | None) -> None:
        self.timeout = seconds

    def close(self) -> None:
        self.db.connections -= 1


@dataclass
class FakeDatabase(Database):
    rows: list[str] = field(default_factory=list)
    connections: int = 0
    closed: bool = False
    closes: int = 0

    @property
    def path(self) -> Path:
        return self.workspace / "fake.db"

    def create(self) -> None:
        self.path.write_bytes(b"FAKEDB\x00" + bytes(64))

    def connect(self) -> Connection:
        self.connections += 1
        return FakeConnection(self)

    def flush(self) -> None:
        data = "\n".join(self.rows).encode()
        if self.key is not None:
            stream = hashlib.shake_256(self.key.raw()).digest(len(data))
            data = bytes(a ^ b for a, b in zip(data, stream))
        self.path.write_bytes(b"FAKEDB\x00" + data)

    def files(self) -> list[Path]:
        return [self.path] if self.path.exists() else []

    def close(self) -> None:
        self.closed = True
        self.closes += 1


class FakeEngine(Engine):
    name = "fake"
    dialect = "duckdb"
    capabilities = Capabilities(embedded=True, concurrent_streams=False)
    encryptions = (NONE, FAKE_ENC)
    provisioned: list[FakeDatabase] = []

    def version(self) -> str:
        return "fake 1.0"

    def availability(self) -> Availability:
        return Availability(True)

    def provision_native(self, workspace: Path, encryption: Encryption, key: Secret | None) -> Database:
        db = FakeDatabase(workspace=workspace, encryption=encryption, key=key)
        FakeEngine.provisioned.append(db)
        return db


class FakeWorkload(Workload):
    name = "fakeload"
    tests = ("power",)
    default_scale = 1.0
    scale_min = 1.0
    scale_max = 1.0
    max_streams = 1

    def __init__(self, clock: FakeClock, fail_on: str | None = None, noise: float = 0.0,
                 drift: float = 0.0, quiet: Collection[str] = (), load_noise: float = 0.0) -> None:
        self.clock = clock
        self.load_noise = load_noise  # log-normal noise of the load's time, seeded
        self.fail_on = fail_on  # an encryption whose answers are "wrong"
        self.noise = noise  # log-normal noise of every query time, seeded
        self.quiet = quiet  # engines (plan names) whose query times have no noise
        # a machine whose speed wanders slowly over seconds of fake time (three slow waves, about
        # ±`drift` on log scale), the same for whatever runs at that moment
        self.drift = drift
        self.random = random.Random(11)
        self.prepared: list[float] = []
        self.order: list[tuple[str, int, int, bool]] = []  # (encryption, repetition, query, warm-up) as run

    def prepare(self, scale: float, data_dir: Path, seed: int) -> None:
        self.prepared.append(scale)

    def load(self, ctx: RunContext, conn: Connection) -> None:
        with ctx.recorder.measure("load", "total", process=False):
            noise = math.exp(self.random.gauss(0.0, self.load_noise)) if self.load_noise else 1.0
            self.clock.advance(int(50_000_000 * noise))

    def run(self, test: str, ctx: RunContext, conn: Connection, *, warmup: bool) -> None:
        for _ in self._queries(test, ctx, warmup):
            pass

    def _queries(self, test: str, ctx: RunContext, warmup: bool) -> Iterator[None]:
        enc = ctx.database.encryption.name
        for q in (1, 2):
            self.order.append((enc, ctx.recorder.trial.repetition, q, warmup))
            with ctx.recorder.measure(test, f"q{q}", stream=0, warmup=warmup, process=False) as step:
                quiet = ctx.recorder.trial.engine in self.quiet
                noise = math.exp(self.random.gauss(0.0, 0.0 if quiet else self.noise))
                self.clock.advance(int(QUERY_NS[enc] * q * noise * self._speed()))
                step.answer = "failed" if enc == self.fail_on else "ok"
            yield
        if enc == self.fail_on:
            raise WrongAnswer("q1: expected 1, got 2")

    def _speed(self) -> float:
        t = self.clock.now_ns() / 1e9
        wave = (math.sin(2 * math.pi * t / 3.1) + math.sin(2 * math.pi * t / 4.7 + 1)
                + math.sin(2 * math.pi * t / 7.3 + 2))
        return math.exp(self.drift * wave / 1.5)


class SteppedFakeWorkload(FakeWorkload):
    """The fake workload with a pause after every query, as TPC-H's power test: lockstep plans
    run the configurations' queries in turn."""

    def steps(self, test: str, ctx: RunContext, conn: Connection, *, warmup: bool) -> Iterator[None]:
        return self._queries(test, ctx, warmup)


def run_fake(directory: Path, engine: type[FakeEngine], workspace_parent: Path) -> None:
    """Run the fake plan (one round) with `engine`, its results in `directory`/out, its trial
    workspaces below `workspace_parent`: a real runner, for what happens around the trials."""
    from tdebench.run.runner import Runner
    from tdebench.store import ResultStore

    clock = FakeClock()
    store = ResultStore(directory / "out")
    store.start("name = 'fake'\n", {"cpu_model": "fake"})
    Runner(plan=fake_plan(repetitions=1), store=store, data_dir=directory / "data", clock=clock,
           engine_factory=lambda name, **settings: engine(**settings),
           workload_factory=lambda name: FakeWorkload(clock), empty_cache=lambda evict, root: True,
           workspace_parent=workspace_parent).run()
