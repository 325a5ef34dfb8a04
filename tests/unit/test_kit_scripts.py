"""The script kit's scripts: every T-SQL, Oracle and MySQL statement parses with sqlglot's
dialect (a few administrative statements sqlglot has no grammar for are named below), markers
follow the spec's stream orders, no secret is written, and the plan's mistakes are reported
with their line and the valid choices."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel

from tdebench.engines import KIT, sqlserver
from tdebench.kit import importer, scripts, targets
from tdebench.plan import PlanError
from tdebench.store import read_run
from tdebench.workloads.tpch import streams

UNPARSED = {  # statements sqlglot 30 cannot parse in the dialect; each checked by reading it against the docs
    "tsql": ("BULK INSERT", "DECLARE @state"),  # BULK INSERT; the WHILE loop waiting for encryption_state 3
    "oracle": ("DECLARE", "BEGIN"),  # PL/SQL blocks: the keystore check, DBMS_STATS
    "mysql": ("LOAD DATA",),  # run for real on MariaDB: tests/integration/test_kit_mariadb.py
}
SQLPLUS_COMMANDS = ("SET ", "PROMPT ", "WHENEVER ", "EXIT", "DEFINE ")
PLAN = """
name = "t"
repetitions = 2
warmups = 1
[[engines]]
name = "duckdb"
[[workloads]]
name = "tpch"
scale = 0.01
tests = ["power", "throughput"]
streams = 2
"""


def statements(tool: str, text: str) -> list[str]:
    """A script split as its client splits it, without the client's own commands and comments."""
    lines = [line for line in text.splitlines() if not line.startswith("--")]
    found, current = [], []
    for line in lines:
        if tool == "sqlcmd":
            if line == "GO":
                found.append("\n".join(current))
                current = []
            elif not line.startswith(":"):
                current.append(line)
        elif tool == "sqlplus":
            if not current and line.startswith(SQLPLUS_COMMANDS):
                continue
            if line == "/":
                found.append("\n".join(current))
                current = []
            elif line.endswith(";") and not current_is_block(current, line):
                found.append("\n".join([*current, line[:-1]]))
                current = []
            else:
                current.append(line)
        else:
            current.append(line)
            if line.endswith(";"):
                found.append("\n".join(current)[:-1])
                current = []
    assert not "".join(current).strip(), f"text after the last statement: {current}"
    return found


def current_is_block(current: list[str], line: str) -> bool:
    """Whether the statement being read is a PL/SQL block, which only a `/` line ends."""
    return (current[0] if current else line).startswith(("DECLARE", "BEGIN"))


def kit_scripts(engine: str) -> list[tuple[scripts.Script, str]]:
    target = targets.target(engine)
    plan = scripts.read_plan(PLAN, "plan.toml", target)
    return [(script, scripts.render(target, items, "test"))
            for encryption in plan.encryptions
            for script, items in scripts.trial_scripts(target, plan, 0.01, encryption, ["TDEBENCH-CANARY-a"],
                                                       ["TDEBENCH-MARKER-a"])]


@pytest.mark.parametrize("engine", KIT)
def test_every_statement_parses_with_the_dialect(engine: str) -> None:
    target = targets.target(engine)
    unparsed, parsed = set(), 0
    for script, text in kit_scripts(engine):
        for statement in statements(target.tool, text):
            try:
                trees = sqlglot.parse(statement, read=target.dialect, error_level=ErrorLevel.RAISE)
            except sqlglot.errors.ParseError:
                prefix = next((p for p in UNPARSED[target.dialect] if statement.startswith(p)), None)
                assert prefix, f"{script.file}: sqlglot cannot parse {statement[:200]!r}"
                unparsed.add(prefix)
                continue
            parsed += 1
            # the schema and the 22 queries must be real trees (an external table is a Command)
            if statement.startswith(("CREATE TABLE ", "SELECT\n", "WITH")) and "ORGANIZATION EXTERNAL" not in statement:
                assert not any(isinstance(tree, exp.Command) for tree in trees), f"{script.file}: {statement[:200]}"
    assert unparsed == set(UNPARSED[target.dialect]) and parsed > 22


@pytest.mark.parametrize("engine", KIT)
def test_markers_follow_the_spec_orders_with_warmups_first(engine: str) -> None:
    by_file = {script.file.rsplit("/", 1)[1]: text for script, text in kit_scripts(engine) if "/none/" in script.file}
    power = re.findall(r"tdebench-step power 0 (\S+) q(\d+)", by_file["05-power.sql"])
    assert power == [(label, str(q)) for label in ("w1", "1", "2")[:2] for q in streams.POWER_ORDER]
    stream_2 = re.findall(r"tdebench-step throughput 2 1 q(\d+)", by_file["06-throughput-1-s2.sql"])
    assert stream_2 == [str(q) for q in streams.stream_order(2)]


