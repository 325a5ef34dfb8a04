"""TPC-C consistency conditions 1–4 (clause 3.3.2), checked after every run, and a check of
the driver's own count of New-Orders against the database.

A benchmark whose transactions lost an update or half-applied an order would report a rate
for work that was not done; these conditions catch exactly that, on every engine, after
every run. Money is compared to the cent, since SQLite keeps it as REAL.
"""

from __future__ import annotations

from collections.abc import Iterable

from tdebench.engines.base import Connection

CONDITIONS = 4
CENT = 0.005  # half a cent: sums of REAL money may differ from exact ones below this


def _by_district(conn: Connection, sql: str) -> dict[tuple[int, int], tuple]:
    return {(row[0], row[1]): tuple(row[2:]) for row in conn.execute(sql)}


def _first(problems: Iterable[str], limit: int = 3) -> list[str]:
    """The first few problems of one condition, and how many more there were."""
    listed = list(problems)
    return listed[:limit] + ([f"… and {len(listed) - limit} more"] if len(listed) > limit else [])


def consistency(conn: Connection) -> list[str]:
    """Problems found by conditions 1–4, each a sentence; an empty list when all hold."""
    problems: list[str] = []
    warehouses = conn.execute("SELECT w_id, w_ytd, (SELECT sum(d_ytd) FROM district WHERE d_w_id = w_id) "
                              "FROM warehouse ORDER BY w_id")
    problems += _first(f"condition 1: warehouse {w} has w_ytd {float(ytd):.2f} but its districts' d_ytd sum "
                       f"to {float(total or 0):.2f}"
                       for w, ytd, total in warehouses if abs(float(ytd) - float(total or 0)) > CENT)

    districts = _by_district(conn, "SELECT d_w_id, d_id, d_next_o_id FROM district")
    orders = _by_district(conn, "SELECT o_w_id, o_d_id, max(o_id), sum(o_ol_cnt) FROM orders GROUP BY o_w_id, o_d_id")
    new_orders = _by_district(conn, "SELECT no_w_id, no_d_id, max(no_o_id), min(no_o_id), count(*) FROM new_order "
                                    "GROUP BY no_w_id, no_d_id")
    lines = _by_district(conn, "SELECT ol_w_id, ol_d_id, count(*) FROM order_line GROUP BY ol_w_id, ol_d_id")
    second, third, fourth = [], [], []
    for key, (next_o_id,) in sorted(districts.items()):
        where = f"district {key[0]}/{key[1]}"
        max_o_id, ol_cnt = orders.get(key, (None, None))
        max_no, min_no, pending = new_orders.get(key, (None, None, 0))
        # condition 2: d_next_o_id - 1 = max(o_id) = max(no_o_id) (the last, when new orders remain)
        if max_o_id != next_o_id - 1 or (max_no is not None and max_no != next_o_id - 1):
            second.append(f"condition 2: {where} has d_next_o_id {next_o_id}, max(o_id) {max_o_id}, "
                          f"max(no_o_id) {max_no}")
        # condition 3: the undelivered orders are one unbroken range
        if max_no is not None and max_no - min_no + 1 != pending:
            third.append(f"condition 3: {where} has new orders {min_no}..{max_no} but {pending} rows")
        # condition 4: every order has exactly its o_ol_cnt lines
        if (ol_cnt or 0) != lines.get(key, (0,))[0]:
            fourth.append(f"condition 4: {where} has sum(o_ol_cnt) {ol_cnt} but {lines.get(key, (0,))[0]} "
                          "order lines")
    for found in (second, third, fourth):
        problems += _first(found)
    return problems


def next_order_ids(conn: Connection) -> int:
    """sum(d_next_o_id): grows by one with every committed New-Order, so its growth over a run
    is the database's own count of New-Orders (how HammerDB counts NOPM)."""
    ((total,),) = conn.execute("SELECT sum(d_next_o_id) FROM district")
    return int(total)


def new_order_count(before: int, after: int, counted: int) -> list[str]:
    """The driver's count of committed New-Orders must equal the database's."""
    if after - before == counted:
        return []
    return [f"the driver counted {counted} committed New-Orders, the database {after - before} "
            f"(sum(d_next_o_id) {before} → {after})"]
