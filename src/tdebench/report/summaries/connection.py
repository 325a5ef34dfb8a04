"""Per connection: what opening a connection costs under each encryption, apart from its queries.

An embedded engine's key derivation runs when a connection opens (SQLCipher's 256,000
PBKDF2-HMAC-SHA512 iterations, the other SQLite3MC ciphers' PBKDF2 or Argon2id, DuckDB's
ATTACH), never inside a query: an application that keeps its connections open pays it once, one
that opens a connection per request pays it every time. So it is a figure of its own, in
milliseconds per open, beside how the trial took its key (`TrialOutcome.key_form`) and when the
encryption turns it into its cipher's (`EncryptionFacts.key_taken`, as the run recorded it): a raw
key (a plan's key_form = "raw") skips the derivation; MariaDB takes its key once, when the server
starts, and gocryptfs derives its key once, when it mounts, so what their opens cost more than
none's is the connection's own work through the encryption (a file-system layer's reads), no key
derivation. The runner times OPENS opens per trial (test "open", step "connect"); their median is
the trial's value, and the rounds give the interval.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from tdebench.report.data.encryptions import known
from tdebench.report.data.records import (BASELINE, SummaryRecord, deterministic, engine_label, failed_trials, floors,
                                          scale_label)
from tdebench.report.summaries.tables import Column, Table, config_columns, n_text, num, reading, uses_memory
from tdebench.report.data.units import MS, interval, number, signed_ms, times
from tdebench.results import RAW, EncryptionFacts, RunData

OPEN_CELL = ("open", "connect", "elapsed_s")
"""The test, step and metric of a timed open (runner.OPENS of them per trial)."""
NOTE = ("Open: a new connection to the loaded database, up to its first answer (an embedded engine "
        "opens the file and derives the key; a server sets up a session), timed several times per "
        "trial, each trial's median counting once; 95% CI of the median over trials. Extra: the "
        "median open against none's. × none: the overhead's ratio, paired by round where the run ran "
        "rounds (its CI as in the Overhead table). Key: how the encryption takes the trial's key — "
        "derived on every open (SQLite3MC's key derivations, DuckDB's ATTACH: part of this figure), taken "
        "once when the server starts (MariaDB's key file) or derived once when the file-system layer mounts "
        "(gocryptfs's scrypt): part of no open timed after it, derived for every value (pgcrypto), or a raw "
        "key (a plan's key_form = \"raw\": no derivation).")


def _key_forms(run: RunData) -> dict[tuple, str]:
    """Per configuration (engine, encryption, workload, scale, memory_mb): how its trials took
    their key (`key_text`), joined ("" before key forms were recorded, or without a key)."""
    failed, encryptions = failed_trials(run), known(run)
    forms: dict[tuple, set[str]] = defaultdict(set)
    for outcome in run.trials:
        if outcome.trial not in failed and outcome.key_form:
            t = outcome.trial
            forms[(t.engine, t.encryption, t.workload, t.scale, t.memory_mb)].add(outcome.key_form)
    return {config: ", ".join(sorted(key_text(encryptions.get(config[0], config[1]), form) for form in found))
            for config, found in forms.items()}


def key_text(facts: EncryptionFacts | None, form: str) -> str:
    """A trial's key as the report names it: "raw key", else "key" and when the encryption takes
    it (its recorded `key_taken`: "key derived on every open", "key taken once, when the server
    starts"…); "passphrase key" where the run did not record it."""
    if form == RAW:
        return "raw key"
    taken = facts.key_taken if facts is not None else ""
    return f"key {taken}" if taken else f"{form} key"


def _rows(run: RunData, records: list[SummaryRecord]) -> list[dict[str, Any]]:
    opens = [r for r in records if (r.cell.test, r.cell.step, r.cell.metric) == OPEN_CELL]
    baselines = {r.cell.comparison: r for r in opens if r.cell.encryption == BASELINE}
    floor_of, forms = floors(records), _key_forms(run)
    rows = []
    for record in opens:
        cell, summary, compared = record.cell, record.summary, record.overhead
        baseline = baselines.get(cell.comparison)
        exact = compared is not None and baseline is not None and deterministic(record, baseline)
        rows.append({
            "engine": cell.engine_at_hosts, "memory_mb": cell.memory_mb, "encryption": cell.encryption,
            "workload": cell.workload, "scale": cell.scale,
            "key": forms.get((cell.engine, cell.encryption, cell.workload, cell.scale, cell.memory_mb), ""),
            "open": summary.median * MS,
            "ci": interval(summary.ci_low * MS, summary.ci_high * MS),
            "extra": (summary.median - baseline.summary.median) * MS if baseline and compared else None,
            "times": 1 + compared.pct / 100 if compared else None,
            "times_ci": (interval(1 + compared.ci_low / 100, 1 + compared.ci_high / 100, times)
                         if compared and not exact else ""),
            "reading": reading(record, exact, floor_of.get(cell.comparison)) if compared else "baseline",
            "n": n_text(compared) if compared else f"{summary.n} trials",
        })
    return rows




def connection_table(run: RunData, records: list[SummaryRecord]) -> Table | None:
    """The open's time per configuration, against none's; None when the run timed no open."""
    rows = _rows(run, records)
    if not rows:
        return None
    columns = config_columns(uses_memory(row["memory_mb"] for row in rows))
    if len({(row["workload"], row["scale"]) for row in rows}) == 1:
        columns = columns[:-2]
    columns += (Column("key", "key"), num("open", "open (ms, median)"), num("ci", "95% CI (ms)", str),
                num("extra", "extra per open (ms)", signed_ms), num("times", "× none", times),
                num("times_ci", "95% CI", str), Column("reading", "reading"), num("n", "n", str))
    return Table("Per connection", columns, rows, note=NOTE,
                 intro=("What opening one connection costs, apart from every query: where the key is derived, "
                        "and what an application that opens a connection per request pays each time."))


def findings(run: RunData, records: list[SummaryRecord]) -> list[str]:
    """One sentence per configuration whose open costs significantly more than none's."""
    sentences = []
    for row in _rows(run, records):
        if row["reading"] != "cost":
            continue
        key = f", {row['key']}" if row["key"] else ""
        where = (f"{engine_label(row['engine'], row['memory_mb'])} {row['encryption']} "
                 f"{row['workload']} {scale_label(row['workload'], row['scale'])}")
        sentences.append(f"{where}{key}: opening a connection takes {signed_ms(row['extra'])} ms more than without "
                         f"encryption ({number(row['open'])} ms, {times(row['times'])} none's); paid once per "
                         "connection, not per query (see “Per connection”).")
    return sorted(sentences)
