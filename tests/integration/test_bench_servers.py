"""The bench/ scripts that start database servers (PostgreSQL, MariaDB; each its own, with its
own data) run at tiny settings and print what their docstrings promise; test_bench_scripts.py
runs the others. Speed is not checked: only that each one runs to the end and prints its table
or ratios."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from bench_runs import BENCH, run


def test_oltp_driver_prints_threads_processes_and_psycopgs_pipeline_side_by_side() -> None:
    out = run("oltp_driver.py", "--engine", "postgres", "--client", "--users", "1", "2", "--duration", "1",
              "--rampup", "0.3", "--paths", "threads", "processes", "processes+psycopg-pipeline", timeout=180)
    for users in (1, 2):
        assert re.search(rf"^\| {users} \| threads \| [\d,]+ \| [\d,]+ \|  \|", out, re.M), out
        for path in ("processes", "processes\\+psycopg-pipeline"):
            assert re.search(rf"^\| {users} \| {path} \| [\d,]+ \| [\d,]+ \| \d+\.\d\d× \|", out, re.M), out
    assert "NOPM of processes over threads, per users: 1: " in out
    assert "threads: NOPM from" in out and "processes+psycopg-pipeline: NOPM from" in out


def test_oltp_driver_compares_batched_client_side_statements_with_unbatched_ones() -> None:
    """The paired ratio of two rounds, with its interval, and the machine's load average."""
    out = run("oltp_driver.py", "--engine", "mariadb", "--client", "--users", "2", "--duration", "1", "--rampup",
              "0.3", "--rounds", "2", "--paths", "processes+unbatched", "processes", timeout=240)
    assert re.search(r"^\| 2 \| processes\+unbatched \| [\d,]+ \| [\d,]+ \|  \|", out, re.M), out
    ratio = r"\d+\.\d\d× \[\d+\.\d\d, \d+\.\d\d\]"  # of the two rounds, with its interval
    assert re.search(rf"^\| 2 \| processes \| [\d,]+ \| [\d,]+ \| {ratio} \|", out, re.M), out
    assert "NOPM of processes over processes+unbatched, per users: 2: " in out
    assert re.search(r"^load average after the runs: [\d.]+ [\d.]+ [\d.]+$", out, re.M), out


def test_benchbase_without_a_benchbase_says_so_and_exits_2(tmp_path: Path) -> None:
    for args, said in (((), "no BenchBase: pass --benchbase DIR"),
                       (("--benchbase", str(tmp_path)), f"{tmp_path}: no BenchBase build")):
        result = subprocess.run([sys.executable, str(BENCH / "benchbase.py"), *args], capture_output=True,
                                text=True, timeout=60)
        assert result.returncode == 2, result.stdout + result.stderr
        assert said in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_benchbase_runs_tdebench_side_alone() -> None:
    # one number of terminals: a row per mode of it; the loop over more is the same code
    out = run("benchbase.py", "--engine", "postgres", "--only", "tdebench", "--terminals", "1",
              "--duration", "1", "--rampup", "1", "--rounds", "2", timeout=240)
    for mode in ("client", "procedures"):
        assert re.search(rf"^\| 1 \| {mode} \| [\d,]+ \| [\d,]+ \|  \| \d+\.\d \| \d+\.\d \| \d+% \|$",
                         out, re.M), out
    assert "benchbase" not in out.split("| terminals |")[1], out  # no BenchBase row without BenchBase
    assert re.search(r"^load average after the runs: [\d.]+ [\d.]+ [\d.]+$", out, re.M), out


def test_oltp_foreign_keys_prints_both_schemas_and_their_paired_ratios() -> None:
    out = run("oltp_foreign_keys.py", "--users", "1", "--duration", "1", "--rampup", "0.5", "--rounds", "2",
              "--client", timeout=240)
    assert re.search(r"^\| 1 \| without \| [\d,]+ \| [\d,]+ \| \d+\.\d+ \| \d+\.\d+ \|  \|  \|$", out, re.M), out
    assert re.search(r"^\| 1 \| with foreign keys \| [\d,]+ \| [\d,]+ \| \d+\.\d+ \| \d+\.\d+ "
                     r"\| \d+\.\d+× \[[\d.]+, [\d.]+\] \| \d+\.\d+× \[[\d.]+, [\d.]+\] \|$", out, re.M), out


def test_mariadb_temp_tables_prints_the_layout_of_every_temp_table_beside_an_encrypted_control() -> None:
    out = run("mariadb_temp_tables.py", "--copies", "30", "--encryptions", "aes-256-cbc")
    assert re.search(r"^aes-256-cbc: .*encrypt_tmp_disk_tables=ON", out, re.M), out
    for label in ("GROUP BY", "DISTINCT", "window (spill test)"):
        assert re.search(rf"^  {re.escape(label)} \([\d.]+ s\):\n    (temp table #sql|no temp table)", out, re.M), out
    # the control: a user's Aria table under aria_encrypt_tables is encrypted, and its layout says so
    assert re.search(r"^  control, a user-created Aria table: [\d,]+ pages \(random LSN [\d,]+\), 0 canary hits$",
                     out, re.M), out


def test_plan_stability_prints_each_databases_plans_and_mariadbs_are_the_same() -> None:
    """Two loads of the same data on tdebench's MariaDB, which reads every leaf page when it analyzes:
    the same plan for every query (sampled, Q18's join order differed between loads)."""
    out = run("plan_stability.py", "--scale", "0.01", "--databases", "2")
    assert len(re.findall(r"^database [12]: (q\d+:[0-9a-f]{4} ?){22}$", out, re.M)) == 2, out
    assert re.search(r"^mariadb TPC-H SF 0\.01, 2 databases loaded one after the other, "
                     r"innodb_stats_persistent_sample_pages = 4294967295: 0 of 22 queries' plans differ between them$",
                     out, re.M), out


def test_interrupt_latency_prints_a_row_per_delay() -> None:
    """Speed is not checked here (test_interrupt_statements.py bounds it): a row with the exit
    code 130 and nothing of the run left."""
    out = run("interrupt_latency.py", "--scale", "0.01", "--repetitions", "1", "--delays", "1", timeout=300)
    assert re.search(r"^\s+1 s\s+\d+\.\d s\s+\d+\.\d s\s+130  -$", out, re.M), out
