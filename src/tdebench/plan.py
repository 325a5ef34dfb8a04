"""Plans: the TOML matrix of engines × encryptions × workloads × scales, and its trials.

A plan is checked completely before anything runs; every mistake is reported with the
file and line it is on and the valid choices, because a typo found after an hour of
benchmarking is an hour lost.
"""

from __future__ import annotations

import datetime
import math
import random
import re
import tomllib
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from tdebench.errors import InputError
from tdebench.engines import BY_URL, KIT, PROVISIONED, get_engine
from tdebench.engines.base import Engine
from tdebench.engines.base import PLACEBO as PLACEBO_ENCRYPTION
from tdebench.engines.remote import RemoteTarget, parse_url, password_file_problem
from tdebench.measure.affinity import CpuPinning, available_cpus
from tdebench.results import KEY_FORMS, PASSPHRASE, RAW, RunData, TrialKey
from tdebench.measure.oscache import EVICTIONS
from tdebench.workloads import WORKLOADS, Option

CACHE_MODES = ("warm", "cold")
ORDERS = ("interleaved", "lockstep", "sequential")
PAIRED_ORDERS = ("interleaved", "lockstep")
"""Orders whose repetitions are rounds of every configuration: the report pairs them by round."""
_TOP_KEYS = {"name", "description", "measured", "measured_s", "measured_trials", "measured_on", "measured_host", "only",
             "estimated", "estimated_s", "estimated_trials",
             "repetitions", "warmups", "cache", "order", "seed", "sample_interval_s", "placebo", "target_ci_pct",
             "max_minutes", "max_repetitions", "target_tests", "engines", "workloads", "pin_cpus", "pool_hosts",
             "capture_every_s", "quiet_wait_s", "evict"}
PLACEBO = PLACEBO_ENCRYPTION.name
"""The A/A arm's encryption name: `none` again, run and analysed exactly like an encryption."""
DEFAULT_REPETITIONS = 5
"""Five rounds: the fewest at which a paired t-test over rounds finds a 3% overhead amid 5%
per-query noise in 80% of plans (tests/unit/test_paired.py); with three its t has 2 degrees
of freedom and needs an effect twice the noise floor's size."""
QUIET_WAIT_MOST_S = 24 * 3600.0
"""quiet_wait_s's ceiling: a day before one trial; a machine busy longer needs its user, not a wait."""
_ENGINE_KEYS = {"name", "encryptions", "memory_mb", "key_form"}
_SETTING_KEYS = {key for engine in PROVISIONED.values() for key in engine.settings}  # engines' own keys
_REMOTE_KEYS = {"url", "password_env", "password_file", "data_path", "key_id"}
"""An engine's keys for a server tdebench did not start (engines/remote.py)."""
_WORKLOAD_KEYS = {"name", "scale", "scales", "tests", "streams", "query_timeout_s", "repetitions", "memory_mb"}

T = TypeVar("T")


class PlanError(InputError, ValueError):
    """A plan that cannot run, with where in the file the problem is."""

    def __init__(self, message: str, source: str = "", line: int | None = None) -> None:
        where = f"{source}:{line}: " if source and line else (f"{source}: " if source else "")
        super().__init__(where + message)
        self.line = line


@dataclass(frozen=True)
class EngineChoice:
    name: str
    encryptions: tuple[str, ...]  # always starts with "none", the baseline
    # the engine's cache in MB, one configuration per value (Engine.memory_use says what each engine
    # sets); empty: the engine's default (servers 256 MB, embedded engines no limit)
    memory_mb: tuple[int, ...] = ()
    remote: RemoteTarget | None = None  # a server tdebench did not start, by URL (engines/remote.py)
    # how the engine takes the trial's key (engines/base.py KEY_FORMS): "raw" skips the key derivation
    # of the encryptions that take a raw key; the others keep theirs, as each trial records
    key_form: str = PASSPHRASE
    settings: tuple[tuple[str, str], ...] = ()  # the engine's own keys the plan gave (Engine.settings)

    def memories(self) -> tuple[int | None, ...]:
        """The memory values to run: the plan's, or None (the engine's default) when it gave none."""
        return self.memory_mb or (None,)


@dataclass(frozen=True)
class WorkloadSpec:
    name: str
    scales: tuple[float, ...]
    tests: tuple[str, ...]
    streams: int
    query_timeout_s: float = 600.0  # a query running longer is stopped and recorded as "timeout"
    options: tuple[tuple[str, Any], ...] = ()  # the workload's own keys (Workload.options), defaults filled in
    # rounds this workload runs in, at most (None: every round): a workload whose results are
    # outcomes, not timings (strength), runs once beside a timed one that runs every round
    repetitions: int | None = None
    # the engines' memory_mb values it runs at (None: every one): a workload whose outcomes do not
    # move with the cache (strength) runs at one of them beside a timed one that runs at each
    memory_mb: tuple[int, ...] | None = None

    def runs_at(self, memory: int | None) -> bool:
        return self.memory_mb is None or memory in self.memory_mb

    def option_values(self) -> dict[str, Any]:
        return dict(self.options)

    @property
    def driver_hosts(self) -> int:
        """Over how many hosts of a cluster its virtual users are spread (oltp's driver_hosts; 1:
        one driver, the trial's own host)."""
        return int(self.option_values().get("driver_hosts", 1))