def test_no_secret_is_written_only_the_clients_variables() -> None:
    texts = "\n".join(text for _, text in kit_scripts("sqlserver"))
    assert re.findall(r"PASSWORD = '([^']*)'", texts) == ["$(MASTER_KEY_PASSWORD)"] * 4  # aes-128/192/256, 3des-168
    oracle = "\n".join(text for _, text in kit_scripts("oracle"))
    assert "IDENTIFIED BY" not in oracle and "&TDEBENCH_DATAFILE" in oracle


def test_plan_mistakes_name_the_line_and_the_valid_choices() -> None:
    bad = PLAN + '[[engines]]\nname = "oracle"\nencryptions = ["aes-512"]\n'
    with pytest.raises(PlanError, match=r"plan.toml:14: .*no encryption 'aes-512'; valid: none, aes-128, aes-192, "
                                        r"aes-256, 3des-168"):
        scripts.read_plan(bad, "plan.toml", targets.ORACLE)
    with pytest.raises(PlanError, match="runs the tpch workload; this plan has crud"):
        scripts.read_plan(PLAN.replace('"tpch"', '"crud"').replace('tests = ["power", "throughput"]\nstreams = 2', ""),
                          "plan.toml", targets.MYSQL)


def test_import_fails_a_query_with_an_error_and_names_a_missing_log(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scripts.data, "generate", lambda scale, directory: {t: Path(t) for t in scripts.schema.TABLES})
    monkeypatch.setattr(scripts, "parquet_to_csv", lambda *args, **kwargs: 0)
    kit = tmp_path / "kit"
    plan = scripts.read_plan(PLAN.replace("repetitions = 2", "repetitions = 1"), "plan.toml", targets.MYSQL)
    (trial, *_) = scripts.write_kit(targets.MYSQL, plan, PLAN, kit, tmp_path / "data")
    for each in scripts.read_kit(kit)["trials"]:
        logs = kit / scripts.LOGS / each.directory / "r1"
        logs.mkdir(parents=True)
        for script in each.scripts:
            markers = re.findall(r"tdebench-step [^']+", (kit / script.file).read_text())
            (logs / script.log).write_text("".join(
                f"{marker}\n1 row in set (0.00 sec)\n"
                + ("ERROR 1146 (42S02) at line 9: no table\n" if marker.endswith("power 0 1 q9")
                   else "3 rows in set (0.25 sec)\n")
                for marker in markers))
    imported = importer.import_kit(kit, "mysql", tmp_path / "run")
    assert imported.trials == 2 and len(imported.failed) == 2 and "q9: ERROR 1146" in imported.failed[0]
    run = read_run(tmp_path / "run")
    q9 = [m for m in run.measurements if m.step == "q9" and m.test == "power" and not m.warmup]
    assert [m.answer for m in q9] == ["failed", "failed"] and all(m.imported_from == "mysql" for m in q9)
    assert {m.answer for m in run.measurements if m.test == "power" and m.step not in ("q9", "total")} == {"unchecked"}
    assert not [m for m in run.measurements if m.step == "total" and m.test == "power" and not m.warmup]
    warm_totals = [m for m in run.measurements if m.step == "total" and m.test == "power" and m.warmup]
    assert [m.metrics["elapsed_s"] for m in warm_totals] == [pytest.approx(5.5)] * 2  # 22 x 0.25 s
    setup = kit / scripts.LOGS / trial.directory / "r1" / "01-setup.log"
    setup.unlink()
    with pytest.raises(FileNotFoundError, match=f"log {setup} is missing"):
        importer.import_kit(kit, "mysql", tmp_path / "run2")


def test_sqlserver_kit_drops_the_master_key_only_when_its_setup_made_it() -> None:
    """The kit's SQL Server TDE is the engine by url's: a certificate named after the database, and a
    master key made only if the instance has none, recorded in the certificate so the teardown drops
    it then and only then (its scripts share nothing else)."""
    setup = [item.text for item in targets.SQLSERVER.setup("aes-256")]
    teardown = [item.text for item in targets.SQLSERVER.teardown("aes-256")]
    made = f"SUBJECT = '{sqlserver.MADE_MASTER_KEY}'"
    assert any("CREATE MASTER KEY" in s and made in s and f"[{targets.DATABASE}]" in s for s in setup)
    (last,) = [s for s in teardown if "MASTER KEY" in s]
    assert last == teardown[-1] and sqlserver.MADE_MASTER_KEY in last and "DROP MASTER KEY" in last
    assert not any("MASTER KEY" in item.text for item in targets.SQLSERVER.teardown("none"))
