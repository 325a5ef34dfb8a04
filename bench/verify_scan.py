"""How fast the at-rest scan is, and where its time goes, measured side by side in one run.

First the goal: `tdebench verify` within 2x of `grep -F -c CANARY FILE` (one canary, as a user
would look for it), with the same findings, on two files in the page cache: random bytes (what
an encrypted database is) with the canary once in each of its encodings (UTF-8, UTF-16LE,
UTF-16BE), and a real database file (SQLite's, written by Python's sqlite3: B-tree pages of
text rows shaped like TPC-H's customer table, the canary in one row). For each it prints
verify's time as a multiple of grep's (the rows "verify" and "grep -F -c CANARY"), and on the
random file the `tdebench verify` command's too (Python's start and imports included), and
verify's without a canary in the file ("verify, random, no canary": the verdict then rests on the
entropy's sample), with where verify's time goes there ("random: search alone", "random: entropy
sample alone": the blocks `verify_paths` measures first).

Every trial ends with a scan of every file its database wrote (verify.scan_file: 4 canaries
and 4 markers in three encodings, and per-block entropy), so for server engines with a few
hundred MiB of files the scan is part of every trial's wall-clock time; `tdebench verify` scans
what a user points it at, and a capture of transient files must keep up with the engine's
writes. For files held in the page cache this prints the speed of:

  read                    4 MiB reads of the mixed file into one buffer, as the scan reads a file
                          open for writing (the copy that a memory map saves);
  scan                    verify.scan_file as every trial runs it (the entropy of one block in 16
                          beyond the first MiB) on the mixed file: half text pages, a quarter
                          random, a quarter free (zero), every pattern planted once per MiB;
  scan, by reads          the same by 4 MiB reads into a buffer (`mapped=False`): what the maps save,
                          and what a file with holes costs (its parts with a hole are read, never
                          mapped: a map of a hole on a full tmpfs ends the process with SIGBUS);
  scan, every block       verify.scan_file as `tdebench verify` runs it (every block's entropy),
                          through memory maps under a read lease, as a file no one writes is scanned;
  scan, every block, by reads  the same by 4 MiB reads into a buffer (`mapped=False`), as a file
                          open for writing is scanned (and every file was before the maps);
  grep -F -c              GNU grep searching every pattern at once (`-F -a -c -f`, one process):
                          what a tuned C search reaches (it counts matching lines, so only its
                          time is compared);
  the same four on ciphertext (random bytes, every pattern planted once per MiB too: what an
  encrypted database is, and where grep skips fastest);
  tdebench verify command `tdebench verify` on the random file with one canary, Python's start and
                          the imports included (a fixed cost: it weighs on small files only), run
                          as an installed tdebench runs: its bytecode written by the first run and
                          read by the others, even where PYTHONDONTWRITEBYTECODE is set (it is on
                          this project's machine, where every run compiled tdebench's sources);
  tdebench verify, 4 KiB  the same command on 4 KiB of random bytes: its fixed cost alone;
  python -c pass          the interpreter's start alone, the part of that cost no import makes;
  scan, free pages        verify.scan_file on a sparse file as large, all one hole (InnoDB's
                          system tablespace, sparse regions): read, not mapped (see above);
  entropy, sampled/every  the per-block entropy alone, of the mixed file;
  entropy, every, bincount  the same by one np.bincount per block, as before numba's loop (and
                          still for a read with few blocks to measure);
  search                  the scan's pattern search alone (Hyperscan where its wheel is installed);
  search, sieve           the numpy sieve that serves where Hyperscan has no wheel;
  search, count           one bytes.count per pattern (24 passes), the first search of all;

then each scan's speed as a share of grep's on the same file (the goal is at least half:
within 2x of grep) and `tdebench verify`'s in MiB/s (its goal: 1 GB/s = 954 MiB/s per core),
and checks that all searches count the planted hits and that the scan finds exactly the canaries
and markers `grep -F -a -o` finds. The measurements are interleaved: each round times every one
of them once, so a busy moment of the machine falls on all alike; the best round of each is
printed, by the wall clock and by CPU time (this process's and its children's: the speed per
core, which a machine shared with other work distorts less).
Run: .venv/bin/python bench/verify_scan.py [MiB] [--rounds N]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tdebench import verify
from tdebench.results import FileScan
from tdebench.verify import (
    BLOCK_BYTES, CHUNK_BYTES, ENTROPY_EVERY, _Entropy, _Matcher, _patterns, _SieveMatcher, scan_file,
)

_RANDOM = random.Random(25)
CANARIES = [f"TDEBENCH-CANARY-{_RANDOM.getrandbits(96):024x}" for _ in range(4)]
MARKERS = [f"TDEBENCH-MARKER-{_RANDOM.getrandbits(96):024x}" for _ in range(4)]
"""Shaped as runner.new_canaries makes them (24 random hex digits), fixed so that runs compare. Not
zero-padded counters: Hyperscan searched the mixed file at half its speed for those, whose runs
of zeros the text's "Customer#000000001" matches in part everywhere."""
CANARY = CANARIES[0]
"""The one canary of the goal's comparison: `grep -F -c CANARY` against `tdebench verify --canary CANARY`."""


