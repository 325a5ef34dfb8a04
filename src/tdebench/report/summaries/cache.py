"""Cache fit: did the data fit in the cache the engine really had, and could pages come from disk?

An overhead means different things in the two regimes: when the whole database stays in
the engine's cache, encryption costs only the CPU of the cipher path (a page is decrypted once,
when it is first read); when it does not fit, evicted pages are read and decrypted again on
every read, from the OS page cache or, with a cold one, from disk. Per trial: the database's
tables and indexes after the load (`load`/`database` `data_bytes`: the files a query reads, no
WAL or log; every file's `size_bytes` for a run from before it was recorded) against the cache its engine really had
(`TrialOutcome.cache_mb`: memory_mb, or the engine's default — SQLite's 2000 KiB page cache per
connection, DuckDB's 80% of memory, the servers' pools as tdebench starts them), and what the
plan's cache mode did to the OS page cache. Runs that recorded 0 for an embedded engine's
default (before the default was recorded) are read against that engine's default on the run's
machine, from the engine's facts the run holds (results.EngineFacts: recorded, or filled in by
`tdebench upgrade`), and say so; without them, and for a server tdebench did not start, the cache
is not known. Runs from before `cache_mb` was recorded have no such section.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass

from tdebench.report.data.encryptions import known
from tdebench.report.data.records import BASELINE, engine_label, failed_trials, memory_order, scale_label, scale_text
from tdebench.report.summaries.tables import Column, Table, text, uses_memory
from tdebench.report.data.units import MIB, number, times
from tdebench.results import EngineFacts, RunData, TrialKey, TrialOutcome

COLD = ("dropped", "evicted")
"""The OS cache states of a cold trial whose cache really was emptied (`TrialFit.os_cache`)."""
IN_MEMORY = "in memory"
DISK_ONCE = "from disk once, then in memory"
EVICTED_DISK = "evicted pages re-read, from disk after each cold start"
EVICTED_OS = "evicted pages re-read from the OS cache"
SPILLS, SPILLS_VERB = "pages decrypted again on every read", "decrypt pages again on every read"
"""What a configuration whose data is larger than its engine's cache does, for the headline and the findings."""
REREAD, REREAD_VERB = ("evicted pages read again through the file-system layer, whose cost dominates the cipher's",
                       "read evicted pages again through the file-system layer, whose cost dominates the cipher's")
"""Instead of SPILLS where the run's bare-layer arm shows the file-system layer, not the cipher,
to be most of the cost (report/sections/layers.py): the layer's reads, not pages decrypted, explain it."""
UNKNOWN = "not known: the engine's cache was not recorded (a server's own, or an old run's)"



DATA_METRIC = "data_bytes"
"""The load's measure of the tables and indexes (`Database.data_bytes`) that data ÷ cache counts;
a run without it (before it was recorded) is read with every file's size_bytes."""

@dataclass(frozen=True)
class TrialFit:
    """One trial's database size against its engine's cache, and its OS page cache."""

    trial: TrialKey
    size_bytes: float
    cache_mb: float  # the engine's cache in MiB; 0: not known (a server tdebench did not start)
    # "warm"; cold: "dropped" (the whole OS cache), "evicted" (the database's files) or "not dropped"
    os_cache: str
    default_not_recorded: bool = False  # an older run's 0 read as the engine's default (not recorded)

    @property
    def known(self) -> bool:
        return self.cache_mb > 0

    @property
    def fits(self) -> bool | None:
        """Whether the database fits in the engine's cache; None when the cache is not known."""
        return self.size_bytes <= self.cache_mb * MIB if self.known else None

    @property
    def ratio(self) -> float | None:
        """Data ÷ cache: the x of the cost curve (plots.cost_curves)."""
        return self.size_bytes / (self.cache_mb * MIB) if self.known else None

    @property
    def regime(self) -> str:
        """Where the measured test's pages come from, in a few words."""
        dropped = self.os_cache in COLD
        if self.fits is None:
            return UNKNOWN
        if self.fits:
            return DISK_ONCE if dropped else IN_MEMORY
        return EVICTED_DISK if dropped else EVICTED_OS


