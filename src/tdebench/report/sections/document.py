"""The documents tdebench writes: a run's report (`Report`, assembled once from the run) and
the comparison of two runs (`CompareReport`, report/sections/compare.py), each rendered as markdown and
HTML by the same writers (markdown.py, html.py).

Both renderers walk the same sections (`Report.sections`, `CompareReport.sections`) in the same
order, each with the anchor its table of contents links to, so report.md and report.html cannot
disagree on what the report holds or where a link leads.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from tdebench.report.sections import answer, backup, core, crud, headline, layers, maintenance, oltp, strength
from tdebench.report.summaries import findings, plots, tables
from tdebench.report import sections
from tdebench.report.data.records import SummaryRecord
from tdebench.report.sections import Content, Source
from tdebench.results import RunData


RESERVED_ANCHORS = frozenset({"headline", "contents"})
"""Ids report.html gives to other elements than sections: no section takes them."""


@dataclass(frozen=True)
class Section:
    """One h2 of the report: its title, its anchor (the id its contents entry links to), its
    tables and then its plots."""

    title: str
    anchor: str
    parts: tuple[sections.Piece, ...] = ()
    figures: tuple[plots.Figure, ...] = ()


def slug(title: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-") or "section"


def anchors(titles: Iterable[str]) -> list[str]:
    """One unique anchor per title, in order: a repeated slug gets -1, -2 as on GitHub, and none
    takes a RESERVED_ANCHORS id."""
    taken = set(RESERVED_ANCHORS)
    result = []
    for title in titles:
        base = candidate = slug(title)
        count = 0
        while candidate in taken:
            count += 1
            candidate = f"{base}-{count}"
        taken.add(candidate)
        result.append(candidate)
    return result


def placed(entries: Iterable[Content], taken: Iterable[str] = ()) -> list[Section]:
    """The blocks of `entries` as sections, in order, each with its unique anchor; `taken` are
    the titles of sections a document draws itself before them (their sections come first)."""
    blocks = [sections.Block(title) for title in taken] + [block for content in entries for block in content.blocks]
    return [Section(block.title, anchor, block.parts, block.figures)
            for block, anchor in zip(blocks, anchors(block.title for block in blocks))]


FINDINGS = "Findings"
FINDINGS_ANCHOR = anchors([FINDINGS])[0]  # the first section, always


SOURCES: tuple[Source[[RunData, list[SummaryRecord]]], ...] = (
    Source(core.csv_files, csvs=core.CSV_FILES),
    Source(core.failures), Source(core.overhead), Source(core.cost_curve), Source(core.cache_fit),
    Source(core.cipher_context), Source(core.connection),
    Source(layers.section),  # after the cipher's and the open's costs: an fs-layer encryption's, split in two
    Source(core.per_query),
    # the workloads' own sections: backup first, since a plaintext backup of an encrypted database is the first
    # thing a reader of its findings must see; strength next, whose findings are what an attacker holding the
    # files can do
    Source(backup.section, csvs=(backup.CSV,)), Source(strength.section, csvs=(strength.CSV,)),
    Source(maintenance.section, csvs=(maintenance.CSV,)), Source(oltp.section, csvs=(oltp.CSV,)),
    Source(crud.section, csvs=(crud.CSV,)),
    Source(core.resources), Source(core.sizes), Source(core.verdicts), Source(core.ciphers), Source(core.environment),
    Source(core.noisy), Source(core.machine_load),
    # findings without a section, after every section's own
    Source(core.cache_findings), Source(core.overhead_findings), Source(core.connection_findings),
    Source(core.claims), Source(core.noise_findings),
)
"""Every way into the report, in reading order: its sections after Findings (the report's own,
report/sections/core.py, and after the per-query plots the workloads', each a module of report/ with
`section` and `CSV`), the findings they hold in the same order, then the findings of sources
without a section of their own, and the CSV files of all of them (the run's own first). Each
decides whether the run has anything for it (None: nothing); adding a section is one function
and one line here. TPC-H has no section of its own: the report's sections show its figures, as
they show every workload's headlines."""

CSV_FILES = tuple(name for source in SOURCES for name in source.csvs)
"""Every CSV file a report may write (derived files: run --force may remove them)."""


@dataclass(frozen=True)
class Report:
    """Sections in reading order; every renderer walks them in this order."""

    title: str
    glance: headline.Glance  # the first lines, “In one minute”: short, one per engine (headline.glance)
    headline_details: list[str]  # under them, folded in the HTML: every encryption with its interval
    overview: findings.Overview
    alerts: list[str]
    findings: list[str]
    verdict_summary: str
    at_rest_ok: bool  # every judged verdict as expected, and there was at least one (findings.at_rest_ok)
    entries: tuple[Content, ...] = ()  # what each of SOURCES that applies to the run holds, in order
    headline_figure: plots.Figure | None = None  # the first picture: headline.panels as a forest plot
    answer: tables.Table | None = None  # after “In one minute”, before “In full”: report/sections/answer.py
    plots_left_out: bool = False  # built without its plots (`without_plots`): the renderers say so under the title

    @property
    def headline(self) -> list[str]:
        """“In one minute”, line by line."""
        return self.glance.lines

    @property
    def figures(self) -> list[plots.Figure]:
        first = [self.headline_figure] if self.headline_figure else []
        return first + [figure for section in self.sections for figure in section.figures]

    @property
    def csvs(self) -> list[tuple[str, tables.Table]]:
        """The CSV files the sources write beside the report (summary.csv, …, a workload's crud.csv)."""
        return [csv for content in self.entries for csv in content.csvs]

    @property
    def contents(self) -> list[tuple[str, str]]:
        """(title, anchor) of every section, Findings first: the table of contents."""
        return [(FINDINGS, FINDINGS_ANCHOR)] + [(s.title, s.anchor) for s in self.sections]

    @functools.cached_property
    def sections(self) -> list[Section]:
        """Every section after Findings (which the renderers draw themselves), in reading order."""
        return placed(self.entries, taken=[FINDINGS])[1:]


def assemble(run: RunData, records: list[SummaryRecord]) -> Report:
    """The report of a run: what every one of SOURCES that applies to it holds."""
    described = findings.overview(run)
    entries = tuple(content for source in SOURCES if (content := source(run, records)) is not None)
    return Report(
        title=f"tdebench report: {described.plan_name}",
        glance=headline.glance(run, records),
        overview=described,
        alerts=findings.alerts(run),
        headline_details=headline.config_sentences(run, records),
        findings=[sentence for content in entries for sentence in content.findings],
        verdict_summary=findings.verdict_summary(run),
        at_rest_ok=findings.at_rest_ok(run),
        entries=entries,
        headline_figure=plots.headline_plot(headline.panels(run, records, answer.integrity_marks(run))),
        answer=answer.answer_table(run, records),
    )


def without_plots(report: Report) -> Report:
    """`report` without its plots (`tdebench report --no-plots`): its tables and sentences alone, in a
    fraction of the time (drawing the plots is most of a report's), saying under its title that
    they were left out."""
    entries = tuple(replace(content, blocks=tuple(replace(block, figures=()) for block in content.blocks))
                    for content in report.entries)
    return replace(report, entries=entries, headline_figure=None, plots_left_out=True)


PLOTS_LEFT_OUT = "Plots left out (--no-plots): tdebench report on the run directory draws them."
"""What a report built `without_plots` says under its title."""


@dataclass(frozen=True)
class CompareReport:
    """What compare.md, compare.html and the printed comparison show, in reading order: the
    title, the hosts and the runs, then what each of compare.VIEWS that applies holds."""

    title: str  # says "from different hosts" when they are (`compare.Hosts.differ`): the first line of every form
    hosts: str  # why the hosts differ, right under the title; "" on the same host
    runs: list[str]  # A and B: where, which plan, when, on which host and CPU
    entries: tuple[Content, ...] = ()

    @property
    def csvs(self) -> list[tuple[str, tables.Table]]:
        """The CSV files the views write beside the comparison (compare.csv)."""
        return [csv for content in self.entries for csv in content.csvs]

    @functools.cached_property
    def sections(self) -> list[Section]:
        return placed(self.entries)

    def section(self, title: str) -> Section | None:
        """The section of that title, if the comparison has it."""
        return next((section for section in self.sections if section.title == title), None)
