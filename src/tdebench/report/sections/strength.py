"""The strength workload's part of the report: what an attacker holding the files can
still do, per engine and encryption, beside the unencrypted baseline as the positive control.

- Repeated ciphertext: the share of 16-byte blocks and of pages of the closed database's files
  whose content occurs more than once (zeros left out), against random bytes of the same length;
- Tamper detection: what reading the rows gave with one byte of a data page flipped, and with one
  value changed by a known-plaintext forgery (in the database's file, and in a physical backup
  restored), and what the engine said;
- Old keys after a rekey: the old key against the rekeyed database, and against physical
  backups taken before and after the rekey.

Every figure is a record of what happened (counts and answers), never a timing: no statistics
beyond the median of the repetitions' shares. An outcome does not depend on the cache, so the
trials of an engine at several memory_mb values (the assess plans) count as more trials of each
encryption.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from tdebench.report.data.declared import STRENGTH
from tdebench.report.data.records import BASELINE, PLACEBO, SummaryRecord
from tdebench.report.sections import Content, block
from tdebench.report.summaries.tables import Column, Table
from tdebench.report.data.units import ratio_percent
from tdebench.results import Measurement, RunData

CSV = "strength.csv"
SPILL, REPEATS, TAMPER, FORGERY, OLD_KEY, _ = STRENGTH.tests
EXCESS = 0.01
"""A share of repeated blocks above the random reference's by more than this (1 point) is a finding."""


def _ours(run: RunData) -> list[Measurement]:
    """The workload's records, a placebo's left out (runs before plans ran the placebo with timed
    workloads only): none again tells nothing the baseline does not, and read as an encryption
    its plaintext repeats would be a finding."""
    return [m for m in run.measurements if m.trial.workload == STRENGTH.name and not m.warmup
            and m.test in STRENGTH.tests and m.trial.encryption != PLACEBO]


def _order(key: tuple[str, str]) -> tuple[str, bool, str]:
    return key[0], key[1] != BASELINE, key[1]


def _whole(value: float | None) -> str:
    """A count (a median of counts may end in .5)."""
    return "–" if value is None else f"{value:,.1f}".removesuffix(".0")


def _joined(values: list[str]) -> str:
    """The distinct answers of the repetitions, in the order first seen."""
    return ", ".join(dict.fromkeys(values))


def section(run: RunData, records: list[SummaryRecord]) -> Content | None:
    """The three tables (strength.csv: every record of the workload), or None without a strength test."""
    ours = _ours(run)
    if not ours:
        return None
    repeated, tampered, keys = repeats_table(ours), tamper_table(ours), old_key_table(ours)
    return Content(blocks=(block(repeated), block(tampered), block(keys)), csvs=((CSV, csv_table(ours)),),
                   findings=tuple(repeat_findings(repeated) + tamper_findings(tampered) + old_key_findings(keys)))


def _median(measurements: list[Measurement], metric: str) -> float | None:
    values = [m.metrics[metric] for m in measurements if metric in m.metrics]
    return statistics.median(values) if values else None


def repeats_table(ours: list[Measurement]) -> Table:
    cells: dict[tuple[str, str], dict[str, list[Measurement]]] = defaultdict(lambda: defaultdict(list))
    for m in ours:
        if m.test == REPEATS:
            cells[(m.trial.engine, m.trial.encryption)][m.step].append(m)
    rows = []
    for key in sorted(cells, key=_order):
        files, chance = cells[key]["database"], cells[key]["random"]
        pages, repeated_pages = _median(files, "pages"), _median(files, "repeated_pages")
        rows.append({"engine": key[0], "encryption": key[1], "n": len(files),
                     "mib": (_median(files, "bytes") or 0) / 1024 / 1024,
                     "blocks": _median(files, "repeated_block_share"),
                     "pages": None if pages is None else f"{_whole(repeated_pages)} of {_whole(pages)}",
                     "page_share": _median(files, "repeated_page_share"),
                     "random": _median(chance, "repeated_block_share")})
    columns = (Column("engine", "engine"), Column("encryption", "encryption"), Column("n", "n", numeric=True),
               Column("mib", "file (MiB)", numeric=True),
               Column("blocks", "repeated 16-byte blocks", ratio_percent, numeric=True),
               Column("pages", "repeated pages", numeric=True),
               Column("page_share", "repeated pages (share)", ratio_percent, numeric=True),
               Column("random", "random bytes: repeated blocks", ratio_percent, numeric=True))
    return Table("Repeated ciphertext", columns, rows,
                 intro="A table of identical rows and a table of distinct known rows, then the closed database's "
                       "file holding the identical rows (a server's tablespace or heap file; the cipher file behind "
                       "it on gocryptfs) cut into 16-byte blocks and into the engine's pages: the share whose "
                       "content occurs more than once, zeros left out. Equal ciphertext for equal "
                       "plaintext shows where the data repeats (and, for a reused key stream, the XOR of two "
                       "plaintexts); the baseline shows how much the plaintext itself repeats, random bytes of the "
                       "same length what chance gives.",
                 note="The engine's compression and page headers (row ids, checksums) make plaintext pages differ "
                      "even where the rows do not, so the page share can be low in the baseline too; the block "
                      "share is the sharper probe.",
                 empty="No repeats test in this run.")


