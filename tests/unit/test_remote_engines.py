"""Remote targets without a server: the plan's url keys and their errors, and the SQL Server,
Oracle and MySQL adapters' statements against a fake DB-API module (no such server can run
here), which answers their catalog queries as the documented servers would."""

from __future__ import annotations

import sys
import traceback
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from tdebench.engines import get_engine
from tdebench.engines.base import EncryptionNotActive, QueryTimeout
from tdebench.engines.remote import Password, RemoteError, RemoteTarget, parse_url
from tdebench.engines.remote_mysql import with_table_options
from tdebench.plan import PlanError, parse_plan

SECRET = "s3cret-Pa55word"


class FakeCursor:
    def __init__(self, log: list[tuple[str, tuple]], answer: Callable[[str, tuple], list[tuple]]) -> None:
        self.log, self.answer, self.rows, self.description = log, answer, [], None

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> None:
        self.log.append((sql, tuple(params or ())))
        self.rows = self.answer(sql, tuple(params or ()))
        self.description = [("c",)] if self.rows else None

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.log.append((sql, tuple(rows)))

    def fetchall(self) -> list[tuple]:
        return self.rows

    def close(self) -> None:
        pass

    def __enter__(self) -> "FakeCursor":
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class FakeDriver:
    """A DB-API module: every connection logs its statements (with the database it was opened on)."""

    def __init__(self, answer: Callable[[str, tuple], list[tuple]]) -> None:
        self.log: list[tuple[str, tuple]] = []
        self.logins: list[dict[str, Any]] = []
        self.answer = answer

    def connect(self, **kwargs: Any) -> Any:
        self.logins.append(kwargs)
        driver = self

        class Conn:
            autocommit = True
            call_timeout = 0

            def cursor(self) -> FakeCursor:
                return FakeCursor(driver.log, driver.answer)

            def commit(self) -> None:
                pass

            def rollback(self) -> None:
                pass

            def close(self) -> None:
                pass

        return Conn()

    def statements(self) -> list[str]:
        return [sql for sql, _ in self.log]


def _install(monkeypatch: pytest.MonkeyPatch, name: str, driver: FakeDriver) -> None:
    module = types.ModuleType(name)
    module.connect = driver.connect  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, name, module)
    if name == "pymysql":  # the flag the MariaDB and MySQL connections ask for, as PyMySQL names it
        constants = types.ModuleType("pymysql.constants")
        constants.CLIENT = types.SimpleNamespace(MULTI_STATEMENTS=1 << 16)  # type: ignore[attr-defined]
        module.constants = constants  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "pymysql.constants", constants)


def _target(engine: str, url: str, monkeypatch: pytest.MonkeyPatch) -> RemoteTarget:
    monkeypatch.setenv("TDEBENCH_PW", SECRET)
    return RemoteTarget(engine, url, *parse_url(engine, url), password_env="TDEBENCH_PW")


