"""The report's own sources, each one function with the contract of a workload's section.

Every section of the report (after Findings, which the renderers draw themselves), every source
of findings without a section of its own and the run's own CSV files come from a function
`(run, records) -> Content | None` listed once, in reading order, in `document.SOURCES`; it
returns None when the run has nothing for it to show, so a run gets only the sections that
apply to it. The timing sections (overhead, cache fit, cipher context, per connection) read only the
configurations of timed workloads (`Workload.timed`): a strength run's outcomes are not
timings, and its load times alone would fill them with figures nobody reads.
"""

from __future__ import annotations

from dataclasses import replace

from tdebench.report.summaries import (cache, cipher_cost, claims as claimed, connection as open_cost,
                                       findings as overheads, noise, plots, resources as resource_use, tables)
from tdebench.report.data import declared
from tdebench.report.sections import headline, knee
from tdebench.report.data.records import SummaryRecord, run_order
from tdebench.report.sections import Block, Content, Part, findings_only, long_part
from tdebench.results import RunData


def _one(title: str, parts: tuple[Part, ...] = (), figures: list[plots.Figure] | tuple[plots.Figure, ...] = ()
         ) -> Content:
    """A content of one block."""
    return Content(blocks=(Block(title, parts, tuple(figures)),))


def _reference(table: tables.Table) -> Content:
    """A reference table as its own section, folded when long."""
    return _one(table.title, (long_part(table),))


def _timed(records: list[SummaryRecord]) -> list[SummaryRecord]:
    """The records of timed workloads' configurations."""
    return [record for record in records if declared.timed(record.cell.workload)]


def _timed_run(run: RunData) -> RunData:
    """The run's trials and measurements of timed workloads only."""
    return replace(run, trials=[t for t in run.trials if declared.timed(t.trial.workload)],
                   measurements=[m for m in run.measurements if declared.timed(m.trial.workload)])


SUMMARY_CSV, QUERIES_CSV, VERDICTS_CSV, RESOURCES_CSV = "summary.csv", "queries.csv", "verdicts.csv", "resources.csv"
CSV_FILES = (SUMMARY_CSV, QUERIES_CSV, VERDICTS_CSV, RESOURCES_CSV)


def csv_files(run: RunData, records: list[SummaryRecord]) -> Content:
    """The CSV files every run gets, whatever its sections: every figure, every query's time,
    every trial's verdict, every resource sample (report/writers/csvfiles.py writes them raw)."""
    return Content(blocks=(), csvs=((SUMMARY_CSV, tables.summary_table(records)),
                                    (QUERIES_CSV, tables.queries_table(run)),
                                    (VERDICTS_CSV, tables.verdicts_table(run)),
                                    (RESOURCES_CSV, tables.resources_table(run))))


def failures(run: RunData, records: list[SummaryRecord]) -> Content | None:
    """The trials that failed, first: a reader must know what is missing before reading the rest."""
    table = tables.failures_table(run)
    return _one(table.title, (Part(table),)) if table.rows else None


def _ratios(run: RunData) -> dict[plots.Config, float]:
    """Data ÷ cache per configuration, where it is known: the cost curve's x."""
    return {config: regime.ratio for config, regime in cache.regimes(run).items()}


def overhead(run: RunData, records: list[SummaryRecord]) -> Content | None:
    """Every labelled headline figure against none, as a table and forest plots (those a cost
    curve does not draw at every cache size)."""
    timed = _timed(records)
    table = tables.overhead_table(timed)
    figures = plots.overhead_plots(timed, drawn=plots.curved(records, _ratios(run)))
    return _one("Overhead", (Part(table),), figures) if table.rows or figures else None


def cost_curve(run: RunData, records: list[SummaryRecord]) -> Content | None:
    """Configurations measured at several cache sizes: the overhead against data ÷ cache."""
    figures = plots.cost_curves(records, _ratios(run))
    if not figures:
        return None
    return Content(blocks=(Block("Cost curve", (), tuple(figures)),),
                   findings=tuple(knee.sentences(run, _timed(records))))


def cache_fit(run: RunData, records: list[SummaryRecord]) -> Content | None:
    """Whether each configuration's data fit its cache, for runs that recorded it (report/summaries/cache.py)."""
    table = cache.cache_fit_table(_timed_run(run))
    return _reference(table) if table is not None else None


