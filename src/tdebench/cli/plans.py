"""The built-in plans (`tdebench plans`) and how a command finds a plan by path or name."""

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


@click.command("plans")
def plans_command() -> None:
    """List the built-in plans (`tdebench run NAME` runs one): what each compares, how many
    trials it runs (at least, for an adaptive plan) and how long a run took where its author
    timed it."""
    from tdebench.plan import schedule

    for name, path in builtin_plans().items():
        try:
            the_plan = load_plan(path)
        except PlanError as exc:
            block(f"[bold]{escape(name)}[/]", f"does not load here: {exc}")
            continue
        trials = len(schedule(the_plan))
        count = f"≥{trials}" if the_plan.adaptive else str(trials)
        measured = f"measured: {the_plan.measured}" if the_plan.measured else "not yet timed"
        block(f"[bold]{escape(name)}[/] · {count} trials", f"{the_plan.description}; {measured}")
