"""The five transactions as server-side stored procedures, one call each (as HammerDB drives
MariaDB and PostgreSQL). Their text lives in `sql/<dialect>/procedures.sql`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tdebench.engines import dialects
from tdebench.engines.base import Connection
from tdebench.workloads import sqlfiles
from tdebench.workloads.oltp.errors import classify
from tdebench.workloads.oltp.inputs import (DELIVERY, NEW_ORDER, ORDER_STATUS, PAYMENT, STOCK_LEVEL, Delivery,
                                            Inputs, NewOrder, OrderStatus, Payment, StockLevel)
from tdebench.workloads.oltp.transactions import COMMITTED, ROLLBACK

SEPARATOR = "-- next statement"
DIALECTS = sqlfiles.dialects_with(__package__, "procedures")
"""The dialects the procedures are written for: those with a `sql/<dialect>/procedures.sql`."""
_DECIMALS = frozenset({"amount"})  # the arguments that are money (DECIMAL), bound from floats


def available(dialect: str) -> bool:
    return dialect in DIALECTS


def statements(dialect: str) -> list[str]:
    """The CREATE statements of the procedures for `dialect`."""
    if not available(dialect):
        raise ValueError(f"no stored procedures for dialect {dialect!r}; there are for {', '.join(DIALECTS)}")
    text = sqlfiles.read(__package__, dialect, "procedures")
    assert text is not None, dialect
    parts = [part.strip() for part in text.split(f"\n{SEPARATOR}\n")]
    body = [line for line in parts[0].splitlines() if not line.startswith("--")]  # the file's header
    return ["\n".join(body).strip(), *parts[1:]]


def as_list(values: Sequence[int]) -> str:
    """Whole numbers as the comma-separated text the procedures take."""
    return ",".join(str(v) for v in values)


def _call(dialect: str, name: str, params: Sequence[str]) -> str:
    """`params` names each argument; a DECIMAL one gets the dialect's placeholder for it."""
    spec = dialects.dialect(dialect)
    marks = ", ".join(spec.decimal_argument if p in _DECIMALS else "?" for p in params)
    return spec.call.format(name=name, marks=marks)


def server_side(conn: Connection, dialect: str) -> Callable[[str, Inputs], str]:
    """Run transactions as one stored-procedure call each on `conn`."""
    calls = {
        NEW_ORDER: _call(dialect, "tdebench_new_order", ("w", "d", "c", "items", "supply", "quantities")),
        PAYMENT: _call(dialect, "tdebench_payment", ("w", "d", "c_w", "c_d", "c", "c_last", "amount")),
        ORDER_STATUS: _call(dialect, "tdebench_order_status", ("w", "d", "c", "c_last")),
        DELIVERY: _call(dialect, "tdebench_delivery", ("w", "carrier")),
        STOCK_LEVEL: _call(dialect, "tdebench_stock_level", ("w", "d", "threshold")),
    }

    def params(kind: str, t: Inputs) -> list[object]:
        if isinstance(t, NewOrder):
            return [t.w_id, t.d_id, t.c_id, as_list(t.items), as_list(t.supply_w_ids), as_list(t.quantities)]
        if isinstance(t, Payment):
            c = t.customer
            return [t.w_id, t.d_id, c.w_id, c.d_id, c.c_id, c.c_last, t.amount]
        if isinstance(t, OrderStatus):
            c = t.customer
            return [c.w_id, c.d_id, c.c_id, c.c_last]
        if isinstance(t, Delivery):
            return [t.w_id, t.carrier_id]
        assert isinstance(t, StockLevel), kind
        return [t.w_id, t.d_id, t.threshold]

    def run(kind: str, inputs: Inputs) -> str:
        try:
            conn.execute(calls[kind], params(kind, inputs))
        except Exception as exc:
            if classify(exc).rollback:  # the procedure rolled back on purpose
                return ROLLBACK
            raise
        return COMMITTED

    return run
