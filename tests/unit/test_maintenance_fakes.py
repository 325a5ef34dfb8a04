"""The maintenance workload without real engines: its checks, its not-applicable paths, what
the runner hands it (scratch_database, canaries, fresh keys, a new connection after it closed the
one it was given), and the report's time-to-encrypt, rekey and reindex tables from a fake run."""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import pytest

from fake_engine import FAKE_ENC, FakeEngine, FakeWorkload
from fakes import write_fake_run
from tdebench.engines.base import NONE, Connection
from fake_clock import FakeClock
from tdebench.measure.recorder import Recorder
from tdebench.plan import EngineChoice, Plan, WorkloadSpec
from tdebench.report import build
from tdebench.report.sections import maintenance as report
from tdebench.report.data.records import summary_records
from tdebench.run.runner import Runner
from tdebench.results import Measurement, TrialKey, TrialOutcome
from tdebench.store import ResultStore, read_run
from tdebench.workloads import WORKLOADS
from tdebench.workloads.base import CANARY_TABLE, RunContext
from tdebench.workloads.maintenance import checks, encrypt, reindex
from tdebench.workloads.maintenance.workload import MaintenanceWorkload
from tdebench.workloads.tpch import schema

MIB = 1024 * 1024
GCM = "aes-256-gcm"


# --- the workload's own pieces ------------------------------------------------------------


def test_the_workload_is_registered_with_its_three_tests() -> None:
    assert WORKLOADS["maintenance"] is MaintenanceWorkload
    assert MaintenanceWorkload.tests == ("reindex", "encrypt", "rekey")


def test_every_dialect_has_a_rebuild_and_unknown_ones_are_refused() -> None:
    live = [d for d in schema.DIALECTS if d not in ("tsql", "oracle")]  # the script kit's have no maintenance
    assert {d: reindex.rebuild(d).method for d in live} == {
        "duckdb": "rebuild-table", "sqlite": "reindex", "postgres": "reindex-table", "mysql": "alter-table-force"}
    assert "ADD PRIMARY KEY (l_orderkey, l_linenumber)" in " ".join(reindex.rebuild("duckdb").statements)
    with pytest.raises(ValueError,
                       match="no index rebuild for dialect 'oracle'; known: duckdb, sqlite, postgres, mysql"):
        reindex.rebuild("oracle")


def test_reindex_problems_name_lost_indexes_and_rows() -> None:
    before = reindex.TableState(frozenset({"pk", "fk"}), 100)
    assert reindex.problems(before, before) == []
    assert reindex.problems(before, reindex.TableState(frozenset(), 100)) == ["lineitem has no index after the rebuild"]
    found = reindex.problems(before, reindex.TableState(frozenset({"pk"}), 99))
    assert "indexes changed: ['fk', 'pk'] before, ['pk'] after" in found[0] and "100 rows before" in found[1]


def test_contents_differences_name_tables_and_canaries() -> None:
    before = checks.Contents((("lineitem", 10), (CANARY_TABLE, 2)), frozenset({"a", "b"}))
    assert checks.differences(before, before) == []
    after = checks.Contents((("lineitem", 9), (CANARY_TABLE, 2)), frozenset({"a"}))
    assert checks.differences(before, after) == ["lineitem: 10 rows before, 9 after", "1 canaries no longer readable"]


def test_the_sensitive_columns_are_those_the_tpch_load_seals() -> None:
    sealed = {s.table: (s.columns, s.key) for s in encrypt.sensitive_columns()}
    keys = {t.name: t.primary_key for t in schema.SCHEMA}
    assert sealed == {**{t: (tuple(c), keys[t]) for t, c in schema.SENSITIVE.items()},
                      CANARY_TABLE: (("canary",), ("id",))}


def _context(tmp_path: Path, encryption=NONE) -> tuple[RunContext, ResultStore]:
    store = ResultStore(tmp_path / "out")
    store.start("", {})
    database = FakeEngine().provision(tmp_path, encryption, None)
    recorder = Recorder(store, TrialKey("fake", encryption.name, "maintenance", 0.01, 1), FakeClock())
    return RunContext(database=database, dialect="duckdb", recorder=recorder, scale=0.01, streams=1,
                      data_dir=tmp_path), store


