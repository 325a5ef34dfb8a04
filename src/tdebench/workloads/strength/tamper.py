"""Tamper detection: one byte of a data page of the stopped database flipped, the database
opened again and its rows read, in a child process (an engine that crashes on what it reads
takes only that process down).

What the engine did decides the class (`classify`):
- `tag detects`: it refused, and the encryption checks a keyed tag on every page
  (`Encryption.authenticated`: GCM, the AEADs, an HMAC): a change made without the key is
  refused by the key;
- `refused without a tag`: it refused, and the encryption has no keyed tag: what caught the
  change is an unkeyed page checksum (DuckDB's block checksum, InnoDB's) or the format's own
  consistency checks (SQLite has no page checksum: "database disk image is malformed"), which
  whoever changes the page knowing its layout can recompute or satisfy; what the engine said
  tells which;
- `silently altered`: the rows read back, and some differ from what was written;
- `unchanged`: the rows read back as written: the flip hit bytes the read does not use, so
  this flip proves nothing either way;
- `crashed`: the child process died or did not answer.
What the engine said is kept beside the class (first line, keys scrubbed). One flipped byte
is a probe, not a cryptanalysis: see docs/method/workloads.md, "The strength workload".
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tdebench.engines.base import PageLayout
from tdebench.engines.server import error_lines

TAG, UNTAGGED, ALTERED, UNCHANGED, CRASHED = (
    "tag detects", "refused without a tag", "silently altered", "unchanged", "crashed")
FORGEABLE = "forgeable"  # a known-plaintext forgery accepted (forgery.py)
CLASSES = (TAG, UNTAGGED, FORGEABLE, ALTERED, UNCHANGED, CRASHED)
"""Every class, from the strongest protection to the weakest outcome of a test (crashed last)."""

REFUSED, DIFFERS, SAME, DIED = "refused", "differs", "same", "died"  # what a reading gave
MESSAGE_CHARS = 240  # what the engine said, cut to this many characters
TIMEOUT_S = 120.0


class EngineDied(Exception):
    """The engine's server ended while a tampered database was read: a crash, not a refusal."""


SERVER_EXIT_WAIT_S = 1.0  # after an error, how long a server that is going down is given to exit


def server_died(processes: Callable[[], list | None], wait_s: float = SERVER_EXIT_WAIT_S) -> bool:
    """Whether the engine's server is gone (`processes`, `Database.engine_processes`: [] once it
    stopped running), looked at until `wait_s` has passed: a server that aborts closes its
    clients' sockets as it exits, so the client's error may come a moment before its end."""
    deadline = time.monotonic() + wait_s
    while True:
        if processes() == []:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


@dataclass(frozen=True)
class Reading:
    """What reopening and reading the tampered database gave: `status` (REFUSED, DIFFERS, SAME,
    DIED) and what the engine or the comparison said."""

    status: str
    said: str = ""


def classify(reading: Reading, authenticated: bool) -> str:
    """The class of a reading, given whether the encryption checks a keyed tag on every page."""
    if reading.status == REFUSED:
        return TAG if authenticated else UNTAGGED
    return {DIFFERS: ALTERED, SAME: UNCHANGED}.get(reading.status, CRASHED)


def targets(layout: PageLayout, fraction: float, tries: int) -> list[int]:
    """The offsets of the bytes to flip, one at a time, until the read notices one: the middle of
    the page at `fraction` of the file's written pages (a data page of the table loaded last, when
    that table fills the file's later part), then of each written page before it, toward the
    file's start where the tables were written (and round to the last), at most `tries`. Pages of
    zeros only are left out (space the engine allocated and never wrote: InnoDB extends a
    tablespace by whole extents); a page the engine has freed or not used yet still reads as
    `unchanged` (DuckDB keeps free blocks at the file's end)."""
    pages = layout.pages()
    if pages < 1:
        raise ValueError(f"{layout.file.name} has no whole page after its headers")
    with layout.file.open("rb") as file:
        file.seek(layout.first_page)
        written = [n for n in range(pages) if any(file.read(layout.page_bytes))]
    candidates = written or list(range(pages))
    start = min(len(candidates) - 1, int(len(candidates) * fraction))
    return [layout.first_page + candidates[(start - i) % len(candidates)] * layout.page_bytes + layout.page_bytes // 2
            for i in range(min(tries, len(candidates)))]


def xor(path: Path, offset: int, mask: bytes) -> bytes:
    """XOR `mask` into `path` at `offset` (in place, synced); returns the bytes that were there."""
    with path.open("r+b") as file:
        file.seek(offset)
        before = file.read(len(mask))
        file.seek(offset)
        file.write(bytes(a ^ b for a, b in zip(before, mask)))
        file.flush()
        os.fsync(file.fileno())
    return before


def read_at(path: Path, offset: int, size: int) -> bytes:
    with path.open("rb") as file:
        file.seek(offset)
        return file.read(size)


def write_at(path: Path, offset: int, content: bytes) -> None:
    """`content` written over `path` at `offset` (in place, synced)."""
    with path.open("r+b") as file:
        file.seek(offset)
        file.write(content)
        file.flush()
        os.fsync(file.fileno())


def in_brief(text: str) -> str:
    """What an engine said, as the report keeps it: its first line, cut to MESSAGE_CHARS. Where
    that line only introduces a log (a server that did not start: "…; its log ends:"), the log's
    first error line follows it, since the reason is there: MariaDB's "InnoDB: Corrupted page
    identifier at …" after a garbled CBC block, which the first line alone had left out."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[0]
    if line.endswith(":") and len(lines) > 1:
        line = f"{line} {(error_lines(lines[1:]) or lines[1:])[0]}"
    return line if len(line) <= MESSAGE_CHARS else line[:MESSAGE_CHARS - 1] + "…"


def read_here(read: Callable[[], str | None]) -> Reading:
    """`read` (open the database, read its rows: None when they are as written, else what
    differs; raising when the engine refuses) run in this process: for an engine that runs
    apart already (a server, a file-system mount), whose processes this process must stop."""
    try:
        differs = read()
    except EngineDied as exc:
        return Reading(DIED, str(exc))
    except UnicodeDecodeError as exc:  # the engine returned the bytes; the driver found them no text
        return Reading(DIFFERS, f"a value read back is not the text written ({exc})")
    except Exception as exc:  # the engine's refusal, whatever its class
        return Reading(REFUSED, f"{type(exc).__name__}: {exc}")
    return Reading(SAME) if differs is None else Reading(DIFFERS, differs)


def read_apart(read: Callable[[], str | None], timeout_s: float = TIMEOUT_S) -> Reading:
    """`read` (as read_here) run in a forked child process, so a crash of an engine running inside
    this process ends the child only. The child shares nothing back but the reading."""
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)

    def child() -> None:
        try:
            reading = read_here(read)
        except BaseException as exc:  # SystemExit, KeyboardInterrupt: a refusal all the same
            reading = Reading(REFUSED, f"{type(exc).__name__}: {exc}")
        send.send(reading)

    process = context.Process(target=child, daemon=True)
    process.start()
    send.close()
    try:
        if receive.poll(timeout_s):
            return receive.recv()  # type: ignore[no-any-return]
        return Reading(DIED, f"no answer in {timeout_s:g} s")
    except EOFError:
        process.join(5)
        return Reading(DIED, f"the process reading it ended with exit code {process.exitcode}")
    finally:
        if process.is_alive():
            process.kill()
        process.join(5)
        receive.close()
