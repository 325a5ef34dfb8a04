"""The progress of a run on the terminal: a bar with ETA, or a line per phase and trial."""

from __future__ import annotations

from types import TracebackType

from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)
from rich.table import Column

from tdebench.cli.console import err, plain
from tdebench.plan import TrialSpec
from tdebench.results import TrialOutcome, Verdict


class ProgressBar:
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

    def __enter__(self) -> "ProgressBar":
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