@dataclass(frozen=True)
class Plan:
    name: str
    repetitions: int
    warmups: int
    cache: str
    order: str
    seed: int
    engines: tuple[EngineChoice, ...]
    workloads: tuple[WorkloadSpec, ...]
    text: str  # the file exactly as written, stored with the results
    sample_interval_s: float = 1.0  # the resource sampler's interval
    placebo: bool = False  # every engine also runs PLACEBO (none again) as an A/A control
    target_ci_pct: float | None = None  # adaptive: add rounds until every headline CI is ± this
    max_minutes: float | None = None  # adaptive: the time budget for the whole run
    max_repetitions: int = 1000  # adaptive: never more rounds than this
    evict: str = EVICTIONS[0]  # cold: how the OS cache is emptied (measure/oscache.py)
    # adaptive: the tests whose headline figures it waits on ("load" is the load); () for all
    target_tests: tuple[str, ...] = ()
    pin_cpus: CpuPinning | None = None  # where the engine and the driver run; None: wherever the OS likes
    description: str = ""  # what the plan compares, in a line (`tdebench plans` lists it)
    # how long a run of the plan took and where, as its author timed it (`tdebench plans` lists it);
    # free text, never computed: e.g. "4 min 37 s, 2 cores, idle machine (2026-11-22)"
    measured: str = ""
    # the same timed run as figures (`measured_s`, `measured_trials`, `measured_on`): its seconds, its
    # trials and its day, each None where the plan does not give it; with the first two, `run` and
    # `plans` say what a run should take (cli/plans.expected)
    measured_s: float | None = None
    measured_trials: int | None = None
    measured_on: datetime.date | None = None
    # the host of the timed run, as its report names it: the CPU with its crypto flags
    # (measure/environment.cpu_text) and the raw AES-256-GCM speed on 1 MiB pages, e.g. "AMD EPYC
    # with aes, …, avx512f; raw AES-256-GCM 21,255 MiB/s"; "" where not given
    measured_host: str = ""
    # a plan too long to run here (days): what a whole run would take, estimated from measured
    # per-trial times and never measured whole (`estimated`: how, in free text; `estimated_s`,
    # `estimated_trials`: the estimate as figures); `run` and `plans` call it an estimate
    estimated: str = ""
    estimated_s: float | None = None
    estimated_trials: int | None = None
    # a cluster run: pool the figures of hosts whose environments differ (CPU model, flags, kernel,
    # engine versions) instead of reporting each such host apart (report/records.host_blocks)
    pool_hosts: bool = False
    # the transient capture's cadence (capture.py): how often it looks for files unlinked on open
    # and rescans growing ones; 0: no capture, the verdict judges the files at rest only
    capture_every_s: float = 0.5
    # before each trial (in lockstep: each round of a group), wait while other processes keep the
    # machine busy, this many seconds at most (run/runner.py, measure/load.wait_for_quiet); 0: no wait
    quiet_wait_s: float = 0.0

    @property
    def adaptive(self) -> bool:
        """Whether the runner adds rounds after `repetitions` until the target CI is reached."""
        return self.target_ci_pct is not None

    @property
    def as_run(self) -> str:
        """The plan's text as its run stores it: as written, and where it names no `order`, the
        order tdebench chose written on a first line of its own, so that the run reads and resumes
        as it ran whatever a later tdebench's default."""
        if "order" in tomllib.loads(self.text):
            return self.text
        return f'order = "{self.order}"  # not in the plan as written: the order tdebench chose for it\n' + self.text

    def cells(self) -> list[tuple[str, str, WorkloadSpec, float, int | None]]:
        """Every configuration: (engine, encryption, workload, scale, memory_mb). Every memory
        value of an engine runs every encryption, so each is compared with `none` at that memory;
        the placebo only with timed workloads (`Workload.timed`): it is the timings' noise floor,
        and an outcome of none again (strength's) says nothing the baseline does not."""
        return [(e.name, enc, w, scale, memory)
                for e in self.engines for memory in e.memories() for enc in e.encryptions
                for w in self.workloads for scale in w.scales
                if w.runs_at(memory) and (enc != PLACEBO or getattr(WORKLOADS.get(w.name), "timed", True))]

    def workload(self, name: str) -> WorkloadSpec:
        return next(w for w in self.workloads if w.name == name)

    def engine(self, name: str) -> EngineChoice:
        return next(e for e in self.engines if e.name == name)

    @property
    def driver_hosts(self) -> int:
        """The most hosts any workload spreads its drivers over (1: none spreads them), which only
        a cluster run (`--cluster`) has."""
        return max((spec.driver_hosts for spec in self.workloads), default=1)


@dataclass(frozen=True)
class TrialSpec:
    key: TrialKey
    workload: WorkloadSpec


def schedule(plan: Plan) -> list[TrialSpec]:
    """The trials in the order they run.

    `interleaved`: round r runs every configuration once, in an order shuffled by (seed, r),
    before round r+1 starts, so slow drift of the machine hits every configuration alike and
    the report can pair them by round. `lockstep`: the same rounds, with the configurations of
    a group (`group_of`) next to each other, so the runner can run them side by side.
    `sequential`: all repetitions of a configuration back to back, in plan order.
    """
    if plan.order == "sequential":
        return [TrialSpec(TrialKey(engine, enc, workload.name, scale, rep, memory), workload)
                for engine, enc, workload, scale, memory in plan.cells()
                for rep in range(1, min(plan.repetitions, workload.repetitions or plan.repetitions) + 1)]
    return [trial for rep in range(1, plan.repetitions + 1) for trial in round_trials(plan, rep)]


