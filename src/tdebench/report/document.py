"""The report's content, assembled once from the run and rendered as markdown and HTML."""

from __future__ import annotations

from dataclasses import dataclass

from tdebench.report import backup, cache, crud, findings, headline, maintenance, noise, plots, tables
from tdebench.report import oltp
from tdebench.report.records import SummaryRecord
from tdebench.store import RunData


@dataclass(frozen=True)
class Report:
    """Sections in reading order; every renderer walks them in this order."""

    title: str
    headline: list[str]  # the first lines: each encryption's cost in plain words (headline.py)
    overview: findings.Overview
    alerts: list[str]
    findings: list[str]
    verdict_summary: str
    at_rest_ok: bool  # every verdict as expected, and there was at least one
    failures: tables.Table
    overhead: tables.Table
    overhead_figures: list[plots.Figure]
    cipher_context: tables.Table  # right after the overheads: the cost of the cipher itself
    query_figures: list[plots.Figure]
    resources: tables.Table  # empty (with its one-line `empty` text) when nothing was sampled
    resource_figures: list[plots.Figure]
    sizes: tables.Table
    verdicts: tables.Table
    ciphers: tables.Table
    environment: tables.Table
    noisy: tables.Table
    machine_load: tables.Table  # every trial with the machine's load around it, busy ones marked
    crud: crud.CrudSection | None = None  # only for runs of the crud workload
    oltp: oltp.OltpSection | None = None  # only for runs of the oltp workload
    backups: backup.BackupSection | None = None  # only for runs of the backup workload
    maintenance: maintenance.MaintenanceSection | None = None  # only for runs of the maintenance workload
    cache_fit: tables.Table | None = None  # only for runs that recorded each trial's cache (report/cache.py)

    @property
    def figures(self) -> list[plots.Figure]:
        return (self.overhead_figures + self.query_figures + self.resource_figures
                + (self.crud.figures if self.crud else [])
                + (self.oltp.figures if self.oltp else []))


def assemble(run: RunData, records: list[SummaryRecord]) -> Report:
    described = findings.overview(run)
    backups = backup.section(run, records)
    maintained = maintenance.section(run, records)
    transactions = oltp.section(run, records)
    noisy = noise.noisy_figures(records, transactions.throughput.rows if transactions else ())
    loads = noise.trial_loads(run)
    return Report(
        title=f"tdebench report: {described.plan_name}",
        headline=headline.headline(run, records),
        overview=described,
        alerts=findings.alerts(run),
        findings=((backups.findings if backups else []) + (maintained.findings if maintained else [])
                  + (transactions.findings if transactions else []) + cache.findings(run)
                  + findings.findings(records)
                  + noise.findings(noisy, loads)),
        verdict_summary=findings.verdict_summary(run),
        at_rest_ok=bool(run.verdicts) and all(v.as_expected for v in run.verdicts),
        failures=tables.failures_table(run),
        overhead=tables.overhead_table(records),
        overhead_figures=plots.overhead_plots(records),
        cipher_context=tables.cipher_context_table(run, records),
        query_figures=plots.query_plots(records),
        resources=tables.resources_table(run),
        resource_figures=plots.resource_plots(run.samples),
        sizes=tables.size_table(records),
        verdicts=tables.verdicts_table(run),
        ciphers=tables.cipher_table(run),
        environment=tables.environment_table(run),
        noisy=tables.noisy_table(noisy),
        machine_load=tables.machine_load_table(loads),
        crud=crud.section(records),
        oltp=transactions,
        backups=backups,
        maintenance=maintained,
        cache_fit=cache.cache_fit_table(run),
    )
