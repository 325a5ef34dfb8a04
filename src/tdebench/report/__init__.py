"""Reports: every derived file of a run directory, rebuilt from its raw records.

`build` is a pure function of `results.jsonl`, `plan.toml` and `environment.json`: it can be
re-run at any time (after a crash, after a fix to the statistics) and overwrites what it
wrote before; `write_comparison` writes what `tdebench compare` found.

The package's layout is its layers, each importing only its own and lower ones
(tests/unit/test_report_sources.py): data/ (the run's records as summary records, what the
workloads declare, units), summaries/ (tables, plots and sentences of them), sections/ (the
contract, the sources in reading order, the documents) and writers/ (Markdown, HTML, CSV).
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from pathlib import Path

from tdebench.report.sections import answer
from tdebench.report.sections.compare import COMPARE_HTML, COMPARE_MD, Comparison, document
from tdebench.report.writers import csvfiles, html, markdown
from tdebench.report.sections.document import CSV_FILES, assemble, without_plots
from tdebench.report.sections.headline import Glance
from tdebench.report.summaries.plots import Figure, draw_all
from tdebench.report.data.records import summary_records
from tdebench.results import RunData
from tdebench.store import RAW_FILES, manifest, read_run, record_written, writing

__all__ = ["DERIVED", "Built", "build", "build_report", "write_comparison"]

REPORT_MD, REPORT_HTML = "report.md", "report.html"
DERIVED = (*CSV_FILES, REPORT_MD, REPORT_HTML, markdown.PLOTS_DIR)
"""Every file and directory `build` writes at the top of a run directory: all derived, so
they may be deleted and rebuilt from the raw records. `run --force` removes what the run's
manifest lists; these names serve runs from before manifests (run/outdir.py)."""


def _write_plots(report_dir: Path, figures: list[Figure]) -> list[Path]:
    """Plots for report.md; the plots of an earlier build (those its manifest lists, never
    another file in plots/) are removed first, and plots/ with them when nothing is left in it."""
    plots_dir = report_dir / markdown.PLOTS_DIR
    for name in manifest(report_dir) or ():
        if name.startswith(f"{markdown.PLOTS_DIR}/"):
            (report_dir / name).unlink(missing_ok=True)
    if figures:
        plots_dir.mkdir(exist_ok=True)
    elif plots_dir.is_dir() and not any(plots_dir.iterdir()):
        plots_dir.rmdir()  # emptied of this report's plots (--no-plots): a file of the user's keeps it
    written = []
    for figure in figures:
        path = plots_dir / figure.name
        path.write_bytes(figure.png)
        written.append(path)
    return written


@dataclass(frozen=True)
class Built:
    """What `build_report` wrote, and the report's opening sentences (the CLI prints them)."""

    paths: list[Path]
    glance: Glance
    answer: list[str]  # the answer table a line per encryption (answer.lines)


def build(run_dir: Path, plots: bool = True) -> list[Path]:
    """Read the run in `run_dir` and write the CSV files of its report's sources (summary.csv,
    queries.csv, verdicts.csv, resources.csv, and the CSV of each workload section the report
    has: crud.csv, oltp.csv, backups.csv, maintenance.csv, strength.csv; document.SOURCES),
    report.md (with plots/*.png) and a self-contained report.html into it. Returns the paths
    written. Without `plots`, none is drawn (document.without_plots) and plots/ is not written."""
    return build_report(run_dir, plots=plots).paths


def build_report(run_dir: Path, run: RunData | None = None, plots: bool = True) -> Built:
    """`build`, also returning the report's "In one minute" sentences; `run`: the run in `run_dir`
    when the caller has read it already."""
    run = run if run is not None else read_run(run_dir)
    with writing(run_dir):  # no space left, read-only: an OutputError that says so
        return _write(run_dir, run, plots)


def _write(run_dir: Path, run: RunData, plots: bool) -> Built:
    """Every derived file, each named in the manifest before it is written: a write cut short
    (a full disk) leaves no file behind that `run --force` would not know to remove. The run's
    records live as long as the build: frozen out of the cyclic collector's sight, its full passes
    do not scan them again and again (they took a third of the summaries' time)."""
    gc.freeze()
    try:
        return _written(run_dir, run, plots)
    finally:
        gc.unfreeze()


def _written(run_dir: Path, run: RunData, plots: bool) -> Built:
    records = summary_records(run)
    report = assemble(run, records) if plots else without_plots(assemble(run, records))
    draw_all(report.figures)  # every plot at once, on every core: report.md's files, report.html's images
    csvs = [(table, run_dir / name) for name, table in report.csvs]  # only the sources the run has
    texts = [(run_dir / REPORT_MD, markdown.render(report)), (run_dir / REPORT_HTML, html.render(report))]
    planned = [path for _, path in csvs] + [run_dir / markdown.PLOTS_DIR / f.name for f in report.figures]
    record_written(run_dir, [run_dir / name for name in RAW_FILES] + planned + [path for path, _ in texts])
    written = [csvfiles.write(table, path) for table, path in csvs]
    written += _write_plots(run_dir, report.figures)
    for path, text in texts:
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return Built(written, report.glance, answer.lines(report.answer) if report.answer is not None else [])


def write_comparison(comparison: Comparison, directory: Path) -> list[Path]:
    """compare.md, compare.html and compare.csv into `directory` (which must exist); an
    OutputError when they cannot be written (no space left, read-only)."""
    compared = document(comparison)
    texts = [(directory / COMPARE_MD, markdown.render_comparison(compared)),
             (directory / COMPARE_HTML, html.render_comparison(compared))]
    with writing(directory):
        for path, text in texts:
            path.write_text(text, encoding="utf-8")
        return [path for path, _ in texts] + [csvfiles.write(table, directory / name)
                                              for name, table in compared.csvs]
