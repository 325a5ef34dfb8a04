"""What a run records: the record kinds of results.jsonl, their JSON form, and a run read back.

Record kinds (the `kind` of each line; `KINDS` maps each to its class and to its list in
`RunData`, so adding a kind is its class, its row there and its `RunData` field):
- `measurement`: one measured step of a trial (a query, a load, a whole test) with its metrics;
- `verdict`: the at-rest check of a trial;
- `trial`: how a trial ended (ok or failed, with the error), its cache state, the load average
  around it and the CPUs it was pinned to;
- `cipher`: the machine's raw cipher throughput, measured once per run;
- `sample`: one interval of the resource sampler (CPU %, memory, disk, other processes' CPU,
  load average) during a trial;
- `stopping`: why an adaptive run stopped adding rounds (target reached, time budget, cap);
- `resume`: `tdebench run --resume` continued the run here: how many trials it kept, how many
  incomplete ones it dropped, and what of the environment had changed.

A trial is complete when its `trial` record is stored: the runner writes it last, after the
trial's measurements, samples and verdict (`complete_trials`). Reading and writing the files
is store.py's.

The format is versioned (`FORMAT`, kept in the run's manifest.json by store.py): a run written
in an older version is brought to the current shape by `upgrade` as it is read, record by
record, and that is the one place that knows what an older tdebench left out and what its
absence meant; the dataclasses below describe the current format.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast


@dataclass(frozen=True, order=True)
class TrialKey:
    """Which cell of the matrix, and which repetition of it (1-based)."""

    engine: str
    encryption: str
    workload: str
    scale: float
    repetition: int
    # the plan's memory_mb for the engine (a plan axis: one configuration per value, for every
    # workload); None when the plan gave none (the engine's default); written only when set, in
    # every format alike (a record without it, older than the axis too, reads as None)
    memory_mb: int | None = None

    @property
    def id(self) -> str:
        memory = f"/m{self.memory_mb}" if self.memory_mb is not None else ""
        return f"{self.engine}/{self.encryption}/{self.workload}/sf{self.scale:g}{memory}/r{self.repetition}"

    @property
    def config(self) -> tuple[str, str, str, float, int | None]:
        """The cell without the repetition: what repetitions are grouped by, the memory_mb
        included (an encryption at 64 MB is another configuration than at 2 MB)."""
        return (self.engine, self.encryption, self.workload, self.scale, self.memory_mb)


@dataclass(frozen=True)
class Measurement:
    """One measured step. Metric names carry their unit: `elapsed_s`, `cpu_s`, `read_bytes`,
    `write_bytes`, `read_chars`, `write_chars`, `size_bytes`; with a layer below the engine
    (gocryptfs) `layer_cpu_s`, `layer_read_chars` and `layer_write_chars`, its part of `cpu_s`,
    `read_chars` and `write_chars`. `cpu_s` is the scheduler's CPU time in ns
    (measure/process.py); a run written before that holds the same metric in 10 ms clock ticks
    of the whole process, read as it is (the metrics are an open mapping: no format change)."""

    trial: TrialKey
    test: str  # "load", "open", "power", "throughput"
    step: str  # "q1".."q22", "total", "database"
    metrics: dict[str, float]
    stream: int | None = None  # throughput test: stream number (1..S); power test: 0
    warmup: bool = False  # warm-up runs are kept but never enter statistics
    answer: str | None = None  # "ok", "failed" or "unchecked" for a query; None otherwise
    # which measured pass of its test within the trial (tpch's `passes`, 1-based); statistics
    # take each step's median over a trial's passes, so a trial still counts once
    pass_number: int = 1
    # the console client whose log `tdebench import` read this from (sqlcmd, sqlplus, mysql):
    # the client's or server's own timing, not tdebench's clock; None when tdebench measured it
    imported_from: str | None = None
    # what the engine said about the step, when that is the result (strength's tamper test: the
    # error that refused a changed page), or how the step laid the data out (TPC-H's load
    # `indexes`: whether planner statistics were gathered), never a key; None for every other step
    note: str | None = None


@dataclass(frozen=True)
class FileScan:
    """What the at-rest scan found in one file."""

    path: str  # relative to the trial's workspace
    bytes: int
    hits: int  # canary occurrences, all encodings
    first_hit_offset: int | None
    entropy_mean: float  # bits per byte, mean over blocks
    low_entropy_blocks: int  # blocks below the plaintext threshold (zero blocks excluded)
    blocks: int
    plaintext_header: bool | None  # None: the engine has no plaintext signature to check
    marker_hits: int = 0  # occurrences of the markers (the canary table's unsealed column)
    # non-zero blocks whose entropy was measured (the mean and the low count are over these):
    # a trial's scan samples them, see verify.ENTROPY_EVERY; None: every block (`upgrade`)
    entropy_blocks: int | None = None
    # what the file is (FILE_KINDS, `Database.file_kind`); "": not recorded (`upgrade`)
    kind: str = ""
    # caught while the trial ran (capture.py), not at rest: a file gone before the trial ended
    # (a spill, a file unlinked on open), or an earlier content of one still there that held canaries
    transient: bool = False


FILE_KINDS = ("data", "log", "temp", "backup", "other")
"""What a scanned file is: the database's data, its WAL/journal/log, a temp or spill file, a
backup's artifact or staging, or anything else (key, option and pid files)."""
FILE_KIND_TITLES = {"data": "data", "log": "WAL/log", "temp": "temp/spill", "backup": "backup", "other": "other"}


