"""`tdebench compare A B`: what changed from one run to the next."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import click

from tdebench.cli.console import err, out, plain
from tdebench.cli.report import run_or_exit
from tdebench.errors import InputError


NAMED = 10
"""Figures `compare --fail-above` names on its line; the comparison lists them all."""


@click.command("compare")
@click.argument("run_a", metavar="A", type=click.Path(path_type=Path))
@click.argument("run_b", metavar="B", type=click.Path(path_type=Path))
@click.option("--out", "out_dir", type=click.Path(path_type=Path),
              help="Write compare.md, compare.html and compare.csv here (a new or empty directory) instead of "
                   "printing the comparison.")
@click.option("--fail-above", "fail_above", type=float, metavar="PCT",
              help="Exit 1 if a timed headline figure got slower in B by more than PCT percent with its whole "
                   "95% CI above 0, or a TPM/NOPM figure lower by more than PCT percent with its CI below 0.")
@click.option("--markdown", "as_markdown", is_flag=True,
              help="Print the comparison as Markdown with its full tables (n, p, resolution), as compare.md has it, "
                   "instead of the terminal's summary.")
def compare_command(run_a: Path, run_b: Path, out_dir: Path | None, fail_above: float | None,
                    as_markdown: bool) -> None:
    """What changed from run A (the baseline) to run B (the new one): per configuration and
    headline figure both measured, the change of the median (B ÷ A − 1, 95% bootstrap CI,
    Mann–Whitney p) and the change of the overhead against none, read as slower, faster or
    within noise by its CI; what differs between the runs' environments and plans first, and
    the configurations only one run has.

    Prints the comparison to fit the terminal (a block per configuration, a line per figure),
    or as Markdown with its full tables (--markdown), or writes it to --out. Exit 0; 1 with --fail-above PCT
    when a timed headline figure's median change exceeds PCT and its CI lies entirely above 0,
    or a TPM or NOPM fell by more than PCT with its CI entirely below 0 (sizes, overheads and
    figures with fewer than 3 trials in a run never count); 2 bad input, or no figure in both
    runs.
    """
    from tdebench import report
    from tdebench.report.sections import compare
    from tdebench.report.writers import markdown

    if fail_above is not None and not (math.isfinite(fail_above) and fail_above >= 0):
        raise InputError(f"--fail-above {fail_above:g}: give a percentage of 0 or more, e.g. --fail-above 5")
    sides = []
    for label, directory in (("A", run_a), ("B", run_b)):
        run = run_or_exit(directory, f"{label}: ")
        try:
            sides.append(compare.side(label, directory, run))
        except (OSError, ValueError) as exc:
            raise InputError(f"{label}: {exc}") from None
    if out_dir is not None:
        empty_out_or_exit(out_dir)
    comparison = compare.compare_runs(*sides)
    if out_dir is None and as_markdown:
        click.echo(markdown.render_comparison(compare.document(comparison)))
    elif out_dir is None:
        click.echo(compare.render_text(compare.document(comparison), comparison, width=max(out.width, 40)))
    else:
        for path in report.write_comparison(comparison, out_dir):
            out.print(str(path), highlight=False, soft_wrap=True, markup=False)
    if not comparison.changes:
        raise InputError(f"no headline figure of the same configuration is in both {run_a} and {run_b}: nothing "
                         "to compare")
    if fail_above is None:
        return
    slower = comparison.regressions(fail_above)
    if slower:
        named = ", ".join(f"{c.where} {c.name} {c.median.pct:+.1f}% [{c.median.ci_low:.1f}, {c.median.ci_high:.1f}]"
                          for c in slower[:NAMED]) + (f" and {len(slower) - NAMED} more" if len(slower) > NAMED else "")
        err.print(f"[bold red]slower:[/] {len(slower)} headline figure(s) got slower by more than {fail_above:g}% "
                  f"with the 95% CI above 0 (a TPM or NOPM: lower, its CI below 0): {plain(named)}",
                  highlight=False, soft_wrap=True)
        sys.exit(1)
    err.print(f"no headline figure got slower by more than {fail_above:g}% with its 95% CI above 0 "
              "(and no TPM or NOPM lower)",
              highlight=False, soft_wrap=True, markup=False)


def empty_out_or_exit(directory: Path) -> None:
    """compare's --out: a new or empty directory (it is created), so that nothing but the
    comparison's own files is ever written into a directory of other files."""
    if directory.exists() and not directory.is_dir():
        raise InputError(f"--out {directory} exists and is not a directory")
    if directory.is_dir() and any(directory.iterdir()):
        raise InputError(f"--out {directory} is not empty; choose a new or empty directory for the comparison")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"--out {directory} cannot be created: {exc.strerror or exc}") from None
