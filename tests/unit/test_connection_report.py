"""The per-connection figure (report/summaries/connection.py): the open's time per encryption against
none's, with the key form each trial recorded, from hand-made records."""

from __future__ import annotations

from pathlib import Path

from tdebench.run import setup as runsetup
from tdebench.engines import PROVISIONED, get_engine
from tdebench.report.summaries.connection import connection_table, findings, key_text
from tdebench.report.sections.document import assemble
from tdebench.report.data.records import summary_records
from tdebench.results import AT_MOUNT, AT_START, ON_OPEN, PER_VALUE, Measurement, TrialKey, TrialOutcome
from tdebench.store import ResultStore, read_run

PLAN = 'name = "x"\norder = "lockstep"\n'
# seconds per open, per round: sqlcipher's passphrase runs its PBKDF2 on every open
OPENS = {"none": [0.0010, 0.0011, 0.0009, 0.0010], "sqlcipher": [0.300, 0.310, 0.305, 0.298],
         "chacha20-poly1305": [0.0011, 0.0010, 0.0010, 0.0011]}
FORMS = {"none": "", "sqlcipher": "passphrase", "chacha20-poly1305": "raw"}


def stored_run(tmp_path: Path, opens: dict[str, list[float]] = OPENS) -> object:
    store = ResultStore(tmp_path)
    store.start(PLAN, runsetup.engine_facts({"sqlite": get_engine("sqlite")}))  # as a run records them
    for encryption, values in opens.items():
        for round_number, value in enumerate(values, start=1):
            trial = TrialKey("sqlite", encryption, "tpch", 0.01, round_number)
            for opening in range(1, 4):  # three opens, the median counts: the middle one is the value
                store.append(Measurement(trial, "open", "connect", {"elapsed_s": value * opening / 2},
                                         pass_number=opening))
            store.append(Measurement(trial, "power", "q1", {"elapsed_s": 0.01}, answer="ok"))
            store.append(TrialOutcome(trial, "ok", "warm", False, 1.0, key_form=FORMS[encryption]))
    return read_run(tmp_path)


def test_each_encryption_s_open_against_none_s_with_its_key_form_and_interval(tmp_path: Path) -> None:
    run = stored_run(tmp_path)
    table = connection_table(run, summary_records(run))
    assert table is not None and table.title == "Per connection"
    rows = {row["encryption"]: row for row in table.rows}
    assert set(rows) == {"none", "sqlcipher", "chacha20-poly1305"}
    assert [rows[name]["key"] for name in ("sqlcipher", "chacha20-poly1305", "none")] == [
        "key derived on every open", "raw key", ""]
    assert abs(rows["sqlcipher"]["open"] - 302.5) < 0.01  # ms: the median of the trials' medians
    assert 290 < rows["sqlcipher"]["extra"] < 310 and rows["sqlcipher"]["reading"] == "cost"
    assert rows["sqlcipher"]["times_ci"].startswith("[") and rows["sqlcipher"]["n"] == "4 rounds"
    assert abs(rows["chacha20-poly1305"]["extra"]) < 0.2 and rows["chacha20-poly1305"]["reading"] != "cost"
    assert rows["none"]["reading"] == "baseline" and rows["none"]["extra"] is None
    sentences = findings(run, summary_records(run))
    assert len(sentences) == 1 and sentences[0].startswith(
        "sqlite sqlcipher tpch sf0.01, key derived on every open: opening a connection takes +302 ms more")


def test_the_report_has_the_section_only_for_a_run_that_timed_opens(tmp_path: Path) -> None:
    run = stored_run(tmp_path / "a")
    assert "Per connection" in [title for title, _ in assemble(run, summary_records(run)).contents]
    without = stored_run(tmp_path / "b", opens={})
    assert connection_table(without, summary_records(without)) is None


def test_an_open_is_said_to_derive_a_key_only_where_the_encryption_derives_one_on_open() -> None:
    """The io-bound report had said "passphrase key" of gocryptfs under PostgreSQL, whose key
    derivation ran when the layer mounted, before any timed open: what its opens cost more than
    none's is the connection's reads through the layer. Each encryption says when it takes the key,
    as a run records it."""

    def said(engine: str, encryption: str, form: str = "passphrase") -> str:
        return key_text(PROVISIONED[engine].encryption_facts()[encryption], form)

    assert said("sqlite", "sqlcipher") == f"key {ON_OPEN}"
    assert said("duckdb", "aes-256-gcm") == f"key {ON_OPEN}"
    assert said("mariadb", "aes-256-ctr") == f"key {AT_START}"
    assert said("postgres", "fs-aes-256-gcm") == f"key {AT_MOUNT}"
    assert said("sqlite", "fs-aes-256-gcm") == f"key {AT_MOUNT}"  # the layer's, not SQLite's
    assert said("postgres", "column-aes-256") == f"key {PER_VALUE}"
    assert said("sqlite", "sqlcipher", "raw") == "raw key"
    assert key_text(None, "passphrase") == "passphrase key"  # the run did not record the encryption
