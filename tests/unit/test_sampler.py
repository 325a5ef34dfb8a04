"""The resource sampler takes real samples of this machine while work runs."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from tdebench.measure.sampler import Sampler
from tdebench.store import ResultStore, TrialKey, read_run


def test_samples_are_taken_stored_and_sane(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.start("name = 'x'\n", {})
    trial = TrialKey("duckdb", "none", "tpch", 0.01, 1)
    block = bytes(8 << 20)
    with Sampler(store, trial, interval_s=0.05):
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:  # busy CPU, releasing the GIL as an engine does
            hashlib.sha256(block).digest()
    samples = read_run(tmp_path).samples
    assert len(samples) >= 4
    assert [s.t_s for s in samples] == sorted(s.t_s for s in samples)
    assert all(s.trial == trial for s in samples)
    assert all(0 <= s.cpu_pct <= 100 and 0 <= s.disk_busy_pct <= 100 for s in samples)
    assert max(s.cpu_pct for s in samples) > 0
    assert all(s.mem_bytes > 10_000_000 and 0 < s.mem_pct < 100 for s in samples)  # this Python process
    assert all(s.disk_read_bytes >= 0 and s.disk_write_bytes >= 0 for s in samples)
    assert all(s.others_cpu_pct is not None and s.others_cpu_pct >= 0 for s in samples)
    assert all(s.load_1m is not None and s.load_1m >= 0 for s in samples)


def test_sampler_stops_promptly(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.start("name = 'x'\n", {})
    started = time.monotonic()
    with Sampler(store, TrialKey("e", "none", "w", 1.0, 1), interval_s=10.0):
        pass
    assert time.monotonic() - started < 5
    assert read_run(tmp_path).samples == []
