"""Against the raw cipher (report/summaries/cipher_cost.py): the cipher time the bytes read and written imply,
its share of the measured cost and the rest named from what the run measured, on hand-made runs
whose bytes, speeds and times are known; a run without the bytes says so."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from tdebench.run import setup as runsetup
from tdebench.engines import get_engine
from tdebench.report.summaries.cipher_cost import COVERED, KEY, NO_BYTES, WAIT, Parts, cipher_cost_table, rest, rows
from tdebench.report.data.encryptions import known
from tdebench.report.data.records import summary_records
from tdebench.report.summaries.tables import environment_table
from tdebench.results import (AT_MOUNT, ENCRYPTIONS, ENGINE_FACTS, ON_OPEN, RAW, CipherSpeed, EncryptionFacts,
                              Measurement, RunData, TrialKey, TrialOutcome, recorded_encryptions, recorded_engines)

MIB = 1 << 20
PLAN = 'name = "bytes"\norder = "lockstep"\n'
ROUNDS = 6
GCM = EncryptionFacts("native", "aes-256-gcm", "", 4096, ON_OPEN)
FS = EncryptionFacts("fs", "aes-256-gcm", "", 4096, AT_MOUNT)
PASSTHROUGH = EncryptionFacts("fs", "", "", 0, "")
NONE = EncryptionFacts("none", "", "", 0, "")


def fake_run(times: dict[str, tuple[float, float]], facts: dict[str, EncryptionFacts], io: bool = True,
             key_form: str = "passphrase", chars: dict[str, float] | None = None) -> RunData:
    """A lockstep run of "fake" (its encryptions `facts`, recorded) whose power test took `times`
    (encryption → (elapsed s, CPU s), their median in every configuration, ±0.1% from round to round) and
    read 800 MiB and wrote 200 MiB in every configuration (`io`; else no bytes recorded); each
    trial's open took 0.5 ms more per second of its power test beyond none's one second; and the
    machine encrypts with AES-256-GCM at 4,000 MiB/s on 4 KiB pages. `chars`: metrics of the bytes
    through system calls (`read_chars`, `layer_read_chars`, …) in MiB, recorded beside those."""
    run = RunData(directory=Path("."), plan_text=PLAN,
                  environment={"encryptions": {"fake": {name: asdict(found) for name, found in facts.items()}}})
    run.ciphers.append(CipherSpeed("aes-256-gcm", 4096, 4000.0, reused_context=True))
    for repetition in range(1, ROUNDS + 1):
        for encryption, (elapsed, cpu) in times.items():
            wobble = 1 + 0.001 * ((repetition + len(encryption)) % 3 - 1)  # -1, 0, +1 twice each: median 1
            key = TrialKey("fake", encryption, "tpch", 0.01, repetition)
            metrics = {"elapsed_s": elapsed * wobble, "cpu_s": cpu * wobble}
            if io:
                metrics |= {"read_bytes": 800.0 * MIB, "write_bytes": 200.0 * MIB}
            metrics |= {name: mib * MIB for name, mib in (chars or {}).items()}
            run.measurements.append(Measurement(key, "power", "total", metrics))
            run.measurements.append(Measurement(key, "open", "connect", {
                "elapsed_s": (0.0005 + 0.0005 * (elapsed - 1.0)) * wobble, "read_bytes": 0.0, "write_bytes": 0.0,
                **dict.fromkeys(chars or (), 0.0)}))
            run.trials.append(TrialOutcome(key, "ok", "warm", False, 10.0, key_form=key_form if encryption != "none"
                                           else ""))
    return run


def by_test(run: RunData) -> dict[tuple[str, str], dict]:
    return {(row["encryption"], row["test"]): row for row in rows(run, summary_records(run))}


def test_the_bytes_read_and_written_over_the_cipher_speed_are_the_cipher_time_and_its_share_of_the_cost() -> None:
    # 1,000 MiB at 4,000 MiB/s: 250 ms of cipher in a cost of 500 ms; CPU 400 ms over none's, 150 ms beyond the
    # cipher; 100 ms left, a fifth of the cost
    run = fake_run({"none": (1.0, 1.0), "aes-256-gcm": (1.5, 1.4)}, {"none": NONE, "aes-256-gcm": GCM})
    power = by_test(run)[("aes-256-gcm", "power")]
    assert power["bytes"] == 1000 * MIB and power["mib_per_s"] == 4000.0 and power["chunk"] == 4096
    assert power["cipher_s"] == pytest.approx(0.25)
    assert power["cost_s"] == pytest.approx(0.5, rel=0.01)
    low, high = power["cost_ci"]
    assert low < 0.5 < high and high - low < 0.05  # the overhead's paired interval, in seconds
    assert power["share"] == pytest.approx(0.5, rel=0.01)
    assert power["rest"] == "CPU beyond the cipher +150 ms; the rest, +100 ms: " + WAIT
    table = cipher_cost_table(run, summary_records(run))
    assert "the cipher's time is 0.0% to 50.0% of it" in table.intro  # the open reads and writes nothing
    assert not known(run).caveat  # the run recorded its encryptions


def test_the_bytes_are_what_passed_through_the_cipher_cached_or_not() -> None:
    """An engine decrypts every page it reads, from the disk or the OS cache (read_chars, not
    read_bytes); under a layer, its daemon does (layer_read_chars). An older run with storage
    bytes only is a lower bound, and the table says so."""
    chars = {"read_chars": 1600.0, "write_chars": 400.0, "layer_read_chars": 1200.0, "layer_write_chars": 200.0}
    facts = {"none": NONE, "aes-256-gcm": GCM, "fs-aes-256-gcm": FS}
    times = {"none": (1.0, 1.0), "aes-256-gcm": (1.5, 1.4), "fs-aes-256-gcm": (1.65, 1.2)}
    found = by_test(fake_run(times, facts, chars=chars))
    native = fake_run({name: times[name] for name in ("none", "aes-256-gcm")}, facts, io=False,
                      chars={"read_chars": 1600.0, "write_chars": 400.0})
    assert by_test(native)[("aes-256-gcm", "power")]["cipher_s"] == pytest.approx(0.5)  # 2,000 MiB at 4,000 MiB/s
    assert found[("fs-aes-256-gcm", "power")]["bytes"] == 1400 * MIB  # gocryptfs's own reads and writes
    assert "lower bound" not in cipher_cost_table(native, summary_records(native)).intro
    older = fake_run(times, facts)
    assert by_test(older)[("aes-256-gcm", "power")]["bytes"] == 1000 * MIB
    assert "cipher times are a lower bound" in cipher_cost_table(older, summary_records(older)).intro


def test_a_run_without_the_bytes_says_so_and_sets_no_size_against_the_cipher() -> None:
    run = fake_run({"none": (1.0, 1.0), "aes-256-gcm": (1.5, 1.4)}, {"none": NONE, "aes-256-gcm": GCM}, io=False)
    power = by_test(run)[("aes-256-gcm", "power")]
    assert power["rest"] == NO_BYTES
    assert {"bytes", "cipher_s", "share"}.isdisjoint(power)
    assert power["mib_per_s"] == 4000.0 and power["cost_s"] == pytest.approx(0.5, rel=0.01)  # what was measured stays
    assert "no size stands in for them" in cipher_cost_table(run, summary_records(run)).intro


def test_the_file_system_layer_is_named_with_its_cost_where_the_run_has_the_bare_layer() -> None:
    # the passthrough costs 400 ms alone; the cipher's 250 ms and the layer's 400 ms leave nothing of 650 ms
    facts = {"none": NONE, "fs-passthrough": PASSTHROUGH, "fs-aes-256-gcm": FS}
    run = fake_run({"none": (1.0, 1.0), "fs-passthrough": (1.4, 1.2), "fs-aes-256-gcm": (1.65, 1.2)}, facts)
    found = by_test(run)
    assert ("fs-passthrough", "power") not in found  # a layer without a cipher: no cipher to set against
    power = found[("fs-aes-256-gcm", "power")]
    assert power["share"] == pytest.approx(0.25 / 0.65, rel=0.01)
    assert power["rest"].startswith("the file-system layer +400 ms [+") and "(fs-passthrough against none)" in power[
        "rest"]
    assert "CPU beyond" not in power["rest"]  # CPU no more than the bare layer's
    assert WAIT not in power["rest"]  # the layer and the cipher explain the cost


def test_an_open_that_derives_the_key_names_the_key_derivation_and_a_raw_key_does_not() -> None:
    times = {"none": (1.0, 1.0), "aes-256-gcm": (3.0, 3.0)}  # the open: +1 ms against none's 0.5 ms
    passphrase = by_test(fake_run(times, {"none": NONE, "aes-256-gcm": GCM}))[("aes-256-gcm", "open")]
    assert passphrase["cipher_s"] == 0.0 and passphrase["share"] == 0.0
    assert passphrase["cost_s"] == pytest.approx(0.001, rel=0.02)
    assert passphrase["rest"] == KEY
    raw = by_test(fake_run(times, {"none": NONE, "aes-256-gcm": GCM}, key_form=RAW))[("aes-256-gcm", "open")]
    assert raw["rest"] == WAIT  # no key derived there, and nothing else measured: not separated


def test_the_rest_is_named_in_order_and_never_left_unnamed() -> None:
    assert rest(0.2, 0.3, Parts()) == COVERED
    assert rest(0.5, 0.1, Parts()) == WAIT
    assert rest(0.5, 0.1, Parts(cpu_extra_s=0.6)) == "CPU beyond the cipher +500 ms"  # more than the rest: all of it
    assert rest(0.5, 0.1, Parts(cpu_extra_s=0.3)) == "CPU beyond the cipher +200 ms; the rest, +200 ms: " + WAIT
    assert rest(0.5, 0.1, Parts(cpu_extra_s=0.08)) == WAIT  # no CPU beyond the cipher's
    assert rest(0.5, 0.1, Parts(cpu_extra_s=0.46)) == "CPU beyond the cipher +360 ms"  # 40 ms left: under a tenth
    assert rest(0.002, 0.0, Parts(key_on_open=True, cpu_extra_s=0.0015)) == f"{KEY} (CPU beyond the cipher +1.50 ms)"


def test_a_run_records_its_engines_and_encryptions_and_the_report_reads_them_back_not_in_the_environment_table(
) -> None:
    engines = {name: get_engine(name) for name in ("sqlite", "postgres")}
    environment = runsetup.environment(engines)
    stored = json.loads(json.dumps(environment))  # as environment.json holds it
    recorded = recorded_encryptions(stored)
    assert recorded == {(name, encryption): facts for name, engine in engines.items()
                        for encryption, facts in engine.encryption_facts().items()}
    assert recorded[("sqlite", "sqlcipher")] == EncryptionFacts("native", "aes-256-cbc", "HMAC-SHA512", 4096, ON_OPEN)
    assert recorded_engines(stored) == {name: engine.facts() for name, engine in engines.items()}
    run = RunData(directory=Path("."), plan_text=PLAN, environment=environment)
    assert not known(run).caveat and known(run).bare_layer("postgres", "fs-aes-256-gcm") == "fs-passthrough"
    keys = [row["key"] for row in environment_table(run).rows]
    assert "engines.sqlite" in keys and not any(key.startswith((ENCRYPTIONS, ENGINE_FACTS)) for key in keys)
    with pytest.raises(ValueError, match=r"encryptions\.sqlite\.rc4\.page_bytes: must be int"):
        recorded_encryptions({ENCRYPTIONS: {"sqlite": {"rc4": {**asdict(GCM), "page_bytes": "4096"}}}})
