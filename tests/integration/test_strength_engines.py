"""The strength workload on real engines (no runner: the workload on a database provisioned in a
temp dir, its records kept in memory). What the workload must show is asserted — DuckDB AES-256-GCM
refuses a flipped byte by its tag, the baseline accepts a forgery, an unencrypted baseline repeats
many blocks where an encryption repeats none, the old key opens nothing after a rekey — and the
rest as measured on DuckDB 1.5.5 and SQLite3MC 2.6.1, so a change of an engine's behaviour shows.
Servers (MariaDB, PostgreSQL) and the gocryptfs layer: one trial each, started by the test; the
backup test, which judges by the runner's at-rest rules, through `tdebench run`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tdebench.engines import PROVISIONED
from tdebench.engines.base import Database, Encryption
from tdebench.keys import Secret
from fake_clock import FakeClock
from tdebench.measure.recorder import Recorder
from tdebench.results import Measurement, TrialKey
from tdebench.workloads.base import RunContext
from tdebench.workloads.strength.workload import StrengthWorkload
from workspaces import server_reachable_dir

ROWS = 2000


class _Records:
    def __init__(self) -> None:
        self.records: list[Measurement] = []

    def append(self, record: Measurement) -> None:
        self.records.append(record)


def _trial(tmp_path: Path, engine_name: str, encryption: str, tests: tuple[str, ...],
           rows: int = ROWS, memory_mb: int | None = None) -> dict[tuple[str, str], Measurement]:
    """A database of `engine_name` with `encryption` (and the plan's `memory_mb`), loaded by the
    workload and put through `tests`: the records by (test, step)."""
    engine = PROVISIONED[engine_name](memory_mb)
    chosen = engine.encryption(encryption)
    keys = iter(Secret(os.urandom(32)) for _ in range(10))
    database = engine.provision(tmp_path / "db", chosen, None if chosen.is_baseline else next(keys))

    def scratch(workspace: Path, enc: Encryption, key: Secret | None) -> Database:
        return engine.provision(workspace, enc, key)

    workload = StrengthWorkload()
    workload.prepare(rows, tmp_path / "data", 1)
    (tmp_path / "db").mkdir()
    database.create()
    records = _Records()
    ctx = RunContext(database=database, dialect=engine.dialect, scale=rows, streams=1, data_dir=tmp_path / "data",
                     recorder=Recorder(records, TrialKey(engine_name, encryption, "strength", rows, 1), FakeClock()),
                     scratch_database=scratch, new_key=lambda purpose: next(keys))
    try:
        workload.load(ctx, ctx.session.connection())
        for test in tests:
            workload.run(test, ctx, ctx.session.connection(), warmup=False)
    finally:
        ctx.session.release()
        database.close()
    if database.key is not None:
        assert all(database.key.hex() not in (m.note or "") for m in records.records)
    return {(m.test, m.step): m for m in records.records}


@pytest.mark.parametrize(("encryption", "expected", "said"), [
    ("aes-256-gcm", "tag detects", "Computed AES tag differs"),
    ("aes-256-ctr", "refused without a tag", "computed checksum"),  # as measured on 1.5.5: its block checksum
    ("none", "refused without a tag", "computed checksum"),  # the positive control: the change shows
])
def test_duckdb_flipped_byte(tmp_path: Path, encryption: str, expected: str, said: str) -> None:
    record = _trial(tmp_path, "duckdb", encryption, ("tamper",))[("tamper", "data-page")]
    assert record.answer == expected and said in (record.note or "")


@pytest.mark.parametrize("encryption", ["none", "aes-256-ctr"])  # none: the positive control
def test_duckdb_ctr_is_forged_with_its_block_checksum_changed_too(tmp_path: Path, encryption: str) -> None:
    """DuckDB's block checksum is of the plaintext, encrypted with it: under CTR its change is XORed
    in beside the value's. 20,000 rows: the value in a block of its own segment, where an
    unencrypted twin has it (at 2,000 rows the blocks are shared and packed apart: refused). The
    same forgery in a physical backup (a new file COPY FROM DATABASE wrote, at the offset the
    twin's backup has the value at), restored with the key: as measured, accepted too."""
    records = _trial(tmp_path, "duckdb", encryption, ("forgery",), rows=20_000)
    for step in ("value", "backup"):
        forged = records[("forgery", step)]
        assert forged.answer == "forgeable" and forged.metrics["checksum_recomputed"] == 1.0
    # the .wal, left with the row committed again (no checkpoint on detaching): its entry found by
    # structure past the encrypted entries' nonces, its entry checksum changed along; as measured, accepted
    logged = records[("forgery", "wal")]
    assert logged.answer == "forgeable" and logged.metrics["checksum_recomputed"] == 1.0


def test_duckdb_gcm_refuses_a_forged_backup_by_its_tag(tmp_path: Path) -> None:
    """The restore's error is the copy's (the tag), not the DETACH's after it ("Current transaction
    is aborted", which hid it before)."""
    records = _trial(tmp_path, "duckdb", "aes-256-gcm", ("forgery",), rows=20_000)
    for step in ("value", "backup", "wal"):  # the WAL's replay refused by its entry's tag
        forged = records[("forgery", step)]
        assert forged.answer == "tag detects" and "Computed AES tag differs" in (forged.note or "")


@pytest.mark.parametrize(("encryption", "expected"), [
    ("none", "silently altered"),  # the positive control: no checksum, the changed row is read as data
    ("rc4", "silently altered"),  # as measured: a stream cipher without a MAC
    ("aes-256-cbc", "silently altered"),  # as measured: the garbled block is read back, no text
    ("chacha20-poly1305", "tag detects"),
])
def test_sqlite_flipped_byte(tmp_path: Path, encryption: str, expected: str) -> None:
    assert _trial(tmp_path, "sqlite", encryption, ("tamper",))[("tamper", "data-page")].answer == expected


@pytest.mark.parametrize(("encryption", "low", "high"), [
    ("none", 0.2, 1.0),  # identical rows: many repeated blocks in the plaintext
    ("aes-256-cbc", 0.0, 0.0),
    ("rc4", 0.2, 1.0),  # as measured: SQLite3MC's RC4 repeats the plaintext's repeats
])
def test_sqlite_repeated_blocks(tmp_path: Path, encryption: str, low: float, high: float) -> None:
    records = _trial(tmp_path, "sqlite", encryption, ("repeats",))
    assert low <= records[("repeats", "database")].metrics["repeated_block_share"] <= high
    # as measured: no page repeats, not even in the baseline (row ids and page headers differ)
    assert records[("repeats", "database")].metrics["repeated_pages"] == 0
    assert records[("repeats", "random")].metrics["repeated_block_share"] == 0.0


def test_duckdb_old_key_after_a_rekey(tmp_path: Path) -> None:
    records = _trial(tmp_path, "duckdb", "aes-256-gcm", ("old-key",))
    assert [records[("old-key", step)].answer for step in ("database", "backup-before-rekey", "backup-after-rekey")] \
        == ["refused", "needs the old key", "refused"]


@pytest.mark.parametrize(("encryption", "expected"), [
    ("none", "forgeable"),  # the positive control: the chosen value lands in the data
    ("rc4", "forgeable"),  # as measured: SQLite3MC's RC4 keeps the plaintext's offsets and has no MAC
    ("chacha20-poly1305", "tag detects"),
    # CBC's chosen block: the difference XORed into the block before the value's first, which lies in the
    # page's free space (zeros in the twin) and is garbled unread; as measured, accepted
    ("aes-128-cbc", "forgeable"),
    ("sqlcipher", "tag detects"),  # the same CBC forgery, refused by its HMAC: the authenticated control
])
def test_sqlite_known_plaintext_forgery(tmp_path: Path, encryption: str, expected: str) -> None:
    """In the database's file and, as measured, in a physical backup (the backup API's copy) restored,
    and in the -wal file: the value committed again with no checkpoint on closing, forged there with
    the frames' checksums recomputed, read back once SQLite replays the WAL on opening."""
    records = _trial(tmp_path, "sqlite", encryption, ("forgery",))
    assert [records[("forgery", step)].answer for step in ("value", "backup", "wal")] == [expected] * 3
    chained = encryption in ("aes-128-cbc", "sqlcipher")
    assert records[("forgery", "value")].metrics["cbc_chained"] == float(chained)
    assert records[("forgery", "wal")].metrics["checksum_recomputed"] == 1.0


def test_sqlcipher_with_its_hmac_refuses_every_change_by_its_tag(tmp_path: Path) -> None:
    """Zetetic's SQLCipher 4 defaults: a flipped byte and the CBC forgery (in the file, a physical
    backup and the -wal file, which SQLCipher leaves at rest beside a read-only connection) refused by
    the page's HMAC-SHA512; a random IV per page, so no block repeats; the old key opens nothing after
    PRAGMA rekey, and a backup taken before it needs the old key."""
    records = _trial(tmp_path, "sqlcipher", "aes-256-cbc-hmac-sha512", ("repeats", "tamper", "forgery", "old-key"))
    assert records[("tamper", "data-page")].answer == "tag detects"
    assert [records[("forgery", step)].answer for step in ("value", "backup", "wal")] == ["tag detects"] * 3
    assert records[("forgery", "value")].metrics["cbc_chained"] == 1.0
    assert records[("repeats", "database")].metrics["repeated_block_share"] == 0.0
    assert [records[("old-key", step)].answer for step in ("database", "backup-before-rekey", "backup-after-rekey")] \
        == ["refused", "needs the old key", "refused"]


def test_sqlcipher_without_its_hmac_has_no_tag(tmp_path: Path) -> None:
    """cipher_use_hmac = OFF: nothing keyed checks a page. As measured, the flipped byte garbles a block
    of a row's text, which SQLite hands over and the driver (sqlcipher3, Python's sqlite3 module) cannot
    decode as UTF-8: refused, but by no tag; the forged -wal frame garbles a block whose bytes the trial's
random key decides: refused as a malformed page or text, or silently altered (the suite saw both). The
    forgery in the file and its backup misses the value (`unchanged`): SQLCipher keeps each page's IV in
    16 bytes at its end even without the HMAC, so the unencrypted twin's offsets are not the trial's."""
    records = _trial(tmp_path, "sqlcipher", "aes-256-cbc", ("tamper", "forgery"))
    tampered = records[("tamper", "data-page")]
    assert tampered.answer == "refused without a tag" and "Could not decode to UTF-8" in (tampered.note or "")
    # the forged frame garbles the block before the value, with the trial's random key: read as a
    # malformed page or text the driver cannot decode (refused), or bytes nothing checks (altered)
    assert records[("forgery", "wal")].answer in ("refused without a tag", "silently altered")
    assert [records[("forgery", step)].answer for step in ("value", "backup")] == ["unchanged"] * 2


# --- servers and the file-system layer: stopped before a byte is flipped, started again to read it.
# One trial each, 2,000 rows: what the engine said is asserted as measured on MariaDB 10.11,
# PostgreSQL 15 and gocryptfs 2.3.


@pytest.fixture
def server_path() -> Iterator[Path]:
    with server_reachable_dir() as path:  # a directory the server's own user can reach
        yield path


def test_mariadb_ctr_is_forged_past_its_page_checksum(server_path: Path) -> None:
    """InnoDB's full_crc32 is of the ciphertext: recomputed, a chosen value lands under AES-CTR. So does
    it in the encrypted redo log (wal): the row committed again and the server killed, the value XORed
    at the twin's place in the mini-transaction of the same shape, its CRC-32C recomputed, replayed by
    crash recovery."""
    records = _trial(server_path, "mariadb", "aes-256-ctr", ("repeats", "tamper", "forgery"))
    flipped = records[("tamper", "data-page")]
    assert flipped.answer == "refused without a tag" and "decryption failed" in (flipped.note or "")
    for step in ("value", "backup", "wal"):  # as measured: the mariadb-backup copy of the tablespace too
        forged = records[("forgery", step)]
        assert forged.answer == "forgeable" and forged.metrics["checksum_recomputed"] == 1.0
    same = records[("repeats", "database")]  # the identical rows' tablespace: no page repeats
    assert same.note == "counted: strength_same.ibd" and same.metrics["repeated_pages"] == 0
    assert same.metrics["repeated_block_share"] < 0.01  # as measured: 2 of 16,400 blocks


def test_mariadb_baseline_forgery_lands_in_its_redo_log(server_path: Path) -> None:
    """The positive control of the redo log's forgery: unencrypted, the one copy of the value a page
    write replays changed, its mini-transaction's CRC-32C recomputed, read back after crash recovery."""
    logged = _trial(server_path, "mariadb", "none", ("forgery",), rows=1000)[("forgery", "wal")]
    assert logged.answer == "forgeable" and logged.metrics["checksum_recomputed"] == 1.0


def test_mariadb_starts_again_after_its_redo_log_forgery_with_the_least_buffer_pool(server_path: Path) -> None:
    """With 6 MB of buffer pool, recovery from the forged log evicts pages to the data files with
    log sequence numbers past the log put back; every file of the database is put back too, so the
    old-key test after it starts the server again (it refused: "log sequence number is in the future")."""
    records = _trial(server_path, "mariadb", "aes-256-ctr", ("forgery", "old-key"), memory_mb=6)
    assert records[("forgery", "wal")].answer == "forgeable"
    assert records[("old-key", "database")].answer == "unsupported"  # one key per key id: it ran, and said why


def test_postgres_column_layer_refuses_a_flipped_and_a_forged_value_by_its_mdc(server_path: Path) -> None:
    """pgcrypto's OpenPGP message checks its MDC (a SHA-1 of the plaintext, encrypted with it) under
    the key: a flipped byte, and a known-plaintext forgery of the value's last CFB block in the heap
    file (only the MDC after it garbled), are refused by it. The forgery's offset is checked with the
    key in tests/contract/test_pgcrypto.py."""
    records = _trial(server_path, "postgres", "column-aes-256", ("tamper", "forgery"))
    flipped = records[("tamper", "data-page")]
    assert flipped.answer == "tag detects" and "Wrong key or corrupt data" in (flipped.note or "")
    for step in ("value", "backup"):  # the heap file, and pg_basebackup's copy of it restored
        forged = records[("forgery", step)]
        assert forged.answer == "tag detects" and "Wrong key or corrupt data" in (forged.note or "")
        assert "last 8 bytes changed" in (forged.note or "") and forged.metrics["checksum_recomputed"] == 0.0
    # pg_wal, the row committed again after a checkpoint and the server stopped at once: the message sealed
    # anew forged the same way in every record holding it, their CRCs recomputed, replayed by a copy's
    # crash recovery; as measured, refused by the MDC too
    logged = records[("forgery", "wal")]
    assert logged.answer == "tag detects" and "Wrong key or corrupt data" in (logged.note or "")
    assert logged.metrics["checksum_recomputed"] == 1.0


def test_postgres_baseline_accepts_the_forgery(server_path: Path) -> None:
    """The positive control of the column layer's forgery: unencrypted, the value changed at its offset
    lands, in the heap file and in pg_wal (every copy among the records after the checkpoint — the
    full-page images — forged, their CRCs recomputed, replayed by crash recovery in a copy)."""
    records = _trial(server_path, "postgres", "none", ("forgery",))
    assert records[("forgery", "value")].answer == "forgeable"
    logged = records[("forgery", "wal")]
    assert logged.answer == "forgeable" and logged.metrics["checksum_recomputed"] == 1.0


def test_gocryptfs_refuses_a_flipped_byte_by_its_tag(tmp_path: Path) -> None:
    records = _trial(tmp_path, "sqlite", "fs-aes-256-gcm", ("repeats", "tamper"))
    assert records[("tamper", "data-page")].answer == "tag detects"
    assert records[("repeats", "database")].metrics["repeated_block_share"] == 0.0


def test_mariadb_cbc_redo_log_forgery_is_refused_with_the_reason_its_log_gives(server_path: Path) -> None:
    """Under AES-CBC the forged redo log garbles the block the value is in and the one after it,
    which holds a page id: the server refuses to start, and the record keeps why, from its log
    (the first line alone had been "…; its log ends:")."""
    logged = _trial(server_path, "mariadb", "aes-256-cbc", ("forgery",), rows=2000)[("forgery", "wal")]
    assert logged.answer == "refused without a tag", logged
    note = logged.note or ""
    assert "its log ends:" in note and "[ERROR] InnoDB:" in note, note  # e.g. a page id garbled


BACKUP_PLAN = '''name = "kept-backup"
repetitions = 1
warmups = 0
[[engines]]
name = "mariadb"
encryptions = ["none", "aes-128-ctr", "fs-passthrough"]
memory_mb = [6]
[[engines]]
name = "postgres"
encryptions = ["none", "column-aes-128"]
memory_mb = [4]
[[workloads]]
name = "strength"
scale = 1000
tests = ["backup"]
'''


def test_the_servers_backups_are_scanned_against_the_baselines(tmp_path: Path) -> None:
    """The strength workload's `backup` test through the runner (its at-rest rules): mariadb-backup
    and pg_basebackup copies of the baselines hold the canary (the control), InnoDB's and pgcrypto's
    hold none, and a backup of a database on a FUSE layer, written outside the mount, is plaintext."""
    from click.testing import CliRunner

    from tdebench.cli import main
    from tdebench.report.sections.answer import rows
    from tdebench.report.data.records import summary_records
    from tdebench.store import read_run

    (tmp_path / "plan.toml").write_text(BACKUP_PLAN)
    result = CliRunner().invoke(main, ["run", str(tmp_path / "plan.toml"), "--out", str(tmp_path / "out"), "--quiet"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output  # a plaintext backup is the answer's to say, not a failed verdict
    run = read_run(tmp_path / "out")
    scans = {(m.trial.engine, m.trial.encryption): m for m in run.measurements
             if (m.test, m.step) == ("backup", "scan")}
    assert {key: m.answer for key, m in scans.items()} == {
        ("mariadb", "none"): "plaintext", ("mariadb", "aes-128-ctr"): "encrypted",
        ("mariadb", "fs-passthrough"): "plaintext", ("postgres", "none"): "plaintext",
        ("postgres", "column-aes-128"): "encrypted"}
    assert scans[("postgres", "column-aes-128")].metrics["marker_hits"] > 0  # the column layer's rows were there
    backup = {(row["engine"], row["encryption"]): row["backup"] for row in rows(run, summary_records(run))}
    assert backup[("mariadb", "aes-128-ctr")] == backup[("postgres", "column-aes-128")] == "encrypted"
    assert backup[("mariadb", "none")] == "plaintext (control)"
