"""A schema as data, rendered into DDL per SQL dialect (shared by the TPC-H, TPC-C and crud schemas).

Columns carry logical kinds that the engine's dialect (engines/dialects.py) maps to its types,
so a table's CREATE TABLE exists once however many engines there are. A workload keeps only
where its measurements depart from a dialect's defaults (`Departure`), keyed by dialect as its
`sql/<dialect>/` files are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tdebench.engines.dialects import Dialect, dialect


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


@dataclass(frozen=True)
class Departure:
    """Where a workload's own measurements depart from its dialect's defaults."""

    keys_after_load: bool | None = None  # None: as the dialect has it
    analyze: bool = True  # gather planner statistics after the load
    secondary_indexes: bool = True  # build the workload's secondary indexes


@dataclass(frozen=True)
class Layout:
    """How one workload lays its tables out in one dialect: the dialect's facts with the
    workload's departures applied."""

    dialect: Dialect
    keys_after_load: bool
    analyze: bool
    secondary_indexes: bool
    primary_keys: bool = True  # False: the tables get none, inline or after the load


def layout(name: str, departures: Mapping[str, Departure], schema: str) -> Layout:
    """The layout of `schema` in dialect `name` (a ValueError naming the known ones if none)."""
    spec = dialect(name, f"{schema} schema")
    departure = departures.get(name, Departure())
    keys_after_load = spec.keys_after_load if departure.keys_after_load is None else departure.keys_after_load
    return Layout(spec, keys_after_load, departure.analyze, departure.secondary_indexes)


def create_tables(tables: Iterable[Table], layout: Layout) -> list[str]:
    """CREATE TABLE statements, primary keys inline unless the layout adds them after the load."""
    statements = []
    spec = layout.dialect
    for table in tables:
        lines = [f"    {c.name} {spec.column_type(c.kind, c.length)}{'' if c.nullable else ' NOT NULL'}"
                 for c in table.columns]
        if table.primary_key and layout.primary_keys and not layout.keys_after_load:
            lines.append(f"    PRIMARY KEY ({', '.join(table.primary_key)})")
        options = f" {spec.table_options}" if spec.table_options else ""
        statements.append(f"CREATE TABLE {table.name} (\n" + ",\n".join(lines) + "\n)" + options)
    return statements


def after_load(tables: Sequence[Table], layout: Layout, indexes: Iterable[str]) -> list[str]:
    """What follows the load: deferred primary keys, the secondary `indexes` (CREATE INDEX
    statements) where the layout builds them, and planner statistics."""
    statements = add_primary_keys(tables) if layout.keys_after_load and layout.primary_keys else []
    statements += list(indexes) if layout.secondary_indexes else []
    analyze = layout.dialect.analyze([t.name for t in tables]) if layout.analyze else ""
    return statements + ([analyze] if analyze else [])


def add_primary_keys(tables: Iterable[Table]) -> list[str]:
    """The primary keys of tables created without them, for after the load."""
    return [f"ALTER TABLE {t.name} ADD PRIMARY KEY ({', '.join(t.primary_key)})" for t in tables if t.primary_key]
