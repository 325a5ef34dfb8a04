"""Ctrl-C stops a long embedded statement at once: while the main thread waits in DuckDB's or
SQLite's C code, Python cannot run its signal handler, so without `interrupt_on_signals` the
interrupt would wait for the statement to end (here: never)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CHILD = '''
import signal, sys, time
from pathlib import Path
from tdebench.engines import get_engine
from tdebench.engines.base import NONE
from tdebench.engines.timeout import interrupt_on_signals

def handler(signum, frame):
    raise KeyboardInterrupt

signal.signal(signal.SIGINT, handler)
Path(sys.argv[2]).mkdir()
db = get_engine(sys.argv[1]).provision(Path(sys.argv[2]), NONE, None)
db.create()
conn = db.connect()
endless = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r"
try:
    with interrupt_on_signals():
        print("running", flush=True)
        conn.execute(endless)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
finally:
    conn.close()
    db.close()
'''


@pytest.mark.parametrize("engine", ["duckdb", "sqlite"])
def test_ctrl_c_interrupts_an_endless_embedded_statement(engine: str, tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD, engine, str(tmp_path / "ws")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "running"
        time.sleep(0.5)  # inside the C call by now
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)  # without the fix: never returns
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 130, err
    assert out.strip() == "interrupted"
