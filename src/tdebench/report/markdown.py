"""report.md: the report as GitHub-flavoured markdown, plots referenced as PNG files."""

from __future__ import annotations

from tdebench.report.document import Report
from tdebench.report.plots import Figure
from tdebench.report.tables import Table

PLOTS_DIR = "plots"


def escape(text: str) -> str:
    """Keep cell text from breaking the table or being read as markup."""
    for char in "\\`*_[]<>|":
        text = text.replace(char, "\\" + char)
    return " ".join(text.split())


def table(block: Table) -> list[str]:
    if not block.rows and block.empty:
        return [escape(block.empty), ""]
    intro = [escape(block.intro), ""] if block.intro else []
    if not block.rows:
        return intro + ["_None._", ""]
    align = ["---:" if column.numeric else "---" for column in block.columns]
    lines = intro + ["| " + " | ".join(escape(header) for header in block.headers) + " |",
             "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(escape(cell) for cell in row) + " |" for row in block.formatted()]
    if block.note:
        lines += ["", escape(block.note)]
    return lines + [""]


def figure(plot: Figure) -> list[str]:
    return [f"![{escape(plot.title)}]({PLOTS_DIR}/{plot.name})", ""]


def section(title: str, body: list[str]) -> list[str]:
    return [f"## {escape(title)}", "", *body]


def render(report: Report) -> str:
    lines = [f"# {escape(report.title)}", ""]
    if report.headline:
        lines += ["**In one minute:**", "", *[f"- {escape(sentence)}" for sentence in report.headline], ""]
    lines += [escape(report.overview.paragraph), ""]
    findings = []
    if report.alerts:
        findings += ["> **⚠ Do not trust these results blindly:**", ">"]
        findings += [f"> - **{escape(alert)}**" for alert in report.alerts] + [""]
    findings += [f"- {escape(sentence)}" for sentence in report.findings] + [""]
    findings += [f"**At rest:** {escape(report.verdict_summary)}", ""]
    lines += section("Findings", findings)
    if report.failures.rows:
        lines += section(report.failures.title, table(report.failures))
    lines += section("Overhead", table(report.overhead)
                     + [line for plot in report.overhead_figures for line in figure(plot)])
    if report.cache_fit:
        lines += section(report.cache_fit.title, table(report.cache_fit))
    lines += section(report.cipher_context.title, table(report.cipher_context))
    if report.query_figures:  # TPC-H's power and throughput tests
        lines += section("Per-query", [line for plot in report.query_figures for line in figure(plot)])
    if report.crud:
        lines += section(report.crud.operations.title, table(report.crud.operations)
                         + [line for plot in report.crud.figures for line in figure(plot)])
        lines += section(report.crud.latency.title, table(report.crud.latency))
    if report.oltp:
        lines += section(report.oltp.throughput.title, table(report.oltp.throughput)
                         + [line for plot in report.oltp.figures for line in figure(plot)])
        lines += section(report.oltp.latency.title, table(report.oltp.latency))
    if report.backups:
        lines += section(report.backups.table.title, table(report.backups.table))
    if report.maintenance:
        for block in (report.maintenance.encrypt, report.maintenance.rekey, report.maintenance.reindex):
            lines += section(block.title, table(block))
    lines += section(report.resources.title, table(report.resources)
                     + [line for plot in report.resource_figures for line in figure(plot)])
    for block in (report.sizes, report.verdicts, report.ciphers, report.environment, report.noisy,
                  report.machine_load):
        lines += section(block.title, table(block))
    return "\n".join(lines)
