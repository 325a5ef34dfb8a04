"""What tdebench knows of MariaDB and MySQL, written once for the server tdebench starts
(engines/mariadb.py), the servers by url (engines/remote_mysql.py) and the script kit
(kit/targets.py): URL schemes and port, how a client connects and bulk loads, how each stops a
long statement, the encryption's words, and where each server says what it encrypted.

- MariaDB encrypts InnoDB tablespaces with a key management plugin: per table `ENCRYPTED=YES
  ENCRYPTION_KEY_ID=<id>` (or every table, `innodb_encrypt_tables`), the mode its
  file_key_management's `file_key_management_encryption_algorithm`; what is encrypted is in
  `information_schema.INNODB_TABLESPACES_ENCRYPTION`, the redo log, temporary tables and files
  and the binlog are server-wide switches (`MARIADB_SWITCHES`).
- MySQL 8.0/8.4 encrypts a table `ENCRYPTION='Y'` (a database's default `DEFAULT
  ENCRYPTION='Y'`) with the keyring's master key; what is encrypted is in
  `information_schema.INNODB_TABLESPACES.ENCRYPTION`, the redo and undo logs are server-wide
  switches (`MYSQL_LOG_SWITCHES`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MARIADB_SCHEMES = ("mariadb", "mysql")
MYSQL_SCHEMES = ("mysql",)
DEFAULT_PORT = 3306


def connect_options() -> dict[str, Any]:
    """What every PyMySQL connection tdebench opens to a MariaDB or MySQL server asks for: LOAD
    DATA LOCAL (the bulk loader), autocommit, utf8mb4, and several statements in one packet
    (`MariaDBConnection.execute_batch`; only tdebench's own statements are ever sent)."""
    from pymysql.constants import CLIENT

    return {"local_infile": True, "autocommit": True, "charset": "utf8mb4", "client_flag": CLIENT.MULTI_STATEMENTS}


def load_data_statement(path: str, table: str, columns: Sequence[str]) -> str:
    """LOAD DATA LOCAL INFILE of the '|'-separated text at `path` (the client's: it sends the
    file), fields as DuckDB writes them, nothing escaped, one row a line."""
    quoted = path.replace("\\", "\\\\").replace("'", "\\'")
    return (f"LOAD DATA LOCAL INFILE '{quoted}' INTO TABLE {table} CHARACTER SET utf8mb4 "
            "FIELDS TERMINATED BY '|' OPTIONALLY ENCLOSED BY '\"' ESCAPED BY '' "
            f"LINES TERMINATED BY '\\n' ({', '.join(columns)})")


@dataclass(frozen=True)
class Timeout:
    """How a server stops a long statement: MariaDB's `max_statement_time` (seconds, every
    statement, to the microsecond), MySQL's `max_execution_time` (milliseconds, SELECTs only)."""

    variable: str
    milliseconds: bool
    error: int  # the error number of a statement it stopped

    def statement(self, seconds: float | None) -> str:
        """The session's timeout set to `seconds` (None: none)."""
        if self.milliseconds:
            return f"SET SESSION {self.variable} = {0 if seconds is None else max(1, round(seconds * 1000))}"
        return f"SET SESSION {self.variable} = {seconds or 0:.6f}"


MARIADB_TIMEOUT = Timeout("max_statement_time", False, 1969)  # ER_STATEMENT_TIMEOUT
MYSQL_TIMEOUT = Timeout("max_execution_time", True, 3024)  # ER_QUERY_TIMEOUT

# -- MariaDB ---------------------------------------------------------------------------------

FILE_KEY_ALGORITHMS = {"CBC": "AES_CBC", "CTR": "AES_CTR"}
"""An encryption's mode -> file_key_management_encryption_algorithm's word."""
MARIADB_CATALOG = "INNODB_TABLESPACES_ENCRYPTION"
"""The information_schema table that says, per tablespace, how it is encrypted."""
MARIADB_SWITCHES = {"innodb_encrypt_log": "redo log", "innodb_encrypt_temporary_tables": "temporary tables",
                    "encrypt_tmp_files": "temp files", "encrypt_tmp_disk_tables": "temp disk tables"}
"""MariaDB's server-wide encryption switches beside the tables' (variable -> what it covers)."""
MARIADB_BINLOG_SWITCH = "encrypt_binlog"


def mariadb_table_options(key_id: int | None) -> str:
    """A table's options: encrypted with key `key_id`, or (None) not encrypted."""
    return "ENCRYPTED=NO" if key_id is None else f"ENCRYPTED=YES ENCRYPTION_KEY_ID={key_id}"


def tablespace_encrypted(scheme: int, min_key_version: int | None) -> bool:
    """Whether a row of INNODB_TABLESPACES_ENCRYPTION is an encrypted tablespace: scheme 1, and
    every page written with a key version (MIN_KEY_VERSION, the oldest of its pages', above 0)."""
    return scheme == 1 and (min_key_version or 0) > 0


def rotating(rotating_or_flushing: int | None, key_rotation_page_number: int | None) -> bool:
    """Whether a background encryption thread is still at work on a tablespace: MariaDB's
    documentation of INNODB_TABLESPACES_ENCRYPTION says so of ROTATING_OR_FLUSHING = 1 and of a
    KEY_ROTATION_PAGE_NUMBER that is not NULL (the page it is rotating); either is enough."""
    return bool(rotating_or_flushing) or key_rotation_page_number is not None


# -- MySQL 8 ---------------------------------------------------------------------------------

MYSQL_ENCRYPTIONS = {"tde": "Y"}
"""tdebench's encryption names -> MySQL's ENCRYPTION option value."""
MYSQL_CATALOG = "INNODB_TABLESPACES"
"""The information_schema table whose ENCRYPTION column says whether a tablespace is encrypted."""
MYSQL_LOG_SWITCHES = {"redo": "innodb_redo_log_encrypt", "undo": "innodb_undo_log_encrypt"}
"""MySQL's server-wide switches for the logs that hold row data too (short name -> variable)."""


def mysql_encryption(encrypted: bool) -> str:
    """The ENCRYPTION option's value (and INNODB_TABLESPACES.ENCRYPTION's): Y or N."""
    return MYSQL_ENCRYPTIONS["tde"] if encrypted else "N"


def mysql_database_options(encrypted: bool) -> str:
    """What CREATE DATABASE appends: its tables' default encryption."""
    return f" DEFAULT ENCRYPTION='{mysql_encryption(encrypted)}'"


def mysql_table_options(encrypted: bool) -> str:
    return f"ENCRYPTION='{mysql_encryption(encrypted)}'"
