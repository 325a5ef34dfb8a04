"""Malformed plans and damaged records through the real command line: every one is exit 2
with one line that names the file (and line), never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fakes import write_fake_run
from tdebench.cli import main
from tdebench.plan import PlanError, parse_plan
from tdebench.store import RESULTS, read_run

BASE = {
    "top": 'name = "fuzz"\nrepetitions = 2\nwarmups = 0\nseed = 3\ncache = "warm"\n',
    "engine": '[[engines]]\nname = "duckdb"\nencryptions = ["none", "aes-256-gcm"]\nmemory_mb = 64\n',
    "workload": '[[workloads]]\nname = "tpch"\nscale = 0.01\ntests = ["power"]\n',
}
KEYS = {"top": ["name", "repetitions", "warmups", "seed", "cache", "order", "placebo", "target_ci_pct",
                "max_minutes", "sample_interval_s", "pin_cpus"],
        "engine": ["name", "encryptions", "memory_mb"],
        "workload": ["name", "scale", "scales", "tests", "streams", "query_timeout_s", "passes"]}
WRONG = ['"[/]"', "-1", "1e30", "[]", "{ a = 1 }", "true", '"x" ', "0.5", '["[red]x"]', '"' + "a" * 5000 + '"']


def plan_text(part: str | None = None, key: str | None = None, value: str | None = None) -> str:
    """The base plan, with `key` of one part set to `value` (added if absent)."""
    parts = dict(BASE)
    if part is not None:
        lines = [line for line in parts[part].splitlines() if not line.startswith(f"{key} =")]
        lines.insert(1 if part != "top" else 0, f"{key} = {value}")
        parts[part] = "\n".join(lines) + "\n"
    return parts["top"] + "\n" + parts["engine"] + "\n" + parts["workload"]


def malformed_plans() -> list[tuple[str, bytes]]:
    cases = [(f"{part}.{key}={value[:12]}", plan_text(part, key, value).encode())
             for part, keys in KEYS.items() for key in keys for value in WRONG]
    base = plan_text()
    cases += [
        ("non-utf8", base.replace("fuzz", "fu\udcffzz").encode("utf-8", "surrogateescape")),
        ("no engines", (BASE["top"] + BASE["workload"]).encode()),
        ("no workloads", (BASE["top"] + BASE["engine"]).encode()),
        ("workload without name", (BASE["top"] + BASE["engine"] + "[[workloads]]\nscale = 0.01\n").encode()),
        ("engine twice", (base + BASE["engine"]).encode()),
        ("engines as a table", base.replace("[[engines]]", "[engines]").encode()),
        ("unclosed string", base.replace('"fuzz"', '"fuzz').encode()),
        ("empty", b""),
        ("binary", bytes(range(256))),
        *[(f"cut at {n}", base.encode()[:n]) for n in (5, 30, 60, 100, 140)],
    ]
    return cases


def invalid(text: bytes) -> bool:
    try:
        parse_plan(text.decode("utf-8"))
    except (PlanError, UnicodeDecodeError):
        return True
    return False


def one_error_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), output[:3000]
    assert "Traceback" not in output
    return lines[0]


def test_malformed_plans_exit_2_with_one_line(tmp_path: Path) -> None:
    cases = [(name, text) for name, text in malformed_plans() if invalid(text)]
    assert len(cases) >= 50  # the valid mutations (a wrong value that happens to fit) are skipped
    runner = CliRunner()
    for number, (name, text) in enumerate(cases):
        plan = tmp_path / f"plan{number}.toml"
        plan.write_bytes(text)
        result = runner.invoke(main, ["run", str(plan), "--out", str(tmp_path / f"out{number}")],
                               catch_exceptions=False, terminal_width=100_000)
        assert result.exit_code == 2, (name, result.output)
        line = one_error_line(result.output)
        assert str(plan) in line, (name, line)
        assert len(line) < 3000, (name, len(line))
        assert not (tmp_path / f"out{number}").exists(), name


def test_a_plan_name_with_markup_is_printed_as_written(tmp_path: Path) -> None:
    plan = tmp_path / "p.toml"
    plan.write_text(plan_text("engine", "name", '"[/]"'))
    result = CliRunner().invoke(main, ["run", str(plan), "--out", str(tmp_path / "o")], catch_exceptions=False)
    assert "unknown name '[/]'" in one_error_line(result.output)
    plan.write_text(BASE["top"] + BASE["workload"])
    result = CliRunner().invoke(main, ["run", str(plan), "--out", str(tmp_path / "o")], catch_exceptions=False)
    assert "the plan has no [[engines]]" in one_error_line(result.output)


def damaged_records(line: dict) -> list[dict]:
    """Every field of a record removed, and set to values of the wrong type."""
    out = []
    for key in line:
        without = {k: v for k, v in line.items() if k != key}
        out.append(without)
        for wrong in (None, "x", [], {}, True, [1, "a"]):
            if wrong != line[key]:
                out.append({**line, key: wrong})
    return out


def test_damaged_records_exit_2_with_one_line(tmp_path: Path) -> None:
    good = tmp_path / "good"
    good.mkdir()
    write_fake_run(good)
    lines = (good / RESULTS).read_text().splitlines()
    firsts: dict[str, int] = {}
    for index, line in enumerate(lines[:-1]):  # not the last: a torn last line is forgiven on purpose
        firsts.setdefault(json.loads(line)["kind"], index)
    runner = CliRunner()
    checked, fitting = 0, []
    for kind, index in firsts.items():
        for number, damaged in enumerate(damaged_records(json.loads(lines[index]))):
            run = tmp_path / f"{kind}{number}"
            run.mkdir()
            for name in ("plan.toml", "environment.json"):
                (run / name).write_bytes((good / name).read_bytes())
            (run / RESULTS).write_text("\n".join([*lines[:index], json.dumps(damaged), *lines[index + 1:]]) + "\n")
            try:
                read_run(run)
            except ValueError:
                pass
            else:  # a value that still fits (an optional field removed or None, as in older runs)
                fitting.append(run)
                continue
            result = runner.invoke(main, ["report", str(run)], catch_exceptions=False, terminal_width=100_000)
            assert result.exit_code == 2, (kind, damaged, result.output)
            assert f"{RESULTS}:{index + 1}: not a tdebench record" in one_error_line(result.output)
            checked += 1
    assert checked >= 50
    for run in fitting[:1]:  # a record that fits (an optional field left out) still makes a report
        assert runner.invoke(main, ["report", str(run)], catch_exceptions=False).exit_code == 0


def test_a_record_that_is_not_an_object_and_bad_json(tmp_path: Path) -> None:
    write_fake_run(tmp_path)
    lines = (tmp_path / RESULTS).read_text().splitlines()
    for bad in ("[1, 2]", "{not json", '"text"'):
        (tmp_path / RESULTS).write_text("\n".join([bad, *lines]) + "\n")
        result = CliRunner().invoke(main, ["report", str(tmp_path)], catch_exceptions=False)
        assert result.exit_code == 2 and f"{RESULTS}:1:" in one_error_line(result.output)


@pytest.mark.parametrize("broken", ["environment.json", "plan.toml"])
def test_a_missing_raw_file_is_named(tmp_path: Path, broken: str) -> None:
    write_fake_run(tmp_path)
    (tmp_path / broken).unlink()
    result = CliRunner().invoke(main, ["report", str(tmp_path)], catch_exceptions=False)
    assert result.exit_code == 2 and broken in one_error_line(result.output)
