"""What the terminals type: the transaction mix and each transaction's inputs (TPC-C clause 2
and 5.2.3), drawn from a seeded generator so a run is repeatable.

Nothing here touches a database, so the distributions can be tested over millions of draws.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from tdebench.workloads.oltp.schema import CUSTOMERS_PER_DISTRICT, DISTRICTS_PER_WAREHOUSE, ITEMS

NEW_ORDER, PAYMENT, DELIVERY, ORDER_STATUS, STOCK_LEVEL = (
    "new_order", "payment", "delivery", "order_status", "stock_level")
KINDS = (NEW_ORDER, PAYMENT, DELIVERY, ORDER_STATUS, STOCK_LEVEL)
MIX: dict[str, float] = {NEW_ORDER: 0.45, PAYMENT: 0.43, DELIVERY: 0.04, ORDER_STATUS: 0.04, STOCK_LEVEL: 0.04}
"""The mix Madyatmadja et al. (2021) list (HammerDB's, the spec's minimum percentages with
New-Order taking the rest): the share of each transaction type among all transactions."""

SYLLABLES = ("BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING")
UNUSED_ITEM = ITEMS + 1  # clause 2.4.1.5: the 1% rolled-back New-Orders ask for an item that does not exist


def last_name(number: int) -> str:
    """Clause 4.3.2.3: the customer last name of a number 0..999, one syllable per digit."""
    return SYLLABLES[number // 100] + SYLLABLES[number // 10 % 10] + SYLLABLES[number % 10]


@dataclass(frozen=True)
class Constants:
    """The run-time constants C of NURand (clause 2.1.6). `c_last_load` generated the data's
    last names; `c_last_run` differs from it by 65..119 but not 96 or 112 (clause 2.1.6.1), so
    the run's name lookups do not hit exactly the names the load favoured."""

    c_last_load: int
    c_last_run: int
    c_id: int
    ol_i_id: int

    @classmethod
    def from_seed(cls, seed: int) -> "Constants":
        rng = random.Random(f"tpcc-constants/{seed}")
        load = rng.randint(0, 255)
        deltas = [d for d in range(65, 120) if d not in (96, 112)]
        while True:
            run = (load + rng.choice(deltas) * rng.choice((-1, 1))) % 256
            if abs(run - load) in deltas:
                break
        return cls(c_last_load=load, c_last_run=run, c_id=rng.randint(0, 1023), ol_i_id=rng.randint(0, 8191))


def uniform(rng: random.Random, low: int, high: int) -> int:
    """A whole number in [low, high], each equally likely: `rng.randint` without its argument
    checks, which cost more than the rest of a transaction's input generation."""
    return low + int(rng.random() * (high - low + 1))


def nurand(rng: random.Random, a: int, x: int, y: int, c: int) -> int:
    """NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x: the spec's
    non-uniform random, which makes some customers and items far more popular than others."""
    return (((uniform(rng, 0, a) | uniform(rng, x, y)) + c) % (y - x + 1)) + x


@dataclass(frozen=True)
class Customer:
    """Which customer: by id, or (60% of Payments and Order-Statuses) by last name."""

    w_id: int
    d_id: int
    c_id: int | None
    c_last: str | None


@dataclass(frozen=True)
class NewOrder:
    w_id: int
    d_id: int
    c_id: int
    items: tuple[int, ...]
    supply_w_ids: tuple[int, ...]
    quantities: tuple[int, ...]

    @property
    def rollback(self) -> bool:
        return self.items[-1] == UNUSED_ITEM

    @property
    def all_local(self) -> bool:
        return all(w == self.w_id for w in self.supply_w_ids)


@dataclass(frozen=True)
class Payment:
    w_id: int
    d_id: int
    customer: Customer
    amount: float


@dataclass(frozen=True)
class OrderStatus:
    customer: Customer


@dataclass(frozen=True)
class Delivery:
    w_id: int
    carrier_id: int


@dataclass(frozen=True)
class StockLevel:
    w_id: int
    d_id: int
    threshold: int


Inputs = NewOrder | Payment | OrderStatus | Delivery | StockLevel


