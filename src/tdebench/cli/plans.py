"""The built-in plans (`tdebench plans`), what a run of a plan should take, and how a command finds
a plan by path or name."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import click
from rich.markup import escape

from tdebench.cli.console import block
from tdebench.errors import InputError
from tdebench.plan import Plan, PlanError, load_plan


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


def plan_or_exit(path: Path) -> Plan:
    try:
        return load_plan(plan_path(path))
    except PlanError as exc:
        hint = "" if path.exists() else f"\n  built-in plans: {', '.join(builtin_plans())}"
        raise InputError(str(exc) + hint) from None


def trial_count(the_plan: Plan) -> int:
    """The trials a run of `the_plan` has: for an adaptive plan the least, its first rounds."""
    from tdebench.plan import schedule

    return len(schedule(the_plan))


def expected(the_plan: Plan, left: int | None = None) -> str:
    """What a run of `the_plan` should take, as `run` prints it before its first trial and `plans`
    lists it, from the plan's `measured_s` and `measured_trials`: the measured time where the run has
    the trials the timed run had, else that time scaled by trials and called an estimate (a run of
    some engines, `--engine`). An adaptive plan counts only its first rounds' trials, and its timed
    run added rounds until its target or budget, as a new run will: its measured time stands for
    any run with no more first-round trials (`--engine` on it takes less). A plan without both keys
    is not yet timed. The plan's free-text `measured` follows, as the plan notes it. `left`: the
    trials a resumed run has left, whose time is the measured time scaled to them."""
    notes = f"; the plan notes: {the_plan.measured}" if the_plan.measured else ""
    seconds, timed = the_plan.measured_s, the_plan.measured_trials
    if seconds is None or timed is None:
        if the_plan.estimated_s is not None and the_plan.estimated_trials is not None:
            return _estimate(the_plan, left) + notes
        return "not yet timed: no expected duration" + notes
    trials = trial_count(the_plan) if left is None else left
    on = f" {the_plan.measured_on.isoformat()}" if the_plan.measured_on else ""
    host = f"; host: {the_plan.measured_host}" if the_plan.measured_host else ""
    if left is None and (trials == timed or (the_plan.adaptive and trials < timed)):
        added = ", its added rounds included" if trials < timed else ""
        line = f"expected: about {duration(seconds)} (measured{on}, {_trials(timed)}{added}{host})"
    else:
        which = _which(trials, left)
        line = (f"expected: about {duration(_rough(seconds * trials / timed))} for {which}, "
                f"estimated from the measured {_trials(timed)} ({duration(seconds)}{',' + on if on else ''}{host})")
    if the_plan.adaptive:
        budget = f" (its budget: {the_plan.max_minutes:g} min of rounds)" if the_plan.max_minutes else ""
        line += (f", as its rounds go: added until every headline CI is within ±{the_plan.target_ci_pct:g}%"
                 + budget)
    return line + notes


def _estimate(the_plan: Plan, left: int | None) -> str:
    """The expected line of a plan too long to run here: its author's estimate of a whole run
    (`estimated_s` for `estimated_trials`, from measured per-trial times), scaled by trials where a
    run has others (`--engine`, a resumed run), and how it was estimated (`estimated`)."""
    assert the_plan.estimated_s is not None and the_plan.estimated_trials is not None
    seconds, whole = the_plan.estimated_s, the_plan.estimated_trials
    trials = trial_count(the_plan) if left is None else left
    line = f"expected: about {duration(_rough(seconds))}, estimated (a whole run was never measured here)"
    if left is not None or trials != whole:
        which = _which(trials, left)
        line = (f"expected: about {duration(_rough(seconds * trials / whole))} for {which}, scaled from the "
                f"estimate of {duration(_rough(seconds))} for {_trials(whole)} (a whole run was never measured here)")
    return line + (f": {the_plan.estimated}" if the_plan.estimated else "")


def duration(seconds: float) -> str:
    """A span of time as a clock reads it, to the second: 45 s, 8 min 28 s, 1 h 5 min, 2 d 9 h."""
    hours, rest = divmod(round(seconds), 3600)
    minutes, whole = divmod(rest, 60)
    if hours >= 24:
        return f"{hours // 24} d" + (f" {hours % 24} h" if hours % 24 else "")
    parts = [f"{hours} h"] if hours else []
    parts += [f"{minutes} min"] if minutes else []
    parts += [f"{whole} s"] if whole or not parts else []
    return " ".join(parts)


def _rough(seconds: float) -> float:
    """An estimate as precise as it is: to 10 s below 10 minutes, to the minute below 10 hours,
    to 10 minutes above."""
    step = 10 if seconds < 600 else 60 if seconds < 36000 else 600
    return max(step, round(seconds / step) * step)


def _which(trials: int, left: int | None) -> str:
    """The trials a scaled expectation is for: the run's, or a resumed run's `left`."""
    return _trials(trials) if left is None else f"the {_trials(left)} left"


def _trials(count: int) -> str:
    return f"{count} trial{'' if count == 1 else 's'}"


@click.command("plans")
def plans_command() -> None:
    """List the built-in plans (`tdebench run NAME` runs one): what each compares, how many
    trials it runs (at least, for an adaptive plan) and how long a run should take, from the
    run its author timed."""
    for name, path in builtin_plans().items():
        try:
            the_plan = load_plan(path)
        except PlanError as exc:
            block(f"[bold]{escape(name)}[/]", f"does not load here: {exc}")
            continue
        trials = trial_count(the_plan)
        count = f"≥{trials}" if the_plan.adaptive else str(trials)
        block(f"[bold]{escape(name)}[/] · {count} trials", f"{the_plan.description}; {expected(the_plan)}")
