"""The five TPC-C transactions as client-side statements (clause 2.4–2.8), one dialect table.

Each function runs one whole transaction on one connection and returns "committed" or
"rollback" (the spec's 1% New-Orders with an unused item, rolled back on purpose); any
error propagates, and the driver rolls back, retries or counts it. Statements use `?`
placeholders, which the server connections turn into their drivers' own. Engines run at
their default isolation level, as HammerDB runs them; where two transactions race for the
same row the engine serialises them (locks) or fails one (DuckDB's write conflicts, SQLite's
busy database), and the driver runs the loser again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tdebench.engines.base import Connection
from tdebench.workloads.oltp.inputs import (DELIVERY, NEW_ORDER, ORDER_STATUS, PAYMENT, STOCK_LEVEL, Customer,
                                            Delivery, Inputs, NewOrder, OrderStatus, Payment, StockLevel)
from tdebench.workloads.oltp.schema import DISTRICTS_PER_WAREHOUSE
from tdebench.workloads.oltp.translated import TranslatedConnection

COMMITTED = "committed"
ROLLBACK = "rollback"
_ADDRESS = ("name", "street_1", "street_2", "city", "state", "zip")  # a warehouse's and a district's columns


@dataclass(frozen=True)
class Dialect:
    """How a dialect spells what the transactions need."""

    begin_write: str  # "": the transaction begins with its first statement (client_session)
    begin_read: str
    for_update: str  # appended to a SELECT of rows the transaction will update ("" if none)
    update_returning: bool  # UPDATE … RETURNING reads the new value in the same statement
    session: tuple[str, ...] = ()  # run once on every virtual user's connection
    # a New-Order's stock rows in one UPDATE (a CASE by item): fewer round trips on the servers;
    # DuckDB scans the table for an IN list of keys, so there one UPDATE per row is faster
    one_stock_update: bool = True
    client_session: tuple[str, ...] = ()  # run by client_side() on each user's connection
    # the numbers of the one stock UPDATE written into its text instead of bound: for a driver
    # that escapes bound values in Python (PyMySQL: 74 µs for the statement's 40-120 values, 22
    # written in). Bound, its text is the same for the same number of items, so the drivers'
    # caches and PostgreSQL's prepared statements serve it
    numbers_in_text: bool = False
    # the dialect the statements are transpiled into on each user's connection (translated.py:
    # SQL Server's tsql, Oracle's); "": run as written
    translated: str = ""


DIALECTS: dict[str, Dialect] = {
    # DuckDB: optimistic concurrency; a write-write conflict fails the later writer. Not
    # UPDATE … RETURNING: on a table with a primary key, DuckDB 1.5.5 lets a concurrent
    # UPDATE … RETURNING and UPDATE of the same row both commit, and one update is lost
    # (a plain UPDATE gets "Conflict on update" as it should).
    "duckdb": Dialect("BEGIN TRANSACTION", "BEGIN TRANSACTION", "", update_returning=False,
                      one_stock_update=False),
    # SQLite: one writer at a time. BEGIN IMMEDIATE takes the write lock up front (a deferred
    # transaction that upgrades to writing fails at once with SQLITE_BUSY to avoid a
    # deadlock); busy_timeout makes a waiting writer wait instead of failing; WAL (set when
    # the database is created) lets readers run beside the writer.
    "sqlite": Dialect("BEGIN IMMEDIATE", "BEGIN", "", update_returning=True,
                      session=("PRAGMA busy_timeout = 30000",)),
    "postgres": Dialect("BEGIN", "BEGIN", " FOR UPDATE", update_returning=True),
    # MariaDB has no UPDATE … RETURNING: read the row with FOR UPDATE (a locking read, which
    # REPEATABLE READ needs to see the latest version), then update it. Without autocommit a
    # transaction begins with its first statement, as after START TRANSACTION (its snapshot at
    # its first read), and the round trip of START TRANSACTION is saved; PyMySQL has no
    # statement of its own for it.
    "mysql": Dialect("", "", " FOR UPDATE", update_returning=False, client_session=("SET autocommit = 0",),
                     numbers_in_text=True),
    # SQL Server (by url): an explicit transaction at the default READ COMMITTED (locking), the
    # locking reads as update locks and RETURNING as OUTPUT (translated.py).
    "tsql": Dialect("BEGIN TRANSACTION", "BEGIN TRANSACTION", " FOR UPDATE", update_returning=True,
                    translated="tsql"),
    # Oracle (by url): no BEGIN, so SET TRANSACTION opens one (the read-only transactions see one
    # snapshot throughout); its RETURNING fills bind variables, not rows, so the SELECT … FOR
    # UPDATE path, as MariaDB's (translated.py).
    "oracle": Dialect("SET TRANSACTION READ WRITE", "SET TRANSACTION READ ONLY", " FOR UPDATE",
                      update_returning=False, translated="oracle"),
}


def dialect(name: str) -> Dialect:
    try:
        return DIALECTS[name]
    except KeyError:
        raise ValueError(f"no TPC-C transactions for dialect {name!r}; known: {', '.join(DIALECTS)}") from None


def _begin(conn: Connection, statement: str) -> None:
    if statement:
        conn.execute(statement)


def _marks(count: int) -> str:
    return ", ".join("?" for _ in range(count))


def _one(rows: list[tuple[Any, ...]], what: str) -> tuple[Any, ...]:
    if len(rows) != 1:
        raise LookupError(f"{what}: expected one row, got {len(rows)}")
    return rows[0]


def _customer_id(conn: Connection, customer: Customer) -> int:
    """Clause 2.5.2.2: by last name, the customer at position ceil(n/2) in c_first order."""
    if customer.c_id is not None:
        return customer.c_id
    rows = conn.execute("SELECT c_id FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ? "
                        "ORDER BY c_first", [customer.w_id, customer.d_id, customer.c_last])
    if not rows:
        raise LookupError(f"no customer named {customer.c_last} in district {customer.w_id}/{customer.d_id}")
    return rows[(len(rows) + 1) // 2 - 1][0]


def new_order(conn: Connection, sql: Dialect, t: NewOrder) -> str:
    """Clause 2.4.2: take the district's next order number, enter the order and its lines,
    take the stock; roll back if an item does not exist. Every round trip costs the driver's
    Python and the server a context switch, while the district's row stays locked: the customer
    and warehouse are read in one SELECT, and the stock of a supplying warehouse is read in one
    SELECT and updated in one UPDATE (`_take_stock`), not one per line."""
    _begin(conn, sql.begin_write)
    _one(conn.execute("SELECT c_discount, c_last, c_credit, w_tax FROM customer JOIN warehouse ON w_id = c_w_id "
                      "WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?", [t.w_id, t.d_id, t.c_id]), "customer")
    key = [t.w_id, t.d_id]
    if sql.update_returning:
        next_o_id, _ = _one(conn.execute("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = ? "
                                         "AND d_id = ? RETURNING d_next_o_id, d_tax", key), "district")
        o_id = next_o_id - 1
    else:
        o_id, _ = _one(conn.execute("SELECT d_next_o_id, d_tax FROM district WHERE d_w_id = ? AND d_id = ?"
                                    + sql.for_update, key), "district")
        conn.execute("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = ? AND d_id = ?", key)
    lines = len(t.items)
    conn.execute("INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, "
                 "o_all_local) VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP, NULL, ?, ?)",
                 [o_id, t.d_id, t.w_id, t.c_id, lines, int(t.all_local)])
    conn.execute("INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (?, ?, ?)", [o_id, t.d_id, t.w_id])
    wanted = sorted(set(t.items))
    prices = {row[0]: float(row[1]) for row in
              conn.execute(f"SELECT i_id, i_price, i_name, i_data FROM item WHERE i_id IN ({_marks(len(wanted))})",
                           wanted)}
    if len(prices) < len(wanted):  # an unused item: clause 2.4.2.3
        conn.execute("ROLLBACK")
        return ROLLBACK
    dist_info = _take_stock(conn, sql, t)
    values: list[Any] = []
    for number, (item, supply_w_id, quantity) in enumerate(zip(t.items, t.supply_w_ids, t.quantities), start=1):
        values += [o_id, t.d_id, t.w_id, number, item, supply_w_id, quantity,
                   round(quantity * prices[item], 2), dist_info[(item, supply_w_id)]]
    conn.execute("INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, "
                 "ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) VALUES "
                 + ", ".join(["(?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)"] * lines), values)
    conn.execute("COMMIT")
    return COMMITTED


@dataclass
class _Stock:
    """One stock row as a New-Order's lines leave it: they may name the same item twice."""

    quantity: int
    ytd: int = 0
    orders: int = 0
    remote: int = 0

    def values(self) -> tuple[int, int, int, int]:
        """What the UPDATE sets, in _STOCK_SET's order."""
        return self.quantity, self.ytd, self.orders, self.remote