def _os_cache(outcome: TrialOutcome) -> str:
    if outcome.cache != "cold":
        return "warm"
    if not outcome.cache_dropped:
        return "not dropped"
    return "evicted" if outcome.evicted == "files" else "dropped"


def _recorded_cache(outcome: TrialOutcome, engine: EngineFacts | None, memory_bytes: float) -> tuple[float, bool]:
    """The trial's cache in MiB, and whether it is an older run's 0 ("no limit set by tdebench")
    read as the default its engine has on the run's machine (`memory_bytes`, from its
    environment.json; 0: not recorded), as the run's facts of the engine give it: SQLite's page
    cache, DuckDB's share of memory. 0 stays 0 for a server tdebench did not start, and for an
    engine whose facts the run does not hold."""
    assert outcome.cache_mb is not None
    if outcome.cache_mb or outcome.trial.memory_mb is not None or engine is None:
        return outcome.cache_mb, False
    default = engine.default_cache_mb or engine.default_cache_share * memory_bytes / MIB
    return default, default > 0


def trial_fits(run: RunData) -> list[TrialFit]:
    """Every trial that recorded its cache and measured its database size, failed ones left
    out as in every statistic."""
    sizes = {m.trial: m.metrics.get(DATA_METRIC, m.metrics["size_bytes"]) for m in run.measurements
             if (m.test, m.step) == ("load", "database") and "size_bytes" in m.metrics}
    failed = failed_trials(run)
    memory = run.environment.get("memory_bytes")
    memory_bytes, engines = float(memory) if isinstance(memory, int | float) else 0.0, known(run)
    fits = []
    for outcome in run.trials:
        if outcome.cache_mb is not None and outcome.trial in sizes and outcome.trial not in failed:
            cache_mb, not_recorded = _recorded_cache(outcome, engines.engine(outcome.trial.engine), memory_bytes)
            fits.append(TrialFit(outcome.trial, sizes[outcome.trial], cache_mb, _os_cache(outcome), not_recorded))
    return fits


def cache_text(cache_mb: float, not_recorded: bool = False) -> str:
    """A cache as the report names it: "64 MB", "1.95 MB" (SQLite's default), "19,251 MB"."""
    if cache_mb <= 0:
        return "not known"
    amount = f"{cache_mb:,.0f}" if cache_mb >= 10 else f"{cache_mb:.3g}"
    return f"{amount} MB" + (" (default, not recorded)" if not_recorded else "")


