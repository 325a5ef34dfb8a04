"""How fast the at-rest scan is, and where its time goes, measured side by side in one run.

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
  tdebench verify command `tdebench verify` on the ciphertext file, Python's start and numba's
                          import included (a fixed cost: it weighs on small files only);
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
import os
import random
import resource
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


def interleaved(rounds: int, work: dict[str, Callable[[], object]]) -> tuple[dict[str, float], dict[str, float]]:
    """The best wall-clock time and the best CPU time of each piece of work over `rounds` rounds
    that each run every piece once. On a machine shared with other work the CPU time is the
    speed per core: the wall clock also counts the time the piece waited for a core."""
    best, best_cpu = dict.fromkeys(work, float("inf")), dict.fromkeys(work, float("inf"))
    for _ in range(rounds):
        for name, run in work.items():
            start, start_cpu = time.perf_counter(), cpu_seconds()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
            best_cpu[name] = min(best_cpu[name], cpu_seconds() - start_cpu)
    return best, best_cpu


def grep_counts(listed: Path, path: Path) -> Callable[[], object]:
    return lambda: subprocess.run(["grep", "-F", "-a", "-c", "-f", str(listed), str(path)], capture_output=True,
                                  check=False)


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
        data = chunks(path)  # in memory: the searches and the entropy are timed without I/O
        command = [str(Path(sys.executable).with_name("tdebench")), "verify", str(cipher), *(
            arg for canary in CANARIES for arg in ("--canary", canary))]

        def entropy(every: int, compiled: bool = True) -> None:
            kernel_blocks = verify.ENTROPY_KERNEL_BLOCKS
            verify.ENTROPY_KERNEL_BLOCKS = kernel_blocks if compiled else 1 << 62  # never the compiled loop
            try:
                counter = _Entropy(BLOCK_BYTES, every)
                for chunk in data:
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
        verified = subprocess.run(command, capture_output=True, text=True, check=False)
        best, cpu = interleaved(args.rounds, {
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
            "tdebench verify command": lambda: subprocess.run(command, capture_output=True, check=False),
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

if __name__ == "__main__":
    main()
