"""The results store: raw records appended durably the moment they are taken, and read back.

A run directory holds `results.jsonl` (one JSON object per line, each with a `kind`: the record
kinds are results.py's), `plan.toml` (the plan exactly as given) and `environment.json`.
Everything else in the directory is derived from these three by `tdebench report`, so a crash
loses at most the trial that was running. `manifest.json` lists every file tdebench wrote
there (the raw files, the report's): `run --force` removes those and nothing else (see
run/outdir.py); it also holds the raw format's version (results.FORMAT), which reading passes to
`results.upgrade`, so a run written by an older tdebench reads in the current shape.
`keep_complete` cuts an interrupted run's results.jsonl down to its complete trials before
`run --resume` continues it.
"""

from __future__ import annotations

import errno
import json
import lzma
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tdebench.collector import GC_PAUSE
from tdebench.errors import InputError
from tdebench.results import (FORMAT, TRIAL_RECORDS, CipherSpeed, Record, RunData, TrialOutcome, complete_trials,
                              from_json, to_json, upgrade)
from tdebench.runstate import file_system_of

RESULTS = "results.jsonl"
PLAN = "plan.toml"
ENVIRONMENT = "environment.json"
RAW_FILES = (RESULTS, PLAN, ENVIRONMENT)
MANIFEST = "manifest.json"
PACKED_RESULTS = RESULTS + ".xz"
"""A published example's results.jsonl, packed with xz (docs/examples/NAME; scripts/examples.sh)."""


