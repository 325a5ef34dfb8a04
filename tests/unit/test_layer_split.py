"""An fs-layer encryption's cost split in two (report/sections/layers.py): the bare layer against none,
and the cipher against the bare layer, each with its paired interval, on a fake lockstep run
whose true factors are known; and the passthrough modelled as a layer with no cipher."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from fakes import Shape, write_fake_run

from tdebench.engines import get_engine
from tdebench.report.sections import answer, headline
from tdebench.report import build
from tdebench.report.summaries import cache
from tdebench.report.data.encryptions import Known
from tdebench.report.sections.layers import CIPHER, LAYER, NEITHER, dominant, layer_share, split_rows
from tdebench.report.data.records import summary_records
from tdebench.stats import PAIRED, Overhead
from tdebench.store import read_run

PLAN = """\
name = "fuse-split"
repetitions = 6
cache = "warm"
order = "lockstep"

[[engines]]
name = "postgres"
encryptions = ["fs-passthrough", "fs-aes-256-gcm"]

[[workloads]]
name = "tpch"
scale = 0.01
tests = ["power"]
"""
LAYER_FACTOR, CIPHER_FACTOR = 1.50, 1.06  # the passthrough is 1.5x none; gocryptfs 1.06x the passthrough


def fake_run(directory: Path, settings: dict[str, tuple[float, float]]) -> None:
    write_fake_run(directory, PLAN, shape=Shape(settings={"postgres": settings}, repetitions=6, streams=(),
                                                placed=False, spread=0.005))


SPLIT = {"none": (1.0, 20.0), "fs-passthrough": (LAYER_FACTOR, 20.0),
         "fs-aes-256-gcm": (LAYER_FACTOR * CIPHER_FACTOR, 21.0)}


def test_each_part_is_a_paired_overhead_whose_interval_holds_the_true_factor(tmp_path: Path) -> None:
    fake_run(tmp_path, SPLIT)
    run = read_run(tmp_path)
    rows = {row["figure"]: row for row in split_rows(run, summary_records(run))}
    power = rows["power geomean"]
    assert power["encryption"] == "fs-aes-256-gcm" and power["bare"] == "fs-passthrough"
    assert power["method"] == PAIRED and power["n"] == 6
    for part, factor in (("layer", LAYER_FACTOR), ("cipher", CIPHER_FACTOR)):
        low, high = (float(bound.strip("[%]")) for bound in power[f"{part}_ci"].split(", "))
        assert low < (factor - 1) * 100 < high, (part, power)
    assert power["total"] == pytest.approx((LAYER_FACTOR * CIPHER_FACTOR - 1) * 100, abs=1.5)
    assert power["dominant"] == LAYER
    assert power["share"] == pytest.approx(math.log(LAYER_FACTOR) / math.log(LAYER_FACTOR * CIPHER_FACTOR), abs=0.03)


def test_the_report_has_the_split_with_its_intervals_and_says_which_part_dominates(tmp_path: Path) -> None:
    fake_run(tmp_path, SPLIT)
    build(tmp_path)
    markdown = (tmp_path / "report.md").read_text().replace("\\[", "[").replace("\\]", "]")  # markdown's escapes
    assert "## Layer and cipher" in markdown and "[Layer and cipher](#layer-and-cipher)" in markdown
    assert ("the layer alone (fs-passthrough against none) is +50.0% [" in markdown
            and "the cipher (fs-aes-256-gcm against fs-passthrough) +6.0% [" in markdown)
    assert "+6.0% [" in markdown and ": mostly the file-system layer (" in markdown
    assert "Layer and cipher" in (tmp_path / "report.html").read_text()


def test_a_cipher_that_dominates_is_called_so(tmp_path: Path) -> None:
    fake_run(tmp_path, {"none": (1.0, 20.0), "fs-passthrough": (1.02, 20.0), "fs-aes-256-gcm": (1.02 * 1.4, 21.0)})
    run = read_run(tmp_path)
    (power,) = [row for row in split_rows(run, summary_records(run)) if row["figure"] == "power geomean"]
    assert power["dominant"] == CIPHER


def test_a_run_without_the_bare_layer_has_no_split(tmp_path: Path) -> None:
    fake_run(tmp_path, {"none": (1.0, 20.0), "fs-aes-256-gcm": (1.6, 21.0)})
    run = read_run(tmp_path)
    assert split_rows(run, summary_records(run)) == []
    build(tmp_path)
    assert "Layer and cipher" not in (tmp_path / "report.md").read_text()


def overhead(pct: float, low: float, high: float) -> Overhead:
    return Overhead(pct=pct, ci_low=low, ci_high=high, p_value=0.01, n_baseline=5, n_treatment=5, method=PAIRED)


def test_a_part_dominates_only_when_the_intervals_do_not_overlap() -> None:
    assert dominant(overhead(50, 45, 55), overhead(6, 2, 10)) == LAYER
    assert dominant(overhead(6, 2, 10), overhead(50, 45, 55)) == CIPHER
    assert dominant(overhead(12, 8, 16), overhead(10, 5, 14)) == NEITHER


def test_the_layers_share_is_on_the_log_scale_and_only_for_two_costs() -> None:
    assert layer_share(overhead(100, 90, 110), overhead(100, 90, 110)) == pytest.approx(0.5)
    assert layer_share(overhead(50, 45, 55), overhead(6, 2, 10)) == pytest.approx(math.log(1.5) / math.log(1.59))
    assert layer_share(overhead(50, 45, 55), overhead(-3, -6, 0)) is None


def test_the_passthrough_is_a_layer_with_no_cipher() -> None:
    """No key, no cipher, expected plaintext (Encryption.encrypts), by name only; every engine with
    the fs layer lists it, and each fs-* encryption finds it as its bare layer."""
    engines = ("postgres", "mariadb", "duckdb", "sqlite")
    recorded = Known({(engine, name): facts for engine in engines
                      for name, facts in get_engine(engine).encryption_facts().items()}, {}, caveat="")
    bare_layer = recorded.bare_layer
    for engine in engines:
        listed = get_engine(engine).encryption("fs-passthrough")
        assert listed.layer == "fs" and not listed.encrypts and not listed.is_baseline
        assert listed.by_name_only and listed.cipher == "" and listed.covers == ()
        assert get_engine(engine).key_taken("fs-passthrough") == ""
        assert bare_layer(engine, "fs-aes-256-gcm") == bare_layer(engine, "fs-xchacha20-poly1305") == "fs-passthrough"
        assert bare_layer(engine, "none") is None and bare_layer(engine, "fs-passthrough") is None
    assert get_engine("postgres").encryption("fs-aes-256-gcm").encrypts
    assert get_engine("postgres").encryption("none").encrypts is False


def _said(directory: Path, memories: tuple[int, ...] | None = None) -> tuple[str, list[str], list[str], list[str]]:
    """What the answer table's cost cell of fs-aes-256-gcm, the headline's sentences, its glance and
    the cache findings say of a fake run written with `memories`."""
    run = read_run(directory)
    records = summary_records(run)
    rows = {row["encryption"]: row for row in answer.rows(run, records)}
    return (rows["fs-aes-256-gcm"]["cost"], headline.config_sentences(run, records),
            headline.glance(run, records).costs, cache.findings(run, headline.layer_bound_configs(run, records)))


def _figure(text: str, phrase: str) -> float:
    """The overhead that follows `phrase` in `text` ("mostly the cipher: +40.0% [" → 40.0)."""
    found = re.search(re.escape(phrase) + r" ([+-]\d+\.\d)% \[", text)
    assert found is not None, (phrase, text)
    return float(found.group(1))


def test_the_answer_and_the_headline_say_the_layer_dominates_where_the_passthrough_shows_it(tmp_path: Path) -> None:
    fake_run(tmp_path, SPLIT)
    cost, sentences, glance, _ = _said(tmp_path)
    assert _figure(cost, "(warm — mostly the file-system layer:") == pytest.approx(50.0, abs=0.5)
    assert cost.endswith("] of it without the cipher)")
    assert _figure(sentences[0], "(mostly the file-system layer:") == pytest.approx(50.0, abs=0.5)
    assert re.search(r"fs-aes-256-gcm \+5\d\.\d% \(mostly the file-system layer\)", glance[0])


def test_the_answer_and_the_headline_say_the_cipher_dominates_where_it_does(tmp_path: Path) -> None:
    fake_run(tmp_path, {"none": (1.0, 20.0), "fs-passthrough": (1.02, 20.0), "fs-aes-256-gcm": (1.02 * 1.4, 21.0)})
    cost, sentences, glance, _ = _said(tmp_path)
    assert _figure(cost, "mostly the cipher:") == pytest.approx(40.0, abs=0.5)
    assert cost.endswith("] on top of the layer without it)")
    assert _figure(sentences[0], "(mostly the cipher:") == pytest.approx(40.0, abs=0.5)
    assert "(mostly the cipher)" in glance[0]


def test_without_the_passthrough_no_part_is_said_to_dominate(tmp_path: Path) -> None:
    fake_run(tmp_path, {"none": (1.0, 20.0), "fs-aes-256-gcm": (1.6, 21.0)})
    cost, sentences, glance, _ = _said(tmp_path)
    assert cost.startswith("power test +") and "mostly" not in cost
    assert not any("mostly" in line for line in sentences + glance)


def test_pages_decrypted_again_is_said_only_where_the_layer_does_not_dominate(tmp_path: Path) -> None:
    """With the data larger than the engine's cache, the regime says pages are decrypted again on
    every read, unless the passthrough shows the file-system layer to be most of the cost."""
    write_fake_run(tmp_path, PLAN, memories=(16,), shape=Shape(settings={"postgres": SPLIT}, repetitions=6,
                                                               streams=(), placed=False, spread=0.005))
    cost, sentences, glance, findings = _said(tmp_path)
    assert "mostly the file-system layer" in cost
    assert "evicted pages read again through the file-system layer" in sentences[0]
    assert not any("decrypt" in line for line in sentences + glance + findings)
    assert any(cache.REREAD_VERB in line for line in findings)
    cipher_bound = tmp_path / "cipher"
    write_fake_run(cipher_bound, PLAN, memories=(16,), shape=Shape(
        settings={"postgres": {"none": (1.0, 20.0), "fs-passthrough": (1.02, 20.0),
                               "fs-aes-256-gcm": (1.02 * 1.4, 21.0)}},
        repetitions=6, streams=(), placed=False, spread=0.005))
    _, sentences, glance, findings = _said(cipher_bound)
    assert cache.SPILLS in sentences[0] and "pages decrypted on every read" in glance[0]
    assert any(cache.SPILLS_VERB in line for line in findings)
