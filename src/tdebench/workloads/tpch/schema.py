"""The TPC-H schema (spec 1.4) as data, rendered into DDL per SQL dialect.

Column types are kept as the spec's logical kinds and mapped per dialect, so adding an
engine means adding one entry to `_TYPES`, not another copy of eight CREATE TABLEs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    """One column: its name and spec kind (`key`, `int`, `decimal`, `date`, `char`, `varchar`)."""

    name: str
    kind: str
    length: int = 0  # for char/varchar: the spec's size, used by dialects that declare it


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]


def _cols(*spec: tuple[str, str] | tuple[str, str, int]) -> tuple[Column, ...]:
    return tuple(Column(*s) for s in spec)


# Spec 1.4.1 and 1.4.2.2 (primary keys). Identifiers are `key` (64-bit) in the scaled
# tables and `int` for nation/region, matching the types DuckDB's dbgen writes to Parquet,
# so loading never converts a value.
SCHEMA: tuple[Table, ...] = (
    Table("region", _cols(
        ("r_regionkey", "int"), ("r_name", "char", 25), ("r_comment", "varchar", 152),
    ), ("r_regionkey",)),
    Table("nation", _cols(
        ("n_nationkey", "int"), ("n_name", "char", 25), ("n_regionkey", "int"),
        ("n_comment", "varchar", 152),
    ), ("n_nationkey",)),
    Table("supplier", _cols(
        ("s_suppkey", "key"), ("s_name", "char", 25), ("s_address", "varchar", 40),
        ("s_nationkey", "int"), ("s_phone", "char", 15), ("s_acctbal", "decimal"),
        ("s_comment", "varchar", 101),
    ), ("s_suppkey",)),
    Table("customer", _cols(
        ("c_custkey", "key"), ("c_name", "varchar", 25), ("c_address", "varchar", 40),
        ("c_nationkey", "int"), ("c_phone", "char", 15), ("c_acctbal", "decimal"),
        ("c_mktsegment", "char", 10), ("c_comment", "varchar", 117),
    ), ("c_custkey",)),
    Table("part", _cols(
        ("p_partkey", "key"), ("p_name", "varchar", 55), ("p_mfgr", "char", 25),
        ("p_brand", "char", 10), ("p_type", "varchar", 25), ("p_size", "int"),
        ("p_container", "char", 10), ("p_retailprice", "decimal"), ("p_comment", "varchar", 23),
    ), ("p_partkey",)),
    Table("partsupp", _cols(
        ("ps_partkey", "key"), ("ps_suppkey", "key"), ("ps_availqty", "key"),
        ("ps_supplycost", "decimal"), ("ps_comment", "varchar", 199),
    ), ("ps_partkey", "ps_suppkey")),
    Table("orders", _cols(
        ("o_orderkey", "key"), ("o_custkey", "key"), ("o_orderstatus", "char", 1),
        ("o_totalprice", "decimal"), ("o_orderdate", "date"), ("o_orderpriority", "char", 15),
        ("o_clerk", "char", 15), ("o_shippriority", "int"), ("o_comment", "varchar", 79),
    ), ("o_orderkey",)),
    Table("lineitem", _cols(
        ("l_orderkey", "key"), ("l_partkey", "key"), ("l_suppkey", "key"),
        ("l_linenumber", "key"), ("l_quantity", "decimal"), ("l_extendedprice", "decimal"),
        ("l_discount", "decimal"), ("l_tax", "decimal"), ("l_returnflag", "char", 1),
        ("l_linestatus", "char", 1), ("l_shipdate", "date"), ("l_commitdate", "date"),
        ("l_receiptdate", "date"), ("l_shipinstruct", "char", 25), ("l_shipmode", "char", 10),
        ("l_comment", "varchar", 44),
    ), ("l_orderkey", "l_linenumber")),
)

# Table name -> column names, in load order (referenced tables before referencing ones).
TABLES: dict[str, tuple[str, ...]] = {t.name: tuple(c.name for c in t.columns) for t in SCHEMA}

# Foreign keys of spec 1.4.2.3 that no primary key already covers as a leading prefix
# (ps_partkey, o_orderkey and l_orderkey are served by their tables' primary keys).
FOREIGN_KEY_INDEXES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("nation", ("n_regionkey",)),
    ("supplier", ("s_nationkey",)),
    ("customer", ("c_nationkey",)),
    ("partsupp", ("ps_suppkey",)),
    ("orders", ("o_custkey",)),
    ("lineitem", ("l_partkey", "l_suppkey")),
    ("lineitem", ("l_suppkey",)),
)

_TYPES: dict[str, dict[str, str]] = {
    "duckdb": {
        "key": "BIGINT", "int": "INTEGER", "decimal": "DECIMAL(15,2)", "date": "DATE",
        "char": "VARCHAR", "varchar": "VARCHAR",
    },
    # SQLite has storage classes, not types: money is REAL, dates are ISO 'YYYY-MM-DD' text,
    # which sorts and compares correctly as text.
    "sqlite": {
        "key": "INTEGER", "int": "INTEGER", "decimal": "REAL", "date": "TEXT",
        "char": "TEXT", "varchar": "TEXT",
    },
}

DIALECTS: tuple[str, ...] = tuple(_TYPES)

# What the SELECT that reads Parquet must cast a kind to, so the dialect's driver can bind
# the value (apsw binds neither Decimal nor datetime.date).
_LOAD_CASTS: dict[str, dict[str, str]] = {
    "duckdb": {},
    "sqlite": {"decimal": "DOUBLE", "date": "VARCHAR"},
}


def _types(dialect: str) -> dict[str, str]:
    try:
        return _TYPES[dialect]
    except KeyError:
        raise ValueError(f"no TPC-H schema for dialect {dialect!r}; known: {', '.join(_TYPES)}") from None


def create_tables(dialect: str) -> list[str]:
    """CREATE TABLE statements, in load order, with primary keys declared inline."""
    types = _types(dialect)
    statements = []
    for table in SCHEMA:
        lines = [f"    {c.name} {types[c.kind]} NOT NULL" for c in table.columns]
        lines.append(f"    PRIMARY KEY ({', '.join(table.primary_key)})")
        statements.append(f"CREATE TABLE {table.name} (\n" + ",\n".join(lines) + "\n)")
    return statements


def create_indexes(dialect: str) -> list[str]:
    """CREATE INDEX statements for the foreign keys; run them after the load."""
    _types(dialect)
    return [
        f"CREATE INDEX {table}_{'_'.join(columns)} ON {table} ({', '.join(columns)})"
        for table, columns in FOREIGN_KEY_INDEXES
    ]


def parquet_select(table: str, dialect: str) -> str:
    """A DuckDB query (one `?` parameter: the Parquet path) returning the table's rows as
    values the dialect's driver can bind, in `TABLES[table]` column order."""
    _types(dialect)
    casts = _LOAD_CASTS[dialect]
    (spec,) = [t for t in SCHEMA if t.name == table]
    exprs = [
        f"CAST({c.name} AS {casts[c.kind]}) AS {c.name}" if c.kind in casts else c.name
        for c in spec.columns
    ]
    return f"SELECT {', '.join(exprs)} FROM read_parquet(?)"
