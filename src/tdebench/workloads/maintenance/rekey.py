"""Changing the key (re-encryption) of the trial's loaded database, where the engine can.

The runner's connection is closed first (the engine needs the database to itself), then
`rekey(new key)` is measured (the step is named after the method:
`pragma-rekey`, `copy-database`, `reseal-columns`, `rewrap-master-key`). Checked afterwards:
the old key opens nothing, the new one opens the database, and the data (row counts,
canaries) is what it was. An engine that cannot (MariaDB's `file_key_management`: no key
versions) is recorded as `unsupported`, the baseline as `not applicable`. The new key comes
from the runner's key source; the database keeps it for the rest of the trial.
"""

from __future__ import annotations

from tdebench.engines.base import Connection, NotSupported, reencrypts
from tdebench.workloads.base import RunContext, WrongAnswer
from tdebench.workloads.maintenance import checks
from tdebench.workloads.maintenance.outcomes import FAILED, NOT_APPLICABLE, NOT_APPLICABLE_STEP, OK, UNSUPPORTED

TEST = "rekey"


def run(ctx: RunContext, conn: Connection, purpose: str, *, warmup: bool) -> None:
    database = ctx.database
    if not database.encryption.encrypts:
        ctx.recorder.record(TEST, NOT_APPLICABLE_STEP, {}, warmup=warmup, answer=NOT_APPLICABLE)
        return
    if ctx.new_key is None or database.key is None:
        raise RuntimeError("the rekey test needs the runner's key source")
    before = checks.contents(conn)
    ctx.session.release()  # the key changes with the database closed; the runner reconnects after
    old, new = database.key, ctx.new_key(purpose)
    size = database.size_bytes()
    try:
        rekeyed = reencrypts(database, "rekey")
        method, metrics = ctx.recorder.timed(lambda: rekeyed.rekey(new))
    except NotSupported as exc:
        ctx.recorder.record(TEST, exc.method, {}, warmup=warmup, answer=UNSUPPORTED)
        return
    metrics["size_bytes"] = float(size)
    problems = []
    if rekeyed.opens_with(old):
        problems.append("the old key still opens the database")
    if not rekeyed.opens_with(new):
        problems.append("the new key does not open the database")
    else:
        check = database.connect()
        try:
            problems += checks.differences(before, checks.contents(check))
        finally:
            check.close()
    ctx.recorder.record(TEST, method, metrics, warmup=warmup, answer=FAILED if problems else OK)
    if problems:
        raise WrongAnswer(f"rekey ({database.encryption.name}): " + "; ".join(problems))
