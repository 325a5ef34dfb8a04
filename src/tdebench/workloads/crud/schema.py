"""The `persons` table and its staging twin, as DDL per SQL dialect.

`persons` holds the table the operations run on; `persons_staging` holds the k rows the
insert test copies in (the `randominput1m` of Moulianitakis & Asimakopoulos (2019)), loaded
before any clock starts. Column kinds map to each dialect's types the way the TPC-H schema's
do (workloads/tpch/schema.py), with the thesis's `varchar(255)` where a dialect declares
lengths.
"""

from __future__ import annotations

from dataclasses import dataclass

from tdebench.workloads import ddl
from tdebench.workloads.crud.data import COLUMNS

TABLE = "persons"
STAGING = "persons_staging"
KEY = "id"
KINDS: dict[str, str] = {"id": "int", "first_name": "text", "last_name": "text", "age": "int",
                         "credit_card_no": "bigint", "address": "text", "city_of_birth": "text",
                         "gender": "text"}
SENSITIVE: tuple[str, ...] = ("first_name", "last_name", "credit_card_no", "address", "city_of_birth")
"""The personal data a column-level encryption seals: everything that identifies or
describes a person, not the key."""


@dataclass(frozen=True)
class _Dialect:
    types: dict[str, str]
    key_after_load: bool  # ALTER TABLE … ADD PRIMARY KEY after the load instead of inline
    analyze: str = ""  # planner statistics after the load, where the engine wants them
    table_options: str = ""


_DIALECTS: dict[str, _Dialect] = {
    # As for TPC-H: DuckDB builds its ART key faster after the load than row by row.
    "duckdb": _Dialect({"int": "INTEGER", "bigint": "BIGINT", "text": "VARCHAR"}, key_after_load=True),
    # INTEGER PRIMARY KEY is SQLite's rowid: the table is a b-tree clustered by id.
    "sqlite": _Dialect({"int": "INTEGER", "bigint": "INTEGER", "text": "TEXT"}, key_after_load=False),
    "postgres": _Dialect({"int": "INTEGER", "bigint": "BIGINT", "text": "VARCHAR(255)"},
                         key_after_load=True, analyze=f"ANALYZE {TABLE}"),
    # InnoDB clusters by the primary key, so it is inline (adding it later rebuilds the table).
    "mysql": _Dialect({"int": "INTEGER", "bigint": "BIGINT", "text": "VARCHAR(255)"},
                      key_after_load=False, analyze=f"ANALYZE TABLE {TABLE}", table_options=" ENGINE=InnoDB"),
    # SQL Server and Oracle (servers reached by url; not run here, so these follow the engines'
    # documentation, as the TPC-H schema's tsql and oracle do): the key inline, a clustered index
    # on SQL Server and the index Oracle's lookups use, then fresh statistics for the plans.
    "tsql": _Dialect({"int": "INT", "bigint": "BIGINT", "text": "VARCHAR(255)"},
                     key_after_load=False, analyze=f"UPDATE STATISTICS {TABLE}"),
    "oracle": _Dialect({"int": "NUMBER(10)", "bigint": "NUMBER(19)", "text": "VARCHAR2(255)"},
                       key_after_load=False,
                       analyze=f"BEGIN DBMS_STATS.GATHER_TABLE_STATS(USER, '{TABLE.upper()}'); END;"),
}
DIALECTS: tuple[str, ...] = tuple(_DIALECTS)


def _dialect(name: str) -> _Dialect:
    return ddl.dialect_of(_DIALECTS, name, "crud")  # type: ignore[return-value]


def create_tables(dialect: str) -> list[str]:
    """CREATE TABLE for `persons` (key inline where the dialect wants it) and its staging table."""
    spec = _dialect(dialect)
    columns = [f"{name} {spec.types[KINDS[name]]} NOT NULL" for name in COLUMNS]
    keyed = [*columns, f"PRIMARY KEY ({KEY})"] if not spec.key_after_load else columns
    return [f"CREATE TABLE {TABLE} ({', '.join(keyed)}){spec.table_options}",
            f"CREATE TABLE {STAGING} ({', '.join(columns)}){spec.table_options}"]


def create_indexes(dialect: str) -> list[str]:
    """What follows the load: the deferred primary key and planner statistics, if any."""
    spec = _dialect(dialect)
    statements = [f"ALTER TABLE {TABLE} ADD PRIMARY KEY ({KEY})"] if spec.key_after_load else []
    return statements + ([spec.analyze] if spec.analyze else [])
