"""Lockstep rounds, measured passes and the priming trial, with the fake engine and clock."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from fake_engine import FAKE_ENC, FakeEngine, SteppedFakeWorkload
from fake_clock import FakeClock
from tdebench.plan import EngineChoice, Plan, WorkloadSpec, lockstep_groups, schedule
from tdebench.report.summaries.noise import comparison_noise, noisy_figures
from tdebench.report.data.records import BASELINE, PLACEBO, over_passes, summary_records
from tdebench.run.runner import Runner
from tdebench.results import Measurement, TrialKey
from tdebench.store import ResultStore, read_run

ENCRYPTIONS = (BASELINE, PLACEBO, FAKE_ENC.name)


def make_plan(order: str = "lockstep", repetitions: int = 2, warmups: int = 1) -> Plan:
    return Plan(name="lockstep", repetitions=repetitions, warmups=warmups, cache="warm", order=order, seed=3,
                engines=(EngineChoice("fake", ENCRYPTIONS),),
                workloads=(WorkloadSpec("fakeload", (1.0,), ("power",), 1),), text=f'order = "{order}"\n')


def run(tmp_path: Path, plan: Plan, empty_cache=None, **kwargs):
    clock = FakeClock()
    workload = SteppedFakeWorkload(clock, **kwargs)
    store = ResultStore(tmp_path / plan.order)
    store.start(plan.text, {})
    FakeEngine.provisioned.clear()
    summary = Runner(plan=plan, store=store, data_dir=tmp_path / "data", clock=clock,
                     engine_factory=lambda name, **settings: FakeEngine(**settings),
                     workload_factory=lambda name: workload, workspace_parent=tmp_path,
                     **({"empty_cache": empty_cache} if empty_cache else {})).run()
    return summary, read_run(tmp_path / plan.order), workload


def test_a_rounds_configurations_are_scheduled_as_one_group() -> None:
    groups = lockstep_groups(schedule(make_plan(repetitions=3)))
    assert [len(g) for g in groups] == [3, 3, 3]
    assert [{t.key.repetition for t in g} for g in groups] == [{1}, {2}, {3}]
    assert all({t.key.encryption for t in g} == set(ENCRYPTIONS) for g in groups)


def test_lockstep_runs_the_configurations_queries_in_turn_and_rotates_who_goes_first(tmp_path: Path) -> None:
    summary, data, workload = run(tmp_path, make_plan())
    assert summary.ok and summary.trials == 6
    measured = [(enc, rep, q) for enc, rep, q, warmup in workload.order if not warmup and rep > 0]
    for rep in (1, 2):
        turns = [measured_in for measured_in in measured if measured_in[1] == rep]
        first, second = turns[:3], turns[3:]
        assert {q for _, _, q in first} == {1} and {q for _, _, q in second} == {2}
        assert {enc for enc, _, _ in first} == {enc for enc, _, _ in second} == set(ENCRYPTIONS)
        assert first[0][0] != second[0][0]  # the next turn starts with the next configuration
    # every warm-up of a round ran before its first measured query
    rounds = [rep for _, rep, _, _ in workload.order]
    for rep in (1, 2):
        warm = [i for i, (_, r, _, w) in enumerate(workload.order) if r == rep and w]
        cold = [i for i, (_, r, _, w) in enumerate(workload.order) if r == rep and not w]
        assert len(warm) == 6 and max(warm) < min(cold)
    assert rounds.count(1) == rounds.count(2)
    assert all(db.closed for db in FakeEngine.provisioned)
    assert len(data.verdicts) == 6 and all(v.as_expected for v in data.verdicts)


def test_a_cold_lockstep_evicts_each_trials_own_workspace_after_its_load_and_before_its_test(tmp_path: Path) -> None:
    """evict = "files" leaves the other trials' pages alone, so a cold plan may run side by side:
    each trial is stopped and its own workspace evicted after its load and as its test begins."""
    events: list[tuple[str, object]] = []
    plan = replace(make_plan(repetitions=1, warmups=0), cache="cold", evict="files")

    def empty_cache(evict: str, root: Path) -> bool:
        events.append(("evict", (evict, root.name)))
        return True

    summary, data, workload = run(tmp_path, plan, empty_cache=empty_cache)
    assert summary.ok and {(t.evicted, t.cache_dropped) for t in data.trials} == {("files", True)}
    workspaces = sorted(db.workspace.name for db in FakeEngine.provisioned)
    # after the load, and again before the measured test: twice per trial, each its own workspace
    assert sorted(name for _, (_, name) in events) == sorted(workspaces * 2)
    assert {evict for _, (evict, _) in events} == {"files"}
    assert all(db.closed for db in FakeEngine.provisioned)


def test_a_priming_load_of_none_comes_first_and_is_never_recorded(tmp_path: Path) -> None:
    _, data, workload = run(tmp_path, make_plan(order="interleaved"))
    primer, *trials = FakeEngine.provisioned
    assert primer.workspace.name.endswith("_r0") and primer.encryption.name == BASELINE
    assert len(trials) == 6 and primer.closed and not primer.workspace.exists()
    assert all(rep > 0 for _, rep, _, _ in workload.order)  # loaded only: no test ran on it
    recorded = {m.trial.repetition for m in data.measurements} | {t.trial.repetition for t in data.trials}
    assert recorded == {1, 2} and {s.trial.repetition for s in data.samples} <= {1, 2}
    assert all(db.closed for db in FakeEngine.provisioned)


def test_no_priming_when_the_plan_asks_for_no_warm_ups(tmp_path: Path) -> None:
    run(tmp_path, make_plan(warmups=0))
    assert len(FakeEngine.provisioned) == 6


def test_a_trial_that_fails_in_a_lockstep_group_leaves_the_others_measured(tmp_path: Path) -> None:
    summary, data, _ = run(tmp_path, make_plan(), fail_on=FAKE_ENC.name)
    failed = {o.trial.encryption for o in data.trials if o.status == "failed"}
    assert failed == {FAKE_ENC.name} and len(summary.failed) == 2
    assert {o.trial.encryption for o in data.trials if o.status == "ok"} == {BASELINE, PLACEBO}
    assert "WrongAnswer" in summary.failed[0].error
    assert all(db.closed for db in FakeEngine.provisioned)


def _placebo_and_fake(records) -> tuple:
    chosen = {r.cell.encryption: r.overhead for r in records if r.cell.step == "geomean"}
    return chosen[PLACEBO], chosen[FAKE_ENC.name]


def test_lockstep_pairs_away_a_machine_whose_speed_wanders(tmp_path: Path) -> None:
    """A machine whose speed wanders by ±10% over a few seconds: interleaved trials, a second
    apart, each meet another speed; lockstep queries, a fraction of a second apart, nearly the
    same. The 10% slower fake encryption is then resolved tightly, and the placebo's interval
    is less than half as wide."""
    widths = {}
    for order in ("interleaved", "lockstep"):
        _, data, _ = run(tmp_path, make_plan(order=order, repetitions=8), noise=0.005, drift=0.10)
        placebo, fake = _placebo_and_fake(summary_records(data))
        widths[order] = placebo.half_width
        if order == "lockstep":
            assert placebo.ci_low <= 0 <= placebo.ci_high
            assert fake.ci_low > 0 and abs(fake.pct - 10.0) < 3.0
    assert widths["lockstep"] * 2 < widths["interleaved"]


def test_passes_of_a_step_count_once_with_their_median() -> None:
    trial = TrialKey("duckdb", "none", "tpch", 0.01, 1)
    passes = [Measurement(trial, "power", "q1", {"elapsed_s": value, "cpu_s": value / 2}, stream=0, pass_number=n)
              for n, value in enumerate((0.010, 0.030, 0.011), start=1)]
    other = Measurement(trial, "power", "q2", {"elapsed_s": 0.5}, stream=0)
    merged = over_passes([*passes, other])
    assert len(merged) == 2
    q1 = next(m for m in merged if m.step == "q1")
    assert q1.metrics == {"elapsed_s": 0.011, "cpu_s": 0.0055} and q1.pass_number == 0
    assert other in merged


def test_a_paired_comparison_is_judged_noisy_by_its_round_ratios_not_by_the_figures_own_spread(
        tmp_path: Path) -> None:
    flagged = {}
    for order in ("interleaved", "lockstep"):
        _, data, _ = run(tmp_path, make_plan(order=order, repetitions=8), noise=0.005, drift=0.10)
        records = summary_records(data)
        none = next(r for r in records if r.cell.step == "geomean" and r.cell.encryption == BASELINE)
        placebo = next(r for r in records if r.cell.step == "geomean" and r.cell.encryption == PLACEBO)
        flagged[order] = [f.label for f in noisy_figures(records) if "geomean" in f.label]
        if order == "lockstep":
            assert comparison_noise(placebo, none) is None and not placebo.overhead.noisy
        else:
            assert comparison_noise(placebo, none)[0] == "noisy rounds"
    assert flagged["lockstep"] == []
    assert flagged["interleaved"] and all(label.endswith("÷ none by round") for label in flagged["interleaved"])


def test_ctrl_c_in_the_middle_of_a_lockstep_group_closes_every_connection_and_database(tmp_path: Path) -> None:
    measured = []  # every trial has its own workload object

    class Interrupting(SteppedFakeWorkload):
        def _queries(self, test, ctx, warmup):
            for step in super()._queries(test, ctx, warmup):
                if not warmup and ctx.recorder.trial.repetition == 1:
                    measured.append(step)
                    if len(measured) == 4:  # the second turn of round 1
                        raise KeyboardInterrupt
                yield step

    clock = FakeClock()
    plan = make_plan()
    store = ResultStore(tmp_path / "out")
    store.start(plan.text, {})
    FakeEngine.provisioned.clear()
    runner = Runner(plan=plan, store=store, data_dir=tmp_path / "data", clock=clock,
                    engine_factory=lambda name, **settings: FakeEngine(**settings),
                    workload_factory=lambda name: Interrupting(clock), workspace_parent=tmp_path)
    with pytest.raises(KeyboardInterrupt):
        runner.run()
    assert len(FakeEngine.provisioned) == 4  # the priming load and round 1's group
    assert all(db.closed and db.connections == 0 for db in FakeEngine.provisioned)
    assert not list(tmp_path.glob("tdebench-*"))
    assert read_run(tmp_path / "out").trials == []  # nothing of the interrupted group is stored as finished
