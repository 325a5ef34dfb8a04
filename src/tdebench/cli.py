"""The `tdebench` command: run, report, compare, engines, verify, ciphers, script, import.

Exit codes: 0 success; 1 the run finished but something is wrong (a failed trial, a wrong
answer, an unexpected verdict), `verify` found plaintext or `compare --fail-above` found a
figure that got slower (a TPM or NOPM lower); 2 bad input (plan, options, output or data
directory, unusable engine, a damaged or empty results.jsonl, a resume with another key source);
130 interrupted (Ctrl-C or SIGTERM, in any command).
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
import textwrap
import threading
import time
from importlib import resources
from pathlib import Path
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, NoReturn

import click
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)
from rich.table import Column, Table

from tdebench import runsetup
from tdebench.engines import ENGINES, REMOTE_ENGINES, get_engine
from tdebench.engines.timeout import interrupt_on_signals
from tdebench.errors import InputError
from tdebench.keys import KeySource
from tdebench.plan import Plan, PlanError, TrialSpec, load_plan, parse_plan
from tdebench.results import TrialOutcome, Verdict
from tdebench.results import RunData
from tdebench.store import PLAN, RESULTS, Cut, OutputError, ResultStore, read_run, torn_line

if TYPE_CHECKING:
    from tdebench.runner import RunSummary

err = Console(stderr=True)
out = Console()


MESSAGE_LIMIT = 2000  # characters of one error message: a long plan value or engine output is cut


def plain(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """User or engine text as printed: cut to `limit` characters, rich markup escaped (so a
    plan's `[[engines]]` or an engine's `[red]` prints as written)."""
    if len(text) > limit:
        text = f"{text[:limit]}… ({len(text) - limit} more characters)"
    return escape(text)


def usage_error(message: str, code: int = 2) -> NoReturn:
    """Bad input: say what and how to fix it, exit 2 (or an InputError's `code`)."""
    err.print(f"[bold red]error:[/] {plain(message)}", highlight=False, soft_wrap=True)
    sys.exit(code)


def builtin_plans() -> dict[str, Path]:
    """The plans shipped with tdebench, by name ("quick", "servers", …)."""
    folder = Path(str(resources.files("tdebench") / "plans"))
    return {path.stem: path for path in sorted(folder.glob("*.toml"), key=lambda path: path.stem)}


def default_plan() -> Path:
    return builtin_plans()["quick"]


def plan_path(given: Path) -> Path:
    """A plan file, or the name of a built-in plan ("servers", "servers.toml") when no such
    file exists here."""
    if given.exists() or len(given.parts) > 1:
        return given
    return builtin_plans().get(given.name.removesuffix(".toml"), given)


class _Commands(click.Group):
    """The subcommands: an InputError (errors.py) that no command turned into its message ends in
    its one line and exit code, never a traceback; Ctrl-C anywhere ends in exit 130 (click's own
    "Aborted!" is exit 1, the code of a finished run that found something wrong)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except InputError as exc:
            usage_error(str(exc), exc.exit_code)
        except KeyboardInterrupt:
            err.print("[yellow]interrupted[/]", highlight=False)
            sys.exit(130)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="tdebench")
def main() -> None:
    """What does encryption at rest cost on my engine and workload, and is my data really encrypted?

    \b
    Typical use:
      tdebench engines                      # what can run here, with every encryption
      tdebench run --out results/quick      # the default plan (embedded engines, TPC-H SF 0.01)
      tdebench run --resume results/quick   # finish a run that was interrupted or killed
      tdebench report results/quick         # rebuild every derived file from results.jsonl
      tdebench compare results/old results/quick   # what changed from one run to the next
      tdebench verify DIR --canary SECRET   # is SECRET anywhere in the bytes under DIR?
    """


@main.command()
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
def run(plan: Path | None, out_dir: Path | None, key_file: Path | None, data_dir: Path | None,
        work_dir: Path | None, quiet: bool, force: bool, resume_dir: Path | None, retry_failed: bool,
        owned: bool, cluster: str | None) -> None:
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
        given = [name for name, value in (("PLAN", plan), ("--out", out_dir), ("--force", force)) if value]
        if given:
            usage_error(f"--resume continues the run in its directory with the plan stored there: "
                        f"leave out {', '.join(given)}")
        _resume(resume_dir, key_file, data_dir, work_dir, quiet, retry_failed, cluster, owned)
    if retry_failed:
        usage_error("--retry-failed runs the failed trials of an interrupted run again: use it with --resume DIR")
    if out_dir is None:
        usage_error("--out DIR is required: the run's directory (or --resume DIR to finish an interrupted run)")
    plan_file = plan_path(plan) if plan is not None else default_plan()
    the_plan = _plan_or_exit(plan or default_plan())
    from tdebench import outdir
    with _place(cluster, the_plan, str(plan_file), key_file, data_dir, work_dir, owned) as place:
        try:
            out_lock = outdir.prepare(out_dir, force)
        except outdir.OutDirError as exc:
            usage_error(str(exc))
        try:  # the lock is held until the run has written its report
            store = ResultStore(out_dir)
            try:
                store.start(the_plan.text, place.environment())
            except OutputError as exc:
                usage_error(str(exc))
            _measure(out_dir, quiet, place.work(store))
        finally:
            outdir.unlock(out_dir, out_lock)


def _ready_or_exit(the_plan: Plan, key_file: Path | None, work_dir: Path | None,
                   owned: bool = False) -> tuple[KeySource, dict]:
    """The key source and the plan's engines, once every one can run here in `work_dir` (and every
    server reached by url has a target of nothing but tdebench's, unless `owned`)."""
    try:
        ready = runsetup.ready(the_plan, key_file, work_dir, owned)
    except runsetup.SetupError as exc:
        usage_error(str(exc))
    _print_cleaned(ready.cleaned)
    return ready.keys, ready.engines


Work = Callable[["_ProgressBar", threading.Event], "RunSummary"]
"""What a run does between its start and its report: the trials, here or on a cluster."""


class _Here:
    """Trials on this machine: its engines checked, its cipher speeds, the runner."""

    def __init__(self, the_plan: Plan, key_file: Path | None, data_dir: Path | None, work_dir: Path | None,
                 owned: bool = False) -> None:
        if the_plan.driver_hosts > 1:
            usage_error(f"the plan's driver_hosts = {the_plan.driver_hosts} spreads the oltp virtual users over that "
                        "many hosts of a cluster: run it with --cluster ADDRESS (docs/cluster.md), or remove "
                        "driver_hosts to drive the server from this machine alone")
        self.plan, self.data_dir, self.work_dir = the_plan, data_dir, work_dir
        try:  # before --out is made: a run that cannot prepare its data leaves no half-made run directory
            runsetup.check_data_dir(data_dir or runsetup.default_data_dir())
        except runsetup.SetupError as exc:
            usage_error(str(exc))
        self.keys, self.engines = _ready_or_exit(the_plan, key_file, work_dir, owned)

    def __enter__(self) -> "_Here":
        return self

    def __exit__(self, *exc_info: object) -> None:
        pass

    @property
    def keys_derived(self) -> bool:
        return self.keys.derived

    @property
    def key_source(self) -> dict | None:
        return self.keys.describe()

    def environment(self) -> dict:
        return {**runsetup.environment(self.engines), runsetup.KEY_SOURCE: self.keys.describe()}

    def work(self, store: ResultStore, resumed: Cut | None = None) -> Work:
        def trials(progress: _ProgressBar, interrupted: threading.Event) -> RunSummary:
            from tdebench.runner import Runner

            with interrupt_on_signals():  # Ctrl-C also stops a long embedded query at once
                if resumed is None or not resumed.ciphers:
                    progress.phase("measuring this machine's raw cipher throughput")
                    runsetup.measure_cipher_speeds(store, self.plan, self.engines)
                runner = Runner(plan=self.plan, store=store, data_dir=self.data_dir or runsetup.default_data_dir(),
                                keys=self.keys, progress=progress, workspace_parent=self.work_dir,
                                interrupted=interrupted)
                return runner.run()
        return trials


class _OnCluster:
    """Trials on the workers of a Dask cluster (tdebench.cluster): the workers checked on entry,
    every host's environment, the units run there."""

    def __init__(self, address: str, the_plan: Plan, source: str, key_file: Path | None, data_dir: Path | None,
                 work_dir: Path | None) -> None:
        try:
            from tdebench.cluster import client, work
        except ImportError as exc:
            usage_error(f"--cluster needs Dask distributed ({exc.name} is missing): pip install 'tdebench[cluster]'")
        problem = work.cluster_problem(the_plan)
        if problem:
            usage_error(problem)
        self.plan, self.source, self.address = the_plan, source, address
        self.key_file, self.data_dir, self.work_dir = key_file, data_dir, work_dir
        try:
            self.cluster = client.Cluster(address)
        except runsetup.SetupError as exc:
            usage_error(str(exc))
        if self.cluster.local_workers is not None:
            err.print(f"[yellow]warning:[/] --cluster {address} runs {self.cluster.local_workers} workers on this "
                      "machine: their trials disturb each other, so its figures test tdebench, they measure nothing",
                      highlight=False, soft_wrap=True)
        self.hosts: dict = {}
        self.started = client.started_utc()

    def __enter__(self) -> "_OnCluster":
        try:
            self.cluster.__enter__()
            self.hosts = self.cluster.check(self.plan, self.source, self.key_file, self.work_dir)
        except runsetup.SetupError as exc:
            self.cluster.__exit__(None, None, None)
            usage_error(str(exc))
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.cluster.__exit__(None, None, None)

    @property
    def keys_derived(self) -> bool:
        return self.key_file is not None

    @property
    def key_source(self) -> dict | None:
        return None  # the key file is read on each worker: only whether there is one is known here

    def environment(self) -> dict:
        from tdebench.cluster.work import cluster_environment

        return cluster_environment(self.hosts, self.address, self.started)

    def work(self, store: ResultStore, resumed: Cut | None = None) -> Work:
        def trials(progress: _ProgressBar, interrupted: threading.Event) -> RunSummary:
            from tdebench.cluster.client import Collector
            from tdebench.plan import to_run
            from tdebench.runner import kept_summary

            stored = read_run(store.directory)
            done = stored.complete_trials()
            summary, specs = kept_summary(stored), to_run(self.plan, done)
            collector = Collector(store, stored.environment, done, summary, summary.trials + len(specs), specs,
                                  progress, stored.ciphers)
            progress.phase(f"{len(specs)} trials on {len(self.hosts)} hosts: {', '.join(self.hosts)}")
            options = {"key_file": str(self.key_file) if self.key_file else None,
                       "data_dir": str(self.data_dir) if self.data_dir else None,
                       "work_dir": str(self.work_dir) if self.work_dir else None}
            more = None
            if self.plan.adaptive and stored.stopping is None:  # rounds added as a local run adds them
                more = self._more_rounds(store, collector, stored.resumes[-1].elapsed_before_s if stored.resumes
                                         else 0.0)
            self.cluster.run(self.plan, self.source, specs, collector, options, more)
            return summary
        return trials

    def _more_rounds(self, store: ResultStore, collector: Any, before_s: float) -> Callable[[], list]:
        """An adaptive plan's next rounds, decided by the client from the records stored so far
        (runner.next_rounds: every overhead is within one host, so the rounds of all hosts make
        each group's interval); once none is added, the `Stopping` record stored."""
        from tdebench.runner import next_rounds

        start = time.monotonic() - before_s

        def more() -> list:
            trials, stopping = next_rounds(self.plan, read_run(store.directory), time.monotonic() - start,
                                           collector.progress)
            if stopping is not None:
                store.append(stopping)
                store.sync()
            collector.expect(trials)
            return trials
        return more


def _place(cluster: str | None, the_plan: Plan, source: str, key_file: Path | None, data_dir: Path | None,
           work_dir: Path | None, owned: bool = False) -> _Here | _OnCluster:
    """Where the trials run: here, or on the cluster at `cluster`; exits 2 if they cannot."""
    if cluster is None:
        return _Here(the_plan, key_file, data_dir, work_dir, owned)
    return _OnCluster(cluster, the_plan, source, key_file, data_dir, work_dir)


def _resume(directory: Path, key_file: Path | None, data_dir: Path | None, work_dir: Path | None,
            quiet: bool, retry_failed: bool = False, cluster: str | None = None,
            owned: bool = False) -> NoReturn:
    """`run --resume DIR`: check the run in DIR and its plan, lock DIR, cut its results down to
    the complete trials, record the resume, and run the rest."""
    from tdebench import outdir

    try:
        stored = read_run(directory)
    except (FileNotFoundError, ValueError) as exc:
        usage_error(f"--resume: {exc}")
    try:
        the_plan = parse_plan(stored.plan_text, str(directory / PLAN))
    except PlanError as exc:
        usage_error(f"--resume: the run's plan no longer parses here: {exc}")
    with _place(cluster, the_plan, str(directory / PLAN), key_file, data_dir, work_dir, owned) as place:
        try:
            runsetup.check_resume_keys(stored, place.keys_derived, directory, place.key_source)
        except runsetup.SetupError as exc:
            usage_error(str(exc))
        try:
            resume_lock = outdir.lock(directory, "--resume")
        except outdir.OutDirError as exc:
            usage_error(str(exc))
        except PermissionError as exc:
            usage_error(f"--resume {directory} is not writable: {exc.strerror}")
        try:  # the lock is held until the run has written its report
            try:
                cut = _cut(directory, the_plan, place.environment(), retry_failed)
            except OutputError as exc:
                usage_error(str(exc))
            _measure(directory, quiet, place.work(ResultStore(directory), resumed=cut))
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
    if changed:
        err.print("[yellow]warning:[/] the environment differs from the run's start (environment.json); the "
                  f"report will say so: {'; '.join(changed)}", highlight=False, soft_wrap=True)
    return cut


def _measure(out_dir: Path, quiet: bool, work: Work) -> NoReturn:
    """Run the trials (`work`: a new run's, or the rest of a resumed one) into `out_dir` and report
    them; exits 0 (all ok), 1 (a trial failed or a verdict was unexpected), 2 (no space left in
    `out_dir`) or 130 (interrupted)."""
    interrupted = threading.Event()
    runsetup.handle_interrupts(interrupted, lambda: err.print("[yellow]still cleaning up: servers, mounts, "
                                                              "workspaces…[/]"))
    progress = _ProgressBar(quiet)
    try:
        with progress:
            summary = work(progress, interrupted)
    except OutputError as exc:  # the run stopped and cleaned up: nothing more could be recorded
        usage_error(f"{exc}; the records written before are in {out_dir / RESULTS}")
    except (KeyboardInterrupt, Exception) as exc:
        # an error raised after Ctrl-C is the interrupt's: shutil.rmtree, interrupted while it
        # closes a directory, turns the KeyboardInterrupt into "Bad file descriptor"
        if not (isinstance(exc, KeyboardInterrupt) or interrupted.is_set()):
            raise
        # no report here: building it takes seconds (plots), and Ctrl-C ends a run within 5 s
        err.print("[yellow]interrupted:[/] servers, mounts and workspaces were cleaned up; the trials that "
                  f"finished are in {out_dir / RESULTS}: tdebench report {out_dir} writes their report, "
                  f"tdebench run --resume {out_dir} finishes the run", highlight=False, soft_wrap=True)
        _exit_now(130)
    built = _report_or_exit(out_dir)
    _print_summary(summary, built.paths)
    if built.headline:  # the report's first lines: what a reader came for
        err.print("In one minute:", highlight=False)
        for sentence in built.headline[:TOP_LINES]:
            err.print(_wrapped(plain(sentence), indent="    ", first="  - ", console=err), highlight=False,
                      soft_wrap=True, markup=False)
    sys.exit(0 if summary.ok else 1)


def _exit_now(code: int) -> NoReturn:
    """Exit without the interpreter's finalization, which took 1.6 s on a busy machine (numba's and
    matplotlib's teardown): for an interrupted run, whose servers, mounts and workspaces are gone
    and whose records are on disk (fsynced; the run directory's flock goes with the process)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


TOP_LINES = 3
"""How many of the report's "In one minute" sentences `run` prints at its end."""


def _report_or_exit(run_dir: Path):
    """Build the report of `run_dir` (a report.Built); exit 2 if it cannot be written (no space
    left, …)."""
    from tdebench import report

    try:
        return report.build_report(run_dir)
    except OutputError as exc:
        usage_error(f"{exc}; the raw records are kept: `tdebench report {run_dir}` writes the report later")


def _plan_or_exit(path: Path) -> Plan:
    try:
        return load_plan(plan_path(path))
    except PlanError as exc:
        hint = "" if path.exists() else f"\n  built-in plans: {', '.join(builtin_plans())}"
        usage_error(str(exc) + hint)


def _print_summary(summary, written: list[Path]) -> None:
    for outcome in summary.failed:
        err.print(f"[bold red]FAILED[/] {outcome.trial.id}: {plain(outcome.error)}", highlight=False)
    for verdict in summary.unexpected_verdicts:
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
        err.print(_wrapped(f"also {also}", indent="  ", console=err), highlight=False, soft_wrap=True, markup=False)


class _ProgressBar:
    """A rich progress bar over trials with ETA; prints nothing when quiet. When stderr is not
    a terminal (CI, a pipe, a log file) a bar cannot redraw, so each phase and each finished
    trial is a line of its own instead."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.lines = not quiet and not err.is_terminal
        # the trial's id is cut to fit and the bar takes what is left, so the line fits 80 columns
        self.bar = Progress(SpinnerColumn(), TextColumn("{task.description}", table_column=Column(
                                max_width=38, no_wrap=True, overflow="ellipsis")), BarColumn(bar_width=None),
                            MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("eta"),
                            TimeRemainingColumn(), console=err, disable=quiet or self.lines)
        self.task = self.bar.add_task("starting", total=None)
        self.position = (0, 0)

    def __enter__(self) -> "_ProgressBar":
        self.bar.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.bar.__exit__(kind, exc, traceback)

    def phase(self, text: str) -> None:
        self.bar.update(self.task, description=text)
        if self.lines:
            err.print(f"{text}…", highlight=False, soft_wrap=True, markup=False)

    def trial_started(self, index: int, total: int, spec: TrialSpec) -> None:
        self.bar.update(self.task, total=total, completed=index - 1, description=spec.key.id)
        self.position = (index, total)

    def trial_finished(self, outcome: TrialOutcome, verdict: Verdict | None) -> None:
        self.bar.advance(self.task)
        if self.lines:
            index, total = self.position
            checked = f", {verdict.verdict}" if verdict is not None else ""
            err.print(f"[{index}/{total}] {outcome.trial.id}: {outcome.status} in {outcome.elapsed_s:.1f} s{checked}",
                      highlight=False, soft_wrap=True, markup=False)
        if outcome.status != "ok":
            self.bar.console.print(f"[red]failed[/] {outcome.trial.id}: {plain(outcome.error)}", highlight=False)


@main.command()
def plans() -> None:
    """List the built-in plans (`tdebench run NAME` runs one): what each compares, how many
    trials it runs (at least, for an adaptive plan) and how long a run took where its author
    timed it."""
    from tdebench.plan import schedule

    for name, path in builtin_plans().items():
        try:
            the_plan = load_plan(path)
        except PlanError as exc:
            _block(f"[bold]{escape(name)}[/]", f"does not load here: {exc}")
            continue
        trials = len(schedule(the_plan))
        count = f"≥{trials}" if the_plan.adaptive else str(trials)
        measured = f"measured: {the_plan.measured}" if the_plan.measured else "not yet timed"
        _block(f"[bold]{escape(name)}[/] · {count} trials", f"{the_plan.description}; {measured}")


def _block(title: str, body: str) -> None:
    """One record as a block that reads at any width: its title line (rich markup), then its
    text wrapped between words and indented under it (never broken inside a word)."""
    out.print(title, highlight=False, soft_wrap=True)
    out.print(_wrapped(plain(body), indent="  "), highlight=False, soft_wrap=True, markup=False)


def _wrapped(text: str, indent: str, first: str | None = None, console: Console = out) -> str:
    """`text` wrapped to `console`'s width between words (a long path stays whole, on a line
    of its own), every line after the first indented by `indent`."""
    return textwrap.fill(text, width=max(console.width, 40), initial_indent=indent if first is None else first,
                         subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)


@main.command("report")
@click.argument("run_dir", type=click.Path(path_type=Path))
def report_command(run_dir: Path) -> None:
    """Rebuild every derived file of RUN_DIR from its raw results.jsonl, plan.toml and environment.json.
    A half-written last line of results.jsonl (a run killed mid-write) is left out, with a
    warning naming it; a results.jsonl without a trial is exit 2."""
    _run_or_exit(run_dir)
    for path in _report_or_exit(run_dir).paths:
        out.print(str(path), highlight=False)


def _run_or_exit(run_dir: Path, label: str = "") -> RunData:
    """The run in `run_dir` as `report` and `compare` read it: exit 2 if it cannot be read or
    holds no trial; a warning naming a half-written last line, which is left out (`label`: "A: ")."""
    try:
        run, torn = read_run(run_dir), torn_line(run_dir)
    except (OSError, ValueError) as exc:
        usage_error(f"{label}{exc}")
    if torn is not None:
        err.print(f"[yellow]warning:[/] {plain(f'{label}{run_dir / RESULTS}:{torn}')}: a half-written last line (a run "
                  "killed mid-write, or a file cut short) is left out; what it held is not in what follows",
                  highlight=False, soft_wrap=True)
    if not (run.trials or run.measurements or run.verdicts):
        usage_error(f"{label}{run_dir / RESULTS} holds no trial: the run stopped before its first "
                    f"(`tdebench run --resume {run_dir}` runs them)")
    return run


NAMED = 10
"""Figures `compare --fail-above` names on its line; the comparison lists them all."""


@main.command("compare")
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
    from tdebench.report import compare

    if fail_above is not None and not (math.isfinite(fail_above) and fail_above >= 0):
        usage_error(f"--fail-above {fail_above:g}: give a percentage of 0 or more, e.g. --fail-above 5")
    sides = []
    for label, directory in (("A", run_a), ("B", run_b)):
        run = _run_or_exit(directory, f"{label}: ")
        try:
            sides.append(compare.side(label, directory, run))
        except (OSError, ValueError) as exc:
            usage_error(f"{label}: {exc}")
    if out_dir is not None:
        _empty_out_or_exit(out_dir)
    comparison = compare.compare_runs(*sides)
    if out_dir is None and as_markdown:
        click.echo(compare.render_markdown(compare.document(comparison)))
    elif out_dir is None:
        click.echo(compare.render_text(compare.document(comparison), comparison, width=max(out.width, 40)))
    else:
        try:
            written = compare.write(comparison, out_dir)
        except OutputError as exc:
            usage_error(str(exc))
        for path in written:
            out.print(str(path), highlight=False, soft_wrap=True, markup=False)
    if not comparison.changes:
        usage_error(f"no headline figure of the same configuration is in both {run_a} and {run_b}: nothing to compare")
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


def _empty_out_or_exit(directory: Path) -> None:
    """compare's --out: a new or empty directory (it is created), so that nothing but the
    comparison's own files is ever written into a directory of other files."""
    if directory.exists() and not directory.is_dir():
        usage_error(f"--out {directory} exists and is not a directory")
    if directory.is_dir() and any(directory.iterdir()):
        usage_error(f"--out {directory} is not empty; choose a new or empty directory for the comparison")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        usage_error(f"--out {directory} cannot be created: {exc.strerror or exc}")


