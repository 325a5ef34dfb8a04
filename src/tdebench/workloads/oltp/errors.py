"""What went wrong with a transaction: retry it (a lost race), count it as a business
rollback, or count it as an error of its type.

Concurrent transactions on one warehouse collide by design (every Payment updates the
warehouse's row). Each engine reports the collision its own way (a deadlock, a serialization
failure, a write conflict, a busy database); every engine's connection raises it as the same
`Conflict`, its kind named by the engine's dialect (engines/dialects.py, engines/base.py), and in
each case the transaction was rolled back and running it again is the right answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from tdebench.engines.base import Conflict, QueryTimeout

ROLLBACK_MARKER = "tdebench-rollback"
"""The message the stored procedures raise for the spec's 1% New-Orders with an unused item."""


@dataclass(frozen=True)
class Problem:
    kind: str  # "rollback", a retryable kind ("deadlock", …) or an error's type name
    retryable: bool

    @property
    def rollback(self) -> bool:
        return self.kind == "rollback"


def classify(exc: BaseException) -> Problem:
    if ROLLBACK_MARKER in str(exc):
        return Problem("rollback", False)
    if isinstance(exc, QueryTimeout):
        return Problem("timeout", False)
    if isinstance(exc, Conflict):
        return Problem(exc.kind, True)
    return Problem(type(exc).__name__, False)
