"""Where MariaDB's plaintext temp tables come from: the page layout of its Aria temp tables, measured.

`tdebench run at-rest` judges MariaDB's encrypted trials `plaintext`: its transient capture finds the
canaries in `tmp/#sql-temptable-*.MAD`, the Aria internal temporary tables a query writes to disk,
although tdebench's option file turns on `encrypt_tmp_disk_tables` and `aria_encrypt_tables`
(`SHOW VARIABLES` below confirms both). This bench locates the leak. For each encryption it
provisions MariaDB as a trial does (`Engine.provision`), loads 1,500 rows carrying a canary into a
table of 150,000 (each row 100 times; `--copies`), and runs queries whose internal temporary tables
exceed the memory the session allows them (1 MiB: `tmp_table_size` and `max_heap_table_size`), so
that MariaDB writes them to disk: a
GROUP BY, a DISTINCT, and the window function of TPC-H's `spill` test. Meanwhile a thread copies
every `#sql*.MAD` file of the server's tmpdir as it grows (every 50 ms; MariaDB deletes them when
the query ends). Then a user-created Aria table is written as a control.

For each table it prints the pages (8 KiB, Aria's block for temp tables) by layout: an Aria data
page starts with a 7-byte LSN and its page type; a non-transactional table that Aria encrypts
stores a random LSN there (`ma_crypt.c`, `store_rand_lsn`: the counter block of its cipher) and a
key version after the header, so a page of such a table whose LSN is zero was written unencrypted
(the layout says nothing of a table in another row format: the baseline's DISTINCT table is
DYNAMIC, whose bytes there are rows); and the canary hits in the table's last copy, the evidence.
Measured here (MariaDB 10.11.19; docs/method/verdicts.md, "Transient files", has the figures):
every internal temp table that reached the disk had the unencrypted layout and held the canaries,
with aes-256-cbc and aes-256-ctr alike, while the user's Aria table in the same server was
encrypted (random LSNs, no canary).
Run: .venv/bin/python bench/mariadb_temp_tables.py [--copies N] [--encryptions NAME ...]
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import secrets
import shutil
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from temp_coverage import workspace  # noqa: E402  (bench/ is not a package)

from tdebench.engines import get_engine  # noqa: E402
from tdebench.keys import Secret  # noqa: E402

PAGE = 8192  # Aria's block size for internal temporary tables
ROWS = 1500  # canary rows; each is copied --copies times into the queried table
QUERIES = {
    "GROUP BY": "SELECT count(*) FROM (SELECT c_address, r, count(*) AS n FROM big GROUP BY c_address, r) AS g",
    "DISTINCT": "SELECT count(*) FROM (SELECT DISTINCT c_address, r FROM big) AS d",
    "window (spill test)": "SELECT count(*), sum(rn) FROM (SELECT row_number() OVER "
                           "(PARTITION BY c_address, c_custkey ORDER BY r) AS rn FROM big) AS w",
}


def layout(data: bytes, canary: bytes) -> str:
    """The pages of an Aria data file after its first (the bitmap) by layout, and its canary hits."""
    kinds: collections.Counter[str] = collections.Counter()
    for at in range(PAGE, len(data) - PAGE + 1, PAGE):
        page = data[at:at + PAGE]
        kinds["free" if not any(page) else "LSN 0 (unencrypted)" if not any(page[:7]) else "random LSN"] += 1
    shown = ", ".join(f"{kind} {count:,}" for kind, count in sorted(kinds.items()))
    return f"{len(data) // PAGE:,} pages ({shown}), {len(re.findall(re.escape(canary), data)):,} canary hits"


class Copier:
    """Copies every #sql*.MAD file of `tmpdir` into `into` each time it grew, until stopped: the
    last copy of each is what the query had written when it last looked."""

    def __init__(self, tmpdir: Path, into: Path) -> None:
        self.tmpdir, self.into = tmpdir, into
        self.sizes: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Copier:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            for path in self.tmpdir.glob("#sql*.MAD"):
                try:
                    size = path.stat().st_size
                    if size > self.sizes.get(path.name, -1):
                        shutil.copyfile(path, self.into / path.name)
                        self.sizes[path.name] = size
                except OSError:  # deleted meanwhile
                    continue


def measure(encryption_name: str, base: Path, canary: str, copies: int) -> None:
    engine = get_engine("mariadb", memory_mb=16)
    encryption = next(e for e in engine.encryptions if e.name == encryption_name)
    place = base / encryption_name
    place.mkdir()
    place.chmod(0o711)
    database = engine.provision(place, encryption, None if encryption.is_baseline else Secret(os.urandom(32)))
    database.create()
    conn = database.connect()
    try:
        settings = conn.execute("SHOW VARIABLES WHERE Variable_name IN "
                                "('encrypt_tmp_disk_tables', 'aria_encrypt_tables', 'aria_used_for_temp_tables')")
        print(f"{encryption_name}: " + ", ".join(f"{name}={value}" for name, value in settings))
        for name in ("tmp_table_size", "max_heap_table_size"):
            conn.execute(f"SET SESSION {name} = {1 << 20}")
        conn.execute("CREATE TABLE customer (c_custkey INT, c_address VARCHAR(40))")
        conn.execute(f"INSERT INTO customer SELECT seq, CONCAT('{canary}', LPAD(seq, 8, '0')) FROM seq_1_to_{ROWS}")
        conn.execute(f"CREATE TABLE big AS SELECT c_custkey, c_address, s.seq AS r FROM customer "
                     f"CROSS JOIN seq_1_to_{copies} s")
        for label, query in QUERIES.items():
            kept = place / re.sub(r"\W+", "-", label)
            kept.mkdir()
            started = time.perf_counter()
            with Copier(database.tmpdir, kept) as copier:
                conn.execute(query)
            print(f"  {label} ({time.perf_counter() - started:.1f} s):")
            for name in sorted(copier.sizes):
                print(f"    temp table {name}: {layout((kept / name).read_bytes(), canary.encode())}")
            if not copier.sizes:
                print("    no temp table reached the disk")
        conn.execute("CREATE TABLE aria_user ENGINE=Aria ROW_FORMAT=PAGE TRANSACTIONAL=0 AS SELECT * FROM big")
        conn.execute("FLUSH TABLES")
        (user,) = database.datadir.glob("*/aria_user.MAD")
        print(f"  control, a user-created Aria table: {layout(user.read_bytes(), canary.encode())}")
    finally:
        conn.close()
        database.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encryptions", nargs="+", default=["aes-256-cbc", "aes-256-ctr"],
                        help="MariaDB encryptions to measure (default: aes-256-cbc aes-256-ctr)")
    parser.add_argument("--copies", type=int, default=100,
                        help="copies of each canary row in the queried table (default 100: its temp tables "
                        "exceed the 1 MiB the session keeps in memory)")
    args = parser.parse_args()
    canary = "TDEBENCH-CANARY-aria-" + secrets.token_hex(4)
    with workspace() as base:
        for name in args.encryptions:
            measure(name, base, canary, args.copies)


if __name__ == "__main__":
    main()
