"""`tdebench run`: a new run into --out, or `--resume DIR`, the rest of an interrupted one; its
report and summary at the end."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import NoReturn

import click

from tdebench.run import setup as runsetup
from tdebench.cli.console import err, plain, wrapped
from tdebench.cli.places import Work, place
from tdebench.cli.plans import default_plan, expected, plan_or_exit, plan_path
from tdebench.cli.progress import ProgressBar
from tdebench.cli.report import no_plots_option, report_or_exit
from tdebench.errors import InputError
from tdebench.plan import Plan, PlanError, as_stored, parse_plan
from tdebench.store import PLAN, RESULTS, Cut, OutputError, ResultStore, read_run


@click.command("run")
@click.argument("plan", required=False, type=click.Path(path_type=Path))
@click.option("--out", "out_dir", type=click.Path(path_type=Path),
              help="Run directory for results.jsonl, the CSVs and the reports (required, unless --resume).")
@click.option("--key-file", type=click.Path(path_type=Path),
              help="Secret (16+ bytes, mode 0600) from which every trial's key is derived (HKDF). "
                   "Without it, keys are random per trial.")
@click.option("--data-dir", type=click.Path(path_type=Path), default=None,
              help="Cache of generated benchmark data. [default: ~/.cache/tdebench/data]")
@click.option("--work-dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Where trial workspaces (databases, servers, mounts) live while they run; each is "
                   "removed after its trial. [default: the system's temporary directory]")
@click.option("--engine", "engines", multiple=True, metavar="NAME",
              help="Run only this engine's rows of PLAN (repeat for several), e.g. tdebench run assess --engine "
                   "sqlite; the run stores the plan with the choice (its key `only`).")
@click.option("--quiet", is_flag=True, help="No progress bar; only the final summary.")
@click.option("--force", is_flag=True,
              help="Replace a tdebench run already in --out (only the files it wrote are removed).")
@click.option("--resume", "resume_dir", type=click.Path(path_type=Path),
              help="Continue the interrupted or killed run in this directory with the plan stored there: "
                   "its complete trials are kept, the rest run in the original order. Not with PLAN, "
                   "--out or --force; pass the run's --key-file again, if it had one (refused without it).")
@click.option("--retry-failed", is_flag=True,
              help="With --resume: also run again the trials that failed (their records are removed), e.g. "
                   "after fixing what made them fail.")
@click.option("--i-own-this-database", "owned", is_flag=True,
              help="A server reached by url whose target database holds other objects: run anyway (tdebench "
                   "still works only in databases of its own, tdebench_<random>, and drops them).")
@click.option("--cluster", "cluster", metavar="ADDRESS",
              help="Run the trials on the workers of a Dask scheduler (tcp://HOST:8786; each worker started with "
                   "--nthreads 1 --resources machine=1), a round of each comparison group on one host; or "
                   "local:N, N workers on this machine (testing only: their trials disturb each other). "
                   "--key-file, --data-dir and --work-dir are then paths on every worker. Needs tdebench[cluster].")
@no_plots_option
def run_command(plan: Path | None, out_dir: Path | None, key_file: Path | None, data_dir: Path | None,
                work_dir: Path | None, engines: tuple[str, ...], quiet: bool, force: bool, resume_dir: Path | None,
                retry_failed: bool, owned: bool, cluster: str | None, no_plots: bool) -> None:
    """Run PLAN (a TOML file, or the name of a built-in plan such as servers; default: quick)
    and write its report to --out; or, with --resume DIR, finish the interrupted run in DIR.

    Every trial provisions a fresh database with one encryption, loads the data, runs the
    workload's tests (with warm-ups), checks every answer, closes the database and scans its
    files for the trial's canary strings. Raw numbers go to OUT/results.jsonl as they are
    taken; summary.csv, queries.csv, verdicts.csv, resources.csv, report.md and report.html
    follow. A query past the plan's query_timeout_s is stopped and recorded as "timeout".
    --out must be new, empty, or hold a tdebench run (replaced only with --force); one run
    at a time may use it.

    --resume DIR keeps every trial of DIR whose record of how it ended is stored, drops the
    records of a trial that was cut off (and a half-written last line), runs the missing
    trials in the plan's order, and says in the report that the run was resumed;
    --retry-failed runs its failed trials again too.
    """
    if resume_dir is not None:
        given = [name for name, value in (("PLAN", plan), ("--out", out_dir), ("--force", force),
                                          ("--engine", engines)) if value]
        if given:
            raise InputError(f"--resume continues the run in its directory with the plan stored there: "
                             f"leave out {', '.join(given)}")
        _resume(resume_dir, key_file, data_dir, work_dir, quiet, retry_failed, cluster, owned, not no_plots)
    if retry_failed:
        raise InputError("--retry-failed runs the failed trials of an interrupted run again: use it with --resume DIR")
    if out_dir is None:
        raise InputError("--out DIR is required: the run's directory (or --resume DIR to finish an interrupted run)")
    plan_file = plan_path(plan) if plan is not None else default_plan()
    the_plan = plan_or_exit(plan or default_plan())
    if engines:
        the_plan = _only(the_plan, engines, str(plan_file))
    from tdebench.run import outdir
    with place(cluster, the_plan, str(plan_file), key_file, data_dir, work_dir, owned) as where:
        out_lock = outdir.prepare(out_dir, force)
        try:  # the lock is held until the run has written its report
            store = ResultStore(out_dir)
            store.start(the_plan.as_run, where.environment())
            err.print(expected(the_plan), highlight=False, soft_wrap=True, markup=False)
            _measure(out_dir, quiet, where.work(store), plots=not no_plots)
        finally:
            outdir.unlock(out_dir, out_lock)


def _only(the_plan: Plan, engines: tuple[str, ...], source: str) -> Plan:
    """`--engine`: the plan with only those engines' rows (`plan.only_engines`)."""
    from tdebench.plan import only_engines

    if any(line.split("=")[0].strip() == "only" for line in the_plan.text.splitlines()):
        raise InputError(f"{source} already names its engines with `only`: leave out --engine, or edit the plan")
    names = [engine.name for engine in the_plan.engines]
    unknown = [name for name in engines if name not in names]
    if unknown:
        raise InputError(f"--engine {unknown[0]}: {source} has no such engine; its engines: {', '.join(names)}")
    try:
        return parse_plan(only_engines(the_plan.text, list(dict.fromkeys(engines))), source)
    except PlanError as exc:
        raise InputError(str(exc)) from None


