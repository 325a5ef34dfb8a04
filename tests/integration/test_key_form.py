"""Costs per connection on real SQLite3MC: SQLCipher's key derivation shows as the open's own
figure with a passphrase and (nearly) vanishes with a raw key (key_form = "raw"), whose bytes,
derived from the trial's key, reach no output and no error."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from tdebench.cli import main
from tdebench.engines import get_engine
from tdebench.keys import KeySource, Secret
from tdebench.report.summaries.connection import OPEN_CELL
from tdebench.report.data.records import summary_records
from tdebench.store import read_run

pytestmark = pytest.mark.serial  # its runs time opens: alone, not beside another test (scripts/test.sh)

PLAN = '''name = "opens"
repetitions = 4
warmups = 0
seed = 3
order = "lockstep"

[[engines]]
name = "sqlite"
encryptions = ["none", "sqlcipher"]
key_form = "{key_form}"

[[workloads]]
name = "crud"
scale = 1000
tests = ["lookup"]
'''


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """One real run per key form, with a user key file so the keys can be checked for."""
    base = tmp_path_factory.mktemp("keyform")
    key_file = base / "secret.key"
    key_file.write_text("correct horse battery staple 0123456789\n")
    key_file.chmod(0o600)
    done = {}
    for form in ("passphrase", "raw"):
        plan = base / f"{form}.toml"
        plan.write_text(PLAN.format(key_form=form))
        result = CliRunner().invoke(main, ["run", str(plan), "--out", str(base / form), "--key-file", str(key_file),
                                           "--quiet"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        done[form] = (base / form, key_file)
    return done


def _extra_ms(out: Path) -> float:
    """sqlcipher's median open minus none's, in ms."""
    records = summary_records(read_run(out))
    opens = {r.cell.encryption: r.summary.median for r in records
             if (r.cell.test, r.cell.step, r.cell.metric) == OPEN_CELL}
    return (opens["sqlcipher"] - opens["none"]) * 1000


def test_the_kdf_is_a_figure_of_its_own_with_a_passphrase_and_gone_with_a_raw_key(runs) -> None:
    passphrase, raw = _extra_ms(runs["passphrase"][0]), _extra_ms(runs["raw"][0])
    assert passphrase > 40  # 256,000 PBKDF2-HMAC-SHA512 iterations: about 0.1-0.4 s here
    assert raw < passphrase / 5, (raw, passphrase)  # a derivation still run would make them equal
    for form, (out, _) in runs.items():
        assert {t.key_form for t in read_run(out).trials if t.trial.encryption == "sqlcipher"} == {form}
        report = (out / "report.md").read_text()
        shown = "raw key" if form == "raw" else "key derived on every open"
        assert "## Per connection" in report and f"| sqlite | sqlcipher | {shown} |" in report
    assert "sqlcipher crud 1,000 rows, key derived on every open: opening a connection takes" in \
        (runs["passphrase"][0] / "report.md").read_text()


def test_raw_keys_derived_from_the_trial_key_never_reach_the_outputs(runs) -> None:
    out, key_file = runs["raw"]
    keys = KeySource(key_file)
    trials = [t.trial for t in read_run(out).trials if t.trial.encryption == "sqlcipher"]
    assert trials
    secrets = [key_file.read_text().strip()]
    for trial in trials:
        key = keys.key_for(trial.id)
        secrets += [key.hex(), key.derive("sqlite3mc-raw-key/sqlcipher", 32).hex()]
    for path in (p for p in out.rglob("*") if p.is_file()):
        data = path.read_bytes()
        for secret in secrets:
            assert secret.encode() not in data and secret.upper().encode() not in data, path.name


def _fastest_open_s(database) -> float:
    times = []
    for _ in range(3):
        started = time.perf_counter()
        database.connect().close()
        times.append(time.perf_counter() - started)
    return min(times)


@pytest.mark.parametrize("name", [e.name for e in get_engine("sqlite").encryptions if e.raw_key_bytes])
def test_a_raw_key_skips_the_kdf_opens_what_it_encrypted_and_a_refusal_names_no_key(tmp_path: Path, name: str) -> None:
    """A raw key of the wrong length would be taken as a passphrase and derived like one: the open
    would still work, only as slowly, so the speed is what shows that SQLite3MC took it raw."""
    engine = get_engine("sqlite", key_form="raw")
    encryption = engine.encryption(name)
    key, other = Secret(bytes(range(32))), Secret(bytes(range(1, 33)))
    database = engine.provision(tmp_path / "raw", encryption, key)
    assert database.key_form == "raw"
    database.workspace.mkdir()
    database.create()
    slow = get_engine("sqlite").provision(tmp_path / "passphrase", encryption, key)
    slow.workspace.mkdir()
    slow.create()
    assert _fastest_open_s(database) < _fastest_open_s(slow) / 5
    assert database.opens_with(key) and not database.opens_with(other)
    wrong = engine.provision(tmp_path / "raw", encryption, other)
    with pytest.raises(RuntimeError) as refused:
        wrong.connect()
    raw_keys = [k.derive(f"sqlite3mc-raw-key/{name}", encryption.raw_key_bytes).hex() for k in (key, other)]
    assert "file is not a database" in str(refused.value)
    assert not any(s in str(refused.value).lower() for s in [key.hex(), other.hex(), *raw_keys])
    passphrase = get_engine("sqlite").provision(tmp_path / "raw", encryption, key)
    assert passphrase.key_form == "passphrase" and not passphrase.opens_with(key)  # the raw key is no passphrase
