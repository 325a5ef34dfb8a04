"""`tdebench upgrade`: a run from before tdebench recorded its engines' facts, given them."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

import click

from tdebench.run import setup as runsetup
from tdebench.cli.console import out, plain
from tdebench.cli.report import run_or_exit
from tdebench.engines import BY_URL, PROVISIONED, Engine
from tdebench.results import FILLED_IN, RunData
from tdebench.store import ENVIRONMENT, ResultStore


@click.command("upgrade")
@click.argument("run_dir", type=click.Path(path_type=Path))
def upgrade_command(run_dir: Path) -> None:
    """Fill in the engines' facts RUN_DIR did not record (a run from before tdebench recorded them):
    each encryption's cipher, page size and key handling, and what each engine documents as
    different in an encrypted database and its default cache, as this tdebench defines them. The
    report reads them from the run alone, and names the version that filled them in
    (environment.json's facts_filled_in). What the run recorded is left as it was. `tdebench report
    RUN_DIR` then rebuilds the report with them."""
    run = run_or_exit(run_dir)
    engines, unknown = _engines(run)
    missing = {key: facts for key, facts in runsetup.engine_facts(engines).items() if key not in run.environment}
    left_out = f" (engines this tdebench does not have, left out: {', '.join(unknown)})" if unknown else ""
    if not missing:
        out.print(plain(f"{run_dir} holds its engines' facts: nothing to fill in{left_out}"), highlight=False)
        return
    version = metadata.version("tdebench")
    filled = {**run.environment.get(FILLED_IN, {}), **dict.fromkeys(missing, version)}
    ResultStore(run_dir).rewrite_environment({**run.environment, **missing, FILLED_IN: filled})
    out.print(plain(f"{run_dir / ENVIRONMENT}: {', '.join(sorted(missing))} filled in as tdebench {version} "
                    f"defines them{left_out}; `tdebench report {run_dir}` rebuilds the report with them"),
              highlight=False, soft_wrap=True)


def _engines(run: RunData) -> tuple[dict[str, type[Engine]], list[str]]:
    """The engines the run's trials ran, each as the class it ran as (a server its plan reached by
    url, or a script kit's that `tdebench import` read, as its engine by url), and the names of
    those this tdebench does not have. The stored plan is read as TOML only: an older plan need not
    pass today's checks."""
    tables = tomllib.loads(run.plan_text).get("engines")
    remote = {table.get("name") for table in (tables if isinstance(tables, list) else [])
              if isinstance(table, dict) and "url" in table}
    if run.environment.get("imported"):
        remote.add(run.environment.get("engine"))
    names = sorted({o.trial.engine for o in run.trials} | {m.trial.engine for m in run.measurements})
    classes = {name: (BY_URL if name in remote else PROVISIONED).get(name) for name in names}
    return ({name: engine for name, engine in classes.items() if engine is not None},
            [name for name, engine in classes.items() if engine is None])
