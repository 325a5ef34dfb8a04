"""The TPC-H schema (spec 1.4) as data, rendered into DDL per SQL dialect.

Column types are kept as the spec's logical kinds, which the engine's dialect maps to its types
(engines/dialects.py), so adding an engine adds no copy of eight CREATE TABLEs here.
"""

from __future__ import annotations

from dataclasses import replace

from tdebench.engines import dialects
from tdebench.workloads import ddl
from tdebench.workloads.ddl import Table
from tdebench.workloads.ddl import columns as _cols

# Column kinds: `bigint`, `int`, `decimal(15,2)`, `date`, `char`, `varchar` (text with the spec's size).
_MONEY = "decimal(15,2)"


# Spec 1.4.1 and 1.4.2.2 (primary keys). Integers are `bigint` or `int` exactly as DuckDB's
# dbgen writes them to Parquet (identifiers of the scaled tables 64-bit, nation/region keys
# and small counts 32-bit), so loading never converts a value.
SCHEMA: tuple[Table, ...] = (
    Table("region", _cols(
        ("r_regionkey", "int"), ("r_name", "char", 25), ("r_comment", "varchar", 152),
    ), ("r_regionkey",)),
    Table("nation", _cols(
        ("n_nationkey", "int"), ("n_name", "char", 25), ("n_regionkey", "int"),
        ("n_comment", "varchar", 152),
    ), ("n_nationkey",)),
    Table("supplier", _cols(
        ("s_suppkey", "bigint"), ("s_name", "char", 25), ("s_address", "varchar", 40),
        ("s_nationkey", "int"), ("s_phone", "char", 15), ("s_acctbal", _MONEY),
        ("s_comment", "varchar", 101),
    ), ("s_suppkey",)),
    Table("customer", _cols(
        ("c_custkey", "bigint"), ("c_name", "varchar", 25), ("c_address", "varchar", 40),
        ("c_nationkey", "int"), ("c_phone", "char", 15), ("c_acctbal", _MONEY),
        ("c_mktsegment", "char", 10), ("c_comment", "varchar", 117),
    ), ("c_custkey",)),
    Table("part", _cols(
        ("p_partkey", "bigint"), ("p_name", "varchar", 55), ("p_mfgr", "char", 25),
        ("p_brand", "char", 10), ("p_type", "varchar", 25), ("p_size", "int"),
        ("p_container", "char", 10), ("p_retailprice", _MONEY), ("p_comment", "varchar", 23),
    ), ("p_partkey",)),
    Table("partsupp", _cols(
        ("ps_partkey", "bigint"), ("ps_suppkey", "bigint"), ("ps_availqty", "bigint"),
        ("ps_supplycost", _MONEY), ("ps_comment", "varchar", 199),
    ), ("ps_partkey", "ps_suppkey")),
    Table("orders", _cols(
        ("o_orderkey", "bigint"), ("o_custkey", "bigint"), ("o_orderstatus", "char", 1),
        ("o_totalprice", _MONEY), ("o_orderdate", "date"), ("o_orderpriority", "char", 15),
        ("o_clerk", "char", 15), ("o_shippriority", "int"), ("o_comment", "varchar", 79),
    ), ("o_orderkey",)),
    Table("lineitem", _cols(
        ("l_orderkey", "bigint"), ("l_partkey", "bigint"), ("l_suppkey", "bigint"),
        ("l_linenumber", "bigint"), ("l_quantity", _MONEY), ("l_extendedprice", _MONEY),
        ("l_discount", _MONEY), ("l_tax", _MONEY), ("l_returnflag", "char", 1),
        ("l_linestatus", "char", 1), ("l_shipdate", "date"), ("l_commitdate", "date"),
        ("l_receiptdate", "date"), ("l_shipinstruct", "char", 25), ("l_shipmode", "char", 10),
        ("l_comment", "varchar", 44),
    ), ("l_orderkey", "l_linenumber")),
)

# The personal data of TPC-H: what a cell-level (column) encryption seals, as an application
# protecting customers' and suppliers' names, addresses, phone numbers and balances would.
# Primary keys are never sealed (a sealed key could not be joined or indexed).
SENSITIVE: dict[str, tuple[str, ...]] = {
    "supplier": ("s_name", "s_address", "s_phone", "s_acctbal"),
    "customer": ("c_name", "c_address", "c_phone", "c_acctbal"),
}

# Table name -> column names, in load order (referenced tables before referencing ones).
TABLES: dict[str, tuple[str, ...]] = {t.name: tuple(c.name for c in t.columns) for t in SCHEMA}
PRIMARY_KEYS: dict[str, tuple[str, ...]] = {t.name: t.primary_key for t in SCHEMA}

