"""The maintenance workload's part of the report: the time to encrypt an existing database and
its throughput, the time to change the key, and the index rebuild against no encryption.

Time to encrypt and rekey are built from the raw measurements, failed checks included (a
conversion that left plaintext behind must show as such, not vanish with its trial), each
cell summarized by stats.py like every other figure; "not supported" and "not applicable"
are recorded outcomes, never numbers. The index rebuild is an ordinary summary record with
its overhead against `none` (it is in summary.csv too). An engine at several memory_mb values
is one configuration per value, in the tables (a memory column) and in the findings ("sqlite
2 MB").
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from tdebench.report.data.declared import MAINTENANCE
from tdebench.report.data.records import BASELINE, SummaryRecord, engine_label, memory_order, scale_text
from tdebench.report.sections import Content, block
from tdebench.report.summaries.tables import Column, Table, engine_columns, text
from tdebench.report.data.units import MIB, interval, number, p_value, percent
from tdebench.stats import summarize_many
from tdebench.results import Measurement, RunData

ENCRYPT, REKEY, REINDEX = "encrypt", "rekey", "reindex"  # its tests, as plans name them
_OK, _FAILED, _OUTCOMES = MAINTENANCE.ok, MAINTENANCE.failed, MAINTENANCE.outcome_words  # as the table says them

METHODS = {
    "pragma-rekey": "SQLite3MC `PRAGMA rekey`: every page re-encrypted in place (rollback journal meanwhile, "
                    "as SQLite3MC cannot rekey in WAL mode without keeping the old key salt)",
    "copy-database": "DuckDB cannot encrypt a file in place: ATTACH a new file with the key, COPY FROM DATABASE, "
                     "replace the old file (deleted, not shredded)",
    "encryption-threads": "MariaDB restarted with encryption on; InnoDB's background threads (one per core, page "
                          "budget lifted) encrypt every tablespace, the system tablespace included, until "
                          "INNODB_TABLESPACES_ENCRYPTION shows all done",
    "seal-columns": "PostgreSQL column layer: the sensitive columns of the loaded tables encrypted in place with "
                    "pgcrypto; the statistics and the WAL written before, which hold their plaintext, retired",
    "copy-into-mount": "gocryptfs: a new cipher directory, mounted, the database's directory copied in, the "
                       "original deleted (not shredded)",
    "reseal-columns": "PostgreSQL column layer: every sealed value decrypted and encrypted with the new key, the "
                      "tables rewritten and the WAL written before retired",
    "rewrap-master-key": "gocryptfs -passwd: only the wrapping of the master key changes; the data is NOT "
                         "re-encrypted, so whoever kept the master key (or the old gocryptfs.conf and password) "
                         "can still read it",
    "key-rotation": "not supported: MariaDB's file_key_management plugin has no key versions, so InnoDB cannot "
                    "re-encrypt to a new key (that needs a key management plugin with versions)",
}

KEEPS_THE_DATA = frozenset({"rewrap-master-key"})
"""Methods that change a key without re-encrypting any data: no throughput is shown for them."""


CSV = "maintenance.csv"


def section(run: RunData, records: list[SummaryRecord]) -> Content | None:
    """Time to encrypt, changing the key and the index rebuild (maintenance.csv: encrypt and
    rekey), or None when the run has no maintenance step to show."""
    if not any(m.test in (ENCRYPT, REKEY, REINDEX) and m.trial.workload == MAINTENANCE.name for m in run.measurements):
        return None
    operations = operations_table(run)
    encrypt = _only(operations, ENCRYPT, "Time to encrypt an existing database",
                    "How long turning encryption on takes for a loaded, unencrypted database of the same "
                    "engine, and its throughput: the database's bytes (every file it wrote, as in the "
                    "database size; MariaDB's include its preallocated redo log and system tablespace) / "
                    "elapsed / 1024², the MB/s of Moulianitakis & Asimakopoulos (2019).",
                    "Verified: the engine's own state, the data (row counts, canaries, TPC-H Q1) and the "
                    "at-rest scan of everything left in the database's directory, all as expected.")
    rekey = _only(operations, REKEY, "Changing the key",
                  "Re-encrypting the trial's database with a new key, where the engine can, and its "
                  "throughput (database bytes / elapsed / 1024²).",
                  "Verified: the old key opens nothing, the new one opens the database, and its row counts "
                  "and canaries are what they were.")
    return Content(blocks=(block(encrypt), block(rekey), block(reindex_table(run, records))),
                   csvs=((CSV, operations),), findings=tuple(findings(encrypt)))


def _method(step: str) -> str:
    return "–" if step == "none" else step


def _row(key: tuple, measurements: list[Measurement]) -> dict[str, Any]:
    engine, memory_mb, encryption, workload, scale, test, step = key
    timed = [m for m in measurements if "elapsed_s" in m.metrics and m.metrics["elapsed_s"] > 0]
    answers = [m.answer or "" for m in measurements]  # no answer (None) is no outcome either
    bad = answers.count(_FAILED)
    if answers and all(answer in _OUTCOMES and answer != _OK for answer in answers):
        verified = _OUTCOMES[answers[0]]
    else:
        verified = "yes" if not bad else f"no ({bad} of {len(measurements)})"
    row: dict[str, Any] = {"engine": engine, "memory_mb": memory_mb, "encryption": encryption, "workload": workload,
                           "scale": scale, "test": test, "method": _method(step), "n": len(timed),
                           "verified": verified}
    if timed:
        elapsed, throughput, cpu, size = summarize_many([
            [m.metrics["elapsed_s"] for m in timed],
            [m.metrics.get("size_bytes", 0.0) / m.metrics["elapsed_s"] / MIB for m in timed],
            [m.metrics.get("cpu_s", 0.0) for m in timed],
            [m.metrics.get("size_bytes", 0.0) for m in timed]])
        row.update({"size_mib": size.median / MIB, "seconds": elapsed.median,
                    "seconds_ci": interval(elapsed.ci_low, elapsed.ci_high) if elapsed.n > 1 else None,
                    "mb_per_s": None if step in KEEPS_THE_DATA else throughput.median, "cpu_s": cpu.median})
    return row




def operations_table(run: RunData) -> Table:
    """maintenance.csv: one row per engine (and its memory_mb), encryption, scale, test (encrypt,
    rekey) and method, over the measured runs (warm-ups left out, failed checks kept and counted)."""
    groups: dict[tuple, list[Measurement]] = defaultdict(list)
    for m in run.measurements:
        if m.test in (ENCRYPT, REKEY) and not m.warmup:
            t = m.trial
            groups[(t.engine, t.memory_mb, t.encryption, t.workload, t.scale, m.test, m.step)].append(m)
    order = sorted(groups, key=lambda k: (k[5] != ENCRYPT, k[0], memory_order(k[1]), k[2] != BASELINE, k[2], k[4],
                                          k[6]))
    rows = [_row(key, groups[key]) for key in order]
    columns = (*engine_columns(rows), Column("encryption", "encryption"), Column("workload", "workload"),
               Column("scale", "scale", scale_text, numeric=True), Column("test", "test"),
               Column("method", "method"), Column("n", "n", text, numeric=True),
               Column("size_mib", "database (MiB)", number, numeric=True),
               Column("seconds", "seconds (median)", number, numeric=True),
               Column("seconds_ci", "95% CI", text, numeric=True),
               Column("mb_per_s", "MB/s", number, numeric=True),
               Column("cpu_s", "CPU s", number, numeric=True), Column("verified", "verified"))
    return Table("Maintenance", columns, rows)


def _only(table: Table, test: str, title: str, intro: str, verified: str) -> Table:
    rows = [row for row in table.rows if row["test"] == test]
    shown = tuple(c for c in table.columns if c.key not in ("workload", "test"))
    methods = sorted({row["method"] for row in rows} & set(METHODS))
    note = " ".join([verified] + [f"{method}: {METHODS[method]}." for method in methods]) if rows else ""
    return Table(title, shown, rows, note=note, intro=intro if rows else "",
                 empty="" if rows else f"No {test} test in this run.")


def reindex_table(run: RunData, records: list[SummaryRecord]) -> Table:
    """The index rebuild of Dolyetyus (n.d.): median time per method with its overhead against
    `none`."""
    checked: dict[tuple, set[str | None]] = defaultdict(set)
    for m in run.measurements:
        if m.test == REINDEX and not m.warmup:
            checked[(*m.trial.config, m.step)].add(m.answer)
    rows = []
    for record in records:
        cell, summary, compared = record.cell, record.summary, record.overhead
        if cell.test != REINDEX or cell.metric != "elapsed_s":
            continue
        answers = checked.get((cell.engine, cell.encryption, cell.workload, cell.scale, cell.memory_mb, cell.step),
                              set())
        rows.append({"engine": cell.engine, "memory_mb": cell.memory_mb, "encryption": cell.encryption,
                     "scale": cell.scale,
                     "method": cell.step, "n": summary.n, "seconds": summary.median,
                     "seconds_ci": interval(summary.ci_low, summary.ci_high) if summary.n > 1 else None,
                     "overhead": compared.pct if compared else None,
                     "overhead_ci": (interval(compared.ci_low, compared.ci_high, percent) if compared else None),
                     "p": compared.p_value if compared else None,
                     "checked": "yes" if answers == {_OK} else "no"})
    columns = (*engine_columns(rows), Column("encryption", "encryption"),
               Column("scale", "scale", scale_text, numeric=True), Column("method", "method"),
               Column("n", "n", text, numeric=True), Column("seconds", "seconds (median)", number, numeric=True),
               Column("seconds_ci", "95% CI", text, numeric=True),
               Column("overhead", "vs none", percent, numeric=True),
               Column("overhead_ci", "overhead CI", text, numeric=True), Column("p", "p", p_value, numeric=True),
               Column("checked", "checked"))
    return Table("Index rebuild (lineitem)", columns, rows,
                 note=("Checked: lineitem has the same indexes and rows afterwards. Methods: reindex-table "
                       "(PostgreSQL REINDEX TABLE), alter-table-force (MariaDB ALTER TABLE … FORCE: InnoDB keeps "
                       "the table in its primary-key index, so that index is rebuilt with the table), reindex "
                       "(SQLite REINDEX), rebuild-table (DuckDB has no REINDEX and cannot drop a primary key: "
                       "the table is rebuilt with its key). Failed trials are left out, as in every summary."
                       if rows else ""),
                 empty="" if rows else "No reindex test in this run.")


def findings(encrypt: Table) -> list[str]:
    """One sentence per engine (as configured: "sqlite 2 MB") and scale: how fast its verified
    conversions went."""
    by_engine: dict[tuple[str, int, str, float], list[dict[str, Any]]] = defaultdict(list)
    for row in encrypt.rows:
        if row.get("mb_per_s") is not None and row["verified"] == "yes":
            by_engine[(row["engine"], memory_order(row["memory_mb"]), engine_label(row["engine"], row["memory_mb"]),
                       row["scale"])].append(row)
    sentences = []
    for (_, _, engine, _), rows in sorted(by_engine.items()):
        slow, fast = min(rows, key=lambda r: r["mb_per_s"]), max(rows, key=lambda r: r["mb_per_s"])

        def speed(row: dict[str, Any]) -> str:
            return f"{number(row['mb_per_s'])} MB/s ({row['encryption']}, {number(row['seconds'])} s)"

        span = speed(fast) if slow is fast else f"{speed(slow)} to {speed(fast)}"
        sentences.append(f"Encrypting an existing {engine} database of {number(rows[0]['size_mib'])} MiB ran at "
                         f"{span}, each verified encrypted at rest.")
    return sentences