TRANSIENT_NONE = "none caught"
TRANSIENT_CLEAN = "no canary"
TRANSIENT_CANARIES = "canaries"
"""`Verdict.transient`: what the transient capture caught (capture.py): no file gone before the
trial ended, such files none of which held a canary, or such files with canaries (in a baseline:
the transient positive control; in an encrypted trial: plaintext)."""

NOT_VERIFIED = "not verified (remote)"
"""The verdict of a trial on a server tdebench did not start whose files it may not read."""


@dataclass(frozen=True)
class Verdict:
    """The at-rest check of a trial, taken with the database closed."""

    trial: TrialKey
    verdict: str  # "encrypted", "plaintext", "inconclusive", "error" or NOT_VERIFIED
    expected: str  # "plaintext" for the baseline, "encrypted" otherwise
    files_scanned: int
    bytes_scanned: int
    first_hit: str | None  # "file@offset (encoding)" of the first canary found
    detail: str = ""
    files: tuple[FileScan, ...] = ()
    engine_state: str = ""  # what the engine itself reports about its encryption (e.g. MariaDB)
    view_hits: int | None = None  # fs layers: canary hits in the decrypted view (positive control)
    exposed: tuple[str, ...] = ()  # column layer: files holding plaintext of the unsealed columns
    # the transient capture's result (TRANSIENT_*): "" when none ran (capture_every_s = 0, or
    # `upgrade`); else whether it caught files gone before the end, and canaries in them
    transient: str = ""
    # CPU seconds the transient capture's watch used while the trial ran (capture.CaptureStats.cpu_s):
    # what it could take from the measurement; None when no capture ran
    capture_cpu_s: float | None = None

    @property
    def as_expected(self) -> bool:
        return self.verdict == self.expected

    @property
    def unverified(self) -> bool:
        """Nothing could be scanned (a remote server without data_path): not as expected, yet no
        failure of the run either; the report says so."""
        return self.verdict == NOT_VERIFIED

    @property
    def unexpected(self) -> bool:
        """Scanned and not as expected: what fails a run and is marked in the report (an
        unverified trial is neither)."""
        return not self.as_expected and not self.unverified

    @property
    def leak(self) -> bool:
        """Plaintext found where encryption was expected: a leak, even in a trial that failed."""
        return self.verdict == "plaintext" and self.expected == "encrypted"