def tamper_table(ours: list[Measurement]) -> Table:
    cells: dict[tuple[str, str], dict[str, list[Measurement]]] = defaultdict(lambda: defaultdict(list))
    for m in ours:
        if m.test in (TAMPER, FORGERY):
            cells[(m.trial.engine, m.trial.encryption)][m.test].append(m)
    rows = []
    for key in sorted(cells, key=_order):
        flipped = cells[key][TAMPER]
        forged = [m for m in cells[key][FORGERY] if m.step not in (STRENGTH.forged_backup, STRENGTH.forged_log)]
        copied = [m for m in cells[key][FORGERY] if m.step == STRENGTH.forged_backup]
        logged = [m for m in cells[key][FORGERY] if m.step == STRENGTH.forged_log]
        rows.append({"engine": key[0], "encryption": key[1], "n": len(flipped) or len(forged),
                     "result": _joined([m.answer or "" for m in flipped]) or None,
                     "tries": _median(flipped, "tries"),
                     "said": _joined([m.note or "" for m in flipped if m.note]) or None,
                     "forgery": _joined([m.answer or "" for m in forged]) or None,
                     "forgery_said": _joined([m.note or "" for m in forged if m.note]) or None,
                     "backup": _joined([m.answer or "" for m in copied]) or None,
                     "backup_said": _joined([m.note or "" for m in copied if m.note]) or None,
                     "log": _joined([m.answer or "" for m in logged]) or None,
                     "log_said": _joined([m.note or "" for m in logged if m.note]) or None,
                     "weak": key[1] != BASELINE and any(m.answer in STRENGTH.weak_classes
                                                        for m in flipped + forged + copied + logged)})
    columns = (Column("engine", "engine"), Column("encryption", "encryption"), Column("n", "n", numeric=True),
               Column("result", "flipped byte"), Column("tries", "pages tried", _whole, numeric=True),
               Column("said", "what the engine said", prose=True), Column("forgery", "forgery"),
               Column("forgery_said", "what the engine said to the forgery", prose=True),
               Column("backup", "forged backup"),
               Column("backup_said", "what the restore said to the forged backup", prose=True),
               Column("log", "forged WAL"), Column("log_said", "what the replay said to the forged WAL", prose=True))
    return Table("Tamper detection", columns, rows, alarm="weak",
                 intro="Flipped byte: one bit of one byte in the middle of a data page of the stopped database "
                       "flipped, the database opened again (a server started again) and every row read back (the pages "
                       "before it tried in turn while the read notices nothing: a freed page), then the byte "
                       "restored. Forgery: one stored value changed to another of tdebench's choice without the "
                       "key, by XORing their difference into the file at the offset an unencrypted twin of the "
                       "database holds the value at; under CBC, into the 16-byte block before the value's first, "
                       "which changes the value's bytes in that block exactly and garbles the block before (the row "
                       "chosen has free space there in the twin where one has: the note says what it held); a value "
                       "a column layer sealed on its own, in its stored message where the engine says the value lies, "
                       "into the value's last cipher block (CFB: only what follows it garbled, OpenPGP's MDC). "
                       "Forged WAL: the value committed again on a connection that leaves it in the engine's "
                       "write-ahead log (no checkpoint on closing), forged there at the offset the twin's log holds "
                       "it at (the log's unkeyed checksums recomputed), read back once the engine replays the log; "
                       "unsupported where tdebench cannot leave an engine's log at rest. "
                       "Forged backup: the same forgery in a physical backup of the "
                       "database, at the offset a backup of the twin holds the value at, restored into a fresh "
                       "database with the key and read back. Results: tag detects (refused by a keyed tag), refused "
                       "without a tag (refused by an unkeyed page checksum or the format's own consistency checks, "
                       "which whoever knows the layout can recompute or satisfy: what the engine said tells which), "
                       "forgeable (the chosen value read back, "
                       "nothing else changed), silently altered (rows read back changed), unchanged (the change "
                       "proved nothing), crashed; unsupported (the forgery): the twin does not store the value "
                       "verbatim, or the layer moves it (gocryptfs re-blocks the file; a column layer's log is not "
                       "tried). Forgery fixes any unkeyed page checksum whose formula is public (InnoDB's "
                       "CRC-32C, DuckDB's block checksum), as an attacker would.",
                 note="A random flip is the weak test: refused without a tag, a change made with the page "
                      "layout in hand (and any checksum recomputed) would be read as data. The baseline is the "
                      "positive control: its flipped byte must show, as a checksum's refusal or as altered rows, and "
                      "its forgery must be read back as forged.",
                 empty="No tamper or forgery test in this run.")


