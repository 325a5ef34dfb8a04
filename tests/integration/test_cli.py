"""Every subcommand through the real command line, including its error paths (exit 2)."""

from __future__ import annotations

import csv
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tdebench.cli import main
from tdebench.keys import KeySource
from tdebench.measure import affinity
from tdebench.measure.ciphers import PAGE_SIZES
from tdebench.store import read_run

TINY = '''name = "tiny"
repetitions = 1
warmups = 0
seed = 3

[[engines]]
name = "duckdb"
encryptions = ["none", "aes-256-gcm"]

[[workloads]]
name = "tpch"
scale = 0.01
tests = ["power"]
'''
STORED_TINY = 'order = "lockstep"  # not in the plan as written: the order tdebench chose for it\n' + TINY


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def write(path: Path, text: str, mode: int = 0o644) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> tuple[Path, Path]:
    """One real run with a user key file, shared by the tests that read its outputs."""
    base = tmp_path_factory.mktemp("cli")
    key_file = write(base / "secret.key", "correct horse battery staple 0123456789\n", 0o600)
    result = invoke("run", str(write(base / "tiny.toml", TINY)), "--out", str(base / "out"),
                    "--key-file", str(key_file), "--quiet")
    assert result.exit_code == 0, result.output
    return base / "out", key_file


def test_run_writes_every_file_and_report_rebuilds_them(tiny_run) -> None:
    out, _ = tiny_run
    for name in ("results.jsonl", "environment.json", "plan.toml", "summary.csv", "queries.csv",
                 "verdicts.csv", "report.md", "report.html"):
        assert (out / name).is_file(), name
    # as written, with the order tdebench chose (TINY names none) on a first line of its own
    assert (out / "plan.toml").read_text() == STORED_TINY
    before = {name: (out / name).read_text() for name in ("summary.csv", "queries.csv", "verdicts.csv", "report.md")}
    for name in before:
        (out / name).unlink()
    result = invoke("report", str(out))
    assert result.exit_code == 0, result.output
    assert {name: (out / name).read_text() for name in before} == before


def test_keys_derived_from_the_key_file_never_reach_the_outputs(tiny_run) -> None:
    out, key_file = tiny_run
    run = read_run(out)
    encrypted = [t for t in run.trials if t.trial.encryption != "none"]
    assert encrypted and all(t.key_derived for t in encrypted)
    keys = KeySource(key_file)
    secrets = [keys.key_for(t.trial.id).hex() for t in encrypted] + [key_file.read_text().strip()]
    for path in (p for p in out.rglob("*") if p.is_file()):
        data = path.read_bytes()
        for secret in secrets:
            assert secret.encode() not in data and secret.upper().encode() not in data, path.name


def test_run_refuses_an_existing_run_without_force(tiny_run, tmp_path: Path) -> None:
    out, _ = tiny_run
    result = invoke("run", str(write(tmp_path / "tiny.toml", TINY)), "--out", str(out))
    assert result.exit_code == 2
    assert "already holds a run" in result.output and "--force" in result.output


def test_force_replaces_a_run_and_its_derived_files(tmp_path: Path) -> None:
    plan = write(tmp_path / "tiny.toml", TINY.replace('["none", "aes-256-gcm"]', '["none"]'))
    out = tmp_path / "out"
    assert invoke("run", str(plan), "--out", str(out), "--quiet").exit_code == 0
    # a trial too short for two resource readings has no plot, and so no plots/ (CI saw it)
    mine = out / "plots" / "mine.png"
    mine.parent.mkdir(exist_ok=True)
    mine.write_bytes(b"the user's own")
    result = invoke("run", str(plan), "--out", str(out), "--quiet", "--force")
    assert result.exit_code == 0, result.output
    assert (out / "report.html").is_file()
    # the run ends with the report's first lines (no encryption here, so no cost: the at-rest checks)
    # (a sentence that the machine was busy, wrapped over lines, may come first: tests run two at a time)
    end = result.output.split("In one minute:")[1].splitlines()
    assert any(line.startswith("  - At rest: 1/1 verdicts as expected.") for line in end), end
    assert mine.read_bytes() == b"the user's own"  # --force removes only what the run wrote
    assert len(read_run(out).trials) == 1  # the old run's records are gone
    assert not (out / ".tdebench.lock").exists()


