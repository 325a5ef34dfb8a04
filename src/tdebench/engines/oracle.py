"""What tdebench knows of Oracle Database's tablespace encryption, written once for the engine
by url (engines/remote_oracle.py) and the script kit (kit/targets.py).

As Oracle documents it (12.2 on): a tablespace is created encrypted with `ENCRYPTION USING
'<algorithm>' ENCRYPT`, which needs the keystore (wallet) open with a master key
(`v$encryption_wallet.status = 'OPEN'`); `v$encrypted_tablespaces` then lists it with its
algorithm. Both clients work in a tablespace and a user (schema) of their own and drop them
with everything in them.
"""

from __future__ import annotations

SCHEMES = ("oracle",)
DEFAULT_PORT = 1521

ALGORITHMS = {"aes-128": "AES128", "aes-192": "AES192", "aes-256": "AES256", "3des-168": "3DES168"}
"""tdebench's encryption names -> Oracle's algorithm words."""
ENCRYPTED_TABLESPACES = "v$encrypted_tablespaces e JOIN v$tablespace t ON t.ts# = e.ts# AND t.con_id = e.con_id"
"""Each encrypted tablespace (`t.name`) with its algorithm and status (`e.encryptionalg`,
`e.status`): what the engine by url and the script kit confirm the encryption from."""
KEYSTORE = "v$encryption_wallet"
"""The keystore's status (`status`), which must be KEYSTORE_OPEN for an encrypted tablespace."""
KEYSTORE_OPEN = "OPEN"


def tablespace_encryption(encryption: str) -> str:
    """The clause that encrypts a new tablespace (Oracle 12.2 on); "" for the baseline ("none")."""
    return f" ENCRYPTION USING '{ALGORITHMS[encryption]}' ENCRYPT" if encryption in ALGORITHMS else ""


def create_tablespace(name: str, encryption: str, datafile: str = "") -> str:
    """The tablespace `name`, encrypted with `encryption` (`tablespace_encryption`): one data file
    of 100 MB that grows by 100 MB as a load needs (without NEXT it would grow a block at a time,
    Oracle's default for AUTOEXTEND ON); `datafile` its path on the server, or "" for a name
    Oracle Managed Files chooses (DB_CREATE_FILE_DEST)."""
    path = f" '{datafile}'" if datafile else ""
    return (f"CREATE TABLESPACE {name} DATAFILE{path} SIZE 100M AUTOEXTEND ON NEXT 100M MAXSIZE UNLIMITED"
            f"{tablespace_encryption(encryption)}")


def drop_user(name: str) -> str:
    """The user (schema) `name` and everything it owns."""
    return f"DROP USER {name} CASCADE"


def drop_tablespace(name: str) -> str:
    """The tablespace `name`, what is left in it and its data files."""
    return f"DROP TABLESPACE {name} INCLUDING CONTENTS AND DATAFILES"