def _resume(directory: Path, key_file: Path | None, data_dir: Path | None, work_dir: Path | None,
            quiet: bool, retry_failed: bool = False, cluster: str | None = None,
            owned: bool = False, plots: bool = True) -> NoReturn:
    """`run --resume DIR`: check the run in DIR and its plan, lock DIR, cut its results down to
    the complete trials, record the resume, and run the rest."""
    from tdebench.run import outdir

    try:
        stored = read_run(directory)
    except (FileNotFoundError, ValueError) as exc:
        raise InputError(f"--resume: {exc}") from None
    try:
        the_plan = as_stored(parse_plan(stored.plan_text, str(directory / PLAN)))
    except PlanError as exc:
        raise InputError(f"--resume: the run's plan no longer parses here: {exc}") from None
    with place(cluster, the_plan, str(directory / PLAN), key_file, data_dir, work_dir, owned) as where:
        runsetup.check_resume_keys(stored, where.keys_derived, directory, where.key_source)
        try:
            resume_lock = outdir.lock(directory, "--resume")
        except PermissionError as exc:
            raise InputError(f"--resume {directory} is not writable: {exc.strerror}") from None
        try:  # the lock is held until the run has written its report
            cut = _cut(directory, the_plan, where.environment(), retry_failed)
            _measure(directory, quiet, where.work(ResultStore(directory), resumed=cut), plots)
        finally:
            outdir.unlock(directory, resume_lock)


def _cut(directory: Path, the_plan: Plan, environment: dict, retry_failed: bool = False) -> Cut:
    """Cut the locked run in `directory` down to its complete trials, store a `resume` record
    (with what of `environment` differs from the run's start) and say what is left to run."""
    resumed = runsetup.cut_for_resume(directory, the_plan, environment, retry_failed)
    cut, total, left, changed = resumed.cut, resumed.total, resumed.left, resumed.changed
    dropped = [f"{cut.dropped} incomplete trial{'' if cut.dropped == 1 else 's'} dropped"] if cut.dropped else []
    dropped += ["a half-written last line dropped"] if cut.torn_line else []
    dropped += [f"{cut.retried} failed trial{'' if cut.retried == 1 else 's'} to run again"] if cut.retried else []
    more = (f", then rounds until every headline CI is within ±{the_plan.target_ci_pct:g}%"
            if resumed.more_rounds else "")
    err.print(f"resuming {directory}: {total - left} of {total} trials complete, {left} to run{more}"
              + (f" ({'; '.join(dropped)})" if dropped else ""), highlight=False, soft_wrap=True, markup=False)
    err.print(expected(the_plan, left), highlight=False, soft_wrap=True, markup=False)
    if changed:
        err.print("[yellow]warning:[/] the environment differs from the run's start (environment.json); the "
                  f"report will say so: {'; '.join(changed)}", highlight=False, soft_wrap=True)
    return cut


