"""`python -m tdebench.cli`, as the `tdebench` command."""

from tdebench.cli import command

command()
