"""`tdebench verify`: the at-rest scan of any files, with canaries the user wrote."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import click

from tdebench.cli.console import line
from tdebench.errors import InputError


@click.command("verify")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--canary", "canaries", multiple=True, required=True,
              help="A string that must not appear on disk (repeatable). Searched as UTF-8, UTF-16LE and UTF-16BE.")
def verify_command(paths: tuple[Path, ...], canaries: tuple[str, ...]) -> None:
    """Scan every file under PATHS for the canary strings and print a verdict: plaintext (a
    canary found; exit 1), encrypted (no canary, and at most 5% of the 4 KiB blocks below 7
    bits/byte of entropy, all-zero blocks left out; exit 0) or inconclusive (no canary, but the
    data is not uniformly random, or too small or all zeros to tell; exit 3). Exit 2: bad input
    or nothing to scan.

    The same scan tdebench runs on every trial: byte search in three encodings and the
    entropy of each 4 KiB block. Use it on a data directory, a backup, a dump. Unlike a trial,
    it cannot prove the canary was ever written: write it yourself before you scan.
    """
    with _one_blas_thread():
        from tdebench import verify  # numpy: see _one_blas_thread

    if any(len(c) < 4 for c in canaries):
        raise InputError("a canary needs at least 4 characters, or every file would match by chance")
    for canary in canaries:
        try:
            canary.encode("utf-8")
        except UnicodeEncodeError:  # bytes of the command line that are not UTF-8 (surrogate escapes)
            raise InputError(f"--canary {canary.encode('utf-8', 'surrogateescape')!r} is not UTF-8 text: give the "
                        "canary as the text you wrote (it is searched as UTF-8, UTF-16LE and UTF-16BE)")
    try:
        state, scans, why = verify.verify_paths(list(paths), list(canaries))
    except FileNotFoundError as exc:
        raise InputError(str(exc)) from None
    except OSError as exc:  # a file this user may not read, a device that fails
        raise InputError(f"cannot read {exc.filename or ', '.join(map(str, paths))}: {exc.strerror or exc}") from None
    if state == "empty":
        raise InputError(f"nothing to scan: no bytes in {', '.join(map(str, paths))}")
    for described in verify.describe(scans):
        line(described)
    colour = {"plaintext": "red", "encrypted": "green", "inconclusive": "yellow"}[state]
    line("verdict: ", (state, f"bold {colour}"), f": {why}")
    sys.exit(VERIFY_EXIT[state])


VERIFY_EXIT = {"encrypted": 0, "plaintext": 1, "inconclusive": 3}
"""`tdebench verify`'s exit code per verdict (2 is bad input, as for every command)."""


@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    """numpy imported, where no one has, with OpenBLAS's pool of one thread: the scan does no
    linear algebra, and the pool's threads, one per core but one, started as numpy loads: 15 to
    45 ms of CPU time per command on this project's 2-core machine, more with more cores
    (docs/method/scan-speed.md). OPENBLAS_NUM_THREADS is set around the import alone (OpenBLAS reads it as it
    loads), and never over the user's own."""
    if "OPENBLAS_NUM_THREADS" in os.environ or "numpy" in sys.modules:
        yield
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        yield
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]
