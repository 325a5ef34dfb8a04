"""The published example runs (docs/examples/): each stays under 3.5 MiB, and its reports are
what today's tdebench builds from its raw data, so a reader never studies a stale layout.

A change to the report makes the second test fail until the examples are rebuilt from their raw
data: `scripts/examples.sh --rebuild` (every example) or `scripts/examples.sh --rebuild X`."""

from __future__ import annotations

import lzma
import shutil
from pathlib import Path

import pytest

from tdebench.report import build_report
from tdebench.report.data.records import summary_records
from tdebench.report.sections.document import assemble, without_plots
from tdebench.report.writers import markdown
from tdebench.store import RESULTS, read_published

EXAMPLES = Path(__file__).parents[2] / "docs" / "examples"
NAMES = sorted(path.name for path in EXAMPLES.iterdir() if path.is_dir())
LIMIT_BYTES = 4 << 20
"""4 MiB: the raw data (xz), report.html with its plots embedded and the same plots as PNGs for
report.md; it was 1 MiB until the headline picture and the forest plots came (about 0.1 MiB an
example), 1.5 MiB for the cost-curve example's six configurations' plots (about 1.2 MiB), and is
2.5 MiB since the io-bound example's 258 trials (its raw data 1.2 MB as xz; 2.3 MB in all), 3 MiB
since the crud example's three table sizes on two engines (a resource view and two plots each:
2.7 MB in all), 3.5 MiB since the servers example's 215 trials (its raw data 1.6 MB as xz, most of
it the verdicts' per-file scans of two servers' data directories: 3.2 MB in all), 4 MiB since that
example's quiet re-run needed 270 trials to resolve PostgreSQL to ±5% (2.1 MB as xz, 3.8 MB in all)."""


def test_there_are_examples() -> None:
    assert {"quick", "servers", "io-bound", "cost-curve", "sqlcipher", "crud", "maintenance", "backup", "strength",
            "strength-servers", "at-rest", "connections", "oltp", "backup-encryption", "crud-servers",
            "ciphers"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_an_example_is_under_its_size_limit(name: str) -> None:
    size = sum(path.stat().st_size for path in (EXAMPLES / name).rglob("*") if path.is_file())
    assert size < LIMIT_BYTES, f"docs/examples/{name} holds {size:,} bytes"


@pytest.mark.parametrize("name", NAMES)
def test_an_examples_reports_are_rebuilt_from_its_raw_data_unchanged(name: str) -> None:
    """report.md as today's build writes it, its figures named, titled and placed, but not drawn:
    their bytes follow matplotlib's version, and report.md holds none of them."""
    run = read_published(EXAMPLES / name)
    report = assemble(run, summary_records(run))
    assert markdown.render(report) == (EXAMPLES / name / "report.md").read_text()
    assert not any("png" in figure.__dict__ for figure in report.figures)  # none drawn


def test_the_markdown_compared_is_what_a_build_writes(tmp_path: Path) -> None:
    """What the test above compares is report.md as `tdebench report` writes it (one example)."""
    published = EXAMPLES / "backup"
    run = shutil.copytree(published, tmp_path / "backup")
    (run / RESULTS).write_bytes(lzma.decompress((published / (RESULTS + ".xz")).read_bytes()))
    (run / "report.md").unlink()
    build_report(run, plots=False)
    data = read_published(published)
    assert (run / "report.md").read_text() == markdown.render(without_plots(assemble(data, summary_records(data))))