@pytest.mark.parametrize("test", ["encrypt", "rekey"])
def test_the_baseline_records_not_applicable_and_no_number(test: str, tmp_path: Path) -> None:
    ctx, store = _context(tmp_path)
    MaintenanceWorkload().run(test, ctx, ctx.database.connect(), warmup=False)
    (recorded,) = read_run(store.directory).measurements
    assert (recorded.test, recorded.step, recorded.answer, recorded.metrics) == (test, "none", "not applicable", {})


def test_an_unknown_test_is_refused(tmp_path: Path) -> None:
    ctx, _ = _context(tmp_path)
    with pytest.raises(ValueError, match="maintenance has no test 'vacuum'; valid: reindex, encrypt, rekey"):
        MaintenanceWorkload().run("vacuum", ctx, ctx.database.connect(), warmup=False)


# --- what the runner hands a workload ---------------------------------------------------------


class Closing(FakeWorkload):
    """Two tests; the first has the session release the connection it was given, as the rekey
    test does. Records what the runner gave it."""

    tests = ("close", "query")

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock)
        self.seen: list[tuple] = []

    def run(self, test: str, ctx: RunContext, conn: Connection, *, warmup: bool) -> None:
        assert ctx.scratch_database is not None and ctx.new_key is not None
        self.seen.append((test, conn, ctx.canaries, ctx.markers, ctx.new_key("rekey-1").hex(),
                          ctx.scratch_database(ctx.database.workspace / "sub", NONE, None).workspace))
        if test == "close":
            ctx.session.release()


def test_the_runner_gives_canaries_keys_scratch_databases_and_a_new_connection_after_one_was_closed(tmp_path: Path,
                                                                                           ) -> None:
    clock = FakeClock()
    workload = Closing(clock)
    plan = Plan(name="fake", repetitions=1, warmups=0, cache="warm", order="sequential", seed=7,
                engines=(EngineChoice("fake", ("none", FAKE_ENC.name)),),
                workloads=(WorkloadSpec("fakeload", (1.0,), ("close", "query"), 1),), text="name = 'fake'\n")
    store = ResultStore(tmp_path / "out")
    store.start(plan.text, {})
    FakeEngine.provisioned.clear()
    summary = Runner(plan=plan, store=store, data_dir=tmp_path, clock=clock,
                     engine_factory=lambda name, **settings: FakeEngine(**settings),
                     workload_factory=lambda name: workload, workspace_parent=tmp_path).run()
    assert summary.ok
    (closed, *_), (queried, *_) = workload.seen[:2]
    assert closed == "close" and queried == "query"
    assert workload.seen[0][1] is not workload.seen[1][1]  # a new connection for the test after the release
    canaries, markers = workload.seen[0][2], workload.seen[0][3]
    assert len(canaries) == len(markers) == 4 and all(c.startswith("TDEBENCH-CANARY-") for c in canaries)
    assert workload.seen[0][4] != workload.seen[1][4]  # fresh random keys, never the same
    assert workload.seen[0][5].name == "sub"
    assert all(db.connections == 0 for db in FakeEngine.provisioned)  # every connection closed once


# --- the report ---------------------------------------------------------------------------


def _trial(engine: str, encryption: str, rep: int) -> TrialKey:
    return TrialKey(engine, encryption, "maintenance", 0.01, rep)


