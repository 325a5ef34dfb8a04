"""Bad input at the command line's edge: one line, exit 2, no traceback,
nothing written; Ctrl-C anywhere is exit 130; a cut or empty results.jsonl is never a silent
success."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from fakes import write_fake_run
from tdebench.cli import main
from tdebench.measure import ciphers
from tdebench.results import FORMAT
from tdebench.store import MANIFEST, RESULTS


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("data_dir", ["a-file", "a-file/below"])
def test_a_data_dir_that_cannot_be_used_is_refused_before_the_run_directory(tmp_path: Path, data_dir: str) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    done = invoke("run", "quick", "--out", str(tmp_path / "out"), "--data-dir", str(tmp_path / data_dir))
    assert done.exit_code == 2, done.output
    assert f"--data-dir {tmp_path / data_dir}" in done.output and "Traceback" not in done.output
    assert not (tmp_path / "out").exists()


def test_a_canary_that_is_not_utf8_is_bad_input_not_plaintext_found(tmp_path: Path) -> None:
    (tmp_path / "data").write_bytes(b"x" * 4096)
    done = invoke("verify", str(tmp_path / "data"), "--canary", b"\xff\xfe\xfdab".decode("utf-8", "surrogateescape"))
    assert done.exit_code == 2, done.output
    assert "is not UTF-8 text" in done.output


@pytest.mark.parametrize("seconds", ["nan", "inf", "-1", "0"])
def test_ciphers_refuses_seconds_that_are_not_a_positive_finite_time(seconds: str) -> None:
    done = invoke("ciphers", "--seconds", seconds)
    assert done.exit_code == 2, done.output
    assert f"--seconds {float(seconds):g}" in done.output


def test_ctrl_c_during_ciphers_is_exit_130(monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(**_: object) -> list:
        raise KeyboardInterrupt

    monkeypatch.setattr(ciphers, "measure_ciphers", interrupted)
    done = invoke("ciphers")
    assert done.exit_code == 130 and "interrupted" in done.output and "Aborted" not in done.output


def test_report_names_a_half_written_last_line(tmp_path: Path) -> None:
    write_fake_run(tmp_path)
    lines = (tmp_path / RESULTS).read_bytes().splitlines(keepends=True)
    (tmp_path / RESULTS).write_bytes(b"".join(lines[:-1]) + lines[-1][:25])
    done = invoke("report", str(tmp_path))
    assert done.exit_code == 0, done.output
    assert f"{tmp_path / RESULTS}:{len(lines)}: a half-written last line" in " ".join(done.output.split())


def test_report_warns_of_a_run_without_its_manifest_read_in_the_oldest_format(tmp_path: Path) -> None:
    """A run copied without manifest.json is read as one from before manifests: said, not silent."""
    write_fake_run(tmp_path)
    assert "no manifest.json" not in " ".join(invoke("report", str(tmp_path)).output.split())
    (tmp_path / MANIFEST).unlink()
    done = invoke("report", str(tmp_path))
    assert done.exit_code == 0, done.output
    assert (f"warning: {tmp_path} has no manifest.json: its records are read in the oldest raw format"
            in " ".join(done.output.split()))


@pytest.mark.parametrize("command", ["report", "compare"])
def test_a_run_without_a_trial_is_exit_2(tmp_path: Path, command: str) -> None:
    write_fake_run(tmp_path / "a")
    write_fake_run(tmp_path / "b")
    (tmp_path / "b" / RESULTS).write_text("")
    done = invoke(command, *([str(tmp_path / "a")] if command == "compare" else []), str(tmp_path / "b"))
    assert done.exit_code == 2, done.output
    assert "holds no trial" in done.output


def test_a_line_of_invalid_utf8_is_exit_2_with_file_and_line(tmp_path: Path) -> None:
    write_fake_run(tmp_path)
    lines = (tmp_path / RESULTS).read_bytes().splitlines(keepends=True)
    (tmp_path / RESULTS).write_bytes(lines[0] + b"\xff\xfe\n" + b"".join(lines[1:]))
    done = invoke("report", str(tmp_path))
    assert done.exit_code == 2 and f"{tmp_path / RESULTS}:2: not valid UTF-8" in " ".join(done.output.split())


def test_an_input_error_no_command_caught_is_one_line_and_its_exit_code(monkeypatch: pytest.MonkeyPatch) -> None:
    """The error base (errors.InputError) is caught once, in the CLI: a SetupError from a place
    no command expected ends as a one-line error and exit 2, not a traceback."""
    from tdebench import plan
    from tdebench.run.setup import SetupError

    def broken(*_: object) -> list:
        raise SetupError("the engines moved")

    monkeypatch.setattr(plan, "schedule", broken)
    done = invoke("plans")
    assert done.exit_code == 2 and done.output.strip() == "error: the engines moved", done.output


def newer_run(directory: Path) -> Path:
    """A fake run whose manifest says a tdebench newer than this one wrote it."""
    write_fake_run(directory)
    manifest = json.loads((directory / MANIFEST).read_text())
    (directory / MANIFEST).write_text(json.dumps({**manifest, "format": FORMAT + 94}))
    return directory


@pytest.mark.parametrize("command", ["report", "compare-a", "compare-b", "resume"])
def test_a_run_in_a_newer_format_is_refused_in_one_line(tmp_path: Path, command: str) -> None:
    """Its records may hold what this tdebench would misread or drop: report, compare and
    run --resume refuse it (exit 2) and write nothing, instead of reading it as if it were theirs."""
    newer = newer_run(tmp_path / "newer")
    before = {path.name: path.read_bytes() for path in newer.iterdir()}
    if command == "resume":
        done = invoke("run", "--resume", str(newer))
    elif command == "report":
        done = invoke("report", str(newer))
    else:
        write_fake_run(tmp_path / "current")
        runs = [str(newer), str(tmp_path / "current")]
        done = invoke("compare", *(runs if command == "compare-a" else runs[::-1]))
    assert done.exit_code == 2, done.output
    said = " ".join(done.output.split())
    assert f"{newer}: written by a newer tdebench: format {FORMAT + 94}, this one reads up to {FORMAT}" in said
    assert len(done.output.strip().splitlines()) <= 2 and "Traceback" not in done.output  # one line, maybe wrapped
    assert {path.name: path.read_bytes() for path in newer.iterdir()} == before
