"""Every script in bench/ runs at tiny settings and prints what its docstring promises, so a
change to the code it drives cannot break it unnoticed (harness_overhead.py once stopped
running when `Workload.prepare` gained its `seed`). Speed is not checked: only that each one
runs to the end and prints its table or ratios."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def run(script: str, *args: str, timeout: float = 120) -> str:
    result = subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_harness_overhead_prints_both_ratios() -> None:
    out = run("harness_overhead.py", "--scale", "0.01", "--rounds", "2")
    assert "scale 0.01, 2 interleaved rounds" in out
    for label in ("measured", "wall clock"):
        assert re.search(rf"^{label}\s*: tdebench .* ms, bare loop .* ms, ratio \d+\.\d+ \(", out, re.M), out
    assert len(re.findall(r"^\s+paired: median of the 2 rounds' own ratios \d+\.\d+ \[", out, re.M)) == 2, out


def test_precision_prints_every_arm_and_the_paired_overhead() -> None:
    arms = ("reference", "threads-1", "gc-paused", "harness")
    out = run("precision.py", "--scale", "0.01", "--rounds", "2", "--repeats", "2", "--busy-pairs", "1",
              "--arms", *arms)
    for arm in arms:
        assert re.search(rf"^{arm}\s+2\s+\d+\.\d+ms ", out, re.M), out
    assert re.search(r"^  threads-1\s+\d+\.\d\d \[", out, re.M), out  # the factor table
    assert re.search(r"^  threads = 1: ", out, re.M), out
    assert re.search(r"^  threads = \d+\s+alone .*ms, beside a busy core .*ms: x\d", out, re.M), out
    assert re.search(r"^overhead aes-256-gcm vs none, harness, 1 shot: paired .*, unpaired ", out, re.M), out


def test_precision_runs_on_sqlite() -> None:
    out = run("precision.py", "--engine", "sqlite", "--scale", "0.01", "--rounds", "2", "--repeats", "2",
              "--busy-pairs", "0", "--arms", "reference")
    assert re.search(r"^overhead aes-256-cbc vs none, reference, median of k: paired ", out, re.M), out


def test_verify_scan_prints_every_speed() -> None:
    out = run("verify_scan.py", "4", "--rounds", "2", timeout=300)  # each round starts `tdebench verify` too
    assert "planted hits found by both searches" in out
    for name in ("read", "scan", "scan, every block", "grep -F -c", "scan, ciphertext", "scan, every block, ciphertext",
                 "grep -F -c, ciphertext", "tdebench verify command", "scan, free pages", "entropy, sampled",
                 "entropy, every", "entropy, every, bincount", "search", "search, sieve", "search, count"):
        assert re.search(rf"^  {re.escape(name)}\s+\d+\.\d MiB/s", out, re.M), out
    assert re.search(r"^scan vs grep -F -c: \d+\.\d\d x grep's speed; the same 48 canary and 48 marker matches as grep",
                     out, re.M), out
    for label in ("mixed file", "ciphertext"):  # both scans' share of grep's speed, on each file
        assert re.search(rf"^  {label}\s+trial scan\s+\d+\.\d\d \(\d+\.\d\d\), tdebench verify's scan\s+\d+\.\d\d "
                         r"\(\d+\.\d\d\)$", out, re.M), out
    assert re.search(r"^tdebench verify.s scan: \d+\.\d MiB/s on the mixed file, \d+\.\d MiB/s on ciphertext",
                     out, re.M), out


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


def test_paired_intervals_prints_every_method_for_every_row() -> None:
    out = run("paired_intervals.py", "--plans", "20", "--rounds", "3", "--trial-effect", "0.0", "0.03")
    rows = re.findall(r"^\s+\d+%\s+3\s+(.*)$", out, re.M)
    assert len(rows) == 2, out
    assert all(len(re.findall(r"A/A\s+\d+\.\d% 3%\s+\d+\.\d% ±\d+\.\d\d", row)) == 3 for row in rows), out


def test_instances_prints_both_designs() -> None:
    out = run("instances.py", "--trials", "2", "--instances", "2")
    assert re.search(r"^1 instance per trial\s+: composite median\s+\d+\.\d\d ms, CV between trials\s+\d+\.\d%",
                     out, re.M), out
    assert re.search(r"^2 instances per trial\s+: composite median", out, re.M), out


def test_lockstep_prints_every_layout_against_blocked() -> None:
    out = run("lockstep.py", "--rounds", "2", "--passes", "2")
    for layout in ("queries in turn", "passes in turn", "blocked"):
        assert re.search(rf"^{layout}\s*: spread of the A/A ratio\s+\d+\.\d% \(mean\s+[+-]\d+\.\d%\),"
                         rf"\s+\d+\.\d\dx blocked's$", out, re.M), out


def test_temp_coverage_prints_a_row_per_configuration_with_its_verdict() -> None:
    out = run("temp_coverage.py", "--engines", "sqlite", "duckdb", "--scale", "0.05", "--fs-on")
    assert re.search(r"^Rows carrying a canary \(sqlite 5,000, duckdb 15,000\)", out, re.M), out
    verdicts = {" ".join(name.split()): verdict for name, verdict in re.findall(
        r"^((?:sqlite|duckdb) +\S+(?: temp_store=FILE)?) .* (plaintext|encrypted|no temp file"
        r"|no canary \(baseline neither\))(?: |$)", out, re.M)}
    assert set(verdicts) == {"sqlite none", "sqlite none temp_store=FILE", "sqlite aes-128-cbc",
                             "sqlite aes-128-cbc temp_store=FILE", "duckdb none", "duckdb aes-256-gcm",
                             "duckdb aes-256-gcm-plaintemp"}, out
    assert verdicts["sqlite none"] == verdicts["duckdb none"] == "plaintext", out  # the positive controls
    assert verdicts["sqlite aes-128-cbc temp_store=FILE"] != "plaintext", out


def test_capture_cost_prints_the_paired_ratio_of_the_power_test_with_and_without_the_capture() -> None:
    out = run("capture_cost.py", "--scale", "0.01", "--rounds", "2", "--memory-mb", "64", "--every-s", "0.1")
    assert "scale 0.01, memory_limit 64 MiB, capture every 0.1 s, 2 interleaved rounds" in out
    assert re.search(r"^the capture scanned \d+ times, [\d,.]+ MiB in all", out, re.M), out
    assert re.search(r"^measured\s*: with capture .* ms, without .* ms, ratio \d+\.\d+ \(", out, re.M), out
    assert re.search(r"^\s+paired: median of the 2 rounds' own ratios \d+\.\d+ \[", out, re.M), out


def test_mariadb_temp_tables_prints_the_layout_of_every_temp_table_beside_an_encrypted_control() -> None:
    out = run("mariadb_temp_tables.py", "--copies", "30", "--encryptions", "aes-256-cbc")
    assert re.search(r"^aes-256-cbc: .*encrypt_tmp_disk_tables=ON", out, re.M), out
    for label in ("GROUP BY", "DISTINCT", "window (spill test)"):
        assert re.search(rf"^  {re.escape(label)} \([\d.]+ s\):\n    (temp table #sql|no temp table)", out, re.M), out
    # the control: a user's Aria table under aria_encrypt_tables is encrypted, and its layout says so
    assert re.search(r"^  control, a user-created Aria table: [\d,]+ pages \(random LSN [\d,]+\), 0 canary hits$",
                     out, re.M), out


def test_cold_eviction_prints_every_methods_spread_and_floor() -> None:
    # the two ends (the whole drop, as root in CI; files evicted and run side by side); files and warm
    # differ from them only in what empty_cache does; B encrypted, so its cost under each is printed too
    out = run("cold_eviction.py", "--scale", "0.01", "--rounds", "2", "--methods", "all", "lockstep",
              "--encryption", "aes-256-cbc")
    assert "B aes-256-cbc against A none; sqlite 8 MB cache, TPC-H SF 0.01" in out and "2 rounds" in out
    for method in ("all", "lockstep"):
        assert re.search(rf"^{method}\s+\d+\.\d\d\s+\d+\.\d%\s+±\d+\.\d%\s+\d+\s+0  "
                         r"[+-]\d+\.\d% \[[+-]\d+\.\d, [+-]\d+\.\d\]$", out, re.M), out
