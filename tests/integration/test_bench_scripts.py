"""Every script in bench/ runs at tiny settings and prints what its docstring promises, so a
change to the code it drives cannot break it unnoticed (harness_overhead.py once stopped
running when `Workload.prepare` gained its `seed`). Speed is not checked: only that each one
runs to the end and prints its table or ratios. The scripts that start database servers are in
test_bench_servers.py: two files of about the same length, which scripts/test.sh runs on its
two workers side by side."""

from __future__ import annotations

import re

from bench_runs import BENCH, run


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
    for name in ("verify, random", "grep -F -c CANARY, random", "tdebench verify command", "tdebench verify, 4 KiB",
                 "python -c pass", "random: search alone",
                 "verify, random, no canary", "random: entropy sample alone", "verify, database",
                 "grep -F -c CANARY, database", "read", "scan",
                 "scan, every block", "grep -F -c", "scan, ciphertext", "scan, every block, ciphertext",
                 "grep -F -c, ciphertext", "scan, free pages", "entropy, sampled", "entropy, every",
                 "entropy, every, bincount", "search", "search, sieve", "search, count"):
        assert re.search(rf"^  {re.escape(name)}\s+\d+\.\d MiB/s", out, re.M), out
    assert re.search(r"^scan vs grep -F -c: \d+\.\d\d x grep's speed; the same 48 canary and 48 marker matches as grep",
                     out, re.M), out
    for label in ("mixed file", "ciphertext"):  # both scans' share of grep's speed, on each file
        assert re.search(rf"^  {label}\s+trial scan\s+\d+\.\d\d \(\d+\.\d\d\), tdebench verify's scan\s+\d+\.\d\d "
                         r"\(\d+\.\d\d\)$", out, re.M), out
    assert re.search(r"^tdebench verify.s scan: \d+\.\d MiB/s on the mixed file, \d+\.\d MiB/s on ciphertext",
                     out, re.M), out
    # verify's time as a multiple of grep's, of the best rounds and paired round by round
    ratio = r"\s*\d+\.\d\d \(\d+\.\d\d\), paired\s+\d+\.\d\d \(\d+\.\d\d\)"
    assert re.search(rf"^  random bytes  verify{ratio}; tdebench verify command{ratio}$", out, re.M), out
    assert re.search(rf"^  the command's fixed cost: tdebench verify on 4 KiB{ratio}, of which python -c pass{ratio}$",
                     out, re.M), out
    assert re.search(rf"^  random bytes, no canary in them  verify{ratio}$", out, re.M), out
    assert re.search(rf"^  database      verify{ratio}$", out, re.M), out
    assert re.search(r"^  findings as grep -F -a -o: 3 canary hits in the random file \(UTF-8, UTF-16LE, UTF-16BE\), "
                     r"1 in the database; entropy 0 of 1024 blocks below 7 bits/byte in the random file \(without a "
                     r"canary: encrypted\)", out, re.M), out


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


def test_cold_eviction_prints_every_methods_spread_and_floor() -> None:
    # the two ends (the whole drop, as root in CI; files evicted and run side by side); files and warm
    # differ from them only in what empty_cache does; B encrypted, so its cost under each is printed too
    out = run("cold_eviction.py", "--scale", "0.01", "--rounds", "2", "--methods", "all", "lockstep",
              "--encryption", "aes-256-cbc")
    assert "B aes-256-cbc against A none; sqlite 8 MB cache, TPC-H SF 0.01" in out and "2 rounds" in out
    for method in ("all", "lockstep"):
        assert re.search(rf"^{method}\s+\d+\.\d\d\s+\d+\.\d%\s+±\d+\.\d%\s+\d+\s+0  "
                         r"[+-]\d+\.\d% \[[+-]\d+\.\d, [+-]\d+\.\d\]$", out, re.M), out


def test_load_parts_prints_each_grains_spread_and_floor_for_the_load_and_lineitem() -> None:
    # SF 0.01's lineitem (60,175 rows) in four parts; B encrypted, so its cost per grain is printed too
    out = run("load_parts.py", "--scale", "0.01", "--rounds", "2", "--part-rows", "20000",
              "--encryption", "aes-256-cbc")
    assert "B aes-256-cbc against A none; sqlite 8 MB cache, TPC-H SF 0.01" in out and "2 rounds" in out
    for step in ("total", "lineitem"):
        for grain in ("whole", "parts"):
            assert re.search(rf"^{step}\s+{grain}\s+\d+\.\d{{3}}\s+\d+\.\d%\s+±\d+\.\d%\s+\d+  "
                             r"[+-]\d+\.\d% \[[+-]\d+\.\d, [+-]\d+\.\d\]$", out, re.M), out