_STOCK_SET = ("s_quantity = ", "s_ytd = s_ytd + ", "s_order_cnt = s_order_cnt + ", "s_remote_cnt = s_remote_cnt + ")


def _take_stock(conn: Connection, sql: Dialect, t: NewOrder) -> dict[tuple[int, int], str]:
    """Clause 2.4.2.2: each line takes its quantity from its item's stock (plus 91 when fewer
    than 10 would be left), counts an order and whether it was remote; per supplying warehouse
    one locking read of all its rows, then `_update_stock`. Returns each
    (item, warehouse)'s s_dist_xx for the order lines."""
    dist = f"s_dist_{t.d_id:02d}"
    dist_info: dict[tuple[int, int], str] = {}
    for supply_w_id in sorted(set(t.supply_w_ids)):
        ids = sorted({i for i, w in zip(t.items, t.supply_w_ids) if w == supply_w_id})
        stock: dict[int, _Stock] = {}
        for s_i_id, quantity, info in conn.execute(
                f"SELECT s_i_id, s_quantity, {dist} FROM stock WHERE s_w_id = ? AND s_i_id IN ({_marks(len(ids))})"
                + sql.for_update, [supply_w_id, *ids]):
            stock[s_i_id] = _Stock(quantity)
            dist_info[(s_i_id, supply_w_id)] = info
        for item, w_id, quantity in zip(t.items, t.supply_w_ids, t.quantities):
            if w_id == supply_w_id:
                row = stock[item]
                row.quantity -= quantity if row.quantity >= quantity + 10 else quantity - 91
                row.ytd += quantity
                row.orders += 1
                row.remote += int(supply_w_id != t.w_id)
        _update_stock(conn, sql, supply_w_id, stock)
    return dist_info


