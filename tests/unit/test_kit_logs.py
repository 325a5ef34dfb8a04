"""The kit's log parsers on logs in each client's documented format: several statements, an
error, an empty result and a time past a minute (fixtures in tests/fixtures/kit/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tdebench.kit import logs

FIXTURES = Path(__file__).parent.parent / "fixtures" / "kit"


@pytest.mark.parametrize("tool", logs.TOOLS)
def test_each_step_gets_its_time_an_error_fails_it_and_an_empty_result_counts(tool: str) -> None:
    steps = logs.parse(tool, (FIXTURES / f"{tool}.log").read_text())
    assert [step.key for step in steps] == [("power", 0, "1", f"q{n}") for n in (14, 2, 9)]
    q14, q2, q9 = steps
    assert q14.elapsed_s == pytest.approx({"sqlcmd": 0.069, "sqlplus": 0.05, "mysql": 0.05}[tool])
    assert not q14.failed and not q9.failed
    assert q2.failed and q2.error.startswith({"sqlcmd": "Msg 208", "sqlplus": "ORA-00942",
                                              "mysql": "ERROR 1146"}[tool])
    assert q9.elapsed_s == pytest.approx({"sqlcmd": 1.251, "sqlplus": 62.5, "mysql": 62.5}[tool])  # no rows


def test_sqlcmd_reports_the_servers_cpu_and_skips_informational_messages() -> None:
    q14, q2, q9 = logs.parse("sqlcmd", (FIXTURES / "sqlcmd.log").read_text())
    assert q14.cpu_s == pytest.approx(0.062) and q9.cpu_s == pytest.approx(1.203)
    assert q2.elapsed_s is None and q9.error == ""  # Msg 3621 is level 0


@pytest.mark.parametrize("line, seconds", [
    ("3 rows in set (0.01 sec)", 0.01), ("Empty set (0.000 sec)", 0.0),
    ("Query OK, 1 row affected, 1 warning (0.03 sec)", 0.03), ("2 rows in set (1 hour 1 min 1.00 sec)", 3661.0),
    ("1 row in set (1 day 2 hours 3 min 4.567 sec)", 93784.567), ("Query OK, 0 rows affected (5 sec)", 5.0),
])
def test_mysql_times_in_every_form_the_client_prints(line: str, seconds: float) -> None:
    text = f"tdebench-step power 0 1 q1\n1 row in set (0.00 sec)\n{line}\n"  # the marker's own timing first
    (step,) = logs.parse("mysql", text)
    assert step.elapsed_s == pytest.approx(seconds)


def test_a_step_without_timing_is_failed_and_steps_before_markers_are_ignored() -> None:
    text = "Elapsed: 00:00:09.00\ntdebench-step load 0 1 region\nTable created.\n"
    (step,) = logs.parse("sqlplus", text)
    assert step.elapsed_s is None and step.failed


def test_timings_of_a_multi_statement_step_add_up() -> None:
    text = "tdebench-step load 0 1 indexes\n" + "Index created.\n\nElapsed: 00:00:01.25\n" * 3
    (step,) = logs.parse("sqlplus", text)
    assert step.elapsed_s == pytest.approx(3.75)


def test_unknown_tool_is_refused() -> None:
    with pytest.raises(ValueError, match="valid: sqlcmd, sqlplus, mysql"):
        logs.parse("psql", "")
