"""The report's content, assembled once from the run and rendered as markdown and HTML.

Both renderers walk the same sections (`Report.sections`) in the same order, each with the
anchor its table of contents links to, so report.md and report.html cannot disagree on what
the report holds or where a link leads.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from tdebench.report import cache, claims, connection, findings, headline, noise, plots, tables, workloads
from tdebench.report.records import SummaryRecord, run_order
from tdebench.report.sections import Block, Part, WorkloadSection, long_part
from tdebench.results import RunData


RESERVED_ANCHORS = frozenset({"headline", "contents"})
"""Ids report.html gives to other elements than sections: no section takes them."""


@dataclass(frozen=True)
class Section:
    """One h2 of the report: its title, its anchor (the id its contents entry links to), its
    tables and then its plots."""

    title: str
    anchor: str
    parts: tuple[Part, ...] = ()
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


@dataclass(frozen=True)
class Report:
    """Sections in reading order; every renderer walks them in this order."""

    title: str
    headline: list[str]  # the first lines, “In one minute”: short, one per engine (headline.summary_lines)
    headline_details: list[str]  # under them, folded in the HTML: every encryption with its interval
    overview: findings.Overview
    alerts: list[str]
    findings: list[str]
    verdict_summary: str
    at_rest_ok: bool  # every judged verdict as expected, and there was at least one (findings.at_rest_ok)
    failures: tables.Table
    overhead: tables.Table
    overhead_figures: list[plots.Figure]
    cost_curves: list[plots.Figure]  # configurations measured at several cache sizes (plots.cost_curves)
    cipher_context: tables.Table  # right after the overheads: the cost of the cipher itself
    query_figures: list[plots.Figure]
    resources: tables.Table  # empty (with its one-line `empty` text) when nothing was sampled
    resource_figures: list[plots.Figure]
    sizes: tables.Table
    verdicts: tables.Table  # one row per configuration
    verdict_trials: tables.Table  # one row per trial (verdicts.csv's rows), folded in report.html
    ciphers: tables.Table
    environment: tables.Table
    noisy: tables.Table
    machine_load: tables.Table  # every trial with the machine's load around it, busy ones marked
    workloads: tuple[WorkloadSection, ...] = ()  # each workload's own, for the workloads the run has
    cache_fit: tables.Table | None = None  # only for runs that recorded each trial's cache (report/cache.py)
    headline_figure: plots.Figure | None = None  # the first picture: headline.panels as a forest plot
    connection: tables.Table | None = None  # only for runs that timed an open (report/connection.py)

    @property
    def figures(self) -> list[plots.Figure]:
        first = [self.headline_figure] if self.headline_figure else []
        return first + [figure for section in self.sections for figure in section.figures]

    @property
    def contents(self) -> list[tuple[str, str]]:
        """(title, anchor) of every section, Findings first: the table of contents."""
        return [(FINDINGS, FINDINGS_ANCHOR)] + [(s.title, s.anchor) for s in self.sections]

    @functools.cached_property
    def sections(self) -> list[Section]:
        """Every section after Findings (which the renderers draw themselves), in reading order."""
        blocks: list[Block] = []

        def add(title: str, parts: Iterable[Part | tables.Table] = (), figures: Iterable[plots.Figure] = ()) -> None:
            blocks.append(Block(title, tuple(p if isinstance(p, Part) else Part(p) for p in parts), tuple(figures)))

        if self.failures.rows:
            add(self.failures.title, [self.failures])
        add("Overhead", [self.overhead], self.overhead_figures)
        if self.cost_curves:
            add("Cost curve", figures=self.cost_curves)
        if self.cache_fit:
            add(self.cache_fit.title, [long_part(self.cache_fit)])
        add(self.cipher_context.title, [self.cipher_context])
        if self.connection:
            add(self.connection.title, [long_part(self.connection)])
        if self.query_figures:  # TPC-H's power and throughput tests
            add("Per-query", figures=self.query_figures)
        for workload in self.workloads:
            blocks += workload.blocks
        add(self.resources.title, [long_part(self.resources)], self.resource_figures)
        add(self.sizes.title, [long_part(self.sizes)])
        add(self.verdicts.title, [self.verdicts, Part(self.verdict_trials, folded=True, markdown=False)])
        for block in (self.ciphers, self.environment, self.noisy, self.machine_load):
            add(block.title, [long_part(block)])
        ids = anchors([FINDINGS] + [block.title for block in blocks])[1:]
        return [Section(block.title, anchor, block.parts, block.figures) for block, anchor in zip(blocks, ids)]


def assemble(run: RunData, records: list[SummaryRecord]) -> Report:
    described = findings.overview(run)
    sections = workloads.sections(run, records)
    noisy = noise.noisy_figures(records)
    loads = noise.trial_loads(run)
    return Report(
        title=f"tdebench report: {described.plan_name}",
        headline=headline.summary_lines(run, records),
        overview=described,
        alerts=findings.alerts(run),
        headline_details=headline.config_sentences(run, records),
        findings=([sentence for section in sections for sentence in section.findings] + cache.findings(run)
                  + findings.findings(records) + connection.findings(run, records)
                  + claims.claim_lines(run, records)
                  + noise.findings(noisy, loads)),
        verdict_summary=findings.verdict_summary(run),
        at_rest_ok=findings.at_rest_ok(run),
        failures=tables.failures_table(run),
        overhead=tables.overhead_table(records),
        overhead_figures=plots.overhead_plots(records),
        cost_curves=plots.cost_curves(records, {config: regime.ratio for config, regime in cache.regimes(run).items()}),
        cipher_context=tables.cipher_context_table(run, records),
        query_figures=plots.query_plots(records),
        resources=tables.resources_table(run),
        resource_figures=plots.resource_plots(run.samples, side_by_side=run_order(run) == "lockstep"),
        sizes=tables.size_table(records),
        verdicts=tables.verdict_summary_table(run),
        verdict_trials=tables.verdicts_table(run, csv=False),
        ciphers=tables.cipher_table(run),
        environment=tables.environment_table(run),
        noisy=tables.noisy_table(noisy),
        machine_load=tables.machine_load_table(loads),
        workloads=sections,
        cache_fit=cache.cache_fit_table(run),
        headline_figure=plots.headline_plot(headline.panels(run, records)),
        connection=connection.connection_table(run, records),
    )