OS_CACHE_WORDS = {"warm": "warm: may hold the data",
                  "dropped": "dropped before each measured test",
                  "evicted": "the database's files evicted before each measured test",
                  "not dropped": "cold asked, not emptied"}


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
        fitting = sum(bool(fit.fits) for fit in group)
        caches = sorted({(fit.cache_mb, fit.default_not_recorded) for fit in group})
        size = statistics.median(fit.size_bytes for fit in group)
        regimes = sorted({fit.regime for fit in group})
        rows.append({"engine": engine, "memory_mb": memory, "encryption": encryption, "workload": workload,
                     "scale": scale, "trials": len(group), "size": size / MIB,
                     "cache": ", ".join(cache_text(*c) for c in caches),
                     "times": size / (caches[0][0] * MIB) if caches[0][0] else None,
                     "fits": ("not known" if not caches[0][0] else "yes" if fitting == len(group) else
                              "no" if not fitting else f"{fitting} of {len(group)} trials"),
                     "os_cache": ", ".join(sorted({OS_CACHE_WORDS[fit.os_cache] for fit in group})),
                     "regime": "; ".join(regimes)})
    memory = uses_memory(row["memory_mb"] for row in rows)
    columns = ((Column("engine", "engine"),) + ((Column("memory_mb", "memory (MB)", text, numeric=True),)
                                                 if memory else ())
               + (Column("encryption", "encryption"), Column("workload", "workload"),
                  Column("scale", "scale", scale_text, numeric=True), Column("trials", "trials", text, numeric=True),
                  Column("size", "database (MiB)", number, numeric=True), Column("cache", "engine cache"),
                  Column("times", "database ÷ cache", times, numeric=True), Column("fits", "fits in cache"),
                  Column("os_cache", "OS page cache"), Column("regime", "measured pages", prose=True)))
    machine = run.environment.get("memory_bytes")
    ram = f" This machine has {machine / 1024 ** 3:.1f} GiB of memory." if isinstance(machine, int | float) else ""
    spilled = sum(row["fits"] != "yes" for row in rows)
    return Table(
        "Cache fit", columns, rows,
        summary=(f"{len(rows)} configurations: "
                 + (f"{spilled} do not fit in their engine's cache in every trial" if spilled
                    else "every one fits in its engine's cache")),
        intro=("Did the data fit in the cache the engine really had? Database: its tables and indexes on "
               "disk after the load, the files a query reads (median over trials; WAL, logs and temp files "
               "left out; a run from before tdebench recorded them apart counts every file). Engine cache: "
               "the plan's memory_mb as the engine applies it "
               "(DuckDB memory_limit, SQLite cache_size per connection, MariaDB's InnoDB buffer pool, "
               "PostgreSQL shared_buffers; under a gocryptfs layer the engine inside the mount), or the cache "
               "the engine has without it, as the engine reports it: SQLite's default page cache of 2000 KiB "
               "(1.95 MB) per connection, the rest of the file read through the OS page cache and decrypted "
               "again on every read; DuckDB's memory_limit of 80% of memory; the servers' 256 MB as tdebench "
               "starts them. “Default, not recorded”: a run from before tdebench recorded an embedded "
               "engine's default, read against that engine's default on the run's machine."),
        note=("OS page cache: with cache = \"cold\" it is emptied before each measured test (evict = \"files\": "
              "the database's files only, the engine's code stays cached; \"os\": the whole cache), so the test's "
              "first read of every page goes to disk; with \"warm\" the pages written by the load and read "
              "by the warm-ups may still be in it, so reads the engine's cache misses can come from memory, "
              "not disk. The OS cache holds pages as they are on disk (encrypted), except under gocryptfs, "
              "whose decrypted view it caches too. Measured pages: in memory — the data fits and nothing is "
              "dropped: the overheads are the CPU cost of the cipher path; from disk once, then in memory — "
              "the data fits, each page is read and decrypted once per test; evicted pages re-read — the "
              "data is larger than the engine's cache, so pages are read and decrypted again, from disk "
              "after each cold start or when the OS cache cannot hold them, else from the OS cache. MariaDB reads "
              "with O_DIRECT (its default in 10.11), past the OS cache: every buffer-pool miss is a disk "
              "read." + ram))




def findings(run: RunData, layer_bound: Collection[tuple] = ()) -> list[str]:
    """One sentence per workload and scale: that it ran entirely in cache (the overheads are the
    cipher path's CPU cost, not I/O), or which configurations did not fit — whose pages are
    decrypted again on every read, or for those of `layer_bound` (engine, memory_mb, workload,
    scale: the file-system layer dominates their cost, report/sections/layers.py) read again through the
    layer — and where their pages came from. Nothing for runs that did not record their cache."""
    per_scale: dict[tuple[str, float], list[TrialFit]] = defaultdict(list)
    for fit in trial_fits(run):
        per_scale[(fit.trial.workload, fit.trial.scale)].append(fit)
    sentences = []
    for (workload, scale), fits in sorted(per_scale.items()):
        where = f"{workload} {scale_label(workload, scale)}"
        largest = max(fit.size_bytes for fit in fits) / MIB
        unknown = sorted(_by_engine(fit for fit in fits if not fit.known))
        unknown_text = (f" ({', '.join(unknown)}: cache not known, a server's own or not recorded)"
                        if unknown else "")
        known = [fit for fit in fits if fit.known]
        if known and all(fit.regime == IN_MEMORY for fit in known):
            sentences.append(f"{where} runs entirely in cache (databases up to {number(largest)} MiB, every "
                             f"engine's cache larger, nothing dropped){unknown_text}: these overheads are the "
                             "CPU cost of the cipher path, not I/O.")
            continue
        spilled = _by_engine(fit for fit in known if not fit.fits)
        if not spilled:
            if known:
                sentences.append(f"{where}: the data fits in every engine's cache (up to {number(largest)} MiB)"
                                 f"{unknown_text} but the OS cache was emptied before each measured test, so "
                                 "each page is read from disk and decrypted once per test, then served from "
                                 "memory.")
            continue
        parts = [regime_words(group) for group in spilled.values()]
        bound = [label for label, group in spilled.items()
                 if (group[0].trial.engine, group[0].trial.memory_mb, workload, scale) in layer_bound]
        dropped = any(fit.os_cache in COLD for fit in fits)
        source = ("from disk after the OS cache was emptied before each measured test (and again whenever "
                  "the OS cache cannot hold them)" if dropped else
                  "from the OS page cache (warm), so mostly from memory, not disk")
        what = (f"these configurations {SPILLS_VERB}" if not bound
                else f"these configurations {REREAD_VERB}" if len(bound) == len(spilled)
                else f"these configurations {SPILLS_VERB} ({', '.join(bound)}: {REREAD_VERB})")
        sentences.append(f"{where}: the data is larger than the engine's cache on {', '.join(parts)}: {what}, "
                         f"{source}; their overheads include that, unlike configurations whose data "
                         f"fits{unknown_text}.")
    return sentences


