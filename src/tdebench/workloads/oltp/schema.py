"""The TPC-C schema (spec clause 1.3: nine tables) as data, rendered into DDL per SQL dialect.

As in the TPC-H schema, columns carry the spec's logical kinds and each dialect maps them to
its own types (engines/dialects.py), so the nine CREATE TABLEs exist once. Money is exact DECIMAL wherever the
engine has it; SQLite stores it as REAL (its only non-integer class), so its consistency
checks compare sums to the cent (see checks.py).
"""

from __future__ import annotations

from tdebench.engines import dialects
from tdebench.workloads import ddl
from tdebench.workloads.ddl import Table
from tdebench.workloads.ddl import columns as _cols

# Column kinds: `int`, `decimal(…)` (money and rates, below), `timestamp`, `char`, `varchar`
# (text with the spec's size); nullable only where the spec has NULLs (undelivered orders).
# History has no key.


def _address(prefix: str) -> tuple[tuple, ...]:
    return ((f"{prefix}_street_1", "varchar", 20), (f"{prefix}_street_2", "varchar", 20),
            (f"{prefix}_city", "varchar", 20), (f"{prefix}_state", "char", 2), (f"{prefix}_zip", "char", 9))


DISTRICTS_PER_WAREHOUSE = 10
CUSTOMERS_PER_DISTRICT = 3000
ITEMS = 100_000
STOCK_DISTRICT_COLUMNS = tuple(f"s_dist_{d:02d}" for d in range(1, DISTRICTS_PER_WAREHOUSE + 1))

# Clause 1.3.1, in load order. Money (`_MONEY`) is DECIMAL(12,2) for balances and year-to-date
# sums (h_amount and ol_amount fit in it too), tax and discount rates (`_RATE`) DECIMAL(4,4).
_MONEY, _RATE = "decimal(12,2)", "decimal(4,4)"
SCHEMA: tuple[Table, ...] = (
    Table("warehouse", _cols(
        ("w_id", "int"), ("w_name", "varchar", 10), *_address("w"), ("w_tax", _RATE), ("w_ytd", _MONEY),
    ), ("w_id",)),
    Table("district", _cols(
        ("d_id", "int"), ("d_w_id", "int"), ("d_name", "varchar", 10), *_address("d"), ("d_tax", _RATE),
        ("d_ytd", _MONEY), ("d_next_o_id", "int"),
    ), ("d_w_id", "d_id")),
    Table("customer", _cols(
        ("c_id", "int"), ("c_d_id", "int"), ("c_w_id", "int"), ("c_first", "varchar", 16),
        ("c_middle", "char", 2), ("c_last", "varchar", 16), *_address("c"), ("c_phone", "char", 16),
        ("c_since", "timestamp"), ("c_credit", "char", 2), ("c_credit_lim", _MONEY), ("c_discount", _RATE),
        ("c_balance", _MONEY), ("c_ytd_payment", _MONEY), ("c_payment_cnt", "int"),
        ("c_delivery_cnt", "int"), ("c_data", "varchar", 500),
    ), ("c_w_id", "c_d_id", "c_id")),
    Table("history", _cols(
        ("h_c_id", "int"), ("h_c_d_id", "int"), ("h_c_w_id", "int"), ("h_d_id", "int"), ("h_w_id", "int"),
        ("h_date", "timestamp"), ("h_amount", _MONEY), ("h_data", "varchar", 24),
    ), ()),
    Table("orders", _cols(
        ("o_id", "int"), ("o_d_id", "int"), ("o_w_id", "int"), ("o_c_id", "int"), ("o_entry_d", "timestamp"),
        ("o_carrier_id", "int", 0, True), ("o_ol_cnt", "int"), ("o_all_local", "int"),
    ), ("o_w_id", "o_d_id", "o_id")),
    Table("new_order", _cols(
        ("no_o_id", "int"), ("no_d_id", "int"), ("no_w_id", "int"),
    ), ("no_w_id", "no_d_id", "no_o_id")),
    Table("order_line", _cols(
        ("ol_o_id", "int"), ("ol_d_id", "int"), ("ol_w_id", "int"), ("ol_number", "int"), ("ol_i_id", "int"),
        ("ol_supply_w_id", "int"), ("ol_delivery_d", "timestamp", 0, True), ("ol_quantity", "int"),
        ("ol_amount", _MONEY), ("ol_dist_info", "char", 24),
    ), ("ol_w_id", "ol_d_id", "ol_o_id", "ol_number")),
    Table("item", _cols(
        ("i_id", "int"), ("i_im_id", "int"), ("i_name", "varchar", 24), ("i_price", _MONEY),
        ("i_data", "varchar", 50),
    ), ("i_id",)),
    Table("stock", _cols(
        ("s_i_id", "int"), ("s_w_id", "int"), ("s_quantity", "int"),
        *((name, "char", 24) for name in STOCK_DISTRICT_COLUMNS),
        ("s_ytd", "int"), ("s_order_cnt", "int"), ("s_remote_cnt", "int"), ("s_data", "varchar", 50),
    ), ("s_w_id", "s_i_id")),
)

TABLES: dict[str, tuple[str, ...]] = {t.name: tuple(c.name for c in t.columns) for t in SCHEMA}

# The personal data of TPC-C, what a cell-level (column) encryption seals: the customers'
# first names, addresses, phone numbers and balances (as TPC-H's names, addresses, phones and
# balances). Not the last name, which 60% of Payments and Order-Statuses search by, nor any key.
SENSITIVE: dict[str, tuple[str, ...]] = {
    "customer": ("c_first", "c_middle", "c_street_1", "c_street_2", "c_city", "c_state", "c_zip", "c_phone",
                 "c_balance"),
}

