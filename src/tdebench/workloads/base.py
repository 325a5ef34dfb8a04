"""The workload contract: load data into a database, then run named tests on it.

A workload owns its SQL, data and correctness checks (per dialect where engines differ);
it sees an engine only through `Database` and `Connection`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from tdebench.engines.base import Connection, Database, Encryption
from tdebench.keys import Secret
from tdebench.measure.recorder import Recorder
from tdebench.results import TrialKey, Verdict

CANARY_TABLE = "tdebench_canary"


class WrongAnswer(AssertionError):
    """A query returned a wrong result, or ran into the plan's timeout: the trial fails after
    its measurements are stored."""


@dataclass(frozen=True)
class Option:
    """A plan key of one workload's own (e.g. oltp's `virtual_users`), checked by the plan
    reader like every other key: the type of `default`, the range or the choices. A tuple
    default makes a list key: a non-empty list of distinct `choices` (e.g. backup's
    `backup_encryptions`), kept in the order written."""

    default: int | float | str | bool | tuple[str, ...]
    help: str
    low: float | None = None  # numbers: the smallest allowed value
    high: float | None = None  # numbers: the largest allowed value
    choices: tuple[str, ...] = ()  # strings and lists: the allowed values (empty: any string)


@dataclass(frozen=True)
class Headline:
    """A figure a workload's readers draw conclusions from: the one description of a headline,
    which the report reads for its first lines, its overhead tables and plots, what it calls
    noisy and what adaptive repetitions wait on (report/data/declared.py gathers them).

    A headline with a `label` is one figure per configuration (TPC-H's power geometric mean, the
    data load): the first of `steps` the run measured, of `test`, shown in the report's overhead
    table and plots. One without a label stands for every cell of `metric` in the workload's
    tests (`test` None) and `steps` (None: every step, each one a method), each a figure named
    after its test and step (a backup's backups and restores, oltp's TPM and NOPM)."""

    metric: str
    steps: tuple[str, ...] | None = None  # a labelled figure: the first one present is used
    test: str | None = None  # None: any of the declaring workload's tests
    label: str = ""  # short name for tables and plots: "power geomean"
    short: str = ""  # how a findings sentence names it ("power test"); the label when empty
    ranks: bool = False  # the findings rank each engine's encryptions by this figure

    def covers(self, tests: tuple[str, ...], test: str, step: str, metric: str) -> bool:
        """Whether a cell (test, step, metric) of a workload with these `tests` is this figure."""
        return (metric == self.metric and (test == self.test if self.test is not None else test in tests)
                and (self.steps is None or step in self.steps))


GEOMEAN_STEP = "geomean"
"""The step the report derives for each of a workload's `Reporting.query_tests`: the geometric mean of its
query times (report/data/records.py), which a headline may name like a measured step."""

LOAD_HEADLINES = (
    Headline("elapsed_s", ("total", "database"), "load", "data load elapsed", "data load"),
    Headline("size_bytes", ("database",), "load", "database size", "database size"),
)
"""What every workload leads with after its own figures: its data load (`Workload.load`, which
the runner measures as test `load`) and the database it made."""


@dataclass(frozen=True)
class Reporting:
    """What a workload's report needs of it, declared as data that report/ reads through the
    workloads registry (report/data/declared.py) instead of importing the workload's modules.
    Apart from the workload's settings (its tests, scales, options): these only say how its
    results read. A workload with a section of its own declares its own names beside them."""

    # the figures it leads with, in the order its tables show them (its own, then the load's)
    headlines: tuple[Headline, ...] = LOAD_HEADLINES
    # its tests whose steps are numbered queries (`q1`, …), each timed: the report's per-query
    # tables and plots (TPC-H's power and throughput tests)
    query_tests: tuple[str, ...] = ()
    # for a workload that measures a window of counts (oltp): the step recording the window, the
    # step of its intervals, and the rates derived from it, each a count per minute of the
    # window's elapsed_s (rate → count)
    window_step: str | None = None
    interval_step: str | None = None
    per_minute: Mapping[str, str] = field(default_factory=dict)


class Session:
    """The connection a trial's tests run on: the runner owns it and lends it to each run.

    A workload runs on the connection it is given (`connection()`); one that needs the database
    to itself (maintenance's rekey) calls `release()`, and one that goes cold before a
    statement (crud, in cold plans) calls `go_cold()`. Either way the runner's next
    `connection()` opens a new one, untimed, so no workload closes a connection it did not
    open and the runner never uses one a workload closed."""

    def __init__(self, database: Database, go_cold: Callable[[], bool] | None = None) -> None:
        self._database = database
        self._go_cold = go_cold  # stop the engine and drop the OS cache; True if the kernel dropped it
        self._conn: Connection | None = None

    @property
    def cold(self) -> bool:
        """The plan's cache is cold: `go_cold` may be called."""
        return self._go_cold is not None

    def connection(self) -> Connection:
        """The open connection, opened now if there is none."""
        if self._conn is None:
            self._conn = self._database.connect()
        return self._conn

    def release(self) -> None:
        """Close the connection, if one is open (the next `connection()` opens another)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def go_cold(self) -> Connection:
        """Close the connection, stop the engine and drop the OS page cache, then connect again:
        the next statement starts with nothing cached anywhere. Cold plans only."""
        if self._go_cold is None:
            raise RuntimeError("going cold needs a plan with cache = \"cold\"")
        self.release()
        self._go_cold()
        return self.connection()


class AtRest(Protocol):
    """The runner's at-rest scan and verdict rules for the trial's canaries and markers
    (`verify.TrialScan`), which a workload applies to what it writes beside the trial's database
    through `RunContext.judge_at_rest` and `RunContext.view_hits`."""

    def view_hits(self, view: Path | None) -> int | None: ...

    def judge(self, path: Path, expected: str, *, readable: bool, signature: tuple[int, bytes] | None = None,
              column_layer: bool = False, view_hits: int | None = None, engine_state: str = "",
              view_gone: str = "", plaintext_format: bool = False) -> Verdict: ...


class OtherDrivers(Protocol):
    """The drivers on other hosts of a cluster run that run a share of a workload's virtual users
    against the same server (oltp's `driver_hosts`); a cluster unit gives them to its trials."""

    def begin(self, trial: TrialKey, database: Database, test: str) -> int:
        """Have every other driver open its users of `test` on `database` and, once each is
        ready, agree a moment to start: returned as this machine's perf_counter_ns (a barrier)."""

    def results(self) -> list[dict[str, Any]]:
        """Each other driver's log (oltp's UserLog as JSON) once its window has ended."""


@dataclass(frozen=True)
class RunContext:
    """What a workload needs to know about the trial it runs in."""

    database: Database
    dialect: str  # the engine's SQL dialect, which selects the workload's per-dialect SQL
    recorder: Recorder
    scale: float
    streams: int
    data_dir: Path
    seed: int = 1  # the plan's seed, for workloads that generate data or inputs from it
    query_timeout_s: float | None = None  # None: no limit
    options: Mapping[str, Any] = field(default_factory=dict)  # the workload's own plan keys (Option)
    # the connection the tests run on (the runner's; a plain Session on `database` when not given)
    session: Session = field(default=None)  # type: ignore[assignment]  # filled in __post_init__
    # for workloads that need a database of their own beside the trial's (maintenance: an
    # unencrypted copy to encrypt; backup: the restored copies): `scratch_database(workspace,
    # encryption, key)`, the trial engine's provisioning; it is the workload's to close
    scratch_database: Callable[[Path, Encryption, Secret | None], Database] | None = None
    canaries: tuple[str, ...] = ()  # the trial's canaries and markers, for such a database
    markers: tuple[str, ...] = ()
    new_key: Callable[[str], Secret] | None = None  # a fresh key for a purpose (e.g. "rekey-1")
    at_rest: AtRest | None = None  # the runner's at-rest rules, for judge_at_rest and view_hits
    drivers: OtherDrivers | None = None  # a cluster's other drivers of one server (oltp's driver_hosts)

    def __post_init__(self) -> None:
        if self.session is None:
            object.__setattr__(self, "session", Session(self.database))

    def judge_at_rest(self, path: Path, expected: str, *, readable: bool, like: Database | None = None,
                      view_hits: int | None = None, engine_state: str = "", plaintext_format: bool = False
                      ) -> Verdict:
        """`path` (a closed database's directory, an unpacked backup, a sealed file) scanned for the
        trial's canaries and markers and judged by the rules of the trial's own verdict, so a
        workload proves what it wrote beside the trial's database as the runner proves that one.
        `like`: the database whose files these are or were unpacked from (its plaintext signature,
        whether its layer is column-level); `readable`: the canaries were read back through it;
        `plaintext_format`: a plaintext format's magic bytes were found in what `path` holds."""
        signature = like.plaintext_signature() if like is not None else None
        column_layer = like is not None and like.encryption.layer == "column"
        return self._at_rest().judge(path, expected, readable=readable, signature=signature, column_layer=column_layer,
                                     view_hits=view_hits, engine_state=engine_state, plaintext_format=plaintext_format)

    def view_hits(self, database: Database) -> int | None:
        """The trial's canaries found in `database`'s decrypted view (a layer below the engine,
        scanned while the database is open: that layer's positive control); None without one."""
        return self._at_rest().view_hits(database.plaintext_view())

    def _at_rest(self) -> AtRest:
        if self.at_rest is None:
            raise RuntimeError("judging at rest needs the runner's at_rest rules")
        return self.at_rest


class Workload(ABC):
    name: ClassVar[str]
    tests: ClassVar[tuple[str, ...]]
    # the tests a plan runs when it names none (None: all of `tests`); a test left out is one
    # a plan asks for by name (tpch's spill, which exists to make engines write temp files)
    default_tests: ClassVar[tuple[str, ...] | None] = None
    default_scale: ClassVar[float]
    scale_min: ClassVar[float]
    scale_max: ClassVar[float]
    whole_scale: ClassVar[bool] = False  # the scale counts things (oltp: warehouses): whole numbers only
    # how a scale reads in reports, "{}" replaced by the number: "sf{}" (TPC-H's scale factor),
    # "{} rows", "W={}" (warehouses)
    scale_format: ClassVar[str] = "sf{}"
    max_streams: ClassVar[int]
    # the SQL dialects (Engine.dialect) it has its statements for; a plan pairing it with an
    # engine of another dialect is refused (None: any dialect, e.g. a workload of the tests)
    dialects: ClassVar[tuple[str, ...] | None] = None
    options: ClassVar[dict[str, Option]] = {}
    # tests that a server reached by url (Capabilities.remote) cannot run, each with why: the
    # plan refuses them at the workload's line rather than fail every trial (e.g. backup's,
    # which need the engine's own backup tools on files tdebench owns)
    local_tests: ClassVar[dict[str, str]] = {}
    # subdirectories of the trial's workspace (glob patterns) holding what the workload judges by
    # itself (RunContext.judge_at_rest: backup's artifacts and restores, maintenance's plaintext
    # source): the trial's transient capture leaves them out, as its at-rest scan of the database does
    judged_apart: ClassVar[tuple[str, ...]] = ()
    # whether its figures are timings a reader compares against none; False for a workload whose
    # results are outcomes (strength: repeated blocks, refused tampering): the runner warms none of
    # its tests up, and the report's timing sections (overhead, cache fit, per connection) leave its
    # configurations out
    timed: ClassVar[bool] = True
    # what its report needs of it (`Reporting`): data that report/ reads, apart from the settings above
    reporting: ClassVar[Reporting] = Reporting()

    @classmethod
    def plan_problem(cls, dialect: str, given: Mapping[str, Any]) -> tuple[str, str] | None:
        """Why the workload's keys as the plan writes them (`given`) cannot run on an engine of
        `dialect`, and the key to point at; None when they can. The plan reader asks before any
        trial runs, so a setting the engine cannot honour is refused at its line, not ignored."""
        return None

    @classmethod
    def engines_problem(cls, options: Mapping[str, Any],
                        engines: Sequence[tuple[str, bool]]) -> tuple[str, str] | None:
        """The workload's check of its options against the plan's engines taken together ((name,
        reached by url) each, e.g. oltp's driver_hosts, which needs every one by url): (what is
        wrong, the plan key it is about), or None."""
        return None

    @abstractmethod
    def prepare(self, scale: float, data_dir: Path, seed: int) -> None:
        """Make the data for `scale` (once per run, outside every measurement); workloads that
        generate their own data derive it from the plan's `seed`, so a run is repeatable."""

    @abstractmethod
    def load(self, ctx: RunContext, conn: Connection) -> None:
        """Create the schema and load the data, measured as test `load`."""

    def load_steps(self, ctx: RunContext, conn: Connection) -> Iterator[None]:
        """Load like `load`, pausing (yield) between parts, as `steps` does for a test."""
        self.load(ctx, conn)
        yield

    def plant_canaries(self, ctx: RunContext, conn: Connection, canaries: Sequence[str]) -> bool:
        """Put the trial's canaries into the loaded data itself (after `load`), where the tests'
        queries read them, so a sort, spill or temp table of that data carries them and the
        transient capture's positive control can fire; True when they read back through the
        engine (or none are planted). A planted canary must sit in a column the workload seals
        (`Database.seal_columns`), or a column-level encryption would store it in plaintext."""
        return True

    @abstractmethod
    def run(self, test: str, ctx: RunContext, conn: Connection, *, warmup: bool) -> None:
        """Run one test once, measuring every step; raise WrongAnswer after the test if any
        answer was wrong (the measurements are stored first)."""

    def steps(self, test: str, ctx: RunContext, conn: Connection, *, warmup: bool) -> Iterator[None]:
        """Run one test like `run`, pausing (yield) between its parts, so that the runner can run
        the other configurations' parts in between (order = "lockstep"). A workload whose tests
        have no such parts runs the whole test as one."""
        self.run(test, ctx, conn, warmup=warmup)
        yield


def write_canaries(database: Database, conn: Connection, canaries: Sequence[str], markers: Sequence[str]) -> None:
    """Store the trial's canary strings; the at-rest scan looks for exactly these bytes.

    `canary` is a sensitive column, which a column-level encryption seals like the workload's
    own; beside each canary, `marker` is a column no column-level encryption covers: found on
    disk under such an encryption, it shows which files hold the other columns' plaintext
    (and that the scan can see this table's rows at all)."""
    if len(markers) != len(canaries):
        raise ValueError("one marker per canary")
    conn.execute(f"CREATE TABLE {CANARY_TABLE} (id INTEGER PRIMARY KEY, canary VARCHAR(64) NOT NULL, "
                 "marker VARCHAR(64) NOT NULL)")
    database.seal_columns(conn, CANARY_TABLE, ("canary",), ("id",))
    conn.executemany(f"INSERT INTO {CANARY_TABLE} (id, canary, marker) VALUES (?, ?, ?)",
                     [(i, c, m) for i, (c, m) in enumerate(zip(canaries, markers), start=1)])


def read_canaries(conn: Connection) -> set[str]:
    """The canaries readable through the engine: proof that they were written."""
    return {row[0] for row in conn.execute(f"SELECT canary FROM {CANARY_TABLE}")}