def _update_stock(conn: Connection, sql: Dialect, w_id: int, stock: dict[int, _Stock]) -> None:
    """Write a New-Order's stock rows of one warehouse back: in one UPDATE with a CASE by item
    per column where the dialect finds the rows of an IN list by its key (`one_stock_update`),
    else one UPDATE per row."""
    if not sql.one_stock_update:
        for item, row in stock.items():
            conn.execute("UPDATE stock SET " + ", ".join(f"{column}?" for column in _STOCK_SET)
                         + " WHERE s_i_id = ? AND s_w_id = ?", [*row.values(), item, w_id])
        return
    params: list[int] = []

    def number(value: int) -> str:
        """A `?` bound to `value`, or with `numbers_in_text` the number itself (an int of this
        process's own making)."""
        if sql.numbers_in_text:
            return str(int(value))
        params.append(value)
        return "?"

    conn.execute("UPDATE stock SET " + ", ".join(
        f"{column}CASE s_i_id " + " ".join(f"WHEN {number(item)} THEN {number(row.values()[index])}"
                                           for item, row in stock.items()) + " END"
        for index, column in enumerate(_STOCK_SET))
        + f" WHERE s_w_id = {number(w_id)} AND s_i_id IN ({', '.join(number(item) for item in stock)})", params)


def payment(conn: Connection, sql: Dialect, t: Payment) -> str:
    """Clause 2.5.2: add the payment to the warehouse's, district's and customer's figures
    (and, for bad credit, to the customer's data), and write it to the history. The warehouse's
    and district's names and addresses come back from their UPDATEs (RETURNING) or, without
    it, from one SELECT of both after them: fewer round trips while their rows are locked."""
    _begin(conn, sql.begin_write)
    update_warehouse = "UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = ?"
    update_district = "UPDATE district SET d_ytd = d_ytd + ? WHERE d_w_id = ? AND d_id = ?"
    w_address, d_address = (", ".join(f"{p}_{name}" for name in _ADDRESS) for p in "wd")
    if sql.update_returning:
        w_name = _one(conn.execute(f"{update_warehouse} RETURNING {w_address}", [t.amount, t.w_id]), "warehouse")[0]
        d_name = _one(conn.execute(f"{update_district} RETURNING {d_address}", [t.amount, t.w_id, t.d_id]),
                      "district")[0]
    else:
        conn.execute(update_warehouse, [t.amount, t.w_id])
        conn.execute(update_district, [t.amount, t.w_id, t.d_id])
        both = _one(conn.execute(f"SELECT {w_address}, {d_address} FROM warehouse JOIN district ON d_w_id = w_id "
                                 "WHERE w_id = ? AND d_id = ?", [t.w_id, t.d_id]), "warehouse and district")
        w_name, d_name = both[0], both[len(_ADDRESS)]
    c = t.customer
    c_id = _customer_id(conn, c)
    key = [c.w_id, c.d_id, c_id]
    credit, data = _one(conn.execute(
        "SELECT c_credit, c_data, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, "
        "c_phone, c_since, c_credit_lim, c_discount, c_balance FROM customer WHERE c_w_id = ? AND c_d_id = ? "
        "AND c_id = ?" + sql.for_update, key), "customer")[:2]
    paid = "c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, c_payment_cnt = c_payment_cnt + 1"
    if credit == "BC":
        data = f"{c_id} {c.d_id} {c.w_id} {t.d_id} {t.w_id} {t.amount:.2f} | {data}"[:500]
        conn.execute(f"UPDATE customer SET {paid}, c_data = ? WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
                     [t.amount, t.amount, data, *key])
    else:
        conn.execute(f"UPDATE customer SET {paid} WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
                     [t.amount, t.amount, *key])
    conn.execute("INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) "
                 "VALUES (?, ?, ?, ?, ?, CURRENT_TIMESTAMP, ?, ?)",
                 [c_id, c.d_id, c.w_id, t.d_id, t.w_id, t.amount, f"{w_name}    {d_name}"])
    conn.execute("COMMIT")
    return COMMITTED