@dataclass(frozen=True)
class TrialOutcome:
    trial: TrialKey
    status: str  # "ok" or "failed"
    cache: str  # "warm" or "cold" as the plan asked
    cache_dropped: bool  # cold only: whether the OS page cache was really dropped
    elapsed_s: float
    error: str = ""
    key_derived: bool = False  # key from the user's key file (True) or random (False)
    # how the engine took the key (KEY_FORMS): "passphrase" (its key derivation ran on every open)
    # or "raw" (a plan's key_form = "raw"); "" without a key, or not recorded (`upgrade`)
    key_form: str = ""
    # the 1-minute load average as the trial started and ended; None: not recorded (`upgrade`)
    load_start: float | None = None
    load_end: float | None = None
    # the plan's pin_cpus as applied (measure/affinity.py): the CPUs the engine's processes and
    # the driver (tdebench itself) were allowed to run on; None when the plan did not pin
    engine_cpus: tuple[int, ...] | None = None
    driver_cpus: tuple[int, ...] | None = None
    # the memory the engine's own cache really had, in MiB (Engine.cache_mb): memory_mb, or the
    # engine's default (SQLite's 2000 KiB page cache, DuckDB's 80% of memory, the servers' pools);
    # 0 when not known: a server tdebench did not start (and in format 1, an embedded engine's
    # default: "no limit set by tdebench", see report/summaries/cache.py); None: not recorded (`upgrade`)
    cache_mb: float | None = None
    # the host that ran the trial in a cluster run (cluster.host_identity: its hostname, and the
    # worker's name where a machine runs several); None in a run on one machine
    host: str | None = None
    # the plan's quiet_wait_s (run/runner.py, measure/load.wait_for_quiet): the seconds the run waited
    # before the trial for other processes to quiet down, and their CPU (% of one core) when it
    # started (above BUSY_OTHERS_PCT: the wait ran out); None: no wait (quiet_wait_s = 0, `upgrade`)
    quiet_waited_s: float | None = None
    quiet_others_pct: float | None = None
    # cold only: how the OS page cache was emptied before each measured test (the plan's evict,
    # measure/oscache.py): "files", the database's files only, or "os", the whole cache; "" warm
    evicted: str = ""


@dataclass(frozen=True)
class CipherSpeed:
    cipher: str  # e.g. "aes-256-gcm"
    chunk_bytes: int  # the page size: bytes encrypted under one nonce/IV
    mib_per_s: float | None  # None: no installed library implements the cipher (see note)
    library: str = ""
    note: str = ""  # why it is unavailable, or what the figure leaves out
    reused_context: bool = False  # one context per key (False: a context per chunk, `upgrade`)
    host: str | None = None  # the host measured in a cluster run (as TrialOutcome.host); None on one machine

    @property
    def available(self) -> bool:
        return self.mib_per_s is not None


PASSPHRASE, RAW = "passphrase", "raw"
KEY_FORMS = (PASSPHRASE, RAW)
"""How a plan has an engine take the trial's key (`key_form`, recorded in `TrialOutcome.key_form`):
"passphrase", the engine's own way (its key derivation, if it has one, runs on every open); "raw",
the key itself where the engine takes one for the encryption (`Encryption.raw_key_bytes`), as
performance-minded users configure it and Zetetic advises for fair comparisons of SQLCipher."""

ON_OPEN = "derived on every open"
AT_START = "taken once, when the server starts"
AT_MOUNT = "derived once, when the layer mounts"
PER_VALUE = "derived for every value"
"""When an encryption turns the trial's key into its cipher's (`EncryptionFacts.key_taken`,
`Engine.key_taken`): on every open (SQLite3MC's KDFs, DuckDB's ATTACH: part of an open's time),
once when the server starts (MariaDB reads its key file) or the file-system layer mounts
(gocryptfs's scrypt): part of no open timed after it, or for every value a column layer encrypts
or decrypts (pgcrypto's S2K)."""

BACKUP_FULL, BACKUP_FULL_COMPRESSED, BACKUP_LOGICAL = "full", "full-compressed", "logical"
"""The backup methods (`BackupMethod.name`): the backup workload's tests are named by them."""

ENCRYPTIONS = "encryptions"
"""environment.json's record of each engine's encryptions as the run's tdebench defined them
(`EncryptionFacts` by engine and encryption name, beside the engines' versions): what the report
reads a cipher's page size and key handling from, never from the engine registry of the
tdebench that builds it. Runs from before it was recorded have no such key (`FILLED_IN`)."""

ENGINE_FACTS = "engine_facts"
"""environment.json's record of what the report needs to know of each engine (`EngineFacts` by
engine name), beside its encryptions and for the same reason. Runs from before it was recorded
have no such key (`FILLED_IN`)."""

FILLED_IN = "facts_filled_in"
"""environment.json's record of the facts `tdebench upgrade` filled in for a run from before they
were recorded: the key it filled (ENCRYPTIONS, ENGINE_FACTS) and the version of tdebench whose
definitions they are, which the report names beside them. A run that recorded its own has none."""


