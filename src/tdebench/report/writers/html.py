"""report.html and compare.html: each one self-contained file (inline CSS, plots as data URIs, one
inline script that sorts and filters the tables, nothing loaded from elsewhere) so it can be
mailed, archived or opened offline and still show everything."""

from __future__ import annotations

from typing import Any

import jinja2

from tdebench.report.sections.document import PLOTS_LEFT_OUT, CompareReport, Report

TEMPLATE, COMPARE_TEMPLATE = "report.html.j2", "compare.html.j2"


def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("tdebench.report.writers", "templates"),
                              autoescape=True, undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True)


def render_template(name: str, **context: Any) -> str:
    """A page of the templates directory, rendered with `context`."""
    return _environment().get_template(name).render(**context)


def render(report: Report) -> str:
    return render_template(TEMPLATE, report=report, plots_left_out_text=PLOTS_LEFT_OUT)


def render_comparison(report: CompareReport) -> str:
    return render_template(COMPARE_TEMPLATE, report=report)
