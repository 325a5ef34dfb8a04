"""The script kit's engines: SQL Server, Oracle and MySQL 8, which cannot run here.

Each `Target` says, as data and small functions, how its engine turns encryption on (the
engine's own SQL), bulk loads CSV, writes the canaries, marks each timed step in the console
log and shows where its data files are; `scripts.py` writes them out, `logs.py` reads the
logs back. What each server's SQL is, as the engine by url has it too, comes from the server's
module (engines/sqlserver.py, engines/oracle.py, engines/mysql.py). Secrets never appear in a
script: SQL Server's master key password is the sqlcmd variable
`$(MASTER_KEY_PASSWORD)` (sqlcmd takes it from the environment), Oracle's keystore must
already be open, MySQL's keyring is configured on the server.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tdebench.engines import KIT, REGISTRY, mysql, oracle, sqlserver

DATABASE = "tdebench_kit"
"""The database (SQL Server, MySQL) or schema and tablespace stem (Oracle) the kit creates and drops."""
CANARY_TABLE = "tdebench_canary"
STEP = "tdebench-step"
"""What every marker line starts with: `tdebench-step <test> <stream> <pass> <step>`."""


@dataclass(frozen=True)
class Sql:
    """One SQL statement, without its terminator (the tool's renderer adds it)."""

    text: str


@dataclass(frozen=True)
class Directive:
    """One line for the client tool itself (sqlcmd `:on error exit`, sqlplus `SET TIMING ON`)."""

    text: str


Item = Sql | Directive


@dataclass(frozen=True)
class Target:
    """One engine of the kit. `encryptions` maps the kit's names to the engine's own words for
    the cipher (`none` is the baseline, without a word)."""

    name: str
    dialect: str  # tpch/schema.py's and queries.py's
    tool: str  # the console client whose logs `tdebench import` reads
    encryptions: dict[str, str]
    setup: Callable[[str], list[Item]]  # the encryption's name -> turn it on, create the database
    teardown: Callable[[str], list[Item]]
    use: Callable[[], list[Item]]  # at the top of every script after setup: into the kit's database
    load_table: Callable[[str, Sequence[str], str], list[Item]]  # table, columns, data/<scale> -> bulk load its CSV
    marker: Callable[[str], Item]  # the marker text -> what prints it into the log
    files: list[str]  # statements that show the database's files and its encryption state
    flush: list[str]  # statements that write dirty pages to the data files (before copying them)
    stop_on_error: Callable[[bool], list[Item]]  # True: stop the script at an error; False: go on
    timing_on: list[Item]
    preamble: list[Item] = field(default_factory=list)  # the client's settings, first in every script
    # what the engine's encryption of one database encrypts for every other until a restart
    encrypts_server_wide: str = ""

    def encryption_names(self) -> tuple[str, ...]:
        return ("none", *self.encryptions)


def _csv_name(table: str) -> str:
    return f"{table}.csv"


def data_dir(scale_name: str) -> str:
    """Where `tdebench script` writes a scale's CSV files, relative to the kit's directory."""
    return f"data/{scale_name}"


# -- SQL Server ----------------------------------------------------------------------------

def _sqlserver_setup(encryption: str) -> list[Item]:
    items: list[Item] = [
        Sql("USE master"),
        Sql(f"IF DB_ID('{DATABASE}') IS NOT NULL RAISERROR('database {DATABASE} exists: run the teardown "
            "script of the earlier run first', 16, 1)"),
        Sql(f"CREATE DATABASE {DATABASE}"),
        Sql(f"ALTER DATABASE {DATABASE} SET RECOVERY SIMPLE"),
    ]
    if encryption == "none":
        return items
    # TDE as the engine by url sets it up (engines/sqlserver.py): the instance's master key only
    # if it has none (its password from the sqlcmd variable), and the teardown drops it only then
    return items + [
        Sql(sqlserver.master_key_and_certificate(DATABASE, "$(MASTER_KEY_PASSWORD)", "tdebench kit")),
        Sql(f"USE {DATABASE}"),
        Sql(sqlserver.create_database_key(DATABASE, encryption)),
        Sql(sqlserver.encryption_on(DATABASE)),
        # the background scan takes a moment even when empty
        Sql("DECLARE @state INT = 0, @waited INT = 0;\n"
            f"WHILE @state <> {sqlserver.ENCRYPTED} AND @waited < {sqlserver.WAIT_S}\nBEGIN\n"
            f"    SELECT @state = encryption_state FROM sys.dm_database_encryption_keys "
            f"WHERE database_id = DB_ID('{DATABASE}');\n"
            f"    IF @state <> {sqlserver.ENCRYPTED} BEGIN WAITFOR DELAY '00:00:01'; SET @waited += 1; END\nEND;\n"
            f"IF @state <> {sqlserver.ENCRYPTED} RAISERROR('{DATABASE} is not encrypted after "
            f"{sqlserver.WAIT_S // 3600} hours (encryption_state %d)', 16, 1, @state)"),
    ]


def _sqlserver_teardown(encryption: str) -> list[Item]:
    items: list[Item] = [
        Sql("USE master"),
        Sql(f"ALTER DATABASE {DATABASE} SET SINGLE_USER WITH ROLLBACK IMMEDIATE"),
        Sql(f"DROP DATABASE {DATABASE}"),
    ]
    if encryption != "none":
        items.append(Sql(sqlserver.drop_certificate_and_master_key(DATABASE)))
    return items


def _sqlserver_load(table: str, columns: Sequence[str], scale_name: str) -> list[Item]:
    # FORMAT = 'CSV' (SQL Server 2017 and later) reads the quoted fields DuckDB writes; the path is
    # the server's: DATA_DIR is where the CSV files were copied on the server's host.
    return [Sql(f"BULK INSERT {table} FROM '$(DATA_DIR)/{_csv_name(table)}' WITH (FORMAT = 'CSV', "
                "FIELDTERMINATOR = '|', ROWTERMINATOR = '0x0a', FIELDQUOTE = '\"', CODEPAGE = '65001', TABLOCK)")]


SQLSERVER = Target(
    name="sqlserver", dialect="tsql", tool="sqlcmd",
    encryptions=dict(sqlserver.ALGORITHMS),  # the names a plan gives the engine by url too
    setup=_sqlserver_setup, teardown=_sqlserver_teardown,
    use=lambda: [Sql(f"USE {DATABASE}")],
    load_table=_sqlserver_load,
    marker=lambda text: Sql(f"PRINT '{text}'"),
    files=[f"SELECT type_desc, physical_name FROM sys.master_files WHERE database_id = DB_ID('{DATABASE}')",
           "SELECT DB_NAME(database_id) AS database_name, encryption_state, key_algorithm, key_length "
           "FROM sys.dm_database_encryption_keys"],
    flush=["CHECKPOINT"],
    stop_on_error=lambda stop: [Directive(":on error exit" if stop else ":on error ignore")],
    timing_on=[Sql("SET NOCOUNT OFF"), Sql("SET STATISTICS TIME ON")],
    encrypts_server_wide=sqlserver.TEMPDB,
)

# -- Oracle --------------------------------------------------------------------------------

_ORACLE_TABLESPACE = f"{DATABASE}_data"
_ORACLE_DIRECTORY = f"{DATABASE}_csv"


def _oracle_setup(encryption: str) -> list[Item]:
    items: list[Item] = []
    if encryption != "none":  # an encrypted tablespace needs the keystore open with a master key
        items.append(Sql(
            "DECLARE\n    keystore VARCHAR2(30);\nBEGIN\n"
            f"    SELECT MAX(status) INTO keystore FROM {oracle.KEYSTORE};\n"
            f"    IF keystore IS NULL OR keystore <> '{oracle.KEYSTORE_OPEN}' THEN\n"
            "        raise_application_error(-20001, 'the TDE keystore is not open (v$encryption_wallet.status '"
            " || NVL(keystore, 'none') || '): open it and set a master key first, see the README');\n"
            "    END IF;\nEND;"))
    return items + [
        # &TDEBENCH_DATAFILE: the data file's path on the server (DEFINE it, see the README)
        Sql(oracle.create_tablespace(_ORACLE_TABLESPACE, encryption, datafile="&TDEBENCH_DATAFILE")),
        # a schema-only account (no password, no login): the scripts work in it through
        # CURRENT_SCHEMA, and everything it owns goes to its default tablespace, indexes too
        Sql(f"CREATE USER {DATABASE} NO AUTHENTICATION DEFAULT TABLESPACE {_ORACLE_TABLESPACE} "
            f"QUOTA UNLIMITED ON {_ORACLE_TABLESPACE}"),
        # &TDEBENCH_CSV_DIR: where the CSV files were copied on the server's host
        Sql(f"CREATE OR REPLACE DIRECTORY {_ORACLE_DIRECTORY} AS '&TDEBENCH_CSV_DIR'"),
    ]


def _oracle_teardown(encryption: str) -> list[Item]:
    return [Sql(oracle.drop_user(DATABASE)), Sql(oracle.drop_tablespace(_ORACLE_TABLESPACE)),
            Sql(f"DROP DIRECTORY {_ORACLE_DIRECTORY}")]


def _oracle_load(table: str, columns: Sequence[str], scale_name: str) -> list[Item]:
    """An external table over the CSV file (every field text), inserted with a direct-path
    INSERT: the session's NLS settings (`_oracle_use`) convert the ISO dates and the numbers."""
    external = f"{DATABASE}_ext_{table}"
    fields = ", ".join(f"{c} VARCHAR2(4000)" for c in columns)
    access = ", ".join(f"{c} CHAR(4000)" for c in columns)
    return [
        # on several lines: sqlplus refuses a line over 2,499 characters
        Sql(f"CREATE TABLE {external} ({fields})\nORGANIZATION EXTERNAL (TYPE ORACLE_LOADER "
            f"DEFAULT DIRECTORY {_ORACLE_DIRECTORY}\nACCESS PARAMETERS (RECORDS DELIMITED BY NEWLINE "
            "CHARACTERSET AL32UTF8 NOBADFILE NODISCARDFILE NOLOGFILE\nFIELDS TERMINATED BY '|' "
            f"OPTIONALLY ENCLOSED BY '\"' MISSING FIELD VALUES ARE NULL\n({access}))\n"
            f"LOCATION ('{_csv_name(table)}')) REJECT LIMIT 0"),
        Sql(f"INSERT /*+ APPEND */ INTO {table} ({', '.join(columns)}) SELECT {', '.join(columns)} FROM {external}"),
        Sql("COMMIT"),
        Sql(f"DROP TABLE {external}"),
    ]


ORACLE = Target(
    name="oracle", dialect="oracle", tool="sqlplus",
    encryptions=dict(oracle.ALGORITHMS),
    setup=_oracle_setup, teardown=_oracle_teardown,
    use=lambda: [Sql(f"ALTER SESSION SET CURRENT_SCHEMA = {DATABASE}"),
                 Sql("ALTER SESSION SET NLS_DATE_FORMAT = 'YYYY-MM-DD'"),
                 Sql("ALTER SESSION SET NLS_NUMERIC_CHARACTERS = '.,'")],
    load_table=_oracle_load,
    marker=lambda text: Directive(f"PROMPT {text}"),
    files=[f"SELECT file_name FROM dba_data_files WHERE tablespace_name = UPPER('{_ORACLE_TABLESPACE}')",
           f"SELECT t.name AS tablespace_name, e.encryptionalg, e.status FROM {oracle.ENCRYPTED_TABLESPACES} "
           f"WHERE t.name = UPPER('{_ORACLE_TABLESPACE}')"],
    flush=["ALTER SYSTEM CHECKPOINT"],
    stop_on_error=lambda stop: [Directive("WHENEVER SQLERROR EXIT FAILURE" if stop else "WHENEVER SQLERROR CONTINUE")],
    timing_on=[Directive("SET TIMING ON")],
    # no substitution echo (VERIFY), statements over blank lines, wide rows, no paging
    preamble=[Directive(line) for line in ("SET VERIFY OFF", "SET ECHO OFF", "SET SQLBLANKLINES ON", "SET FEEDBACK ON",
                                           "SET PAGESIZE 50000", "SET LINESIZE 1000", "SET TRIMOUT ON", "SET TAB OFF")],
)

# -- MySQL 8 ---------------------------------------------------------------------------------

_MYSQL_SETTINGS = f"{DATABASE}.{DATABASE}_settings"


def _mysql_setup(encryption: str) -> list[Item]:
    if encryption == "none":  # plain MariaDB syntax too: the integration test runs it there
        return [Sql(f"CREATE DATABASE {DATABASE}")]
    logs = mysql.MYSQL_LOG_SWITCHES
    return [
        # fails without a keyring component or plugin: InnoDB then has no master key
        Sql(f"CREATE DATABASE {DATABASE}{mysql.mysql_database_options(True)}"),
        # the redo and undo logs hold row data too; their settings are restored by the teardown
        Sql(f"CREATE TABLE {_MYSQL_SETTINGS} {mysql.mysql_table_options(True)} AS SELECT "
            + ", ".join(f"@@GLOBAL.{variable} AS {name}" for name, variable in logs.items())),
        *(Sql(f"SET GLOBAL {variable} = ON") for variable in logs.values()),
    ]


def _mysql_teardown(encryption: str) -> list[Item]:
    if encryption == "none":
        return [Sql(f"DROP DATABASE {DATABASE}")]
    logs = mysql.MYSQL_LOG_SWITCHES
    return [*(Sql(f"SET @tdebench_{name} = (SELECT {name} FROM {_MYSQL_SETTINGS})") for name in logs),
            *(Sql(f"SET GLOBAL {variable} = @tdebench_{name}") for name, variable in logs.items()),
            Sql(f"DROP DATABASE {DATABASE}")]


def _mysql_load(table: str, columns: Sequence[str], scale_name: str) -> list[Item]:
    # LOCAL: the client reads the file (relative to the directory it runs in, the kit's), so
    # the server needs local_infile = ON and the client --local-infile=1
    return [Sql(mysql.load_data_statement(f"{data_dir(scale_name)}/{_csv_name(table)}", table, columns))]


MYSQL = Target(
    name="mysql", dialect="mysql", tool="mysql",
    encryptions=dict(mysql.MYSQL_ENCRYPTIONS),  # the names a plan gives the engine by url too
    setup=_mysql_setup, teardown=_mysql_teardown,
    use=lambda: [Sql(f"USE {DATABASE}")],
    load_table=_mysql_load,
    marker=lambda text: Sql(f"SELECT '{text}' AS tdebench_step"),
    # MariaDB syntax too (the integration test runs them there): MySQL 8 shows ENCRYPTION='Y'
    # among a table's CREATE_OPTIONS, and the log encryption among the variables
    files=["SELECT @@datadir AS datadir", "SHOW VARIABLES LIKE 'innodb_%log_encrypt'",
           "SELECT TABLE_NAME, CREATE_OPTIONS FROM information_schema.TABLES "
           f"WHERE TABLE_SCHEMA = '{DATABASE}'"],
    flush=[],
    stop_on_error=lambda stop: [],  # the client's --force (run.sh passes it to the timed scripts)
    timing_on=[],  # the client's -vvv prints "(0.01 sec)" after every statement
)


def target(name: str) -> Target:
    """The kit's engine `name`: the Target of this module its registry entry names (`Reach.kit`,
    engines/__init__.py); ValueError naming the valid ones."""
    reach = REGISTRY.get(name)
    if reach is None or reach.kit is None:
        raise ValueError(f"the script kit has no engine {name!r}; valid: {', '.join(KIT)}")
    found: Target = globals()[reach.kit]
    return found