@dataclass(frozen=True)
class EngineFacts:
    """An engine as a run recorded it (`ENGINE_FACTS`): what it documents as different in an
    encrypted database besides the cipher ("" when nothing is known), and the cache it has without
    memory_mb, which a trial's cache_mb of 0 meant before trials recorded their default (format 1):
    the MiB every machine has (SQLite's compiled-in page cache) or the share of the machine's memory
    (DuckDB's 80%); both 0 where it has none of its own (a server, whose trials record theirs)."""

    encrypted_differences: str
    default_cache_mb: float
    default_cache_share: float


@dataclass(frozen=True)
class EncryptionFacts:
    """One encryption of an engine as a run recorded it (`ENCRYPTIONS`): its layer ("none",
    "native", "fs", "column"), its raw cipher as `tdebench ciphers` names it ("" when it encrypts
    nothing: none, placebo, a layer without its cipher), what the engine adds to it per page
    ("HMAC-SHA512"), the bytes encrypted under one nonce (the engine's page or block; 0: per
    value) and when it takes the key (ON_OPEN, AT_START, AT_MOUNT, PER_VALUE)."""

    layer: str
    cipher: str
    adds: str
    page_bytes: int
    key_taken: str

    @property
    def encrypts(self) -> bool:
        return bool(self.cipher)


def recorded_encryptions(environment: dict[str, Any]) -> dict[tuple[str, str], EncryptionFacts]:
    """The encryptions a run recorded (`ENCRYPTIONS`), by (engine, encryption); empty for a run
    from before they were recorded. A cluster run's hosts that all recorded the same are read at
    its top, as every fact the hosts share."""
    recorded = environment.get(ENCRYPTIONS)
    named = recorded.items() if isinstance(recorded, dict) else ()
    return {(engine, name): facts for engine, by_name in named
            for name, facts in _recorded(by_name, EncryptionFacts, f"{ENCRYPTIONS}.{engine}").items()}


def recorded_engines(environment: dict[str, Any]) -> dict[str, EngineFacts]:
    """The engines' facts a run recorded (`ENGINE_FACTS`), by engine; empty for a run from before
    they were recorded."""
    return _recorded(environment.get(ENGINE_FACTS), EngineFacts, ENGINE_FACTS)


def _recorded(recorded: Any, cls: type, where: str) -> dict[str, Any]:
    """An environment.json object of `cls` facts by name ({} when it is not an object); ValueError
    naming the field whose shape is wrong."""
    convert = _converter(cls)
    found = {}
    for name, facts in (recorded.items() if isinstance(recorded, dict) else ()):
        try:
            found[name] = convert(facts)
        except _Shape as exc:
            raise ValueError(f"environment.json {where}.{name}{exc.path}: {exc.problem}") from None
    return found


@dataclass(frozen=True)
class Sample:
    """One interval of the resource sampler during a trial (as Madyatmadja et al. (2021) and
    Carvalho (2025) sampled)."""

    trial: TrialKey
    t_s: float  # seconds since the trial's sampler started
    cpu_pct: float  # whole machine, 100 = every core busy
    mem_bytes: float  # resident memory of the engine's processes
    mem_pct: float  # the same, as % of the machine's memory
    disk_read_bytes: float  # all disks, during this interval
    disk_write_bytes: float
    disk_busy_pct: float  # the busiest disk's busy time / interval
    # the CPU of processes other than tdebench's and the engine's, % of one core (measure/load.py);
    # None: not recorded (`upgrade`)
    others_cpu_pct: float | None = None
    load_1m: float | None = None  # the machine's 1-minute load average at the sample


REACHED = "target reached"
BUDGET = "max_minutes would be exceeded"
MOST_ROUNDS = "max_repetitions reached"


@dataclass(frozen=True)
class Resumed:
    """`run --resume` continued the run from here: `kept` complete trials were kept, `dropped`
    trials that had begun but not ended were removed (to run again), and `torn_line` says
    whether a half-written last line was removed. `elapsed_before_s` is the run's time before
    this resume (its earlier parts, from their start to their last record), which adaptive runs
    count against `max_minutes`; `changed` lists what of the environment differs from
    environment.json (e.g. "kernel: 6.1.0-17-amd64 → 6.1.0-18-amd64")."""

    kept: int
    dropped: int
    torn_line: bool
    at_utc: str
    elapsed_before_s: float = 0.0
    changed: tuple[str, ...] = ()
    retried: int = 0  # failed trials removed to run again (`run --resume --retry-failed`)