KIT_ENGINES = ("sqlserver", "oracle", "mysql")
"""The script kit's engines (kit/targets.py): servers tdebench cannot run here."""


@main.command("script")
@click.argument("plan", type=click.Path(path_type=Path))
@click.option("--engine", required=True, type=click.Choice(KIT_ENGINES), help="The engine to write scripts for.")
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
        usage_error(f"{path}: cannot read plan: {getattr(exc, 'strerror', None) or exc}{hint}")
    try:
        kit_plan = scripts.read_plan(text, str(path), target)
    except PlanError as exc:
        usage_error(str(exc))
    _empty_out_or_exit(out_dir)
    trials = scripts.write_kit(target, kit_plan, text, out_dir, data_dir or runsetup.default_data_dir())
    out.print(f"{out_dir}: {len(trials)} trials ({', '.join(kit_plan.encryptions)} at scale "
              f"{', '.join(f'{s:g}' for s in kit_plan.scales)}), {kit_plan.repetitions} rounds; "
              f"see {out_dir / scripts.README}", highlight=False, soft_wrap=True, markup=False)


@main.command("import")
@click.argument("kit_dir", metavar="DIR", type=click.Path(path_type=Path))
@click.option("--engine", required=True, type=click.Choice(KIT_ENGINES), help="The engine the kit was written for.")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=None,
              help="The run directory to write (new or empty). [default: DIR/run]")
