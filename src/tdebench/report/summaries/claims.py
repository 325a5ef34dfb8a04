"""Vendor claims beside measurements: each engine's published overhead, with its source and the
regime it was measured in, set beside what a run measured where the run's plan matches that
regime (the engine, the workload, and whether the data fit in the engine's cache).

A published figure without its regime is not comparable (docs/claims.md says why for each), so a
claim is matched only where its regime says something a run can match: SQLite's 2 MB page cache
re-decrypts every page a TPC-H query reads, and SQLCipher's 5–15% was not measured there. The
claims are data, here, so the report and docs/claims.md quote the same words and sources.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from tdebench.report.summaries import cache, noise
from tdebench.report.data.records import BASELINE, PLACEBO, SummaryRecord, engine_label, scale_label
from tdebench.report.data.units import interval, percent
from tdebench.results import RunData

_MARIADB_NATIVE = tuple(f"aes-{bits}-{mode}" for bits in (128, 192, 256) for mode in ("cbc", "ctr"))


@dataclass(frozen=True)
class Claim:
    """One published overhead of an engine and the regime it holds in: the workloads, encryptions
    and tests it speaks of (empty: any) and whether the data fitted the engine's cache (None: not
    stated, so any run of the engine matches and the line says so)."""

    engine: str
    claim: str  # the figure as published, quoted or summed up
    source: str  # who published it, where, when
    regime: str  # what it was measured on, as published
    workloads: tuple[str, ...] = ()
    encryptions: tuple[str, ...] = ()
    tests: tuple[str, ...] = ()  # the headline tests compared; empty: every one but the load
    fits: bool | None = None


CLAIMS: tuple[Claim, ...] = (
    Claim("duckdb", "TPC-H SF 100 Power@Size 591,841 → 571,985 (−3.4%) and Throughput@Size 153,690 → 145,353 "
          "(−5.4%) with encryption", "DuckDB blog “Data-at-Rest Encryption in DuckDB”, 2025-11-19",
          "DuckDB 1.4.1 with OpenSSL, an 8 GB memory limit: the data larger than the cache (spilling)",
          workloads=("tpch",), tests=("power", "throughput"), fits=False),
    Claim("duckdb", "SUMMARIZE lineitem SF 10: 5.4 s plain, 5.4 s encrypted with OpenSSL, 6.2 s with MbedTLS (+15%)",
          "DuckDB blog “Data-at-Rest Encryption in DuckDB”, 2025-11-19",
          "a 200 MB memory limit (the data larger than the cache), a recent MacBook", workloads=("tpch",),
          tests=("power",), fits=False),
    Claim("mariadb", "“Using encryption has an overhead of roughly 3-5%”",
          "MariaDB documentation, Data-at-Rest Encryption Overview (since 10.1)", "no workload or conditions given",
          encryptions=_MARIADB_NATIVE),
    Claim("sqlite", "“as little as 5-15% overhead for encryption on many operations”",
          "SQLCipher README; zetetic.net/sqlcipher/performance", "not stated", encryptions=("sqlcipher",)),
    Claim("sqlite", "an indexed single-row lookup: “as little as 5%”", "zetetic.net/sqlcipher/performance",
          "not stated", workloads=("crud",), encryptions=("sqlcipher",), tests=("lookup",)),
    # the same claim, of Zetetic's own build (engine sqlcipher) in its 4.x defaults
    Claim("sqlcipher", "“as little as 5-15% overhead for encryption on many operations”",
          "SQLCipher README; zetetic.net/sqlcipher/performance", "not stated",
          encryptions=("aes-256-cbc-hmac-sha512", "aes-256-cbc-hmac-sha512-raw")),
)
"""The published claims a run of tdebench can be set beside; docs/claims.md has them too, with the
others, whose regime no tdebench run matches (Percona's sysbench read-only on MySQL, CYBERTEC's
PGEE TDE on PostgreSQL, gocryptfs on tmpfs)."""


def _matches(claim: Claim, record: SummaryRecord) -> bool:
    cell = record.cell
    return (cell.engine == claim.engine and record.overhead is not None and cell.metric == "elapsed_s"
            and cell.encryption not in (BASELINE, PLACEBO) and noise.is_headline(cell)
            and (not claim.workloads or cell.workload in claim.workloads)
            and (not claim.encryptions or cell.encryption in claim.encryptions)
            and (cell.test in claim.tests if claim.tests else cell.test != "load"))


def _fits(run: RunData) -> dict[tuple, set[bool]]:
    """Per configuration (engine, encryption, workload, scale, memory_mb): whether its trials'
    data fit the engine's cache (report/summaries/cache.py); trials whose cache is not known are left out."""
    found: dict[tuple, set[bool]] = defaultdict(set)
    for fit in cache.trial_fits(run):
        t = fit.trial
        if fit.fits is not None:
            found[(t.engine, t.encryption, t.workload, t.scale, t.memory_mb)].add(fit.fits)
    return found


def _regime_here(fitted: set[bool]) -> str:
    if fitted == {True}:
        return "the data within the engine's cache"
    if fitted == {False}:
        return "the data larger than the engine's cache"
    return "the cache fit not recorded" if not fitted else "the data fitting in some trials only"


def claim_lines(run: RunData, records: list[SummaryRecord]) -> list[str]:
    """One line per claim and configuration group the run matches: the claim, its source and
    regime, and the figures measured here in that regime (each with its 95% CI)."""
    fits = _fits(run)
    lines = []
    for claim in CLAIMS:
        groups: dict[tuple, list[SummaryRecord]] = defaultdict(list)
        for record in records:
            cell = record.cell
            fitted = fits.get((cell.engine, cell.encryption, cell.workload, cell.scale, cell.memory_mb), set())
            if _matches(claim, record) and (claim.fits is None or fitted == {claim.fits}):
                groups[(cell.engine, cell.memory_mb, cell.workload, cell.scale, _regime_here(fitted))].append(record)
        for (engine, memory, workload, scale, here), matched in sorted(groups.items(), key=lambda item: str(item[0])):
            figures = "; ".join(
                f"{r.cell.encryption} {r.cell.test} {percent(r.overhead.pct)} "
                f"{interval(r.overhead.ci_low, r.overhead.ci_high, percent)}"
                for r in sorted(matched, key=lambda r: (r.cell.test, r.cell.encryption)) if r.overhead is not None)
            lines.append(f"Published claim beside this run — {engine}: {claim.claim} ({claim.source}; measured "
                         f"with: {claim.regime}). Here, {engine_label(engine, memory)} {workload} "
                         f"{scale_label(workload, scale)} with {here}: {figures} (see docs/claims.md).")
    return lines
