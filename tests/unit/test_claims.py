"""Vendor claims beside measurements (report/summaries/claims.py): a claim's line appears only where a run
matches its regime (engine, workload, encryption, test, and whether the data fit the cache)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tdebench.report.summaries.claims import CLAIMS, claim_lines
from tdebench.report.data.records import summary_records
from tdebench.results import Measurement, RunData, TrialKey, TrialOutcome
from tdebench.store import ResultStore, read_run

MIB = 1024 * 1024


def stored_run(tmp_path: Path, engine: str, encryption: str, workload: str, test: str, step: str,
               cache_mb: int, size_mib: float, slower: float = 1.04) -> RunData:
    """Four rounds of none and one encryption, `slower` times none's time, each trial's database
    of `size_mib` against an engine cache of `cache_mb` (0: no limit)."""
    store = ResultStore(tmp_path)
    store.start('name = "x"\norder = "lockstep"\n', {})
    for rnd in range(1, 5):
        for name, factor in (("none", 1.0), (encryption, slower)):
            trial = TrialKey(engine, name, workload, 1.0, rnd)
            store.append(Measurement(trial, test, step, {"elapsed_s": 0.1 * factor * (1 + rnd / 100)}, answer="ok"))
            store.append(Measurement(trial, "load", "database", {"size_bytes": size_mib * MIB}))
            store.append(TrialOutcome(trial, "ok", "warm", False, 1.0, cache_mb=cache_mb))
    return read_run(tmp_path)


def lines(run: RunData) -> list[str]:
    return claim_lines(run, summary_records(run))


def test_duckdb_s_spilling_claims_are_set_beside_a_run_whose_data_exceeds_its_cache(tmp_path: Path) -> None:
    spilling = stored_run(tmp_path / "a", "duckdb", "aes-256-gcm", "tpch", "power", "q1", cache_mb=16, size_mib=40)
    found = lines(spilling)
    assert len(found) == 2 and all("the data larger than the engine's cache" in line for line in found)
    assert found[0].startswith("Published claim beside this run — duckdb: TPC-H SF 100 Power@Size")
    assert "8 GB memory limit" in found[0] and "aes-256-gcm power +4.0% [" in found[0]
    in_memory = stored_run(tmp_path / "b", "duckdb", "aes-256-gcm", "tpch", "power", "q1", cache_mb=0, size_mib=40)
    assert lines(in_memory) == []  # the blog measured with the data beyond the cache: no match in memory


def test_a_claim_without_a_stated_regime_matches_any_run_of_its_engine_and_encryption(tmp_path: Path) -> None:
    run = stored_run(tmp_path / "a", "mariadb", "aes-256-ctr", "tpch", "power", "q1", cache_mb=256, size_mib=20)
    (line,) = lines(run)
    assert "“Using encryption has an overhead of roughly 3-5%”" in line and "no workload or conditions given" in line
    assert "mariadb tpch sf1 with the data within the engine's cache: aes-256-ctr power +4.0%" in line
    fs_layer = stored_run(tmp_path / "b", "mariadb", "fs-aes-256-gcm", "tpch", "power", "q1", cache_mb=256,
                          size_mib=20)
    assert lines(fs_layer) == []  # MariaDB's claim is about its own encryption, not a layer below it


def test_sqlcipher_s_lookup_claim_matches_crud_lookup_and_its_general_claim_too(tmp_path: Path) -> None:
    run = stored_run(tmp_path, "sqlite", "sqlcipher", "crud", "lookup", "total", cache_mb=0, size_mib=1)
    found = lines(run)
    assert [line.split(": ", 1)[1].split(" (")[0] for line in found] == [
        "“as little as 5-15% overhead for encryption on many operations”",
        "an indexed single-row lookup: “as little as 5%”"]
    assert all("sqlcipher lookup +4.0%" in line for line in found)


@pytest.mark.parametrize("claim", CLAIMS)
def test_every_claim_names_its_source_and_regime(claim) -> None:
    assert claim.source and claim.regime and claim.claim
    assert claim.engine in ("duckdb", "sqlite", "sqlcipher", "mariadb")
