"""SQLCipher, Zetetic's own build (PyPI `sqlcipher3-binary`, which bundles SQLCipher community
edition and its SQLite): page-level encryption of the main file and the WAL/journal with
AES-256-CBC, each page with its own random IV and, unless turned off, an HMAC of the page.

The engine `sqlite`'s `sqlcipher` encryption is SQLite3 Multiple Ciphers' emulation of this
scheme, not this code; this engine runs SQLCipher itself, with its own settings:
- `aes-256-cbc-hmac-sha512`: SQLCipher 4's defaults, HMAC-SHA512 per page, the key derived by
  PBKDF2-HMAC-SHA512 with 256,000 iterations on every open;
- `aes-256-cbc-hmac-sha512-raw`: the same with a raw 256-bit key (`x'…'`), no PBKDF2 on open;
- `aes-256-cbc`: `cipher_use_hmac = OFF`, which Zetetic recommends for a fair comparison with
  other encryptions (no HMAC computed on write nor checked on read);
- `aes-256-cbc-hmac-sha1`: `cipher_compatibility = 3`, SQLCipher 3's settings (HMAC-SHA1,
  PBKDF2-HMAC-SHA1 with 64,000 iterations, 1 KiB pages).
`none` is the same library with no key. Everything SQLite does with its files is
engines/sqlite_common.py, shared with SQLite3MC. Keys reach SQLCipher through `sqlite3_key`,
`sqlite3_rekey` and a bound `ATTACH … KEY ?` (sqlcipher3's `set_key`, `reset_key`), never in
SQL text: a passphrase as the trial key's bytes (as SQLite3MC's `hexkey` takes it, so one key
opens a database of either in SQLCipher 4's settings), a raw key as `x'…'` of one derived from it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from tdebench.engines.base import NONE, Availability, Capabilities, Connection, Database, Encryption, Engine
from tdebench.engines.sqlite_common import (COVERS, PAGE_BYTES, TEMP_FILE, TEMP_MEMORY, SQLiteFamilyConnection,
                                            SQLiteFamilyDatabase)
from tdebench.keys import Secret

RAW_KEY_BYTES = 32  # SQLCipher's raw key: the 256-bit AES key (64 hex digits; 96 would add the salt)


@dataclass(frozen=True)
class _Settings:
    """What an encryption sets after the key (PRAGMAs of SQLCipher's), whether it always takes a
    raw key, and the page size its pages are encrypted in (SQLCipher's cipher_page_size)."""

    pragmas: tuple[tuple[str, str], ...] = ()
    raw_key: bool = False
    page_bytes: int = PAGE_BYTES


_SETTINGS: dict[str, _Settings] = {
    "aes-256-cbc-hmac-sha512": _Settings(),
    "aes-256-cbc-hmac-sha512-raw": _Settings(raw_key=True),
    "aes-256-cbc": _Settings((("cipher_use_hmac", "OFF"),)),
    "aes-256-cbc-hmac-sha1": _Settings((("cipher_compatibility", "3"),), page_bytes=1024),
}


class SQLCipherConnection(SQLiteFamilyConnection):
    """A sqlcipher3 connection (in autocommit: the workloads begin their own transactions)."""

    def __init__(self, conn: Any, temp_dir: Path | None, reader: Callable[[], Any]) -> None:
        super().__init__(conn, temp_dir)
        self._reader = reader
        self._kept: Any = None

    def keep_wal(self) -> None:
        """No checkpoint as the WAL grows, nor when this connection closes: sqlcipher3 has no
        `sqlite3_db_config` (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE), so a read-only connection is held
        open beside it and closed after it. This one is then not the last to close, and the last,
        read-only, cannot checkpoint: the -wal file stays, to be replayed by the next open."""
        self._conn.execute("PRAGMA wal_autocheckpoint = 0").fetchall()
        self._kept = self._reader()

    def close(self) -> None:
        super().close()
        if self._kept is not None:
            self._kept.close()
            self._kept = None


@dataclass
class SQLCipherDatabase(SQLiteFamilyDatabase):
    """A database of SQLCipher, opened by sqlcipher3."""

    label = "sqlcipher"
    raw_key_purpose = "sqlcipher-raw-key"

    @property
    def _settings(self) -> _Settings:
        return _SETTINGS.get(self.encryption.name, _Settings())

    def _open(self, path: Path, read_only: bool = False) -> Any:
        from sqlcipher3 import dbapi2

        if read_only:
            return dbapi2.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None, check_same_thread=False)
        return dbapi2.connect(str(path), isolation_level=None, check_same_thread=False)

    def _wrap(self, conn: Any, temp_dir: Path | None) -> Connection:
        return SQLCipherConnection(conn, temp_dir, self._reader)

    def _reader(self) -> Any:
        """A read-only connection to this database with its key, the key proven."""
        conn = self._open(self.path, read_only=True)
        try:
            if self.key is not None and not self.encryption.is_baseline:
                self._use_key(conn, self.key)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
        except Exception as exc:
            conn.close()
            raise RuntimeError(f"sqlcipher could not open {self.path.name}: {self._scrub(str(exc), self.key)}") \
                from None
        return conn

    @property
    def _page_bytes(self) -> int:
        return self._settings.page_bytes

    def _secret(self, key: Secret) -> bytes:
        """What SQLCipher gets for `key`: the raw key derived from it as `x'…'`, or its bytes as the passphrase."""
        if self.raw_key_bytes:
            return f"x'{self._raw(key).hex()}'".encode()
        return key.raw()

    def _use_key(self, conn: Any, key: Secret, rekey: bool = False) -> None:
        """`key` by `sqlite3_key` (then the encryption's settings, which SQLCipher takes after the
        key), or by `sqlite3_rekey` to re-encrypt every page with it, the settings kept."""
        if rekey:
            conn.reset_key(self._secret(key))
            return
        conn.set_key(self._secret(key))
        for name, value in self._settings.pragmas:
            conn.execute(f"PRAGMA {name} = {value}").fetchall()

    def store_verbatim(self, conn: Connection) -> None:
        """Freed space zeroed (`PRAGMA secure_delete`) while the strength workload loads: SQLCipher's
        build leaves it off (SQLite3MC's has SECURE_DELETE compiled in), so a page split leaves
        copies of moved rows in the page's unused space and a value sits in the file twice, where
        the forgery needs the one place an unencrypted twin holds it."""
        conn.execute("PRAGMA secure_delete = ON")

    # -- maintenance: encrypting an existing database, changing its key ----------------------

    def encrypt_existing(self, source: Database, sensitive: Sequence[Any] = ()) -> str:
        """`sqlcipher_export`, SQLCipher's way to encrypt a plaintext database (its `PRAGMA rekey`
        cannot): the plaintext database opened, a new file attached with the key (`ATTACH … KEY ?`)
        and this encryption's settings, every table, index and row exported into it, which then
        replaces the plaintext file (closed at rest, its WAL checkpointed away) and is put in WAL mode."""
        self._check_source(source)
        key = self.key
        assert key is not None
        encrypted = self.workspace / "encrypted.sqlite"

        def export(conn: Any) -> None:
            conn.execute("ATTACH DATABASE ? AS encrypted KEY ?", (str(encrypted), self._secret(key)))
            for name, value in self._settings.pragmas:
                conn.execute(f"PRAGMA encrypted.{name} = {value}").fetchall()
            conn.execute("SELECT sqlcipher_export('encrypted')").fetchall()
            conn.execute("DETACH DATABASE encrypted")

        try:
            self._rewrite("encrypt", export, key)
            for suffix in ("-wal", "-shm"):
                (self.workspace / (self.path.name + suffix)).unlink(missing_ok=True)
            os.replace(encrypted, self.path)
        finally:
            encrypted.unlink(missing_ok=True)
        self.create()  # WAL mode, as every database of this engine has
        return "sqlcipher-export"

    def _reencrypt(self, old: Secret | None, new: Secret) -> str:
        """SQLCipher's `PRAGMA rekey` (its `sqlite3_rekey`): every page decrypted with the old key
        and encrypted with the new one, in place, on a connection of its own (in WAL mode)."""
        def rekey(conn: Any) -> None:
            assert old is not None, "SQLCipher encrypts a plaintext database with sqlcipher_export"
            self._use_key(conn, old)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
            self._use_key(conn, new, rekey=True)

        self._rewrite("rekey", rekey, old, new)
        return "pragma-rekey"

    # -- backup and restore: the backup API and a `.dump` ---------------------------------------

    def _copy_pages(self, source: Any, target: Any) -> None:
        try:
            source.backup(target)
        finally:
            target.close()

    def _dump(self, conn: Any, out: TextIO) -> None:
        """Python's own `.dump` (the sqlite3 module's, which sqlcipher3 lacks), on sqlcipher3's
        connection: it asks only `cursor()` and `execute()` of it."""
        from sqlite3.dump import _iterdump  # type: ignore[attr-defined]

        for line in _iterdump(conn):
            out.write(line + "\n")

    def _replay(self, conn: Any, script: Path) -> None:
        conn.executescript(script.read_text(encoding="utf-8"))


@functools.cache
def _asked() -> tuple[str, str, float]:
    """SQLCipher's version, its SQLite's, and a new connection's page cache in MiB (PRAGMA
    cache_size: negative in KiB, else in pages of PRAGMA page_size), asked of the library:
    sqlcipher3-binary 0.6.0's build gives 8000 KiB (about 7.8 MiB), four times SQLite's default."""
    from sqlcipher3 import dbapi2

    conn = dbapi2.connect(":memory:")
    try:
        version = str(conn.execute("PRAGMA cipher_version").fetchall()[0][0])
        sqlite = str(conn.execute("SELECT sqlite_version()").fetchall()[0][0])
        size = int(conn.execute("PRAGMA cache_size").fetchall()[0][0])
        page = int(conn.execute("PRAGMA page_size").fetchall()[0][0])
    finally:
        conn.close()
    return version, sqlite, -size / 1024 if size < 0 else size * page / (1024 * 1024)


class SQLCipherEngine(Engine):
    name = "sqlcipher"
    dialect = "sqlite"
    capabilities = Capabilities(embedded=True, concurrent_streams=True)
    settings = {"temp_store": (TEMP_MEMORY, TEMP_FILE)}  # as the engine sqlite's (engines/sqlite_common.py)
    key_derivation = ("SQLCipher derives its key on every open: PBKDF2-HMAC-SHA512 with 256,000 iterations "
                      "(cipher_compatibility 3: PBKDF2-HMAC-SHA1, 64,000); aes-256-cbc-hmac-sha512-raw always "
                      "takes a raw 256-bit key instead, and key_form = \"raw\" gives every encryption one")
    memory_use = ("PRAGMA cache_size on every connection (its page cache, decrypted pages; each throughput "
                  "stream has its own); without it the build's default, 8,000 KiB per connection (SQLite's "
                  "own is 2,000), with the rest of the file in the OS page cache, decrypted again on every read")
    encrypted_differences = (
        "SQLCipher reserves bytes at the end of every page for the page's random IV and its HMAC (Zetetic, "
        "“SQLCipher Design”), so its pages hold fewer rows and the file has more pages than a plaintext one's; "
        "cipher_compatibility = 3 also writes 1 KiB pages where the others write 4 KiB.")
    encryptions = (
        NONE,
        Encryption("aes-256-cbc-hmac-sha512", "AES", 256, "CBC+HMAC-SHA512", "native", COVERS,
                   "SQLCipher 4's defaults: a random IV and an HMAC-SHA512 per page, PBKDF2-HMAC-SHA512 with "
                   "256,000 iterations on open", PAGE_BYTES, raw_key_bytes=RAW_KEY_BYTES),
        Encryption("aes-256-cbc-hmac-sha512-raw", "AES", 256, "CBC+HMAC-SHA512", "native", COVERS,
                   "SQLCipher 4's defaults with a raw 256-bit key (x'…'): no PBKDF2 on open", PAGE_BYTES,
                   raw_key_bytes=RAW_KEY_BYTES),
        Encryption("aes-256-cbc", "AES", 256, "CBC", "native", COVERS,
                   "SQLCipher 4 with cipher_use_hmac = OFF (Zetetic's advice for a fair comparison): a random IV "
                   "per page, no HMAC; PBKDF2-HMAC-SHA512 with 256,000 iterations on open", PAGE_BYTES,
                   raw_key_bytes=RAW_KEY_BYTES),
        Encryption("aes-256-cbc-hmac-sha1", "AES", 256, "CBC+HMAC-SHA1", "native", COVERS,
                   "cipher_compatibility = 3 (SQLCipher 3's settings): HMAC-SHA1 per page, 1 KiB pages, "
                   "PBKDF2-HMAC-SHA1 with 64,000 iterations on open", 1024, raw_key_bytes=RAW_KEY_BYTES),
    )

    def version(self) -> str:
        version, sqlite, _ = _asked()
        return f"SQLCipher {version}, SQLite {sqlite}"

    def availability(self) -> Availability:
        try:
            _asked()
        except ImportError as exc:
            return Availability(False, f"sqlcipher3 is not installed: {exc}",
                                "pip install -e . (installs sqlcipher3-binary)")
        except Exception as exc:  # a sqlcipher3 built without SQLCipher: no cipher_version
            return Availability(False, f"the installed sqlcipher3 answers no SQLCipher version: {exc}",
                                "pip install --force-reinstall sqlcipher3-binary")
        return Availability(True)

    def raw_key_bytes(self, encryption: Encryption) -> int:
        """The raw-key encryption's always; the others' under key_form = "raw" (Engine's rule)."""
        if _SETTINGS.get(encryption.name, _Settings()).raw_key:
            return encryption.raw_key_bytes
        return super().raw_key_bytes(encryption)

    def cache_mb(self) -> float:
        """memory_mb, or the page cache SQLCipher's build gives a connection by default, as it reports it."""
        return self.memory_mb or _asked()[2]

    @classmethod
    def default_cache_mb(cls) -> float:
        return _asked()[2]  # a compile-time default, the same on every machine

    def provision_native(self, workspace: Path, encryption: Encryption, key: Secret | None) -> Database:
        return SQLCipherDatabase(workspace=workspace, encryption=encryption, key=key, memory_mb=self.memory_mb,
                                 raw_key_bytes=self.raw_key_bytes(encryption), temp_store=self.setting["temp_store"])
