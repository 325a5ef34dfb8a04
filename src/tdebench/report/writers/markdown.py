"""report.md and compare.md: the documents as GitHub-flavoured markdown, plots referenced as PNG
files."""

from __future__ import annotations

from collections.abc import Iterable

from tdebench.report.sections.document import FINDINGS, PLOTS_LEFT_OUT, CompareReport, Report, Section
from tdebench.report.summaries.plots import Figure
from tdebench.report.sections import Bullets, Paragraph, Piece
from tdebench.report.summaries.tables import Table

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


def bullets(items: Iterable[str]) -> list[str]:
    return [f"- {escape(item)}" for item in items] + [""]


def piece(part: Piece) -> list[str]:
    """A table (unless it is for report.html alone), a list or a note, as markdown lines."""
    if isinstance(part, Bullets):
        return bullets(part.items)
    if isinstance(part, Paragraph):
        return [escape(part.text), ""]
    return table(part.table) if part.markdown else []


def sections(entries: Iterable[Section]) -> list[str]:
    """Every section in order: its title, its parts, then its plots."""
    return [line for entry in entries
            for line in section(entry.title, [line for part in entry.parts for line in piece(part)]
                                + [line for plot in entry.figures for line in figure(plot)])]


def contents(report: Report) -> list[str]:
    """The table of contents: one line of links to the sections' anchors (GitHub's own)."""
    links = " · ".join(f"[{escape(title)}](#{anchor})" for title, anchor in report.contents)
    return [f"**Contents:** {links}", ""]


def render(report: Report) -> str:
    lines = [f"# {escape(report.title)}", ""]
    if report.plots_left_out:
        lines += [escape(PLOTS_LEFT_OUT), ""]
    if report.headline_figure:
        lines += figure(report.headline_figure)
    if report.headline:
        lines += ["**In one minute:**", "", *[f"- {escape(sentence)}" for sentence in report.headline], ""]
    if report.answer is not None and report.answer.rows:
        lines += [f"**{escape(report.answer.title)}:**", "", *table(report.answer)]
    if report.headline_details:
        lines += ["**In full:**", "", *[f"- {escape(sentence)}" for sentence in report.headline_details], ""]
    lines += [escape(report.overview.paragraph), ""]
    lines += contents(report)
    findings = []
    if report.alerts:
        findings += ["> **⚠ Do not trust these results blindly:**", ">"]
        findings += [f"> - **{escape(alert)}**" for alert in report.alerts] + [""]
    findings += bullets(report.findings)
    findings += [f"**At rest:** {escape(report.verdict_summary)}", ""]
    lines += section(FINDINGS, findings)
    return "\n".join(lines + sections(report.sections))


def render_comparison(report: CompareReport) -> str:
    """compare.md (and `tdebench compare --markdown`)."""
    lines = [f"# {escape(report.title)}", ""] + ([escape(report.hosts), ""] if report.hosts else [])
    lines += bullets(report.runs)
    return "\n".join(lines + sections(report.sections))
