"""The script kit for real: the MySQL kit's `none` scripts (the syntax MariaDB shares: setup,
schema, LOAD DATA LOCAL, canaries, power test, teardown) run by the kit's own run.sh through
the `mariadb` client on a private MariaDB server, with timing on; the logs imported and the
report built from them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from click.testing import CliRunner

from tdebench.cli import main
from tdebench.engines import get_engine
from tdebench.kit.importer import WORKLOAD
from tdebench.store import read_run
from tdebench.workloads.tpch.schema import TABLES
from tdebench.workloads.tpch.streams import POWER_ORDER

PLAN = """
name = "kit-mariadb"
repetitions = 1
warmups = 0
[[engines]]
name = "mysql"
encryptions = ["none"]
[[workloads]]
name = "tpch"
scale = 0.01
tests = ["power"]
"""


def test_mysql_kit_runs_on_mariadb_and_imports(server_tmp_dir: Path, tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    kit = tmp_path / "kit"
    made = CliRunner().invoke(main, ["script", str(plan), "--engine", "mysql", "--out", str(kit)],
                              catch_exceptions=False)
    assert made.exit_code == 0, made.output
    engine = get_engine("mariadb")
    database = engine.provision(server_tmp_dir / "mariadb", engine.encryption("none"), None)
    try:
        database.create()
        database.connect().close()
        with database._client_options() as options:  # the server's root login, 0600, for this test's client
            ran = subprocess.run([str(kit / "run.sh")], capture_output=True, text=True, timeout=300,
                                 env={**os.environ, "CLIENT": f"mariadb --defaults-file={options}"})
    finally:
        database.close()
    assert ran.returncode == 0, ran.stderr + "".join(p.read_text() for p in sorted((kit / "logs").rglob("*.log")))
    power_log = (kit / "logs/sf0.01/none/r1/05-power.log").read_text()
    assert "rows in set (" in power_log  # the client's timing was on

    run = tmp_path / "run"
    imported = CliRunner().invoke(main, ["import", str(kit), "--engine", "mysql", "--out", str(run)],
                                  catch_exceptions=False)
    assert imported.exit_code == 0, imported.output
    data = read_run(run)
    queries = [m for m in data.measurements if m.test == "power" and m.step.startswith("q")]
    assert [m.step for m in queries] == [f"q{n}" for n in POWER_ORDER]
    assert all(m.answer == "unchecked" and m.imported_from == "mysql" and m.trial.workload == WORKLOAD
               for m in queries)
    assert sum(m.metrics["elapsed_s"] for m in queries) > 0
    load = {m.step: m.metrics["elapsed_s"] for m in data.measurements if m.test == "load"}
    assert set(load) == {*TABLES, "tables", "indexes", "total"} and load["total"] > 0
    assert [t.status for t in data.trials] == ["ok"]
    assert data.verdicts == []  # tdebench scanned nothing
    report = (run / "report.md").read_text()
    assert "Imported from mysql console logs" in report
