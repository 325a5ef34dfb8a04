"""Resuming an interrupted run (`tdebench run --resume`) with the fake engine: the store cut
down to its complete trials, and the runner finishing the plan in its order."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fake_engine import FAKE_ENC, FakeEngine, FakeWorkload, SteppedFakeWorkload, fake_plan
from fake_clock import FakeClock
from tdebench.measure.environment import differences
from tdebench.plan import EngineChoice, Plan, parse_plan, schedule
from tdebench.report.summaries.findings import alerts, overview
from tdebench.run.runner import Runner
from tdebench.results import BUDGET, CipherSpeed, MOST_ROUNDS, Resumed, TrialKey, to_json
from tdebench.store import RESULTS, OutputError, ResultStore, keep_complete, read_run


def make_plan(**overrides) -> Plan:
    return fake_plan(**{"repetitions": 3, **overrides})


def run_into(directory: Path, plan: Plan, workload: FakeWorkload, start: bool = True):
    """Run `plan` into `directory` (a new store, or with start=False the one there, resumed);
    the summary, and the trials provisioned (priming left out)."""
    store = ResultStore(directory)
    if start:
        store.start(plan.text, {"cpu_model": "fake"})
    FakeEngine.provisioned.clear()
    summary = Runner(plan=plan, store=store, data_dir=directory.parent / "data", clock=workload.clock,
                     engine_factory=lambda name, **settings: FakeEngine(**settings),
                     workload_factory=lambda name: workload, workspace_parent=directory.parent).run()
    trials = [db.workspace.name for db in FakeEngine.provisioned if not db.workspace.name.endswith("_r0")]
    return summary, trials


def lines_of(directory: Path) -> list[bytes]:
    return (directory / RESULTS).read_bytes().splitlines(keepends=True)


def kind(line: bytes) -> str:
    return json.loads(line)["kind"]


def trial_id(line: bytes) -> str:
    key = json.loads(line)["trial"]
    return TrialKey(**key).id


def interrupted_copy(full: Path, target: Path, lines: list[bytes]) -> Path:
    """A run directory like `full` whose results.jsonl is `lines`: what a kill left behind."""
    shutil.copytree(full, target)
    (target / RESULTS).write_bytes(b"".join(lines))
    return target


def cut_after_outcome(lines: list[bytes], count: int) -> int:
    """The index just past the `count`-th trial outcome."""
    outcomes = [i for i, line in enumerate(lines) if kind(line) == "trial"]
    return outcomes[count - 1] + 1


def ids(plan: Plan) -> list[str]:
    return [spec.key.id for spec in schedule(plan)]


def workspace_name(trial: str) -> str:
    return trial.replace("/", "_")


def test_a_killed_run_resumes_to_the_whole_plan_each_trial_once_in_schedule_order(tmp_path: Path) -> None:
    plan = make_plan()
    clock = FakeClock()
    run_into(tmp_path / "full", plan, FakeWorkload(clock))
    full = lines_of(tmp_path / "full")
    end = cut_after_outcome(full, 2)
    half = full[end:end + 4]  # the third trial's first records: a half-finished trial
    assert {trial_id(line) for line in half} == {ids(plan)[2]} and "trial" not in map(kind, half)
    torn = full[end + 4][:25]  # and a line cut off mid-write
    resumed = interrupted_copy(tmp_path / "full", tmp_path / "resumed", full[:end] + half + [torn])

    cut = keep_complete(resumed)
    assert (cut.kept, cut.dropped, cut.torn_line) == (2, 1, True)
    assert lines_of(resumed) == full[:end]  # the complete trials' records, byte for byte
    assert not list(resumed.glob("*.tmp"))

    summary, provisioned = run_into(resumed, plan, FakeWorkload(clock), start=False)
    assert provisioned == [workspace_name(trial) for trial in ids(plan)[2:]]  # only the rest ran
    assert (summary.trials, summary.kept, summary.ok) == (6, 2, True)
    data = read_run(resumed)
    assert [outcome.trial.id for outcome in data.trials] == ids(plan)  # each once, in schedule order
    assert sorted(v.trial.id for v in data.verdicts) == sorted(ids(plan))
    measured = {trial: sum(1 for m in data.measurements if m.trial.id == trial) for trial in ids(plan)}
    assert measured == {trial: sum(1 for line in full if kind(line) == "measurement" and trial_id(line) == trial)
                        for trial in ids(plan)}
    assert lines_of(resumed)[:end] == full[:end]


def test_a_lockstep_group_cut_off_after_one_outcome_runs_only_the_others_side_by_side(tmp_path: Path) -> None:
    plan = make_plan(order="lockstep", repetitions=2,
                     engines=(EngineChoice("fake", ("none", "placebo", FAKE_ENC.name)),), text="order = 'lockstep'\n")
    clock = FakeClock()
    run_into(tmp_path / "full", plan, SteppedFakeWorkload(clock))
    full = lines_of(tmp_path / "full")
    end = cut_after_outcome(full, 1)
    assert kind(full[end]) == "verdict"  # the group's next trial was judged, but did not end: incomplete
    resumed = interrupted_copy(tmp_path / "full", tmp_path / "resumed", full[:end + 1])

    cut = keep_complete(resumed)
    assert (cut.kept, cut.dropped, cut.torn_line) == (1, 2, False)
    workload = SteppedFakeWorkload(clock)
    summary, provisioned = run_into(resumed, plan, workload, start=False)
    assert provisioned == [workspace_name(trial) for trial in ids(plan)[1:]]
    assert [outcome.trial.id for outcome in read_run(resumed).trials] == ids(plan)
    # the two left of the first group ran side by side: their measured queries take turns
    rest = {TrialKey(**json.loads(line)["trial"]).encryption for line in full[:end + 1]
            if kind(line) != "trial"} - {read_run(resumed).trials[0].trial.encryption}
    first_round = [(enc, q) for enc, rep, q, warmup in workload.order if rep == 1 and not warmup]
    assert {enc for enc, _ in first_round} == rest and len(rest) == 2
    assert [q for _, q in first_round] == [1, 1, 2, 2]
    assert summary.trials == 6 and summary.kept == 1


def test_an_adaptive_run_resumed_mid_round_continues_the_round_numbering(tmp_path: Path) -> None:
    plan = make_plan(repetitions=2, target_ci_pct=0.01, max_repetitions=5)  # a target never reached: 5 rounds
    clock = FakeClock()
    run_into(tmp_path / "full", plan, FakeWorkload(clock, noise=0.05))
    full = lines_of(tmp_path / "full")
    assert read_run(tmp_path / "full").stopping.rounds == 5
    end = cut_after_outcome(full, 5)  # round 3, an added one, has one of its two trials complete
    resumed = interrupted_copy(tmp_path / "full", tmp_path / "resumed", full[:end] + full[end:end + 2])
    keep_complete(resumed)
    assert read_run(resumed).stopping is None

    summary, provisioned = run_into(resumed, plan, FakeWorkload(clock, noise=0.05), start=False)
    data = read_run(resumed)
    assert data.stopping is not None and (data.stopping.rounds, data.stopping.reason) == (5, MOST_ROUNDS)
    keys = [outcome.trial for outcome in data.trials]
    assert len(keys) == len(set(keys)) == 10  # no repetition number twice
    assert sorted(key.repetition for key in keys) == [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    # round 3's missing trial first, then rounds 4 and 5
    assert [name[-2:] for name in provisioned] == ["r3", "r4", "r4", "r5", "r5"]
    assert (summary.trials, summary.kept) == (10, 5)

    # resumed again after the stopping record: nothing is left to run
    summary, provisioned = run_into(resumed, plan, FakeWorkload(clock, noise=0.05), start=False)
    assert provisioned == [] and summary.trials == summary.kept == 10
    assert len(read_run(resumed).trials) == 10


def test_the_budget_of_a_resumed_adaptive_run_counts_the_time_before_it(tmp_path: Path) -> None:
    plan = make_plan(repetitions=2, target_ci_pct=0.01, max_minutes=0.05)
    store = ResultStore(tmp_path / "out")
    store.start(plan.text, {})
    # the run had already spent its 3 s budget before it was interrupted
    store.append(Resumed(kept=0, dropped=0, torn_line=False, at_utc="2025-01-01T00:00:00+00:00",
                         elapsed_before_s=3.0))
    run_into(tmp_path / "out", plan, FakeWorkload(FakeClock(), noise=0.05), start=False)
    stopping = read_run(tmp_path / "out").stopping
    assert stopping is not None and (stopping.rounds, stopping.reason) == (2, BUDGET) and stopping.elapsed_s > 3.0


def test_kept_cipher_records_only_once_the_run_got_past_them(tmp_path: Path) -> None:
    plan = make_plan(repetitions=1)
    run_into(tmp_path / "full", plan, FakeWorkload(FakeClock()))
    cipher = (json.dumps(to_json(CipherSpeed("aes-256-gcm", 4096, 900.0)), sort_keys=True) + "\n").encode()
    full = lines_of(tmp_path / "full")
    started = interrupted_copy(tmp_path / "full", tmp_path / "started", [cipher, cipher] + full[:2])
    cut = keep_complete(started)
    assert cut.ciphers and lines_of(started) == [cipher, cipher]
    measuring = interrupted_copy(tmp_path / "full", tmp_path / "measuring", [cipher])
    cut = keep_complete(measuring)
    assert not cut.ciphers and lines_of(measuring) == []


def test_a_failed_rewrite_leaves_the_original_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = make_plan(repetitions=1)
    run_into(tmp_path / "full", plan, FakeWorkload(FakeClock()))
    full = lines_of(tmp_path / "full")
    out = interrupted_copy(tmp_path / "full", tmp_path / "out", full[:-1] + [full[-1][:10]])
    before = (out / RESULTS).read_bytes()

    def failing(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", failing)
    with pytest.raises(OutputError, match="no space left on"):
        keep_complete(out)
    assert (out / RESULTS).read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in (tmp_path / "full").iterdir())


def test_the_schedule_is_the_same_in_every_process() -> None:
    """A resumed run finds the remaining trials by recomputing the schedule from the seed:
    the shuffle must not depend on the process (hash randomisation)."""
    text = ('seed = 11\nrepetitions = 3\norder = "interleaved"\n[[engines]]\nname = "duckdb"\n'
            'encryptions = "all"\n[[engines]]\nname = "sqlite"\nencryptions = "all"\n'
            '[[workloads]]\nname = "tpch"\nscales = [0.01, 0.1]\n')
    code = ("import sys; from tdebench.plan import parse_plan, schedule; "
            "print([t.key.id for t in schedule(parse_plan(sys.stdin.read()))])")
    seen = set()
    for hash_seed in ("1", "2", "random"):
        done = subprocess.run([sys.executable, "-c", code], input=text, capture_output=True, text=True,
                              env={**os.environ, "PYTHONHASHSEED": hash_seed}, check=True)
        seen.add(done.stdout)
    here = [t.key.id for t in schedule(parse_plan(text))]
    assert seen == {str(here) + "\n"} and here != sorted(here)  # shuffled, the same way everywhere


def test_the_report_says_how_often_a_run_was_resumed_and_what_changed(tmp_path: Path) -> None:
    plan = make_plan(repetitions=1)
    run_into(tmp_path / "out", plan, FakeWorkload(FakeClock()))
    old = read_run(tmp_path / "out")  # a run from before resumes, or one never interrupted
    assert old.resumes == [] and "resumed" not in overview(old).paragraph
    assert not any("environment" in alert for alert in alerts(old))
    store = ResultStore(tmp_path / "out")
    store.append(Resumed(kept=1, dropped=1, torn_line=True, at_utc="2025-01-01T10:00:00+00:00"))
    once = read_run(tmp_path / "out")
    assert ("The run was interrupted and resumed 1 time; 1 trial kept from before the interruption, "
            "1 incomplete trial dropped and run again.") in overview(once).paragraph
    store.append(Resumed(kept=2, dropped=0, torn_line=False, at_utc="2025-01-01T11:00:00+00:00",
                         changed=("kernel: 6.1.0-17-amd64 → 6.1.0-18-amd64",)))
    twice = read_run(tmp_path / "out")
    assert twice.resumes[-1].changed == ("kernel: 6.1.0-17-amd64 → 6.1.0-18-amd64",)
    assert ("resumed 2 times; 2 trials kept from before the last interruption, 1 incomplete trial dropped"
            in overview(twice).paragraph)
    assert [alert for alert in alerts(twice) if "environment" in alert] == [
        "The environment had changed when the run was resumed at 2025-01-01T11:00:00+00:00: kernel: "
        "6.1.0-17-amd64 → 6.1.0-18-amd64. The trials before and after it ran on different setups "
        "(environment.json is the run's start)."]


def test_environment_differences_name_what_a_result_depends_on() -> None:
    before = {"cpu_model": "Xeon", "kernel": "6.1.0-17", "engines": {"duckdb": "1.1.0", "sqlite": "3.45"},
              "timestamp_utc": "2025-01-01T00:00:00+00:00", "load_average": [0.1, 0.2, 0.3], "memory_bytes": 2**33}
    after = {**before, "kernel": "6.1.0-18", "engines": {"duckdb": "1.1.3", "sqlite": "3.45"},
             "timestamp_utc": "2025-01-02T00:00:00+00:00", "load_average": [1.0, 1.0, 1.0], "cpu_governor": "powersave"}
    assert differences(before, after) == ["engines.duckdb: 1.1.0 → 1.1.3", "kernel: 6.1.0-17 → 6.1.0-18"]
    assert differences(before, before) == []
