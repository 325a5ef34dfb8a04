"""Servers tdebench did not start, reached by URL (engines/remote.py): a MariaDB with
file_key_management and a PostgreSQL, started outside tdebench as a user's own would be
(tests/own_servers.py). A small plan (TPC-H SF 0.01 power test and crud at 1,000 rows) runs
against them with encryption switched over SQL and confirmed from the catalog; a target holding
someone else's table is refused; the password reaches no file of the run; every trial's
database is dropped afterwards. oltp by url runs its users in worker processes."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pymysql
import pytest
from click.testing import CliRunner, Result

from own_servers import OwnServer, own_mariadb, own_postgres
from tdebench.cli import main
from tdebench.measure.affinity import available_cpus
from tdebench.results import NOT_VERIFIED
from tdebench.store import read_run

PLAN = '''name = "remote"
repetitions = 1
warmups = 0
seed = 3

[[engines]]
name = "mariadb"
url = "{mariadb}"
password_env = "TDEBENCH_TEST_MARIADB"
data_path = "{data_path}"
encryptions = ["tde"]
key_id = 2

[[engines]]
name = "postgres"
url = "{postgres}"
password_file = "{password_file}"
encryptions = ["column-aes-256"]

[[workloads]]
name = "tpch"
scale = 0.01
tests = ["power"]
query_timeout_s = 120

[[workloads]]
name = "crud"
scale = 1000
lookups = 20
'''


@pytest.fixture(scope="module")
def servers(server_tmp_dir: Path) -> Iterator[tuple[OwnServer, OwnServer]]:
    with own_mariadb(server_tmp_dir) as mariadb, own_postgres(server_tmp_dir) as postgres:
        yield mariadb, postgres


def _plan(base: Path, servers: tuple[OwnServer, OwnServer], database: str = "bench") -> Path:
    mariadb, postgres = servers
    password_file = postgres.password_file(base / "pg-password")
    plan = base / f"plan-{database}.toml"
    plan.write_text(PLAN.format(mariadb=mariadb.url(database), postgres=postgres.url(database),
                                data_path=mariadb.data_dir, password_file=password_file))
    return plan


def _run(base: Path, plan: Path, out: str, mariadb: OwnServer, *extra: str) -> Result:
    os.environ["TDEBENCH_TEST_MARIADB"] = mariadb.password
    try:
        return CliRunner().invoke(main, ["run", str(plan), "--out", str(base / out), "--quiet",
                                         "--work-dir", str(base), *extra], catch_exceptions=False)
    finally:
        del os.environ["TDEBENCH_TEST_MARIADB"]


@pytest.fixture(scope="module")
def run_dir(server_tmp_dir: Path, servers: tuple[OwnServer, OwnServer]) -> tuple[Path, Result]:
    result = _run(server_tmp_dir, _plan(server_tmp_dir, servers), "out", servers[0])
    return server_tmp_dir / "out", result


def test_a_plan_by_url_runs_every_workload_with_right_answers(run_dir: tuple[Path, Result]) -> None:
    directory, result = run_dir
    assert result.exit_code == 0, result.output
    run = read_run(directory)
    assert {(t.trial.engine, t.trial.encryption, t.trial.workload) for t in run.trials} == {
        (engine, enc, workload) for engine, enc in (("mariadb", "none"), ("mariadb", "tde"), ("postgres", "none"),
                                                    ("postgres", "column-aes-256")) for workload in ("tpch", "crud")}
    assert all(t.status == "ok" for t in run.trials), [t.error for t in run.trials if t.status != "ok"]
    queries = [m for m in run.measurements if m.test == "power" and m.step.startswith("q")]
    assert len(queries) == 4 * 22 and {m.answer for m in queries} == {"ok"}
    assert not any("cpu_s" in m.metrics for m in queries)  # no process of ours passed off as the server's
    by_engine = {engine: {name for m in queries if m.trial.engine == engine for name in m.metrics}
                 for engine in ("mariadb", "postgres")}
    assert {"server_read_bytes", "server_page_requests"} <= by_engine["mariadb"]
    assert "server_blocks_hit" in by_engine["postgres"]


def test_encryption_is_switched_by_sql_and_confirmed_from_the_catalog(run_dir: tuple[Path, Result]) -> None:
    directory, _ = run_dir
    rows = {(r["engine"], r["encryption"], r["workload"]): r
            for r in csv.DictReader((directory / "verdicts.csv").open())}
    for workload in ("tpch", "crud"):
        mariadb = rows[("mariadb", "tde", workload)]
        assert "INNODB_TABLESPACES_ENCRYPTION" in mariadb["engine_state"]
        assert "innodb_encrypt_log=1" in mariadb["engine_state"]
        # data_path given: the server's files were scanned, the canaries found only where not encrypted
        assert (mariadb["verdict"], rows[("mariadb", "none", workload)]["verdict"]) == ("encrypted", "plaintext")
        postgres = rows[("postgres", "column-aes-256", workload)]
        assert "OpenPGP message under AES-256" in postgres["engine_state"]
        assert postgres["verdict"] == rows[("postgres", "none", workload)]["verdict"] == NOT_VERIFIED
    assert NOT_VERIFIED in (directory / "report.md").read_text()


def test_the_password_reaches_no_file_of_the_run(run_dir: tuple[Path, Result], servers: tuple[OwnServer, OwnServer]
                                                 ) -> None:
    directory, result = run_dir
    files = [path for path in directory.rglob("*") if path.is_file()]
    assert files
    for server in servers:
        assert server.password not in result.output
        for path in files:
            assert server.password.encode() not in path.read_bytes(), path


def test_every_trial_database_is_dropped(run_dir: tuple[Path, Result], servers: tuple[OwnServer, OwnServer]) -> None:
    mariadb, postgres = servers
    conn = pymysql.connect(host="127.0.0.1", port=mariadb.port, user="bench", password=mariadb.password)
    try:
        with conn.cursor() as cursor:
            cursor.execute("SHOW DATABASES LIKE 'tdebench%'")
            assert cursor.fetchall() == ()
    finally:
        conn.close()
    with psycopg.connect(host="127.0.0.1", port=postgres.port, user="bench", password=postgres.password,
                         dbname="bench") as pg:
        assert pg.execute("SELECT datname FROM pg_database WHERE datname LIKE 'tdebench%'").fetchall() == []


def test_a_target_holding_other_objects_is_refused(server_tmp_dir: Path, servers: tuple[OwnServer, OwnServer]
                                                  ) -> None:
    result = _run(server_tmp_dir, _plan(server_tmp_dir, servers, "crowded"), "crowded", servers[0])
    assert result.exit_code == 2
    assert "holds 1 object(s) that are not tdebench's (base table customers)" in result.output
    assert "--i-own-this-database" in result.output
    assert not (server_tmp_dir / "crowded" / "results.jsonl").exists()


def test_a_postgres_data_path_is_checkpointed_so_the_baseline_scan_finds_its_canaries(
        server_tmp_dir: Path, servers: tuple[OwnServer, OwnServer]) -> None:
    """With data_path, the trial's pages are written to the files by a CHECKPOINT before the
    at-rest scan: the baseline's verdict is plaintext, its canaries found in the database's own
    files, not only in the WAL."""
    _, postgres = servers
    password_file = postgres.password_file(server_tmp_dir / "pg-password-scan")
    plan = server_tmp_dir / "plan-scan.toml"
    plan.write_text(f"""name = "scan"
