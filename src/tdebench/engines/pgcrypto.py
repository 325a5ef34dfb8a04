"""PostgreSQL's column layer: cell-level encryption of a workload's sensitive columns with
pgcrypto, the model the literature of the source studies (docs/references.md) compares with
TDE.

Sealing a table (right after the workload creates it, still empty) moves it into the schema
`tdebench_sealed`, turns each sensitive column into `bytea` holding an OpenPGP message
(`pgp_sym_encrypt` with the encryption's cipher: AES-128/192/256, Triple DES, Blowfish or
CAST5, `COLUMN_CIPHERS`), and puts a view under the table's own name in `public` that
decrypts them again with the session's key. INSTEAD OF triggers on the view encrypt every
inserted or updated value before it reaches a page, so the plaintext of a sensitive column
never reaches a data file or the WAL, and the workload's SQL (bulk COPY included) runs
unchanged. Everything else, by design of cell-level encryption, stays plaintext.

The key never appears in SQL text, the catalog or a log: every session sets it with a bound
parameter into the session-only setting `tdebench.key`, which the view and the triggers read.
Statements that must reach the stored table rather than the view (ALTER TABLE, CREATE INDEX,
ANALYZE, …) run with the sealed schema first on the search path (see `stored_table_statement`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass

from tdebench.engines.base import Connection, Encryption, EncryptionNotActive, SealedValue

SCHEMA = "tdebench_sealed"
KEY_SETTING = "tdebench.key"
INSTALL = ("CREATE EXTENSION IF NOT EXISTS pgcrypto", f"CREATE SCHEMA {SCHEMA}")
"""What a database needs before a table is sealed: pgcrypto (IF NOT EXISTS: a database made from
a template1 that has it, as a server's DBA may have set up, has it already) and the sealed schema."""
_KEY = f"current_setting('{KEY_SETTING}')"


@dataclass(frozen=True)
class ColumnCipher:
    """One cipher pgcrypto's OpenPGP functions offer (`cipher-algo=`), as its message marks it."""

    option: str  # pgcrypto's name: aes128, aes192, aes256, 3des, bf, cast5
    openpgp_id: int  # RFC 4880 9.2: the algorithm octet of the message's session key packet
    algorithm: str  # as `Encryption.algorithm` names it
    key_bits: int
    label: str  # how reports and errors say it, e.g. "AES-256", "Triple DES"
    legacy: bool = False  # kept for comparison with old studies, not for new data (Encryption.legacy)
    openssl: str = ""  # OpenSSL's name of the cipher in CFB mode, for a legacy cipher's check

    @property
    def block_bytes(self) -> int:
        """The cipher's block: OpenPGP's CFB runs in blocks of it, after a random prefix as long plus 2."""
        return 16 if self.algorithm == "AES" else 8

    @property
    def options(self) -> str:
        """pgp_sym_encrypt's options: one OpenPGP symmetric-key message per value. s2k-mode=1
        (salted, not iterated): the key is 256 random bits, so iterating the hash would add only
        time, once per value; S2K derives the cipher's key (of its size) from it. compress-algo=0
        (pgcrypto's default, said so that it stays): nothing compressed, so a value's plaintext lies
        at an offset its length alone sets (`sealed_layout`); sess-key and disable-mdc stay at their
        default 0: no session key in the key packet (its length fixed), an MDC after the data."""
        return f"cipher-algo={self.option}, compress-algo=0, s2k-mode=1, s2k-digest-algo=sha256"

    @property
    def message_start(self) -> str:
        """How every such message starts (RFC 4880 5.3), as a bytea literal: a symmetric-key
        session key packet (tag 3, 12 bytes), version 4, this cipher, S2K mode 1 (salted), hash
        8 = SHA-256."""
        return f"\\xc30c04{self.openpgp_id:02x}0108"


COLUMN_CIPHERS: dict[str, ColumnCipher] = {
    "column-aes-128": ColumnCipher("aes128", 7, "AES", 128, "AES-128"),
    "column-aes-192": ColumnCipher("aes192", 8, "AES", 192, "AES-192"),
    "column-aes-256": ColumnCipher("aes256", 9, "AES", 256, "AES-256"),
    "column-3des": ColumnCipher("3des", 2, "3DES", 168, "Triple DES", legacy=True),
    "column-blowfish": ColumnCipher("bf", 4, "Blowfish", 128, "Blowfish", legacy=True, openssl="bf-cfb"),
    "column-cast5": ColumnCipher("cast5", 3, "CAST5", 128, "CAST5", legacy=True, openssl="cast5-cfb"),
}
"""Every cipher of the column layer by its encryption's name: the AES key lengths, and the
Triple DES (168-bit keys) of the framework study's comparison with Blowfish and CAST5 beside it."""

_COVERS = ("the workload's sensitive columns in tables, WAL and backups (TPC-H: names, addresses, "
           "phone numbers and account balances of customers and suppliers; crud: names, card number, "
           "address and city of birth; oltp: customers' first names, addresses, phones and balances)",
           "the canary column")
_NOTES = ("pgcrypto pgp_sym_encrypt per value (cell-level encryption), read through decrypting views. "
          "Not encrypted: every other column, indexes on them, the catalog, statistics, and query temp "
          "files (sorts and hashes spill decrypted values); the key is a session setting the client sends")


MDC = ("OpenPGP's MDC: a SHA-1 of the value (after a random prefix) encrypted with it, checked on decrypting; "
       "who changes the ciphertext without the key garbles the block after the change and cannot recompute it")


def _encryption(name: str, cipher: ColumnCipher) -> Encryption:
    legacy = f"{cipher.label}: a legacy 64-bit-block cipher, for comparison only. " if cipher.legacy else ""
    return Encryption(name=name, algorithm=cipher.algorithm, key_bits=cipher.key_bits, mode="CFB (OpenPGP)",
                      layer="column", covers=_COVERS, notes=legacy + _NOTES, legacy=cipher.legacy, keyed_check=MDC)


COLUMN_ENCRYPTIONS: tuple[Encryption, ...] = tuple(_encryption(name, c) for name, c in COLUMN_CIPHERS.items())
COLUMN_AES_256 = next(e for e in COLUMN_ENCRYPTIONS if e.name == "column-aes-256")


_SESSION_KEY_PACKET, _DATA_PACKET = 0xC3, 0xD2  # new-format headers of tags 3 and 18 (RFC 4880 4.2)
_DATA_VERSION = 1
_MDC_PACKET = 22  # 0xD3, 0x14 and SHA-1's 20 bytes
_LITERAL_HEADER = 6  # 't', a file name of 0 bytes, a 4-byte time


def _new_length(message: bytes, at: int) -> tuple[int, int]:
    """A new-format packet's body length at `at` (RFC 4880 4.2.2) and the bytes it takes;
    ValueError for a partial length: a packet streamed in parts, as pgcrypto writes data over
    16 KiB, whose offsets depend on where the parts break."""
    first = message[at]
    if first < 192:
        return first, 1
    if first < 224:
        return ((first - 192) << 8) + message[at + 1] + 192, 2
    if first == 255:
        return int.from_bytes(message[at + 1:at + 5], "big"), 5
    raise ValueError("the sealed value's packet is streamed in parts (over 16 KiB): its offsets are not fixed")


def _length_bytes(length: int) -> int:
    """The bytes of a new-format length as pgcrypto writes it (render_newlen)."""
    return 1 if length <= 191 else 2 if length <= 8383 else 5


def sealed_layout(message: bytes, cipher: ColumnCipher) -> SealedValue:
    """Where the plaintext lies in a message pgp_sym_encrypt wrote with `cipher.options`
    (pgcrypto's pgp-encrypt.c): a symmetric-key session key packet (its length in its header),
    then the encrypted data packet with MDC (its length, version 1), whose body after the version
    is one CFB stream (IV zero, no resync) of a random prefix (a block and 2 bytes), a literal data
    packet (a tag, its length, `_LITERAL_HEADER`, the value) and the MDC packet. Nothing
    compressed (compress-algo=0) and one packet, the value's offset and length follow from the
    message's length alone; that they add up is checked. ValueError where they do not."""
    if len(message) < 2 or message[0] != _SESSION_KEY_PACKET:
        raise ValueError("the sealed value is not an OpenPGP message starting with a symmetric-key session key packet")
    length, took = _new_length(message, 1)
    at = 1 + took + length
    if message[at:at + 1] != bytes([_DATA_PACKET]):
        raise ValueError("the sealed value has no encrypted data packet with MDC after its key packet")
    body, took = _new_length(message, at + 1)
    at += 1 + took
    if at + body != len(message) or message[at] != _DATA_VERSION:
        raise ValueError("the sealed value's encrypted data packet does not end the message as one packet of version 1")
    stream = at + 1
    literal = body - 1 - (cipher.block_bytes + 2) - _MDC_PACKET  # its tag, length, header and the value
    for size in (1, 2, 5):
        value_bytes = literal - 1 - size - _LITERAL_HEADER
        if value_bytes >= 0 and _length_bytes(_LITERAL_HEADER + value_bytes) == size:
            value_at = stream + cipher.block_bytes + 2 + 1 + size + _LITERAL_HEADER
            return SealedValue(message, value_at, value_bytes, stream, cipher.block_bytes)
    raise ValueError("the sealed value's encrypted data fits no literal data packet (compressed, or another layout)")


def system_openssl_lacks(cipher: ColumnCipher) -> bool:
    """Whether this system's OpenSSL (the library PostgreSQL's pgcrypto calls, with the same
    configuration) refuses a legacy cipher: OpenSSL 3 keeps Blowfish and CAST5 in its legacy
    provider, which Debian does not load, and pgcrypto then writes the plaintext without an
    error. Asked of the `openssl` command (`enc` on no input); False when there is no such
    command or the cipher is not a legacy one (then `really_encrypts` still checks each trial)."""
    if not cipher.openssl or shutil.which("openssl") is None:
        return False
    done = subprocess.run(["openssl", "enc", "-e", f"-{cipher.openssl}", "-K", "00" * (cipher.key_bits // 8),
                           "-iv", "00" * 8, "-in", os.devnull], capture_output=True, timeout=30, check=False)
    return done.returncode != 0


def column_cipher(encryption: Encryption) -> ColumnCipher:
    """The cipher of a column-layer encryption (KeyError names the valid ones)."""
    try:
        return COLUMN_CIPHERS[encryption.name]
    except KeyError:
        raise KeyError(f"no column cipher {encryption.name!r}; valid: {', '.join(COLUMN_CIPHERS)}") from None


_STORED_TABLE_DDL = re.compile(
    r"\s*(ALTER\s+TABLE|CREATE\s+(UNIQUE\s+)?INDEX|REINDEX|CLUSTER|VACUUM|TRUNCATE|ANALYZE)\b", re.IGNORECASE)


def stored_table_statement(sql: str) -> bool:
    """Statements about a table's storage (keys, indexes, statistics, maintenance): on a
    sealed table they must reach the stored table, which a view cannot stand in for."""
    return _STORED_TABLE_DDL.match(sql) is not None


def set_key_statement() -> str:
    """Sets the session's key from a bound parameter, so the key is never in SQL text."""
    return f"SELECT set_config('{KEY_SETTING}', ?, false)"


def seal(conn: Connection, cipher: ColumnCipher, table: str, sensitive: Sequence[str], key: Sequence[str],
         existing: bool = False) -> None:
    """Seal the `sensitive` columns of the empty table `public.<table>` with `cipher` (see the
    module); with `existing`, of a loaded one: its values are encrypted in place, in one rewrite
    of the table."""
    columns = conn.execute(
        "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
        "WHERE attrelid = ?::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
        [f"public.{table}"])
    names = [name for name, _ in columns]
    unknown = [c for c in (*sensitive, *key) if c not in names]
    if unknown:
        raise ValueError(f"table {table} has no column {', '.join(unknown)}; it has {', '.join(names)}")
    if set(sensitive) & set(key):
        raise ValueError(f"table {table}: a key column cannot be sealed: {', '.join(set(sensitive) & set(key))}")
    stored = f"{SCHEMA}.{table}"

    def plain(name: str, type_: str) -> str:
        return f"pgp_sym_decrypt({name}, {_KEY})::{type_} AS {name}" if name in sensitive else name

    def sealed(name: str) -> str:
        return f"pgp_sym_encrypt(NEW.{name}::text, {_KEY}, '{cipher.options}')" if name in sensitive else f"NEW.{name}"

    match = " AND ".join(f"{c} = OLD.{c}" for c in key)
    function = f"{SCHEMA}.{table}_write"
    # a table without a key column (rows all alike, as strength's) takes inserts only: no row to match
    changes = f"""ELSIF TG_OP = 'UPDATE' THEN
        UPDATE {stored} SET ({', '.join(names)}) = ({', '.join(sealed(n) for n in names)}) WHERE {match};
    ELSE
        DELETE FROM {stored} WHERE {match};
        RETURN OLD;""" if key else f"""ELSE
        RAISE EXCEPTION 'tdebench: {table} has no key column, so its rows can only be inserted';"""
    statements = [
        f"ALTER TABLE public.{table} SET SCHEMA {SCHEMA}",
        f"ALTER TABLE {stored} " + ", ".join(
            f"ALTER COLUMN {c} TYPE bytea USING " + (f"pgp_sym_encrypt({c}::text, {_KEY}, '{cipher.options}')"
                                                     if existing else "NULL") for c in sensitive),
        f"CREATE VIEW public.{table} AS SELECT {', '.join(plain(n, t) for n, t in columns)} FROM {stored}",
        f"""CREATE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO {stored} ({', '.join(names)}) VALUES ({', '.join(sealed(n) for n in names)});
    {changes}
    END IF;
    RETURN NEW;
END $$""",
        f"CREATE TRIGGER seal INSTEAD OF INSERT OR UPDATE OR DELETE ON public.{table} "
        f"FOR EACH ROW EXECUTE FUNCTION {function}()",
    ]
    for statement in statements:
        conn.execute(statement)


def state(conn: Connection, cipher: ColumnCipher) -> str:
    """What the database itself holds: every value of every sealed column starts like an
    OpenPGP message encrypted with `cipher` under a salted SHA-256 key, and the server's
    pgcrypto really encrypts with that cipher (`really_encrypts`). Raises EncryptionNotActive
    if either is not so, or if nothing is sealed."""
    columns = _sealed_columns(conn)
    if not columns:
        raise EncryptionNotActive("column encryption sealed no column: the workload named no sensitive column")
    if not really_encrypts(conn, cipher):
        raise EncryptionNotActive(
            f"pgcrypto writes {cipher.label} values unencrypted on this server: the OpenPGP message it makes "
            "holds the plaintext (its OpenSSL lacks the cipher, e.g. OpenSSL 3 without the legacy provider for "
            "Blowfish and CAST5, and pgcrypto does not say so)")
    values = 0
    for table, column in columns:
        ((count, other),) = conn.execute(
            f"SELECT count(*), count(*) FILTER (WHERE substring({column} for 6) <> '{cipher.message_start}'::bytea) "
            f"FROM {SCHEMA}.{table}")
        if other:
            raise EncryptionNotActive(f"{other} values of {table}.{column} are not {cipher.label} OpenPGP messages")
        values += count
    tables = len({table for table, _ in columns})
    return (f"pgcrypto: {len(columns)} columns of {tables} tables sealed, "
            f"{values:,} values, each an OpenPGP message under {cipher.label}")


_PROBE = "tdebench-pgcrypto-probe-0123456789"


def really_encrypts(conn: Connection, cipher: ColumnCipher) -> bool:
    """Whether `pgp_sym_encrypt` with `cipher` hides a value: the header alone says nothing,
    since pgcrypto on an OpenSSL without the cipher (Blowfish and CAST5 under OpenSSL 3 without
    its legacy provider, as on Debian 12) makes a well-formed message with the plaintext inside."""
    ((exposed,),) = conn.execute(
        f"SELECT position(convert_to(?, 'UTF8') in pgp_sym_encrypt(?, 'tdebench-probe-key', '{cipher.options}')) > 0",
        [_PROBE, _PROBE])
    return not exposed


def _sealed_columns(conn: Connection) -> list[tuple[str, str]]:
    """(table, column) of every sealed column: the bytea columns of the sealed schema's tables."""
    return [(str(table), str(column)) for table, column in conn.execute(
        "SELECT c.relname, a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = ? AND c.relkind = 'r' AND a.atttypid = 'bytea'::regtype AND NOT a.attisdropped "
        "ORDER BY 1, 2", [SCHEMA])]


# -- maintenance: sealing loaded tables, changing the key ---------------------------------------


def reseal(conn: Connection, cipher: ColumnCipher, old_key: str, new_key: str) -> None:
    """Every sealed value decrypted with `old_key` and encrypted with `new_key`, one UPDATE per
    table with the keys as bound parameters; then `retire` rewrites the tables (the old row
    versions, under the old key, go with the old files) and the WAL written before."""
    by_table: dict[str, list[str]] = {}
    for table, column in _sealed_columns(conn):
        by_table.setdefault(table, []).append(column)
    for table, columns in by_table.items():
        sets = ", ".join(f"{c} = pgp_sym_encrypt(pgp_sym_decrypt({c}, ?), ?, '{cipher.options}')" for c in columns)
        conn.execute(f"UPDATE {SCHEMA}.{table} SET {sets}", [k for _ in columns for k in (old_key, new_key)])
    retire(conn, [f"{SCHEMA}.{table}" for table in by_table])


def retire(conn: Connection, rewrite: Sequence[str]) -> None:
    """After values were sealed or resealed in place, remove what still holds them as they
    were: the tables in `rewrite` are rewritten (VACUUM FULL: dead row versions stay in a
    table's pages otherwise), and the WAL written so far is deleted by a checkpoint after a WAL
    switch, with `wal_recycle` off meanwhile (recycling would keep old segments, contents and
    all, under new names). Dropped or rewritten files are truncated at commit by PostgreSQL."""
    for table in rewrite:
        conn.execute(f"VACUUM FULL {table}")
    conn.execute("ALTER SYSTEM SET wal_recycle = off")
    conn.execute("SELECT pg_reload_conf()")
    deadline = time.monotonic() + 10  # the reload reaches every process, this session's included
    while conn.execute("SELECT current_setting('wal_recycle')") != [("off",)] and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)  # the checkpointer reloads as this session did; give it the same moment
    conn.execute("SELECT pg_switch_wal()")
    conn.execute("CHECKPOINT")
    conn.execute("ALTER SYSTEM RESET wal_recycle")
    conn.execute("SELECT pg_reload_conf()")


def key_opens(conn: Connection) -> bool:
    """Whether the session's key decrypts a sealed value (the first one found)."""
    for table, column in _sealed_columns(conn):
        try:
            rows = conn.execute(f"SELECT pgp_sym_decrypt({column}, {_KEY}) FROM {SCHEMA}.{table} "
                                f"WHERE {column} IS NOT NULL LIMIT 1")
        except Exception:  # psycopg's "Wrong key or corrupt data"
            return False
        if rows:
            return True
    raise EncryptionNotActive("no sealed value to try a key on")
