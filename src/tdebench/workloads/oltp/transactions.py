"""The five TPC-C transactions as client-side statements (clause 2.4–2.8), one dialect table.

Each function runs one whole transaction on one connection and returns "committed" or
"rollback" (the spec's 1% New-Orders with an unused item, rolled back on purpose); any
error propagates, and the driver rolls back, retries or counts it. Statements use `?`
placeholders, which the server connections turn into their drivers' own. Statements whose
results a transaction does not wait for are sent together (`Connection.execute_batch`, one
round trip on a server), so a transaction takes 1 to 3 round trips; the first statement of a
batch that fails stops it, and the driver rolls the whole transaction back. Engines run at
their default isolation level, as HammerDB runs them; where two transactions race for the
same row the engine serialises them (locks) or fails one (DuckDB's write conflicts, SQLite's
busy database), and the driver runs the loser again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tdebench.engines import dialects
from tdebench.engines.base import Connection, Statement
from tdebench.workloads.oltp.inputs import (DELIVERY, NEW_ORDER, ORDER_STATUS, PAYMENT, STOCK_LEVEL, Customer,
                                            Delivery, Inputs, NewOrder, OrderStatus, Payment, StockLevel)
from tdebench.workloads.oltp.schema import DISTRICTS_PER_WAREHOUSE
from tdebench.workloads.oltp.translated import TranslatedConnection

COMMITTED = "committed"
ROLLBACK = "rollback"
_ADDRESS = ("name", "street_1", "street_2", "city", "state", "zip")  # a warehouse's and a district's columns


@dataclass(frozen=True)
class Dialect:
    """How a dialect spells what the transactions need: its engine's forms (engines/dialects.py)
    and TPC-C's own measured choices for it (`_TUNING`)."""

    begin_write: str  # "": the transaction begins with its first statement (client_session)
    begin_read: str
    for_update: str  # appended to a SELECT of rows the transaction will update ("" if none)
    update_returning: bool  # UPDATE … RETURNING reads the new value in the same statement
    session: tuple[str, ...] = ()  # run once on every virtual user's connection
    # a New-Order's stock rows in one UPDATE (a CASE by item): less work per statement on the servers;
    # DuckDB scans the table for an IN list of keys, so there one UPDATE per row is faster
    one_stock_update: bool = True
    client_session: tuple[str, ...] = ()  # run by client_side() on each user's connection
    # the numbers of the one stock UPDATE written into its text instead of bound: for a driver
    # that escapes bound values in Python (PyMySQL: 74 µs for the statement's 40-120 values, 22
    # written in). Bound, its text is the same for the same number of items, so the drivers'
    # caches and PostgreSQL's prepared statements serve it
    numbers_in_text: bool = False
    # a New-Order's lists (its items, their stock, its lines) bound as one array each (`= ANY(CAST(?
    # AS int[]))`, `unnest`): the statements' texts and parameter counts are the same for every order, so the
    # server prepares each once, and psycopg caches their conversion, which it does not do above
    # 50 parameters (230 µs in Python for a 10-line order's INSERT, every time). Each array is
    # bound as its text ('{1,2,3}', `_array`) and cast by the statement: psycopg's list dumper
    # is Python, a tenth of a client-side transaction's CPU; a string it dumps in C
    arrays: bool = False
    # the dialect the statements are transpiled into on each user's connection (translated.py:
    # SQL Server's tsql, Oracle's); "": run as written
    translated: str = ""


@dataclass(frozen=True)
class _Tuning:
    one_stock_update: bool = True
    numbers_in_text: bool = False
    arrays: bool = False


# TPC-C's choices where a dialect's default is not the fastest (see Dialect's fields)
_TUNING: dict[str, _Tuning] = {"duckdb": _Tuning(one_stock_update=False), "postgres": _Tuning(arrays=True),
                               "mysql": _Tuning(numbers_in_text=True)}


def _dialect(name: str) -> Dialect:
    spec = dialects.DIALECTS[name]
    tuning = _TUNING.get(name, _Tuning())
    return Dialect(spec.begin_write, spec.begin_read, spec.for_update, spec.update_returning, spec.session,
                   tuning.one_stock_update, spec.client_session, tuning.numbers_in_text, tuning.arrays,
                   translated="" if spec.shared_sql else name)


