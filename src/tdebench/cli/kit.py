"""`tdebench script` and `tdebench import`: the script kit for servers tdebench cannot run here,
and its logs read back as a run."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tdebench.run import setup as runsetup
from tdebench.cli.compare import empty_out_or_exit
from tdebench.cli.console import err, out, plain
from tdebench.cli.plans import builtin_plans, plan_path
from tdebench.cli.report import report_or_exit
from tdebench.engines import KIT
from tdebench.errors import InputError


@click.command("script")
@click.argument("plan", type=click.Path(path_type=Path))
@click.option("--engine", required=True, type=click.Choice(KIT), help="The engine to write scripts for.")
@click.option("--out", "out_dir", required=True, type=click.Path(path_type=Path),
              help="A new or empty directory for the kit: scripts, CSV data, run.sh, README.md, kit.json.")
@click.option("--data-dir", type=click.Path(path_type=Path), default=None,
              help="Cache of generated benchmark data. [default: ~/.cache/tdebench/data]")
def script_command(plan: Path, engine: str, out_dir: Path, data_dir: Path | None) -> None:
    """Write numbered SQL scripts that run PLAN's TPC-H workload on a SQL Server, Oracle or MySQL 8
    server tdebench cannot run here: per scale and encryption (the plan's [[engines]] table of
    that name, or every encryption the kit has for it), setup with the engine's own TDE,
    schema, bulk load of CSV files written into --out, canaries, the power test and the
    throughput streams in the spec's order, and teardown; with run.sh and a README saying how
    to run them with the engine's client, timing on. `tdebench import` reads their logs back.
    No script holds a secret: passwords come from the client's own variables."""
    from tdebench.kit import scripts, targets

    target = targets.target(engine)
    path = plan_path(plan)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        hint = "" if path.exists() else f"; built-in plans: {', '.join(builtin_plans())}"
        raise InputError(f"{path}: cannot read plan: {getattr(exc, 'strerror', None) or exc}{hint}") from None
    kit_plan = scripts.read_plan(text, str(path), target)
    empty_out_or_exit(out_dir)
    trials = scripts.write_kit(target, kit_plan, text, out_dir, data_dir or runsetup.default_data_dir())
    out.print(f"{out_dir}: {len(trials)} trials ({', '.join(kit_plan.encryptions)} at scale "
              f"{', '.join(f'{s:g}' for s in kit_plan.scales)}), {kit_plan.repetitions} rounds; "
              f"see {out_dir / scripts.README}", highlight=False, soft_wrap=True, markup=False)


@click.command("import")
@click.argument("kit_dir", metavar="DIR", type=click.Path(path_type=Path))
@click.option("--engine", required=True, type=click.Choice(KIT), help="The engine the kit was written for.")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=None,
              help="The run directory to write (new or empty). [default: DIR/run]")
def import_command(kit_dir: Path, engine: str, out_dir: Path | None) -> None:
    """Read the console logs of a script kit (`tdebench script`) run on the server into a run
    directory: results.jsonl with the records a run writes, marked as imported (the client's
    timing: sqlcmd's STATISTICS TIME, sqlplus's Elapsed, the mysql client's "(0.01 sec)"),
    then its report; `tdebench report` and `tdebench compare` read it like any run. A failed
    statement makes its query failed and the trial failed (exit 1); a missing log is exit 2."""
    from tdebench.run import outdir
    from tdebench.kit import importer, scripts

    try:
        scripts.read_kit(kit_dir)
    except (FileNotFoundError, ValueError) as exc:
        raise InputError(str(exc)) from None
    target = out_dir or kit_dir / "run"
    lock = outdir.prepare(target, force=False)
    try:
        try:
            imported = importer.import_kit(kit_dir, engine, target)
        except (FileNotFoundError, ValueError) as exc:
            raise InputError(str(exc)) from None
        built = report_or_exit(target)
    finally:
        outdir.unlock(target, lock)
    for failure in imported.failed:
        err.print(f"[bold red]FAILED[/] {plain(failure)}", highlight=False, soft_wrap=True)
    err.print(f"{imported.trials} trials imported ({imported.measurements} measurements), "
              f"{len(imported.failed)} failed; report: {target / 'report.html'}", highlight=False, soft_wrap=True,
              markup=False)
    for path in built.paths:
        out.print(str(path), highlight=False, soft_wrap=True, markup=False)
    sys.exit(1 if imported.failed else 0)
