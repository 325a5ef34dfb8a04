"""The backup workload's part of the report (the backup tests of Madyatmadja et al. (2021),
Dolyetyus (n.d.) and Aydın (2022), docs/references.md): per engine, encryption and backup
method, how long the backup took and what it cost against no encryption, how large it is and
how well it compressed, whether it is encrypted at rest, whether its restore brought back every
row, and whether a restore with a wrong key was refused.

An engine at several memory_mb values is one configuration per value, each compared with `none`
at its own memory ("sqlite 2 MB" in sentences, a memory column in the tables).

Timings and sizes are the summary's medians (failed trials left out, as everywhere). The
categorical results come from every measured run, failed trials included, and the worst one
shows: a single plaintext artifact, lost restore or accepted wrong key is what a reader must see.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from tdebench.report.data.declared import BACKUP
from tdebench.report.data.records import BASELINE, PLACEBO, SummaryRecord, engine_label, memory_order, scale_text
from tdebench.report.sections import Content, block
from tdebench.report.summaries.tables import Column, Table, engine_columns, num, text
from tdebench.report.data.units import interval, mib, ms, percent, ratio, ratio_percent
from tdebench.results import BACKUP_FULL, BACKUP_FULL_COMPRESSED, BACKUP_LOGICAL, RunData

WORKLOAD = BACKUP.name
# how a sealed backup is named: its method and sealing (none: the tool's artifact as it is)
NONE, BACKUP_ENCRYPTIONS, split_test = BACKUP.unsealed, BACKUP.sealings, BACKUP.split_test
METHODS = (BACKUP_FULL, BACKUP_FULL_COMPRESSED, BACKUP_LOGICAL)
KIND = {BACKUP_FULL: "physical", BACKUP_FULL_COMPRESSED: "physical", BACKUP_LOGICAL: "logical"}
Config = tuple[str, int | None, str, float, str]
"""engine, its memory_mb, encryption, scale, test (a method, or "<method>+<cipher>")."""


CSV = "backups.csv"


def section(run: RunData, records: list[SummaryRecord]) -> Content | None:
    """The backups table, and the backup encryption table when the run sealed backups
    (backups.csv holds both tables' rows and every column), or None when it backed nothing up."""
    table = backups_table(run, records)
    if not table.rows:
        return None
    plain, sealed = views(table)
    blocks = (block(plain),) + ((block(sealed),) if sealed.rows else ())
    return Content(blocks, tuple(findings(table)), ((CSV, table),))


def _worst(answers: Iterable[str | None], order: tuple[str, ...]) -> str | None:
    """The first word of `order` any answer has (the worst), or None when there is none."""
    present = set(answers)
    return next((word for word in order if word in present), None)


def _answers(run: RunData) -> dict[tuple[Config, str], list[str | None]]:
    """Every measured (non-warm-up) answer of the encrypt, scan and restore steps, by
    configuration and step."""
    found: dict[tuple[Config, str], list[str | None]] = defaultdict(list)
    for m in run.measurements:
        if m.trial.workload == WORKLOAD and split_test(m.test)[0] in METHODS and not m.warmup:
            t = m.trial
            found[((t.engine, t.memory_mb, t.encryption, t.scale, m.test), m.step)].append(m.answer)
    return found


def _row(config: Config, figures: dict[tuple[str, str], SummaryRecord],
         answers: dict[tuple[Config, str], list[str | None]]) -> dict[str, Any]:
    engine, memory_mb, encryption, scale, test = config
    method, sealing_name = split_test(test)

    def median(step: str, metric: str) -> float | None:
        record = figures.get((step, metric))
        return record.summary.median if record else None

    def share_interval(step: str, metric: str) -> str | None:
        record = figures.get((step, metric))
        return interval(record.summary.ci_low, record.summary.ci_high, ratio_percent) if record else None

    backup = figures.get(("backup", "elapsed_s"))
    compressed = median("backup", "compressed")
    return {
        "engine": engine, "memory_mb": memory_mb, "encryption": encryption, "scale": scale, "method": method,
        "backup_encryption": sealing_name, "test": test,
        "kind": KIND[method], "compressed": None if compressed is None else bool(compressed),
        "n": backup.summary.n if backup else 0,
        "backup_s": median("backup", "elapsed_s"),
        "backup_overhead_pct": backup.overhead.pct if backup and backup.overhead else None,
        "backup_cpu_s": median("backup", "cpu_s"),
        "size_bytes": median("backup", "size_bytes"),
        "database_bytes": median("backup", "database_bytes"),
        "ratio": median("backup", "ratio"),
        "zero_share": median("backup", "zero_share"),
        "construction": _worst(answers.get((config, "encrypt"), ()), tuple(BACKUP.constructions.values())),
        "encrypt_s": median("encrypt", "elapsed_s"),
        "encrypt_cpu_s": median("encrypt", "cpu_s"),
        "time_share": median("encrypt", "time_share"),
        "time_share_ci": share_interval("encrypt", "time_share"),
        "cpu_share": median("encrypt", "cpu_share"),
        "cpu_share_ci": share_interval("encrypt", "cpu_share"),
        "sealed_bytes": median("encrypt", "size_bytes"),
        "decrypt_s": median("decrypt", "elapsed_s"),
        "artifact": _worst(answers.get((config, "scan"), ()), ("plaintext", "inconclusive", "encrypted")),
        "restore_s": median("restore", "elapsed_s"),
        "restore_cpu_s": median("restore", "cpu_s"),
        "restore": _worst(answers.get((config, "restore"), ()), ("failed", "ok")),
        "without_key": _worst(answers.get((config, "restore-without-key"), ()), ("accepted", "refused")),
        "compression_share": median("backup", "compression_elapsed_share"),
        "compression_cpu_share": median("backup", "compression_cpu_share"),
        "compression_share_shown": _with_interval(median("backup", "compression_elapsed_share"),
                                                  figures.get(("backup", "compression_elapsed_share"))),
        "time_share_shown": _with_interval(median("encrypt", "time_share"), figures.get(("encrypt", "time_share"))),
        "cpu_share_shown": _with_interval(median("encrypt", "cpu_share"), figures.get(("encrypt", "cpu_share"))),
    }


def backups_table(run: RunData, records: list[SummaryRecord]) -> Table:
    """One row per engine (and its memory_mb), encryption, scale, backup method and backup
    encryption, with every figure of both views (backups.csv: seconds and bytes)."""
    medians: dict[Config, dict[tuple[str, str], SummaryRecord]] = defaultdict(dict)
    for record in records:
        cell = record.cell
        if cell.workload == WORKLOAD and split_test(cell.test)[0] in METHODS:
            medians[(cell.engine, cell.memory_mb, cell.encryption, cell.scale, cell.test)][
                (cell.step, cell.metric)] = record
    answers = _answers(run)
    rows = [_row(config, medians.get(config, {}), answers) for config in set(medians) | {c for c, _ in answers}]
    rows.sort(key=lambda row: (row["engine"], memory_order(row["memory_mb"]), row["scale"],
                               METHODS.index(row["method"]), row["encryption"] != BASELINE, row["encryption"],
                               BACKUP_ENCRYPTIONS.index(row["backup_encryption"])))
    columns = (*engine_columns(rows), Column("encryption", "encryption"),
               num("scale", "scale", scale_text), Column("method", "method"),
               Column("backup_encryption", "backup encryption"), Column("construction", "construction"),
               *_PLAIN_COLUMNS[4:], num("compression_share", "compression share", ratio_percent),
               num("compression_cpu_share", "compression CPU share", ratio_percent), *_SEALED_ONLY)
    return Table("Backup and restore", columns, rows)


_PLAIN_COLUMNS = (
    Column("engine", "engine"), Column("encryption", "encryption"), num("scale", "scale", scale_text),
    Column("method", "method"), Column("kind", "kind"), Column("compressed", "compressed"), num("n", "n", text),
    num("backup_s", "backup (ms)", ms), num("backup_overhead_pct", "vs none", percent),
    num("backup_cpu_s", "CPU (ms)", ms), num("size_bytes", "size (MiB)", mib),
    num("database_bytes", "database (MiB)", mib), num("ratio", "compression", ratio),
    num("zero_share", "zeros", ratio_percent),
    Column("artifact", "backup at rest"), num("restore_s", "restore (ms)", ms),
    num("restore_cpu_s", "restore CPU (ms)", ms), Column("restore", "restore checked"),
    Column("without_key", "restore with a wrong key"))
_SEALED_ONLY = (
    num("encrypt_s", "encrypt (ms)", ms), num("encrypt_cpu_s", "encrypt CPU (ms)", ms),
    num("time_share", "share of time", ratio_percent), Column("time_share_ci", "time 95% CI"),
    num("cpu_share", "share of CPU", ratio_percent), Column("cpu_share_ci", "CPU 95% CI"),
    num("sealed_bytes", "sealed (MiB)", mib), num("decrypt_s", "decrypt (ms)", ms))
_SEALED_COLUMNS = (
    Column("engine", "engine"), Column("encryption", "encryption"), Column("method", "method"),
    Column("backup_encryption", "sealed with"), num("n", "n", text), num("backup_s", "backup (ms)", ms),
    num("encrypt_s", "encrypt (ms)", ms), num("time_share_shown", "share of time", text),
    num("cpu_share_shown", "share of CPU", text), num("sealed_bytes", "sealed (MiB)", mib),
    Column("artifact", "at rest"),
    Column("restore", "restore"), Column("without_key", "wrong key"))
"""What the report shows of a sealed backup (backups.csv has the rest: CPU in ms, the plain
size, the decryption's and the restore's time); scale only when the run has more than one."""


def _with_interval(value: float | None, record: SummaryRecord | None) -> str:
    """A share and its interval in one cell, in percent: "3.9% [2.7, 5.1]"."""
    if not _known(value):
        return "–"
    if record is None or math.isnan(record.summary.ci_low):
        return ratio_percent(value)
    return f"{ratio_percent(value)} [{record.summary.ci_low * 100:.1f}, {record.summary.ci_high * 100:.1f}]"


def views(table: Table) -> tuple[Table, Table]:
    """The two tables the report shows of backups.csv: every backup stored as its tool made it,
    and (empty unless the run sealed backups) the backup encryption table, where each sealed
    backup stands under the same method's plain one."""
    plain_rows = [row for row in table.rows if row["backup_encryption"] == NONE]
    sealed_groups = {_unsealed(r) for r in table.rows if r["backup_encryption"] != NONE}
    sealed_rows = [row for row in table.rows if _unsealed(row) in sealed_groups]
    plain = Table(
        "Backup and restore", (*engine_columns(plain_rows), *_PLAIN_COLUMNS[1:]), plain_rows,
        intro=("Each backup method of each engine, medians over the repetitions (Madyatmadja et al. "
               "(2021), Dolyetyus (n.d.) and Aydın (2022) measured backups with and without TDE, "
               "compressed and not). Backup at rest: the artifact, decompressed, scanned for the "
               "trial's canaries like the database itself."),
        note=("Backup and restore: elapsed time; CPU: the engine's processes plus the tools it ran "
              "(mariadb-backup, pg_basebackup, gzip, …). vs none: the backup's time against the same "
              "method without encryption. Compression: the artifact's decompressed size ÷ its size "
              "(gzip level 6 everywhere; 1.00× = uncompressed or incompressible). Zeros: the share of the "
              "decompressed backup in 4 KiB blocks of zero bytes, space the tool copied unwritten "
              "(preallocated extents, a system tablespace's free pages), which compresses to almost "
              "nothing whether the engine encrypts its pages or not. Backup at rest: "
              "encrypted (no canary found; under column encryption the sealed columns only), "
              "plaintext (a canary found), inconclusive (the unencrypted baseline showed none: the "
              "scan proves nothing). Restore checked: ok when every table's row count and "
              "order-independent checksum equal the original's after a restore into a fresh "
              "instance with the same key. Restore with a wrong key: refused when the restore, "
              "the start or reading the data failed; accepted when it gave back the data (– for "
              "no encryption: there is no key)."),
        empty="No backups were made in this run.")
    scales = (num("scale", "scale", scale_text),) if len({row["scale"] for row in sealed_rows}) > 1 else ()
    constructions = sorted({f"{r['backup_encryption']}: {r['construction']}" for r in sealed_rows
                            if r["construction"]})
    sealed = Table(
        "Backup encryption", (*engine_columns(sealed_rows), _SEALED_COLUMNS[1], *scales, *_SEALED_COLUMNS[2:]),
        sealed_rows,
        intro=("Each backup also sealed into one file with a fresh key of its own, as Aydın (2022) "
               "measured SQL Server's BACKUP … WITH ENCRYPTION (AES-128/192/256 and Triple DES), on "
               "databases with and without TDE, compressed and not: the engines here have no backup "
               "encryption of their own, so tdebench packs the artifact into a tar stream and "
               "encrypts it on the way to storage."),
        note=("Backup: the engine's tool, as in the table above (its own repetitions); encrypt: the "
              "sealing in tdebench's process, elapsed time (its CPU time, the opening's time, the "
              "plain backup's size and the restore's time are in backups.csv). "
              "Share of time (of CPU): the encryption's part of backup + encryption, median of each "
              "run's share [its 95% CI over the repetitions, in %]. Sealed with: the backup's own "
              "encryption (none: the artifact as the tool made it, the reference row); sealed: the "
              "file that goes to storage. At rest: the sealed file scanned as stored: no canary, no marker, no "
              "plaintext format's magic bytes. Restore: ok when decrypted, unpacked and restored into "
              "a fresh instance, every table's rows and checksum equal. Wrong key: refused when the "
              "sealed file did not authenticate (for a row sealed with none, the database's wrong key, "
              "as in the table above). Constructions: "
              + "; ".join(constructions or ["none ran"]) + "."),
        empty="No backup was sealed in this run.")
    return plain, sealed


def _unsealed(row: dict[str, Any]) -> tuple:
    """The backup a row seals (or is): engine, memory, encryption, scale and method."""
    return row["engine"], row["memory_mb"], row["encryption"], row["scale"], row["method"]


def _configured(row: dict[str, Any]) -> tuple[str, int, str]:
    """A row's engine as configured, for sentences: its name and memory ("sqlite 2 MB"), first in
    name and then in memory order."""
    return row["engine"], memory_order(row["memory_mb"]), engine_label(row["engine"], row["memory_mb"])


def _test_order(test: str) -> tuple[int, int]:
    method, sealing_name = split_test(test)
    return METHODS.index(method), BACKUP_ENCRYPTIONS.index(sealing_name)


def _names(rows: list[dict[str, Any]]) -> str:
    """The rows' configurations, compactly: per engine, the encryptions that share the same
    methods, e.g. "duckdb (logical: aes-256-ctr, aes-256-gcm; full, logical: fs-aes-256-gcm)"."""
    methods: dict[tuple[str, int, str], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for row in rows:
        methods[_configured(row)][row["encryption"]].add(row["test"])
    engines = []
    for (_, _, engine), by_encryption in sorted(methods.items()):
        groups: dict[tuple[str, ...], list[str]] = defaultdict(list)
        for encryption, names in sorted(by_encryption.items()):
            groups[tuple(sorted(names, key=_test_order))].append(encryption)
        parts = [f"{', '.join(names)}: {', '.join(encryptions)}" for names, encryptions in
                 sorted(groups.items(), key=lambda item: [_test_order(t) for t in item[0]])]
        engines.append(f"{engine} ({'; '.join(parts)})")
    return ", ".join(engines)


def findings(table: Table) -> list[str]:
    """Sentences for the report's findings, the plaintext backups of encrypted databases first."""
    rows = table.rows
    plain_rows = [row for row in rows if row["backup_encryption"] == NONE]
    sealed = [row for row in rows if row["backup_encryption"] != NONE]
    encrypted = [row for row in plain_rows if row["encryption"] not in (BASELINE, PLACEBO)]
    sentences = []
    plain = [row for row in encrypted if row["artifact"] == "plaintext"]
    if plain:
        sentences.append(f"Backups in PLAINTEXT although the database is encrypted ({len(plain)} of "
                         f"{len(encrypted)}): {_names(plain)}. Anyone holding them reads the data without "
                         "the key.")
    elif encrypted:
        sentences.append("Every backup of an encrypted database was encrypted at rest.")
    sentences += _sealed_sentences(sealed)
    accepted = [row for row in encrypted + sealed if row["without_key"] == "accepted"]
    if accepted:
        sentences.append(f"Restored with a wrong key, which Aydın (2022) requires to fail ({len(accepted)} of "
                         f"{len(encrypted) + len(sealed)}): {_names(accepted)}.")
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
    sentences += _compression_sentences(plain_rows)
    return sentences


def _sealed_sentences(sealed: list[dict[str, Any]]) -> list[str]:
    """Whether every sealed backup was encrypted at rest, and what sealing cost: per engine and
    method, the encryption's share of backup + encryption time with each algorithm, on the
    database without TDE where the run has it (the backup encryption's own cost)."""
    if not sealed:
        return []
    leaked = [row for row in sealed if row["artifact"] != "encrypted"]
    sentences = [f"Sealed backups NOT shown encrypted at rest ({len(leaked)} of {len(sealed)}): {_names(leaked)}."
                 if leaked else f"Every sealed backup was encrypted at rest ({len(sealed)}): no canary, marker "
                 "or plaintext format's magic bytes in the sealed files."]
    groups: dict[tuple, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for row in sealed:
        groups[(*_configured(row), row["scale"], row["method"])][row["encryption"]].append(row)
    for (_, _, engine, _, method), by_encryption in sorted(groups.items()):
        database = BASELINE if BASELINE in by_encryption else sorted(by_encryption)[0]
        shares = ", ".join(f"{row['backup_encryption']} {row['time_share_shown']}" for row in by_encryption[database])
        sentences.append(f"{engine} {method} (database {database}): encrypting the backup took this share of "
                         f"backup + encryption time (median [95% CI] in %): {shares}.")
    return sentences


def _compression_sentences(rows: list[dict[str, Any]]) -> list[str]:
    """Per engine and compressed method: how much the compressor shrank the backup without and
    with each encryption (encrypted data barely compresses), and its share of the compressed
    backup's time without encryption (against the same trial's uncompressed backup)."""
    groups: dict[tuple, dict[str, dict[str, Any]]] = defaultdict(dict)
    for row in rows:
        if row["compressed"] and _known(row["ratio"]):
            groups[(*_configured(row), row["scale"], row["method"])][row["encryption"]] = row
    sentences = []
    for (_, _, engine, _, method), by_encryption in sorted(groups.items()):
        if BASELINE not in by_encryption or len(by_encryption) < 2:
            continue
        baseline = by_encryption[BASELINE]
        zeros = all(_known(row.get("zero_share")) for row in by_encryption.values())
        others = ", ".join(f"{_shrank(row, zeros)} with {encryption}"
                           for encryption, row in sorted(by_encryption.items()) if encryption != BASELINE)
        took = (f" Compressing took {baseline['compression_share_shown']} of its time without encryption."
                if _known(baseline["compression_share"]) else "")
        said = ("; zeros: the share of a backup's bytes in 4 KiB blocks of zeros, unwritten space that "
                "compresses whatever the encryption; alone: how far those alone would shrink it" if zeros else "")
        sentences.append(f"{engine} {method}: compression shrank the backup {_shrank(baseline, zeros)} "
                         f"without encryption, {others}{said}.{took}")
    return sentences


def _known(value: float | None) -> bool:
    """A figure the run has: not missing (None) and not NaN."""
    return value is not None and not math.isnan(value)


def _shrank(row: dict[str, Any], zeros: bool) -> str:
    """A backup's compression ratio, and with `zeros` its blocks of zeros and how far those alone
    would shrink it (to nothing, the rest as it is: 1 ÷ the rest's share), so a reader sees whether
    an encrypted backup's compression is its data or its unwritten space: "4.86× (78.0% zeros,
    alone 4.55×)"."""
    if not zeros:
        return ratio(row["ratio"])
    share = row["zero_share"]
    alone = "without bound" if share >= 1 else ratio(1 / (1 - share))
    return f"{ratio(row['ratio'])} ({ratio_percent(share)} zeros, alone {alone})"
