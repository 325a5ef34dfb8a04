"""The resource sampler takes real samples of this machine while work runs."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tdebench.measure.sampler import Sampler
from tdebench.results import TrialKey
from tdebench.store import ResultStore, read_run


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


def test_a_lockstep_groups_trials_share_one_sampler_each_with_its_own_engines_memory(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.start("name = 'x'\n", {})
    mine, server = TrialKey("duckdb", "none", "tpch", 0.01, 1), TrialKey("mariadb", "none", "tpch", 0.01, 1)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with Sampler(store, mine, interval_s=0.05, beside=[(server, lambda: [psutil.Process(child.pid)])]):
            deadline = time.monotonic() + 20  # 3 looks take 0.15 s on an idle machine, far longer on a loaded one
            while len(read_run(tmp_path).samples) < 6 and time.monotonic() < deadline:
                time.sleep(0.05)
    finally:
        child.kill()
        child.wait()
    samples = read_run(tmp_path).samples
    by_trial = {key: [s for s in samples if s.trial == key] for key in (mine, server)}
    assert len(by_trial[mine]) == len(by_trial[server]) >= 3
    for a, b in zip(by_trial[mine], by_trial[server]):
        assert (a.t_s, a.cpu_pct, a.others_cpu_pct) == (b.t_s, b.cpu_pct, b.others_cpu_pct)  # the machine's, shared
        assert a.mem_bytes > b.mem_bytes > 0  # each trial's own engine: this process, the small child


def test_a_full_disk_ends_the_sampler_quietly(tmp_path: Path, monkeypatch) -> None:
    """No space left for results.jsonl: the sampler stops without a traceback of its own (the
    run's next write reports the full disk in one line)."""
    import threading

    from tdebench.store import OutputError

    store = ResultStore(tmp_path)
    store.start("name = 'x'\n", {})

    def full(record: object) -> None:
        raise OutputError("no space left")

    monkeypatch.setattr(store, "append", full)
    raised: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: raised.append(args.exc_value))
    sampler = Sampler(store, TrialKey("duckdb", "none", "tpch", 0.01, 1), interval_s=0.02)
    with sampler:
        deadline = time.monotonic() + 2.0
        while sampler._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not sampler._thread.is_alive()  # ended at its first write, not at the stop
    assert raised == []