DIALECTS: dict[str, Dialect] = {name: _dialect(name) for name in dialects.DIALECTS}


def dialect(name: str) -> Dialect:
    try:
        return DIALECTS[name]
    except KeyError:
        raise ValueError(f"no TPC-C transactions for dialect {name!r}; known: {', '.join(DIALECTS)}") from None


def _begin(statement: str) -> list[Statement]:
    """The statement that begins a transaction, if the dialect has one, for its first batch."""
    return [(statement, ())] if statement else []


_COMMIT: Statement = ("COMMIT", ())


def _marks(count: int) -> str:
    return ", ".join("?" for _ in range(count))


def _one(rows: list[tuple[Any, ...]], what: str) -> tuple[Any, ...]:
    if len(rows) != 1:
        raise LookupError(f"{what}: expected one row, got {len(rows)}")
    return rows[0]


def _customer(customer: Customer) -> tuple[str, list[Any]]:
    """The condition that finds the customer, and its parameters: by number, or (clause
    2.5.2.2) by last name the one at position ceil(n/2) of the n customers of that name in
    c_first order, in the same statement (row_number over the index on last and first name)."""
    district = [customer.w_id, customer.d_id]
    if customer.c_id is not None:
        return "c_w_id = ? AND c_d_id = ? AND c_id = ?", [*district, customer.c_id]
    return ("c_w_id = ? AND c_d_id = ? AND c_id = (SELECT c_id FROM (SELECT c_id, row_number() OVER (ORDER BY "
            "c_first) AS nth, count(*) OVER () AS named FROM customer WHERE c_w_id = ? AND c_d_id = ? AND "
            "c_last = ?) AS same_name WHERE 2 * nth IN (named, named + 1))",
            [*district, *district, customer.c_last])


def new_order(conn: Connection, sql: Dialect, t: NewOrder) -> str:
    """Clause 2.4.2: take the district's next order number, enter the order and its lines,
    take the stock; roll back if an item does not exist. Two round trips (`execute_batch`),
    since every one costs the driver's Python and the server a context switch while the
    district's row stays locked: the reads (the customer and warehouse in one SELECT, the
    district's next order number, the items, and per supplying warehouse one locking read of
    its stock rows), then the writes and the COMMIT. The stock is locked before the order is
    entered, where it used to be after: the locks are taken in the same order as before
    (district, then stock by warehouse), and a rollback undoes the one as the other."""
    key = [t.w_id, t.d_id]
    reads = [*_begin(sql.begin_write),
             ("SELECT c_discount, c_last, c_credit, w_tax FROM customer JOIN warehouse ON w_id = c_w_id "
              "WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?", [t.w_id, t.d_id, t.c_id])]
    if sql.update_returning:
        reads.append(("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = ? AND d_id = ? "
                      "RETURNING d_next_o_id - 1, d_tax", key))
    else:
        reads += [("SELECT d_next_o_id, d_tax FROM district WHERE d_w_id = ? AND d_id = ?" + sql.for_update, key),
                  ("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = ? AND d_id = ?", key)]
    district = len(reads) - (1 if sql.update_returning else 2)
    wanted = sorted(set(t.items))
    among, params = _among(sql, "i_id", wanted)
    reads.append(("SELECT i_id, i_price, i_name, i_data FROM item WHERE " + among, params))
    warehouses = sorted(set(t.supply_w_ids))
    dist = f"s_dist_{t.d_id:02d}"
    for supply_w_id in warehouses:
        ids = sorted({i for i, w in zip(t.items, t.supply_w_ids) if w == supply_w_id})
        among, params = _among(sql, "s_i_id", ids)
        reads.append((f"SELECT s_i_id, s_quantity, {dist} FROM stock WHERE s_w_id = ? AND {among}" + sql.for_update,
                      [supply_w_id, *params]))
    results = conn.execute_batch(reads)
    _one(results[len(_begin(sql.begin_write))], "customer")
    o_id, _ = _one(results[district], "district")
    prices = {row[0]: float(row[1]) for row in results[-len(warehouses) - 1]}
    if len(prices) < len(wanted):  # an unused item: clause 2.4.2.3
        conn.execute("ROLLBACK")
        return ROLLBACK
    lines = len(t.items)
    writes: list[Statement] = [
        ("INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) "
         "VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP, NULL, ?, ?)", [o_id, t.d_id, t.w_id, t.c_id, lines, int(t.all_local)]),
        ("INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (?, ?, ?)", [o_id, t.d_id, t.w_id])]
    dist_info: dict[tuple[int, int], str] = {}
    for supply_w_id, rows in zip(warehouses, results[-len(warehouses):]):
        stock = {s_i_id: _Stock(quantity) for s_i_id, quantity, _ in rows}
        dist_info.update(((s_i_id, supply_w_id), info) for s_i_id, _, info in rows)
        _take_stock(stock, supply_w_id, t)
        writes += _update_stock(sql, supply_w_id, stock)
    order_lines = [(number, item, supply_w_id, quantity, round(quantity * prices[item], 2),
                    dist_info[(item, supply_w_id)])
                   for number, (item, supply_w_id, quantity) in enumerate(zip(t.items, t.supply_w_ids, t.quantities),
                                                                        start=1)]
    conn.execute_batch([*writes, _insert_lines(sql, o_id, t, order_lines), _COMMIT])
    return COMMITTED


