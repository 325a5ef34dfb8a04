"""`tdebench ciphers`: this machine's raw cipher throughput."""

from __future__ import annotations

import math

import click
from rich.console import Console
from rich.table import Table

from tdebench.cli.console import out
from tdebench.errors import InputError


MOST_CIPHER_SECONDS = 60.0
"""`ciphers --seconds` at most: per cipher and page size, so the whole table takes many times it."""


@click.command("ciphers")
@click.option("--seconds", default=0.2, show_default=True,
              help=f"CPU time spent per cipher and page size (more than 0, at most {MOST_CIPHER_SECONDS:g}).")
def ciphers_command(seconds: float) -> None:
    """This machine's raw cipher throughput in MiB/s by page size, one core (the physical
    limit of any encryption overhead): one context per key, a new nonce per page."""
    from tdebench.measure.ciphers import measure_ciphers
    from tdebench.report.summaries.tables import speeds_table

    if not (math.isfinite(seconds) and 0 < seconds <= MOST_CIPHER_SECONDS):
        raise InputError(f"--seconds {seconds:g}: give the CPU seconds per cipher and page size, more than 0 and at "
                    f"most {MOST_CIPHER_SECONDS:g}, e.g. --seconds 0.5")
    speeds = speeds_table(measure_ciphers(seconds=seconds))
    table = Table(title=f"{speeds.title}, MiB/s by page size", title_justify="left", show_edge=False)
    for column in speeds.columns:
        table.add_column(column.header, justify="right" if column.numeric else "left",
                         no_wrap=not column.prose)
    for cells in speeds.formatted():
        table.add_row(*cells)
    Console(width=max(out.width, 150)).print(table)
