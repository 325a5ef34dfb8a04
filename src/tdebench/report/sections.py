"""The pieces a report is made of, and the one interface through which a workload adds its own.

A workload's report module (report/crud.py, oltp.py, backup.py, maintenance.py) has a
`section(run, records)` that returns a `WorkloadSection`, or None when the run has nothing of
that workload to show; report/workloads.py lists those functions. The report places each
section's blocks (h2 sections) after the per-query plots, adds its sentences to the findings
and writes its CSV, all without knowing which workload it came from: adding a workload's report
means writing its module and adding one line to that list.
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
class WorkloadSection:
    """What one workload adds to a report: its blocks in reading order, sentences for the
    findings and its own CSV file (`csv_name`, holding `csv`), written only when the section
    exists: a run without the workload gets no file of it, not a lone header."""

    blocks: tuple[Block, ...]
    csv_name: str
    csv: Table
    findings: tuple[str, ...] = ()
