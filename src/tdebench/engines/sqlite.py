"""SQLite with SQLite3 Multiple Ciphers (PyPI `apsw-sqlite3mc`): page-level encryption of the
main file and the WAL/journal, with seven ciphers.

Each cipher keeps its own key derivation (PBKDF2 for most, Argon2id for AEGIS) with its
default cost; that cost is paid when a connection is opened and is measured as the
`open` step, never inside query times. With a plan's key_form = "raw", the four ciphers that
take a raw key (`PRAGMA key = "x'…'"`, SQLite3MC's sqlite3mcExtractRawKey: chacha20, sqlcipher,
ascon128, aegis) get one derived from the trial's key, as long as the cipher's key, and skip
their key derivation; aes128cbc, aes256cbc and rc4 always digest the key as a passphrase.
tdebench keeps temporary tables and sort files in memory (`temp_store = MEMORY`) for every
encryption (SQLite3MC encrypts them with the database's cipher when written: docs/manual.md,
"What the transient files hold, measured"), unless a plan sets the engine's
`temp_store = "file"`: then SQLite writes them, as files it unlinks on open, into the trial's
workspace (`sqlite.tmp/`), where the transient capture (capture.py) catches and judges them.
"""

from __future__ import annotations

import functools
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from tdebench.engines.base import NONE, Availability, Capabilities, Connection, Database, Encryption, Engine
from tdebench.engines.fs import FS_LAYER
from tdebench.engines.sqlite_common import (COVERS, PAGE_BYTES, TEMP_FILE, TEMP_MEMORY, SQLiteFamilyConnection,
                                            SQLiteFamilyDatabase)
from tdebench.keys import Secret

# tdebench name -> (SQLite3MC cipher, extra cipher parameters); Encryption.raw_key_bytes below is
# the cipher's key length where it takes a raw key (a longer one is read as key and salt)
_CIPHERS: dict[str, tuple[str, dict[str, str]]] = {
    "aes-128-cbc": ("aes128cbc", {}),
    "aes-256-cbc": ("aes256cbc", {}),
    "chacha20-poly1305": ("chacha20", {}),
    "sqlcipher": ("sqlcipher", {}),
    "ascon-128": ("ascon128", {}),
    "aegis-256": ("aegis", {"algorithm": "aegis-256"}),
    "rc4": ("rc4", {}),
}


class SQLiteConnection(SQLiteFamilyConnection):
    """An apsw connection."""

    def keep_wal(self) -> None:
        """No checkpoint when this connection closes (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE) nor as the
        WAL grows: what it commits stays in the -wal file, to be replayed by the next open."""
        import apsw

        self._conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
        self._conn.execute("PRAGMA wal_autocheckpoint = 0").fetchall()


@dataclass
class SQLiteDatabase(SQLiteFamilyDatabase):
    """A database of SQLite3 Multiple Ciphers, opened by apsw."""

    def _open(self, path: Path) -> Any:
        import apsw

        return apsw.Connection(str(path))

    def _wrap(self, conn: Any, temp_dir: Path | None) -> Connection:
        return SQLiteConnection(conn, temp_dir)

    @property
    def _page_bytes(self) -> int:
        return PAGE_BYTES  # SQLite's default page_size, which tdebench keeps

    # -- maintenance: encrypting an existing database, changing its key ----------------------

    def _reencrypt(self, old: Secret | None, new: Secret) -> str:
        """SQLite3MC's `PRAGMA rekey`: every page (decrypted with the old key, if any) encrypted
        with the new one, in place. On a connection of its own, out of WAL mode: SQLite3MC
        refuses to encrypt a plaintext database in WAL mode, and in WAL mode it keeps the old
        key salt on a rekey. The rollback journal it writes meanwhile is deleted at commit."""
        def rekey(conn: Any) -> None:
            if old is not None:
                self._use_key(conn, old)
            conn.execute("PRAGMA journal_mode = DELETE").fetchall()
            self._use_key(conn, new, rekey=True)
            conn.execute("PRAGMA journal_mode = WAL").fetchall()

        self._rewrite("rekey", rekey, old, new)
        return "pragma-rekey"

    def _use_key(self, conn: Any, key: Secret, rekey: bool = False) -> None:
        """This database's cipher and `key` on `conn`: to open it, or (`rekey`) to re-encrypt it;
        as a passphrase (`hexkey`, the cipher's key derivation runs) or, with raw_key_bytes, as
        the raw key derived from it (`key = "x'…'"`, no key derivation)."""
        cipher, params = _CIPHERS[self.encryption.name]
        conn.execute(f"PRAGMA cipher = '{cipher}'")
        for name, value in params.items():
            conn.execute(f"PRAGMA {name} = '{value}'")
        if self.raw_key_bytes:
            pragma = "rekey" if rekey else "key"
            conn.execute(f"PRAGMA {pragma} = \"x'{self._raw(key).hex()}'\"").fetchall()
            return
        pragma = "hexrekey" if rekey else "hexkey"
        conn.execute(f"PRAGMA {pragma} = '{key.hex()}'").fetchall()

    # -- backup and restore: the backup API and apsw's shell -----------------------------------

    def _copy_pages(self, source: Any, target: Any) -> None:
        """With no key on the target SQLite3MC refuses: "backup is not supported with incompatible
        source and target databases"."""
        try:
            with target.backup("main", source, "main") as backup:
                while not backup.done:
                    backup.step()
        finally:
            target.close()

    def _dump(self, conn: Any, out: TextIO) -> None:
        _shell(conn, out).process_command(".dump")

    def _replay(self, conn: Any, script: Path) -> None:
        _shell(conn, io.StringIO()).process_command(f".read '{script}'")