def import_command(kit_dir: Path, engine: str, out_dir: Path | None) -> None:
    """Read the console logs of a script kit (`tdebench script`) run on the server into a run
    directory: results.jsonl with the records a run writes, marked as imported (the client's
    timing: sqlcmd's STATISTICS TIME, sqlplus's Elapsed, the mysql client's "(0.01 sec)"),
    then its report; `tdebench report` and `tdebench compare` read it like any run. A failed
    statement makes its query failed and the trial failed (exit 1); a missing log is exit 2."""
    from tdebench import outdir
    from tdebench.kit import importer, scripts

    try:
        scripts.read_kit(kit_dir)
    except (FileNotFoundError, ValueError) as exc:
        usage_error(str(exc))
    target = out_dir or kit_dir / "run"
    try:
        lock = outdir.prepare(target, force=False)
    except outdir.OutDirError as exc:
        usage_error(str(exc))
    try:
        try:
            imported = importer.import_kit(kit_dir, engine, target)
        except (FileNotFoundError, ValueError) as exc:
            usage_error(str(exc))
        except OutputError as exc:
            usage_error(str(exc))
        built = _report_or_exit(target)
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


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def engines(as_json: bool) -> None:
    """List every engine: version, whether it can run here (and if not, why and the fix), and
    each encryption with its algorithm, key bits, mode, layer and what it covers; then the
    engines a plan reaches by url on a server tdebench does not start (whether their driver is
    installed, and the encryptions they turn on by SQL)."""
    rows: list[dict[str, Any]] = []
    for name in ENGINES:
        engine = get_engine(name)
        available = engine.availability()
        rows.append({
            "name": name,
            "version": engine.version() if available.usable else None,
            "usable": available.usable,
            "reason": available.reason,
            "fix": available.fix,
            "embedded": engine.capabilities.embedded,
            "memory_mb": engine.memory_use,
            "encryptions": [_encryption_row(engine, e) for e in engine.encryptions],
        })
    for name, remote_class in REMOTE_ENGINES.items():  # usable: its driver is installed
        remote = remote_class()
        available = remote.availability()
        rows.append({"name": name, "version": None, "usable": available.usable, "reason": available.reason,
                     "fix": available.fix, "embedded": False, "memory_mb": remote.memory_use, "by_url": True,
                     "encryptions": [{**e.to_dict(), "usable": available.usable, "reason": "by url", "fix": ""}
                                     for e in remote.encryptions]})
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    notes: dict[str, int] = {}  # each distinct note once, numbered in order of appearance

    def mark(text: str) -> str:
        return f"[{notes.setdefault(text, len(notes) + 1)}]" if text else "-"

    for row in rows:
        if row.get("by_url"):
            state = ("[green]driver installed[/]" if row["usable"] else
                     f"[red]driver missing[/]: {plain(row['reason'])}\n  fix: {plain(row['fix'])}")
            out.print(f"[bold]{plain(row['name'])}[/] by url (a server tdebench does not start; docs/manual.md) — "
                      f"{state}", highlight=False)
        elif row["usable"]:
            out.print(f"[bold]{plain(row['name'])}[/] {plain(row['version'] or '')} — [green]usable[/]",
                      highlight=False)
        else:
            out.print(f"[bold]{plain(row['name'])}[/] — [red]not usable[/]: {plain(row['reason'])}\n  fix: "
                      f"{plain(row['fix'])}", highlight=False)
        out.print(f"memory_mb sets: {mark(row['memory_mb'])}", highlight=False, markup=False)
        table = Table(show_edge=False, pad_edge=False, box=box.SIMPLE_HEAD)
        for column in ("encryption", "cipher", "bits", "layer", "here", "notes"):
            table.add_column(column, no_wrap=True, min_width=len(column), overflow="ellipsis")
        for enc in row["encryptions"]:
            here = "url" if row.get("by_url") else "yes" if enc["usable"] else "no"
            unusable = ("" if row.get("by_url") or enc["usable"]
                        else f"not usable here: {enc['reason']} (fix: {enc['fix']})")
            about = "; ".join(part for part in (
                unusable, f"covers {', '.join(enc['covers'])}" if enc["covers"] else "", enc["notes"]) if part)
            table.add_row(enc["name"], _cipher(enc["algorithm"], enc["mode"]), str(enc["key_bits"] or "-"),
                          enc["layer"], here, mark(plain(about)))
        out.print(table)
        out.print()
    out.print("Notes:", highlight=False)
    for text, number in notes.items():
        out.print(_wrapped(text, indent=" " * 5, first=f"[{number}]".ljust(5)), highlight=False, markup=False,
                  soft_wrap=True)