# Secondary indexes the transactions need (as HammerDB creates them): customers by last name
# (Payment and Order-Status select 60% of customers by name) and a customer's latest order
# (Order-Status).
INDEXES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("customer_last", "customer", ("c_w_id", "c_d_id", "c_last", "c_first")),
    ("orders_customer", "orders", ("o_w_id", "o_d_id", "o_c_id", "o_id")),
)


# The references of clause 1.3 (BenchBase's and HammerDB's schemas declare them), added only with
# the workload's `foreign_keys = true`: (name, table, its columns, the referenced table, its key).
# Off by default, as tdebench has always loaded the schema: each one costs a lookup in the referenced
# table's key on every insert (order lines, orders, history) — a difference from BenchBase's schema
# that docs/method/oltp-driver.md ("What tdebench's OLTP figures compare with") names and bench/oltp_foreign_keys.py
# measures.
FOREIGN_KEYS: tuple[tuple[str, str, tuple[str, ...], str, tuple[str, ...]], ...] = (
    ("fk_district_warehouse", "district", ("d_w_id",), "warehouse", ("w_id",)),
    ("fk_customer_district", "customer", ("c_w_id", "c_d_id"), "district", ("d_w_id", "d_id")),
    ("fk_history_customer", "history", ("h_c_w_id", "h_c_d_id", "h_c_id"), "customer", ("c_w_id", "c_d_id", "c_id")),
    ("fk_history_district", "history", ("h_w_id", "h_d_id"), "district", ("d_w_id", "d_id")),
    ("fk_orders_customer", "orders", ("o_w_id", "o_d_id", "o_c_id"), "customer", ("c_w_id", "c_d_id", "c_id")),
    ("fk_new_order_orders", "new_order", ("no_w_id", "no_d_id", "no_o_id"), "orders", ("o_w_id", "o_d_id", "o_id")),
    ("fk_order_line_orders", "order_line", ("ol_w_id", "ol_d_id", "ol_o_id"), "orders", ("o_w_id", "o_d_id", "o_id")),
    ("fk_order_line_stock", "order_line", ("ol_supply_w_id", "ol_i_id"), "stock", ("s_w_id", "s_i_id")),
    ("fk_stock_warehouse", "stock", ("s_w_id",), "warehouse", ("w_id",)),
    ("fk_stock_item", "stock", ("s_i_id",), "item", ("i_id",)),
)
FOREIGN_KEY_DIALECTS = tuple(name for name, d in dialects.DIALECTS.items() if d.adds_foreign_keys)
"""The dialects whose servers add foreign keys to loaded tables (ALTER TABLE … ADD CONSTRAINT):
SQLite cannot add one to an existing table, DuckDB 1.5 neither."""


def add_foreign_keys(dialect: str) -> list[str]:
    """The statements that add FOREIGN_KEYS to the loaded tables (each checks every row)."""
    if dialect not in FOREIGN_KEY_DIALECTS:
        raise ValueError(f"TPC-C foreign keys are added on {', '.join(FOREIGN_KEY_DIALECTS)} only, not {dialect}")
    return [f"ALTER TABLE {table} ADD CONSTRAINT {name} FOREIGN KEY ({', '.join(columns)}) "
            f"REFERENCES {target} ({', '.join(key)})" for name, table, columns, target, key in FOREIGN_KEYS]


def drop_foreign_keys(dialect: str) -> list[str]:
    """The statements that drop FOREIGN_KEYS again (PostgreSQL; on MariaDB the indexes InnoDB
    made for them would stay)."""
    if not dialects.dialect(dialect, "TPC-C schema").drops_foreign_keys:
        droppers = ", ".join(name for name, d in dialects.DIALECTS.items() if d.drops_foreign_keys)
        raise ValueError(f"dropping the TPC-C foreign keys is written for {droppers} only, not {dialect}")
    return [f"ALTER TABLE {table} DROP CONSTRAINT {name}" for name, table, *_ in FOREIGN_KEYS]


# Where TPC-C departs from the dialects' defaults (engines/dialects.py): DuckDB's primary keys
# inline. The transactions find every row by its key, and DuckDB checks a key only through its
# index, so the tables need them from the start.
_DEPARTURES: dict[str, ddl.Departure] = {"duckdb": ddl.Departure(keys_after_load=False)}
DIALECTS: tuple[str, ...] = tuple(dialects.DIALECTS)


def _layout(dialect: str) -> ddl.Layout:
    return ddl.layout(dialect, _DEPARTURES, "TPC-C")


def create_tables(dialect: str) -> list[str]:
    return ddl.create_tables(SCHEMA, _layout(dialect))


def create_indexes(dialect: str) -> list[str]:
    """After the load: deferred primary keys, the secondary indexes, planner statistics."""
    indexes = [f"CREATE INDEX {name} ON {table} ({', '.join(columns)})" for name, table, columns in INDEXES]
    return ddl.after_load(SCHEMA, _layout(dialect), indexes)


def after_bulk_load(dialect: str, undelivered_from: int) -> list[str]:
    """Statements that complete the bulk load where a dialect's loader cannot write NULL.

    MariaDB's LOAD DATA (as the engine's bulk load runs it) reads an empty field as 0 and
    '0000-00-00' rather than NULL, so the undelivered orders' carrier and their lines'
    delivery date are set to NULL after the load, as the spec has them.
    """
    if _layout(dialect).dialect.bulk_load_writes_null:
        return []
    return [f"UPDATE orders SET o_carrier_id = NULL WHERE o_id >= {undelivered_from}",
            f"UPDATE order_line SET ol_delivery_d = NULL WHERE ol_o_id >= {undelivered_from}"]