def test_run_says_what_to_expect_before_its_first_trial_quiet_too(tmp_path: Path) -> None:
    """The expected duration (cli/plans.expected: here one trial where one was timed) is the first
    line a run prints, in --quiet mode too, before the cipher figures and the trial."""
    from tdebench.cli.plans import expected
    from tdebench.plan import parse_plan

    text = ('name = "timed"\nmeasured_s = 20\nmeasured_trials = 1\nrepetitions = 1\nwarmups = 0\n\n'
            '[[engines]]\nname = "sqlite"\nencryptions = ["none"]\n\n'
            '[[workloads]]\nname = "tpch"\nscale = 0.01\ntests = ["power"]\n')
    result = invoke("run", str(write(tmp_path / "timed.toml", text)), "--out", str(tmp_path / "out"),
                    "--work-dir", str(tmp_path), "--quiet")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == expected(parse_plan(text)) == "expected: about 20 s (measured, 1 trial)"
    assert len(read_run(tmp_path / "out").trials) == 1


def test_run_refuses_a_directory_of_user_files_even_with_force(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    (out / "plots").mkdir(parents=True)
    (out / "report.md").write_text("my notes")
    (out / "plots" / "chart.png").write_bytes(b"my chart")
    result = invoke("run", str(write(tmp_path / "tiny.toml", TINY)), "--out", str(out), "--force")
    assert result.exit_code == 2
    assert "holds no tdebench run" in " ".join(result.output.split())
    assert sorted(p.name for p in out.rglob("*")) == ["chart.png", "plots", "report.md"]
    assert (out / "report.md").read_text() == "my notes"


@pytest.mark.parametrize("old, new, expected", [
    ('name = "duckdb"', 'name = "db2"', "tiny.toml:7: unknown name 'db2'; valid: duckdb, sqlite"),
    ('"aes-256-gcm"]', '"aes-999"]', "no encryption 'aes-999'; valid: none, aes-256-gcm, aes-256-ctr"),
    ("scale = 0.01", "scale = 50", "scale factor 50 is out of range for tpch: 0.01 to 10"),
    ("warmups = 0", "warmups = = 0", "not valid TOML"),
    ('name = "duckdb"', 'name = "duckdb"\nkey_form = "raw"',
     'tiny.toml:8: key_form = "raw": duckdb takes no raw key (ATTACH derives the file\'s key from ENCRYPTION_KEY'),
    ("seed = 3", "seed = 3\npin_cpus = { engine = [4096], driver = [0] }",
     "tiny.toml:5: pin_cpus.engine: CPU 4096 is not available on this machine; valid: "),
])
def test_bad_plans_exit_2_with_file_line_and_choices(tmp_path: Path, old: str, new: str, expected: str) -> None:
    plan = write(tmp_path / "tiny.toml", TINY.replace(old, new))
    result = invoke("run", str(plan), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert expected in " ".join(result.output.split())
    assert not (tmp_path / "out" / "results.jsonl").exists()


def test_pin_cpus_pins_an_embedded_engine_and_records_where(tmp_path: Path) -> None:
    cpus = sorted(affinity.available_cpus())
    pinned = TINY.replace("seed = 3", f"seed = 3\npin_cpus = {{ engine = [{cpus[-1]}], driver = [{cpus[0]}] }}")
    result = invoke("run", str(write(tmp_path / "tiny.toml", pinned)), "--out", str(tmp_path / "out"), "--quiet")
    assert result.exit_code == 0, result.output
    run = read_run(tmp_path / "out")
    # DuckDB runs in this process: engine and driver are one process, on the engine's CPUs
    assert [(t.engine_cpus, t.driver_cpus) for t in run.trials] == [((cpus[-1],), (cpus[-1],))] * 2
    assert all(t.load_start is not None and t.load_end is not None for t in run.trials)
    assert sorted(affinity.available_cpus()) == cpus  # given back after the trials
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Machine load" in report and "engine CPUs" in report


def test_output_directory_not_writable_exits_2(tmp_path: Path) -> None:
    blocker = write(tmp_path / "a-file", "x")
    result = invoke("run", str(write(tmp_path / "tiny.toml", TINY)), "--out", str(blocker / "out"))
    assert result.exit_code == 2 and "not writable" in result.output


def test_key_file_readable_by_others_exits_2(tmp_path: Path) -> None:
    key = write(tmp_path / "k", "0123456789abcdef0123456789", 0o644)
    result = invoke("run", str(write(tmp_path / "tiny.toml", TINY)), "--out", str(tmp_path / "o"),
                    "--key-file", str(key))
    assert result.exit_code == 2 and "chmod 600" in result.output


def test_report_of_a_directory_that_is_no_run_exits_2(tmp_path: Path) -> None:
    result = invoke("report", str(tmp_path))
    assert result.exit_code == 2 and "not a tdebench run directory" in result.output


def test_engines_lists_every_encryption(tmp_path: Path) -> None:
    result = invoke("engines", "--json")
    assert result.exit_code == 0
    listed = json.loads(result.output)
    rows = {row["name"]: row for row in listed if not row.get("by_url")}
    by_url = {row["name"]: row for row in listed if row.get("by_url")}
    assert list(by_url) == ["mariadb", "mysql", "postgres", "sqlserver", "oracle"]
    assert [name for name, row in by_url.items() if row["kit"]] == ["mysql", "sqlserver", "oracle"]
    assert [e["name"] for e in by_url["sqlserver"]["encryptions"]] == ["none", "aes-128", "aes-192", "aes-256",
                                                                       "3des-168"]
    assert by_url["mariadb"]["usable"] and by_url["postgres"]["usable"]  # their drivers are tdebench's own
    fs = ["fs-aes-256-gcm", "fs-xchacha20-poly1305", "fs-passthrough"]
    plaintemp = ["aes-256-gcm-plaintemp", "aes-256-ctr-plaintemp"]
    assert [e["name"] for e in rows["duckdb"]["encryptions"]] == ["none", "aes-256-gcm", "aes-256-ctr", *plaintemp, *fs]
    assert [e["name"] for e in rows["sqlite"]["encryptions"]] == [
        "none", "aes-128-cbc", "aes-256-cbc", "chacha20-poly1305", "sqlcipher", "ascon-128", "aegis-256", "rc4", *fs]
    assert [e["name"] for e in rows["sqlcipher"]["encryptions"]] == [
        "none", "aes-256-cbc-hmac-sha512", "aes-256-cbc-hmac-sha512-raw", "aes-256-cbc", "aes-256-cbc-hmac-sha1"]
    assert rows["sqlcipher"]["version"].startswith("SQLCipher 4.12.0 community, SQLite 3.51.1")
    assert [e["name"] for e in rows["mariadb"]["encryptions"]] == [
        "none", "aes-128-cbc", "aes-192-cbc", "aes-256-cbc", "aes-128-ctr", "aes-192-ctr", "aes-256-ctr", *fs]
    columns = ["column-aes-128", "column-aes-192", "column-aes-256", "column-3des", "column-blowfish", "column-cast5"]
    assert [e["name"] for e in rows["postgres"]["encryptions"]] == ["none", *columns, *fs]
    assert all(row["usable"] and row["version"] for row in rows.values())
    from tdebench.engines.pgcrypto import COLUMN_CIPHERS, system_openssl_lacks

    lacking = {name for name, cipher in COLUMN_CIPHERS.items() if system_openssl_lacks(cipher)}
    assert lacking <= {"column-blowfish", "column-cast5"}  # OpenSSL 3 without its legacy provider: Debian 12
    assert all(e["usable"] != (e["name"] in lacking) for row in rows.values() for e in row["encryptions"])
    for e in rows["postgres"]["encryptions"]:
        assert e["legacy"] == (e["name"] in ("column-3des", "column-blowfish", "column-cast5"))
        if e["name"] in lacking:
            assert "pgcrypto would store the values in plaintext" in e["reason"]
    column = rows["postgres"]["encryptions"][3]
    assert (column["layer"], column["algorithm"], column["key_bits"]) == ("column", "AES", 256)
    assert "Not encrypted: every other column" in column["notes"]
    triple = rows["postgres"]["encryptions"][4]
    assert (triple["algorithm"], triple["key_bits"], triple["mode"]) == ("3DES", 168, "CFB (OpenPGP)")
    assert "legacy 64-bit-block cipher" in triple["notes"]
    xchacha = rows["postgres"]["encryptions"][8]
    assert (xchacha["layer"], xchacha["algorithm"], xchacha["key_bits"]) == ("fs", "XChaCha20-Poly1305", 256)
    gcm = rows["duckdb"]["encryptions"][1]
    assert (gcm["algorithm"], gcm["key_bits"], gcm["mode"], gcm["layer"]) == ("AES", 256, "GCM", "native")
    assert "WAL" in gcm["covers"]
    text = CliRunner().invoke(main, ["engines"], catch_exceptions=False, terminal_width=80)
    assert text.exit_code == 0
    lines = text.output.splitlines()
    assert max(len(line) for line in lines) <= 80  # follows the terminal's width
    for row in listed:  # every encryption of every engine has its row, by url too
        assert all(any(line.startswith(e["name"] + " ") for line in lines) for e in row["encryptions"])
    assert "sqlserver by url" in text.output
    # each note once, in the legend: the gocryptfs note is shared by every engine's fs-* rows
    legend = text.output.split("\nNotes:\n")[1]
    assert legend.count("gocryptfs default") == 1 and "gocryptfs default" not in text.output.split("\nNotes:\n")[0]


def test_verify_says_plaintext_1_encrypted_0_inconclusive_3(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "plain.sqlite")
    db.execute("CREATE TABLE t (s TEXT)")
    db.execute("INSERT INTO t VALUES ('my-secret-canary-42')")
    db.commit()
    db.close()
    found = invoke("verify", str(tmp_path), "--canary", "my-secret-canary-42")
    assert found.exit_code == 1 and "verdict: plaintext: a canary found" in found.output
    assert "plain.sqlite" in found.output
    # no canary in a plaintext database proves nothing: its pages are not ciphertext
    unsure = invoke("verify", str(tmp_path), "--canary", "something-else-entirely")
    assert unsure.exit_code == 3 and "verdict: inconclusive: no canary, but" in unsure.output
    (tmp_path / "cipher").mkdir()
    (tmp_path / "cipher" / "data.bin").write_bytes(os.urandom(64 * 4096))
    clean = invoke("verify", str(tmp_path / "cipher"), "--canary", "my-secret-canary-42")
    assert clean.exit_code == 0 and "verdict: encrypted: no canary, and the data looks like ciphertext" in clean.output
    missing = invoke("verify", str(tmp_path / "absent"), "--canary", "abcdef")
    assert missing.exit_code == 2
    (tmp_path / "empty").mkdir()
    empty = invoke("verify", str(tmp_path / "empty"), "--canary", "abcdef")
    assert empty.exit_code == 2 and "nothing to scan" in empty.output


def test_ciphers_prints_throughput() -> None:
    result = invoke("ciphers", "--seconds", "0.01")
    assert result.exit_code == 0
    assert "aes-256-gcm" in result.output and "chacha20-poly1305" in result.output
    header = next(line for line in result.output.splitlines() if "cipher" in line and "KiB" in line)
    assert [size in header for size in ("4 KiB", "8 KiB", "16 KiB", "256 KiB", "1 MiB")] == [True] * 5
    ascon = next(line for line in result.output.splitlines() if line.strip().startswith("ascon-128"))
    assert ascon.count("unavailable") >= 5  # one row per cipher, every page size marked


def test_console_script_help_and_usage_errors_exit_codes() -> None:
    exe = Path(sys.executable).with_name("tdebench")
    helped = subprocess.run([exe, "--help"], capture_output=True, text=True)
    assert helped.returncode == 0 and "tdebench run --out" in helped.stdout
    missing_out = subprocess.run([exe, "run"], capture_output=True, text=True)
    assert missing_out.returncode == 2 and "--out" in missing_out.stderr
    assert os.access(exe, os.X_OK)


def test_a_query_timeout_is_recorded_as_such_and_fails_the_trial(tmp_path: Path) -> None:
    plan = write(tmp_path / "tiny.toml",
                 TINY.replace('["none", "aes-256-gcm"]', '["none"]')
                 .replace('tests = ["power"]', 'tests = ["power"]\nquery_timeout_s = 0.001'))
    result = invoke("run", str(plan), "--out", str(tmp_path / "out"), "--quiet")
    assert result.exit_code == 1
    run = read_run(tmp_path / "out")
    answers = {m.answer for m in run.measurements if m.step.startswith("q")}
    assert "timeout" in answers
    timed_out = [m for m in run.measurements if m.answer == "timeout"]
    assert all(m.metrics["elapsed_s"] >= 0.001 for m in timed_out)
    assert [t.status for t in run.trials] == ["failed"]
    assert "query timeout" in run.trials[0].error


def test_an_adaptive_run_with_a_placebo_on_duckdb_adds_rounds_and_reports_its_noise_floor(tmp_path: Path) -> None:
    """Real DuckDB: no run meets a ±0.01% target, so the cap of 3 rounds stops it after adding
    one; the report says why and reads the placebo as the noise floor."""
    plan = TINY.replace("repetitions = 1", "repetitions = 2\nplacebo = true\ntarget_ci_pct = 0.01\n"
                        "max_repetitions = 3")
    out = tmp_path / "out"
    result = invoke("run", str(write(tmp_path / "adaptive.toml", plan)), "--out", str(out), "--quiet")
    assert result.exit_code == 0, result.output
    run = read_run(out)
    assert run.stopping is not None and run.stopping.reason == "max_repetitions reached" and run.stopping.rounds == 3
    assert sorted({(t.trial.encryption, t.trial.repetition) for t in run.trials}) == [
        (enc, rep) for enc in ("aes-256-gcm", "none", "placebo") for rep in (1, 2, 3)]
    assert all(v.as_expected for v in run.verdicts)  # the placebo is a second positive control
    report = (out / "report.md").read_text()
    assert "Adaptive repetitions stopped after 3 rounds: max\\_repetitions reached (widest headline CI ±" in report
    assert "duckdb noise floor (placebo: none against none, 3 rounds): power test " in report
    summary = (out / "summary.csv").read_text()
    assert ",placebo,tpch,0.01,power,geomean,elapsed_s," in summary and ",paired," in summary


def test_a_built_in_plan_by_name_and_an_unknown_one_listing_them(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # no file called servers here
    from tdebench.cli.plans import plan_path

    assert plan_path(Path("servers")).name == "servers.toml" and plan_path(Path("servers")).is_file()
    assert plan_path(Path("quick.toml")).is_file()
    assert plan_path(Path("mine/servers")) == Path("mine/servers")  # a path is taken as a path
    result = invoke("run", "nosuchplan", "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert "nosuchplan: cannot read plan" in text and "quick" in text
    from tdebench.cli.plans import builtin_plans

    assert f"built-in plans: {', '.join(builtin_plans())}" in text and "backup, backup-encryption, ciphers" in text


@pytest.mark.parametrize("interrupted", [True, False])
def test_an_error_after_ctrl_c_is_the_interrupt(tmp_path: Path, monkeypatch, interrupted: bool) -> None:
    """shutil.rmtree, interrupted while it closes a directory, raises "Bad file descriptor"
    instead of KeyboardInterrupt (a clean-clone CI run hit it during priming): after Ctrl-C any
    error ends the run as interrupted (exit 130); without Ctrl-C an error stays an error."""
    from tdebench.run import runner as runner_module
    from tdebench.measure import ciphers

    def failing_run(self):
        if interrupted:
            self.interrupted.set()
        raise OSError(9, "Bad file descriptor")

    monkeypatch.setattr(ciphers, "measure_ciphers", lambda **_: [])
    monkeypatch.setattr(runner_module.Runner, "run", failing_run)
    args = ["run", str(write(tmp_path / "tiny.toml", TINY)), "--out", str(tmp_path / "out"), "--quiet"]
    if interrupted:
        result = invoke(*args)
        assert result.exit_code == 130
        assert "interrupted" in result.output
        assert f"tdebench report {tmp_path / 'out'}" in result.output  # no report then: the command that writes it
    else:
        with pytest.raises(OSError, match="Bad file descriptor"):
            invoke(*args)


@pytest.fixture
def small_file_system(tmp_path: Path):
    """A 24 KiB tmpfs: room for a run's first records, not for the whole run."""
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24k", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_no_space_left_in_out_is_one_clear_line(small_file_system: Path, tmp_path: Path) -> None:
    out = small_file_system / "out"
    result = CliRunner().invoke(main, ["run", str(write(tmp_path / "tiny.toml", TINY)), "--out", str(out), "--quiet"],
                                catch_exceptions=False, terminal_width=10_000)
    assert result.exit_code == 2, result.output
    assert f"error: no space left on {small_file_system}" in result.output and "Traceback" not in result.output
    assert read_run(out).plan_text == STORED_TINY  # what was written stays readable (a torn last line is dropped)
    with open(small_file_system / "filler", "wb", buffering=0) as filler:  # whatever room is left
        try:
            while True:
                filler.write(b"\0" * 1024)
        except OSError:
            pass
    result = CliRunner().invoke(main, ["report", str(out)], catch_exceptions=False, terminal_width=10_000)
    assert result.exit_code == 2 and "no space left on" in result.output and "tdebench report" in result.output


def test_verify_on_a_file_it_may_not_read_is_one_line(tmp_path: Path, monkeypatch) -> None:
    """Root reads every file, so the refusal an unprivileged user meets is raised by hand here."""
    from tdebench import verify

    def refused(paths, canaries):
        raise PermissionError(13, "Permission denied", str(paths[0]))

    monkeypatch.setattr(verify, "verify_paths", refused)
    result = invoke("verify", str(tmp_path), "--canary", "abcdef")
    assert result.exit_code == 2
    assert result.output.strip() == f"error: cannot read {tmp_path}: Permission denied"


def test_compare_two_real_runs(tmp_path: Path) -> None:
    """Two runs of TINY in three rounds (so every timed figure has an interval), compared."""
    plan = write(tmp_path / "tiny.toml", TINY.replace("repetitions = 1", "repetitions = 3"))
    for name in ("a", "b"):
        result = invoke("run", str(plan), "--out", str(tmp_path / name), "--quiet")
        assert result.exit_code == 0, result.output
    printed = CliRunner().invoke(main, ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--markdown"],
                                 catch_exceptions=False, terminal_width=10_000)
    assert printed.exit_code == 0, printed.output
    assert "Traceback" not in printed.output and "## Only in one run" not in printed.output
    figures = ("power geomean", "data load elapsed", "database size")
    for encryption in ("none", "aes-256-gcm"):
        for figure in figures:
            assert f"| duckdb | {encryption} | tpch | 0.01 | {figure} |" in printed.output, (encryption, figure)
    overheads = printed.output.split("## Change of the overhead against none")[1]
    assert "| duckdb | aes-256-gcm | tpch | 0.01 | power geomean |" in overheads
    result = invoke("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "cmp"),
                    "--fail-above", "1000")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "cmp").iterdir()) == ["compare.csv", "compare.html", "compare.md"]
    with (tmp_path / "cmp" / "compare.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2 * len(figures)
    for row in rows:
        assert row["n_a"] == row["n_b"] == "3"
        expected = {"exact"} if row["figure"] == "database size" else {"slower", "faster", "within noise"}
        assert row["change_reading"] in expected, row


def test_a_piped_run_prints_a_line_per_phase_and_trial_that_fits_80_columns(tmp_path: Path) -> None:
    """Piped (no terminal: a line per phase and trial, no bar) in an 80-column setting, with a
    trial id long enough to wrap: a line per phase and trial, and every line of the run's output
    fits (but the report's path, kept whole on its line so it can be copied), its closing
    sentences wrapped between words."""
    plan = write(tmp_path / "a-plan-with-a-long-name.toml", TINY.replace('["none", "aes-256-gcm"]',
                                                                           '["none", "aes-256-gcm-plaintemp"]'))
    exe = Path(sys.executable).with_name("tdebench")
    ran = subprocess.run([exe, "run", str(plan), "--out", str(tmp_path / "out")], capture_output=True, text=True,
                         env={**os.environ, "COLUMNS": "80"}, timeout=600)
    assert ran.returncode in (0, 1), ran.stderr  # 1: a -plaintemp trial whose spill is plaintext
    lines = (ran.stdout + ran.stderr).splitlines()
    assert "measuring this machine's raw cipher throughput…" in lines
    assert any(line.startswith("[1/2] duckdb/") and ": ok in " in line for line in lines), lines
    assert any(line.startswith("[2/2] duckdb/") and line.endswith(("plaintext", "encrypted")) for line in lines)
    assert "In one minute:" in lines
    assert f"report: {(tmp_path / 'out').resolve() / 'report.html'}" in lines
    too_long = [line for line in lines if len(line) > 80]
    assert too_long == [f"report: {(tmp_path / 'out').resolve() / 'report.html'}"] or not too_long, too_long
    # the plan's one cipher (the -plaintemp variant's is AES-256-GCM), at every page size (`tdebench
    # ciphers` measures them all)
    assert {(s.cipher, s.chunk_bytes) for s in read_run(tmp_path / "out").ciphers} == {
        ("aes-256-gcm", size) for size in PAGE_SIZES}