@dataclass(frozen=True)
class Stopping:
    """Why an adaptive run (a plan with `target_ci_pct`) stopped adding rounds: `reason` is
    REACHED, BUDGET (`max_minutes` could not fit another group's round) or MOST_ROUNDS;
    `widest` names the headline figure with the widest CI at that moment, `widest_ci_pct` its
    half-width. Rounds are added per comparison group, so groups may end with different
    counts: `rounds` is the highest, `group_rounds` each group's (by its label, e.g. "duckdb
    tpch sf0.01"; empty: not recorded, `upgrade`). `target_tests` are the
    plan's, the tests whose figures were waited on (empty: every headline figure)."""

    rounds: int
    reason: str
    target_ci_pct: float
    widest: str
    widest_ci_pct: float
    elapsed_s: float
    group_rounds: dict[str, int] = field(default_factory=dict)
    target_tests: tuple[str, ...] = ()


Record = Measurement | Verdict | TrialOutcome | CipherSpeed | Sample | Stopping | Resumed
TRIAL_RECORDS = (Measurement, Verdict, TrialOutcome, Sample)  # the records of one trial
KINDS: tuple[tuple[str, type, str], ...] = (
    ("measurement", Measurement, "measurements"), ("verdict", Verdict, "verdicts"),
    ("trial", TrialOutcome, "trials"), ("cipher", CipherSpeed, "ciphers"), ("sample", Sample, "samples"),
    ("stopping", Stopping, "stopping"), ("resume", Resumed, "resumes"),
)
"""Every record kind: its name in results.jsonl, its class and its place in RunData (a list, or
for `stopping` the one value: the last wins)."""
_NAMES: dict[type, str] = {cls: name for name, cls, _ in KINDS}
_CLASSES: dict[str, type] = {name: cls for name, cls, _ in KINDS}
_PLACES: dict[type, str] = {cls: place for _, cls, place in KINDS}


FORMAT = 6
"""The version of the raw format this tdebench writes (store.py keeps it in manifest.json).
1: every run before the format had a version, a shape that grew field by field (each new field
optional); 2: the same records, each written whole (`to_json` leaves out only a trial's unset
memory_mb and a measurement's unset imported_from); 3: a verdict holds the CPU time of the
transient capture (`capture_cpu_s`); 4: a trial holds the wait for a quiet machine before it
(`quiet_waited_s`, `quiet_others_pct`); 5: a trial holds how its cold cache was made
(`evicted`: before it, a cold trial's whole OS cache was dropped, "os"); 6: a file-system
layer's file scans carry the kind of the engine's file behind each cipher file (before, the kind
its encrypted name gave: "data" for nearly all, and the layer's own files taken for a log or a
temp file), so an older run's fs-* scans read as kinds not recorded; and a step's `read_chars`
and `write_chars` leave out tdebench's helper threads (an embedded engine) and have a layer's
apart (`layer_read_chars`, `layer_write_chars`), so an older run's, which counted the capture's
scans and the layer's reads beside the engine's, are not read."""

_ABSENT_IN_1: dict[str, dict[str, Any]] = {
    "measurement": {"stream": None, "warmup": False, "answer": None, "pass_number": 1, "imported_from": None},
    "trial": {"error": "", "key_derived": False, "key_form": "", "load_start": None, "load_end": None,
              "engine_cpus": None, "driver_cpus": None, "cache_mb": None, "host": None},
    "cipher": {"library": "", "note": "", "reused_context": False, "host": None},  # False: a context per chunk
    "sample": {"others_cpu_pct": None, "load_1m": None},
    "verdict": {"detail": "", "files": [], "engine_state": "", "view_hits": None, "exposed": [],
                "transient": ""},  # "": no transient capture
    "stopping": {"group_rounds": {}, "target_tests": []},  # {}: rounds were not per group
    "resume": {"elapsed_before_s": 0.0, "changed": [], "retried": 0},
}
"""What a format-1 record may lack, by kind, and what its absence meant (None, "", 0: not
recorded; a trial's memory_mb, absent in every format when unset, is None); a verdict's file
scans lack what `_SCAN_ABSENT_IN_1` lists, and an absent `entropy_blocks` was every block (the
scans before sampling measured them all)."""
_SCAN_ABSENT_IN_1: dict[str, Any] = {"marker_hits": 0, "kind": "", "transient": False}
_ABSENT_IN_2: dict[str, dict[str, Any]] = {"verdict": {"capture_cpu_s": None}}
"""What a format-2 record lacks (and so every older one): None, not recorded."""
_ABSENT_IN_3: dict[str, dict[str, Any]] = {"trial": {"quiet_waited_s": None, "quiet_others_pct": None}}
"""What a format-3 record lacks (and so every older one): None, no wait recorded."""


