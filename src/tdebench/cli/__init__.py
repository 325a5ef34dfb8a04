"""The `tdebench` command: run, report, compare, upgrade, engines, verify, ciphers, script, import.

A thin shell: each command is a module of this package (run.py, report.py, compare.py, …),
imported only when that command runs (`COMMANDS`); the places a run's trials go are places.py.
A command that meets bad input raises an `errors.InputError` (or a subclass: PlanError,
SetupError, OutDirError, OutputError, KeyFileError) with its message, and `_Commands` turns it
into one line and its exit code, once for every command.

Exit codes: 0 success; 1 the run finished but something is wrong (a failed trial, a wrong
answer, an unexpected verdict), `verify` found plaintext or `compare --fail-above` found a
figure that got slower (a TPM or NOPM lower); 2 bad input (plan, options, output or data
directory, unusable engine, a damaged or empty results.jsonl, a run a newer tdebench wrote, a resume with
another key source);
130 interrupted (Ctrl-C or SIGTERM, in any command).
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from typing import Any, cast

import click

from tdebench.cli import console
from tdebench.cli.console import fail, plain
from tdebench.errors import InputError

COMMANDS = {
    "ciphers": "tdebench.cli.ciphers:ciphers_command",
    "clean": "tdebench.cli.clean:clean_command",
    "compare": "tdebench.cli.compare:compare_command",
    "engines": "tdebench.cli.engines:engines_command",
    "import": "tdebench.cli.kit:import_command",
    "plans": "tdebench.cli.plans:plans_command",
    "report": "tdebench.cli.report:report_command",
    "run": "tdebench.cli.run:run_command",
    "script": "tdebench.cli.kit:script_command",
    "upgrade": "tdebench.cli.upgrade:upgrade_command",
    "verify": "tdebench.cli.verify:verify_command",
}
"""Every subcommand: the module and name of its click command, imported when it runs (`--help`
imports them all to list them). So `tdebench verify` loads the scan, not the runner, the plans
and the workloads: those imports were half a second of its CPU time on this project's 2-core
machine, about four times what `grep -F -c` takes over 512 MiB (bench/verify_scan.py)."""


class _Commands(click.Group):
    """The subcommands: an InputError (errors.py) ends in its one line and exit code, never a
    traceback; Ctrl-C anywhere ends in exit 130 (click's own "Aborted!" is exit 1, the code of a
    finished run that found something wrong)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, _, name = COMMANDS[cmd_name].partition(":")
        return cast(click.Command, getattr(importlib.import_module(module), name))

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except InputError as exc:
            fail(str(exc), exc.exit_code)
        except KeyboardInterrupt:
            console.err.print("[yellow]interrupted[/]", highlight=False)
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


def command() -> None:
    """The `tdebench` program (pyproject's console script, `python -m tdebench.cli`): `main`, and
    after an interrupt (exit 130) an exit without the interpreter's finalization, which took 1.6 s
    on a busy machine (numba's and matplotlib's teardown): the run has stopped its servers,
    unmounted and removed its workspaces, and its records are on disk (fsynced; the run
    directory's flock goes with the process). `main` itself, which tests invoke in-process, exits
    as usual. Any other exit freezes what is left out of the cyclic collector's sight first: its
    last full pass, at the interpreter's exit, scanned a report build's every object (0.3 s after
    a 250-trial report); every module's teardown and exit handler still runs."""
    try:
        main()
    except SystemExit as exc:
        if exc.code == 130:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(130)
        gc.freeze()
        raise


__all__ = ["COMMANDS", "command", "main", "plain"]
