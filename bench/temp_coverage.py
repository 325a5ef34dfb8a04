"""What each engine and encryption leaves in plaintext in its temp files, measured.

The at-rest scan of a trial sees the files that exist when the trial ends; the files an engine
writes while a query runs (sort runs, hash spills, temp tables) are gone by then, and some
(SQLite's, MariaDB's) are unlinked as soon as they are opened. This bench makes each of them
appear and reads them while they exist. For every engine and encryption available here it
provisions a database the way a trial does (`Engine.provision`: tdebench's own configuration of
the engine, gocryptfs mount and pgcrypto sealing included), loads a table whose rows carry a
known canary string (in the column pgcrypto seals), caps the memory a sort may use (below) and
runs statements that sort, group and copy that table. Meanwhile a thread (`TempWatch`) scans,
with verify.scan_file, every file in reach each time it changed (new files first): below the
workspace (not the decrypted view of a gocryptfs mount, which is not on the disk), and every
file the engine's processes hold open (/proc/PID/fd/N, which reads a file unlinked after
opening too: tdebench runs as root). Counted are the transient files: those the database
does not leave when closed (what the at-rest scan of a trial reads), that appeared while the
statements ran or held a canary (SQLite's WAL, which a close folds into the main file).

It prints one row per engine and encryption: the transient files seen (of them unlinked), the
bytes seen, the canary hits, and the verdict: `plaintext` (hits), `encrypted` (temp files,
no hits) or `no temp file` (nothing spilled: this configuration's temp files were not
exercised), or `no canary` where the same configuration's baseline showed none either (the
positive control failed). `--encryptions all` runs every encryption (default: one of each layer
and coverage; `chosen`); the gocryptfs layer on PostgreSQL only unless `--fs-on` names more.
MariaDB is run once more with `encrypt_tmp_files` off, as a server left at its default has it,
and SQLite with `temp_store = FILE`, SQLite's default (tdebench keeps its temp store in memory).

Memory caps: DuckDB memory_limit 32 MiB and one thread (set after the load, which needs more),
SQLite cache_size 1 MiB (memory_mb), MariaDB sort_buffer_size and max_heap_table_size /
tmp_table_size per session, PostgreSQL work_mem 64 kB per session.
Run: .venv/bin/python bench/temp_coverage.py [--scale F] [--engines ...] [--encryptions all] [--fs-on ...]
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from tdebench.engines import PROVISIONED, get_engine
from tdebench.engines.base import Database, Encryption
from tdebench.keys import Secret
from tdebench.verify import scan_file

TABLE = "spill_canaries"
# rows of the canary table per engine (--scale multiplies them): several times what each memory cap holds
ROWS = {"duckdb": 300_000, "sqlite": 100_000, "mariadb": 100_000, "postgres": 50_000}
# per engine: the memory_mb it is provisioned with, and what each session sets before the statements
# (DuckDB loads with its default limit: a load from Parquet under a small one runs out of memory)
MEMORY_MB = {"duckdb": None, "sqlite": 1, "mariadb": 64, "postgres": 128}
SESSION = {
    "duckdb": ["SET threads = 1", "SET memory_limit = '32MiB'"],
    "mariadb": ["SET SESSION sort_buffer_size = 32768", "SET SESSION max_heap_table_size = 16384",
                "SET SESSION tmp_table_size = 16384"],
    "postgres": ["SET work_mem = '64kB'"],
}
# sorts (ORDER BY with a window function, so the whole table is sorted and nothing is returned),
# a grouping on the canary column, and a copy into a temporary table
STATEMENTS = [
    f"SELECT count(*) FROM (SELECT secret, row_number() OVER (ORDER BY secret DESC) AS n FROM {TABLE}) AS s "
    "WHERE n % 1000 = 0",
    f"SELECT count(*) FROM (SELECT secret, count(*) AS c FROM {TABLE} GROUP BY secret) AS g WHERE c > 1",
    f"CREATE TEMPORARY TABLE spill_copy AS SELECT * FROM {TABLE} ORDER BY secret",
]
ALL = "all"


@dataclass
class Seen:
    """One file in reach while the statements ran: where it was (its path, even once unlinked),
    whether it appeared meanwhile, whether it was seen unlinked, and the most bytes and canary
    hits one scan of it found."""

    path: str
    name: str
    new: bool
    unlinked: bool = False
    bytes: int = 0
    hits: int = 0
    scanned: tuple[int, int] = (-1, -1)  # (size, mtime_ns) when last scanned: unchanged files are not scanned again
    at: float = float("-inf")  # time.monotonic() of the last scan


@dataclass
class TempWatch:
    """Scans, on a thread, every file below `roots` (not below `hidden`) and every file the
    processes `pids()` names hold open (through /proc/PID/fd, unlinked ones too) each time it has
    changed, until the block ends. `seen` holds what it found, by (device, inode); `transient`
    picks the files an at-rest scan would not see."""

    roots: Sequence[Path]
    pids: Callable[[], list[int]]
    canaries: Sequence[str]
    hidden: Path | None = None  # a decrypted view (gocryptfs): not on the disk
    every_s: float = 0.005
    old_every_s: float = 0.25
    seen: dict[tuple[int, int], Seen] = field(default_factory=dict)
    _before: set[tuple[int, int]] = field(default_factory=set)
    _stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> TempWatch:
        self._before = {inode for inode, *_ in self._candidates()}
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.round()

    def _watch(self) -> None:
        while not self._stop.is_set():
            self.round()
            self._stop.wait(self.every_s)

    def round(self) -> None:
        """Scan every file in reach that changed since its last scan: the new ones first (they
        may live for milliseconds), then those there before, each at most every `old_every_s`."""
        found = [(inode, opened, path, unlinked, inode not in self._before)
                 for inode, opened, path, unlinked in self._candidates()]
        now = time.monotonic()
        for inode, opened, path, unlinked, new in sorted(found, key=lambda f: not f[4]):
            seen = self.seen.setdefault(inode, Seen(path, self._name(path), new))
            seen.unlinked |= unlinked
            if not new and now - seen.at < self.old_every_s:
                continue
            try:
                info = opened.stat()
                if (info.st_size, info.st_mtime_ns) == seen.scanned:
                    continue
                scanned = scan_file(opened, self.canaries, Path("/"), None)
            except OSError:  # gone between the listing and the read
                continue
            seen.scanned, seen.at = (info.st_size, info.st_mtime_ns), now
            seen.bytes, seen.hits = max(seen.bytes, scanned.bytes), max(seen.hits, scanned.hits)

    def transient(self, at_rest: Sequence[Path]) -> list[Seen]:
        """The files seen that are not among `at_rest` (what the database left when closed) and
        either appeared while the statements ran or held a canary, most hits first."""
        kept = {str(p) for p in at_rest}
        found = [s for s in self.seen.values() if s.path not in kept and (s.new or s.hits)]
        return sorted(found, key=lambda s: (-s.hits, -s.bytes, s.name))

    def _candidates(self) -> Iterator[tuple[tuple[int, int], Path, str, bool]]:
        """(inode, a path that opens it, its own path, unlinked) of every regular file in reach."""
        for root in self.roots:
            for directory, dirs, files in os.walk(root):
                dirs[:] = [d for d in dirs if not self._hidden(Path(directory, d))]
                for name in files:
                    yield from _regular(Path(directory, name), str(Path(directory, name)), False)
        for pid in self.pids():
            try:
                fds = os.listdir(f"/proc/{pid}/fd")
            except OSError:
                continue
            for fd in fds:
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                unlinked = target.endswith(" (deleted)")
                target = target.removesuffix(" (deleted)")
                if target.startswith("/") and not self._hidden(Path(target)):
                    yield from _regular(Path(f"/proc/{pid}/fd/{fd}"), target, unlinked)

    def _hidden(self, path: Path) -> bool:
        return self.hidden is not None and path.is_relative_to(self.hidden)

    def _name(self, path: str) -> str:
        for root in self.roots:
            if Path(path).is_relative_to(root):
                return str(Path(path).relative_to(root))
        return path


def _regular(opened: Path, path: str, unlinked: bool) -> Iterator[tuple[tuple[int, int], Path, str, bool]]:
    try:
        info = opened.stat()
    except OSError:
        return
    if stat.S_ISREG(info.st_mode):
        yield (info.st_dev, info.st_ino), opened, path, unlinked


@dataclass(frozen=True)
class Row:
    engine: str
    encryption: str
    variant: str
    files: int
    unlinked: int
    bytes: int
    hits: int
    first: str  # the file with the most hits, or the largest one

    def verdict(self, rows: Sequence[Row]) -> str:
        """`plaintext` (canaries seen), `no temp file`, or for temp files without a canary
        `encrypted` where the same configuration's baseline showed its canaries (the positive
        control), `no canary` where it did not."""
        if self.hits or not self.files:
            return "plaintext" if self.hits else "no temp file"
        control = [r.hits for r in rows if (r.engine, r.encryption, r.variant) == (self.engine, "none", self.variant)]
        return "encrypted" if control and control[0] else "no canary (baseline neither)"


def chosen(engine: str, everything: bool, fs: bool) -> list[Encryption]:
    """Every encryption of `engine` with `everything`; by default the first of each layer and
    what it covers (the cipher, key size and mode change nothing in which files are written, and
    `--encryptions all` shows it: SQLite3MC's ciphers alike), legacy ciphers left out. The fs
    layer's only with `fs`: it holds every file of the engine's directory alike, whatever the
    engine, and each of its configurations takes the longest (a mount and unmount)."""
    encryptions = [e for e in PROVISIONED[engine].encryptions if fs or e.layer != "fs"]
    if everything:
        return encryptions
    kinds: dict[tuple[str, ...], Encryption] = {}
    for enc in encryptions:
        if not enc.legacy:
            kinds.setdefault((enc.layer, *enc.covers), enc)
    return list(kinds.values())


def parquet_of(directory: Path, rows: int, canary: str) -> Path:
    """`rows` rows (id, secret): each secret is the canary, a number in shuffled order and filler."""
    directory.mkdir()
    path = directory / "spill.parquet"
    con = duckdb.connect(":memory:")
    try:
        con.execute(f"COPY (SELECT i AS id, '{canary}-' || lpad(((i * 7919) % {rows})::VARCHAR, 9, '0') || "
                    f"repeat('x', 60) AS secret FROM range({rows}) AS r(i)) TO '{path}' (FORMAT parquet)")
    finally:
        con.close()
    return path


@contextmanager
def workspace() -> Iterator[Path]:
    """A directory below the system's temp directory that the servers' users may enter (0711)."""
    path = Path(tempfile.mkdtemp(prefix="tdebench-temp-coverage-"))
    try:
        path.chmod(0o711)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@dataclass(frozen=True)
class Variant:
    """A configuration beside tdebench's own: `label` added to the encryption's name, `tweak` applied
    to the provisioned database before it starts, `session` run before the statements."""

    label: str
    applies: Callable[[Encryption], bool]
    tweak: Callable[[Database], None] | None = None
    session: tuple[str, ...] = ()


def tmp_files_off(database: Database) -> None:
    """MariaDB as a server left at its default has it: encrypt_tmp_files off."""
    options = database._options  # type: ignore[attr-defined]
    database._options = lambda port: {**options(port), "encrypt_tmp_files": "OFF"}  # type: ignore[attr-defined]


VARIANTS = {
    # a server at MariaDB's default: temp files (filesort, merge) not encrypted
    "mariadb": Variant("encrypt_tmp_files=OFF", lambda e: e.layer == "native", tweak=tmp_files_off),
    # SQLite's own default, temp files on disk (tdebench keeps them in memory)
    "sqlite": Variant("temp_store=FILE", lambda e: e.layer != "fs", session=("PRAGMA temp_store = FILE",)),
}


def measure(engine_name: str, encryption: Encryption, parquet: Path, canary: str, base: Path,
            variant: Variant | None = None) -> Row:
    engine = get_engine(engine_name, memory_mb=MEMORY_MB[engine_name])
    key = None if encryption.is_baseline else Secret(os.urandom(32))
    label = encryption.name + (f" {variant.label}" if variant else "")
    place = base / f"{engine_name}-{label}".replace(" ", "-")
    place.mkdir()
    place.chmod(0o711)
    database = engine.provision(place, encryption, key)
    if variant is not None and variant.tweak is not None:
        variant.tweak(database)
    try:
        database.create()
        conn = database.connect()
        try:
            conn.execute(f"CREATE TABLE {TABLE} (id INTEGER, secret VARCHAR(120))")
            database.seal_columns(conn, TABLE, ["secret"], ["id"])
            database.bulk_load(conn, TABLE, ["id", "secret"], parquet)
            for statement in [*SESSION.get(engine_name, []), *(variant.session if variant else ())]:
                conn.execute(statement)
            view = database.plaintext_view()
            with TempWatch([database.workspace], lambda: pids(database), [canary], hidden=view) as watch:
                for statement in STATEMENTS:
                    conn.execute(statement)
        finally:
            conn.close()
    finally:
        database.close()
    seen = watch.transient(database.files())  # closed: what the at-rest scan of a trial reads is not transient
    return Row(engine_name, encryption.name, variant.label if variant else "", len(seen),
               sum(s.unlinked for s in seen), sum(s.bytes for s in seen), sum(s.hits for s in seen),
               seen[0].name if seen else "")


def pids(database: Database) -> list[int]:
    """The engine's processes: a server's tree, or this process for an engine inside it."""
    processes = database.engine_processes()
    return [os.getpid()] if processes is None else [p.pid for p in processes]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0,
                        help="times each engine's rows (default 1: "
                        + ", ".join(f"{e} {n:,}" for e, n in ROWS.items()) + ")")
    parser.add_argument("--engines", nargs="+", default=list(PROVISIONED), choices=list(PROVISIONED))
    parser.add_argument("--encryptions", choices=[ALL, "kinds"], default="kinds",
                        help="every encryption, or one of each kind (default)")
    parser.add_argument("--fs-on", nargs="*", default=["postgres"], choices=list(PROVISIONED), metavar="ENGINE",
                        help="the engines measured on the gocryptfs layer too (default: postgres)")
    args = parser.parse_args()
    canary = "TDEBENCH-CANARY-temp-" + secrets.token_hex(6)
    rows: list[Row] = []
    start = time.perf_counter()
    with workspace() as base:
        for name in args.engines:
            engine = get_engine(name)
            parquet = parquet_of(base / name, max(1000, round(ROWS[name] * args.scale)), canary)
            for encryption in chosen(name, args.encryptions == ALL, name in args.fs_on):
                available = engine.encryption_availability(encryption)
                if not available.usable:
                    print(f"{name} {encryption.name}: not usable here ({available.reason})", file=sys.stderr)
                    continue
                started = time.perf_counter()
                rows.append(measure(name, encryption, parquet, canary, base))
                print(f"{name} {encryption.name}: {time.perf_counter() - started:.1f} s", file=sys.stderr)
                variant = VARIANTS.get(name)
                if variant is not None and variant.applies(encryption):
                    rows.append(measure(name, encryption, parquet, canary, base, variant))
    print(f"Rows carrying a canary ({', '.join(f'{e} {round(ROWS[e] * args.scale):,}' for e in args.engines)}); "
          f"sorts, a grouping and a temp table past each engine's memory cap ({time.perf_counter() - start:.0f} s)")
    header = ("engine", "encryption", "transient files (unlinked)", "MiB seen", "canary hits", "verdict", "file")
    table = [header] + [(r.engine, f"{r.encryption} {r.variant}".strip(), f"{r.files} ({r.unlinked})",
                         f"{r.bytes / 2**20:.1f}", f"{r.hits:,}", r.verdict(rows), r.first) for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for line in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip())


if __name__ == "__main__":
    main()