def upgrade(data: Any, version: int) -> Any:
    """The JSON object of a record written in format `version`, in the current format's shape:
    each field an older tdebench did not write set to what its absence meant. Fields present are
    not changed, but for those an older tdebench recorded wrongly (before format 6: a file-system
    layer's file kinds, "not recorded"; the bytes through system calls, left out), so a record in
    the current shape comes back as it was."""
    if version >= FORMAT or not isinstance(data, dict):
        return data
    kind = data.get("kind")
    if isinstance(kind, str):
        absent = [(3, _ABSENT_IN_3), (2, _ABSENT_IN_2), (1, _ABSENT_IN_1)]
        data = {**{name: value for below, fields in absent if version <= below
                   for name, value in fields.get(kind, {}).items()}, **data}
    if version < 5 and kind == "trial":
        data = {"evicted": "os" if data.get("cache") == "cold" else "", **data}
    if version < 2 and kind == "verdict" and isinstance(data.get("files"), list):
        data["files"] = [{**_SCAN_ABSENT_IN_1, "entropy_blocks": scan.get("blocks"), **scan}
                         if isinstance(scan, dict) else scan for scan in data["files"]]
    if version < 6 and kind == "measurement" and isinstance(data.get("metrics"), dict):
        data = {**data, "metrics": {name: value for name, value in data["metrics"].items()
                                    if name not in ("read_chars", "write_chars")}}
    trial = data.get("trial")
    if (version < 6 and kind == "verdict" and isinstance(data.get("files"), list)
            and isinstance(trial, dict) and str(trial.get("encryption", "")).startswith("fs-")):
        data["files"] = [{**scan, "kind": ""} if isinstance(scan, dict) else scan for scan in data["files"]]
    return data


def to_json(record: Record) -> dict[str, Any]:
    data = asdict(record)
    data["kind"] = _NAMES[type(record)]
    if "trial" in data and data["trial"]["memory_mb"] is None:  # records as before memory was an axis
        del data["trial"]["memory_mb"]
    if data.get("imported_from", "") is None:  # measured by tdebench: records as before imports
        del data["imported_from"]
    if data.get("note", "") is None:  # nothing said: records as before notes
        del data["note"]
    return data


def from_json(data: Any) -> Record:
    """The record a JSON object holds; ValueError naming the field when its shape is wrong (a
    missing or unknown field, a value of the wrong type), so a damaged results.jsonl is
    refused when it is read, not deep inside a report."""
    if not isinstance(data, dict):
        raise ValueError("a record must be a JSON object")
    data = dict(data)
    kind = data.pop("kind", None)
    if not isinstance(kind, str) or kind not in _CLASSES:
        raise ValueError(f"unknown record kind {kind!r}")
    try:
        return cast(Record, _converter(_CLASSES[kind])(data))  # the converter of a record class reads that class
    except _Shape as exc:
        raise ValueError(f"{kind}{exc.path}: {exc.problem}") from None


class _Shape(Exception):
    """A JSON value of the wrong shape; `path` (".trial.scale") grows as it is re-raised outwards."""

    def __init__(self, problem: str, path: str = "") -> None:
        super().__init__(problem)
        self.problem, self.path = problem, path