def _cipher(algorithm: str, mode: str) -> str:
    """An encryption's algorithm and mode in one short cell: "AES CBC", "XChaCha20-Poly1305"
    (an AEAD's name says its mode), "none"."""
    return algorithm if mode in ("AEAD", algorithm) else f"{algorithm} {mode}"


def _encryption_row(engine, encryption) -> dict:
    available = engine.encryption_availability(encryption)
    return {**encryption.to_dict(), "usable": available.usable, "reason": available.reason, "fix": available.fix}


@main.command("verify")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--canary", "canaries", multiple=True, required=True,
              help="A string that must not appear on disk (repeatable). Searched as UTF-8, UTF-16LE and UTF-16BE.")
def verify_command(paths: tuple[Path, ...], canaries: tuple[str, ...]) -> None:
    """Scan every file under PATHS for the canary strings and print a verdict: plaintext (a
    canary found; exit 1), encrypted (no canary, and at most 5% of the 4 KiB blocks below 7
    bits/byte of entropy, all-zero blocks left out; exit 0) or inconclusive (no canary, but the
    data is not uniformly random, or too small or all zeros to tell; exit 3). Exit 2: bad input
    or nothing to scan.

    The same scan tdebench runs on every trial: byte search in three encodings and the
    entropy of each 4 KiB block. Use it on a data directory, a backup, a dump. Unlike a trial,
    it cannot prove the canary was ever written: write it yourself before you scan.
    """
    from tdebench import verify

    if any(len(c) < 4 for c in canaries):
        usage_error("a canary needs at least 4 characters, or every file would match by chance")
    for canary in canaries:
        try:
            canary.encode("utf-8")
        except UnicodeEncodeError:  # bytes of the command line that are not UTF-8 (surrogate escapes)
            usage_error(f"--canary {canary.encode('utf-8', 'surrogateescape')!r} is not UTF-8 text: give the "
                        "canary as the text you wrote (it is searched as UTF-8, UTF-16LE and UTF-16BE)")
    try:
        state, scans, why = verify.verify_paths(list(paths), list(canaries))
    except FileNotFoundError as exc:
        usage_error(str(exc))
    except OSError as exc:  # a file this user may not read, a device that fails
        usage_error(f"cannot read {exc.filename or ', '.join(map(str, paths))}: {exc.strerror or exc}")
    if state == "empty":
        usage_error(f"nothing to scan: no bytes in {', '.join(map(str, paths))}")
    for line in verify.describe(scans):
        out.print(line, highlight=False, markup=False, soft_wrap=True)
    colour = {"plaintext": "red", "encrypted": "green", "inconclusive": "yellow"}[state]
    out.print(f"verdict: [bold {colour}]{state}[/]: {plain(why)}", highlight=False, soft_wrap=True)
    sys.exit(VERIFY_EXIT[state])


