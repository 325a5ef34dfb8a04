"""`tdebench report`: every derived file of a run rebuilt from its raw data; and how `report`
and `compare` read a run."""

from __future__ import annotations

from pathlib import Path

import click

from tdebench.cli.console import err, out, plain
from tdebench.errors import InputError
from tdebench.results import RunData
from tdebench.store import MANIFEST, RESULTS, OutputError, read_run_torn


def report_or_exit(run_dir: Path, run: RunData | None = None, plots: bool = True):
    """Build the report of `run_dir` (a report.Built; `run`: the run in it, when read already; without
    `plots`: --no-plots); exit 2 if it cannot be written (no space left, …)."""
    from tdebench import report

    try:
        return report.build_report(run_dir, run, plots=plots)
    except OutputError as exc:
        raise OutputError(f"{exc}; the raw records are kept: `tdebench report {run_dir}` writes the report later") \
            from None


no_plots_option = click.option(
    "--no-plots", is_flag=True, envvar="TDEBENCH_NO_PLOTS", show_envvar=True,
    help="Write the report without its plots: its tables and text, in a fraction of the time (drawing the "
         "plots is most of a report's); `tdebench report DIR` draws them later.")


@click.command("report")
@click.argument("run_dir", type=click.Path(path_type=Path))
@no_plots_option
def report_command(run_dir: Path, no_plots: bool) -> None:
    """Rebuild every derived file of RUN_DIR from its raw results.jsonl, plan.toml and environment.json.
    A half-written last line of results.jsonl (a run killed mid-write) is left out, with a
    warning naming it; a results.jsonl without a trial is exit 2."""
    for path in report_or_exit(run_dir, run_or_exit(run_dir), plots=not no_plots).paths:
        out.print(str(path), highlight=False)


def run_or_exit(run_dir: Path, label: str = "") -> RunData:
    """The run in `run_dir` as `report` and `compare` read it: exit 2 if it cannot be read or
    holds no trial; a warning naming a half-written last line, which is left out, and one for a run
    without its manifest, whose records are read in the oldest format (`label`: "A: ")."""
    try:
        run, torn = read_run_torn(run_dir)
    except (OSError, ValueError) as exc:
        raise InputError(f"{label}{exc}") from None
    if torn is not None:
        err.print(f"[yellow]warning:[/] {plain(f'{label}{run_dir / RESULTS}:{torn}')}: a half-written last line (a run "
                  "killed mid-write, or a file cut short) is left out; what it held is not in what follows",
                  highlight=False, soft_wrap=True)
    if not (run_dir / MANIFEST).is_file():
        err.print(f"[yellow]warning:[/] {plain(f'{label}{run_dir}')} has no {MANIFEST}: its records are read in the "
                  "oldest raw format, as a run from before manifests; a copy of a newer run needs its "
                  f"{MANIFEST} beside {RESULTS}, or figures it stores differently are misread or left out",
                  highlight=False, soft_wrap=True)
    if not (run.trials or run.measurements or run.verdicts):
        raise InputError(f"{label}{run_dir / RESULTS} holds no trial: the run stopped before its first "
                    f"(`tdebench run --resume {run_dir}` runs them)")
    return run
