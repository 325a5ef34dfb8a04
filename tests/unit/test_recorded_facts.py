"""The report is a function of the stored run: what it says of an engine comes from the facts the
run recorded (results.ENGINE_FACTS, ENCRYPTIONS), never from the engine registry of the tdebench
that builds it, so a run of an engine this tdebench does not have reports like any other
(tests/unit/test_imports.py holds report/ to importing nothing of engines/)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from fakes import Shape, write_fake_run
from tdebench.engines import REGISTRY
from tdebench.report import build
from tdebench.results import (AT_MOUNT, ENCRYPTIONS, ENGINE_FACTS, ON_OPEN, EncryptionFacts, EngineFacts, Measurement,
                              TrialKey, to_json)

ENGINE = "vault"
PLAN = f"""\
name = "an engine this tdebench does not have"
repetitions = 6
cache = "warm"
order = "lockstep"
placebo = true

[[engines]]
name = "{ENGINE}"
encryptions = ["fs-passthrough", "fs-aes-256-gcm", "vault-gcm"]

[[workloads]]
name = "tpch"
scale = 0.01
tests = ["power"]
"""
DIFFERENCES = "vault pads every page to 8 KiB (the vault's own manual)"
FACTS = {
    ENGINE_FACTS: {ENGINE: asdict(EngineFacts(DIFFERENCES, default_cache_mb=48.0, default_cache_share=0.0))},
    ENCRYPTIONS: {ENGINE: {name: asdict(facts) for name, facts in {
        "none": EncryptionFacts("none", "", "", 0, ""),
        "fs-passthrough": EncryptionFacts("fs", "", "", 0, ""),
        "fs-aes-256-gcm": EncryptionFacts("fs", "aes-256-gcm", "", 4096, AT_MOUNT),
        "vault-gcm": EncryptionFacts("native", "aes-256-gcm", "", 1 << 20, ON_OPEN)}.items()}},
}
"""The facts a run of the vault engine recorded: its own GCM at 1 MiB pages (faster than none,
which its documented difference is named beside), and the file-system layer with its bare arm."""
SETTINGS = {"none": (1.0, 100.0), "fs-passthrough": (1.5, 100.0), "fs-aes-256-gcm": (1.59, 104.0),
            "vault-gcm": (0.85, 102.0)}
OPEN_S = {"none": 0.001, "fs-passthrough": 0.0012, "fs-aes-256-gcm": 0.0012, "vault-gcm": 0.051}


def _as_an_older_vault_stored_it(directory: Path) -> None:
    """Each trial took a passphrase, timed its database's creation and three opens (vault-gcm's
    derives its key there) as the runner does, and stored 0 for its default cache, as a run before
    trials recorded their default did."""
    results = directory / "results.jsonl"
    lines = []
    for line in (json.loads(text) for text in results.read_text().splitlines()):
        if line["kind"] == "trial":
            key = TrialKey(**line["trial"])
            lines.append(to_json(Measurement(key, "open", "create", {"elapsed_s": 0.01})))
            lines += [to_json(Measurement(key, "open", "connect", {"elapsed_s": OPEN_S.get(key.encryption, 0.001)},
                                          pass_number=opening)) for opening in (1, 2, 3)]
            line |= {"cache_mb": 0, "key_form": "passphrase" if key.encryption in OPEN_S else ""}
        lines.append(line)
    results.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _section(text: str, title: str) -> str:
    return text.split(f"## {title}\n")[1].split("\n## ")[0]


def _row(section: str, *cells: str) -> list[str]:
    """The cells of the table row of `section` holding every one of `cells`."""
    row = next(line for line in section.splitlines() if line.startswith("|") and all(c in line for c in cells))
    return [cell.strip() for cell in row.strip("|").split("|")]


def test_a_run_of_an_engine_this_tdebench_does_not_have_reports_from_its_recorded_facts(tmp_path: Path) -> None:
    assert ENGINE not in REGISTRY
    write_fake_run(tmp_path, PLAN, placebo=True, facts=FACTS,
                   shape=Shape(settings={ENGINE: SETTINGS}, repetitions=6, streams=(), placed=False, spread=0.005))
    _as_an_older_vault_stored_it(tmp_path)
    build(tmp_path)
    text = (tmp_path / "report.md").read_text()
    layers = _section(text, "Layer and cipher")  # the bare layer, known from the recorded layers alone
    assert _row(layers, ENGINE, "fs-aes-256-gcm")[4].startswith("+59.")
    cipher = _section(text, "Against the raw cipher")
    assert _row(cipher, "vault-gcm", "power")[3:5] == ["aes-256-gcm", "1,048,576"]  # the recorded page size
    assert _row(cipher, "fs-aes-256-gcm", "power")[3:5] == ["aes-256-gcm", "4,096"]
    assert "did not record its encryptions" not in cipher
    opens = _section(text, "Per connection")
    assert f"key {ON_OPEN}" in _row(opens, "vault-gcm") and f"key {AT_MOUNT}" in _row(opens, "fs-aes-256-gcm")
    fit = _section(text, "Cache fit")
    assert "48 MB (default, not recorded)" in _row(fit, "vault-gcm")  # the recorded default, said so
    findings = _section(text, "Findings")
    assert DIFFERENCES in next(line for line in findings.splitlines() if "vault-gcm" in line and "faster" in line)
