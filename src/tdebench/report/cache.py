"""Cache fit: did the data fit in the memory the engine was given, and could pages come from disk?

An overhead means different things in the two regimes: when the whole database stays in
memory, encryption costs only the CPU of the cipher path (a page is decrypted once, when it
is first read); when it does not fit, evicted pages are read and decrypted again, and with a
cold OS page cache the reads go to disk. Per trial: the database's size after the load
(`load`/`database` `size_bytes`) against the memory its engine's cache was given
(`TrialOutcome.cache_mb`, 0 = no limit set), and what the plan's cache mode did to the OS
page cache. Runs from before `cache_mb` was recorded have no such section.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass

from tdebench.report.records import (BASELINE, engine_label, failed_trials, memory_order, scale_label,
                                     scale_text)
from tdebench.report.tables import MIB, Column, Table, number, text, uses_memory
from tdebench.results import RunData, TrialKey, TrialOutcome

IN_MEMORY = "in memory"
DISK_ONCE = "from disk once, then in memory"
EVICTED_DISK = "evicted pages re-read, from disk after each drop"
EVICTED_OS = "evicted pages re-read from the OS cache"


@dataclass(frozen=True)
class TrialFit:
    """One trial's database size against its engine's cache, and its OS page cache."""

    trial: TrialKey
    size_bytes: float
    cache_mb: int  # 0: no limit set by tdebench
    os_cache: str  # "warm", "dropped" (cold, really dropped) or "not dropped" (cold, without root)

    @property
    def fits(self) -> bool:
        return self.cache_mb == 0 or self.size_bytes <= self.cache_mb * MIB

    @property
    def regime(self) -> str:
        """Where the measured test's pages come from, in a few words."""
        dropped = self.os_cache == "dropped"
        if self.fits:
            return DISK_ONCE if dropped else IN_MEMORY
        return EVICTED_DISK if dropped else EVICTED_OS


def _os_cache(outcome: TrialOutcome) -> str:
    if outcome.cache != "cold":
        return "warm"
    return "dropped" if outcome.cache_dropped else "not dropped"


def trial_fits(run: RunData) -> list[TrialFit]:
    """Every trial that recorded its cache and measured its database size, failed ones left
    out as in every statistic."""
    sizes = {m.trial: m.metrics["size_bytes"] for m in run.measurements
             if (m.test, m.step) == ("load", "database") and "size_bytes" in m.metrics}
    failed = failed_trials(run)
    return [TrialFit(o.trial, sizes[o.trial], o.cache_mb, _os_cache(o)) for o in run.trials
            if o.cache_mb is not None and o.trial in sizes and o.trial not in failed]


def _cache_text(cache_mb: int) -> str:
    return "no limit" if cache_mb == 0 else f"{cache_mb:,} MB"


OS_CACHE_WORDS = {"warm": "warm: may hold the data",
                  "dropped": "dropped before each measured test",
                  "not dropped": "cold asked, not dropped (needs root)"}


def _config(fit: TrialFit) -> tuple:
    t = fit.trial
    return (t.engine, memory_order(t.memory_mb), t.workload, t.scale, t.encryption != BASELINE, t.encryption,
            t.memory_mb)


