"""What every command prints with: the two consoles, user and engine text made safe to print,
wrapped blocks, and the one-line error (`fail`).

rich is imported on first use: `out` and `err` are made when a command first names them, and
`line` prints without rich where nothing would be styled (not a terminal). So `tdebench verify`,
which prints only lines, does not import rich when its output goes to a pipe or a file: rich's
import was a fifth of that command's start-up (docs/method/scan-speed.md)."""

from __future__ import annotations

import functools
import os
import sys
import textwrap
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from rich.console import Console

out: Console  # rich's console on stdout, made on first use (`__getattr__`)
err: Console  # and on stderr


@functools.cache
def _console(stderr: bool) -> Console:
    from rich.console import Console

    return Console(stderr=stderr)


def __getattr__(name: str) -> Console:
    """`out` and `err`, made when first imported or named."""
    if name in ("out", "err"):
        return _console(name == "err")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


MESSAGE_LIMIT = 2000  # characters of one error message: a long plan value or engine output is cut


def plain(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """User or engine text as printed: cut to `limit` characters, rich markup escaped (so a
    plan's `[[engines]]` or an engine's `[red]` prints as written)."""
    from rich.markup import escape

    if len(text) > limit:
        text = f"{text[:limit]}… ({len(text) - limit} more characters)"
    return escape(text)


def _styled() -> bool:
    """Whether rich would style what `out` prints: stdout is a terminal, or the environment
    says to style anyway (rich's TTY_COMPATIBLE and FORCE_COLOR)."""
    if "TTY_COMPATIBLE" in os.environ or "FORCE_COLOR" in os.environ:
        return True
    try:
        return sys.stdout.isatty()
    except ValueError:  # a closed stdout
        return False


def line(*parts: str | tuple[str, str]) -> None:
    """One line on stdout, never wrapped: `parts` in turn, each text printed as it is (no rich
    markup) or a (text, rich style) pair. Through `out` where it would be styled (`_styled`),
    else written as is, without importing rich."""
    if not _styled():
        print("".join(part if isinstance(part, str) else part[0] for part in parts))
        return
    from rich.text import Text

    _console(False).print(Text.assemble(*parts), highlight=False, soft_wrap=True)


def fail(message: str, code: int = 2) -> NoReturn:
    """Bad input: say what and how to fix it, exit 2 (or an InputError's `code`)."""
    _console(True).print(f"[bold red]error:[/] {plain(message)}", highlight=False, soft_wrap=True)
    sys.exit(code)


def block(title: str, body: str) -> None:
    """One record as a block that reads at any width: its title line (rich markup), then its
    text wrapped between words and indented under it (never broken inside a word)."""
    _console(False).print(title, highlight=False, soft_wrap=True)
    _console(False).print(wrapped(plain(body), indent="  "), highlight=False, soft_wrap=True, markup=False)


def wrapped(text: str, indent: str, first: str | None = None, console: Console | None = None) -> str:
    """`text` wrapped to the width of `console` (`out` by default) between words (a long path
    stays whole, on a line of its own), every line after the first indented by `indent`."""
    width = (console or _console(False)).width
    return textwrap.fill(text, width=max(width, 40), initial_indent=indent if first is None else first,
                         subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)


def print_cleaned(cleaned: list) -> None:
    """Say what was cleaned up after killed runs (on stderr what could not be)."""
    for one in cleaned:
        _console(not one.removed).print(plain(str(one)), highlight=False, soft_wrap=True)
