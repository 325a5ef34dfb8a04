"""Every figure the docs quote from a published example run is what that example's stored results
give today, recomputed by tdebench's own report code and printed as the docs print it.

A figure carries a marker right after it, an HTML comment that names the example and the figure
(docs/design.md, "Figures in the docs", has the grammar):

    SQLite's AES-256-CBC costs +30.9% [+24.1, +38.0]<!-- fig quick sqlite aes-256-cbc power --> …

This test finds every marker in README.md and docs/**/*.md (the examples' generated report.md
aside), reads the example's raw data (docs/examples/NAME: results.jsonl.xz, plan.toml,
environment.json, from which tests/integration/test_examples.py rebuilds its report.md
unchanged), computes the figure with the report's functions (summary records, the placebo's
resolution, the cache-fit table, the per-connection table, the raw cipher figures) and its
formatting (report/data/units.py, the minus sign typeset as − as the docs write it), and fails
where the text before the marker does not end with it, and where a marker names an example, a
configuration or a figure that does not exist.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tdebench.cli.plans import builtin_plans
from tdebench.measure.environment import cpu_text
from tdebench.report.sections import backup, layers
from tdebench.report.summaries import connection, noise
from tdebench.report.summaries.cache import cache_fit_table
from tdebench.report.summaries.tables import overhead_table
from tdebench.report.summaries.cipher_cost import raw_speed
from tdebench.report.data.declared import timed
from tdebench.report.data.records import (PLACEBO, CellKey, SummaryRecord, headline_records, measured, resolution,
                                          summary_records)
from tdebench.report.data.units import (change, display_unit, mib, number, percent, ratio, ratio_percent, signed_ms,
                                        times)
from tdebench.results import RunData
from tdebench.stats import PAIRED, Overhead
from tdebench.plan import load_plan
from tdebench.store import PACKED_RESULTS, read_published

ROOT = Path(__file__).parents[2]
EXAMPLES = ROOT / "docs" / "examples"
MARKER = re.compile(r"<!-- fig (.*?) -->")
LOOK_BACK = 400
"""How much text before a marker is read: more than the longest figure with line breaks in it."""
HEADLINES = {"power": "power geomean", "throughput": "throughput total", "load": "data load elapsed",
             "size": "database size"}
"""A headline figure's word in a marker → its label in the report (workloads' `Headline.label`)."""
FIGURES = {*HEADLINES, "cost", "rounds", "trials", "busy", "data", "fit", "sizes", "open", "raw", "host", "sealed",
           "compression", "zeros"}
HOW = ("point", "floor", "median")
"""What may follow a headline's words: its overhead alone, the placebo's resolution, or the figure
itself (the median of the configuration's trials, `none`'s too, as the Overhead table gives it)."""
PARTS = ("layer", "cipher", "share")
"""What may follow a headline of an fs-layer encryption run beside its bare layer: the layer's part
(the bare layer against none), the cipher's (the encryption against the bare layer), the layer's
share of the cost (report/sections/layers.py)."""
RUN_WIDE = ("raw", "host")
"""Figures of the whole run, named without an engine."""
MEMORY = re.compile(r"(\d+)MB")
MINUS = "−"


class FigureError(Exception):
    """A marker that names no example, configuration or figure there is."""


def typeset(text: str) -> str:
    """The report's text as the docs print it: its minus signs as −."""
    return text.replace("-", MINUS)


@dataclass(frozen=True)
class Example:
    name: str
    run: RunData
    records: list[SummaryRecord]  # the headline figures and the connection's open, as the report states them


@functools.cache
def example(name: str) -> Example:
    directory = EXAMPLES / name
    if not (directory / PACKED_RESULTS).is_file():
        raise FigureError(f"no example {name!r} in docs/examples (there are {', '.join(example_names())})")
    run = read_published(directory)
    return Example(name, run, summary_records(run, keep=_quoted))


def _quoted(cell: CellKey) -> bool:
    """The cells the docs quote: the headline figures (as `tdebench compare` keeps them) and the open."""
    return noise.is_headline(cell) or (cell.test, cell.step, cell.metric) == connection.OPEN_CELL


def example_names() -> list[str]:
    return sorted(path.name for path in EXAMPLES.iterdir() if (path / PACKED_RESULTS).is_file())


@dataclass(frozen=True)
class Selection:
    """What a marker names before its figure: an engine, its memory_mb, an encryption; None: any."""

    engine: str | None = None
    memory_mb: int | None = None
    encryption: str | None = None
    memory_named: bool = False

    def takes(self, engine: str, memory_mb: int | None, encryption: str) -> bool:
        return ((self.engine is None or engine == self.engine)
                and (not self.memory_named or memory_mb == self.memory_mb)
                and (self.encryption is None or encryption == self.encryption))


def _spread(values: Iterable[tuple[float, str]]) -> str:
    """One figure, or the smallest and the largest of several as "LOW to HIGH"."""
    shown = [text for _, text in sorted(values)]
    if not shown:
        raise FigureError("names no figure the example has")
    return shown[0] if shown[0] == shown[-1] else f"{shown[0]} to {shown[-1]}"


def _headline(found: Example, chosen: Selection, word: str) -> list[SummaryRecord]:
    return [record for headline, record in headline_records(found.records)
            if headline.label == HEADLINES[word]
            and chosen.takes(record.cell.engine, record.cell.memory_mb, record.cell.encryption)]


def _cost(found: Example, chosen: Selection, test: str, step: str, metric: str | None,
          scale: str | None) -> list[SummaryRecord]:
    """The records of a workload's own headline figure (a crud operation, a backup and its restore:
    test and step; oltp's mix: its metric, tpm or nopm) of `metric` and at `scale` (any, if None)."""
    return [r for r in found.records
            if (r.cell.test, r.cell.step) == (test, step) and noise.is_headline(r.cell)
            and (metric is None or r.cell.metric == metric)
            and (scale is None or r.cell.scale == float(scale))
            and chosen.takes(r.cell.engine, r.cell.memory_mb, r.cell.encryption)]


def _one(records: list[SummaryRecord]) -> SummaryRecord:
    """The one record of an overhead the words name."""
    if len(records) != 1:
        raise FigureError(f"names {len(records)} overheads; name the engine, memory and encryption of one")
    return records[0]


def _with_interval(compared: Overhead) -> str:
    """An overhead with its 95% CI, as the report's sentences write it."""
    return typeset(change(compared.pct, compared.ci_low, compared.ci_high))


def _overhead(found: Example, chosen: Selection, records: list[SummaryRecord], how: str) -> str:
    """A headline's overhead against none with its 95% CI (`how` ""), its point ("point"), the
    placebo's resolution ("floor"), or one configuration's median ("median", `none`'s too); several
    configurations give a range of points or floors."""
    if how == "median":
        record = _one(records)
        unit, factor = display_unit(record.unit)
        return f"{number(record.summary.median * factor)} {unit}"
    records = [r for r in records if r.overhead is not None]
    if how == "floor":
        floors = [r for r in records if r.cell.encryption == PLACEBO]
        if not floors:
            raise FigureError("names a placebo's floor, and there is no placebo there")
        return _spread((resolution(r), f"±{resolution(r):.1f}%") for r in floors)
    if chosen.encryption is None:
        records = [r for r in records if r.cell.encryption != PLACEBO]
    if how == "point":
        return _spread((r.overhead.pct, typeset(percent(r.overhead.pct))) for r in records)  # type: ignore[union-attr]
    compared = _one(records).overhead
    assert compared is not None
    return _with_interval(compared)


def _part(found: Example, records: list[SummaryRecord], part: str) -> str:
    """One part of an fs-layer encryption's headline (PARTS), as the report's "Layer and cipher" states it."""
    record = _one([r for r in records if r.overhead is not None])
    split = layers.splits(found.run, found.records, [record]).get(record.cell)
    if split is None:
        raise FigureError(f"names the {part} of {record.cell.encryption}, which ran without its bare layer "
                          "beside it")
    if part == "share":
        if split.share is None:
            raise FigureError("names the layer's share, and not both parts are costs")
        return ratio_percent(split.share)
    return _with_interval(split.layer if part == "layer" else split.cipher)


def _rounds(found: Example, chosen: Selection) -> str:
    overheads = [r.overhead for r in _headline(found, chosen, "power") if r.overhead is not None]
    if any(o.method != PAIRED for o in overheads):
        raise FigureError("names rounds of a run that did not run in rounds")
    return _spread((o.n_treatment, str(o.n_treatment)) for o in overheads)


def _trials(found: Example, chosen: Selection, busy_only: bool) -> str:
    keys = ([load.trial for load in noise.trial_loads(found.run) if load.busy] if busy_only
            else [outcome.trial for outcome in found.run.trials])
    count = sum(chosen.takes(key.engine, key.memory_mb, key.encryption) for key in keys)
    return f"{count:,}"


def _cache_fit(found: Example, chosen: Selection, column: str, shown: Callable[[Any], str]) -> str:
    """A Cache fit figure of the timed workloads (not the strength tests' own small tables)."""
    table = cache_fit_table(found.run)
    rows = [row for row in (table.rows if table is not None else [])
            if chosen.takes(row["engine"], row["memory_mb"], row["encryption"]) and timed(row["workload"])]
    return _spread((row[column], shown(row[column])) for row in rows)


def _sizes(found: Example, chosen: Selection) -> str:
    """The database sizes after the load, every one a trial had ("332 or 396 MiB")."""
    sizes = {mib(m.metrics["size_bytes"]): m.metrics["size_bytes"] for m in measured(found.run)
             if (m.test, m.step) == ("load", "database") and "size_bytes" in m.metrics
             and chosen.takes(m.trial.engine, m.trial.memory_mb, m.trial.encryption)}
    if not sizes:
        raise FigureError("names no database size the example has")
    return " or ".join(sorted(sizes, key=sizes.__getitem__)) + " MiB"


def _open(found: Example, chosen: Selection) -> str:
    """What an open costs more than none's ("+207 ms"), as the "Per connection" table has it."""
    table = connection.connection_table(found.run, found.records)
    rows = [row for row in (table.rows if table is not None else [])
            if chosen.takes(row["engine"], row["memory_mb"], row["encryption"]) and row["extra"] is not None
            and timed(row["workload"])]
    return _spread((row["extra"], typeset(f"{signed_ms(row['extra'])} ms")) for row in rows)


def _raw(found: Example, cipher: str, page_bytes: str) -> str:
    """A raw cipher figure of the run, MiB/s at one page size as its report's table prints it."""
    speed = raw_speed(found.run.ciphers, cipher, int(page_bytes)) if page_bytes.isdigit() else None
    if speed is None or speed.chunk_bytes != int(page_bytes) or speed.mib_per_s is None:
        raise FigureError(f"names a raw {cipher} figure at {page_bytes} bytes, which the example did not measure")
    return number(speed.mib_per_s)


@functools.cache
def _backups(name: str) -> list[dict[str, Any]]:
    """The rows of an example's "Backup encryption" and "Backup and restore" tables."""
    run = example(name).run
    return backup.backups_table(run, summary_records(run)).rows


def _sealed(found: Example, chosen: Selection, method: str, cipher: str, what: str = "time") -> str:
    """A backup's own encryption (`cipher`, the backup_encryption) of one engine and encryption:
    its share of the backup and encryption's time (or CPU), as the "Backup encryption" table
    writes it, "69.3% [67.9, 70.3]"."""
    if chosen.engine is None or chosen.encryption is None:
        raise FigureError("sealed names one engine and encryption's backup: name both before it")
    rows = [row for row in _backups(found.name) if (row["engine"], row["encryption"], row["method"],
                                                   row["backup_encryption"]) == (chosen.engine, chosen.encryption,
                                                                                 method, cipher)
            and chosen.takes(row["engine"], row["memory_mb"], row["encryption"])]
    if len(rows) != 1:
        raise FigureError(f"names {len(rows)} backups sealed with {cipher} by {method}")
    return str(rows[0]["cpu_share_shown" if what == "cpu" else "time_share_shown"])


def _stored_backup(found: Example, chosen: Selection, method: str, column: str) -> float:
    """A column of one engine and encryption's backup by `method`, stored as the tool made it (the
    "Backup and restore" table's row)."""
    if chosen.engine is None or chosen.encryption is None:
        raise FigureError("a backup's figure names one engine and encryption's backup: name both before it")
    rows = [row for row in _backups(found.name) if (row["engine"], row["encryption"], row["method"],
                                                   row["backup_encryption"]) == (chosen.engine, chosen.encryption,
                                                                                 method, backup.NONE)
            and chosen.takes(row["engine"], row["memory_mb"], row["encryption"])]
    if len(rows) != 1:
        raise FigureError(f"names {len(rows)} backups by {method}")
    return float(rows[0][column])


def _selection(found: Example, words: list[str]) -> Selection:
    """The engine, memory and encryption at the front of `words` (taken from it), each checked
    against the configurations the example ran."""
    trials = [outcome.trial for outcome in found.run.trials]
    engine = memory = encryption = None
    if words and words[0] not in FIGURES:
        engine = words.pop(0)
        if engine not in {t.engine for t in trials}:
            raise FigureError(f"{found.name} ran no engine {engine!r}")
    named = bool(words) and MEMORY.fullmatch(words[0]) is not None
    if named:
        memory = int(MEMORY.fullmatch(words.pop(0)).group(1))  # type: ignore[union-attr]
    if words and words[0] not in FIGURES:
        encryption = words.pop(0)
    chosen = Selection(engine, memory, encryption, named)
    if (named or encryption) and not any(chosen.takes(t.engine, t.memory_mb, t.encryption) for t in trials):
        named_words = (engine, f"{memory} MB" if named else None, encryption)
        raise FigureError(f"{found.name} ran no {' '.join(word for word in named_words if word)}")
    return chosen


def _takes(word: str, args: list[str]) -> bool:
    """Whether a figure's words after it are its own: a headline's "point" or "floor", raw's
    cipher and page size, nothing for the others."""
    if word in HEADLINES:
        return args == [] or (len(args) == 1 and args[0] in HOW + PARTS)
    if word == "cost":  # TEST STEP [METRIC] [SCALE] [point|floor|median]
        return _cost_words(args) is not None
    if word == "sealed":  # METHOD CIPHER [cpu]
        return len(args) == 2 or (len(args) == 3 and args[2] == "cpu")
    if word in ("compression", "zeros"):  # METHOD
        return len(args) == 1
    return len(args) == (2 if word == "raw" else 0)


def _cost_words(args: list[str]) -> tuple[str, str, str | None, str | None] | None:
    """`cost`'s words after it, TEST STEP [METRIC] [SCALE] (a trailing point or floor aside): the
    metric where the step has several headline figures (oltp's `tpm` and `nopm`), the scale where
    the run had several; None where they are not that."""
    own = args[:-1] if args and args[-1] in HOW else args
    if len(own) < 2:
        return None
    test, step, *rest = own
    metric = rest.pop(0) if rest and not rest[0].replace(".", "", 1).isdigit() else None
    scale = rest.pop(0) if rest and rest[0].replace(".", "", 1).isdigit() else None
    return None if rest else (test, step, metric, scale)


def figure(spec: str) -> str:
    """The figure a marker's words name, as the docs print it."""
    name, *words = spec.split()
    found = example(name)
    chosen = _selection(found, words)
    if not words or words[0] not in FIGURES:
        raise FigureError(f"names no figure: {' '.join(words) or 'nothing'} (figures: {', '.join(sorted(FIGURES))})")
    word, *args = words
    if word in RUN_WIDE and chosen != Selection():
        raise FigureError(f"{word} is a figure of the whole run: name no engine before it")
    if not _takes(word, args):
        takes = ("point, floor, median, layer, cipher, share or nothing" if word in HEADLINES
                 else "CIPHER BYTES" if word == "raw"
                 else "TEST STEP [METRIC] [SCALE] [point|floor|median]" if word == "cost"
                 else "METHOD CIPHER [cpu]" if word == "sealed"
                 else "METHOD" if word in ("compression", "zeros")
                 else "nothing")
        raise FigureError(f"{word} takes {takes} after it, not {' '.join(args) or 'nothing'}")
    if word in HEADLINES and args and args[0] in PARTS:
        return _part(found, _headline(found, chosen, word), args[0])
    if word in HEADLINES:
        return _overhead(found, chosen, _headline(found, chosen, word), args[0] if args else "")
    if word == "cost":
        how = args[-1] if args[-1] in HOW else ""
        cost = _cost_words(args)
        assert cost is not None  # _takes checked it
        return _overhead(found, chosen, _cost(found, chosen, *cost), how)
    computed: dict[str, Callable[[], str]] = {
        "rounds": lambda: _rounds(found, chosen),
        "trials": lambda: _trials(found, chosen, busy_only=False),
        "busy": lambda: _trials(found, chosen, busy_only=True),
        "data": lambda: _cache_fit(found, chosen, "size", lambda size: f"{number(size)} MiB"),
        "fit": lambda: _cache_fit(found, chosen, "times", times),
        "sizes": lambda: _sizes(found, chosen),
        "open": lambda: _open(found, chosen),
        "raw": lambda: _raw(found, *args),
        "host": lambda: cpu_text(found.run.environment),
        "sealed": lambda: _sealed(found, chosen, *args),
        "compression": lambda: ratio(_stored_backup(found, chosen, args[0], "ratio")),
        "zeros": lambda: ratio_percent(_stored_backup(found, chosen, args[0], "zero_share")),
    }
    return computed[word]()


# --- the docs' markers -----------------------------------------------------------------------


@dataclass(frozen=True)
class Marker:
    path: Path
    line: int
    spec: str
    before: str  # the text before the marker, its whitespace collapsed

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def documents() -> list[Path]:
    """README.md and every Markdown file under docs/, the examples' generated reports aside."""
    generated = {EXAMPLES / name / "report.md" for name in example_names()}
    return [ROOT / "README.md"] + sorted(path for path in (ROOT / "docs").rglob("*.md") if path not in generated)


def markers_in(path: Path, text: str) -> list[Marker]:
    found = []
    for match in MARKER.finditer(text):
        before = " ".join(text[max(0, match.start() - LOOK_BACK):match.start()].split())
        found.append(Marker(path, text.count("\n", 0, match.start()) + 1, match.group(1).strip(), before))
    return found


MARKERS = [marker for path in documents() for marker in markers_in(path, path.read_text(encoding="utf-8"))]


def reads_as(before: str, expected: str) -> bool:
    """Whether the text before a marker ends with the figure, and with all of it: not "15" for 5."""
    if not before.endswith(expected):
        return False
    previous = before[:-len(expected)][-1:]
    return not (previous.isalnum() or previous in "+−-.,±")


def test_the_docs_quote_every_example_by_marker() -> None:
    cited = {marker.spec.split()[0] for marker in MARKERS}
    assert set(example_names()) <= cited, f"no marker cites {sorted(set(example_names()) - cited)}"


@pytest.mark.parametrize("marker", MARKERS, ids=lambda marker: f"{marker.where} {marker.spec}")
def test_a_doc_figure_is_what_its_example_holds(marker: Marker) -> None:
    try:
        expected = figure(marker.spec)
    except FigureError as error:
        pytest.fail(f"{marker.where}: <!-- fig {marker.spec} --> {error}")
    assert reads_as(marker.before, expected), (
        f"{marker.where}: the docs say …{marker.before[-60:]!r} where {marker.spec!r} is {expected!r}")


# --- the check itself --------------------------------------------------------------------------


@pytest.mark.parametrize("spec, why", [
    ("old-demo sqlite sqlcipher power", "no example 'old-demo'"),
    ("quick mysql aes-256-cbc power", "quick ran no engine 'mysql'"),
    ("quick sqlite aes-512-cbc power", "quick ran no sqlite aes-512-cbc"),
    ("quick sqlite 64MB aes-256-cbc power", "quick ran no sqlite 64 MB aes-256-cbc"),
    ("quick sqlite power", "overheads; name the engine, memory and encryption of one"),
    ("quick sqlite aes-256-cbc speed", "names no figure: speed"),
    ("quick sqlite aes-256-cbc power mean",
     "power takes point, floor, median, layer, cipher, share or nothing after it, not mean"),
    ("quick sqlite none power", "names 0 overheads"),
    ("quick sqlite aes-256-cbc power cipher", "ran without its bare layer beside it"),
    ("quick raw aes-256-gcm", "raw takes CIPHER BYTES after it, not aes-256-gcm"),
    ("at-rest mariadb power floor", "there is no placebo there"),
    ("quick raw aes-256-gcm 12345", "did not measure"),
    ("quick sqlite aes-256-cbc cost",
     "cost takes TEST STEP [METRIC] [SCALE] [point|floor|median] after it, not nothing"),
    ("quick sqlite aes-256-cbc cost power geomean elapsed_s 0.01 x", "cost takes TEST STEP [METRIC] [SCALE]"),
    ("quick sqlite aes-256-cbc cost power geomean nopm", "names 0 overheads"),
    ("quick sqlite aes-256-cbc cost power nothing", "names 0 overheads"),
    ("quick sqlite host", "name no engine before it"),
    ("backup-encryption duckdb sealed full aes-256", "name both before it"),
    ("quick sqlite aes-256-cbc sealed full aes-256", "names 0 backups sealed with aes-256 by full"),
    ("backup-encryption duckdb none sealed full", "sealed takes METHOD CIPHER [cpu] after it"),
    ("backup-encryption mariadb zeros full-compressed", "name both before it"),
    ("backup-encryption mariadb aes-256-cbc zeros logical", "names 0 backups by logical"),
    ("backup-encryption mariadb aes-256-cbc compression", "compression takes METHOD after it"),
])
def test_a_marker_naming_what_does_not_exist_fails(spec: str, why: str) -> None:
    with pytest.raises(FigureError, match=re.escape(why)):
        figure(spec)


def test_a_median_is_the_overhead_tables_figure_of_that_configuration() -> None:
    """The quick example's SQLite power test, without a key and with AES-256-CBC, as the report's
    Overhead table gives them (`none (median)` and `median`, in ms)."""
    found = example("quick")
    rows = [row for row in overhead_table(found.records).rows
            if row["engine"] == "sqlite" and row["encryption"] == "aes-256-cbc" and row["figure"] == "power geomean"]
    assert len(rows) == 1 and rows[0]["unit"] == "ms"
    assert figure("quick sqlite none power median") == f"{number(rows[0]['baseline'])} ms"
    assert figure("quick sqlite aes-256-cbc power median") == f"{number(rows[0]['median'])} ms"
    assert rows[0]["median"] > rows[0]["baseline"]


def test_a_figure_edited_in_the_docs_no_longer_reads_as_its_example() -> None:
    """The quick example's SQLite AES-256-CBC, as claims.md might quote it, right and then with
    one digit changed; and a shorter figure that the text ends with only inside a longer one."""
    expected = figure("quick sqlite aes-256-cbc power")
    assert expected.startswith("+") and expected.endswith("]") and MINUS not in expected
    assert reads_as("AES-256-CBC's power test " + expected, expected)
    assert not reads_as("AES-256-CBC's power test " + expected.replace("+", "+1", 1), expected)
    trials = figure("quick trials")
    assert reads_as(f"in {trials}", trials) and not reads_as(f"in 1{trials}", trials)


def test_a_workloads_own_figure_by_test_and_step_is_the_headline_it_names() -> None:
    """`cost TEST STEP` names any headline cell (a crud operation, a backup's restore); on TPC-H's
    power test it is the `power` headline, with its point and floor alike."""
    for how in ("", " point"):
        assert (figure(f"quick sqlite aes-256-cbc cost power geomean{how}")
                == figure(f"quick sqlite aes-256-cbc power{how}"))
    assert figure("quick sqlite cost power geomean 0.01 floor") == figure("quick sqlite power floor")


def test_an_fs_layer_costs_layer_part_is_its_bare_layers_own_overhead() -> None:
    """The io-bound example ran PostgreSQL on gocryptfs beside its bare FUSE layer: the `layer` part
    of gocryptfs's figure is the passthrough's overhead against none, and the parts multiply to the whole."""
    for word in ("power", "load"):
        assert (figure(f"io-bound postgres fs-aes-256-gcm {word} layer")
                == figure(f"io-bound postgres fs-passthrough {word}"))
    point = {part: float(figure(f"io-bound postgres fs-aes-256-gcm power {part}").split("%")[0]) for part in
             ("layer", "cipher")}
    whole = float(figure("io-bound postgres fs-aes-256-gcm power point").rstrip("%"))
    assert (1 + point["layer"] / 100) * (1 + point["cipher"] / 100) == pytest.approx(1 + whole / 100, abs=0.02)


def host_of(name: str) -> str:
    """An example's host as a plan's `measured_host` names it: the CPU with its crypto flags and
    the raw AES-256-GCM speed on 1 MiB pages (a run that measured only other ciphers: the first
    of them on its largest pages)."""
    ciphers = sorted({speed.cipher for speed in example(name).run.ciphers if speed.available})
    cipher = "aes-256-gcm" if "aes-256-gcm" in ciphers else ciphers[0]
    largest = max(s.chunk_bytes for s in example(name).run.ciphers if s.cipher == cipher and s.available)
    return f"{figure(f'{name} host')}; raw {cipher.upper()} {figure(f'{name} raw {cipher} {largest}')} MiB/s"


PUBLISHED = {name: match.group(1) for name, path in builtin_plans().items()
             if (match := re.search(r"docs/examples/([\w-]+)", load_plan(path).measured))}
"""The built-in plans whose timed run is a published example, by the example's name."""


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_a_plan_timed_by_a_published_run_names_that_runs_host(name: str) -> None:
    """`tdebench plans` says on what host a plan was timed: where that run is published, its
    `measured_host` is the example's own, so the two cannot drift apart."""
    assert load_plan(builtin_plans()[name]).measured_host == host_of(PUBLISHED[name])