class ResultStore:
    """Appends records to `results.jsonl`, one line each, written out at once.

    Each append reaches the operating system before `append` returns, so a crash of tdebench
    loses nothing; `sync()` (called by the runner after every trial) fsyncs, so a crash of the
    machine loses at most the running trial. Appends are serialised by a lock: throughput
    streams record from several threads.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / RESULTS
        self._lock = threading.Lock()

    def start(self, plan_text: str, environment: dict[str, Any]) -> None:
        with writing(self.directory):
            self.directory.mkdir(parents=True, exist_ok=True)
            (self.directory / PLAN).write_text(plan_text)
            (self.directory / ENVIRONMENT).write_text(json.dumps(environment, indent=2, sort_keys=True) + "\n")
            self.path.write_text("")
            record_written(self.directory, [self.directory / name for name in RAW_FILES], FORMAT)

    def rewrite_environment(self, environment: dict[str, Any]) -> None:
        """Replace environment.json (a cluster run adds each host as it joins): written beside it
        and renamed, so a crash leaves the old file or the new one."""
        temporary = self.directory / (ENVIRONMENT + ".tmp")
        with writing(temporary):
            temporary.write_text(json.dumps(environment, indent=2, sort_keys=True) + "\n")
            temporary.replace(self.directory / ENVIRONMENT)

    def append(self, record: Record) -> None:
        line = json.dumps(to_json(record), sort_keys=True) + "\n"
        with self._lock, writing(self.path), self.path.open("a") as fh:
            fh.write(line)

    def sync(self) -> None:
        with self._lock, writing(self.path), self.path.open("a") as fh:
            os.fsync(fh.fileno())


class OutputError(InputError):
    """A file of the run directory could not be written (no space left, read-only, …); the
    message names the file system and what to do. The records written before it are kept."""


@contextmanager
def writing(path: Path) -> Iterator[None]:
    """Turn an OSError while writing `path` (in a run directory) into an OutputError."""
    try:
        yield
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            mount, free = file_system_of(path)
            left = f"{free:,} bytes free" if free is not None else "free space unknown"
            raise OutputError(f"no space left on {mount} (the file system of {path}; {left}): "
                              "free some space, then run again") from None
        raise OutputError(f"cannot write {exc.filename or path}: {exc.strerror or exc}") from None


def _manifest(directory: Path) -> dict[str, Any] | None:
    path = directory / MANIFEST
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        data = {**data, "files": data["files"]}  # a manifest is an object that lists files
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a tdebench manifest ({exc})") from None
    return data


def manifest(directory: Path) -> list[str] | None:
    """The files tdebench wrote into a run directory (paths relative to it), or None when the
    directory has no manifest (no run, or a run of a tdebench from before manifests)."""
    data = _manifest(directory)
    return None if data is None else [name for name in data["files"] if isinstance(name, str)]


class NewerFormat(InputError):
    """The run was written in a raw format newer than this tdebench's FORMAT: its records may
    hold what this one would misread or drop (and a resumed run would mix two formats), so it
    is not read at all."""


def format_version(directory: Path) -> int:
    """The raw format the run in `directory` was written in: its manifest's, 1 when it names none
    (a run from before the format had a version, or from before manifests)."""
    try:
        version = (_manifest(directory) or {}).get("format", 1)
    except ValueError:
        return 1  # a damaged manifest: the records' shape is checked as they are read
    return version if isinstance(version, int) and not isinstance(version, bool) else 1


def record_written(directory: Path, paths: list[Path], version: int | None = None) -> None:
    """Add `paths` (files inside `directory`) to its manifest; the manifest names itself and keeps
    the raw format's version (`version`, given when the store starts the run). Written to a
    temporary file and renamed, so a crash leaves the old manifest or the new one."""
    old = _manifest(directory) or {}
    names = set(manifest(directory) or ()) | {MANIFEST}
    names |= {path.relative_to(directory).as_posix() for path in paths}
    data: dict[str, Any] = {"files": sorted(names)}
    version = old.get("format") if version is None else version
    if version is not None:
        data["format"] = version
    temporary = directory / (MANIFEST + ".tmp")
    with writing(temporary):
        temporary.write_text(json.dumps(data, indent=1) + "\n")
        temporary.replace(directory / MANIFEST)


def _records(path: Path, text: bytes | None = None) -> tuple[list[tuple[bytes, Record]], int | None]:
    """Every line of a results.jsonl with its record (in the current format's shape, see
    `format_version`), and the number of a torn last line (a crash mid-write, a file cut short)
    that was left out; ValueError (with file and line) for a line that is not JSON, or not
    UTF-8, anywhere else; NewerFormat for a run a newer tdebench wrote (`report`, `compare` and
    `run --resume` all read a run here, and refuse it so)."""
    version = format_version(path.parent)
    if version > FORMAT:
        raise NewerFormat(f"{path.parent}: written by a newer tdebench: format {version}, this one reads up to "
                          f"{FORMAT} (upgrade tdebench to read it)")
    lines = (path.read_bytes() if text is None else text).splitlines(keepends=True)
    with GC_PAUSE():  # tens of thousands of new records, none of them garbage
        return _parsed(path, lines, version)


def _parsed(path: Path, lines: list[bytes], version: int) -> tuple[list[tuple[bytes, Record]], int | None]:
    records: list[tuple[bytes, Record]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as exc:  # JSONDecodeError, or UnicodeDecodeError: a torn multi-byte character too
            if number == len(lines):
                return records, number
            what = "UTF-8" if isinstance(exc, UnicodeDecodeError) else "JSON"
            raise ValueError(f"{path}:{number}: not valid {what}") from None
        try:
            records.append((line, from_json(upgrade(data, version))))
        except ValueError as exc:
            raise ValueError(f"{path}:{number}: not a tdebench record ({str(exc)[:200]})") from None
    return records, None


def read_run(directory: Path) -> RunData:
    """Read a run directory; a torn last line (a crash mid-write) is ignored."""
    return read_run_torn(directory)[0]


def read_run_torn(directory: Path) -> tuple[RunData, int | None]:
    """`read_run`, and the number of the half-written last line of its results.jsonl that it left
    out (None: every line is whole), what `report` warns of, from one reading of the file."""
    missing = [name for name in RAW_FILES if not (directory / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{directory} is not a tdebench run directory: missing {', '.join(missing)}")
    records, torn = _records(directory / RESULTS)
    return _run(directory, records), torn


def _run(directory: Path, records: list[tuple[bytes, Record]]) -> RunData:
    """The run of `records`, with the plan and environment stored beside them in `directory`."""
    run = RunData(directory=directory, plan_text=(directory / PLAN).read_text(),
                  environment=json.loads((directory / ENVIRONMENT).read_text()))
    for _, record in records:
        run.add(record)
    return run


def read_published(directory: Path) -> RunData:
    """A published example (docs/examples/NAME), read where it lies: its results.jsonl packed as
    PACKED_RESULTS beside plan.toml, environment.json and manifest.json (the raw format's version)."""
    packed = directory / PACKED_RESULTS
    if not packed.is_file():
        raise FileNotFoundError(f"{directory} is not a published example: no {PACKED_RESULTS}")
    return _run(directory, _records(directory / RESULTS, lzma.decompress(packed.read_bytes()))[0])


@dataclass(frozen=True)
class Cut:
    """What `keep_complete` left of an interrupted run's results.jsonl."""

    kept: int  # complete trials, every record of them kept as it was
    dropped: int  # trials that had begun but not ended: all their records removed
    torn_line: bool  # a half-written last line was removed
    ciphers: bool  # the cipher records were kept: the run had got past measuring them
    retried: int = 0  # failed trials removed to run again (`retry_failed`)


def keep_complete(directory: Path, retry_failed: bool = False) -> Cut:
    """Cut results.jsonl down to what an interrupted run finished: the records of its complete
    trials (`RunData.complete_trials`; with `retry_failed`, of those that ended ok only, so the
    failed ones run again), its cipher records once the run had got past them (a record of
    another kind follows), and its `stopping` and `resume` records; every kept line stays byte
    for byte as it was. The new file is written beside the old one, fsynced and renamed over
    it, so a failure midway leaves the original untouched."""
    path = directory / RESULTS
    records, torn = _records(path)
    complete = complete_trials(record for _, record in records)
    failed = {record.trial for _, record in records
              if isinstance(record, TrialOutcome) and record.status != "ok"} if retry_failed else set()
    complete -= failed
    begun = {record.trial for _, record in records if isinstance(record, TRIAL_RECORDS)}
    last_cipher = max((i for i, (_, record) in enumerate(records) if isinstance(record, CipherSpeed)), default=None)
    ciphers = last_cipher is not None and last_cipher + 1 < len(records)
    kept = [line if line.endswith(b"\n") else line + b"\n" for line, record in records
            if (record.trial in complete if isinstance(record, TRIAL_RECORDS)
                else ciphers or not isinstance(record, CipherSpeed))]
    temporary = directory / (RESULTS + ".tmp")
    try:
        with writing(temporary), temporary.open("wb") as fh:
            fh.writelines(kept)
            fh.flush()
            os.fsync(fh.fileno())
        temporary.replace(path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    directory_fd = os.open(directory, os.O_RDONLY)
    try:  # the rename itself reaches the disk
        os.fsync(directory_fd)
    finally:
        os.close(directory_fd)
    return Cut(kept=len(complete), dropped=len(begun - complete - failed), torn_line=torn is not None, ciphers=ciphers,
               retried=len(failed))