VERIFY_EXIT = {"encrypted": 0, "plaintext": 1, "inconclusive": 3}
"""`tdebench verify`'s exit code per verdict (2 is bad input, as for every command)."""


@main.command()
@click.option("--work-dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Where the killed runs' workspaces are. [default: the system's temporary directory]")
@click.option("--cluster", "cluster", metavar="ADDRESS",
              help="Clean on every worker of this Dask scheduler (tcp://HOST:8786) instead, each in its own "
                   "--work-dir (a path on every worker), and say what each host cleaned.")
def clean(work_dir: Path | None, cluster: str | None) -> None:
    """Clean up after killed runs: stop the servers and gocryptfs processes their state files
    name (by pid and start time), unmount what is still mounted in their workspaces, and remove
    the workspaces (databases, key files). `tdebench run` does this first by itself; a running
    run is never touched. Exit 1 if something could not be cleaned."""
    if cluster is not None:
        _clean_cluster(cluster, work_dir)
    if work_dir is not None and not work_dir.is_dir():
        usage_error(f"--work-dir {work_dir} is not an existing directory")
    cleaned = runsetup.clean_dead_runs(work_dir)
    _print_cleaned(cleaned)
    if not cleaned:
        out.print(f"nothing to clean in {work_dir or tempfile.gettempdir()}", highlight=False)
    sys.exit(0 if all(c.removed for c in cleaned) else 1)


