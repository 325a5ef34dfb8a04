"""Each server's facts, written once for the server tdebench starts, the server by url and the
script kit (engines/mysql.py, postgresql.py, pgcrypto.py, oracle.py, sqlserver.py): where two
copies of a fact disagreed before, the one chosen, and every user reading the same one."""

from __future__ import annotations

from tdebench.engines import KIT, mysql, oracle, pgcrypto, postgresql, sqlserver
from tdebench.engines.mariadb import MariaDBEngine
from tdebench.engines.remote_mysql import RemoteMariaDBEngine, RemoteMySQLEngine
from tdebench.engines.remote_oracle import RemoteOracleEngine
from tdebench.engines.remote_postgres import RemotePostgresEngine
from tdebench.engines.remote_sqlserver import RemoteSQLServerEngine
from tdebench.kit import targets


def test_mariadb_takes_its_statement_timeout_in_seconds_to_the_microsecond_and_mysql_in_milliseconds() -> None:
    # the server by url wrote the seconds as Python prints them (1e-07); MariaDB's max_statement_time
    # has microseconds, as the server tdebench starts has always set it
    assert mysql.MARIADB_TIMEOUT.statement(0.5) == "SET SESSION max_statement_time = 0.500000"
    assert mysql.MARIADB_TIMEOUT.statement(None) == "SET SESSION max_statement_time = 0.000000"
    assert mysql.MYSQL_TIMEOUT.statement(0.5) == "SET SESSION max_execution_time = 500"
    assert mysql.MYSQL_TIMEOUT.statement(0.0001) == "SET SESSION max_execution_time = 1"
    assert mysql.MYSQL_TIMEOUT.statement(None) == "SET SESSION max_execution_time = 0"
    assert RemoteMariaDBEngine.timeout is mysql.MARIADB_TIMEOUT and RemoteMySQLEngine.timeout is mysql.MYSQL_TIMEOUT


def test_a_mariadb_tablespace_a_background_thread_still_rotates_is_not_yet_encrypted() -> None:
    # the server by url looked at ROTATING_OR_FLUSHING only; MariaDB documents a KEY_ROTATION_PAGE_NUMBER
    # that is not NULL as a page a background thread is rotating now, as the server tdebench starts read it
    assert not mysql.rotating(0, None)
    assert mysql.rotating(1, None) and mysql.rotating(0, 17)
    assert mysql.tablespace_encrypted(1, 1) and not mysql.tablespace_encrypted(1, 0)
    assert not mysql.tablespace_encrypted(0, 1) and not mysql.tablespace_encrypted(1, None)
    rows = [("tdebench_x/done", 1, 1, 1, 0, None), ("tdebench_x/busy", 1, 1, 1, 0, 17),
            ("tdebench_x/other_key", 1, 2, 1, 0, None), ("tdebench_x/plain", 0, 1, 0, 0, None)]
    assert RemoteMariaDBEngine.encrypted_tables(lambda sql, params: rows, "tdebench_x", 1) == {"done"}


def test_pgcrypto_is_installed_only_where_the_new_database_lacks_it() -> None:
    # the server tdebench starts said CREATE EXTENSION pgcrypto, which fails in a database made from a
    # template1 that has it (as a server by url's may); both now say IF NOT EXISTS
    assert pgcrypto.INSTALL == ("CREATE EXTENSION IF NOT EXISTS pgcrypto", "CREATE SCHEMA tdebench_sealed")


def test_the_engine_by_url_and_the_kit_take_each_server_s_words_from_its_module() -> None:
    assert (RemotePostgresEngine.schemes, RemotePostgresEngine.default_port) == (postgresql.SCHEMES, 5432)
    assert (RemoteSQLServerEngine.schemes, RemoteSQLServerEngine.default_port) == (sqlserver.SCHEMES, 1433)
    assert (RemoteOracleEngine.schemes, RemoteOracleEngine.default_port) == (oracle.SCHEMES, 1521)
    assert RemoteMariaDBEngine.default_port == RemoteMySQLEngine.default_port == mysql.DEFAULT_PORT == 3306
    assert targets.MYSQL.encryptions == mysql.MYSQL_ENCRYPTIONS
    assert [e.name for e in RemoteMySQLEngine.encryptions] == ["none", *mysql.MYSQL_ENCRYPTIONS]
    assert targets.ORACLE.encryptions == oracle.ALGORITHMS
    assert {e.mode for e in MariaDBEngine.encryptions if e.layer == "native"} == set(mysql.FILE_KEY_ALGORITHMS)
    assert RemoteMariaDBEngine.takes_key_id and not RemoteMySQLEngine.takes_key_id


def test_the_kit_and_the_bulk_loader_send_one_load_data_statement() -> None:
    statement = mysql.load_data_statement("data/sf0.01/nation.csv", "nation", ["n_nationkey", "n_name"])
    assert targets.MYSQL.load_table("nation", ["n_nationkey", "n_name"], "sf0.01") == [targets.Sql(statement)]
    assert statement.startswith("LOAD DATA LOCAL INFILE 'data/sf0.01/nation.csv' INTO TABLE nation ")
    assert mysql.load_data_statement("/tmp/it's", "t", ["a"]).startswith("LOAD DATA LOCAL INFILE '/tmp/it\\'s'")


def test_the_kit_readme_warns_of_sql_server_s_tempdb_from_its_module_and_no_other_engine_s() -> None:
    from tdebench.kit import readme

    notes = {name: readme._order_note(targets.target(name)) for name in KIT}
    assert notes["sqlserver"] == (f" {sqlserver.TEMPDB}: a `none` trial after an encrypted one shares that cost "
                                  "unless you restart the instance.")
    assert "tempdb" in sqlserver.TEMPDB and notes["oracle"] == notes["mysql"] == ""