def _among(sql: Dialect, column: str, values: list[int]) -> tuple[str, list[Any]]:
    """The condition that `column` is one of `values`, and its parameters: one array with
    `arrays`, else one `?` each."""
    if sql.arrays:
        return f"{column} = ANY(CAST(? AS int[]))", [_array(values)]
    return f"{column} IN ({_marks(len(values))})", list(values)


_ORDER_LINE = ("INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, "
               "ol_quantity, ol_amount, ol_dist_info)")


_Line = tuple[int, int, int, int, float, str]  # number, item, supplying warehouse, quantity, amount, s_dist_xx


def _array(values: Iterable[int | float]) -> str:
    """A numeric array's text as PostgreSQL reads it: '{1,2.5,3}'."""
    return "{" + ",".join(map(str, values)) + "}"


def _text_array(values: Iterable[str]) -> str:
    """A text array's text as PostgreSQL reads it: each value double-quoted, its backslashes and
    quotes escaped ('{"ab","c\\"d"}')."""
    return "{" + ",".join('"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"' for value in values) + "}"


def _insert_lines(sql: Dialect, o_id: int, t: NewOrder, lines: list[_Line]) -> Statement:
    """One INSERT of an order's lines, as one array per column with `arrays`."""
    if sql.arrays:
        columns: list[Any] = list(zip(*lines))
        return (f"{_ORDER_LINE} SELECT ?, ?, ?, n, i, w, NULL, q, a, d FROM unnest(CAST(? AS int[]), CAST(? AS int[]), "
                "CAST(? AS int[]), CAST(? AS int[]), CAST(? AS numeric[]), CAST(? AS text[])) AS l(n, i, w, q, a, d)",
                [o_id, t.d_id, t.w_id, *(_array(column) for column in columns[:-1]), _text_array(columns[-1])])
    values: list[Any] = []
    for line in lines:
        values += [o_id, t.d_id, t.w_id, *line]
    return (f"{_ORDER_LINE} VALUES " + ", ".join(["(?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)"] * len(lines)), values)


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


def _take_stock(stock: dict[int, _Stock], supply_w_id: int, t: NewOrder) -> None:
    """Clause 2.4.2.2: each line supplied by `supply_w_id` takes its quantity from its item's
    stock (plus 91 when fewer than 10 would be left), counts an order and whether it was remote."""
    for item, w_id, quantity in zip(t.items, t.supply_w_ids, t.quantities):
        if w_id == supply_w_id:
            row = stock[item]
            row.quantity -= quantity if row.quantity >= quantity + 10 else quantity - 91
            row.ytd += quantity
            row.orders += 1
            row.remote += int(supply_w_id != t.w_id)