def _measure(out_dir: Path, quiet: bool, work: Work, plots: bool = True) -> NoReturn:
    """Run the trials (`work`: a new run's, or the rest of a resumed one) into `out_dir` and report
    them (without plots: --no-plots); exits 0 (all ok), 1 (a trial failed or a verdict was
    unexpected), 2 (no space left in `out_dir`) or 130 (interrupted)."""
    interrupted = threading.Event()
    runsetup.handle_interrupts(interrupted, lambda: err.print("[yellow]still cleaning up: servers, mounts, "
                                                              "workspaces…[/]"))
    progress = ProgressBar(quiet)
    try:
        with progress:
            summary = work(progress, interrupted)
    except OutputError as exc:  # the run stopped and cleaned up: nothing more could be recorded
        raise OutputError(f"{exc}; the records written before are in {out_dir / RESULTS}") from None
    except (KeyboardInterrupt, Exception) as exc:
        # an error raised after Ctrl-C is the interrupt's: shutil.rmtree, interrupted while it
        # closes a directory, turns the KeyboardInterrupt into "Bad file descriptor"
        if not (isinstance(exc, KeyboardInterrupt) or interrupted.is_set()):
            raise
        # no report here: building it takes seconds (plots), and Ctrl-C ends a run within 5 s
        err.print("[yellow]interrupted:[/] servers, mounts and workspaces were cleaned up; the trials that "
                  f"finished are in {out_dir / RESULTS}: tdebench report {out_dir} writes their report, "
                  f"tdebench run --resume {out_dir} finishes the run", highlight=False, soft_wrap=True)
        sys.exit(130)  # the program exits at once (cli.command), with no interpreter finalization
    built = report_or_exit(out_dir, plots=plots)
    _print_summary(summary, built.paths)
    if built.glance.lines:  # the report's first lines: what a reader came for
        err.print("In one minute:", highlight=False)
        for sentence in built.glance.shortened(TOP_COSTS):
            err.print(wrapped(plain(sentence), indent="    ", first="  - ", console=err), highlight=False,
                      soft_wrap=True, markup=False)
    if built.answer:  # the answer table, a line per encryption: its cost and the recommendation
        err.print("The answer (the report's table has coverage, integrity, leaks and keys):", highlight=False)
        for line in built.answer:
            err.print(wrapped(plain(line), indent="    ", first="  - ", console=err), highlight=False,
                      soft_wrap=True, markup=False)
    sys.exit(0 if summary.ok else 1)


TOP_COSTS = 6
"""How many of the report's "In one minute" cost lines (one per engine, workload and scale) `run`
prints at its end; the busy-machine and at-rest lines always follow."""


def _print_summary(summary, written: list[Path]) -> None:
    for outcome in summary.failed:
        err.print(f"[bold red]FAILED[/] {outcome.trial.id}: {plain(outcome.error)}", highlight=False)
    failed = {outcome.trial for outcome in summary.failed}
    for verdict in summary.unexpected_verdicts:
        if verdict.trial in failed and not verdict.leak:
            continue  # the failure above explains its scan (the report counts it "not judged": findings.judged)
        err.print(f"[bold red]VERDICT[/] {verdict.trial.id}: {verdict.verdict} (expected {verdict.expected}) "
                  f"{plain(verdict.detail)}", highlight=False)
    status = "[green]all trials ok[/]" if summary.ok else "[red]problems above[/]"
    kept = f" ({summary.kept} kept from before the interruption)" if summary.kept else ""
    err.print(f"{summary.trials} trials{kept}, {status}", highlight=False)
    if written:
        out_dir = written[0].parent.resolve()  # a path that opens from any directory
        names = sorted({p.resolve().relative_to(out_dir).parts[0] for p in written
                        if p.resolve().is_relative_to(out_dir)})
        also = ", ".join(n for n in names if n != "report.html")
        # the path whole on its line (to copy), what else was written wrapped below it
        err.print(f"report: {out_dir / 'report.html'}", highlight=False, soft_wrap=True, markup=False)
        err.print(wrapped(f"also {also}", indent="  ", console=err), highlight=False, soft_wrap=True, markup=False)