def order_status(conn: Connection, sql: Dialect, t: OrderStatus) -> str:
    """Clause 2.6.2 (read-only): a customer's balance, latest order and its lines."""
    _begin(conn, sql.begin_read)
    c = t.customer
    c_id = _customer_id(conn, c)
    _one(conn.execute("SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = ? AND c_d_id = ? "
                      "AND c_id = ?", [c.w_id, c.d_id, c_id]), "customer")
    latest = conn.execute("SELECT o_id, o_entry_d, o_carrier_id FROM orders WHERE o_w_id = ? AND o_d_id = ? "
                          "AND o_c_id = ? ORDER BY o_id DESC LIMIT 1", [c.w_id, c.d_id, c_id])
    if latest:
        conn.execute("SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line "
                     "WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?", [c.w_id, c.d_id, latest[0][0]])
    conn.execute("COMMIT")
    return COMMITTED


def delivery(conn: Connection, sql: Dialect, t: Delivery) -> str:
    """Clause 2.7.4: deliver the oldest undelivered order of each of the warehouse's ten
    districts, in one transaction (as HammerDB does). A district whose oldest order a
    concurrent Delivery took first (the DELETE finds no row) is skipped, as one without
    undelivered orders is."""
    _begin(conn, sql.begin_write)
    for d_id in range(1, DISTRICTS_PER_WAREHOUSE + 1):
        oldest = conn.execute("SELECT no_o_id FROM new_order WHERE no_w_id = ? AND no_d_id = ? "
                              "ORDER BY no_o_id LIMIT 1" + sql.for_update, [t.w_id, d_id])
        if not oldest:
            continue
        o_id = oldest[0][0]
        if not conn.execute("DELETE FROM new_order WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ? "
                            "RETURNING no_o_id", [t.w_id, d_id, o_id]):
            continue
        deliver = "UPDATE orders SET o_carrier_id = ? WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?"
        if sql.update_returning:  # the customer comes back from the UPDATE: one round trip fewer
            (c_id,) = _one(conn.execute(deliver + " RETURNING o_c_id", [t.carrier_id, t.w_id, d_id, o_id]), "order")
        else:
            (c_id,) = _one(conn.execute("SELECT o_c_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?",
                                        [t.w_id, d_id, o_id]), "order")
            conn.execute(deliver, [t.carrier_id, t.w_id, d_id, o_id])
        conn.execute("UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP WHERE ol_w_id = ? AND ol_d_id = ? "
                     "AND ol_o_id = ?", [t.w_id, d_id, o_id])
        conn.execute("UPDATE customer SET c_balance = c_balance + (SELECT sum(ol_amount) FROM order_line "
                     "WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?), c_delivery_cnt = c_delivery_cnt + 1 "
                     "WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?", [t.w_id, d_id, o_id, t.w_id, d_id, c_id])
    conn.execute("COMMIT")
    return COMMITTED


def stock_level(conn: Connection, sql: Dialect, t: StockLevel) -> str:
    """Clause 2.8.2 (read-only): how many of the items of the district's last 20 orders are
    below the threshold in stock."""
    _begin(conn, sql.begin_read)
    (next_o_id,) = _one(conn.execute("SELECT d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?",
                                     [t.w_id, t.d_id]), "district")
    conn.execute("SELECT count(DISTINCT s_i_id) FROM order_line JOIN stock ON s_w_id = ol_w_id AND s_i_id = ol_i_id "
                 "WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id < ? AND ol_o_id >= ? AND s_quantity < ?",
                 [t.w_id, t.d_id, next_o_id, next_o_id - 20, t.threshold])
    conn.execute("COMMIT")
    return COMMITTED


CLIENT: dict[str, Callable[[Connection, Dialect, Any], str]] = {
    NEW_ORDER: new_order, PAYMENT: payment, ORDER_STATUS: order_status, DELIVERY: delivery,
    STOCK_LEVEL: stock_level,
}


def client_side(conn: Connection, sql: Dialect) -> Callable[[str, Inputs], str]:
    """Run transactions as client-side statements on `conn` (its session set up for them now)."""
    if sql.translated:
        conn = TranslatedConnection(conn, sql.translated)
    for statement in sql.client_session:
        conn.execute(statement)
    return lambda kind, inputs: CLIENT[kind](conn, sql, inputs)