def cache_fit_table(run: RunData) -> Table | None:
    """Per configuration: its database, its engine's cache, whether the data fit (in how many
    trials) and where the measured pages came from; None for runs that did not record it."""
    fits = trial_fits(run)
    if not fits:
        return None
    groups: dict[tuple, list[TrialFit]] = defaultdict(list)
    for fit in fits:
        groups[_config(fit)].append(fit)
    rows = []
    for key in sorted(groups):
        group = groups[key]
        engine, _, workload, scale, _, encryption, memory = key
        fitting = sum(fit.fits for fit in group)
        caches = sorted({fit.cache_mb for fit in group})
        size = statistics.median(fit.size_bytes for fit in group)
        regimes = sorted({fit.regime for fit in group})
        rows.append({"engine": engine, "memory_mb": memory, "encryption": encryption, "workload": workload,
                     "scale": scale, "trials": len(group), "size": size / MIB,
                     "cache": ", ".join(_cache_text(c) for c in caches),
                     "times": size / (caches[0] * MIB) if caches[0] else None,
                     "fits": "yes" if fitting == len(group) else ("no" if not fitting else
                                                                   f"{fitting} of {len(group)} trials"),
                     "os_cache": ", ".join(sorted({OS_CACHE_WORDS[fit.os_cache] for fit in group})),
                     "regime": "; ".join(regimes)})
    memory = uses_memory(row["memory_mb"] for row in rows)
    columns = ((Column("engine", "engine"),) + ((Column("memory_mb", "memory (MB)", text, numeric=True),)
                                                 if memory else ())
               + (Column("encryption", "encryption"), Column("workload", "workload"),
                  Column("scale", "scale", scale_text, numeric=True), Column("trials", "trials", text, numeric=True),
                  Column("size", "database (MiB)", number, numeric=True), Column("cache", "engine cache"),
                  Column("times", "database ÷ cache", _times, numeric=True), Column("fits", "fits in cache"),
                  Column("os_cache", "OS page cache"), Column("regime", "measured pages", prose=True)))
    machine = run.environment.get("memory_bytes")
    ram = f" This machine has {machine / 1024 ** 3:.1f} GiB of memory." if isinstance(machine, int | float) else ""
    spilled = sum(row["fits"] != "yes" for row in rows)
    return Table(
        "Cache fit", columns, rows,
        summary=(f"{len(rows)} configurations: "
                 + (f"{spilled} do not fit in their engine's cache in every trial" if spilled
                    else "every one fits in its engine's cache")),
        intro=("Did the data fit in the memory the engine was given? Database: its size on disk after "
               "the load (median over trials). Engine cache: the plan's memory_mb as the engine applies it "
               "(DuckDB memory_limit, SQLite cache_size per connection, MariaDB's InnoDB buffer pool, "
               "PostgreSQL shared_buffers; under a gocryptfs layer the engine inside the mount), or the "
               "servers' default of 256 MB; no limit: an embedded engine without memory_mb, which uses its "
               "own default (DuckDB up to 80% of memory; SQLite a 2 MB page cache, the rest of the file "
               "in the OS page cache)."),
        note=("OS page cache: with cache = \"cold\" it is dropped before each measured test, so the test's "
              "first read of every page goes to disk; with \"warm\" the pages written by the load and read "
              "by the warm-ups may still be in it, so reads the engine's cache misses can come from memory, "
              "not disk. The OS cache holds pages as they are on disk (encrypted), except under gocryptfs, "
              "whose decrypted view it caches too. Measured pages: in memory — the data fits and nothing is "
              "dropped: the overheads are the CPU cost of the cipher path; from disk once, then in memory — "
              "the data fits, each page is read and decrypted once per test; evicted pages re-read — the "
              "data is larger than the engine's cache, so pages are read and decrypted again, from disk "
              "after each drop or when the OS cache cannot hold them, else from the OS cache. MariaDB reads "
              "with O_DIRECT (its default in 10.11), past the OS cache: every buffer-pool miss is a disk "
              "read." + ram))


def _times(value: float | None) -> str:
    return "–" if value is None else f"{value:.2g}×" if value < 10 else f"{value:,.0f}×"


def findings(run: RunData) -> list[str]:
    """One sentence per workload and scale: that it ran entirely in cache (the overheads are the
    cipher path's CPU cost, not I/O), or which configurations did not fit and where their pages
    came from. Nothing for runs that did not record their cache."""
    per_scale: dict[tuple[str, float], list[TrialFit]] = defaultdict(list)
    for fit in trial_fits(run):
        per_scale[(fit.trial.workload, fit.trial.scale)].append(fit)
    sentences = []
    for (workload, scale), fits in sorted(per_scale.items()):
        where = f"{workload} {scale_label(workload, scale)}"
        largest = max(fit.size_bytes for fit in fits) / MIB
        if all(fit.regime == IN_MEMORY for fit in fits):
            sentences.append(f"{where} runs entirely in cache (databases up to {number(largest)} MiB, every "
                             "engine's cache larger or unlimited, nothing dropped): these overheads are the "
                             "CPU cost of the cipher path, not I/O.")
            continue
        spilled = _by_engine(fit for fit in fits if not fit.fits)
        if not spilled:
            sentences.append(f"{where}: the data fits in every engine's cache (up to {number(largest)} MiB) "
                             "but the OS cache was dropped before each measured test, so each page is read "
                             "from disk and decrypted once per test, then served from memory.")
            continue
        parts = []
        for label, group in spilled.items():
            ratio = max(fit.size_bytes / (fit.cache_mb * MIB) for fit in group)
            parts.append(f"{label} ({_times(ratio)} its cache)")
        dropped = any(fit.os_cache == "dropped" for fit in fits)
        source = ("from disk after each drop of the OS cache before a measured test (and again whenever "
                  "the OS cache cannot hold them)" if dropped else
                  "from the OS page cache (warm), so mostly from memory, not disk")
        sentences.append(f"{where}: the data is larger than the engine's cache on {', '.join(parts)}: evicted "
                         f"pages are read and decrypted again, {source}; these overheads include that I/O, "
                         "unlike configurations whose data fits.")
    return sentences


def _by_engine(fits) -> dict[str, list[TrialFit]]:
    """Trials by engine as configured ("duckdb 64 MB"), in engine and memory order."""
    groups: dict[tuple, list[TrialFit]] = defaultdict(list)
    for fit in fits:
        t = fit.trial
        groups[(t.engine, memory_order(t.memory_mb), engine_label(t.engine, t.memory_mb))].append(fit)
    return {key[2]: groups[key] for key in sorted(groups)}
