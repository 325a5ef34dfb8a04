"""The runner with a fake engine and an exact fake clock: phases, order, durability, verdicts."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from fake_engine import FAKE_ENC, QUERY_NS, FakeEngine, FakeWorkload, fake_plan
from tdebench.measure import affinity
from fake_clock import FakeClock
from tdebench.plan import EngineChoice, Plan
from tdebench.run.runner import Runner, _within_budget
from tdebench.report.summaries.findings import UNSTOPPED, overview
from tdebench.report.summaries.noise import is_headline, widest_headline
from tdebench.report.data.records import resolution, summary_records
from tdebench.results import BUDGET, MOST_ROUNDS, REACHED, Record, TrialOutcome, from_json, to_json
from tdebench.store import ResultStore, read_run


make_plan = fake_plan


def run(tmp_path: Path, plan: Plan, **kwargs):
    clock = FakeClock()
    workload = FakeWorkload(clock, **kwargs)
    store = ResultStore(tmp_path / "out")
    store.start(plan.text, {"cpu_model": "fake"})
    FakeEngine.provisioned.clear()
    runner = Runner(plan=plan, store=store, data_dir=tmp_path / "data", clock=clock,
                    engine_factory=lambda name, **settings: FakeEngine(**settings),
                    workload_factory=lambda name: workload,
                    empty_cache=lambda evict, root: True, workspace_parent=tmp_path)
    summary = runner.run()
    return summary, read_run(tmp_path / "out"), workload


def test_exact_times_are_recorded_and_warmups_marked(tmp_path: Path) -> None:
    summary, data, workload = run(tmp_path, make_plan())
    assert summary.ok and summary.trials == 4
    assert workload.prepared == [1.0]
    q2 = [m for m in data.measurements if m.step == "q2" and not m.warmup]
    assert sorted((m.trial.encryption, m.metrics["elapsed_s"]) for m in q2) == [
        ("fake-256", 0.22), ("fake-256", 0.22), ("none", 0.2), ("none", 0.2)]
    warm = [m for m in data.measurements if m.warmup]
    assert len(warm) == 4 * 2 and {m.step for m in warm} == {"q1", "q2"}
    sizes = [m for m in data.measurements if m.test == "load" and m.step == "database"]
    assert len(sizes) == 4 and all(m.metrics["size_bytes"] > 0 for m in sizes)


def test_a_workload_of_outcomes_runs_no_warm_ups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A workload whose results are outcomes, not timings (strength), is not warmed up: a warm-up
    would run its tests twice (a spill through a file-system layer takes minutes) for nothing."""
    monkeypatch.setattr(FakeWorkload, "timed", False)
    summary, data, workload = run(tmp_path, make_plan())
    assert summary.ok and summary.trials == 4
    assert not [m for m in data.measurements if m.warmup]
    assert not [step for step in workload.order if step[3]]  # nothing run as a warm-up


def test_verdicts_baseline_plaintext_and_encrypted_clean(tmp_path: Path) -> None:
    summary, data, _ = run(tmp_path, make_plan())
    by_enc = {(v.trial.encryption, v.verdict) for v in data.verdicts}
    assert by_enc == {("none", "plaintext"), ("fake-256", "encrypted")}
    baseline = next(v for v in data.verdicts if v.trial.encryption == "none")
    assert baseline.first_hit and baseline.first_hit.startswith("fake.db@")
    assert all(v.as_expected for v in data.verdicts) and summary.ok


def test_interleaved_trial_order_is_round_by_round(tmp_path: Path) -> None:
    _, data, _ = run(tmp_path, make_plan(repetitions=3))
    order = [(t.trial.repetition, t.trial.encryption) for t in data.trials]
    assert [rep for rep, _ in order] == [1, 1, 2, 2, 3, 3]
    assert all({enc for rep, enc in order if rep == r} == {"none", "fake-256"} for r in (1, 2, 3))