def write_maintenance_run(directory: Path) -> None:
    """duckdb none and aes-256-gcm (3 repetitions each: reindex, encrypt, rekey), mariadb
    aes-256-cbc (rekey not supported), sqlite fs-aes-256-gcm (rekey only rewraps) and sqlite
    rc4 whose conversion failed its check in repetition 2, plus one warm-up never counted."""
    store = ResultStore(directory)
    store.start('name = "maintenance-fake"\n', {"cpu": {"model": "fake"}})
    records = []
    for rep in (1, 2, 3):
        none, gcm = _trial("duckdb", "none", rep), _trial("duckdb", "aes-256-gcm", rep)
        records += [Measurement(none, "reindex", "rebuild-table", {"elapsed_s": 1.0 + rep / 100}, answer="ok"),
                    Measurement(none, "encrypt", "none", {}, answer="not applicable"),
                    Measurement(none, "rekey", "none", {}, answer="not applicable"),
                    Measurement(gcm, "reindex", "rebuild-table", {"elapsed_s": 1.2 + rep / 100}, answer="ok"),
                    Measurement(gcm, "encrypt", "copy-database",
                                {"elapsed_s": float(rep), "size_bytes": 10.0 * MIB, "cpu_s": 0.5}, answer="ok"),
                    Measurement(gcm, "rekey", "copy-database", {"elapsed_s": 2.0, "size_bytes": 12.0 * MIB},
                                answer="ok")]
        rc4 = _trial("sqlite", "rc4", rep)
        records.append(Measurement(rc4, "encrypt", "pragma-rekey", {"elapsed_s": 0.5, "size_bytes": 8.0 * MIB},
                                   answer="failed" if rep == 2 else "ok"))
        records += [TrialOutcome(t, "failed" if t == _trial("sqlite", "rc4", 2) else "ok", "warm", False, 5.0)
                    for t in (none, gcm, rc4)]
    records.append(Measurement(_trial("duckdb", "aes-256-gcm", 1), "encrypt", "copy-database",
                               {"elapsed_s": 100.0, "size_bytes": 10.0 * MIB}, warmup=True, answer="ok"))
    maria, fs = _trial("mariadb", "aes-256-cbc", 1), _trial("sqlite", "fs-aes-256-gcm", 1)
    records += [Measurement(maria, "encrypt", "encryption-threads", {"elapsed_s": 4.0, "size_bytes": 200.0 * MIB},
                            answer="ok"),
                Measurement(maria, "rekey", "key-rotation", {}, answer="unsupported"),
                Measurement(fs, "rekey", "rewrap-master-key", {"elapsed_s": 0.5, "size_bytes": 8.0 * MIB}, answer="ok"),
                TrialOutcome(maria, "ok", "warm", False, 9.0), TrialOutcome(fs, "ok", "warm", False, 9.0)]
    for record in records:
        store.append(record)


@pytest.fixture(scope="module")
def maintenance_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("maintenance")
    write_maintenance_run(directory)
    return directory


def _rows(maintenance_run: Path, test: str) -> dict[tuple[str, str], dict]:
    run = read_run(maintenance_run)
    section = report.section(run, summary_records(run))
    assert section is not None
    encrypt, rekey, _reindex = (block.parts[0].table for block in section.blocks)
    table = encrypt if test == "encrypt" else rekey
    return {(row["engine"], row["encryption"]): row for row in table.rows}


def test_time_to_encrypt_gives_seconds_throughput_and_verification(maintenance_run: Path) -> None:
    rows = _rows(maintenance_run, "encrypt")
    gcm = rows[("duckdb", "aes-256-gcm")]
    assert gcm["method"] == "copy-database" and gcm["n"] == 3  # the warm-up is not counted
    assert gcm["seconds"] == 2.0 and gcm["size_mib"] == 10.0
    assert gcm["mb_per_s"] == 5.0  # median of 10/1, 10/2, 10/3 MiB/s
    assert gcm["verified"] == "yes" and gcm["cpu_s"] == 0.5 and gcm["seconds_ci"].startswith("[")
    assert rows[("mariadb", "aes-256-cbc")]["mb_per_s"] == 50.0
    assert rows[("sqlite", "rc4")]["verified"] == "no (1 of 3)"  # the failed check stays visible
    none = rows[("duckdb", "none")]
    assert none["verified"] == "not applicable" and none["method"] == "–" and "seconds" not in none


def test_rekey_says_not_supported_and_shows_no_throughput_for_a_rewrap(maintenance_run: Path) -> None:
    rows = _rows(maintenance_run, "rekey")
    assert rows[("mariadb", "aes-256-cbc")]["verified"] == "not supported"
    assert rows[("mariadb", "aes-256-cbc")]["method"] == "key-rotation"
    rewrap = rows[("sqlite", "fs-aes-256-gcm")]
    assert rewrap["seconds"] == 0.5 and rewrap["mb_per_s"] is None
    assert rows[("duckdb", "aes-256-gcm")]["mb_per_s"] == 6.0


def test_reindex_table_reuses_the_summary_and_its_overhead(maintenance_run: Path) -> None:
    run = read_run(maintenance_run)
    table = report.reindex_table(run, summary_records(run))
    rows = {row["encryption"]: row for row in table.rows}
    assert rows["none"]["overhead"] is None and rows["none"]["checked"] == "yes"
    assert rows["aes-256-gcm"]["seconds"] == pytest.approx(1.22)
    # paired by round: the geometric mean of the round ratios, close to the ratio of medians here
    assert rows["aes-256-gcm"]["overhead"] == pytest.approx((1.22 / 1.02 - 1) * 100, abs=0.01)


