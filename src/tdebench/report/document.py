"""The report's content, assembled once from the run and rendered as markdown and HTML.

Both renderers walk the same sections (`Report.sections`) in the same order, each with the
anchor its table of contents links to, so report.md and report.html cannot disagree on what
the report holds or where a link leads.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from tdebench.report import (answer, cache, claims, connection, core, findings, headline, layers, noise, plots,
                             sections, tables, workloads)
from tdebench.report.records import SummaryRecord, run_order
from tdebench.report.sections import Content
from tdebench.results import RunData


RESERVED_ANCHORS = frozenset({"headline", "contents"})
"""Ids report.html gives to other elements than sections: no section takes them."""


@dataclass(frozen=True)
class Section:
    """One h2 of the report: its title, its anchor (the id its contents entry links to), its
    tables and then its plots."""

    title: str
    anchor: str
    parts: tuple[sections.Part, ...] = ()
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


FINDINGS = "Findings"
FINDINGS_ANCHOR = anchors([FINDINGS])[0]  # the first section, always


SectionFunction = Callable[[RunData, list[SummaryRecord]], Content | None]

SECTIONS: tuple[SectionFunction, ...] = (
    core.failures, core.overhead, core.cost_curve, core.cache_fit, core.cipher_context, core.connection,
    layers.section,  # after the cipher's and the open's costs: an fs-layer encryption's, split in two
    core.per_query, workloads.section, core.resources, core.sizes, core.verdicts, core.ciphers,
    core.environment, core.noisy, core.machine_load,
)
"""Every section after Findings, in reading order: the report's own (report/core.py) and, after
the per-query plots, the workloads' (report/workloads.py). Each decides whether the run has
anything for it (None: no section); adding a section is one function here."""


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
    entries: tuple[Content, ...] = ()  # what each of SECTIONS that applies to the run holds, in order
    headline_figure: plots.Figure | None = None  # the first picture: headline.panels as a forest plot
    answer: tables.Table | None = None  # after “In one minute”, before “In full”: report/answer.py

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
        """The CSV files the sections write beside the report (a workload's crud.csv, oltp.csv)."""
        return [csv for content in self.entries for csv in content.csvs]

    @property
    def contents(self) -> list[tuple[str, str]]:
        """(title, anchor) of every section, Findings first: the table of contents."""
        return [(FINDINGS, FINDINGS_ANCHOR)] + [(s.title, s.anchor) for s in self.sections]

    @functools.cached_property
    def sections(self) -> list[Section]:
        """Every section after Findings (which the renderers draw themselves), in reading order."""
        blocks = [block for content in self.entries for block in content.blocks]
        ids = anchors([FINDINGS] + [block.title for block in blocks])[1:]
        return [Section(block.title, anchor, block.parts, block.figures) for block, anchor in zip(blocks, ids)]


def assemble(run: RunData, records: list[SummaryRecord]) -> Report:
    """The report of a run: every section that applies to it, and the findings they and the
    report's own analyses (cache, overheads, connection, claims, noise) add."""
    described = findings.overview(run)
    entries = tuple(content for section in SECTIONS if (content := section(run, records)) is not None)
    return Report(
        title=f"tdebench report: {described.plan_name}",
        glance=headline.glance(run, records),
        overview=described,
        alerts=findings.alerts(run),
        headline_details=headline.config_sentences(run, records),
        findings=([sentence for content in entries for sentence in content.findings]
                  + cache.findings(run, headline.layer_bound_configs(run, records))
                  + findings.findings(run, records) + connection.findings(run, records)
                  + claims.claim_lines(run, records)
                  + noise.findings(noise.noisy_figures(records), noise.trial_loads(run), run_order(run) or "")),
        verdict_summary=findings.verdict_summary(run),
        at_rest_ok=findings.at_rest_ok(run),
        entries=entries,
        headline_figure=plots.headline_plot(headline.panels(run, records, answer.integrity_marks(run))),
        answer=answer.answer_table(run, records),
    )
