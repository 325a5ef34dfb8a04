"""The sections layer: the pieces a report is made of, and the one contract every way into it keeps
(here); the modules of this package are the sources (core.py, each workload's) and the documents
they make (document.py; compare.py, the comparison of two runs).

Everything a report holds beyond its first lines comes from a `Source`: a function `(run,
records) -> Content | None`, None when the run has nothing for it, else its blocks (h2
sections), sentences for the findings and the CSV files it writes, with the names of the CSV
files it may write declared beside it. A section with tables (report/sections/core.py's, each
workload's: report/sections/crud.py, oltp.py, backup.py, maintenance.py, strength.py), a source
of findings alone and the run's own CSV files (summary.csv, …) are all sources; document.SOURCES
lists every one of them once, in reading order, and the renderers and `build` walk what they
return without knowing where it came from: adding a section means writing its function and
adding one line to that list. `tdebench compare` keeps the same contract with a comparison for
its argument (compare.VIEWS), and both render through the same writers (report/writers/).
tests/unit/test_report_sources.py lists the sources and fails on a second way in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, ParamSpec

from tdebench.report.summaries import plots
from tdebench.report.data.records import SummaryRecord
from tdebench.report.summaries.tables import Table
from tdebench.results import RunData

FOLD_ABOVE = 10
"""A reference table longer than this many rows is folded in report.html (a <details> under its
one-line summary), so that it does not push the sections after it down the page."""


@dataclass(frozen=True)
class Part:
    """A table as a section shows it: open, or in report.html folded under its one-line summary;
    `markdown` False leaves it out of report.md (where its CSV holds the rows)."""

    table: Table
    folded: bool = False
    markdown: bool = True


@dataclass(frozen=True)
class Bullets:
    """Sentences as a list (a comparison's findings, what differs between two runs)."""

    items: tuple[str, ...]


@dataclass(frozen=True)
class Paragraph:
    """One sentence or more as a note (what a comparison says when nothing differs)."""

    text: str


Piece = Part | Bullets | Paragraph
"""What a block holds, in order; every writer draws each kind (markdown.py, html.py)."""


def long_part(table: Table) -> Part:
    """A reference table, folded when it is longer than FOLD_ABOVE rows."""
    return Part(table, folded=len(table.rows) > FOLD_ABOVE)


@dataclass(frozen=True)
class Block:
    """The content of one h2 of the report: its title, its tables, then its plots (document.Section
    adds the anchor once every title is known)."""

    title: str
    parts: tuple[Piece, ...] = ()
    figures: tuple[plots.Figure, ...] = ()


def block(*tables: Table, figures: list[plots.Figure] | tuple[plots.Figure, ...] = ()) -> Block:
    """A block titled after its first table, each table shown open."""
    return Block(tables[0].title, tuple(Part(table) for table in tables), tuple(figures))


@dataclass(frozen=True)
class Content:
    """What one section adds to a report: its blocks in reading order, sentences for the
    findings and its own CSV files (name → table: a workload's crud.csv, oltp.csv), written only
    when the section exists: a run without the workload gets no file of it, not a lone header."""

    blocks: tuple[Block, ...]
    findings: tuple[str, ...] = ()
    csvs: tuple[tuple[str, Table], ...] = ()


Arguments = ParamSpec("Arguments")
SectionFunction = Callable[[RunData, list[SummaryRecord]], "Content | None"]
"""A report's source: the run and its summary records in, its content out."""


@dataclass(frozen=True)
class Source(Generic[Arguments]):
    """One way into a document: the function that makes its content, and the name of every CSV
    file it may write (derived files: `run --force` removes them from runs older than
    manifests, report.DERIVED), which `check` holds it to."""

    content: Callable[Arguments, Content | None]
    csvs: tuple[str, ...] = ()

    def __call__(self, *args: Arguments.args, **kwargs: Arguments.kwargs) -> Content | None:
        return self.check(self.content(*args, **kwargs))

    def check(self, content: Content | None) -> Content | None:
        undeclared = [name for name, _ in content.csvs if name not in self.csvs] if content else []
        if undeclared:
            raise ValueError(f"{self.content.__qualname__} writes {', '.join(undeclared)}, which its Source does "
                             "not declare")
        return content


def findings_only(sentences: list[str]) -> Content | None:
    """The content of a source of findings alone (no section of its own); None without a sentence."""
    return Content(blocks=(), findings=tuple(sentences)) if sentences else None