def _update_stock(sql: Dialect, w_id: int, stock: dict[int, _Stock]) -> list[Statement]:
    """The UPDATEs that write a New-Order's stock rows of one warehouse back: one with a CASE by
    item per column where the dialect finds the rows of an IN list by its key
    (`one_stock_update`), else one per row."""
    if not sql.one_stock_update:
        return [("UPDATE stock SET " + ", ".join(f"{column}?" for column in _STOCK_SET)
                 + " WHERE s_i_id = ? AND s_w_id = ?", [*row.values(), item, w_id]) for item, row in stock.items()]
    if sql.arrays:
        columns = [_array(stock), *(_array(values) for values in zip(*(row.values() for row in stock.values())))]
        return [("UPDATE stock SET " + ", ".join(f"{column}v.{name}" for column, name in zip(_STOCK_SET, "qyor"))
                 + " FROM unnest(" + ", ".join(["CAST(? AS int[])"] * 5) + ") AS v(i, q, y, o, r) "
                 "WHERE s_w_id = ? AND s_i_id = v.i", [*columns, w_id])]
    params: list[int] = []

    def number(value: int) -> str:
        """A `?` bound to `value`, or with `numbers_in_text` the number itself (an int of this
        process's own making)."""
        if sql.numbers_in_text:
            return str(int(value))
        params.append(value)
        return "?"

    return [("UPDATE stock SET " + ", ".join(
        f"{column}CASE s_i_id " + " ".join(f"WHEN {number(item)} THEN {number(row.values()[index])}"
                                           for item, row in stock.items()) + " END"
        for index, column in enumerate(_STOCK_SET))
        + f" WHERE s_w_id = {number(w_id)} AND s_i_id IN ({', '.join(number(item) for item in stock)})", params)]


def payment(conn: Connection, sql: Dialect, t: Payment) -> str:
    """Clause 2.5.2: add the payment to the warehouse's, district's and customer's figures
    (and, for bad credit, to the customer's data), and write it to the history. Two round trips:
    the warehouse's and district's names and addresses (a plain read: they never change) with
    the customer's locking read (`_customer`), then the customer's update, the history, the
    district's and the warehouse's updates and the COMMIT. Every Payment of a warehouse updates
    its row, so at W = 1 they all queue for it: it is locked last, in the batch that commits,
    not across a round trip (the locks are taken customer, district, warehouse in every Payment,
    and no other transaction takes a customer's lock before a district's or warehouse's)."""
    c = t.customer
    found, params = _customer(c)
    w_address, d_address = (", ".join(f"{p}_{name}" for name in _ADDRESS) for p in "wd")
    results = conn.execute_batch([
        *_begin(sql.begin_write),
        (f"SELECT {w_address}, {d_address} FROM warehouse JOIN district ON d_w_id = w_id WHERE w_id = ? AND d_id = ?",
         [t.w_id, t.d_id]),
        ("SELECT c_id, c_credit, c_data, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, "
         "c_phone, c_since, c_credit_lim, c_discount, c_balance FROM customer WHERE " + found + sql.for_update,
         params)])
    both = _one(results[-2], "warehouse and district")
    w_name, d_name = both[0], both[len(_ADDRESS)]
    c_id, credit, data = _one(results[-1], f"customer {c.c_id or c.c_last} of district {c.w_id}/{c.d_id}")[:3]
    key = [c.w_id, c.d_id, c_id]
    paid = "c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, c_payment_cnt = c_payment_cnt + 1"
    if credit == "BC":
        data = f"{c_id} {c.d_id} {c.w_id} {t.d_id} {t.w_id} {t.amount:.2f} | {data}"[:500]
        update: Statement = (f"UPDATE customer SET {paid}, c_data = ? WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
                             [t.amount, t.amount, data, *key])
    else:
        update = (f"UPDATE customer SET {paid} WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
                  [t.amount, t.amount, *key])
    conn.execute_batch([
        update,
        ("INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) "
         "VALUES (?, ?, ?, ?, ?, CURRENT_TIMESTAMP, ?, ?)",
         [c_id, c.d_id, c.w_id, t.d_id, t.w_id, t.amount, f"{w_name}    {d_name}"]),
        ("UPDATE district SET d_ytd = d_ytd + ? WHERE d_w_id = ? AND d_id = ?", [t.amount, t.w_id, t.d_id]),
        ("UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = ?", [t.amount, t.w_id]),
        _COMMIT])
    return COMMITTED