def regime_words(group: list[TrialFit]) -> str:
    """One configuration's data against its cache: "sqlite (13.0 MiB, 6.6× its 1.95 MB cache)"."""
    fit = group[0]
    size = statistics.median(f.size_bytes for f in group) / MIB
    ratio = statistics.median(f.ratio or 0.0 for f in group)
    return (f"{engine_label(fit.trial.engine, fit.trial.memory_mb)} ({number(size)} MiB, {times(ratio)} its "
            f"{cache_text(fit.cache_mb)} cache)")


@dataclass(frozen=True)
class Regime:
    """The regime of one configuration's figures: `fit`, the data against the cache, in words;
    whether the data is larger than the engine's cache (`spills`: pages are decrypted again on
    every read) and by how much (`ratio`)."""

    fit: str  # "data 6.6× the engine's 1.95 MB cache", "data fits in the engine's 64 MB cache"
    spills: bool
    ratio: float  # data ÷ cache, the median over the configuration's trials: the cost curve's x

    @property
    def words(self) -> str:
        """The regime for the headline: the fit, and where the data spills, that pages are decrypted again."""
        return self.said()

    def said(self, layer_bound: bool = False) -> str:
        """`words`; where the cost is the file-system layer's (`layer_bound`), a spilling
        configuration's pages are said to be read again through the layer (REREAD), not decrypted."""
        return f"{self.fit}: {REREAD if layer_bound else SPILLS}" if self.spills else self.fit


def regimes(run: RunData, per_encryption: bool = False) -> dict[tuple, Regime]:
    """Per configuration (engine, memory_mb, workload, scale), the regime its figures belong to:
    "data 6.6× the engine's 1.95 MB cache: pages decrypted again on every read" or "data fits in
    the engine's 64 MB cache"; configurations whose cache is not known are left out. The ratio is
    the median over the group's trials, every encryption's; `per_encryption`: per configuration
    and encryption (the key's last item), each its own database's ratio, as the Cache fit table
    gives it (an encryption's pages can be larger: SQLCipher's reserve bytes)."""
    groups: dict[tuple, list[TrialFit]] = defaultdict(list)
    for fit in trial_fits(run):
        t = fit.trial
        groups[(t.engine, t.memory_mb, t.workload, t.scale) + ((t.encryption,) if per_encryption else ())].append(fit)
    found = {}
    for config, group in groups.items():
        known = [fit for fit in group if fit.known]
        if not known:
            continue
        ratio = statistics.median(fit.ratio or 0.0 for fit in known)
        cache_words = cache_text(known[0].cache_mb)
        spills = not all(fit.fits for fit in known)
        found[config] = Regime(f"data {times(ratio)} the engine's {cache_words} cache" if spills
                               else f"data fits in the engine's {cache_words} cache", spills, ratio)
    return found


def _by_engine(fits) -> dict[str, list[TrialFit]]:
    """Trials by engine as configured ("duckdb 64 MB"), in engine and memory order."""
    groups: dict[tuple, list[TrialFit]] = defaultdict(list)
    for fit in fits:
        t = fit.trial
        groups[(t.engine, memory_order(t.memory_mb), engine_label(t.engine, t.memory_mb))].append(fit)
    return {key[2]: groups[key] for key in sorted(groups)}
