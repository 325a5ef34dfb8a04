"""The backup workload's part of the report (the backup tests of Madyatmadja et al. (2021),
Dolyetyus (n.d.) and Aydın (2022), docs/references.md): per engine, encryption and backup
method, how long the backup took and what it cost against no encryption, how large it is and
how well it compressed, whether it is encrypted at rest, whether its restore brought back every
row, and whether a restore with a wrong key was refused.

Timings and sizes are the summary's medians (failed trials left out, as everywhere). The
categorical results come from every measured run, failed trials included, and the worst one
shows: a single plaintext artifact, lost restore or accepted wrong key is what a reader must see.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from tdebench.engines.base import BACKUP_FULL, BACKUP_FULL_COMPRESSED, BACKUP_LOGICAL
from tdebench.report.records import BASELINE, PLACEBO, SummaryRecord, scale_text
from tdebench.report.sections import WorkloadSection, block
from tdebench.report.tables import MIB, Column, Table, num, number, percent, text
from tdebench.store import RunData

WORKLOAD = "backup"
METHODS = (BACKUP_FULL, BACKUP_FULL_COMPRESSED, BACKUP_LOGICAL)
KIND = {BACKUP_FULL: "physical", BACKUP_FULL_COMPRESSED: "physical", BACKUP_LOGICAL: "logical"}
Config = tuple[str, str, float, str]  # engine, encryption, scale, method


CSV = "backups.csv"


def section(run: RunData, records: list[SummaryRecord]) -> WorkloadSection | None:
    """The backups table (backups.csv), or None when the run backed nothing up."""
    table = backups_table(run, records)
    return WorkloadSection((block(table),), CSV, table, tuple(findings(table))) if table.rows else None


def _worst(answers: Iterable[str | None], order: tuple[str, ...]) -> str | None:
    """The first word of `order` any answer has (the worst), or None when there is none."""
    present = set(answers)
    return next((word for word in order if word in present), None)


def _answers(run: RunData) -> dict[tuple[Config, str], list[str | None]]:
    """Every measured (non-warm-up) answer of the scan and restore steps, by configuration and step."""
    found: dict[tuple[Config, str], list[str | None]] = defaultdict(list)
    for m in run.measurements:
        if m.trial.workload == WORKLOAD and m.test in METHODS and not m.warmup:
            t = m.trial
            found[((t.engine, t.encryption, t.scale, m.test), m.step)].append(m.answer)
    return found


def _ms(value: float | None) -> str:
    return "–" if value is None or math.isnan(value) else number(value * 1000)


def _mib(value: float | None) -> str:
    return "–" if value is None or math.isnan(value) else number(value / MIB)


def _ratio(value: float | None) -> str:
    return "–" if value is None or math.isnan(value) else f"{value:.2f}×"



def backups_table(run: RunData, records: list[SummaryRecord]) -> Table:
    """One row per engine, encryption, scale and backup method (backups.csv: seconds and bytes)."""
    medians: dict[Config, dict[tuple[str, str], SummaryRecord]] = defaultdict(dict)
    for record in records:
        cell = record.cell
        if cell.workload == WORKLOAD and cell.test in METHODS:
            medians[(cell.engine, cell.encryption, cell.scale, cell.test)][(cell.step, cell.metric)] = record
    answers = _answers(run)
    configs = set(medians) | {config for config, _ in answers}
    rows = []
    for config in configs:
        engine, encryption, scale, method = config
        figures = medians.get(config, {})

        def median(step: str, metric: str) -> float | None:
            record = figures.get((step, metric))
            return record.summary.median if record else None

        backup = figures.get(("backup", "elapsed_s"))
        compressed = median("backup", "compressed")
        rows.append({
            "engine": engine, "encryption": encryption, "scale": scale, "method": method,
            "kind": KIND[method], "compressed": None if compressed is None else bool(compressed),
            "n": backup.summary.n if backup else 0,
            "backup_s": median("backup", "elapsed_s"),
            "backup_overhead_pct": backup.overhead.pct if backup and backup.overhead else None,
            "backup_cpu_s": median("backup", "cpu_s"),
            "size_bytes": median("backup", "size_bytes"),
            "database_bytes": median("backup", "database_bytes"),
            "ratio": median("backup", "ratio"),
            "artifact": _worst(answers.get((config, "scan"), ()), ("plaintext", "inconclusive", "encrypted")),
            "restore_s": median("restore", "elapsed_s"),
            "restore_cpu_s": median("restore", "cpu_s"),
            "restore": _worst(answers.get((config, "restore"), ()), ("failed", "ok")),
            "without_key": _worst(answers.get((config, "restore-without-key"), ()), ("accepted", "refused")),
        })
    rows.sort(key=lambda row: (row["engine"], row["scale"], METHODS.index(row["method"]),
                               row["encryption"] != BASELINE, row["encryption"]))
    columns = (Column("engine", "engine"), Column("encryption", "encryption"),
               num("scale", "scale", scale_text), Column("method", "method"),
               Column("kind", "kind"), Column("compressed", "compressed"), num("n", "n", text),
               num("backup_s", "backup (ms)", _ms), num("backup_overhead_pct", "vs none", percent),
               num("backup_cpu_s", "CPU (ms)", _ms), num("size_bytes", "size (MiB)", _mib),
               num("database_bytes", "database (MiB)", _mib), num("ratio", "compression", _ratio),
               Column("artifact", "backup at rest"), num("restore_s", "restore (ms)", _ms),
               num("restore_cpu_s", "restore CPU (ms)", _ms), Column("restore", "restore checked"),
               Column("without_key", "restore with a wrong key"))
    return Table(
        "Backup and restore", columns, rows,
        intro=("Each backup method of each engine, medians over the repetitions (Madyatmadja et al. "
               "(2021), Dolyetyus (n.d.) and Aydın (2022) measured backups with and without TDE, "
               "compressed and not). Backup at rest: the artifact, decompressed, scanned for the "
               "trial's canaries like the database itself."),
        note=("Backup and restore: elapsed time; CPU: the engine's processes plus the tools it ran "
              "(mariadb-backup, pg_basebackup, gzip, …). vs none: the backup's time against the same "
              "method without encryption. Compression: the artifact's decompressed size ÷ its size "
              "(gzip level 6 everywhere; 1.00× = uncompressed or incompressible). Backup at rest: "
              "encrypted (no canary found; under column encryption the sealed columns only), "
              "plaintext (a canary found), inconclusive (the unencrypted baseline showed none: the "
              "scan proves nothing). Restore checked: ok when every table's row count and "
              "order-independent checksum equal the original's after a restore into a fresh "
              "instance with the same key. Restore with a wrong key: refused when the restore, "
              "the start or reading the data failed; accepted when it gave back the data (– for "
              "no encryption: there is no key)."),
        empty="No backups were made in this run.")


def _names(rows: list[dict[str, Any]]) -> str:
    """The rows' configurations, compactly: per engine, the encryptions that share the same
    methods, e.g. "duckdb (logical: aes-256-ctr, aes-256-gcm; full, logical: fs-aes-256-gcm)"."""
    methods: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for row in rows:
        methods[row["engine"]][row["encryption"]].add(row["method"])
    engines = []
    for engine, by_encryption in sorted(methods.items()):
        groups: dict[tuple[str, ...], list[str]] = defaultdict(list)
        for encryption, names in sorted(by_encryption.items()):
            groups[tuple(m for m in METHODS if m in names)].append(encryption)
        parts = [f"{', '.join(names)}: {', '.join(encryptions)}" for names, encryptions in
                 sorted(groups.items(), key=lambda item: [METHODS.index(m) for m in item[0]])]
        engines.append(f"{engine} ({'; '.join(parts)})")
    return ", ".join(engines)


def findings(table: Table) -> list[str]:
    """Sentences for the report's findings, the plaintext backups of encrypted databases first."""
    rows = table.rows
    encrypted = [row for row in rows if row["encryption"] not in (BASELINE, PLACEBO)]
    sentences = []
    plain = [row for row in encrypted if row["artifact"] == "plaintext"]
    if plain:
        sentences.append(f"Backups in PLAINTEXT although the database is encrypted ({len(plain)} of "
                         f"{len(encrypted)}): {_names(plain)}. Anyone holding them reads the data without "
                         "the key.")
    elif encrypted:
        sentences.append("Every backup of an encrypted database was encrypted at rest.")
    accepted = [row for row in encrypted if row["without_key"] == "accepted"]
    if accepted:
        sentences.append(f"Restored with a wrong key, which Aydın (2022) requires to fail ({len(accepted)} of "
                         f"{len(encrypted)}): {_names(accepted)}.")
    lost = [row for row in rows if row["restore"] == "failed"]
    if lost:
        sentences.append(f"Restores that LOST or changed data: {_names(lost)}.")
    elif any(row["restore"] for row in rows):
        sentences.append("Every restore brought back every row: row counts and checksums of every table "
                         "equal the original's.")
    blind = [row for row in rows if row["artifact"] == "inconclusive"]
    if blind:
        sentences.append(f"Backup scans without a positive control (no canary in an unencrypted backup, or "
                         f"no marker beside a sealed column): {_names(blind)}; their verdicts prove nothing.")
    sentences += _compression_sentences(rows)
    return sentences


def _compression_sentences(rows: list[dict[str, Any]]) -> list[str]:
    """Per engine and compressed method: how much the compressor shrank the backup without and
    with each encryption (encrypted data barely compresses)."""
    groups: dict[tuple[str, float, str], dict[str, float]] = defaultdict(dict)
    for row in rows:
        if row["compressed"] and row["ratio"] is not None and not math.isnan(row["ratio"]):
            groups[(row["engine"], row["scale"], row["method"])][row["encryption"]] = row["ratio"]
    sentences = []
    for (engine, _, method), ratios in sorted(groups.items()):
        if BASELINE not in ratios or len(ratios) < 2:
            continue
        others = ", ".join(f"{_ratio(ratio)} with {encryption}"
                           for encryption, ratio in sorted(ratios.items()) if encryption != BASELINE)
        sentences.append(f"{engine} {method}: compression shrank the backup {_ratio(ratios[BASELINE])} "
                         f"without encryption, {others}.")
    return sentences