def _shell(conn: Any, out: Any) -> Any:
    """APSW's SQLite shell on `conn`, writing to `out` (for `.dump` and `.read`)."""
    import apsw.shell

    return apsw.shell.Shell(stdout=out, stderr=io.StringIO(), db=conn)


@functools.cache
def default_cache_mb() -> float:
    """A new connection's page cache in MiB, asked of the SQLite tdebench runs (PRAGMA cache_size:
    negative in KiB, else in pages of PRAGMA page_size): 2000 KiB, about 1.95 MiB, in SQLite 3.54
    with SQLite3MC 2.6, per connection and whatever the cipher."""
    import apsw

    conn = apsw.Connection(":memory:")
    try:
        size: int = conn.execute("PRAGMA cache_size").fetchall()[0][0]  # type: ignore[assignment]
        page: int = conn.execute("PRAGMA page_size").fetchall()[0][0]  # type: ignore[assignment]
    finally:
        conn.close()
    return -size / 1024 if size < 0 else size * page / (1024 * 1024)


class SQLiteEngine(Engine):
    name = "sqlite"
    dialect = "sqlite"
    capabilities = Capabilities(embedded=True, concurrent_streams=True)
    # temp_store = "file": temp tables and sort files written into the workspace (SQLite3MC encrypts
    # them with the database's cipher, as measured), where the transient capture judges them;
    # "memory" (the default) keeps them in RAM
    settings = {"temp_store": (TEMP_MEMORY, TEMP_FILE)}
    key_derivation = ("each cipher derives its key on every open: sqlcipher PBKDF2-HMAC-SHA512 256,000 "
                      "iterations, chacha20 and ascon128 64,007, aes256cbc 4,001, aes128cbc one MD5 and RC4 "
                      "pass (the PDF scheme, not iterated), aegis Argon2id; chacha20, sqlcipher, ascon128 and "
                      "aegis take a raw key instead")
    memory_use = ("PRAGMA cache_size on every connection (its page cache, decrypted pages; each "
                  "throughput stream has its own); without it SQLite's default, 2 MB per connection, "
                  "with the rest of the file in the OS page cache, decrypted again on every read")
    encrypted_differences = (
        "ciphers with a per-page nonce or tag (ChaCha20-Poly1305, SQLCipher, Ascon-128, AEGIS) reserve bytes at "
        "the end of every page (SQLite3 Multiple Ciphers' documentation, “Supported ciphers”), so their pages "
        "hold fewer rows and the file has more pages than a plaintext one's; the page cache and the OS "
        "cache then hold different numbers of pages.")
    encryptions = (
        NONE,
        Encryption("aes-128-cbc", "AES", 128, "CBC", "native", COVERS, "wxSQLite3 AES-128", PAGE_BYTES),
        Encryption("aes-256-cbc", "AES", 256, "CBC", "native", COVERS, "wxSQLite3 AES-256", PAGE_BYTES),
        Encryption("chacha20-poly1305", "ChaCha20-Poly1305", 256, "AEAD", "native", COVERS,
                   "SQLite3MC's default cipher; PBKDF2-HMAC-SHA256 with 64,007 iterations on open", PAGE_BYTES,
                   raw_key_bytes=32),
        Encryption("sqlcipher", "AES", 256, "CBC+HMAC-SHA512", "native", COVERS,
                   "SQLCipher v4 compatible; PBKDF2-HMAC-SHA512 with 256,000 iterations on open", PAGE_BYTES,
                   raw_key_bytes=32),
        Encryption("ascon-128", "Ascon-128", 128, "AEAD", "native", COVERS,
                   "lightweight NIST cipher; Ascon PBKDF2 with 64,007 iterations on open", PAGE_BYTES,
                   raw_key_bytes=32),  # SQLite3MC's KEYLENGTH_ASCON128: its own 32-byte key, not Ascon's 16
        Encryption("aegis-256", "AEGIS-256", 256, "AEAD", "native", COVERS, "Argon2id key derivation on open",
                   PAGE_BYTES, raw_key_bytes=32),
        Encryption("rc4", "RC4", 128, "stream", "native", COVERS,
                   "legacy and broken: kept, as Moulianitakis & Asimakopoulos (2019) kept 3DES, to show "
                   "what an old cipher costs",
                   PAGE_BYTES),
        *FS_LAYER,
    )

    def version(self) -> str:
        import apsw

        return f"SQLite {apsw.sqlite_lib_version()}, {getattr(apsw, 'mc_version', 'SQLite3MC')}"

    def availability(self) -> Availability:
        try:
            import apsw
        except ImportError as exc:
            return Availability(False, f"apsw is not installed: {exc}", "pip install -e . (installs apsw-sqlite3mc)")
        if not hasattr(apsw, "mc_version"):
            return Availability(False, "the installed apsw is not built with SQLite3 Multiple Ciphers",
                                "pip uninstall -y apsw && pip install apsw-sqlite3mc")
        return Availability(True)

    def cache_mb(self) -> float:
        """memory_mb, or the page cache SQLite gives a connection by default, as SQLite reports it."""
        return self.memory_mb or default_cache_mb()

    @classmethod
    def default_cache_mb(cls) -> float:
        return default_cache_mb()  # a compile-time default, the same on every machine

    def provision_native(self, workspace: Path, encryption: Encryption, key: Secret | None) -> Database:
        return SQLiteDatabase(workspace=workspace, encryption=encryption, key=key, memory_mb=self.memory_mb,
                              raw_key_bytes=self.raw_key_bytes(encryption), temp_store=self.setting["temp_store"])
