"""Runs of a bench/ script in a process of its own, for tests/integration/test_bench_scripts.py
and test_bench_servers.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"


def run(script: str, *args: str, timeout: float = 120) -> str:
    """The script's standard output; its exit code must be 0 (else its output is the failure)."""
    result = subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout
