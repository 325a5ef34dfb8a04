"""A workload's report section plugs in through one interface: a `Source` (its `section` and
the `CSV` it writes) in document.SOURCES. A made-up workload's section, registered the same way,
shows up in report.md, report.html, the findings, the manifest and its own CSV
with nothing else in report/ changed; and a run without it gets none of these."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from fakes import write_fake_run

from tdebench.report import build
from tdebench.report.sections import core, document
from tdebench.report.data.records import SummaryRecord
from tdebench.report.sections import Block, Content, Part, SectionFunction, Source, block
from tdebench.report.summaries.tables import Column, Table
from tdebench.results import RunData
from tdebench.store import manifest

CSV = "vacuum.csv"
SENTENCE = "Vacuum took 12% longer with aes-256-gcm."


def section(run: RunData, records: list[SummaryRecord]) -> Content | None:
    """A section built from the run itself (one row per engine), or None for a run with no trial."""
    engines = sorted({outcome.trial.engine for outcome in run.trials})
    if not engines:
        return None
    table = Table("Vacuum", (Column("engine", "engine", str),), [{"engine": e} for e in engines])
    detail = Table("Vacuum detail", (Column("engine", "engine in detail", str),), [{"engine": e} for e in engines])
    return Content(blocks=(block(table), Block("Vacuum, in detail", (Part(detail, markdown=False),))),
                   csvs=((CSV, table),), findings=(SENTENCE,))


def register(monkeypatch: pytest.MonkeyPatch, function: SectionFunction) -> None:
    """`function` as a workload's section: right after the per-query plots, with its CSV."""
    after = [source.content for source in document.SOURCES].index(core.per_query) + 1
    monkeypatch.setattr(document, "SOURCES", (*document.SOURCES[:after], Source(function, csvs=(CSV,)),
                                              *document.SOURCES[after:]))


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    register(monkeypatch, section)


def test_a_registered_section_reaches_every_output(registered: None, tmp_path: Path) -> None:
    write_fake_run(tmp_path)
    written = build(tmp_path)
    assert tmp_path / CSV in written and CSV in (manifest(tmp_path) or ())
    with (tmp_path / CSV).open(newline="") as fh:
        assert [row["engine"] for row in csv.DictReader(fh)] == ["duckdb", "sqlite"]
    markdown = (tmp_path / "report.md").read_text()
    html = (tmp_path / "report.html").read_text()
    for text in (markdown, html):
        assert SENTENCE in text  # in the findings
    assert "## Vacuum" in markdown and "[Vacuum](#vacuum)" in markdown  # a section with its contents link
    assert "## Vacuum, in detail" in markdown and "engine in detail" not in markdown  # a markdown=False part
    assert 'id="vacuum"' in html and 'id="vacuum-in-detail"' in html and "engine in detail" in html
    # after the per-query plots, before the resources, as every workload's section
    assert markdown.index("## Per-query") < markdown.index("## Vacuum") < markdown.index("## Resources")


def test_a_run_without_the_workload_gets_nothing_of_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    register(monkeypatch, lambda run, records: None)
    write_fake_run(tmp_path)
    written = build(tmp_path)
    assert not (tmp_path / CSV).exists() and tmp_path / CSV not in written
    assert "Vacuum" not in (tmp_path / "report.md").read_text()


def test_a_csv_its_source_does_not_declare_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every CSV a report writes is one report.DERIVED names, so `run --force` can remove it."""
    monkeypatch.setattr(document, "SOURCES", (*document.SOURCES, Source(section)))
    write_fake_run(tmp_path)
    with pytest.raises(ValueError, match="writes vacuum.csv, which its Source does not declare"):
        build(tmp_path)
