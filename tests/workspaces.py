"""Temporary directories that servers running as their own system user (postgres, mysql) can
reach. pytest makes its temporary directories 0700 and root-owned, so a server running as
another user could not enter its own workspace; these are below the system temp directory,
0711 (others may search, not list) and removed afterwards, as the runner's workspace root is.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def server_reachable_dir(prefix: str = "tdebench-test-") -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        path.chmod(0o711)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