# Foreign keys of spec 1.4.2.3 that no primary key already covers as a leading prefix
# (ps_partkey, o_orderkey and l_orderkey are served by their tables' primary keys).
# In SQLite at SF 0.1 they turn Q17 from 29 s into 0.01 s, Q20 from 38 s into 0.02 s and
# Q22 from 8 s into 0.01 s. lineitem(l_suppkey) alone is left out: the planner then picks
# it for Q15 (0.07 s -> 1.1 s) and it costs half the index build time.
FOREIGN_KEY_INDEXES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("nation", ("n_regionkey",)),
    ("supplier", ("s_nationkey",)),
    ("customer", ("c_nationkey",)),
    ("partsupp", ("ps_suppkey",)),
    ("orders", ("o_custkey",)),
    ("lineitem", ("l_partkey", "l_suppkey")),
)


# Where TPC-H's measurements depart from the dialects' defaults (engines/dialects.py):
_DEPARTURES: dict[str, ddl.Departure] = {
    # DuckDB answers TPC-H with hash joins, not its ART indexes: at SF 1 the foreign-key
    # indexes added 6-20 s to a ~16 s load and made no query faster (22 queries: 2.4-2.5 s
    # without, 3.2-3.5 s with), so DuckDB gets none.
    "duckdb": ddl.Departure(secondary_indexes=False),
    # SQLite: no ANALYZE; at SF 0.1 it made the 22 queries slower (6.6 s vs 3.2 s; Q7 0.2 s -> 1.8 s).
    # Its foreign-key indexes are what its joins need (see FOREIGN_KEY_INDEXES).
    "sqlite": ddl.Departure(analyze=False),
}
# MariaDB/InnoDB's foreign-key indexes are what its nested-loop joins need: at SF 0.1 they cost
# 0.85 s after a 5.4 s load, and without them Q13 ran past 60 s (0.4 s with) and Q17 took 5.3 s
# (0.01 s with). SQL Server and Oracle get them for their nested-loop plans as well.

DIALECTS: tuple[str, ...] = tuple(dialects.DIALECTS)


def create_tables(dialect: str, keys: str = "default") -> list[str]:
    """CREATE TABLE statements in load order (primary keys inline where the dialect wants; none
    with `keys` "none")."""
    return ddl.create_tables(SCHEMA, _layout(dialect, "default", keys))


# The plan's `statistics` for TPC-H: as the dialect's layout above has it, or ANALYZE after
# the load (or not) whatever the dialect's default. An encryption's cost moves with it: other
# statistics, other plans, other pages read and decrypted.
STATISTICS = ("default", "analyze", "none")

# The plan's `keys` for TPC-H: the primary keys as the dialect's layout has them, or none. DuckDB
# builds a key's ART index in memory: at SF 1 and a 64 MB memory_limit its load runs out of memory
# with them (546 MiB of tables and indexes) and runs without (264 MiB, 4.1x the limit), and none of
# its hash-join plans reads them (bench/duckdb_memory_floor.py --keys none).
KEYS = ("default", "none")


def _layout(dialect: str, statistics: str, keys: str = "default") -> ddl.Layout:
    found = ddl.layout(dialect, _DEPARTURES, "TPC-H")
    found = found if keys == "default" else replace(found, primary_keys=False)
    return found if statistics == "default" else replace(found, analyze=statistics == "analyze")


def create_indexes(dialect: str, statistics: str = "default", keys: str = "default") -> list[str]:
    """What to build after the load: primary keys (where deferred; none with `keys` "none"),
    foreign-key indexes and planner statistics (`statistics`: one of STATISTICS)."""
    indexes = [f"CREATE INDEX {table}_{'_'.join(columns)} ON {table} ({', '.join(columns)})"
               for table, columns in FOREIGN_KEY_INDEXES]
    return ddl.after_load(SCHEMA, _layout(dialect, statistics, keys), indexes)


def statistics_note(dialect: str, statistics: str = "default", keys: str = "default") -> str:
    """What the planner knew of the loaded data, as the load's `indexes` record says it (the
    report names it beside the cost: a query's plan, and so its cost, moves with it), and that
    the tables had no primary keys where `keys` left them out."""
    layout = _layout(dialect, statistics, keys)
    if not layout.analyze:
        said = "no ANALYZE after the load"
    elif not layout.dialect.analyze(["lineitem"]):
        said = "the engine's own statistics"
    else:
        said = "ANALYZE after the load"
    return said if layout.primary_keys else f"{said}, no primary keys"