def old_key_table(ours: list[Measurement]) -> Table:
    cells: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for m in ours:
        if m.test == OLD_KEY:
            cells[(m.trial.engine, m.trial.encryption)][m.step].append(m.answer or "")
    rows = []
    for key in sorted(cells, key=_order):
        steps = cells[key]
        answers = [a for values in steps.values() for a in values]
        rows.append({"engine": key[0], "encryption": key[1],
                     "database": _joined(steps.get("database", [])) or None,
                     "before": _joined(steps.get("backup-before-rekey", [])) or None,
                     "after": _joined(steps.get("backup-after-rekey", [])) or None,
                     "weak": any(a in STRENGTH.old_key_weak for a in answers)})
    columns = (Column("engine", "engine"), Column("encryption", "encryption"),
               Column("database", "old key: the database"), Column("before", "backup before the rekey"),
               Column("after", "old key: backup after the rekey"))
    return Table("Old keys after a rekey", columns, rows, alarm="weak",
                 intro="The database's key changed by the engine's own rekey (as maintenance's rekey test does it), "
                       "then the old key tried on the database and on physical backups taken before and after.",
                 note="A backup taken before a rekey needs the old key, by design: a rekey reaches no copy already "
                      "made, so an old key must be kept as long as such a backup, and destroyed with it.",
                 empty="No old-key test in this run.")


def csv_table(ours: list[Measurement]) -> Table:
    """strength.csv: every record of the workload, one row each."""
    metrics = sorted({name for m in ours for name in m.metrics})
    columns = (Column("engine", "engine"), Column("encryption", "encryption"), Column("scale", "scale"),
               Column("repetition", "repetition"), Column("test", "test"), Column("step", "step"),
               Column("answer", "answer"), Column("note", "note"),
               *(Column(name, name, numeric=True) for name in metrics))
    rows: list[dict[str, Any]] = [{"engine": m.trial.engine, "encryption": m.trial.encryption,
                                   "scale": m.trial.scale, "repetition": m.trial.repetition, "test": m.test,
                                   "step": m.step, "answer": m.answer, "note": m.note, **m.metrics} for m in ours]
    return Table("Strength", columns, rows)


def repeat_findings(table: Table) -> list[str]:
    """An encryption whose files repeat blocks beyond chance: equal plaintext, equal ciphertext."""
    baseline = {row["engine"]: row["blocks"] for row in table.rows if row["encryption"] == BASELINE}
    return [f"{row['engine']} {row['encryption']}: {ratio_percent(row['blocks'])} of the 16-byte blocks of its "
            f"file repeat (unencrypted: {ratio_percent(baseline.get(row['engine']))}, random bytes: "
            f"{ratio_percent(row['random'])}): equal blocks show where the file's content repeats — equal "
            "ciphertext for equal plaintext, or plaintext the encryption leaves around its ciphertext (a column "
            "layer's row headers) (“Repeated ciphertext”)."
            for row in table.rows if row["encryption"] != BASELINE and row["blocks"] is not None
            and row["blocks"] > (row["random"] or 0.0) + EXCESS]


def _listed(places: list[str]) -> str:
    """"a", "a and in b", "a, in b and in c"."""
    return places[0] if len(places) == 1 else ", in ".join(places[:-1]) + " and in " + places[-1]


def tamper_findings(table: Table) -> list[str]:
    """Encryptions whose flipped byte was read as data or crashed the engine; a baseline that
    noticed nothing (the test had no power there)."""
    sentences = []
    for row in table.rows:
        forged = [where for where, column in (("its file", "forgery"), ("a physical backup", "backup"),
                                              ("its write-ahead log", "log"))
                  if row[column] == STRENGTH.forgeable]
        if forged and row["encryption"] != BASELINE:
            sentences.append(f"{row['engine']} {row['encryption']}: a known-plaintext forgery was accepted in "
                             f"{_listed(forged)}: one stored value changed to another of tdebench's choice "
                             "without the key, read back as forged (“Tamper detection”).")
        elif row["weak"]:
            sentences.append(f"{row['engine']} {row['encryption']}: a flipped byte in a data page was "
                             f"{row['result']} ({row['said'] or 'nothing said'}): the encryption does not "
                             "authenticate its pages (“Tamper detection”).")
        elif row["encryption"] == BASELINE and row["result"] == STRENGTH.unchanged:
            sentences.append(f"{row['engine']}: the flipped byte went unnoticed in the unencrypted baseline too, so "
                             "this run's tamper test proves nothing on it (“Tamper detection”).")
    return sentences


def old_key_findings(table: Table) -> list[str]:
    return [f"{row['engine']} {row['encryption']}: after a rekey, the old key still reads what it should not "
            f"(database: {row['database']}; backup after the rekey: {row['after'] or '–'}) (“Old keys after a "
            "rekey”)." for row in table.rows if row["weak"]]
