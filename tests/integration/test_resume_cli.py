"""`tdebench run --resume` through the real command line on DuckDB: a run killed (SIGKILL)
mid-trial is finished with the trials it completed kept byte for byte."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner

from tdebench.run import outdir
from tdebench.cli import main
from tdebench.keys import KeySource
from tdebench.plan import parse_plan, schedule
from tdebench.results import TrialKey, TrialOutcome
from tdebench.store import RESULTS, ResultStore, read_run
from test_cli import TINY

PLAN = TINY.replace("repetitions = 1", "repetitions = 3")  # two lockstep groups after the first
TDEBENCH = Path(sys.executable).with_name("tdebench")


def records(data: bytes) -> list[tuple[bytes, dict]]:
    """The whole lines of a results.jsonl with their JSON (a torn last line left out)."""
    lines = data.splitlines(keepends=True)
    found = []
    for number, line in enumerate(lines, start=1):
        try:
            found.append((line, json.loads(line)))
        except json.JSONDecodeError:
            assert number == len(lines), "only the last line may be torn"
    return found


def key_of(record: dict) -> TrialKey | None:
    return TrialKey(**record["trial"]) if "trial" in record else None


def kill_after_first_trial(out: Path, work: Path) -> None:
    """Start a run and SIGKILL it as soon as a trial's outcome is in its results.jsonl."""
    run = subprocess.Popen([TDEBENCH, "run", str(out.parent / "plan.toml"), "--out", str(out),
                            "--work-dir", str(work), "--quiet"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 300
        results = out / RESULTS
        while not (results.is_file() and b'"kind": "trial"' in results.read_bytes()):
            assert run.poll() is None, run.stdout.read()
            assert time.monotonic() < deadline, "no trial ended within 300 s"
            time.sleep(0.02)
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        run.stdout.close()
    assert run.returncode == -signal.SIGKILL


def test_a_run_killed_mid_trial_is_finished_by_resume_with_its_trials_kept(tmp_path: Path) -> None:
    (tmp_path / "plan.toml").write_text(PLAN)
    out, work = tmp_path / "out", tmp_path / "work"
    work.mkdir()
    kill_after_first_trial(out, work)
    [leftover] = work.glob("tdebench-*")  # the killed run could not remove its workspace

    before = records((out / RESULTS).read_bytes())
    ended = {key_of(r) for _, r in before if r["kind"] == "trial"}
    complete = ended & {key_of(r) for _, r in before if r["kind"] == "verdict"}
    planned = [spec.key for spec in schedule(parse_plan(PLAN))]
    assert 1 <= len(complete) < len(planned), "killed before the run ended"
    kept = [line for line, r in before if r["kind"] == "cipher" or key_of(r) in complete]

    resumed = subprocess.run([TDEBENCH, "run", "--resume", str(out), "--work-dir", str(work), "--quiet"],
                             capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    left = len(planned) - len(complete)
    assert (f"resuming {out}: {len(complete)} of {len(planned)} trials complete, {left} to run"
            in " ".join(resumed.stderr.split()))
    assert "not yet timed: no expected duration" in resumed.stderr  # what a resume expects, as a run says it
    assert f"{len(planned)} trials ({len(complete)} kept from before the interruption), all trials ok" in resumed.stderr
    # the resume first cleaned up after the killed run (its state file names it)
    assert f"removed {leftover}" in resumed.stdout, resumed.stdout

    after = (out / RESULTS).read_bytes().splitlines(keepends=True)
    assert after[:len(kept)] == kept  # the kept trials' records (and the ciphers), byte for byte
    assert json.loads(after[len(kept)])["kind"] == "resume"
    run = read_run(out)
    assert sorted(outcome.trial for outcome in run.trials) == sorted(planned)  # every trial exactly once
    assert sorted(verdict.trial for verdict in run.verdicts) == sorted(planned)
    assert all(outcome.status == "ok" for outcome in run.trials)
    assert [(r.kept, r.changed) for r in run.resumes] == [(len(complete), ())]
    assert "The run was interrupted and resumed 1 time" in (out / "report.md").read_text()
    assert "resumed 1 time" in (out / "report.html").read_text()
    assert list(work.iterdir()) == [] and not (out / ".tdebench.lock").exists()


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def fake_run_dir(path: Path, plan: str = PLAN) -> Path:
    """A directory holding a run's raw files and no trial yet."""
    path.mkdir()
    (path / "plan.toml").write_text(plan)
    (path / "environment.json").write_text("{}\n")
    (path / RESULTS).write_text("")
    return path


def test_resume_refuses_a_directory_without_a_run_in_one_line(tmp_path: Path) -> None:
    for directory in (tmp_path / "missing", tmp_path):
        result = invoke("run", "--resume", str(directory))
        assert result.exit_code == 2
        assert result.output.strip().count("\n") == 0
        assert f"--resume: {directory} is not a tdebench run directory: missing results.jsonl" in result.output


def test_resume_takes_no_plan_out_or_force(tmp_path: Path) -> None:
    run_dir = fake_run_dir(tmp_path / "run")
    for extra, named in ((["--force"], "--force"), (["--out", str(tmp_path / "x")], "--out"),
                         ([str(run_dir / "plan.toml")], "PLAN")):
        result = invoke("run", "--resume", str(run_dir), *extra)
        assert result.exit_code == 2
        assert f"leave out {named}" in result.output
    assert (run_dir / RESULTS).read_text() == ""
    result = invoke("run", str(run_dir / "plan.toml"))
    assert result.exit_code == 2 and "--out DIR is required" in result.output


def test_resume_refuses_a_plan_that_no_longer_parses(tmp_path: Path) -> None:
    run_dir = fake_run_dir(tmp_path / "run", PLAN.replace('name = "duckdb"', 'name = "db2"'))
    result = invoke("run", "--resume", str(run_dir))
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert "the run's plan no longer parses here" in text and "plan.toml:7: unknown name 'db2'" in text


def test_resume_refuses_a_run_that_is_still_going(tmp_path: Path) -> None:
    run_dir = fake_run_dir(tmp_path / "run")
    held = outdir.lock(run_dir)  # as the running tdebench holds it
    try:
        result = invoke("run", "--resume", str(run_dir))
    finally:
        outdir.unlock(run_dir, held)
    assert result.exit_code == 2
    in_use = f"--resume {run_dir} is in use by another tdebench run (pid {os.getpid()})"
    assert in_use in " ".join(result.output.split())
    assert (run_dir / RESULTS).read_text() == ""  # nothing was cut


def test_resume_without_the_key_file_of_a_derived_run_is_refused(tmp_path: Path) -> None:
    """Its remaining trials would silently get random keys: the run could no longer be repeated."""
    run_dir = fake_run_dir(tmp_path / "run")
    the_plan = parse_plan(PLAN, "plan.toml")
    first = next(spec.key for spec in schedule(the_plan) if spec.key.encryption != "none")
    store = ResultStore(run_dir)
    store.append(TrialOutcome(first, "ok", "warm", False, 1.0, key_derived=True))
    store.sync()
    before = (run_dir / RESULTS).read_bytes()
    result = invoke("run", "--resume", str(run_dir))
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert "used keys derived from a key file; pass that file again with --key-file" in text
    assert (run_dir / RESULTS).read_bytes() == before  # nothing was cut or appended


def test_retry_failed_runs_a_failed_trial_again_and_needs_resume(tmp_path: Path) -> None:
    """A finished run with one failed trial: --resume alone keeps it as it is; with
    --retry-failed its records go and it runs again (here: ok), and the report says so."""
    (tmp_path / "plan.toml").write_text(TINY)
    out = tmp_path / "out"
    assert invoke("run", str(tmp_path / "plan.toml"), "--out", str(out), "--quiet").exit_code == 0
    results = out / RESULTS
    lines = results.read_bytes().splitlines(keepends=True)
    failed = next(i for i, (_, r) in enumerate(records(b"".join(lines))) if r.get("kind") == "trial")
    record = json.loads(lines[failed])
    record.update(status="failed", error="RuntimeError: made to fail")
    lines[failed] = json.dumps(record).encode() + b"\n"
    results.write_bytes(b"".join(lines))
    victim = TrialKey(**record["trial"])
    alone = invoke("run", "--resume", str(out), "--quiet")  # nothing to run: the failed trial stays failed
    assert alone.exit_code == 1 and [o.status for o in read_run(out).trials if o.trial == victim] == ["failed"]
    again = invoke("run", "--resume", str(out), "--quiet", "--retry-failed")
    assert again.exit_code == 0, again.output
    assert "1 failed trial to run again" in " ".join(again.output.split())
    run = read_run(out)
    assert [o.status for o in run.trials if o.trial == victim] == ["ok"] and len(run.trials) == 2
    assert run.resumes[-1].retried == 1
    assert "1 failed trial run again" in (out / "report.md").read_text()
    wrong = invoke("run", str(tmp_path / "plan.toml"), "--out", str(tmp_path / "other"), "--retry-failed")
    assert wrong.exit_code == 2 and "use it with --resume DIR" in wrong.output


def key_file(path: Path, secret: bytes) -> Path:
    path.write_bytes(secret)
    path.chmod(0o600)
    return path


def test_resume_with_another_key_source_than_the_runs_first_is_refused_naming_both(tmp_path: Path) -> None:
    """`--resume --key-file K` of a run started without one used to mix random and derived
    keys in one run. The run records its key source (a fingerprint, never the key): a resume
    with another kind, or another file, is refused, naming both."""
    first, other = key_file(tmp_path / "k1", b"a" * 32), key_file(tmp_path / "k2", b"b" * 32)
    cases = [(None, first, "random keys (no --key-file)", "a key file (fingerprint "),
             (first, other, f"a key file (fingerprint {KeySource(first).describe()['fingerprint']})",
              f"a key file (fingerprint {KeySource(other).describe()['fingerprint']})"),
             (first, None, "a key file (fingerprint ", "random keys (no --key-file)")]
    for number, (started, resumed, said_first, said_now) in enumerate(cases):
        run_dir = fake_run_dir(tmp_path / f"run{number}")
        (run_dir / "environment.json").write_text(json.dumps({"key_source": KeySource(started).describe()}))
        result = invoke("run", "--resume", str(run_dir), *(["--key-file", str(resumed)] if resumed else []))
        text = " ".join(result.output.split())
        assert result.exit_code == 2, text
        assert f"started with {said_first}" in text and f"this resume has {said_now}" in text
        assert (run_dir / RESULTS).read_text() == ""  # nothing was cut or appended
        assert "aaaa" not in text and b"a" * 32 not in (run_dir / "environment.json").read_bytes()