@functools.cache
def _converter(hint: Any) -> Callable[[Any], Any]:
    """A function that reads a JSON value as the type `hint` (made once per type): dataclasses
    field by field, lists as tuples, whole numbers as floats where a float is expected; _Shape
    when the value does not fit."""
    if hint is float:
        def number(value: Any) -> float:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise _Shape(f"must be a number, not {type(value).__name__}")
            return float(value)
        return number
    if hint in (str, int, bool):
        def exactly(value: Any) -> Any:
            if type(value) is not hint:
                raise _Shape(f"must be {hint.__name__}, not {type(value).__name__}")
            return value
        return exactly
    if hint is Any:
        return lambda value: value
    if hint is TrialKey:
        return _interned(_record_converter(hint))
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _record_converter(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        inner = _converter(next(a for a in args if a is not type(None)))
        return lambda value: None if value is None and type(None) in args else inner(value)
    if origin is tuple:
        item = _converter(args[0])

        def sequence(value: Any) -> tuple[Any, ...]:
            if not isinstance(value, list):
                raise _Shape("must be a list")
            return tuple(_each(item, enumerate(value), "[{}]"))
        return sequence
    if origin is dict:
        item = _converter(args[1])

        def mapping(value: Any) -> dict[Any, Any]:
            if not isinstance(value, dict):
                raise _Shape("must be an object")
            return dict(_each(item, value.items(), ".{}", keyed=True))
        return mapping
    raise TypeError(f"no JSON reading for {hint!r}")


def _interned(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """`convert`, made once per distinct JSON object of scalars: a run's tens of thousands of
    records name its few hundred trials, and each trial is read (and checked) once, then shared
    (equal objects convert to equal values, so sharing one changes nothing but the time)."""
    made: dict[tuple[Any, ...], Any] = {}

    def intern(value: Any) -> Any:
        try:  # the values' types too: 1, 1.0 and true are equal keys, and only one may be valid
            key = (*value.items(), *map(type, value.values()))
            return made[key]
        except (AttributeError, TypeError):  # not an object, or one holding a list or object
            return convert(value)
        except KeyError:
            made[key] = convert(value)
            return made[key]
    return intern


def _record_converter(cls: type) -> Callable[[Any], Any]:
    hints = typing.get_type_hints(cls)
    fields = {name: _converter(hint) for name, hint in hints.items()}
    required = {f.name for f in dataclasses.fields(cls)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}

    def record(value: Any) -> Any:
        if not isinstance(value, dict):
            raise _Shape("must be an object")
        if not value.keys() <= fields.keys():
            raise _Shape(f"unknown field {sorted(value.keys() - fields.keys())[0]!r}")
        if not required <= value.keys():
            raise _Shape(f"missing field {sorted(required - value.keys())[0]!r}")
        name = ""
        try:
            return cls(**{(name := key): fields[key](item) for key, item in value.items()})
        except _Shape as exc:
            exc.path = f".{name}{exc.path}"
            raise
    return record


def _each(convert: Callable[[Any], Any], items: Any, step: str, keyed: bool = False) -> Iterator[Any]:
    """Convert the values of (index or key, value) pairs; a _Shape names where it was."""
    where = None
    try:
        for where, item in items:
            yield (where, convert(item)) if keyed else convert(item)
    except _Shape as exc:
        exc.path = step.format(where) + exc.path
        raise


@dataclass
class RunData:
    """Everything `report` needs, read back from a run directory."""

    directory: Path
    plan_text: str
    environment: dict[str, Any]
    measurements: list[Measurement] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    trials: list[TrialOutcome] = field(default_factory=list)
    ciphers: list[CipherSpeed] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    stopping: Stopping | None = None  # adaptive runs: why the runner stopped adding rounds
    resumes: list[Resumed] = field(default_factory=list)  # each `run --resume` that continued the run

    def complete_trials(self) -> set[TrialKey]:
        """The trials that ended (see `complete_trials`)."""
        return complete_trials([*self.trials, *self.verdicts])

    def add(self, record: Record) -> None:
        """File a record read back under its kind's place (KINDS)."""
        place = _PLACES[type(record)]
        if isinstance(record, Stopping):
            self.stopping = record
        else:
            getattr(self, place).append(record)


def complete_trials(records: Iterable[Record]) -> set[TrialKey]:
    """The trials that ended: their `trial` record is stored, which the runner writes last,
    after the trial's measurements, samples and verdict (so the verdict must be stored too)."""
    records = list(records)
    ended = {record.trial for record in records if isinstance(record, TrialOutcome)}
    return ended & {record.trial for record in records if isinstance(record, Verdict)}
