"""What a server's processes have open, read while the server keeps changing: a PostgreSQL
backend exits as soon as its client disconnects, so a process listed a moment ago may be gone
when its sockets are read. A process that is gone has no socket open; it is skipped."""

from __future__ import annotations

from collections.abc import Iterable

import psutil


def connections(processes: Iterable[psutil.Process], kind: str) -> list:
    """Every socket of `kind` ("inet", "tcp", "unix") that the processes still running have open."""
    found = []
    for process in processes:
        try:
            found += process.net_connections(kind)
        except psutil.NoSuchProcess:
            continue
    return found