def test_wrong_answer_fails_the_trial_but_keeps_its_numbers_and_the_run_goes_on(tmp_path: Path) -> None:
    summary, data, _ = run(tmp_path, make_plan(), fail_on="fake-256")
    assert not summary.ok
    assert {o.trial.encryption for o in summary.failed} == {"fake-256"}
    assert all("WrongAnswer" in o.error for o in summary.failed)
    failed_answers = [m for m in data.measurements if m.answer == "failed"]
    assert failed_answers, "the measurements of a failed trial are kept"
    assert len(data.trials) == 4 and len(data.verdicts) == 4


def test_a_failed_trials_verdict_is_an_error_and_its_error_names_a_process_that_died(tmp_path: Path) -> None:
    """Its files may look encrypted (a dead gocryptfs leaves its cipher directory), but the checks
    of a trial that failed were not all taken: `error`, what the scan found said in the detail.
    The process that died comes first in the error, the driver's message after it."""
    from fake_engine import FakeDatabase

    def died(self, wait_s: float = 0.0) -> str:
        return "" if self.encryption.name == "none" else "fakeserverd ended by signal 9 (SIGKILL)"

    FakeDatabase.died = died  # type: ignore[method-assign]
    try:
        summary, data, _ = run(tmp_path, make_plan(repetitions=1), fail_on="fake-256")
    finally:
        del FakeDatabase.died
    failed = next(o for o in data.trials if o.trial.encryption == "fake-256")
    assert failed.error.startswith("fakeserverd ended by signal 9 (SIGKILL); the trial then failed with WrongAnswer")
    verdict = next(v for v in data.verdicts if v.trial.encryption == "fake-256")
    assert verdict.verdict == "error" and "its files at rest were judged encrypted" in verdict.detail
    assert next(v for v in data.verdicts if v.trial.encryption == "none").verdict == "plaintext"


def test_workspaces_removed_and_databases_closed(tmp_path: Path) -> None:
    run(tmp_path, make_plan())
    assert not list(tmp_path.glob("tdebench-*")), "the run's workspace root must be removed"
    assert FakeEngine.provisioned and all(db.closed for db in FakeEngine.provisioned)


def test_ctrl_c_cleans_up_and_keeps_finished_trials(tmp_path: Path) -> None:
    class Interrupting(FakeWorkload):
        calls = 0

        def run(self, test, ctx, conn, *, warmup):
            Interrupting.calls += 1
            if Interrupting.calls == 5:  # inside the third trial
                raise KeyboardInterrupt
            super().run(test, ctx, conn, warmup=warmup)

    clock = FakeClock()
    store = ResultStore(tmp_path / "out")
    plan = make_plan()
    store.start(plan.text, {})
    FakeEngine.provisioned.clear()
    runner = Runner(plan=plan, store=store, data_dir=tmp_path, clock=clock,
                    engine_factory=lambda name, **settings: FakeEngine(**settings),
                    workload_factory=lambda name: Interrupting(clock), workspace_parent=tmp_path)
    with pytest.raises(KeyboardInterrupt):
        runner.run()
    assert not list(tmp_path.glob("tdebench-*"))
    assert all(db.closed for db in FakeEngine.provisioned)
    assert len(read_run(tmp_path / "out").trials) == 2