def order_status(conn: Connection, sql: Dialect, t: OrderStatus) -> str:
    """Clause 2.6.2 (read-only): a customer's balance, latest order and its lines. One round
    trip (two for a customer chosen by last name, whose number comes first): the lines of the
    latest order are found by a subquery that is the latest-order query itself."""
    c = t.customer
    found, params = _customer(c)
    customer: Statement = ("SELECT c_id, c_balance, c_first, c_middle, c_last FROM customer WHERE " + found, params)
    first = [*_begin(sql.begin_read), customer]
    if c.c_id is None:
        c_id = _one(conn.execute_batch(first)[-1], f"customer {c.c_last} of district {c.w_id}/{c.d_id}")[0]
        first = []
    else:
        c_id = c.c_id
    key = [c.w_id, c.d_id, c_id]
    latest = "SELECT o_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ? ORDER BY o_id DESC LIMIT 1"
    results = conn.execute_batch([
        *first,
        ("SELECT o_id, o_entry_d, o_carrier_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ? "
         "ORDER BY o_id DESC LIMIT 1", key),
        ("SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line "
         f"WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ({latest})", [c.w_id, c.d_id, *key]),
        _COMMIT])
    if first:
        _one(results[-4], f"customer {c_id} of district {c.w_id}/{c.d_id}")
    return COMMITTED


def delivery(conn: Connection, sql: Dialect, t: Delivery) -> str:
    """Clause 2.7.4: deliver the oldest undelivered order of each of the warehouse's ten
    districts, in one transaction (as HammerDB does). Three round trips, not five per
    district: the ten districts' oldest undelivered orders (locked where the dialect locks
    them), then their DELETEs with each order's customer, then the updates of the orders, their
    lines and customers and the COMMIT. A district whose oldest order a concurrent Delivery
    took first (the DELETE finds no row) is skipped, as one without undelivered orders is."""
    oldest = conn.execute_batch([*_begin(sql.begin_write), *(
        ("SELECT no_o_id FROM new_order WHERE no_w_id = ? AND no_d_id = ? ORDER BY no_o_id LIMIT 1" + sql.for_update,
         [t.w_id, d_id]) for d_id in range(1, DISTRICTS_PER_WAREHOUSE + 1))])[-DISTRICTS_PER_WAREHOUSE:]
    orders = [(d_id, rows[0][0]) for d_id, rows in enumerate(oldest, start=1) if rows]
    taken: list[Statement] = []
    for d_id, o_id in orders:
        taken += [("DELETE FROM new_order WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ? RETURNING no_o_id",
                   [t.w_id, d_id, o_id]),
                  ("SELECT o_c_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?", [t.w_id, d_id, o_id])]
    results = conn.execute_batch(taken) if taken else []
    writes: list[Statement] = []
    for (d_id, o_id), deleted, customer in zip(orders, results[::2], results[1::2]):
        if not deleted:
            continue
        (c_id,) = _one(customer, "order")
        key = [t.w_id, d_id, o_id]
        writes += [
            ("UPDATE orders SET o_carrier_id = ? WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?", [t.carrier_id, *key]),
            ("UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP WHERE ol_w_id = ? AND ol_d_id = ? "
             "AND ol_o_id = ?", key),
            ("UPDATE customer SET c_balance = c_balance + (SELECT sum(ol_amount) FROM order_line WHERE ol_w_id = ? "
             "AND ol_d_id = ? AND ol_o_id = ?), c_delivery_cnt = c_delivery_cnt + 1 WHERE c_w_id = ? AND c_d_id = ? "
             "AND c_id = ?", [*key, t.w_id, d_id, c_id])]
    conn.execute_batch([*writes, _COMMIT])
    return COMMITTED


def stock_level(conn: Connection, sql: Dialect, t: StockLevel) -> str:
    """Clause 2.8.2 (read-only): how many of the items of the district's last 20 orders are
    below the threshold in stock. Two round trips: the district's next order number, then the
    count and the COMMIT."""
    (next_o_id,) = _one(conn.execute_batch([*_begin(sql.begin_read), (
        "SELECT d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?", [t.w_id, t.d_id])])[-1], "district")
    conn.execute_batch([
        ("SELECT count(DISTINCT s_i_id) FROM order_line JOIN stock ON s_w_id = ol_w_id AND s_i_id = ol_i_id "
         "WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id < ? AND ol_o_id >= ? AND s_quantity < ?",
         [t.w_id, t.d_id, next_o_id, next_o_id - 20, t.threshold]), _COMMIT])
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
