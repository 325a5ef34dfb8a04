"""The maintenance workload (the index rebuild of Dolyetyus (n.d.), docs/references.md, plus
the two questions a team asks before and after turning encryption on): TPC-H data at the
plan's scale, loaded by the TPC-H workload, and three tests.

- `reindex`: rebuild lineitem's indexes (see reindex.py), with and without encryption;
- `encrypt`: encrypt an unencrypted copy of the database in place (see encrypt.py);
- `rekey`: change the trial database's key (see rekey.py).

Every step is checked; a failed check is recorded (answer `failed`) and fails the trial.
"""

from __future__ import annotations

from pathlib import Path

from tdebench.engines.base import Connection
from tdebench.workloads.base import LOAD_HEADLINES, Headline, Reporting, RunContext, Workload, WrongAnswer
from tdebench.workloads.maintenance import encrypt, reindex, rekey
from tdebench.workloads.maintenance.outcomes import FAILED, NOT_APPLICABLE, OK, UNSUPPORTED
from tdebench.workloads.tpch import TpchWorkload


class MaintenanceWorkload(Workload):
    name = "maintenance"
    judged_apart = (encrypt.DIRECTORY,)  # the unencrypted source and its conversion, judged by encrypt.py
    # its data, load and checks are TPC-H's; the reindex test needs the dialect's rebuild too
    dialects = tuple(d for d in TpchWorkload.dialects if d in reindex.DIALECTS)
    tests = ("reindex", "encrypt", "rekey")
    local_tests = {
        "encrypt": "it encrypts an unencrypted copy of the database in place with the engine's own tools; on a "
                   "server by url tdebench only creates each trial's namespace with its encryption",
        "rekey": "it changes the key of database files tdebench owns; a server by url keeps its keys in its own "
                 "keystore",
    }
    # every step a headline: each one is the method that ran
    reporting = Reporting(headlines=(Headline("elapsed_s"), *LOAD_HEADLINES))
    # how a step ended (outcomes.py, stored as its answer) and how the report says it
    ok, failed = OK, FAILED
    outcome_words = {OK: "yes", UNSUPPORTED: "not supported", NOT_APPLICABLE: "not applicable"}
    default_scale = 0.01
    scale_min = TpchWorkload.scale_min  # its data are TPC-H's
    scale_max = TpchWorkload.scale_max
    max_streams = 1

    def __init__(self) -> None:
        self._rekeys = 0  # new keys handed out in this trial, so each has a purpose of its own

    def prepare(self, scale: float, data_dir: Path, seed: int) -> None:
        TpchWorkload().prepare(scale, data_dir, seed)

    def load(self, ctx: RunContext, conn: Connection) -> None:
        TpchWorkload().load(ctx, conn)

    def run(self, test: str, ctx: RunContext, conn: Connection, *, warmup: bool) -> None:
        if test == "reindex":
            self._reindex(ctx, conn, warmup)
        elif test == "encrypt":
            encrypt.run(ctx, warmup=warmup)
        elif test == "rekey":
            self._rekeys += 1
            rekey.run(ctx, conn, f"rekey-{self._rekeys}", warmup=warmup)
        else:
            raise ValueError(f"maintenance has no test {test!r}; valid: {', '.join(self.tests)}")

    @staticmethod
    def _reindex(ctx: RunContext, conn: Connection, warmup: bool) -> None:
        rebuild = reindex.rebuild(ctx.dialect)
        before = reindex.state(conn, ctx.dialect)
        conn.set_timeout(ctx.query_timeout_s)

        def work() -> None:
            for statement in rebuild.statements:
                conn.execute(statement)

        _, metrics = ctx.recorder.timed(work)
        problems = reindex.problems(before, reindex.state(conn, ctx.dialect))
        ctx.recorder.record("reindex", rebuild.method, metrics, warmup=warmup, answer=FAILED if problems else OK)
        if problems:
            raise WrongAnswer("reindex: " + "; ".join(problems))