@dataclass
class Terminal:
    """One virtual user's input generator: its home warehouse and district (clause 2.4.1.1,
    2.8.1.1) and its own seeded random stream, so every user's inputs are repeatable."""

    warehouses: int
    w_id: int
    d_id: int
    constants: Constants
    rng: random.Random

    @classmethod
    def for_user(cls, user: int, warehouses: int, constants: Constants, seed: int, stream: str) -> "Terminal":
        """User 1, 2, … gets warehouse 1, 2, … (wrapping) and a district per warehouse pass."""
        w_id = (user - 1) % warehouses + 1
        d_id = (user - 1) // warehouses % DISTRICTS_PER_WAREHOUSE + 1
        return cls(warehouses, w_id, d_id, constants, random.Random(f"tpcc/{seed}/{stream}/{user}"))

    def kind(self) -> str:
        """The next transaction type, with the probabilities of MIX."""
        draw = self.rng.random()
        for kind in KINDS:
            draw -= MIX[kind]
            if draw < 0:
                return kind
        return KINDS[0]  # rounding of the shares: never more than a few ulps

    def next(self, kind: str) -> Inputs:
        makers: dict[str, Callable[[], Inputs]] = {
            NEW_ORDER: self.new_order, PAYMENT: self.payment, DELIVERY: self.delivery,
            ORDER_STATUS: self.order_status, STOCK_LEVEL: self.stock_level}
        return makers[kind]()

    def _other_warehouse(self) -> int:
        other = uniform(self.rng, 1, self.warehouses - 1)
        return other if other < self.w_id else other + 1

    def _customer(self, w_id: int, d_id: int) -> Customer:
        """Clause 2.5.1.2: 60% by last name (NURand(255, 0, 999)), else by id (NURand(1023, 1, 3000))."""
        if uniform(self.rng, 1, 100) <= 60:
            return Customer(w_id, d_id, None, last_name(nurand(self.rng, 255, 0, 999, self.constants.c_last_run)))
        return Customer(w_id, d_id, nurand(self.rng, 1023, 1, CUSTOMERS_PER_DISTRICT, self.constants.c_id), None)

    def new_order(self) -> NewOrder:
        """Clause 2.4.1: 5..15 lines, items NURand(8191, 1, 100000), 1% of lines from another
        warehouse (when there is one), quantity 1..10, and 1% of orders ending on an unused item."""
        d_id = uniform(self.rng, 1, DISTRICTS_PER_WAREHOUSE)
        c_id = nurand(self.rng, 1023, 1, CUSTOMERS_PER_DISTRICT, self.constants.c_id)
        lines = uniform(self.rng, 5, 15)
        rollback = uniform(self.rng, 1, 100) == 1
        items, supply, quantities = [], [], []
        for number in range(1, lines + 1):
            items.append(UNUSED_ITEM if rollback and number == lines
                         else nurand(self.rng, 8191, 1, ITEMS, self.constants.ol_i_id))
            remote = self.warehouses > 1 and uniform(self.rng, 1, 100) == 1
            supply.append(self._other_warehouse() if remote else self.w_id)
            quantities.append(uniform(self.rng, 1, 10))
        return NewOrder(self.w_id, d_id, c_id, tuple(items), tuple(supply), tuple(quantities))

    def payment(self) -> Payment:
        """Clause 2.5.1: 85% pay at their home district, 15% at a random district of another
        warehouse (of this one when there is no other); amount 1.00..5000.00."""
        d_id = uniform(self.rng, 1, DISTRICTS_PER_WAREHOUSE)
        if uniform(self.rng, 1, 100) <= 85:
            c_w_id, c_d_id = self.w_id, d_id
        else:
            c_w_id = self._other_warehouse() if self.warehouses > 1 else self.w_id
            c_d_id = uniform(self.rng, 1, DISTRICTS_PER_WAREHOUSE)
        amount = uniform(self.rng, 100, 500_000) / 100
        return Payment(self.w_id, d_id, self._customer(c_w_id, c_d_id), amount)

    def order_status(self) -> OrderStatus:
        return OrderStatus(self._customer(self.w_id, uniform(self.rng, 1, DISTRICTS_PER_WAREHOUSE)))

    def delivery(self) -> Delivery:
        return Delivery(self.w_id, uniform(self.rng, 1, 10))

    def stock_level(self) -> StockLevel:
        """Clause 2.8.1: the terminal's own district, threshold 10..20."""
        return StockLevel(self.w_id, self.d_id, uniform(self.rng, 10, 20))