def planned(plan: Plan, done: Collection[TrialKey] = ()) -> list[TrialSpec]:
    """The trials a run of `plan` has to have, in the order they run: `schedule(plan)`, and for
    an adaptive plan also the rounds past its repetitions that the run has begun for each
    comparison group (the group's highest round among `done`, the trials already complete),
    whose missing trials a resumed run adds before it decides on another round."""
    highest: dict[Group, int] = {}
    for key in done if plan.adaptive else ():
        group = comparison_group(key)
        highest[group] = max(highest.get(group, 0), key.repetition)
    rounds = max(highest.values(), default=0)
    return schedule(plan) + [trial for rep in range(plan.repetitions + 1, rounds + 1)
                             for trial in round_trials(plan, rep, highest.keys())
                             if rep <= highest[comparison_group(trial.key)]]


def to_run(plan: Plan, done: Collection[TrialKey] = ()) -> list[TrialSpec]:
    """The planned trials (`planned`) that are not among `done`, in the order they run."""
    return [spec for spec in planned(plan, done) if spec.key not in done]


def round_trials(plan: Plan, rep: int, groups: Collection[Group] | None = None) -> list[TrialSpec]:
    """Round `rep` of an interleaved or lockstep plan: every configuration once (of the
    comparison groups named in `groups`, when given), shuffled by (seed, rep); in lockstep,
    the groups are shuffled and so is the order within each."""
    rng = random.Random(f"{plan.seed}/{rep}")
    trials = [TrialSpec(TrialKey(engine, enc, workload.name, scale, rep, memory), workload)
              for engine, enc, workload, scale, memory in plan.cells()
              if workload.repetitions is None or rep <= workload.repetitions]
    if plan.order != "lockstep":
        rng.shuffle(trials)
    else:  # each group whole, whatever the plan's order of cells (an engine's encryptions × its workloads)
        by_group: dict[tuple[str, int | None, str, float, int], list[TrialSpec]] = {}
        for trial in trials:
            by_group.setdefault(group_of(trial.key), []).append(trial)
        groups_in_turn = list(by_group.values())
        rng.shuffle(groups_in_turn)
        for group in groups_in_turn:
            rng.shuffle(group)
        trials = [trial for group in groups_in_turn for trial in group]
    # filtered after the shuffle: a group's trials run in the same order as in a full round
    return trials if groups is None else [trial for trial in trials if comparison_group(trial.key) in groups]


def default_order(cache: str, evict: str = EVICTIONS[0]) -> str:
    """The order of a plan that names none: lockstep, the most precise, unless a cold cache is made
    by dropping the whole OS cache (`evict = "os"`), where each measured test must run alone."""
    return "interleaved" if cache == "cold" and evict == "os" else "lockstep"


def order_before_recorded(cache: str) -> str:
    """The order a run ran in whose stored plan names none: one from before tdebench wrote the
    order it chose into the stored plan (`Plan.as_run`), when a cold plan without one ran
    interleaved."""
    return "lockstep" if cache == "warm" else "interleaved"


def as_stored(plan: Plan) -> Plan:
    """A run's stored plan in the order the run ran in: where the stored text names none (a run from
    before `Plan.as_run`), the order tdebench then chose, so that resuming it runs the remaining
    trials as the first ones ran."""
    if "order" in tomllib.loads(plan.text):
        return plan
    return replace(plan, order=order_before_recorded(plan.cache))


Group = tuple[str, int | None, str, float]
"""A comparison group: engine, memory_mb, workload, scale (`comparison_group`)."""


def comparison_group(key: TrialKey) -> Group:
    """The trials whose figures are compared with each other: every encryption (the baseline
    and placebo included) of one engine, memory, workload and scale. Adaptive repetitions add
    rounds per comparison group."""
    return (key.engine, key.memory_mb, key.workload, key.scale)


def finished_rounds(run: RunData) -> dict[Group, int]:
    """Each comparison group's highest round among the run's complete trials (an interrupted
    round's trials are not a round)."""
    rounds: dict[Group, int] = {}
    for key in run.complete_trials():
        group = comparison_group(key)
        rounds[group] = max(rounds.get(group, 0), key.repetition)
    return rounds


def group_of(key: TrialKey) -> tuple[str, int | None, str, float, int]:
    """What lockstep runs side by side: a comparison group's trials of one round."""
    return (*comparison_group(key), key.repetition)


def lockstep_groups(trials: list[TrialSpec]) -> list[list[TrialSpec]]:
    """Consecutive trials of one group (`group_of`) together, in the order given."""
    groups: list[list[TrialSpec]] = []
    for trial in trials:
        if groups and group_of(groups[-1][0].key) == group_of(trial.key):
            groups[-1].append(trial)
        else:
            groups.append([trial])
    return groups


