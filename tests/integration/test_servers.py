"""End to end on the real servers: each layer of MariaDB and PostgreSQL encryption (native TDE
under a CBC and a CTR cipher, pgcrypto columns, gocryptfs) runs the TPC-H power test at SF 0.01 on
servers tdebench starts itself, with every answer checked, every verdict right and the engine's
own state recorded. The other ciphers of a layer differ from these only in the option that names
the cipher, and each is proven for real on its own server in tests/contract: round trip, files,
at-rest verdict and wrong key in test_engine_contract.py (every engine x every encryption), every
MariaDB cipher's tablespaces encrypted in test_mariadb.py, every pgcrypto cipher sealed in
test_pgcrypto.py, both gocryptfs ciphers in test_fs_layer.py."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from click.testing import CliRunner

from tdebench.cli import main
from tdebench.engines import PROVISIONED
from tdebench.store import read_run

PLAN = '''name = "every-server-encryption"
repetitions = 1
warmups = 0
seed = 5

[[engines]]
name = "mariadb"
encryptions = ["none", "aes-128-cbc", "aes-256-ctr", "fs-aes-256-gcm"]
memory_mb = 128

[[engines]]
name = "postgres"
encryptions = ["none", "column-aes-256", "column-3des", "fs-xchacha20-poly1305"]
memory_mb = 128

[[workloads]]
name = "tpch"
scale = 0.01
tests = ["power"]
query_timeout_s = 120
load_part_rows = 20000  # lineitem in four LOAD DATA / COPY statements: every answer must still be right
'''
EVERY = {("mariadb", "none"), ("mariadb", "aes-128-cbc"), ("mariadb", "aes-256-ctr"), ("mariadb", "fs-aes-256-gcm"),
         ("postgres", "none"), ("postgres", "column-aes-256"), ("postgres", "column-3des"),
         ("postgres", "fs-xchacha20-poly1305")}
"""The plan's configurations: every layer of each server, both modes of MariaDB's native TDE, both
gocryptfs ciphers (one on each server)."""
LAYER = {(engine, enc.name): enc.layer for engine, cls in PROVISIONED.items() for enc in cls.encryptions}


@pytest.fixture(scope="module")
def run_dir(server_tmp_dir: Path) -> Path:
    base = server_tmp_dir  # the postgres user can enter it
    (base / "plan.toml").write_text(PLAN)
    result = CliRunner().invoke(main, ["run", str(base / "plan.toml"), "--out", str(base / "out"), "--quiet",
                                       "--work-dir", str(base)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return base / "out"


def test_every_server_encryption_ran_with_every_answer_right(run_dir: Path) -> None:
    run = read_run(run_dir)
    assert {(t.trial.engine, t.trial.encryption) for t in run.trials} == EVERY
    assert all(t.status == "ok" for t in run.trials), [t.error for t in run.trials if t.status != "ok"]
    for engine, enc in EVERY:
        queries = [m for m in run.measurements if (m.trial.engine, m.trial.encryption, m.test) == (engine, enc, "power")
                   and m.step.startswith("q")]
        assert {m.step for m in queries} == {f"q{n}" for n in range(1, 23)}
        assert {m.answer for m in queries} == {"ok"}
        assert sum(m.metrics["cpu_s"] for m in queries) > 0  # the server's process tree did the work


def test_verdicts_prove_each_layer_with_its_own_positive_control(run_dir: Path) -> None:
    rows = {(r["engine"], r["encryption"]): r for r in csv.DictReader((run_dir / "verdicts.csv").open())}
    assert set(rows) == EVERY
    for engine in ("mariadb", "postgres"):  # a layer a server gains is added to the plan
        assert {LAYER[config] for config in EVERY if config[0] == engine} == {
            enc.layer for enc in PROVISIONED[engine].encryptions}
    for config, row in rows.items():
        expected = "plaintext" if config[1] == "none" else "encrypted"
        assert (row["verdict"], row["as_expected"]) == (expected, "true"), row
        layer = LAYER[config]
        assert bool(row["view_hits"]) == (layer == "fs")  # decrypted view scanned while mounted
        if layer == "fs":
            assert int(row["view_hits"]) > 0
        assert bool(row["exposed"]) == (layer == "column")  # files with the unsealed columns
    for enc in ("aes-128-cbc", "aes-256-ctr"):
        assert "tablespaces encrypted" in rows[("mariadb", enc)]["engine_state"]
    column = rows[("postgres", "column-aes-256")]
    assert "OpenPGP message under AES-256" in column["engine_state"] and "pg_wal/" in column["exposed"]
    assert "OpenPGP message under Triple DES" in rows[("postgres", "column-3des")]["engine_state"]