repetitions = 1
warmups = 0
[[engines]]
name = "postgres"
url = "{postgres.url()}"
password_file = "{password_file}"
data_path = "{postgres.data_dir}"
encryptions = ["none"]
[[workloads]]
name = "crud"
scale = 1000
tests = ["scan"]
""")
    result = CliRunner().invoke(main, ["run", str(plan), "--out", str(server_tmp_dir / "out-scan"), "--quiet",
                                       "--work-dir", str(server_tmp_dir)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (verdict,) = read_run(server_tmp_dir / "out-scan").verdicts
    assert (verdict.trial.engine, verdict.verdict, verdict.expected) == ("postgres", "plaintext", "plaintext")
    # in the table's own file, not only in the WAL (which a later checkpoint may recycle)
    assert [scan.path for scan in verdict.files if scan.hits and scan.path.startswith("base/")], verdict.files


def test_oltp_by_url_runs_its_users_in_worker_processes_and_stays_consistent(
        server_tmp_dir: Path, servers: tuple[OwnServer, OwnServer]) -> None:
    """MariaDB and PostgreSQL by url hand their users' open connections to forked worker
    processes as tdebench's own servers do (`connections_cross_fork`): the run records them, its
    client-side transactions (PostgreSQL's batches through pg_pipeline.py) commit, and the
    database's own New-Order count agrees with the driver's (the consistency step). The
    PostgreSQL sessions are encrypted (TLS): each worker ends its users' sessions itself, so the
    server logs no corrupt record at their end (driver.py: `_end_sessions`)."""
    mariadb, postgres = servers
    assert postgres.log is not None
    with psycopg.connect(host="127.0.0.1", port=postgres.port, user="bench", password=postgres.password,
                         dbname="bench") as pg:
        assert pg.pgconn.ssl_in_use
    logged = len(postgres.log.read_text())
    password_file = postgres.password_file(server_tmp_dir / "pg-password-oltp")
    plan = server_tmp_dir / "plan-oltp.toml"
    plan.write_text(f"""name = "oltp-by-url"
repetitions = 1
warmups = 0
seed = 1
[[engines]]
name = "mariadb"
url = "{mariadb.url()}"
password_env = "TDEBENCH_TEST_MARIADB"
encryptions = ["none"]
[[engines]]
name = "postgres"
url = "{postgres.url()}"
password_file = "{password_file}"
encryptions = ["none"]
[[workloads]]
name = "oltp"
scale = 1
tests = ["load"]
virtual_users = 4
rampup_s = 0.5
duration_s = 1.5
interval_s = 1
procedures = false
""")
    result = _run(server_tmp_dir, plan, "out-oltp", mariadb)
    assert result.exit_code == 0, result.output
    run = read_run(server_tmp_dir / "out-oltp")
    assert sorted(t.trial.engine for t in run.trials) == ["mariadb", "postgres"]
    assert all(t.status == "ok" for t in run.trials), [t.error for t in run.trials if t.status != "ok"]
    for trial in run.trials:
        [mix] = [m for m in run.measurements if m.trial == trial.trial and m.step == "mix"]
        assert mix.metrics["worker_processes"] == min(4, len(available_cpus())) >= 1, trial.trial
        assert mix.metrics["committed"] > 0 and mix.metrics["procedures"] == 0
        [consistency] = [m for m in run.measurements if m.trial == trial.trial and m.step == "consistency"]
        assert consistency.answer == "ok" and consistency.metrics["problems"] == 0
    server_log = postgres.log.read_text()[logged:]
    assert "SSL error" not in server_log and "could not receive data" not in server_log, server_log
