"""A schema as data, rendered into DDL per SQL dialect (shared by the TPC-H and TPC-C schemas).

Columns carry the spec's logical kinds; each workload maps them per dialect to types, so a
table's CREATE TABLE exists once however many engines there are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    """One column: its name, the spec's kind (mapped per dialect) and, for text, its size;
    `nullable` only where the spec has NULLs."""

    name: str
    kind: str
    length: int = 0
    nullable: bool = False


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]  # empty: the table has none


def columns(*spec: tuple) -> tuple[Column, ...]:
    """Columns from (name, kind[, length[, nullable]]) tuples."""
    return tuple(Column(*s) for s in spec)


def create_tables(tables: Iterable[Table], types: Mapping[str, str], *, keys_inline: bool,
                  table_options: str = "") -> list[str]:
    """CREATE TABLE statements; `types` maps a kind to a type ("{length}" is the column's size)."""
    statements = []
    for table in tables:
        lines = [f"    {c.name} {types[c.kind].format(length=c.length)}{'' if c.nullable else ' NOT NULL'}"
                 for c in table.columns]
        if table.primary_key and keys_inline:
            lines.append(f"    PRIMARY KEY ({', '.join(table.primary_key)})")
        options = f" {table_options}" if table_options else ""
        statements.append(f"CREATE TABLE {table.name} (\n" + ",\n".join(lines) + "\n)" + options)
    return statements


def add_primary_keys(tables: Iterable[Table]) -> list[str]:
    """The primary keys of tables created without them, for after the load."""
    return [f"ALTER TABLE {t.name} ADD PRIMARY KEY ({', '.join(t.primary_key)})" for t in tables if t.primary_key]


def dialect_of(dialects: Mapping[str, object], name: str, schema: str) -> object:
    """`dialects[name]`, or a ValueError naming the schema and the dialects it knows."""
    try:
        return dialects[name]
    except KeyError:
        raise ValueError(f"no {schema} schema for dialect {name!r}; known: {', '.join(dialects)}") from None