def _clean_cluster(address: str, work_dir: Path | None) -> None:
    """`tdebench clean --cluster ADDRESS`: the clean on every worker, reported per host; exits."""
    try:
        from tdebench.cluster import client
    except ImportError as exc:
        usage_error(f"--cluster needs Dask distributed ({exc.name} is missing): pip install 'tdebench[cluster]'")
    try:
        cluster = client.Cluster(address)
    except runsetup.SetupError as exc:
        usage_error(str(exc))
    if cluster.local_workers is not None:
        usage_error(f"--cluster {address}: local workers share this machine: clean it with `tdebench clean`")
    try:
        with cluster:
            answers = cluster.clean(work_dir)
    except runsetup.SetupError as exc:
        usage_error(str(exc))
    for answer in answers:
        for line in answer["cleaned"] or [f"nothing to clean in {answer['directory']}"]:
            (out if answer["removed"] else err).print(plain(f"{answer['host']}: {line}"), highlight=False,
                                                      soft_wrap=True)
    if not answers:
        out.print(f"--cluster {address}: no workers are connected: nothing cleaned", highlight=False)
    sys.exit(0 if all(answer["removed"] for answer in answers) else 1)


def _print_cleaned(cleaned: list) -> None:
    """Say what was cleaned up after killed runs (on stderr what could not be)."""
    for one in cleaned:
        (out if one.removed else err).print(plain(str(one)), highlight=False, soft_wrap=True)


