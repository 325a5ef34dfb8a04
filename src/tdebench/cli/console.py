"""What every command prints with: the two consoles, user and engine text made safe to print,
wrapped blocks, and the one-line error (`fail`)."""

from __future__ import annotations

import sys
import textwrap
from typing import NoReturn

from rich.console import Console
from rich.markup import escape


err = Console(stderr=True)
out = Console()


MESSAGE_LIMIT = 2000  # characters of one error message: a long plan value or engine output is cut


def plain(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """User or engine text as printed: cut to `limit` characters, rich markup escaped (so a
    plan's `[[engines]]` or an engine's `[red]` prints as written)."""
    if len(text) > limit:
        text = f"{text[:limit]}… ({len(text) - limit} more characters)"
    return escape(text)


def fail(message: str, code: int = 2) -> NoReturn:
    """Bad input: say what and how to fix it, exit 2 (or an InputError's `code`)."""
    err.print(f"[bold red]error:[/] {plain(message)}", highlight=False, soft_wrap=True)
    sys.exit(code)


def block(title: str, body: str) -> None:
    """One record as a block that reads at any width: its title line (rich markup), then its
    text wrapped between words and indented under it (never broken inside a word)."""
    out.print(title, highlight=False, soft_wrap=True)
    out.print(wrapped(plain(body), indent="  "), highlight=False, soft_wrap=True, markup=False)


def wrapped(text: str, indent: str, first: str | None = None, console: Console = out) -> str:
    """`text` wrapped to `console`'s width between words (a long path stays whole, on a line
    of its own), every line after the first indented by `indent`."""
    return textwrap.fill(text, width=max(console.width, 40), initial_indent=indent if first is None else first,
                         subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)


def print_cleaned(cleaned: list) -> None:
    """Say what was cleaned up after killed runs (on stderr what could not be)."""
    for one in cleaned:
        (out if one.removed else err).print(plain(str(one)), highlight=False, soft_wrap=True)
