"""Each workload's own part of the report, in the order the report shows them.

A workload with a report of its own has a module here whose `section(run, records)` returns a
sections.WorkloadSection (or None when the run has none of it) and whose `CSV` names its file;
listing it below is all the report needs (document.py, __init__.py and both renderers walk the
sections generically). TPC-H needs none: its tests are the report's core tables and plots.
"""

from __future__ import annotations

from tdebench.report import backup, crud, maintenance, oltp, strength
from tdebench.report.records import SummaryRecord
from tdebench.report.sections import WorkloadSection
from tdebench.results import RunData

MODULES = (backup, strength, maintenance, oltp, crud)
"""In reading order, for the sections and for the findings: backup first, since a plaintext
backup of an encrypted database is the first thing a reader of its findings must see; strength
next, whose findings are what an attacker holding the files can do."""

CSV_FILES = tuple(module.CSV for module in MODULES)
"""Every workload CSV a report may write (derived files: run --force may remove them)."""


def sections(run: RunData, records: list[SummaryRecord]) -> tuple[WorkloadSection, ...]:
    """The sections of the workloads this run has, in MODULES' order."""
    return tuple(section for module in MODULES if (section := module.section(run, records)) is not None)
