"""Each workload's own part of the report, in the order the report shows them.

A workload with a report of its own has a module here whose `section(run, records)` returns a
sections.Content (or None when the run has none of it) and whose `CSV` names its file;
listing it below is all the report needs (document.SECTIONS holds `section`, and
__init__.py and both renderers walk the contents generically). TPC-H needs none: the report's
own sections (report/core.py) show its figures, as they show every workload's headlines.
"""

from __future__ import annotations

from tdebench.report import backup, crud, maintenance, oltp, strength
from tdebench.report.records import SummaryRecord
from tdebench.report.sections import Content
from tdebench.results import RunData

MODULES = (backup, strength, maintenance, oltp, crud)
"""In reading order, for the sections and for the findings: backup first, since a plaintext
backup of an encrypted database is the first thing a reader of its findings must see; strength
next, whose findings are what an attacker holding the files can do."""

CSV_FILES = tuple(module.CSV for module in MODULES)
"""Every workload CSV a report may write (derived files: run --force may remove them)."""


def section(run: RunData, records: list[SummaryRecord]) -> Content | None:
    """The sections of the workloads this run has, in MODULES' order, as one entry of the
    report's section list (document.SECTIONS); None when the run has none of them."""
    contents = [content for module in MODULES if (content := module.section(run, records)) is not None]
    if not contents:
        return None
    return Content(blocks=tuple(b for c in contents for b in c.blocks),
                   findings=tuple(s for c in contents for s in c.findings),
                   csvs=tuple(f for c in contents for f in c.csvs))