def test_build_writes_maintenance_csv_and_every_section(maintenance_run: Path) -> None:
    build(maintenance_run)
    with (maintenance_run / "maintenance.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {(r["test"], r["engine"], r["encryption"], r["verified"]) for r in rows} >= {
        ("encrypt", "duckdb", "aes-256-gcm", "yes"), ("rekey", "mariadb", "aes-256-cbc", "not supported")}
    markdown = (maintenance_run / "report.md").read_text()
    for title in ("## Time to encrypt an existing database", "## Changing the key", "## Index rebuild (lineitem)"):
        assert title in markdown
    assert "rewrap-master-key: gocryptfs -passwd" in markdown and "NOT re-encrypted" in markdown
    assert "key-rotation: not supported" in markdown
    assert "Encrypting an existing duckdb database of 10.00 MiB ran at 5.00 MB/s (aes-256-gcm, 2.00 s)" in markdown
    html = (maintenance_run / "report.html").read_text()
    assert "Time to encrypt an existing database" in html and "not supported" in html


def test_two_memory_sizes_are_kept_apart_in_every_maintenance_table(tmp_path: Path) -> None:
    """duckdb at memory_mb 2 and 64: a row per size in the time to encrypt, in maintenance.csv and
    in the index rebuild, whose overhead is against `none` at the same size (+50% and +10%) and
    whose check is that size's; the findings name the engine with its memory."""
    store = ResultStore(tmp_path)
    store.start('name = "maintenance-fake"\n', {"cpu": {"model": "fake"}})
    rebuilt = {2: 1.5, 64: 1.1}  # aes-256-gcm's reindex time against none's at each memory_mb
    for rep, (memory, factor) in itertools.product((1, 2, 3), rebuilt.items()):
        none, gcm = (TrialKey("duckdb", encryption, "maintenance", 0.01, rep, memory) for encryption in ("none", GCM))
        for record in (Measurement(none, "reindex", "rebuild-table", {"elapsed_s": 1.0 + rep / 100}, answer="ok"),
                       Measurement(gcm, "reindex", "rebuild-table", {"elapsed_s": factor * (1.0 + rep / 100)},
                                   answer="ok" if memory == 2 else "failed"),
                       Measurement(gcm, "encrypt", "copy-database", {"elapsed_s": memory / 2, "size_bytes": 10.0 * MIB},
                                   answer="ok"),
                       TrialOutcome(none, "ok", "warm", False, 5.0), TrialOutcome(gcm, "ok", "warm", False, 5.0)):
            store.append(record)
    build(tmp_path)
    with (tmp_path / "maintenance.csv").open(newline="") as fh:
        encrypt = {r["memory_mb"]: r for r in csv.DictReader(fh) if r["test"] == "encrypt"}
    assert set(encrypt) == {"2", "64"} and [encrypt[m]["seconds"] for m in ("2", "64")] == ["1.0", "32.0"]
    run = read_run(tmp_path)
    reindex = {(row["memory_mb"], row["encryption"]): row
               for row in report.reindex_table(run, summary_records(run)).rows}
    for memory, factor in rebuilt.items():
        assert reindex[(memory, GCM)]["overhead"] == pytest.approx((factor - 1) * 100, abs=0.01)
        assert reindex[(memory, GCM)]["checked"] == ("yes" if memory == 2 else "no")
    markdown = (tmp_path / "report.md").read_text()
    assert "| duckdb | 2 | aes-256-gcm | 0.01 | rebuild-table |" in markdown
    assert "Encrypting an existing duckdb 2 MB database of 10.00 MiB ran at 10.00 MB/s" in markdown
    assert "Encrypting an existing duckdb 64 MB database of 10.00 MiB ran at 0.312 MB/s" in markdown


def test_a_run_without_maintenance_has_no_section_and_no_csv(tmp_path: Path) -> None:
    write_fake_run(tmp_path)
    run = read_run(tmp_path)
    assert report.section(run, summary_records(run)) is None
    build(tmp_path)
    assert not (tmp_path / "maintenance.csv").exists()
    assert "Time to encrypt" not in (tmp_path / "report.md").read_text()