def chunks(path: Path) -> list[bytes]:
    with path.open("rb") as fh:
        return list(iter(lambda: fh.read(CHUNK_BYTES), b""))


def read_through(path: Path) -> None:
    """Every byte of `path` read as scan_file reads it: 4 MiB reads into one reused buffer."""
    buffer = memoryview(bytearray(CHUNK_BYTES))
    with path.open("rb", buffering=0) as fh:
        while fh.readinto(buffer):
            pass


def write_mixed(path: Path, mib: int, planted: bytes) -> None:
    """Half text pages, a quarter random, a quarter free (zero) pages; `planted` at the start of
    one page in every MiB, never across a chunk border."""
    text = (b"Customer#000000001 IVhzIApeRb ot,c,E 711.56 BUILDING regular accounts " * 60)[:BLOCK_BYTES]
    with path.open("wb") as fh:
        for i in range(mib * 256):
            page = text if i % 4 < 2 else os.urandom(BLOCK_BYTES) if i % 4 == 2 else bytes(BLOCK_BYTES)
            fh.write(planted + page[len(planted):] if i % 256 == 1 else page)


def write_random(path: Path, mib: int, planted: bytes) -> None:
    """Random bytes (what ciphertext is), `planted` at the start of every MiB between two bytes
    1: beside a zero byte a UTF-16 pattern would match the other byte order too (see
    verify.scan_file), which grep -o, one match per place, does not print."""
    with path.open("wb") as fh:
        for _ in range(mib):
            fh.write(planted + b"\x01" + os.urandom((1 << 20) - len(planted) - 2) + b"\x01")