MOST_CIPHER_SECONDS = 60.0
"""`ciphers --seconds` at most: per cipher and page size, so the whole table takes many times it."""


@main.command()
@click.option("--seconds", default=0.2, show_default=True,
              help=f"CPU time spent per cipher and page size (more than 0, at most {MOST_CIPHER_SECONDS:g}).")
def ciphers(seconds: float) -> None:
    """This machine's raw cipher throughput in MiB/s by page size, one core (the physical
    limit of any encryption overhead): one context per key, a new nonce per page."""
    from tdebench.measure.ciphers import measure_ciphers
    from tdebench.report.tables import speeds_table

    if not (math.isfinite(seconds) and 0 < seconds <= MOST_CIPHER_SECONDS):
        usage_error(f"--seconds {seconds:g}: give the CPU seconds per cipher and page size, more than 0 and at "
                    f"most {MOST_CIPHER_SECONDS:g}, e.g. --seconds 0.5")
    speeds = speeds_table(measure_ciphers(seconds=seconds))
    table = Table(title=f"{speeds.title}, MiB/s by page size", title_justify="left", show_edge=False)
    for column in speeds.columns:
        table.add_column(column.header, justify="right" if column.numeric else "left",
                         no_wrap=not column.prose)
    for cells in speeds.formatted():
        table.add_row(*cells)
    Console(width=max(out.width, 150)).print(table)


if __name__ == "__main__":
    main()
