"""What tdebench knows of SQL Server and its TDE, written once for the engine by url
(engines/remote_sqlserver.py) and the script kit (kit/targets.py).

As Microsoft documents it: in `master` a database master key (created only if `master` has
none, and dropped again only by whoever made it) and a certificate protected by it, named after
the database it serves; in that database `CREATE DATABASE ENCRYPTION KEY … ENCRYPTION BY SERVER
CERTIFICATE`, then `ALTER DATABASE … SET ENCRYPTION ON`, and the encryption scan is awaited until
`sys.dm_database_encryption_keys.encryption_state = 3` (encrypted), for at most `WAIT_S`.
"""

from __future__ import annotations

SCHEMES = ("mssql", "sqlserver")
DEFAULT_PORT = 1433
ALGORITHMS = {"aes-128": "AES_128", "aes-192": "AES_192", "aes-256": "AES_256", "3des-168": "TRIPLE_DES_3KEY"}
"""tdebench's encryption names -> TDE's algorithm words."""
ENCRYPTED = 3
"""sys.dm_database_encryption_keys.encryption_state: 2 encryption in progress, 3 encrypted."""
WAIT_S = 24 * 3600
"""How long the encryption scan is awaited: a database is encrypted before it is loaded, so this
is a bound for a busy server, not an estimate."""

TEMPDB = ("SQL Server encrypts tempdb as soon as one database uses TDE and keeps it so until the instance "
          "restarts")
"""Why a database without TDE is not measured alone on a server where another database has it."""

HAS_MASTER_KEY = "SELECT 1 FROM sys.symmetric_keys WHERE name = '##MS_DatabaseMasterKey##'"
STATE = ("SELECT encryption_state, key_algorithm, key_length FROM sys.dm_database_encryption_keys "
         "WHERE database_id = DB_ID(?)")
"""(encryption_state, key_algorithm, key_length) of the database named by the parameter."""


def create_master_key(password: str) -> str:
    """`password`: the text between the quotes (a literal, or a sqlcmd variable such as
    `$(MASTER_KEY_PASSWORD)`)."""
    return f"CREATE MASTER KEY ENCRYPTION BY PASSWORD = '{password}'"


def create_certificate(database: str, subject: str) -> str:
    """The certificate that protects `database`'s encryption key, named after it (in master)."""
    return f"CREATE CERTIFICATE [{database}] WITH SUBJECT = '{subject}'"


def create_database_key(database: str, encryption: str) -> str:
    """`database`'s encryption key (run in `database`)."""
    return (f"CREATE DATABASE ENCRYPTION KEY WITH ALGORITHM = {ALGORITHMS[encryption]} "
            f"ENCRYPTION BY SERVER CERTIFICATE [{database}]")


def encryption_on(database: str) -> str:
    return f"ALTER DATABASE [{database}] SET ENCRYPTION ON"


def drop_certificate(database: str) -> str:
    """Drop `database`'s certificate, if there is one (after the database)."""
    return f"IF EXISTS (SELECT 1 FROM sys.certificates WHERE name = '{database}') DROP CERTIFICATE [{database}]"


# A client that keeps nothing between its set-up and its teardown (the script kit's separate
# scripts) records whether it made the master key in its certificate's subject.
MADE_MASTER_KEY = "tdebench: made the master key"


def master_key_and_certificate(database: str, password: str, subject: str) -> str:
    """One batch: the master key if master has none, and `database`'s certificate, whose subject
    is MADE_MASTER_KEY when the key was made here (`drop_certificate_and_master_key` reads it)."""
    return (f"IF NOT EXISTS ({HAS_MASTER_KEY}) BEGIN {create_master_key(password)}; "
            f"{create_certificate(database, MADE_MASTER_KEY)} END "
            f"ELSE {create_certificate(database, subject)}")


def drop_certificate_and_master_key(database: str) -> str:
    """One batch: `database`'s certificate, and the master key too if that certificate says it
    was made with it (after the database)."""
    return (f"IF EXISTS (SELECT 1 FROM sys.certificates WHERE name = '{database}' AND subject = '{MADE_MASTER_KEY}') "
            f"BEGIN DROP CERTIFICATE [{database}]; DROP MASTER KEY END ELSE {drop_certificate(database)}")