def test_duckdb_memory_floor_prints_each_limit_with_its_load_and_failed_queries() -> None:
    out = run("duckdb_memory_floor.py", "--scale", "0.01", "--memory-mb", "4", "64", "--keys", "none", "--threads", "1")
    assert re.search(r"^DuckDB [\d.]+, TPC-H SF 0\.01, no primary keys: \d+\.\d MiB of tables and indexes", out,
                     re.M), out
    assert "the limited databases: 1 thread(s)" in out, out
    rows = re.findall(r"^ +(\d+) MB +\d+\.\d× +(ran|out of memory) +(.+)$", out, re.M)
    assert [row[0] for row in rows] == ["4", "64"], out
    assert rows[0][1:] != ("ran", "none"), out  # 4 MB is far below what DuckDB needs: something runs out
    assert rows[1][1:] == ("ran", "none"), out  # 64 MB holds SF 0.01's data and queries
    assert "the least limit at which the load and every query ran: 64 MB" in out, out


def test_duckdb_q10_prints_each_settings_modes_and_a_stored_runs_q10_by_place_in_turn() -> None:
    out = run("duckdb_q10.py", "--scale", "0.01", "--rounds", "2", "--arms", "2", "--memory-mb", "48",
              "--threads", "1")
    assert "DuckDB TPC-H SF 0.01" in out and "2 copies cold and side by side, 2 rounds" in out
    for allocator in ("default", "flush"):  # counts, median time and CPU of each group (or "-"), then the spreads
        assert re.search(rf"^48 MB, 1 thr, {allocator}\s+\d+ +(\d+ms|-) +(\d+ms|-)\s+\d+ +(\d+ms|-) +(\d+ms|-)\s+"
                         r"\d+/2\s+\d+/2\s+\d+\.\d%\s+\d+\.\d%\s+\d+\.\d ms$", out, re.M), out
        assert re.search(rf"^48 MB, 1 thr, {allocator}\s+(reused|new)\s+\d+\.\d\s+\d+\.\d\s+\d+\.\d  [A-Z_]+ \d+ ms$",
                         out, re.M), out
    stored = run("duckdb_q10.py", "--from-run", str(BENCH.parent / "docs/examples/io-bound/results.jsonl.xz"))
    assert re.search(r": (\d+) rounds, by place in the lockstep turn\n  1: \1 runs, median \d+ ms .*\n  2: .*\n  3: ",
                     stored), stored
    # what each query adds to the placebo's spread: the queries whose leaving out narrows it most
    assert re.search(r"^the placebo's spread over rounds \(composite ln ratio\): \d+\.\d% with every query; "
                     r"without q\d+ \d+\.\d%, q\d+ \d+\.\d%, q\d+ \d+\.\d%$", stored, re.M), stored


def test_place_in_turn_prints_a_servers_query_by_place_with_its_reads() -> None:
    # MariaDB's Q18 in the published io-bound run: its time, CPU and bytes read for each place in the turn
    out = run("place_in_turn.py", str(BENCH.parent / "docs/examples/io-bound/results.jsonl.xz"), "--engine", "mariadb",
              "--query", "18")
    assert re.search(r"^MariaDB's Q18 in .*: (\d+) rounds, by place in the lockstep turn\n"
                     r"  1: \1 runs, median \d+ ms \(CPU \d+ ms, read \d+ MiB, \d+–\d+\); times \[", out, re.M), out
    assert re.search(r"^  3: \d+ runs", out, re.M) and "the placebo's spread over rounds" in out, out


def test_report_build_prints_both_codes_times_and_whether_their_reports_are_alike() -> None:
    # the published cost-curve run cut to its first 6 trials, built once by HEAD's code and once by the
    # working tree's: the same report unless the working tree changed what a report says
    out = run("report_build.py", "--trials", "6", "--repeats", "1", "--before", "HEAD", timeout=300)
    assert "cost-curve, 6 trials, 1 alternating repetitions; before: HEAD" in out
    for label in ("wall", "CPU "):
        assert re.search(rf"^{label}: before \d+\.\d\d s, after \d+\.\d\d s, ratio \d+\.\d\d  \(each: \d+\.\d\d \| "
                         r"\d+\.\d\d\)$", out, re.M), out
    assert re.search(r"^(same report: every file alike|differ: .+)$", out, re.M), out