def test_sqlserver_tde_from_master_key_to_state_3(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    states = iter([[(2, "AES", 256)], [(2, "AES", 256)], [(3, "AES", 256)], [(3, "AES", 256)]])

    def answer(sql: str, params: tuple) -> list[tuple]:
        if "sys.dm_database_encryption_keys" in sql:
            return next(states)
        if "sys.symmetric_keys" in sql:
            return []  # master has no database master key yet: tdebench makes one and drops it again
        return []

    driver = FakeDriver(answer)
    _install(monkeypatch, "pymssql", driver)
    engine = get_engine("sqlserver", remote=_target("sqlserver", "mssql://bench@db.example:1433/bench", monkeypatch))
    database = engine.provision(tmp_path, engine.encryption("aes-256"), None)
    database.poll_s = 0  # type: ignore[attr-defined]
    database.create()
    namespace = database.namespace  # type: ignore[attr-defined]
    sql = driver.statements()
    assert sql[0] == f"CREATE DATABASE [{namespace}]"
    assert sql[2].startswith("CREATE MASTER KEY ENCRYPTION BY PASSWORD = '")
    assert sql[3] == f"CREATE CERTIFICATE [{namespace}] WITH SUBJECT = 'tdebench trial {namespace}'"
    assert sql[4] == (f"CREATE DATABASE ENCRYPTION KEY WITH ALGORITHM = AES_256 ENCRYPTION BY SERVER CERTIFICATE "
                      f"[{namespace}]")
    assert sql[5] == f"ALTER DATABASE [{namespace}] SET ENCRYPTION ON"
    assert [login["database"] for login in driver.logins[:6]] == ["master", "master", "master", "master", namespace,
                                                                   "master"]
    assert all(login["password"] == SECRET for login in driver.logins)
    state = database.encryption_state()
    assert "encrypted (state 3), AES 256 bits; encryption scan took" in state
    database.drop()
    assert driver.statements()[-2:] == [
        f"IF EXISTS (SELECT 1 FROM sys.certificates WHERE name = '{namespace}') DROP CERTIFICATE [{namespace}]",
        "DROP MASTER KEY"]
    assert SECRET not in repr(database)


def test_sqlserver_wrong_algorithm_is_not_active(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    driver = FakeDriver(lambda sql, params: [(3, "TRIPLE_DES_3KEY", 192)] if "dm_database_encryption" in sql
                        else [(1,)] if "symmetric_keys" in sql else [])
    _install(monkeypatch, "pymssql", driver)
    engine = get_engine("sqlserver", remote=_target("sqlserver", "mssql://bench@db:1433/bench", monkeypatch))
    database = engine.provision(tmp_path, engine.encryption("aes-128"), None)
    database.create()
    assert not any("MASTER KEY" in sql for sql in driver.statements())  # master already had one: left alone
    with pytest.raises(EncryptionNotActive, match="not 3 \\(encrypted\\) with AES_128"):
        database.encryption_state()


def test_oracle_encrypted_tablespace_and_its_own_user(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    driver = FakeDriver(lambda sql, params: [("AES192", "NORMAL")] if "v$encrypted_tablespaces" in sql else [])
    _install(monkeypatch, "oracledb", driver)
    engine = get_engine("oracle", remote=_target("oracle", "oracle://bench@db:1521/FREEPDB1", monkeypatch))
    database = engine.provision(tmp_path, engine.encryption("aes-192"), None)
    database.create()
    schema = database.schema  # type: ignore[attr-defined]
    sql = driver.statements()
    assert sql[0] == (f"CREATE TABLESPACE {schema} DATAFILE SIZE 100M AUTOEXTEND ON NEXT 100M MAXSIZE UNLIMITED "
                      "ENCRYPTION USING 'AES192' ENCRYPT")  # the kit's growth too (oracle.create_tablespace)
    assert sql[1].startswith(f"CREATE USER {schema} IDENTIFIED BY ")
    assert driver.logins[0] == {"user": "bench", "password": SECRET, "host": "db", "port": 1521,
                                "service_name": "FREEPDB1"}
    assert database.encryption_state() == f"v$encrypted_tablespaces: {schema} encrypted with AES192 (NORMAL)"
    assert driver.log[-1][1] == (schema,)  # the tablespace bound as :1
    conn = database.connect()
    assert driver.logins[-1]["user"] == schema and driver.logins[-1]["password"] != SECRET
    conn.execute("SELECT * FROM t WHERE a = ? AND b = ?", [1, 2])
    assert driver.log[-1] == ("SELECT * FROM t WHERE a = :1 AND b = :2", (1, 2))
    database.drop()
    assert driver.statements()[-2:] == [f"DROP USER {schema} CASCADE",
                                        f"DROP TABLESPACE {schema} INCLUDING CONTENTS AND DATAFILES"]


def test_mysql_tables_get_encryption_y_and_are_confirmed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def answer(sql: str, params: tuple) -> list[tuple]:
        if "FROM information_schema.TABLES" in sql:
            return [("orders",), ("lineitem",)]
        if "INNODB_TABLESPACES WHERE" in sql:
            return [(f"{params[0][:-2].replace(chr(92), '')}/orders", "Y"),
                    (f"{params[0][:-2].replace(chr(92), '')}/lineitem", "N")]
        return []

    driver = FakeDriver(answer)
    _install(monkeypatch, "pymysql", driver)
    engine = get_engine("mysql", remote=_target("mysql", "mysql://bench@db:3306/bench", monkeypatch))
    database = engine.provision(tmp_path, engine.encryption("tde"), None)
    database.create()
    assert driver.statements()[0].endswith("CHARACTER SET utf8mb4 DEFAULT ENCRYPTION='Y'")
    database.connect().execute("CREATE TABLE orders (\n o_orderkey INT\n)")
    assert driver.statements()[-1] == "CREATE TABLE orders (\n o_orderkey INT\n) ENCRYPTION='Y'"
    with pytest.raises(EncryptionNotActive, match="1 of 2 tables .* are not encrypted: lineitem"):
        database.encryption_state()


def test_table_options_go_before_as_select_and_leave_other_statements() -> None:
    assert (with_table_options("CREATE TABLE t AS SELECT 1", "ENCRYPTED=YES")
            == "CREATE TABLE t ENCRYPTED=YES AS SELECT 1")
    assert with_table_options("INSERT INTO t VALUES (1)", "ENCRYPTED=YES") == "INSERT INTO t VALUES (1)"
    assert with_table_options("CREATE TABLE t (a int);", "") == "CREATE TABLE t (a int);"


def test_a_password_never_prints() -> None:
    password = Password(SECRET)
    assert SECRET not in repr(password) and SECRET not in str(password)
    assert password.scrub(f"login failed for {SECRET}") == "login failed for ***"
    assert Password("a b/c").scrub("url a%20b%2Fc and a b/c") == "url *** and ***"  # as written and URL-quoted


PLAN = '''[[engines]]
name = "{engine}"
url = "{url}"
{extra}
[[workloads]]
name = "crud"
'''


@pytest.mark.parametrize("engine, url, extra, message", [
    ("mysql", "mysql://bench:pw@db/bench", 'password_env = "X"', "the URL holds a password"),
    ("mariadb", "postgres://bench@db/bench", 'password_env = "X"', "takes a URL starting mariadb://, mysql://"),
    ("postgres", "postgres://db/bench", 'password_env = "X"', "the URL names no user"),
    ("postgres", "postgres://bench@db/", 'password_env = "X"', "names no database"),
    ("oracle", "oracle://bench@db/FREE", "", "password from exactly one of password_env"),
    ("oracle", "oracle://bench@db/FREE", 'password_env = "X"\npassword_file = "f"', "given: password_env, "),
    ("mysql", "mysql://bench@db/bench", 'password_env = "X"\nmemory_mb = 64', "keeps its own: remove memory_mb"),
    ("mysql", "mysql://bench@db/bench", 'password_env = "X"\nkey_id = 3', "key_id names the key of MariaDB"),
    ("sqlserver", "mssql://bench@db/bench", 'password_env = "X"\nencryptions = ["aes-512"]',
     "no encryption 'aes-512'; valid: none, aes-128, aes-192, aes-256, 3des-168"),
])
def test_url_mistakes_name_the_file_the_line_and_the_fix(engine: str, url: str, extra: str, message: str) -> None:
    with pytest.raises(PlanError, match=message) as caught:
        parse_plan(PLAN.format(engine=engine, url=url, extra=extra), "plans/remote.toml")
    assert str(caught.value).startswith("plans/remote.toml:")


def test_a_password_file_others_may_read_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text(SECRET)
    secret.chmod(0o644)
    plan = PLAN.format(engine="postgres", url="postgres://bench@db/bench", extra=f'password_file = "{secret}"')
    with pytest.raises(PlanError, match=r"remote.toml:4: password_file .* has mode 0644: .* it must be 0600"):
        parse_plan(plan, "remote.toml")
    secret.chmod(0o600)
    target = parse_plan(plan, "remote.toml").engines[0].remote
    assert target is not None and target.password().value() == SECRET and SECRET not in repr(target)


def test_remote_only_engines_need_a_url_and_cold_caches_are_refused() -> None:
    with pytest.raises(PlanError, match="does not start sqlserver servers: reach yours by url, .*, or write its "
                                        "script kit: tdebench script PLAN --engine sqlserver"):
        parse_plan('[[engines]]\nname = "sqlserver"\n[[workloads]]\nname = "crud"\n', "p.toml")
    with pytest.raises(PlanError, match="p.toml:1: cache = \"cold\" .* use cache = \"warm\""):
        parse_plan('cache = "cold"\n' + PLAN.format(engine="mysql", url="mysql://b@db/x", extra='password_env = "X"'),
                   "p.toml")


def test_a_workload_an_engine_by_url_cannot_run_is_refused_at_its_line() -> None:
    """Every workload has SQL for the engines by url but maintenance, whose index rebuild has no
    T-SQL or Oracle text; backup and maintenance's encrypt and rekey need what tdebench owns
    only on its own engines; oltp's procedures exist for MariaDB and PostgreSQL only."""
    def plan(engine: str, url: str, workload: str, extra: str = "") -> str:
        text = PLAN.format(engine=engine, url=url, extra='password_env = "X"')
        return text.replace('"crud"', f'"{workload}"') + extra

    sqlserver, oracle, mariadb = "mssql://bench@db/bench", "oracle://bench@db/FREE", "mariadb://bench@db/bench"
    with pytest.raises(PlanError, match=r"p.toml:6: the maintenance workload has no SQL for sqlserver \(dialect "
                                        r"tsql\); it has for the dialects duckdb, sqlite, postgres, mysql$"):
        parse_plan(plan("sqlserver", sqlserver, "maintenance"), "p.toml")
    with pytest.raises(PlanError, match=r"p.toml:6: the backup workload's full, full-compressed, logical cannot run "
                                        r"on mariadb by url: it backs up and restores with the engine's own tools.*; "
                                        r"run it on an engine tdebench starts "
                                        r"\(duckdb, sqlite, sqlcipher, mariadb, postgres\)"):
        parse_plan(plan("mariadb", mariadb, "backup"), "p.toml")
    with pytest.raises(PlanError, match=r"p.toml:7: the maintenance workload's encrypt, rekey cannot run on mariadb "
                                        r"by url: .*; give tests = \['reindex'\]"):
        parse_plan(plan("mariadb", mariadb, "maintenance", 'tests = ["reindex", "encrypt", "rekey"]\n'), "p.toml")
    assert parse_plan(plan("mariadb", mariadb, "maintenance", 'tests = ["reindex"]\n'), "p.toml").workloads[0].tests \
        == ("reindex",)
    for engine, url in (("sqlserver", sqlserver), ("oracle", oracle)):
        with pytest.raises(PlanError, match=rf"p.toml:7: procedures cannot run on {engine}: the oltp workload's "
                                            r"stored procedures are written for MariaDB and PostgreSQL only .*"
                                            r"set procedures = false, or leave it out"):
            parse_plan(plan(engine, url, "oltp", "procedures = true\n"), "p.toml")
        for workload, extra in (("tpch", ""), ("crud", ""), ("oltp", ""), ("oltp", "procedures = false\n")):
            assert parse_plan(plan(engine, url, workload, extra), "p.toml").workloads[0].name == workload
    assert parse_plan(plan("mariadb", mariadb, "oltp", "procedures = true\n"), "p.toml").workloads[0].name == "oltp"


def test_sqlserver_takes_the_statement_timeout_when_it_connects(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    """pymssql sets its query timeout (`timeout`, whole seconds) only in connect: a new timeout
    reconnects, the same one does not, and the driver's timeout error is QueryTimeout."""
    def answer(sql: str, params: tuple) -> list[tuple]:
        if "WAITFOR" in sql:
            raise RuntimeError("(20003, b'DB-Lib error message 20003, severity 6:\\nAdaptive Server connection "
                               "timed out')")
        return [(1,)]

    driver = FakeDriver(answer)
    _install(monkeypatch, "pymssql", driver)
    engine = get_engine("sqlserver", remote=_target("sqlserver", "mssql://bench@db:1433/bench", monkeypatch))
    database = engine.provision(tmp_path, engine.encryption("none"), None)
    conn = database.connect()
    conn.set_timeout(2.5)
    conn.set_timeout(2.5)
    conn.set_timeout(None)
    assert [login["timeout"] for login in driver.logins] == [0, 3, 0]
    assert {login["database"] for login in driver.logins} == {database.namespace}  # type: ignore[attr-defined]
    with pytest.raises(QueryTimeout, match="driver's timeout"):
        conn.execute("WAITFOR DELAY '00:00:05'")


def test_oracle_takes_the_statement_timeout_as_its_call_timeout(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    def answer(sql: str, params: tuple) -> list[tuple]:
        if "slow" in sql:
            raise RuntimeError("DPY-4024: call timeout of 1500 ms exceeded")
        return []

    driver = FakeDriver(answer)
    _install(monkeypatch, "oracledb", driver)
    engine = get_engine("oracle", remote=_target("oracle", "oracle://bench@db:1521/FREEPDB1", monkeypatch))
    conn = engine.provision(tmp_path, engine.encryption("none"), None).connect()
    assert driver.statements()[-1] == "ALTER SESSION SET NLS_TIMESTAMP_FORMAT = 'YYYY-MM-DD HH24:MI:SS'"
    conn.set_timeout(1.5)
    with pytest.raises(QueryTimeout):
        conn.execute("SELECT slow FROM dual")


@pytest.mark.parametrize("engine, url, encryption, statement", [
    ("sqlserver", "mssql://bench@db:1433/bench", "aes-256", "CREATE MASTER KEY ENCRYPTION BY PASSWORD = '"),
    ("oracle", "oracle://bench@db:1521/FREEPDB1", "aes-256", "CREATE USER "),
])
def test_a_trial_password_a_server_error_quotes_is_scrubbed(engine: str, url: str, encryption: str, statement: str,
                                                            monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The trial's own passwords are written into SQL text (SQL Server's master key, Oracle's
    user): an error that quotes the statement reaches no message, nor its chain."""
    def answer(sql: str, params: tuple) -> list[tuple]:
        if sql.startswith(statement):
            raise RuntimeError(f"Incorrect syntax near the statement: {sql}")
        return []

    driver = FakeDriver(answer)
    _install(monkeypatch, "pymssql" if engine == "sqlserver" else "oracledb", driver)
    remote = get_engine(engine, remote=_target(engine, url, monkeypatch))
    database = remote.provision(tmp_path, remote.encryption(encryption), None)
    with pytest.raises(RemoteError) as caught:
        database.create()
    sent = next(sql for sql in driver.statements() if sql.startswith(statement))
    password = sent.split("'")[1] if engine == "sqlserver" else sent.split('"')[1]
    assert len(password) >= 20 and password not in str(caught.value)
    assert "***" in str(caught.value) and caught.value.__suppress_context__
    assert password not in "".join(traceback.format_exception(caught.value))


def test_an_explicit_transaction_is_committed_only_by_its_commit(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    """oltp's client-side transactions on Oracle: SET TRANSACTION turns the driver's autocommit
    off until COMMIT or ROLLBACK, and no statement in between is committed on its own."""
    commits: list[str] = []
    driver = FakeDriver(lambda sql, params: [])
    _install(monkeypatch, "oracledb", driver)
    engine = get_engine("oracle", remote=_target("oracle", "oracle://bench@db:1521/FREEPDB1", monkeypatch))
    conn = engine.provision(tmp_path, engine.encryption("none"), None).connect()
    raw = conn._conn  # type: ignore[attr-defined]
    monkeypatch.setattr(type(raw), "commit", lambda self: commits.append(f"commit, autocommit {self.autocommit}"))
    conn.execute("SET TRANSACTION READ WRITE")
    assert raw.autocommit is False
    conn.execute("UPDATE district SET d_ytd = d_ytd + ? WHERE d_w_id = ?", [1, 1])
    assert commits == []
    conn.execute("COMMIT")
    assert raw.autocommit is True and commits == ["commit, autocommit True"]
    conn.execute("SELECT 1 FROM dual")
    assert len(commits) == 2


def test_a_stored_plan_whose_password_file_is_gone_still_reads_for_compare(tmp_path: Path) -> None:
    """compare reads both runs' stored plans for their settings: the server's password file and
    data directory named there belong to the machine and the day of the run."""
    gone = tmp_path / "pw-gone"
    plan = PLAN.format(engine="postgres", url="postgres://bench@db/bench",
                       extra=f'password_file = "{gone}"\ndata_path = "{tmp_path / "no-such-dir"}"')
    with pytest.raises(PlanError, match="password_file .* cannot be read"):
        parse_plan(plan, "remote.toml")
    stored = parse_plan(plan, "remote.toml", here=False)
    target = stored.engines[0].remote
    assert target is not None and target.password_file == str(gone)
