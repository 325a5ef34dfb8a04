"""The pieces a report is made of, and the one contract every section of it keeps.

A section is a function `(run, records) -> Content | None`: None when the run has nothing for
it to show, else its blocks (h2 sections), sentences for the findings and the CSV files it
writes. The report's own sections (report/core.py) and each workload's (report/crud.py,
oltp.py, backup.py, maintenance.py, strength.py, listed in report/workloads.py) keep the same
contract; document.SECTIONS lists them in reading order, and the renderers and `build` walk the
contents without knowing where they came from: adding a section means writing its function and
adding one line to a list.
"""

from __future__ import annotations

from dataclasses import dataclass

from tdebench.report import plots
from tdebench.report.tables import Table

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


def long_part(table: Table) -> Part:
    """A reference table, folded when it is longer than FOLD_ABOVE rows."""
    return Part(table, folded=len(table.rows) > FOLD_ABOVE)


@dataclass(frozen=True)
class Block:
    """The content of one h2 of the report: its title, its tables, then its plots (document.Section
    adds the anchor once every title is known)."""

    title: str
    parts: tuple[Part, ...] = ()
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
