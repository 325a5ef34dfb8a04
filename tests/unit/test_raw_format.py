"""The raw format's version (results.FORMAT, in manifest.json) and `results.upgrade`, the one
path by which a run an older tdebench wrote is read in the current shape."""

from __future__ import annotations

import json
from pathlib import Path

from tdebench.results import FORMAT, FileScan, Measurement, TrialKey, TrialOutcome, Verdict, from_json, to_json, upgrade
from tdebench.store import MANIFEST, RESULTS, ResultStore, format_version, read_run, record_written

KEY = TrialKey("duckdb", "none", "tpch", 0.01, 1)
OLD_SCAN = {"path": "db", "bytes": 8192, "hits": 0, "first_hit_offset": None, "entropy_mean": 7.9,
            "low_entropy_blocks": 0, "blocks": 2, "plaintext_header": None}
OLD_VERDICT = {"kind": "verdict", "trial": vars(KEY), "verdict": "encrypted", "expected": "encrypted",
               "files_scanned": 1, "bytes_scanned": 8192, "first_hit": None, "files": [OLD_SCAN]}


def test_a_new_run_records_the_format_and_keeps_it_as_files_are_added(tmp_path: Path) -> None:
    ResultStore(tmp_path).start("", {})
    assert format_version(tmp_path) == FORMAT == json.loads((tmp_path / MANIFEST).read_text())["format"]
    (tmp_path / "report.md").write_text("")
    record_written(tmp_path, [tmp_path / "report.md"])
    assert format_version(tmp_path) == FORMAT


def test_a_run_without_a_version_is_format_1(tmp_path: Path) -> None:
    assert format_version(tmp_path) == 1  # no manifest: a run from before manifests
    (tmp_path / MANIFEST).write_text('{"files": ["results.jsonl"]}\n')
    assert format_version(tmp_path) == 1  # a manifest from before the version


def test_format_1_scans_were_measured_over_every_block(tmp_path: Path) -> None:
    upgraded = upgrade(OLD_VERDICT, 1)
    assert upgraded["files"][0]["entropy_blocks"] == 2 and upgraded["files"][0]["kind"] == ""
    assert upgraded["transient"] == "" and OLD_VERDICT["files"][0] == OLD_SCAN  # the input is left as it was
    for name in ("plan.toml", "environment.json"):
        (tmp_path / name).write_text("{}" if name.endswith("json") else "")
    (tmp_path / RESULTS).write_text(json.dumps(OLD_VERDICT) + "\n")
    (verdict,) = read_run(tmp_path).verdicts
    assert verdict.files[0].entropy_blocks == 2


def test_upgrade_leaves_a_current_record_as_it_is() -> None:
    scan = FileScan("db", 8192, 0, None, 7.9, 0, 2, None, entropy_blocks=1, kind="data")
    for record in (Verdict(KEY, "encrypted", "encrypted", 1, 8192, None, files=(scan,)),
                   TrialOutcome(KEY, "ok", "warm", False, 1.0, load_start=0.5, cache_mb=64.0)):
        data = json.loads(json.dumps(to_json(record)))
        assert upgrade(data, 1) == data == upgrade(data, FORMAT)
        assert from_json(upgrade(data, 1)) == record


def test_a_format_2_verdict_did_not_record_the_captures_cpu() -> None:
    current = json.loads(json.dumps(to_json(Verdict(KEY, "encrypted", "encrypted", 1, 8192, None,
                                                    transient="none caught", capture_cpu_s=0.25))))
    older = {name: value for name, value in current.items() if name != "capture_cpu_s"}
    assert from_json(upgrade(older, 2)).capture_cpu_s is None
    assert upgrade(older, 1)["transient"] == "none caught"  # a field present is never changed
    assert from_json(upgrade(current, 2)).capture_cpu_s == 0.25


def test_a_format_3_trial_recorded_no_wait_for_a_quiet_machine() -> None:
    current = json.loads(json.dumps(to_json(TrialOutcome(KEY, "ok", "warm", False, 12.5, quiet_waited_s=30.0,
                                                         quiet_others_pct=4.5))))
    older = {name: value for name, value in current.items() if not name.startswith("quiet_")}
    upgraded = from_json(upgrade(older, 3))
    assert isinstance(upgraded, TrialOutcome) and (upgraded.quiet_waited_s, upgraded.quiet_others_pct) == (None, None)
    assert upgraded.elapsed_s == 12.5 and from_json(upgrade(current, 3)) == from_json(current)
    written = json.loads(json.dumps(to_json(Verdict(KEY, "encrypted", "encrypted", 1, 8192, None))))
    verdict = {name: value for name, value in written.items() if name != "capture_cpu_s"}
    assert from_json(upgrade(verdict, 2)).capture_cpu_s is None  # format 2's absences still filled in


def test_a_format_4_cold_trial_dropped_the_whole_os_cache() -> None:
    for cache, evicted in (("cold", "os"), ("warm", "")):
        current = json.loads(json.dumps(to_json(TrialOutcome(KEY, "ok", cache, cache == "cold", 3.0, evicted="files"))))
        older = {name: value for name, value in current.items() if name != "evicted"}
        upgraded = from_json(upgrade(older, 4))
        assert isinstance(upgraded, TrialOutcome) and upgraded.evicted == evicted  # before format 5: drop_caches
        assert from_json(upgrade(current, 4)) == from_json(current)  # a field present is never changed


def test_a_format_5_file_system_layers_file_kinds_read_as_not_recorded() -> None:
    """Before format 6 a gocryptfs cipher file's kind came from its encrypted name: "data", or a
    log for the layer's own log; the kinds an engine's names give (native TDE) stand."""
    scans = (FileScan("cipher/x", 8192, 0, None, 7.9, 0, 2, None, kind="data"),
             FileScan("gocryptfs.log", 100, 0, None, 4.0, 0, 1, None, kind="log"))
    for encryption, kinds in (("fs-aes-256-gcm", ["", ""]), ("aes-256-gcm", ["data", "log"])):
        key = TrialKey("duckdb", encryption, "tpch", 0.01, 1)
        current = json.loads(json.dumps(to_json(Verdict(key, "encrypted", "encrypted", 2, 8292, None, files=scans))))
        upgraded = from_json(upgrade(current, 5))
        assert isinstance(upgraded, Verdict) and [s.kind for s in upgraded.files] == kinds
        assert from_json(upgrade(current, FORMAT)) == from_json(current)


def test_a_format_5_steps_bytes_through_system_calls_are_not_read() -> None:
    """Before format 6 they counted the transient capture's scans and a layer's reads beside the
    engine's: no figure may read them as what the cipher handled; the storage bytes stand."""
    metrics = {"elapsed_s": 1.0, "read_bytes": 10.0, "write_bytes": 20.0, "read_chars": 30.0, "write_chars": 40.0}
    current = json.loads(json.dumps(to_json(Measurement(KEY, "power", "total", metrics))))
    assert from_json(upgrade(current, 5)).metrics == {"elapsed_s": 1.0, "read_bytes": 10.0, "write_bytes": 20.0}
    assert from_json(upgrade(current, FORMAT)).metrics == metrics
