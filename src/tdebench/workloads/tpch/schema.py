"""The TPC-H schema (spec 1.4) as data, rendered into DDL per SQL dialect.

Column types are kept as the spec's logical kinds and mapped per dialect, so adding an
engine means adding one entry to `_DIALECTS`, not another copy of eight CREATE TABLEs.
"""

from __future__ import annotations

from dataclasses import dataclass

from tdebench.workloads import ddl
from tdebench.workloads.ddl import Table
from tdebench.workloads.ddl import columns as _cols

# Column kinds: `bigint`, `int`, `decimal`, `date`, `char`, `varchar` (text with the spec's size).


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
        ("s_nationkey", "int"), ("s_phone", "char", 15), ("s_acctbal", "decimal"),
        ("s_comment", "varchar", 101),
    ), ("s_suppkey",)),
    Table("customer", _cols(
        ("c_custkey", "bigint"), ("c_name", "varchar", 25), ("c_address", "varchar", 40),
        ("c_nationkey", "int"), ("c_phone", "char", 15), ("c_acctbal", "decimal"),
        ("c_mktsegment", "char", 10), ("c_comment", "varchar", 117),
    ), ("c_custkey",)),
    Table("part", _cols(
        ("p_partkey", "bigint"), ("p_name", "varchar", 55), ("p_mfgr", "char", 25),
        ("p_brand", "char", 10), ("p_type", "varchar", 25), ("p_size", "int"),
        ("p_container", "char", 10), ("p_retailprice", "decimal"), ("p_comment", "varchar", 23),
    ), ("p_partkey",)),
    Table("partsupp", _cols(
        ("ps_partkey", "bigint"), ("ps_suppkey", "bigint"), ("ps_availqty", "bigint"),
        ("ps_supplycost", "decimal"), ("ps_comment", "varchar", 199),
    ), ("ps_partkey", "ps_suppkey")),
    Table("orders", _cols(
        ("o_orderkey", "bigint"), ("o_custkey", "bigint"), ("o_orderstatus", "char", 1),
        ("o_totalprice", "decimal"), ("o_orderdate", "date"), ("o_orderpriority", "char", 15),
        ("o_clerk", "char", 15), ("o_shippriority", "int"), ("o_comment", "varchar", 79),
    ), ("o_orderkey",)),
    Table("lineitem", _cols(
        ("l_orderkey", "bigint"), ("l_partkey", "bigint"), ("l_suppkey", "bigint"),
        ("l_linenumber", "bigint"), ("l_quantity", "decimal"), ("l_extendedprice", "decimal"),
        ("l_discount", "decimal"), ("l_tax", "decimal"), ("l_returnflag", "char", 1),
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


@dataclass(frozen=True)
class _Dialect:
    """How one SQL dialect stores the schema; choices measured, not guessed (see below)."""

    types: dict[str, str]  # spec kind -> column type; "{length}" is replaced by the spec's size
    keys_after_load: bool  # add primary keys after the load instead of in CREATE TABLE
    foreign_key_indexes: bool
    analyze: str = ""  # statement that gathers planner statistics after the indexes, if any
    table_options: str = ""  # appended to every CREATE TABLE (e.g. the storage engine)


_DIALECTS: dict[str, _Dialect] = {
    # DuckDB answers TPC-H with hash joins, not its ART indexes: at SF 1 the foreign-key
    # indexes added 6-20 s to a ~16 s load and made no query faster (22 queries: 2.4-2.5 s
    # without, 3.2-3.5 s with), so DuckDB gets none. Primary keys added by ALTER
    # TABLE after the load were a little faster than inline ones (median of 5 paired SF 1
    # loads: 16.4 s vs 17.8 s, 2 CPUs) and keep the load's "tables" time pure data.
    "duckdb": _Dialect(
        types={"bigint": "BIGINT", "int": "INTEGER", "decimal": "DECIMAL(15,2)", "date": "DATE",
               "char": "VARCHAR", "varchar": "VARCHAR"},
        keys_after_load=True,
        foreign_key_indexes=False,
    ),
    # SQLite has storage classes, not types: money is REAL, dates are ISO 'YYYY-MM-DD' text
    # (which sorts and compares correctly as text). SQLite cannot add a primary key to an
    # existing table, so keys are inline; dbgen emits rows in key order, so the key b-trees
    # only ever append. No ANALYZE: at SF 0.1 it made the 22 queries slower (6.6 s vs 3.2 s;
    # Q7 0.2 s -> 1.8 s).
    "sqlite": _Dialect(
        types={"bigint": "INTEGER", "int": "INTEGER", "decimal": "REAL", "date": "TEXT",
               "char": "TEXT", "varchar": "TEXT"},
        keys_after_load=False,
        foreign_key_indexes=True,
    ),
    # PostgreSQL: the spec's types as declared (CHAR(n)/VARCHAR(n), exact NUMERIC money).
    # Keys and foreign-key indexes are built after COPY (faster than maintaining them row by
    # row) and ANALYZE follows, so the planner knows the tables it just loaded.
    "postgres": _Dialect(
        types={"bigint": "BIGINT", "int": "INTEGER", "decimal": "NUMERIC(15,2)", "date": "DATE",
               "char": "CHAR({length})", "varchar": "VARCHAR({length})"},
        keys_after_load=True,
        foreign_key_indexes=True,
        analyze="ANALYZE",
    ),
    # MariaDB/InnoDB (sqlglot's "mysql" dialect): InnoDB clusters every table by its primary
    # key, so keys are inline (adding one later rebuilds the table) and dbgen's key order
    # makes the load append. The foreign-key indexes are what its nested-loop joins need: at
    # SF 0.1 they cost 0.85 s after a 5.4 s load, and without them Q13 ran past 60 s (0.4 s
    # with) and Q17 took 5.3 s (0.01 s with). ANALYZE TABLE after the load: InnoDB otherwise
    # recalculates statistics in the background whenever it gets to it, so plans would
    # depend on timing.
    "mysql": _Dialect(
        types={"bigint": "BIGINT", "int": "INTEGER", "decimal": "DECIMAL(15,2)", "date": "DATE",
               "char": "CHAR({length})", "varchar": "VARCHAR({length})"},
        keys_after_load=False,
        foreign_key_indexes=True,
        analyze="ANALYZE TABLE " + ", ".join(t.name for t in SCHEMA),
        table_options="ENGINE=InnoDB",
    ),
    # SQL Server (sqlglot's "tsql"): the script kit (tdebench script) and a server reached by url
    # run it, neither of which can be measured here, so these choices follow the engine's
    # documentation, not a measurement. Primary keys inline: a clustered index that dbgen's key order only appends
    # to, as for InnoDB; the foreign-key indexes for its nested-loop plans; sp_updatestats so
    # the plans do not wait for auto-statistics on first use.
    "tsql": _Dialect(
        types={"bigint": "BIGINT", "int": "INT", "decimal": "DECIMAL(15,2)", "date": "DATE",
               "char": "CHAR({length})", "varchar": "VARCHAR({length})"},
        keys_after_load=False,
        foreign_key_indexes=True,
        analyze="EXEC sp_updatestats",
    ),
    # Oracle (the script kit and a server by url, as tsql): NUMBER for the spec's integers and money, DATE (which
    # holds a time too; dbgen's are midnight), VARCHAR2. Tables and their indexes go to the
    # schema owner's default tablespace, which the kit's setup makes the encrypted one.
    "oracle": _Dialect(
        types={"bigint": "NUMBER(19)", "int": "NUMBER(10)", "decimal": "NUMBER(15,2)", "date": "DATE",
               "char": "CHAR({length})", "varchar": "VARCHAR2({length})"},
        keys_after_load=False,
        foreign_key_indexes=True,
        analyze="BEGIN DBMS_STATS.GATHER_SCHEMA_STATS(SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA')); END;",
    ),
}

DIALECTS: tuple[str, ...] = tuple(_DIALECTS)


def _dialect(name: str) -> _Dialect:
    return ddl.dialect_of(_DIALECTS, name, "TPC-H")  # type: ignore[return-value]


def create_tables(dialect: str) -> list[str]:
    """CREATE TABLE statements in load order (primary keys inline where the dialect wants)."""
    spec = _dialect(dialect)
    return ddl.create_tables(SCHEMA, spec.types, keys_inline=not spec.keys_after_load,
                             table_options=spec.table_options)


def create_indexes(dialect: str) -> list[str]:
    """What to build after the load: primary keys (where deferred) and foreign-key indexes."""
    spec = _dialect(dialect)
    statements = []
    if spec.keys_after_load:
        statements += ddl.add_primary_keys(SCHEMA)
    if spec.foreign_key_indexes:
        statements += [f"CREATE INDEX {table}_{'_'.join(columns)} ON {table} ({', '.join(columns)})"
                       for table, columns in FOREIGN_KEY_INDEXES]
    if spec.analyze:
        statements.append(spec.analyze)
    return statements