def load_plan(path: Path) -> Plan:
    """Read and check a plan file; PlanError (with file and line) on any mistake."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise PlanError(f"cannot read plan: {exc.strerror}", str(path)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise PlanError(f"not UTF-8 text (byte 0x{data[exc.start]:02x}); TOML plans are UTF-8", str(path),
                        line) from None
    return parse_plan(text, str(path))


def only_engines(text: str, engines: Sequence[str]) -> str:
    """A plan's text that runs only `engines` of it (`tdebench run --engine`): the plan as written
    under a first line `only = [...]`, which its run stores, so that a resume or a report reads the
    plan as it ran."""
    names = ", ".join(f'"{name}"' for name in engines)
    written = text.removeprefix("\ufeff")
    return f"only = [{names}]  # tdebench run --engine: the engines of this plan that ran\n{written}"


def parse_plan(text: str, source: str = "<plan>", here: bool = True) -> Plan:
    """The plan in `text` (from `source`, named in errors), checked. `here = False` reads a
    stored plan for what it says, as `compare` does: the paths it names on its machine
    (a server's password_file and data_path) are not looked at, since they may be gone."""
    text = text.removeprefix("\ufeff")  # a byte order mark some editors write: not TOML, but harmless
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PlanError(f"not valid TOML: {exc}", source) from None
    check = Checker(text, source)
    check.keys(data, _TOP_KEYS, "plan")
    engines = data.get("engines")
    workloads = data.get("workloads")
    if not engines:
        raise check.error("the plan has no [[engines]]; add e.g. [[engines]] name = \"duckdb\"", "[[engines]]")
    if not workloads:
        raise check.error("the plan has no [[workloads]]; add e.g. [[workloads]] name = \"tpch\"", "[[workloads]]")
    placebo = check.boolean(data, "placebo", False)
    cache = check.choice(data, "cache", "warm", CACHE_MODES)
    evict = check.choice(data, "evict", EVICTIONS[0], EVICTIONS)
    order = check.choice(data, "order", default_order(cache, evict), ORDERS)
    repetitions = check.integer(data, "repetitions", DEFAULT_REPETITIONS, 1, 1000)
    target = check.number(data, "target_ci_pct", 0.0, 0.01, 100.0) if "target_ci_pct" in data else None
    budget = check.number(data, "max_minutes", 0.0, 0.1, 60.0 * 24 * 30) if "max_minutes" in data else None
    most = check.integer(data, "max_repetitions", 1000, 2, 1000)
    if target is None and ("max_minutes" in data or "max_repetitions" in data):
        key = "max_minutes" if "max_minutes" in data else "max_repetitions"
        raise check.error(f"{key} bounds adaptive repetitions, which target_ci_pct turns on; "
                          "add e.g. target_ci_pct = 2", key)
    if target is not None and order not in PAIRED_ORDERS:
        raise check.error("target_ci_pct adds rounds; it needs order = \"lockstep\" or \"interleaved\"",
                          "target_ci_pct")
    if "evict" in data and cache != "cold":
        raise check.error("evict says how a cold cache is made; add cache = \"cold\" or leave evict out", "evict")
    if order == "lockstep" and cache == "cold" and evict == "os":
        raise check.error("order = \"lockstep\" runs a group's configurations side by side; dropping the whole OS "
                          "cache before one's measured test would empty the others' too: use evict = \"files\" "
                          "(each database's own files) or order = \"interleaved\"", "order")
    if target is not None and most < repetitions:
        raise check.error(f"max_repetitions = {most} is below repetitions = {repetitions}", "max_repetitions")
    if target is None and "target_tests" in data:
        raise check.error("target_tests names what adaptive repetitions wait on, which target_ci_pct turns on; "
                          "add e.g. target_ci_pct = 2", "target_tests")
    engine_tables = list(enumerate(check.tables(engines, "engines")))
    if "only" in data:  # `tdebench run --engine`: the engines of the plan that run, the others not even checked
        only = check.string_list(data, "only", [])
        names = [str(table.get("name")) for _, table in engine_tables]
        unknown = [name for name in only if name not in names]
        if unknown:
            raise check.error(f"the plan has no engine {shown(unknown[0])}; its engines: {', '.join(names)}", "only")
        engine_tables = [(i, table) for i, table in engine_tables if table.get("name") in only]
    engine_choices = tuple(_engine(check.within("engines", i), e, placebo, here) for i, e in engine_tables)
    remote = next((e.name for e in engine_choices if e.remote is not None), None)
    if remote is not None and cache == "cold":
        raise check.error(f"cache = \"cold\" stops each engine and drops its caches; tdebench cannot do that to "
                          f"the {remote} server it reaches by url: use cache = \"warm\"", "cache")
    workload_tables = check.tables(workloads, "workloads")
    workload_specs = tuple(workload_spec(check.within("workloads", i), w) for i, w in enumerate(workload_tables))
    for i, (spec, table) in enumerate(zip(workload_specs, workload_tables)):
        _check_engines(check.within("workloads", i), spec, table, engine_choices)
        problem = WORKLOADS[spec.name].engines_problem(spec.option_values(),
                                                       [(e.name, e.remote is not None) for e in engine_choices])
        if problem is not None:
            raise check.within("workloads", i).error(*problem)
    tests_measured = ("load", *dict.fromkeys(test for spec in workload_specs for test in spec.tests))
    target_tests = check.choices(data, "target_tests", (), tests_measured) if "target_tests" in data else ()
    for kind, names in (("engines", [e.name for e in engine_choices]), ("workloads", [w.name for w in workload_specs])):
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:  # two tables of one name would run its trials twice and silently double n
            lines = [n for n, line in enumerate(check.lines, start=1)
                     if re.match(rf"""\s*name\s*=\s*["']{re.escape(twice[0])}["']""", line)]
            where = f" (lines {', '.join(map(str, lines))})" if len(lines) > 1 else ""
            raise check.error(f"[[{kind}]] {shown(twice[0])} is given twice{where}; merge its settings into one table "
                              f"(lists: encryptions, memory_mb, scales, tests)", f'"{twice[0]}"')
    return Plan(
        name=check.string(data, "name", Path(source).stem),
        repetitions=repetitions,
        warmups=check.integer(data, "warmups", 1, 0, 100),
        cache=cache,
        evict=evict,
        order=order,
        seed=check.integer(data, "seed", 1, 0, 2**63 - 1),
        engines=engine_choices,
        workloads=workload_specs,
        text=text,
        sample_interval_s=check.number(data, "sample_interval_s", 1.0, 0.1, 60.0),
        placebo=placebo,
        target_ci_pct=target,
        max_minutes=budget,
        max_repetitions=most,
        target_tests=target_tests,
        pin_cpus=_pin_cpus(check, data["pin_cpus"]) if "pin_cpus" in data else None,
        description=check.string(data, "description", ""),
        measured=check.string(data, "measured", ""),
        measured_s=_seconds(check, data, "measured_s", "the timed run took"),
        measured_trials=_trials(check, data, "measured_trials", "the timed run had"),
        measured_on=_measured_on(check, data),
        measured_host=check.string(data, "measured_host", ""),
        estimated=check.string(data, "estimated", ""),
        estimated_s=_seconds(check, data, "estimated_s", "a whole run would take"),
        estimated_trials=_trials(check, data, "estimated_trials", "the estimate is for"),
        pool_hosts=check.boolean(data, "pool_hosts", False),
        capture_every_s=check.number(data, "capture_every_s", 0.5, 0.0, 60.0),
        quiet_wait_s=check.number(data, "quiet_wait_s", 0.0, 0.0, QUIET_WAIT_MOST_S),
    )


def _seconds(check: "Checker", data: dict[str, Any], key: str, what: str) -> float | None:
    """`measured_s` or `estimated_s`: the seconds `what` ("the timed run took"), a finite number
    above 0."""
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise check.error(f"{key} must be the seconds {what}, a number above 0, "
                          f"e.g. {key} = 508 for 8 min 28 s", key)
    return float(value)


def _trials(check: "Checker", data: dict[str, Any], key: str, what: str) -> int | None:
    """`measured_trials` or `estimated_trials`: the trials `what` ("the timed run had"), a whole
    number above 0."""
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise check.error(f"{key} must be the trials {what}, a whole number above 0, "
                          f"e.g. {key} = 108", key)
    return value


def _measured_on(check: "Checker", data: dict[str, Any]) -> datetime.date | None:
    """`measured_on`: the day of the plan's timed run, a TOML date (measured_on = 2026-12-06) or
    the same quoted; a time of day is refused, since the key holds a day."""
    value = data.get("measured_on")
    if value is None:
        return None
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        try:
            return datetime.date.fromisoformat(value)
        except ValueError:
            pass  # a day no calendar has (2026-02-30): refused below
    elif isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return value
    raise check.error("measured_on must be the day of the timed run, YYYY-MM-DD, e.g. measured_on = 2026-12-06",
                      "measured_on")


_PIN_EXAMPLE = "e.g. pin_cpus = { engine = [1], driver = [0] }"


def _pin_cpus(check: "Checker", table: Any) -> CpuPinning:
    """`pin_cpus`: the CPUs of the engine and of the driver, each a list of CPUs this process
    may use on this machine."""
    if not isinstance(table, dict):
        raise check.error(f"pin_cpus must be a table, {_PIN_EXAMPLE}", "pin_cpus")
    unknown = sorted(set(table) - {"engine", "driver"})
    if unknown:
        raise check.error(f"unknown key {shown(unknown[0])} in pin_cpus; valid: driver, engine", "pin_cpus")
    usable = available_cpus()
    chosen = {}
    for role in ("engine", "driver"):
        if role not in table:
            raise check.error(f"pin_cpus needs {role} (a list of CPUs), {_PIN_EXAMPLE}", "pin_cpus")
        value = table[role]
        if (not isinstance(value, list) or not value
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
            raise check.error(f"pin_cpus.{role} must be a non-empty list of CPU numbers, {_PIN_EXAMPLE}", "pin_cpus")
        if len(set(value)) != len(value):
            raise check.error(f"pin_cpus.{role} lists a CPU twice", "pin_cpus")
        missing = sorted(set(value) - usable)
        if missing:
            raise check.error(f"pin_cpus.{role}: CPU {', '.join(map(str, missing))} is not available on this "
                              f"machine; valid: {', '.join(map(str, sorted(usable)))}", "pin_cpus")
        chosen[role] = tuple(value)
    return CpuPinning(**chosen)


def _engine(check: "Checker", table: dict[str, Any], placebo: bool = False, here: bool = True) -> EngineChoice:
    check.keys(table, _ENGINE_KEYS | _REMOTE_KEYS | _SETTING_KEYS, "[[engines]]")
    remote = _remote(check, table, here) if "url" in table else None
    if remote is None:
        given = sorted(set(table) & _REMOTE_KEYS)
        if given:
            raise check.error(f"{given[0]} is for a server reached by url; add url = \"…\" or remove it", given[0])
        only_remote = tuple(name for name in BY_URL if name not in PROVISIONED)
        if table.get("name") in only_remote:
            example = BY_URL[table["name"]].url_example()
            kit = (f", or write its script kit: tdebench script PLAN --engine {table['name']}" if table["name"] in KIT
                   else "")
            raise check.error(f"tdebench does not start {table['name']} servers: reach yours by url, e.g. "
                              f"url = \"{example}\" with password_env or password_file{kit}",
                              str(table["name"]))
    name = remote.engine if remote is not None else check.choice(table, "name", None, tuple(PROVISIONED))
    engine = get_engine(name, remote=remote)
    valid = tuple(e.name for e in engine.encryptions)
    if table.get("encryptions") in ("all", ["all"]):  # legacy ciphers and plaintext defaults only by name
        names = [e.name for e in engine.encryptions if not e.by_name_only]
    else:
        names = check.string_list(table, "encryptions", list(valid))
    for enc in names:
        if enc not in valid:
            raise check.error(f"engine {name!r} has no encryption {shown(enc)}; valid: {', '.join(valid)}", enc)
    if len(set(names)) != len(names):
        raise check.error(f"engine {name!r} lists an encryption twice", "encryptions")
    ordered = ["none"] + [n for n in names if n != "none"]  # the baseline every overhead needs
    if placebo:
        ordered.insert(1, PLACEBO)
    return EngineChoice(name, tuple(ordered), _memory(check, table, engine), remote,
                        _key_form(check, table, engine, names), _settings(check, table, engine))


def _settings(check: "Checker", table: dict[str, Any], engine: Engine) -> tuple[tuple[str, str], ...]:
    """The engine's own keys (`Engine.settings`, e.g. sqlite's temp_store), each one of its choices;
    one of another engine's is refused at its line, naming the engines that have it."""
    chosen = []
    for key in sorted(set(table) & _SETTING_KEYS):
        if key not in engine.settings:
            owners = [e.name for e in PROVISIONED.values() if key in e.settings]
            raise check.error(f"{key} is a setting of {', '.join(owners)} only, not of {engine.name}: remove it", key)
        chosen.append((key, check.choice(table, key, None, engine.settings[key])))
    return tuple(chosen)


def _key_form(check: "Checker", table: dict[str, Any], engine: Engine, names: list[str]) -> str:
    """`key_form`: "raw" only where one of the engine's listed encryptions takes a raw key (the
    others keep their key derivation, and each trial records which form it used)."""
    form = check.choice(table, "key_form", PASSPHRASE, KEY_FORMS)
    if form != RAW:
        return form
    raw = [e.name for e in engine.encryptions if e.raw_key_bytes]
    if not raw:
        raise check.error(f"key_form = \"raw\": {engine.name} takes no raw key ({engine.key_derivation}); "
                          f"valid: {PASSPHRASE}", "key_form")
    if not any(engine.encryption(name).raw_key_bytes for name in names):
        raise check.error(f"key_form = \"raw\": none of {engine.name}'s listed encryptions takes a raw key; those "
                          f"that do: {', '.join(raw)} (or key_form = \"{PASSPHRASE}\")", "key_form")
    return form


def _remote(check: "Checker", table: dict[str, Any], here: bool = True) -> RemoteTarget:
    """A server tdebench did not start: its url, where its password is (exactly one of
    password_env and password_file, a 0600 file), where its data files are readable (data_path,
    optional) and, for MariaDB, the key id of its encrypted tables. The two paths are checked
    only `here` (see parse_plan)."""
    name = check.choice(table, "name", None, tuple(BY_URL))
    url = check.string(table, "url", "")
    try:
        user, host, port, database = parse_url(name, url)
    except ValueError as exc:
        raise check.error(f"url: {exc}", "url") from None
    if "memory_mb" in table:
        raise check.error(f"memory_mb sets the cache of a server tdebench starts; the {name} server at {url} keeps "
                          "its own: remove memory_mb", "memory_mb")
    sources = [key for key in ("password_env", "password_file") if key in table]
    if len(sources) != 1:
        raise check.error(f"a server reached by url needs its password from exactly one of password_env = "
                          f"\"VARIABLE\" or password_file = \"path\" (mode 0600), never in the plan; "
                          f"given: {', '.join(sources) or 'neither'}", sources[1] if sources else "url")
    source = check.string(table, sources[0], "")
    if not source:
        raise check.error(f"{sources[0]} is empty", sources[0])
    if sources[0] == "password_file" and here:
        problem = password_file_problem(Path(source))
        if problem is not None:
            raise check.error(problem, "password_file")
    data_path = check.string(table, "data_path", "")
    if data_path and here and not Path(data_path).is_dir():
        raise check.error(f"data_path {data_path} is not a directory tdebench can read (where the {name} server's "
                          "data files are, scanned read-only for the at-rest verdict)", "data_path")
    if "key_id" in table and not BY_URL[name].takes_key_id:
        raise check.error(f"key_id names the key of MariaDB's encrypted tables; {name} has none", "key_id")
    key_id = check.integer(table, "key_id", 1, 1, 2**32 - 1)
    return RemoteTarget(engine=name, url=url, user=user, host=host, port=port, database=database,
                        password_env=source if sources[0] == "password_env" else "",
                        password_file=source if sources[0] == "password_file" else "",
                        data_path=data_path, key_id=key_id)


_MEMORY_MB = (2, 1 << 20)
"""memory_mb's range: from SQLite's default page cache (2000 KiB a connection) up, so a plan can
measure the default regime beside larger caches; 1 TiB at most."""


def _memory(check: "Checker", table: dict[str, Any], engine: Engine) -> tuple[int, ...]:
    """`memory_mb`: one whole number of MB, or a list of them (one configuration each), none
    below what the engine starts with (`Engine.memory_min_mb`)."""
    if "memory_mb" not in table:
        return ()
    values = _memory_values(check, table)
    least, why = engine.memory_min_mb
    if min(values) < least:
        raise check.error(f"memory_mb = {min(values)} is below what {engine.name} starts with: {why}; "
                          f"valid: {least} to {_MEMORY_MB[1]}", "memory_mb")
    return values


def _memory_values(check: "Checker", table: dict[str, Any]) -> tuple[int, ...]:
    """`memory_mb` as written: one whole number of MB or a non-empty list of them, none twice."""
    raw = table["memory_mb"]
    if not isinstance(raw, list):
        values: tuple[int, ...] = (check.integer(table, "memory_mb", 0, *_MEMORY_MB),)
    elif not raw:
        raise check.error("memory_mb must be a whole number or a non-empty list of them, "
                          "e.g. memory_mb = [64, 1024]", "memory_mb")
    else:
        values = tuple(check.integer({"memory_mb": value}, "memory_mb", 0, *_MEMORY_MB) for value in raw)
    if len(set(values)) != len(values):
        raise check.error("memory_mb lists a value twice", "memory_mb")
    return values


def _check_engines(check: "Checker", spec: WorkloadSpec, table: dict[str, Any],
                   engines: tuple[EngineChoice, ...]) -> None:
    """Refuse, at the workload's line, a workload paired with an engine it cannot run on: one
    whose SQL dialect it has no statements for (e.g. maintenance on a SQL Server reached by url),
    one its keys as written cannot run on (`Workload.plan_problem`, e.g. oltp's procedures on
    Oracle), or a server by url asked for tests only engines tdebench starts can run
    (`Workload.local_tests`, e.g. backup's); and memory_mb values the engines do not give."""
    workload = WORKLOADS[spec.name]
    given_all = sorted({memory for choice in engines for memory in choice.memory_mb})
    stray = sorted(set(spec.memory_mb or ()) - set(given_all))
    if stray and given_all:
        raise check.error(f"memory_mb = {stray[0]} is none of the engines' memory_mb; valid: "
                          f"{', '.join(map(str, given_all))}", "memory_mb")
    for choice in engines:
        if spec.memory_mb is not None and not set(spec.memory_mb) & set(choice.memory_mb):
            given = ", ".join(map(str, choice.memory_mb)) or "none (its default cache)"
            raise check.error(f"memory_mb picks which of the engines' memory_mb values the {spec.name} workload "
                              f"runs at, and {choice.name} gives none of {list(spec.memory_mb)}; its memory_mb: "
                              f"{given}", "memory_mb")
        engine = get_engine(choice.name, remote=choice.remote)
        if workload.dialects is not None and engine.dialect not in workload.dialects:
            raise check.error(f"the {spec.name} workload has no SQL for {choice.name} (dialect {engine.dialect}); "
                              f"it has for the dialects {', '.join(workload.dialects)}", "name")
        problem = workload.plan_problem(engine.dialect, table)
        if problem is not None:
            message, key = problem
            raise check.error(f"{key} cannot run on {choice.name}: {message}", key)
        local = [test for test in spec.tests if test in workload.local_tests]
        if engine.capabilities.remote and local:
            rest = [test for test in spec.tests if test not in workload.local_tests]
            fix = (f"give tests = [{', '.join(repr(test) for test in rest)}]" if rest
                   else f"run it on an engine tdebench starts ({', '.join(PROVISIONED)})")
            raise check.error(f"the {spec.name} workload's {', '.join(local)} cannot run on {choice.name} by url: "
                              f"{workload.local_tests[local[0]]}; {fix}", "tests" if "tests" in table else "name")


def workload_spec(check: "Checker", table: dict[str, Any]) -> WorkloadSpec:
    """One [[workloads]] table checked (name, scales, tests, streams, timeout and the workload's own
    keys); public for the script kit, which reads the tpch table of a plan whose engines it
    writes scripts for rather than runs (kit/scripts.py)."""
    name = check.choice(table, "name", None, tuple(WORKLOADS))
    workload = WORKLOADS[name]
    check.keys(table, _WORKLOAD_KEYS | set(workload.options), f"[[workloads]] {name}")
    if "scale" in table and "scales" in table:
        raise check.error("give either scale or scales, not both", "scales")
    if "scales" in table:
        raw = table["scales"]
        if not isinstance(raw, list) or not raw:
            raise check.error("scales must be a non-empty list of numbers, e.g. scales = [0.01, 0.1]", "scales")
    else:
        raw = [table.get("scale", workload.default_scale)]
    scales = []
    for value in raw:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise check.error(f"scale {shown(value)} is not a number", "scale")
        if not workload.scale_min <= value <= workload.scale_max:
            raise check.error(f"scale factor {value:g} is out of range for {name}: "
                              f"{workload.scale_min:g} to {workload.scale_max:g}", "scale")
        if workload.whole_scale and value != int(value):
            raise check.error(f"scale {value:g} is not a whole number; {name}'s scale counts whole things", "scale")
        scales.append(float(value))
    tests = check.string_list(table, "tests", list(workload.default_tests or workload.tests))
    for test in tests:
        if test not in workload.tests:
            raise check.error(f"workload {name!r} has no test {shown(test)}; valid: {', '.join(workload.tests)}", test)
    streams = check.integer(table, "streams", min(2, workload.max_streams), 1, workload.max_streams)
    timeout = check.number(table, "query_timeout_s", 600.0, 0.001, 86400.0)
    options = tuple((key, check.option(table, key, option)) for key, option in sorted(workload.options.items()))
    repetitions = check.integer(table, "repetitions", 0, 1, 1000) if "repetitions" in table else None
    memory = _memory_values(check, table) if "memory_mb" in table else None
    return WorkloadSpec(name, tuple(scales), tuple(tests), streams, timeout, options, repetitions, memory)


def shown(value: Any, limit: int = 60) -> str:
    """A value from the plan as an error message quotes it: repr, cut to `limit` characters."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit} more characters)"


class Checker:
    """Typed reads from parsed TOML that fail with the line the key is on: the first line from
    `first` on that holds it (a table's checker starts at the table's header, so a key missing
    from the table points there). Public for the script kit (kit/scripts.py), which reads its
    part of a plan with the same checks and messages."""

    def __init__(self, text: str, source: str, first: int = 1, last: int | None = None) -> None:
        self.lines = text.splitlines()
        self.source = source
        self.first, self.last = first, last or len(self.lines)

    def within(self, kind: str, index: int) -> "Checker":
        """The checker of the `index`-th [[kind]] table, from its header to the next table's
        (the whole file's if the plan writes the tables another way)."""
        headers = [n for n, line in enumerate(self.lines, start=1) if line.split("#", 1)[0].strip().startswith("[")]
        mine = [n for n in headers if self.lines[n - 1].split("#", 1)[0].replace(" ", "").strip() == f"[[{kind}]]"]
        if index >= len(mine):
            return self
        following = [n for n in headers if n > mine[index]]
        return Checker("\n".join(self.lines), self.source, mine[index], following[0] - 1 if following else None)

    def line_of(self, needle: str) -> int | None:
        for number, line in enumerate(self.lines[self.first - 1:self.last], start=self.first):
            code = line.split("#", 1)[0]
            if needle in code:
                return number
        return None

    def error(self, message: str, needle: str, fallback: str | None = None) -> PlanError:
        """A PlanError at the line holding `needle`, else `fallback` (a value TOML unescaped, such
        as a control character written "\\u001b", is not in the text as written: its key is)."""
        line = self.line_of(needle)
        if line is None and fallback is not None:
            line = self.line_of(fallback)
        return PlanError(message, self.source, line)

    def keys(self, table: dict[str, Any], valid: set[str], where: str) -> None:
        for key in table:
            if key not in valid:
                raise self.error(f"unknown key {shown(key)} in {where}; valid: {', '.join(sorted(valid))}", key)

    def tables(self, value: Any, name: str) -> list[dict[str, Any]]:
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise self.error(f"{name} must be written as [[{name}]] tables", name)
        return value

    def string(self, table: dict[str, Any], key: str, default: str) -> str:
        return self._typed(table, key, default, str, "a string")

    def _typed(self, table: dict[str, Any], key: str, default: T, kind: type[T], words: str) -> T:
        """`table[key]` (`default` when absent), refused at its line unless a `kind`."""
        value = table.get(key, default)
        if not isinstance(value, kind):
            raise self.error(f"{key} must be {words}", key)
        return value

    def integer(self, table: dict[str, Any], key: str, default: int, low: int, high: int) -> int:
        value = table.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"{key} must be a whole number from {low} to {high}", key)
        if not low <= value <= high:
            raise self.error(f"{key} = {value} is out of range: {low} to {high}", key)
        return value

    def boolean(self, table: dict[str, Any], key: str, default: bool) -> bool:
        return self._typed(table, key, default, bool, "true or false")

    def number(self, table: dict[str, Any], key: str, default: float, low: float, high: float) -> float:
        value = table.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
            raise self.error(f"{key} must be a number from {low:g} to {high:g}", key)
        return float(value)

    def choice(self, table: dict[str, Any], key: str, default: str | None, valid: tuple[str, ...]) -> str:
        value = table.get(key, default)
        if value is None:
            raise self.error(f"missing {key}; valid: {', '.join(valid)}", "[[")
        if isinstance(value, int) and not isinstance(value, bool) and str(value) in valid:
            value = str(value)  # a count among the choices (threads = 2), written as a number
        if value not in valid:
            raise self.error(f"unknown {key} {shown(value)}; valid: {', '.join(valid)}", str(value), key)
        return str(value)  # one of `valid`: already a str

    def option(self, table: dict[str, Any], key: str, option: Option) -> Any:
        """A workload's own key, typed and bounded by its `Option`."""
        default = option.default
        if isinstance(default, bool):
            value = table.get(key, default)
            if not isinstance(value, bool):
                raise self.error(f"{key} must be true or false ({option.help})", key)
            return value
        if isinstance(default, int):
            low = int(option.low) if option.low is not None else -(2**63)
            high = int(option.high) if option.high is not None else 2**63 - 1
            return self.integer(table, key, default, low, high)
        if isinstance(default, float):
            floor = option.low if option.low is not None else float("-inf")
            ceiling = option.high if option.high is not None else float("inf")
            return self.number(table, key, default, floor, ceiling)
        if isinstance(default, tuple):
            return self.choices(table, key, default, option.choices)
        if option.choices:
            return self.choice(table, key, default, option.choices)
        return self.string(table, key, default)

    def choices(self, table: dict[str, Any], key: str, default: tuple[str, ...],
                valid: tuple[str, ...]) -> tuple[str, ...]:
        """A non-empty list of distinct names from `valid`, in the order written."""
        names = self.string_list(table, key, list(default))
        for name in names:
            if name not in valid:
                raise self.error(f"unknown {key} entry {shown(name)}; valid: {', '.join(valid)}", name, key)
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise self.error(f"{key} names {', '.join(repeated)} more than once", repeated[0])
        return tuple(names)

    def string_list(self, table: dict[str, Any], key: str, default: list[str]) -> list[str]:
        value = table.get(key, default)
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise self.error(f"{key} must be a non-empty list of names", key)
        return value
