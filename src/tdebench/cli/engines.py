"""`tdebench engines`: every engine of the registry (engines/__init__.py) by the ways it is reached,
whether it can run here, and its encryptions."""

from __future__ import annotations

import json
from typing import Any

import click
from rich import box
from rich.table import Table

from tdebench.cli.console import out, plain, wrapped
from tdebench.engines import BY_URL, KIT, PROVISIONED, get_engine


@click.command("engines")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def engines_command(as_json: bool) -> None:
    """List every engine: version, whether it can run here (and if not, why and the fix), and
    each encryption with its algorithm, key bits, mode, layer and what it covers; then the
    engines a plan reaches by url on a server tdebench does not start (whether their driver is
    installed, the encryptions they turn on by SQL, and whether `tdebench script` writes a kit
    for them)."""
    rows: list[dict[str, Any]] = []
    for name in PROVISIONED:
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
    for name, remote_class in BY_URL.items():  # usable: its driver is installed
        remote = remote_class()
        available = remote.availability()
        rows.append({"name": name, "version": None, "usable": available.usable, "reason": available.reason,
                     "fix": available.fix, "embedded": False, "memory_mb": remote.memory_use, "by_url": True,
                     "kit": name in KIT,
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
            if row["kit"]:
                out.print(f"also a script kit: tdebench script PLAN --engine {row['name']} (docs/kit.md)",
                          highlight=False, markup=False)
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
        out.print(wrapped(text, indent=" " * 5, first=f"[{number}]".ljust(5)), highlight=False, markup=False,
                  soft_wrap=True)


def _cipher(algorithm: str, mode: str) -> str:
    """An encryption's algorithm and mode in one short cell: "AES CBC", "XChaCha20-Poly1305"
    (an AEAD's name says its mode), "none"."""
    return algorithm if mode in ("AEAD", algorithm) else f"{algorithm} {mode}"


def _encryption_row(engine, encryption) -> dict:
    available = engine.encryption_availability(encryption)
    return {**encryption.to_dict(), "usable": available.usable, "reason": available.reason, "fix": available.fix}
