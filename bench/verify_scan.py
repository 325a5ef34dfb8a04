"""How fast the at-rest scan is, and where its time goes, measured side by side in one run.

Every trial ends with a scan of every file its database wrote (verify.scan_file: 4 canaries
and 4 markers in three encodings, and per-block entropy), so for server engines with a few
hundred MiB of files the scan is part of every trial's wall-clock time. For one file held in
the page cache this prints the speed of:

  read              plain 4 MiB reads (the ceiling);
  scan              verify.scan_file, as every trial runs it;
  scan, free pages  verify.scan_file on a file of zeros as large (a preallocated file: InnoDB's
                    system tablespace, sparse regions);
  entropy           the scan's per-block entropy alone;
  search, prefixed  the scan's pattern search alone (one find per shared prefix);
  search, count     one bytes.count per pattern (24 passes), the search the scan replaced;
  grep -F -c        GNU grep searching every pattern at once (`-F -a -c -f`, page cache, one
                    process): what a tuned C search reaches here (it counts matching lines, so
                    only its time is compared);

and checks that both searches count the same hits. A UTF-16 prefix holds zero bytes, which
made a plain find crawl through free pages; the scan searches its letters in the stride-2
halves of each read instead (verify._Matcher). Run: .venv/bin/python bench/verify_scan.py [MiB]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tdebench.verify import BLOCK_BYTES, CHUNK_BYTES, _Entropy, _Matcher, _patterns, scan_file


def best_of(runs: int, work: Callable[[], object]) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(runs):
        start = time.perf_counter()
        result = work()
        best = min(best, time.perf_counter() - start)
    return best, result


def chunks(path: Path) -> list[bytes]:
    with path.open("rb") as fh:
        return list(iter(lambda: fh.read(CHUNK_BYTES), b""))


def main() -> None:
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    canaries = [f"TDEBENCH-CANARY-{i:024x}" for i in range(4)]
    markers = [f"TDEBENCH-MARKER-{i:024x}" for i in range(4)]
    patterns = [(False, p) for _, p in _patterns(canaries)] + [(True, p) for _, p in _patterns(markers)]
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "data"
        text = (b"Customer#000000001 IVhzIApeRb ot,c,E 711.56 BUILDING regular accounts " * 60)[:BLOCK_BYTES]
        planted = b"".join(p for _, p in patterns)  # every pattern once per MiB, never across a chunk
        with path.open("wb") as fh:  # half text pages, a quarter random, a quarter free (zero) pages
            for i in range(mib * 256):
                page = text if i % 4 < 2 else os.urandom(BLOCK_BYTES) if i % 4 == 2 else bytes(BLOCK_BYTES)
                fh.write(planted + page[len(planted):] if i % 256 == 1 else page)
        data = chunks(path)  # in memory: the searches and the entropy are timed without I/O

        def entropy() -> None:
            counter = _Entropy(BLOCK_BYTES)
            for chunk in data:
                counter.add(chunk)

        matcher = _Matcher(patterns)
        t_read, _ = best_of(3, lambda: chunks(path))
        t_scan, _ = best_of(3, lambda: scan_file(path, canaries, path.parent, None, markers=markers))
        free = Path(scratch) / "free"
        with free.open("wb") as fh:
            fh.truncate(mib << 20)
        t_free, _ = best_of(3, lambda: scan_file(free, canaries, free.parent, None, markers=markers))
        t_entropy, _ = best_of(3, entropy)
        t_prefixed, prefixed = best_of(3, lambda: sum(1 for chunk in data for _ in matcher.matches(chunk, 0)))
        t_count, counted = best_of(3, lambda: sum(chunk.count(p) for chunk in data for _, p in patterns))
        listed = Path(scratch) / "patterns"
        listed.write_bytes(b"\n".join(p.replace(b"\n", b"") for _, p in patterns) + b"\n")
        t_grep, _ = best_of(3, lambda: subprocess.run(["grep", "-F", "-a", "-c", "-f", str(listed), str(path)],
                                                      capture_output=True, check=False))
    assert prefixed == counted == mib * len(patterns), (prefixed, counted)  # once per MiB
    print(f"{mib} MiB, best of 3; {counted} planted hits found by both searches")
    for name, seconds in (("read", t_read), ("scan", t_scan), ("scan, free pages", t_free), ("entropy", t_entropy),
                          ("search, prefixed", t_prefixed), ("search, count", t_count), ("grep -F -c", t_grep)):
        print(f"  {name:<17} {mib / seconds:8.1f} MiB/s  ({seconds / t_scan:5.2f} x the scan's time)")


if __name__ == "__main__":
    main()