def write_random_canary(path: Path, mib: int) -> None:
    """Random bytes with CANARY once in each of its encodings, a third, half and two thirds of the
    way in, each between two bytes 1 (see write_random)."""
    size = mib << 20
    places = zip((size // 3, size // 2, 2 * size // 3), verify.canary_encodings(CANARY).values())
    with path.open("wb") as fh:
        written = 0
        for at, pattern in places:
            fh.write(os.urandom(at - written - 1) + b"\x01" + pattern + b"\x01")
            written = at + len(pattern) + 1
        fh.write(os.urandom(size - written))


def write_database(path: Path, mib: int) -> None:
    """A SQLite database of about `mib` MiB written by Python's sqlite3: rows shaped like TPC-H's
    customer table, CANARY in the comment of the row in the middle (UTF-8, SQLite's default)."""
    rows = (mib << 20) // 142  # about 142 bytes a row on disk
    rng = random.Random(3)
    words = "regular accounts ironic deposits furiously special packages sleep quickly pending".split()
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE customer (c_custkey INTEGER PRIMARY KEY, c_name TEXT, c_address TEXT, "
                   "c_phone TEXT, c_acctbal REAL, c_mktsegment TEXT, c_comment TEXT)")
        db.executemany("INSERT INTO customer VALUES (?, ?, ?, ?, ?, ?, ?)", (
            (key, f"Customer#{key:09d}", f"{rng.getrandbits(64):x}", f"{rng.randrange(10, 35)}-{key % 1000:03d}-"
             f"{rng.randrange(1000):03d}", rng.randrange(-99999, 999999) / 100, rng.choice(words),
             CANARY if key == rows // 2 else " ".join(rng.choices(words, k=8))) for key in range(1, rows + 1)))


def grep_found(listed: Path, path: Path) -> tuple[int, int]:
    """(canary, marker) matches `grep -F -a -o` prints: one line per match."""
    out = subprocess.run(["grep", "-F", "-a", "-o", "-f", str(listed), str(path)],
                         capture_output=True, check=False).stdout
    found = out.split(b"\n")[:-1]
    markers = {p for _, p in _patterns(MARKERS)}
    return sum(m not in markers for m in found), sum(m in markers for m in found)


def cpu_seconds() -> float:
    """CPU time so far of this process and of its ended children (grep, `tdebench verify`)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def interleaved(rounds: int, work: dict[str, Callable[[], object]]) -> dict[str, list[tuple[float, float]]]:
    """The wall-clock time and the CPU time of each piece of work in each of `rounds` rounds that
    each run every piece once. On a machine shared with other work the CPU time is the speed per
    core: the wall clock also counts the time the piece waited for a core."""
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in work}
    for _ in range(rounds):
        for name, run in work.items():
            start, start_cpu = time.perf_counter(), cpu_seconds()
            run()
            times[name].append((time.perf_counter() - start, cpu_seconds() - start_cpu))
    return times


def ratios(times: dict[str, list[tuple[float, float]]], name: str, reference: str) -> str:
    """`name`'s time as a multiple of `reference`'s: of their best rounds by the wall clock, by CPU
    time in brackets, then the median of the rounds' own ratios (each of two runs side by side)."""
    best = [min(t[i] for t in times[name]) / min(t[i] for t in times[reference]) for i in (0, 1)]
    paired = [statistics.median(a[i] / b[i] for a, b in zip(times[name], times[reference])) for i in (0, 1)]
    return f"{best[0]:5.2f} ({best[1]:.2f}), paired {paired[0]:5.2f} ({paired[1]:.2f})"


def grep_counts(listed: Path, path: Path) -> Callable[[], object]:
    return lambda: subprocess.run(["grep", "-F", "-a", "-c", "-f", str(listed), str(path)], capture_output=True,
                                  check=False)


def grep_canary(path: Path) -> Callable[[], object]:
    """`grep -F -c CANARY FILE`, as the goal states it."""
    return lambda: subprocess.run(["grep", "-F", "-c", CANARY, str(path)], capture_output=True, check=False)


def verify_canary(path: Path) -> tuple[str, tuple[FileScan, ...], str]:
    """`tdebench verify --canary CANARY FILE`'s scan and verdict, in this process."""
    return verify.verify_paths([path], [CANARY])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mib", nargs="?", type=int, default=64, help="size of the scanned files (default 64)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; the best is printed (default 5)")
    args = parser.parse_args()
    mib = args.mib
    patterns = [(False, p) for _, p in _patterns(CANARIES)] + [(True, p) for _, p in _patterns(MARKERS)]
    matcher, sieve = _Matcher(patterns), _SieveMatcher(patterns)
    planted = b"".join(p for _, p in patterns)  # every pattern once per MiB
    with tempfile.TemporaryDirectory() as scratch:
        path, cipher, free = Path(scratch) / "data", Path(scratch) / "cipher", Path(scratch) / "free"
        listed = Path(scratch) / "patterns"
        write_mixed(path, mib, planted)
        write_random(cipher, mib, planted)
        with free.open("wb") as fh:
            fh.truncate(mib << 20)
        listed.write_bytes(b"\n".join(p.replace(b"\n", b"") for _, p in patterns) + b"\n")
        random_file, database = Path(scratch) / "random", Path(scratch) / "database.sqlite"
        write_random_canary(random_file, mib)
        write_database(database, mib)
        one_listed = Path(scratch) / "canary"
        one_listed.write_bytes(b"\n".join(p for _, p in _patterns([CANARY])) + b"\n")
        data = chunks(path)  # in memory: the searches and the entropy are timed without I/O
        random_data = chunks(random_file)
        one = _Matcher([(False, p) for _, p in _patterns([CANARY])])
        small = Path(scratch) / "small"
        small.write_bytes(os.urandom(4096))
        command = [str(Path(sys.executable).with_name("tdebench")), "verify", str(random_file), "--canary", CANARY]
        installed = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}

        def run_command(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(args, capture_output=True, text=True, check=False, env=installed)

        def entropy(every: int, compiled: bool = True, pieces: list[bytes] = data) -> None:
            kernel_blocks = verify.ENTROPY_KERNEL_BLOCKS
            verify.ENTROPY_KERNEL_BLOCKS = kernel_blocks if compiled else 1 << 62  # never the compiled loop
            try:
                counter = _Entropy(BLOCK_BYTES, every)
                for chunk in pieces:
                    counter.add(chunk)
            finally:
                verify.ENTROPY_KERNEL_BLOCKS = kernel_blocks

        def scanner(target: Path, every: int = ENTROPY_EVERY, mapped: bool = True) -> Callable[[], FileScan]:
            return lambda: scan_file(target, CANARIES, target.parent, None, markers=MARKERS, entropy_every=every,
                                     mapped=mapped)

        scans = {name: scanner(target, every)() for name, (target, every) in  # the first calls compile numba's loop
                 {"mixed": (path, ENTROPY_EVERY), "every": (path, 1), "cipher": (cipher, 1)}.items()}
        assert scanner(path, 1, mapped=False)() == scans["every"]  # maps and reads find the same
        grepped = {"mixed": grep_found(listed, path), "cipher": grep_found(listed, cipher)}
        found = {name: sum(1 for chunk in data for _ in m.matches(chunk, 0)) for name, m in
                 (("search", matcher), ("sieve", sieve))}
        counted = sum(chunk.count(p) for chunk in data for _, p in patterns)
        verified = run_command(*command)  # writes the bytecode the timed runs read
        goal = {target: (verify_canary(target), grep_found(one_listed, target)[0])
                for target in (random_file, database)}
        clean = verify.verify_paths([random_file], [CANARIES[1]])  # no canary in it: judged by entropy alone
        searched = verify.scan([random_file], [CANARY], random_file.parent, entropy_every=0)
        first_rate = verify._rates(sum(s.blocks for s in searched))[0]
        times = interleaved(args.rounds, {
            "verify, random": lambda: verify_canary(random_file),
            "grep -F -c CANARY, random": grep_canary(random_file),
            "tdebench verify command": lambda: run_command(*command),
            "tdebench verify, 4 KiB": lambda: run_command(*command[:2], str(small), *command[3:]),
            "python -c pass": lambda: run_command(sys.executable, "-c", "pass"),
            "random: search alone": lambda: sum(1 for chunk in random_data for _ in one.matches(chunk, 0)),
            "verify, random, no canary": lambda: verify.verify_paths([random_file], [CANARIES[1]]),
            "random: entropy sample alone": lambda: verify._sample(searched, random_file.parent, first_rate),
            "verify, database": lambda: verify_canary(database),
            "grep -F -c CANARY, database": grep_canary(database),
            "read": lambda: read_through(path),
            "scan": scanner(path),
            "scan, by reads": scanner(path, mapped=False),
            "scan, every block": scanner(path, 1),
            "scan, every block, by reads": scanner(path, 1, mapped=False),
            "grep -F -c": grep_counts(listed, path),
            "scan, ciphertext": scanner(cipher),
            "scan, ciphertext, by reads": scanner(cipher, mapped=False),
            "scan, every block, ciphertext": scanner(cipher, 1),
            "grep -F -c, ciphertext": grep_counts(listed, cipher),
            "scan, free pages": scanner(free),
            "entropy, sampled": lambda: entropy(ENTROPY_EVERY),
            "entropy, every": lambda: entropy(1),
            "entropy, every, bincount": lambda: entropy(1, compiled=False),
            "search": lambda: sum(1 for chunk in data for _ in matcher.matches(chunk, 0)),
            "search, sieve": lambda: sum(1 for chunk in data for _ in sieve.matches(chunk, 0)),
            "search, count": lambda: sum(chunk.count(p) for chunk in data for _, p in patterns),
        })
    assert found["search"] == found["sieve"] == counted == mib * len(patterns), (found, counted)  # once per MiB
    for name, scanned in scans.items():
        assert (scanned.hits, scanned.marker_hits) == grepped["mixed" if name != "cipher" else "cipher"] == (
            mib * 12, mib * 12), (name, scanned, grepped)
    assert verified.returncode == 1 and "verdict: plaintext" in verified.stdout, verified.stdout + verified.stderr
    for target, ((state, (scanned_one,), _), grepped_one) in goal.items():  # the same findings as grep -F -a -o
        assert state == "plaintext" and scanned_one.hits == grepped_one >= 1, (target, scanned_one, grepped_one)
    assert goal[random_file][0][1][0].hits == 3  # once in each encoding
    assert clean[0] == "encrypted" and clean[1][0].low_entropy_blocks == 0, clean
    best = {name: min(t for t, _ in runs) for name, runs in times.items()}
    cpu = {name: min(c for _, c in runs) for name, runs in times.items()}
    print(f"{mib} MiB, best of {args.rounds} interleaved rounds; {counted} planted hits found by both searches "
          f"(search: {type(matcher).__name__})")
    t_scan = best["scan"]
    for name, seconds in best.items():
        print(f"  {name:<29} {mib / seconds:8.1f} MiB/s  {mib / cpu[name]:8.1f} MiB/s of CPU  "
              f"({seconds / t_scan:5.2f} x the scan's time)")
    scanned = scans["mixed"]
    print(f"scan vs grep -F -c: {best['grep -F -c'] / t_scan:.2f} x grep's speed; the same {scanned.hits} canary "
          f"and {scanned.marker_hits} marker matches as grep -F -a -o")
    print("speed as a share of grep -F -c's on the same file, by the wall clock (by CPU time) "
          "(the goal: at least 0.50):")
    for label, suffix in (("mixed file", ""), ("ciphertext", ", ciphertext")):
        grep, trial, every = (f"grep -F -c{suffix}", f"scan{suffix}", f"scan, every block{suffix}")
        print(f"  {label:<10}  trial scan {best[grep] / best[trial]:5.2f} ({cpu[grep] / cpu[trial]:.2f}), "
              f"tdebench verify's scan {best[grep] / best[every]:5.2f} ({cpu[grep] / cpu[every]:.2f})")
    print(f"tdebench verify's scan: {mib / best['scan, every block']:.1f} MiB/s on the mixed file, "
          f"{mib / best['scan, every block, ciphertext']:.1f} MiB/s on ciphertext; of CPU time "
          f"{mib / cpu['scan, every block']:.1f} and {mib / cpu['scan, every block, ciphertext']:.1f} MiB/s "
          "(goal: 954 MiB/s = 1 GB/s per core)")
    gain = cpu["scan, every block, by reads"] / cpu["scan, every block"]
    print(f"tdebench verify's scan of the mixed file through maps: {gain:.2f} x its speed by reads, by CPU time")
    (_, (random_scan,), _), (_, (database_scan,), _) = (goal[random_file][0], goal[database][0])
    print("the goal: verify's time as a multiple of grep -F -c CANARY's (one canary; at most 2.00), best rounds by "
          "the wall clock (by CPU time), then the median of each round's own ratio:")
    print(f"  random bytes  verify {ratios(times, 'verify, random', 'grep -F -c CANARY, random')}; "
          f"tdebench verify command {ratios(times, 'tdebench verify command', 'grep -F -c CANARY, random')}")
    print(f"  the command's fixed cost: tdebench verify on 4 KiB "
          f"{ratios(times, 'tdebench verify, 4 KiB', 'grep -F -c CANARY, random')}, of which python -c pass "
          f"{ratios(times, 'python -c pass', 'grep -F -c CANARY, random')}")
    print(f"  random bytes, no canary in them  verify "
          f"{ratios(times, 'verify, random, no canary', 'grep -F -c CANARY, random')}")
    print(f"  database      verify {ratios(times, 'verify, database', 'grep -F -c CANARY, database')}")
    print(f"  findings as grep -F -a -o: {random_scan.hits} canary hits in the random file (UTF-8, UTF-16LE, "
          f"UTF-16BE), {database_scan.hits} in the database; entropy {random_scan.low_entropy_blocks} of "
          f"{random_scan.entropy_blocks} blocks below {verify.LOW_ENTROPY:g} bits/byte in the random file "
          f"(without a canary: {clean[0]}), {database_scan.low_entropy_blocks} of {database_scan.entropy_blocks} "
          "in the database")
    parts = {name: cpu[f"random: {name} alone"] / cpu["verify, random"] for name in ("search", "entropy sample")}
    print(f"  where verify's CPU time goes on random bytes (best rounds): search {parts['search']:.0%}, the entropy of "
          f"its sample (one block in {first_rate}) {parts['entropy sample']:.0%}, the rest (maps, Python) "
          f"{1 - sum(parts.values()):.0%}")

if __name__ == "__main__":
    main()