def test_cold_cache_is_recorded_as_dropped_only_when_it_was(tmp_path: Path) -> None:
    plan = make_plan(cache="cold")
    clock = FakeClock()
    FakeEngine.provisioned.clear()
    asked: list[tuple[str, Path]] = []
    for works, evict in ((True, "files"), (False, "os")):
        out = tmp_path / f"out{works}"
        store = ResultStore(out)
        store.start(plan.text, {})
        Runner(plan=replace(plan, evict=evict), store=store, data_dir=tmp_path, clock=clock,
               engine_factory=lambda name, **settings: FakeEngine(**settings),
               workload_factory=lambda name: FakeWorkload(clock),
               empty_cache=lambda evict, root: asked.append((evict, root)) is None and works,
               workspace_parent=tmp_path).run()
        assert {t.cache_dropped for t in read_run(out).trials} == {works}
        assert {(t.cache, t.evicted) for t in read_run(out).trials} == {("cold", evict)}
    # each time the plan's evict, for the workspace of the database just stopped
    assert {root for _, root in asked} == {db.workspace for db in FakeEngine.provisioned
                                           if not db.workspace.name.endswith("_r0")}
    assert [e for e, _ in asked] == ["files"] * (len(asked) // 2) + ["os"] * (len(asked) // 2)
    # the engine is stopped before every drop (after the load, before the measured test) and at the end
    measured = [db for db in FakeEngine.provisioned if not db.workspace.name.endswith("_r0")]  # not priming
    assert len(measured) == 8 and all(db.closes == 3 for db in measured)


def test_results_are_durable_line_by_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each record is in results.jsonl for any other reader (a fresh open of the file) the moment
    its append returns, so a crash of tdebench loses nothing; and after every trial, with its
    outcome the last line, the file is fsynced, so a crash of the machine loses at most the
    running trial."""
    results = tmp_path / "out" / "results.jsonl"
    append = ResultStore.append
    visible: list[bool] = []  # per append: its record was the file's last line right after it
    synced: list[Record] = []  # the file's last record at each fsync of results.jsonl
    fsync = os.fsync

    def appended(store: ResultStore, record: Record) -> None:
        append(store, record)
        last = json.loads(results.read_bytes().splitlines()[-1])
        visible.append(json.dumps(last, sort_keys=True) == json.dumps(to_json(record), sort_keys=True))

    def fsynced(fd: int) -> None:
        fsync(fd)
        if os.path.realpath(f"/proc/self/fd/{fd}") == str(results.resolve()):
            synced.append(from_json(json.loads(results.read_bytes().splitlines()[-1])))

    monkeypatch.setattr(ResultStore, "append", appended)
    monkeypatch.setattr(os, "fsync", fsynced)
    _, data, _ = run(tmp_path, make_plan())
    lines = results.read_text().splitlines()
    assert len(lines) == len(data.measurements) + len(data.verdicts) + len(data.trials) == len(visible)
    assert all(visible)
    outcomes = [record for record in synced if isinstance(record, TrialOutcome)]
    assert outcomes == data.trials and len(data.trials) == 4


def test_engine_state_is_recorded_and_an_unencrypted_engine_fails_the_trial(tmp_path: Path) -> None:
    from tdebench.engines.base import EncryptionNotActive

    from fake_engine import FakeDatabase

    def state(self) -> str:
        if self.encryption.name == "none":
            return ""
        raise EncryptionNotActive("2 of 3 tablespaces encrypted, 1 rotating")

    original = FakeDatabase.encryption_state
    FakeDatabase.encryption_state = state
    try:
        summary, data, _ = run(tmp_path, make_plan(repetitions=1))
    finally:
        FakeDatabase.encryption_state = original
    failed = {o.trial.encryption: o.error for o in summary.failed}
    assert list(failed) == ["fake-256"] and "1 rotating" in failed["fake-256"]
    assert not [m for m in data.measurements if m.trial.encryption == "fake-256" and m.test == "power"]


def test_a_decrypted_view_is_scanned_as_the_positive_control(tmp_path: Path) -> None:
    from fake_engine import FakeDatabase

    def view(self) -> Path:
        shown = self.workspace.parent / f"view-{self.workspace.name}"
        shown.mkdir(exist_ok=True)
        (shown / "plain.db").write_text("\n".join(self.rows))
        return shown

    FakeDatabase.plaintext_view = view
    try:
        _, data, _ = run(tmp_path, make_plan(repetitions=1))
    finally:
        del FakeDatabase.plaintext_view
    encrypted = next(v for v in data.verdicts if v.trial.encryption == "fake-256")
    assert encrypted.verdict == "encrypted" and encrypted.view_hits == 4  # CANARY_COUNT


def test_a_decrypted_view_without_canaries_or_gone_makes_the_verdict_an_error(tmp_path: Path) -> None:
    from fake_engine import FakeDatabase
    from tdebench.engines.base import PlaintextViewGone

    def empty_view(self) -> Path:  # the layer's view shows files, but not the canaries the engine wrote
        shown = self.workspace.parent / f"view-{self.workspace.name}"
        shown.mkdir(exist_ok=True)
        (shown / "plain.db").write_text("rows without the canaries")
        return shown

    def gone_view(self) -> Path:
        raise PlaintextViewGone(f"the gocryptfs mount at {self.workspace}/plain was gone before verification")

    for name, view, detail in (
            ("empty", empty_view, "no canary found in the decrypted view: the positive control failed"),
            ("gone", gone_view, "the gocryptfs mount at ")):
        FakeDatabase.plaintext_view = view
        try:
            summary, data, _ = run(tmp_path / name, make_plan(repetitions=1))
        finally:
            del FakeDatabase.plaintext_view
        encrypted = next(v for v in data.verdicts if v.trial.encryption == "fake-256")
        assert encrypted.verdict == "error" and encrypted.detail.startswith(detail), encrypted.detail
        assert not summary.ok and summary.unexpected_verdicts == [encrypted]  # the run exits 1
        assert not summary.failed  # the measurements stand; the verdict says what is wrong


def test_a_workload_may_go_cold_per_statement_in_cold_plans_only(tmp_path: Path) -> None:
    clock = FakeClock()
    seen: list[object] = []

    class PerStatement(FakeWorkload):
        def run(self, test, ctx, conn, *, warmup):
            seen.append(ctx.session.cold)
            if ctx.session.cold:
                conn = ctx.session.go_cold()
            else:
                with pytest.raises(RuntimeError, match="cache = \"cold\""):
                    ctx.session.go_cold()
            super().run(test, ctx, conn, warmup=warmup)

    for cache, drops in (("warm", [True]), ("cold", [True]), ("cold", [False])):
        seen.clear()
        plan = make_plan(cache=cache, repetitions=1)
        out = tmp_path / f"out-{cache}-{drops[0]}"
        store = ResultStore(out)
        store.start(plan.text, {})
        FakeEngine.provisioned.clear()
        Runner(plan=plan, store=store, data_dir=tmp_path, clock=clock,
               engine_factory=lambda name, **settings: FakeEngine(**settings),
               workload_factory=lambda name: PerStatement(clock), empty_cache=lambda evict, root: drops[0],
               workspace_parent=tmp_path).run()
        assert seen and all(cold == (cache == "cold") for cold in seen)
        if cache == "cold":  # per trial: load, warm-up and measured run each stop the engine once more
            measured = [db for db in FakeEngine.provisioned if not db.workspace.name.endswith("_r0")]  # not priming
            assert len(measured) == 2 and all(db.closes == 5 for db in measured)
            assert {t.cache_dropped for t in read_run(out).trials} == {drops[0]}


def test_placebo_runs_like_the_baseline_and_is_compared_with_it(tmp_path: Path) -> None:
    plan = make_plan(repetitions=3, placebo=True,
                     engines=(EngineChoice("fake", ("none", "placebo", FAKE_ENC.name)),))
    summary, data, _ = run(tmp_path, plan)
    assert summary.ok and summary.trials == 9
    placebo = [v for v in data.verdicts if v.trial.encryption == "placebo"]
    assert len(placebo) == 3 and all(v.expected == "plaintext" and v.as_expected for v in placebo)
    record = next(r for r in summary_records(data) if (r.cell.encryption, r.cell.step) == ("placebo", "q1"))
    assert record.overhead is not None and record.overhead.method == "paired"
    assert record.overhead.pct == pytest.approx(0.0, abs=1e-9)


def test_adaptive_rounds_continue_until_the_target_ci_and_say_why_they_stopped(tmp_path: Path) -> None:
    plan = make_plan(repetitions=2, target_ci_pct=3.0)
    summary, data, _ = run(tmp_path, plan, noise=0.05)
    stopping = data.stopping
    assert stopping is not None and stopping.reason == REACHED and stopping.target_ci_pct == 3.0
    assert stopping.rounds > 2 and summary.trials == 2 * stopping.rounds  # more rounds were needed
    assert max(t.trial.repetition for t in data.trials) == stopping.rounds
    widest = widest_headline(data, summary_records(data))
    assert widest is not None and widest[1] <= 3.0 and stopping.widest_ci_pct == widest[1]
    paragraph = overview(data).paragraph
    assert f"{stopping.rounds} repetitions of every cell" in paragraph
    assert (f"Adaptive repetitions stopped after {stopping.rounds} rounds: target reached (widest headline "
            f"CI ±{widest[1]:.1f}%, fake fake-256 fakeload sf1 · power geomean elapsed_s; target ±3%).") in paragraph
    # one round fewer was not enough: the runner stopped at the first round that reached it
    fewer = data.measurements
    data.measurements = [m for m in fewer if m.trial.repetition < stopping.rounds]
    data.trials = [t for t in data.trials if t.trial.repetition < stopping.rounds]
    assert widest_headline(data, summary_records(data))[1] > 3.0


def test_adaptive_rounds_wait_on_the_placebos_resolution_not_its_half_width(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A placebo off zero (here by 2%, as one comes out by chance in a few rounds) is read as
    the run's resolution, its farthest bound: the rounds go on until that is within the target,
    long after the half-width alone would have stopped them."""
    monkeypatch.setitem(QUERY_NS, "placebo", int(QUERY_NS["none"] * 1.02))
    plan = make_plan(repetitions=4, target_ci_pct=3.0, max_repetitions=80, placebo=True,
                     engines=(EngineChoice("fake", ("none", "placebo")),))
    _, data, _ = run(tmp_path, plan, noise=0.02)
    stopping = data.stopping
    assert stopping is not None and stopping.reason == REACHED

    def floor() -> Any:
        return next(r for r in summary_records(data) if r.cell.encryption == "placebo" and r.cell.test == "power"
                    and is_headline(r.cell))

    assert resolution(floor()) <= 3.0 and stopping.widest_ci_pct == pytest.approx(resolution(floor()))
    assert floor().overhead.half_width < 1.5  # the half-width alone (target 3) would have stopped long before
    assert stopping.rounds > 10
    data.measurements = [m for m in data.measurements if m.trial.repetition < stopping.rounds]
    data.trials = [t for t in data.trials if t.trial.repetition < stopping.rounds]
    assert resolution(floor()) > 3.0  # one round fewer was not enough


def test_an_adaptive_plan_of_one_round_adds_rounds_rather_than_stopping_on_a_point(tmp_path: Path) -> None:
    """One round has no interval: its "interval" is the point, of width 0, which is no reason to
    stop."""
    _, data, _ = run(tmp_path, make_plan(repetitions=1, target_ci_pct=3.0, max_repetitions=6), noise=0.05)
    assert data.stopping is not None and data.stopping.rounds > 1


def test_adaptive_rounds_stop_at_max_repetitions_or_the_time_budget(tmp_path: Path) -> None:
    _, data, _ = run(tmp_path / "cap", make_plan(repetitions=2, target_ci_pct=0.01, max_repetitions=4), noise=0.05)
    assert data.stopping is not None and data.stopping.reason == MOST_ROUNDS and data.stopping.rounds == 4
    assert data.stopping.widest_ci_pct > 0.01 and data.stopping.widest.startswith("fake fake-256 fakeload")
    # each trial takes ~0.4 s of fake time (load, warm-ups, queries): a 0.05 min (3 s) budget
    # fits the first rounds and stops before one that would not fit
    _, data, _ = run(tmp_path / "budget", make_plan(repetitions=2, target_ci_pct=0.01, max_minutes=0.05), noise=0.05)
    assert data.stopping is not None and data.stopping.reason == BUDGET
    assert data.stopping.elapsed_s <= 3.0 and 2 <= data.stopping.rounds < 1000


def test_target_tests_wait_on_the_named_tests_figures_alone(tmp_path: Path) -> None:
    """A load far noisier than the queries: waiting on every headline figure the run stops at
    its cap, the load still wide; with target_tests = ["power"] it stops when the power test's
    figures are within the target, and says what it waited on."""
    _, every, _ = run(tmp_path / "all", make_plan(repetitions=3, target_ci_pct=3.0, max_repetitions=8),
                      noise=0.02, load_noise=0.5)
    assert every.stopping is not None and every.stopping.reason == MOST_ROUNDS
    assert "load" in every.stopping.widest and every.stopping.target_tests == ()
    _, power, _ = run(tmp_path / "power", make_plan(repetitions=3, target_ci_pct=3.0, max_repetitions=8,
                                                    target_tests=("power",)), noise=0.02, load_noise=0.5)
    stopping = power.stopping
    assert stopping is not None and stopping.reason == REACHED and stopping.rounds < 8
    assert "power" in stopping.widest and stopping.widest_ci_pct <= 3.0 and stopping.target_tests == ("power",)
    assert "target ±3% on power)." in overview(power).paragraph


def test_a_plan_without_target_runs_its_repetitions_and_records_no_stopping(tmp_path: Path) -> None:
    summary, data, _ = run(tmp_path, make_plan(repetitions=2), noise=0.05)
    assert summary.trials == 4 and data.stopping is None


def test_trials_record_the_load_average_and_the_cpus_pin_cpus_applied(tmp_path: Path) -> None:
    cpus = sorted(affinity.available_cpus())
    _, unpinned, _ = run(tmp_path / "free", make_plan(repetitions=1))
    assert all(t.engine_cpus is None and t.driver_cpus is None for t in unpinned.trials)
    assert all(t.load_start is not None and t.load_end is not None for t in unpinned.trials)
    pinning = affinity.CpuPinning(engine=(cpus[-1],), driver=(cpus[0],))
    _, pinned, _ = run(tmp_path / "pinned", make_plan(repetitions=1, pin_cpus=pinning))
    # the fake engine is embedded: engine and driver are this one process, on the engine's CPUs
    assert [(t.engine_cpus, t.driver_cpus) for t in pinned.trials] == [((cpus[-1],), (cpus[-1],))] * 2
    assert sorted(affinity.available_cpus()) == cpus  # given back after every trial


def test_adaptive_rounds_are_added_per_comparison_group(tmp_path: Path) -> None:
    """A group that reached the target gets no more rounds while a noisy one goes on: two
    engines, one without noise, the other's query times noisy."""
    plan = make_plan(repetitions=3, target_ci_pct=3.0,
                     engines=(EngineChoice("fake", ("none", FAKE_ENC.name)),
                              EngineChoice("calm", ("none", FAKE_ENC.name))))
    summary, data, _ = run(tmp_path, plan, noise=0.05, quiet=("calm",))
    stopping = data.stopping
    assert stopping is not None and stopping.reason == REACHED
    rounds = {engine: max(t.trial.repetition for t in data.trials if t.trial.engine == engine)
              for engine in ("fake", "calm")}
    assert rounds["calm"] == 3 and rounds["fake"] > 3  # only the noisy group got more rounds
    assert stopping.group_rounds == {"calm fakeload sf1": 3, "fake fakeload sf1": rounds["fake"]}
    assert stopping.rounds == rounds["fake"] and summary.trials == 2 * 3 + 2 * rounds["fake"]
    paragraph = overview(data).paragraph
    assert f"3–{rounds['fake']} repetitions per cell (rounds added per comparison group)" in paragraph
    assert (f"Adaptive repetitions stopped after {rounds['fake']} rounds for fake fakeload sf1 and 3 rounds "
            "for calm fakeload sf1: target reached") in paragraph
    # interrupted before the rounds stopped (no Stopping record): the rounds each group finished, not the plan's 3
    data.stopping = None
    paragraph = overview(data).paragraph
    assert f"3–{rounds['fake']} repetitions per cell (rounds added per comparison group)" in paragraph
    assert UNSTOPPED in paragraph and "3 repetitions of every cell" not in paragraph


def test_a_budget_too_small_for_one_groups_round_still_adds_a_cheaper_groups(tmp_path: Path) -> None:
    seconds = {("a",): 10.0, ("b",): 2.0, ("c",): 5.0}
    assert _within_budget([("a",), ("b",), ("c",)], seconds, 8.0) == [("b",), ("c",)]
    assert _within_budget([("a",), ("b",)], seconds, 1.0) == []
    assert _within_budget([("a",), ("b",)], seconds, None) == [("a",), ("b",)]


def test_every_trial_times_its_opens_apart_and_records_how_it_took_its_key(tmp_path: Path) -> None:
    """A key derivation is paid per connection: runner.OPENS timed opens per trial (the last one
    the tests' connection), counted once per trial as their median, and each trial's key form."""
    from tdebench.run.runner import OPENS

    summary, data, _ = run(tmp_path, make_plan())
    opens = [m for m in data.measurements if (m.test, m.step) == ("open", "connect")]
    assert summary.ok and OPENS >= 3 and len(opens) == 4 * OPENS
    assert {m.pass_number for m in opens} == set(range(1, OPENS + 1))
    cells = [r for r in summary_records(data) if (r.cell.test, r.cell.step, r.cell.metric) == ("open", "connect",
                                                                                                  "elapsed_s")]
    assert {r.cell.encryption: r.summary.n for r in cells} == {"none": 2, "fake-256": 2}  # a value per trial
    assert {(t.trial.encryption, t.key_form) for t in data.trials} == {("none", ""), ("fake-256", "passphrase")}


def test_every_trial_runs_a_transient_capture_and_one_that_cannot_start_is_said_in_its_verdict(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, data, _ = run(tmp_path / "a", make_plan())
    assert {v.transient for v in data.verdicts} == {"none caught"}  # the fakes write no temp file
    assert all(s.kind for v in data.verdicts for s in v.files)
    assert all(v.capture_cpu_s is not None and v.capture_cpu_s >= 0 for v in data.verdicts)  # its watch's CPU

    def no_inotify(*args: object, **kwargs: object) -> None:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr("tdebench.run.runner.Capture", no_inotify)
    summary, data, _ = run(tmp_path / "b", make_plan())
    assert summary.ok and {v.transient for v in data.verdicts} == {""}
    assert {v.capture_cpu_s for v in data.verdicts} == {None}  # no capture ran, no cost made up
    assert all("the transient capture could not start (OSError: [Errno 24] Too many open files): only the files "
               "at rest were judged" in v.detail for v in data.verdicts)


class _Phases:
    """A progress that keeps the phase lines the user would read."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def phase(self, text: str) -> None:
        self.lines.append(text)

    def trial_started(self, index, total, spec) -> None:
        pass

    def trial_finished(self, outcome, verdict) -> None:
        pass


def _quiet_run(tmp_path: Path, plan: Plan, busy_for_s: float, pause=None):
    """A run whose machine is busy (others at 150% of a core) for its first `busy_for_s` seconds
    on the fake clock, then quiet (2%); the wait's pauses move the clock. Returns the summary,
    the run's data, the progress lines and how many times the others' CPU was read."""
    clock = FakeClock()
    reads = [0]

    def others() -> float:
        reads[0] += 1
        return 150.0 if clock.now_ns() < busy_for_s * 1e9 else 2.0

    store = ResultStore(tmp_path / "out")
    store.start(plan.text, {})
    FakeEngine.provisioned.clear()
    progress = _Phases()
    runner = Runner(plan=plan, store=store, data_dir=tmp_path / "data", clock=clock, progress=progress,
                    engine_factory=lambda name, **settings: FakeEngine(**settings),
                    workload_factory=lambda name: FakeWorkload(clock), empty_cache=lambda evict, root: True,
                    workspace_parent=tmp_path, others_cpu=others,
                    pause=pause or (lambda seconds: clock.advance(int(seconds * 1e9))))
    summary = runner.run()
    return summary, read_run(tmp_path / "out"), progress.lines, reads[0]


def test_a_busy_machine_makes_the_runner_wait_before_a_trial_and_record_it(tmp_path: Path) -> None:
    summary, data, lines, _ = _quiet_run(tmp_path, make_plan(quiet_wait_s=300.0, warmups=0), busy_for_s=9.0)
    first, *rest = data.trials
    assert summary.ok and first.quiet_waited_s == 8.0 and first.quiet_others_pct == 2.0  # 2 s windows: 2+8 > 9
    assert [(o.quiet_waited_s, o.quiet_others_pct) for o in rest] == [(0.0, 2.0)] * 3  # quiet: no wait
    assert "waiting for the machine to quiet down: others use 150% of a core (0 s of at most 300 s)" in lines
    assert not any("still busy" in line for line in lines)
    assert first.elapsed_s < 9.0  # the wait is not in the trial's time


def test_the_wait_stops_at_the_plans_limit_and_the_trial_starts_busy(tmp_path: Path) -> None:
    summary, data, lines, _ = _quiet_run(tmp_path, make_plan(quiet_wait_s=5.0, warmups=0), busy_for_s=1e9)
    assert summary.ok and {(o.quiet_waited_s, o.quiet_others_pct) for o in data.trials} == {(5.0, 150.0)}
    assert ("the machine is still busy after 5 s (others use 150% of a core): the trial starts anyway, and the "
            "report marks it busy") in lines


def test_quiet_wait_0_never_looks_at_the_machine(tmp_path: Path) -> None:
    summary, data, lines, reads = _quiet_run(tmp_path, make_plan(warmups=0), busy_for_s=1e9)
    assert summary.ok and reads == 0 and not any("quiet" in line for line in lines)
    assert {(o.quiet_waited_s, o.quiet_others_pct) for o in data.trials} == {(None, None)}


def test_lockstep_waits_once_per_round_of_a_group_and_records_it_on_each_trial(tmp_path: Path) -> None:
    plan = make_plan(quiet_wait_s=300.0, warmups=0, order="lockstep")
    summary, data, _, reads = _quiet_run(tmp_path, plan, busy_for_s=3.0)
    assert summary.ok and reads == 2 * 2 + 1  # each round opens and reads a window; round 1 one more after waiting
    by_round = {(o.trial.repetition, o.quiet_waited_s) for o in data.trials}
    assert by_round == {(1, 2.0), (2, 0.0)}


def test_ctrl_c_during_the_wait_ends_the_run_at_once(tmp_path: Path) -> None:
    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt  # as the SIGINT handler (runsetup.handle_interrupts) raises

    with pytest.raises(KeyboardInterrupt):
        _quiet_run(tmp_path, make_plan(quiet_wait_s=300.0), busy_for_s=1e9, pause=interrupted)
    assert not read_run(tmp_path / "out").trials and not list(tmp_path.glob("tdebench-*"))
    runner = Runner(plan=make_plan(quiet_wait_s=300.0), store=ResultStore(tmp_path / "b"), data_dir=tmp_path)
    runner.interrupted.set()  # the real pause waits on the event the handler sets: it returns at once
    with pytest.raises(KeyboardInterrupt):
        runner._pause(3600.0)


class _FullDisk(Exception):
    """A driver's error for a full disk that carries no errno, only the words (as DuckDB's does)."""


@pytest.mark.parametrize("raised, remote, full", [
    (OSError(28, "No space left on device"), False, True),
    # an error while handling the driver's (SQLite's failed rollback after SQLITE_FULL), its words quoted
    (RuntimeError("cannot rollback - no transaction is active"), False, True),
    (OSError(28, "No space left on device"), True, False),  # a remote server's disk: not the work directory's
    (OSError(5, "Input/output error"), False, False),
])
def test_a_trial_that_fills_the_disk_fails_with_one_line_naming_the_file_system(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raised: Exception, remote: bool, full: bool) -> None:
    """Whichever error the engine raises, in whichever words: the trial's error is one line that
    names the file system of its workspace and what is free there."""
    from tdebench import runstate
    from tdebench.engines.base import Capabilities

    def load(self, ctx, conn) -> None:
        if isinstance(raised, RuntimeError):
            try:  # the engine's words, as DuckDB's IOException says them
                raise _FullDisk(f'IO Error: Could not write file "{ctx.database.workspace}/x": No space left on device')
            except _FullDisk:
                raise raised  # as a driver's clean-up raises it: the full disk its context
        raise raised

    monkeypatch.setattr(FakeWorkload, "load", load)
    if remote:
        monkeypatch.setattr(FakeEngine, "capabilities", Capabilities(embedded=False, concurrent_streams=False,
                                                                     remote=True))
    summary, data, _ = run(tmp_path, make_plan(repetitions=1))
    errors = {o.error for o in data.trials}
    assert len(data.trials) == 2 and all(o.status == "failed" for o in data.trials)
    mount, _ = runstate.file_system_of(tmp_path)
    if full:
        assert all(e.startswith(f"no space left on {mount} (") and e.endswith(" MiB free)") for e in errors), errors
    else:
        assert errors == {f"{type(raised).__name__}: {raised}"}
