"""The `persons` table and its staging twin, as DDL per SQL dialect.

`persons` holds the table the operations run on; `persons_staging` holds the k rows the
insert test copies in (the `randominput1m` of Moulianitakis & Asimakopoulos (2019)), loaded
before any clock starts. Column kinds map to each dialect's types (engines/dialects.py) as the
TPC-H schema's do, with the thesis's `varchar(255)` where a dialect declares lengths.
"""

from __future__ import annotations

from tdebench.engines import dialects
from tdebench.workloads import ddl
from tdebench.workloads.crud.data import COLUMNS

TABLE = "persons"
STAGING = "persons_staging"
KEY = "id"
TEXT_LENGTH = 255
KINDS: dict[str, str] = {"id": "int", "first_name": "varchar", "last_name": "varchar", "age": "int",
                         "credit_card_no": "bigint", "address": "varchar", "city_of_birth": "varchar",
                         "gender": "varchar"}
SENSITIVE: tuple[str, ...] = ("first_name", "last_name", "credit_card_no", "address", "city_of_birth")
"""The personal data a column-level encryption seals: everything that identifies or
describes a person, not the key."""


# Where crud departs from the dialects' defaults (engines/dialects.py): no ANALYZE on SQLite,
# whose INTEGER PRIMARY KEY makes the table a b-tree clustered by id that every lookup uses.
_DEPARTURES: dict[str, ddl.Departure] = {"sqlite": ddl.Departure(analyze=False)}
DIALECTS: tuple[str, ...] = tuple(dialects.DIALECTS)


def _layout(dialect: str) -> ddl.Layout:
    return ddl.layout(dialect, _DEPARTURES, "crud")


def create_tables(dialect: str) -> list[str]:
    """CREATE TABLE for `persons` (key inline where the dialect wants it) and its staging table."""
    layout = _layout(dialect)
    spec = layout.dialect
    columns = [f"{name} {spec.column_type(KINDS[name], TEXT_LENGTH)} NOT NULL" for name in COLUMNS]
    keyed = [*columns, f"PRIMARY KEY ({KEY})"] if not layout.keys_after_load else columns
    options = f" {spec.table_options}" if spec.table_options else ""
    return [f"CREATE TABLE {TABLE} ({', '.join(keyed)}){options}",
            f"CREATE TABLE {STAGING} ({', '.join(columns)}){options}"]


def create_indexes(dialect: str) -> list[str]:
    """What follows the load: the deferred primary key and planner statistics, if any."""
    layout = _layout(dialect)
    statements = [f"ALTER TABLE {TABLE} ADD PRIMARY KEY ({KEY})"] if layout.keys_after_load else []
    analyze = layout.dialect.analyze([TABLE]) if layout.analyze else ""
    return statements + ([analyze] if analyze else [])