def cipher_context(run: RunData, records: list[SummaryRecord]) -> Content | None:
    """Right after the overheads: how much of each test's cost the cipher itself explains, from the
    bytes read and written, and what the rest is (report/summaries/cipher_cost.py)."""
    table = cipher_cost.cipher_cost_table(run, _timed(records))
    return _one(table.title, (long_part(table),)) if table.rows else None


def connection(run: RunData, records: list[SummaryRecord]) -> Content | None:
    """What opening a connection costs, for runs that timed an open (report/summaries/connection.py)."""
    table = open_cost.connection_table(_timed_run(run), _timed(records))
    return _reference(table) if table is not None else None


def per_query(run: RunData, records: list[SummaryRecord]) -> Content | None:
    """The query tests' per-query plots (TPC-H's power and throughput), when a workload has them."""
    figures = plots.query_plots(records)
    return _one("Per-query", figures=figures) if figures else None


def resources(run: RunData, records: list[SummaryRecord]) -> Content | None:
    """Each configuration's own CPU time, I/O and memory (report/summaries/resources.py), with none and each
    encryption side by side; then the 1 Hz sampler's machine-wide view (its one-line `empty`
    text when no samples were taken)."""
    lockstep = run_order(run) == "lockstep"
    used, table = resource_use.cpu_table(run, records), tables.resources_table(run)
    figures = (resource_use.resource_view(used.rows, side_by_side=lockstep)
               + plots.resource_plots(run.samples, side_by_side=lockstep))
    return _one(table.title, ((long_part(used),) if used.rows else ()) + (long_part(table),), figures)


def sizes(run: RunData, records: list[SummaryRecord]) -> Content | None:
    return _reference(tables.size_table(records))


def verdicts(run: RunData, records: list[SummaryRecord]) -> Content | None:
    """One row per configuration, and one per trial folded under it in report.html (verdicts.csv's rows)."""
    summary, trials = tables.verdict_summary_table(run), tables.verdicts_table(run, csv=False)
    return _one(summary.title, (Part(summary), Part(trials, folded=True, markdown=False)))


def ciphers(run: RunData, records: list[SummaryRecord]) -> Content | None:
    return _reference(tables.cipher_table(run))


def environment(run: RunData, records: list[SummaryRecord]) -> Content | None:
    return _reference(tables.environment_table(run))


def noisy(run: RunData, records: list[SummaryRecord]) -> Content | None:
    return _reference(tables.noisy_table(noise.noisy_figures(records), run_order(run) or ""))


def machine_load(run: RunData, records: list[SummaryRecord]) -> Content | None:
    """Every trial with the machine's load around it, busy ones marked."""
    return _reference(tables.machine_load_table(noise.trial_loads(run)))


# --- findings without a section of their own --------------------------------------------


def cache_findings(run: RunData, records: list[SummaryRecord]) -> Content | None:
    """Whether each configuration's data fit its cache, and what that means for its overheads
    (report/summaries/cache.py); configurations whose cost an fs layer bounds are said so there."""
    return findings_only(cache.findings(run, headline.layer_bound_configs(run, records)))


def overhead_findings(run: RunData, records: list[SummaryRecord]) -> Content | None:
    """The overheads in words (report/summaries/findings.py): per engine its placebo's noise floor, its
    encryptions ranked, a bullet per encryption and a word on statistical power."""
    return findings_only(overheads.findings(run, records))


def connection_findings(run: RunData, records: list[SummaryRecord]) -> Content | None:
    """What opening a connection costs, in words (report/summaries/connection.py)."""
    return findings_only(open_cost.findings(run, records))


def claims(run: RunData, records: list[SummaryRecord]) -> Content | None:
    """The engines' published overheads beside what the run measured, where its regime matches
    theirs (report/summaries/claims.py)."""
    return findings_only(claimed.claim_lines(run, records))


def noise_findings(run: RunData, records: list[SummaryRecord]) -> Content | None:
    """Noisy figures and busy trials, last: what weakens the findings before them (report/summaries/noise.py)."""
    return findings_only(noise.findings(noise.noisy_figures(records), noise.trial_loads(run), run_order(run) or ""))
