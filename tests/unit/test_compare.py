"""`tdebench compare A B` on fake runs: the statistics of a change between runs, what the
comparison reads from them, its files and its command line (bad input, --out, --fail-above)."""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from fakes import ENVIRONMENT, FAILED, TIMED_OUT, Shape, write_fake_run
from tdebench.cli import main
from tdebench.report import write_comparison
from tdebench.report.sections import Part, compare
from tdebench.report.writers import html, markdown
from tdebench.report.summaries.tables import Table
from tdebench.results import RunData
from tdebench.store import read_run

PLAN = """\
name = "fake"
repetitions = 3
warmups = {warmups}
cache = "warm"
order = "interleaved"

[[engines]]
name = "duckdb"
encryptions = ["none", "aes-256-gcm", "aes-256-ctr"]

[[engines]]
name = "sqlite"
encryptions = ["none", "aes-256-cbc", "chacha20-poly1305"]

[[workloads]]
name = "tpch"
scale = 0.01
query_timeout_s = 60
"""
"""The fake run's plan as tdebench parses it today (fakes.PLAN predates [[engines]] tables), so
that the plans' settings are compared too."""
TWO_TRIALS = {(FAILED.engine, FAILED.encryption), (TIMED_OUT.engine, TIMED_OUT.encryption)}
"""The fake run's configurations with a failed trial: two trials left, too few for an interval."""
DUCKDB_TIMED = {(encryption, figure) for encryption in ("none", "aes-256-gcm", "aes-256-ctr")
                for figure in ("power geomean", "throughput total", "data load elapsed")}


# --- comparisons of fake runs ------------------------------------------------------------


def fake(directory: Path, **options) -> Path:
    directory.mkdir()
    write_fake_run(directory, plan=PLAN.format(warmups=options.pop("warmups", 1)), **options)
    return directory


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("runs")
    changed = {**ENVIRONMENT, "kernel": "6.9.0-fake-amd64", "engines": {**ENVIRONMENT["engines"], "duckdb": "1.6.0"},
               "note": "<b>newer</b>"}
    return {"a": fake(base / "a"), "again": fake(base / "again"), "slow": fake(base / "slow", slow={"duckdb": 1.1}),
            "placebo_a": fake(base / "placebo_a", placebo=True),
            "placebo_b": fake(base / "placebo_b", placebo=True, environment=changed, warmups=2)}


def compared(a: Path, b: Path) -> compare.Comparison:
    return compare.compare_runs(compare.side("A", a, read_run(a)), compare.side("B", b, read_run(b)))


@pytest.fixture(scope="module")
def slower(runs: dict[str, Path]) -> compare.Comparison:
    return compared(runs["a"], runs["slow"])


def timed(comparison: compare.Comparison) -> list[compare.FigureChange]:
    return [c for c in comparison.changes if c.unit == "s"]


@pytest.mark.parametrize("other", ["a", "again"])
def test_a_run_against_itself_or_its_twin_changes_nothing(runs: dict[str, Path], other: str) -> None:
    comparison = compared(runs["a"], runs[other])
    assert len(comparison.changes) == 6 * 4  # 6 configurations × 4 headline figures
    assert comparison.differences == [] and comparison.only_a == comparison.only_b == []
    for change in comparison.changes:
        assert change.median.pct == pytest.approx(0.0, abs=1e-9), change.cell
        expected = (compare.EXACT if change.unit == "bytes" else compare.NO_INTERVAL
                    if (change.cell.engine, change.cell.encryption) in TWO_TRIALS else compare.WITHIN_NOISE)
        assert change.reading == expected, change.cell
        if change.overhead is not None:
            assert change.overhead_reading in (compare.WITHIN_NOISE, compare.EXACT), change.cell
    assert comparison.regressions(2.0) == [] and comparison.regressions(0.0) == []
    found = compare.comparison_findings(comparison)
    assert any(s.startswith("Within noise (the CI includes 0): 12 of the 18 timed figures") for s in found)
    assert any(s.startswith("No interval for 6 timed figures: a run has fewer than 3 trials") for s in found)
    assert not any(s.startswith(("Slower", "Faster", "The overhead against none changed", "The runs differ"))
                   for s in found)
    assert any(s.startswith("Overheads against none within noise of A's: every timed figure") for s in found)


def test_an_engine_ten_percent_slower_is_found_in_every_figure(slower: compare.Comparison) -> None:
    duckdb = [c for c in timed(slower) if c.cell.engine == "duckdb"]
    assert {(c.cell.encryption, c.name) for c in duckdb} == DUCKDB_TIMED
    for change in duckdb:
        assert change.median.pct == pytest.approx(10.0, abs=0.5), change.cell
        assert 0 < change.median.ci_low < 10 < change.median.ci_high < 15, change.cell
        assert change.reading == compare.SLOWER
        assert change.overhead is None or change.overhead_reading == compare.WITHIN_NOISE  # both arms slowed alike
    for change in timed(slower):
        if change.cell.engine == "sqlite":
            two = (change.cell.engine, change.cell.encryption) in TWO_TRIALS
            assert change.reading == (compare.NO_INTERVAL if two else compare.WITHIN_NOISE), change.cell
    assert {(c.cell.engine, c.cell.encryption, c.name) for c in slower.regressions(5.0)} == {
        ("duckdb", encryption, name) for encryption, name in DUCKDB_TIMED}
    assert slower.regressions(10.5) == []  # more than the change itself: nothing fails


def test_the_findings_name_the_slower_engine_and_what_it_means(slower: compare.Comparison) -> None:
    found = compare.comparison_findings(slower)
    slow = [s for s in found if s.startswith("Slower in B beyond noise")]
    assert len(slow) == 1
    assert "duckdb none tpch sf0.01: power geomean +10.0%" in slow[0] and "sqlite" not in slow[0]
    together = [s for s in found if s.startswith("Every timed figure of duckdb")]
    assert len(together) == 1 and "got slower in B (+10.0%)" in together[0]
    assert "not the cost of its encryption" in together[0]
    assert any(s.startswith("Within noise (the CI includes 0): 3 of the 18 timed figures") for s in found)
    # 3 trials against 3: the exact test's floor is said, and why the CI decides
    assert any("With 3 trials against 3" in s and "0.10" in s for s in found)
    assert any(s.startswith("Run A has 2 failed trials") for s in found)


@pytest.mark.parametrize("trials", [1, 2])
def test_a_figure_of_fewer_than_three_trials_has_no_interval_and_never_fails(runs: dict[str, Path],
                                                                             trials: int) -> None:
    """One trial's bootstrap is the point itself; two trials' excludes 0 in about a third of A/A
    comparisons (stats.MIN_BOOTSTRAP): neither is read as an interval."""
    sides = []
    for label, name in (("A", "a"), ("B", "slow")):
        run = read_run(runs[name])
        run.measurements[:] = [m for m in run.measurements if m.trial.repetition <= trials]
        sides.append(compare.side(label, runs[name], run))
    comparison = compare.compare_runs(*sides)
    duckdb = [c for c in timed(comparison) if c.cell.engine == "duckdb"]
    assert duckdb and all(c.reading == compare.NO_INTERVAL for c in duckdb)
    assert all(c.median.pct == pytest.approx(10.0, abs=0.5) for c in duckdb)  # the change is still stated
    assert comparison.regressions(5.0) == []
    assert all(c.overhead is None or c.overhead.method == "between runs" for c in duckdb)
    assert any(s.startswith("No interval for") and "fewer than 3 trials" in s
               for s in compare.comparison_findings(comparison))


def test_differing_environments_and_plans_are_listed_first(runs: dict[str, Path]) -> None:
    comparison = compared(runs["placebo_a"], runs["placebo_b"])
    assert comparison.differences == ["engines.duckdb: 1.5.5 → 1.6.0", "kernel: 6.1.0-fake-amd64 → 6.9.0-fake-amd64",
                                      "note: <script>alert('not escaped')</script> → <b>newer</b>",
                                      "plan.warmups: 1 → 2"]
    report = compare.document(comparison)
    text = markdown.render_comparison(report)
    assert text.index("## What differs between the runs") < text.index("## Findings") < text.index("## Change of")
    assert "- kernel: 6.1.0-fake-amd64 → 6.9.0-fake-amd64" in text
    assert any(s.startswith("The runs differ in engines.duckdb, kernel, note, plan.warmups")
               for s in compare.comparison_findings(comparison))
    page = html.render_comparison(report)
    assert "<b>newer</b>" not in page and "&lt;b&gt;newer&lt;/b&gt;" in page  # escaped, like the report
    assert page.index("What differs") < page.index("Findings")


def test_configurations_and_figures_in_one_run_only_are_listed(runs: dict[str, Path]) -> None:
    comparison = compared(runs["a"], runs["placebo_a"])
    assert comparison.only_a == []
    assert comparison.only_b == ["duckdb placebo tpch sf0.01", "sqlite placebo tpch sf0.01"]
    assert "- only in B: duckdb placebo tpch sf0.01" in markdown.render_comparison(compare.document(comparison))
    run = read_run(runs["a"])
    run.measurements[:] = [m for m in run.measurements if m.test != "throughput"]
    fewer = compare.compare_runs(compare.side("A", runs["a"], read_run(runs["a"])), compare.side("B", runs["a"], run))
    assert fewer.only_b == [] and "duckdb none tpch sf0.01 throughput total" in fewer.only_a
    assert len(fewer.only_a) == 6 and len(fewer.changes) == 6 * 3


def test_each_runs_resolution_is_stated_where_both_ran_a_placebo(runs: dict[str, Path]) -> None:
    comparison = compared(runs["placebo_a"], runs["placebo_b"])
    found = [s for s in compare.comparison_findings(comparison) if s.startswith("Resolution of the overheads")]
    assert len(found) == 1 and "duckdb tpch sf0.01 power geomean ±" in found[0]
    assert " in A, ±" in found[0] and " in B" in found[0]
    overheads = overhead_table(compare.document(comparison))
    assert {"resolution_a", "resolution_b"} <= set(overheads.keys)
    gcm = next(row for row in overheads.rows if row["encryption"] == "aes-256-gcm" and row["figure"] == "power geomean")
    assert gcm["resolution_a"] == pytest.approx(gcm["resolution_b"]) and gcm["resolution_a"] > 0
    without = compare.comparison_findings(compared(runs["a"], runs["again"]))
    assert any(s.startswith("Neither run has a placebo arm") for s in without)


def test_a_changed_overhead_is_found_and_exact_sizes_are_exact(runs: dict[str, Path]) -> None:
    """Only an encryption slowed (duckdb aes-256-gcm, none unchanged): its overhead grows by
    about 10%, beyond noise; sizes are exact."""
    a, b = (read_run(runs["a"]) for _ in range(2))
    b.measurements[:] = [replace(m, metrics={k: v * 1.1 if k.endswith("elapsed_s") else v
                                             for k, v in m.metrics.items()})
                         if (m.trial.engine, m.trial.encryption) == ("duckdb", "aes-256-gcm") else m
                         for m in b.measurements]
    comparison = compare.compare_runs(compare.side("A", runs["a"], a), compare.side("B", runs["a"], b))
    gcm = {c.name: c for c in comparison.changes if (c.cell.engine, c.cell.encryption) == ("duckdb", "aes-256-gcm")}
    for name in ("power geomean", "data load elapsed"):
        change = gcm[name].overhead
        assert change is not None and change.pct == pytest.approx(10.0, abs=0.5)
        assert gcm[name].overhead_reading == compare.HIGHER, name
    assert gcm["database size"].overhead_exact and gcm["database size"].overhead_reading == compare.EXACT
    found = [s for s in compare.comparison_findings(comparison) if s.startswith("The overhead against none changed")]
    assert len(found) == 1
    assert "duckdb aes-256-gcm tpch sf0.01: power geomean from +2.3% in A to +12.5% in B" in found[0]
    assert not any(s.startswith("Every timed figure of duckdb") for s in compare.comparison_findings(comparison))


def test_write_makes_the_three_files_with_every_figure(slower: compare.Comparison, tmp_path: Path) -> None:
    written = write_comparison(slower, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(compare.WRITTEN) == sorted(p.name for p in written)
    with (tmp_path / compare.COMPARE_CSV).open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == list(compare.CSV_KEYS) and len(rows) == len(slower.changes)
    power = next(r for r in rows if (r["engine"], r["encryption"], r["figure"]) == ("duckdb", "none", "power geomean"))
    assert power["change_reading"] == "slower" and 0 < float(power["change_ci_low"]) < 10
    assert float(power["median_b"]) / float(power["median_a"]) == pytest.approx(1.1, abs=0.005)  # seconds, raw
    assert power["overhead_change_pct"] == ""  # none has no overhead
    page = (tmp_path / compare.COMPARE_HTML).read_text()
    assert page.count("<table>") == 2 and "Change of the overhead against none" in page


# --- the hosts the runs measured on -----------------------------------------------------------

HOST = {**ENVIRONMENT, "cpu_model": "AMD EPYC", "cpu_flags": {"aes": True, "vaes": True, "avx512f": False}}


def host_run(directory: Path, environment: dict, speed: float = 1.0) -> Path:
    """The fake run on a host recorded as environment.json records one, its raw cipher figures
    `speed` times the fake run's."""
    ciphers = tuple((cipher, chunk, mib_per_s * speed) for cipher, chunk, mib_per_s in Shape().ciphers)
    return fake(directory, environment=environment, shape=Shape(ciphers=ciphers))


def first_lines(a: Path, b: Path) -> list[str]:
    printed = CliRunner().invoke(main, ["compare", str(a), str(b)], catch_exceptions=False, terminal_width=80)
    assert printed.exit_code == 0, printed.output
    return printed.output.splitlines()


def test_runs_on_the_same_host_get_no_warning_and_their_cipher_speeds_side_by_side(tmp_path: Path) -> None:
    """Speeds 5% apart are one host measured twice (HOST_SPEED_TOLERANCE is 10%)."""
    a, b = host_run(tmp_path / "a", HOST), host_run(tmp_path / "b", HOST, speed=0.95)
    comparison = compared(a, b)
    assert comparison.hosts.differ == []
    lines = first_lines(a, b)
    assert lines[0] == "tdebench compare: B against A" and "hosts" not in " ".join(lines[:3])
    assert "AMD EPYC with aes, vaes, without avx512f" in " ".join(" ".join(lines[:8]).split())  # wrapped anywhere
    block = "\n".join(lines).split("\nduckdb aes-256-gcm tpch sf0.01\n")[1].split("\n\n")[0]
    assert block.splitlines()[0] == "  raw aes-256-gcm, 1 MiB pages: 4,100 → 3,895 MiB/s (0.95×)"
    assert "raw" not in "\n".join(lines).split("\nduckdb none tpch sf0.01\n")[1].split("\n\n")[0]


def test_a_different_cpu_is_said_in_the_first_line(tmp_path: Path) -> None:
    other = {**HOST, "cpu_model": "Intel Xeon", "cpu_flags": {**HOST["cpu_flags"], "avx512f": True}}
    a, b = host_run(tmp_path / "a", HOST), host_run(tmp_path / "b", other)
    assert compared(a, b).hosts.differ == ["CPU AMD EPYC → Intel Xeon", "CPU flags avx512f no → yes"]
    lines = first_lines(a, b)
    assert lines[0] == "tdebench compare: B against A, from different hosts"
    assert lines[1].startswith("Different hosts: CPU AMD EPYC → Intel Xeon; CPU flags avx512f no → yes.")
    text = markdown.render_comparison(compare.document(compared(a, b)))
    assert text.splitlines()[0] == "# tdebench compare: B against A, from different hosts"


def test_raw_cipher_speeds_more_than_ten_percent_apart_are_another_host(tmp_path: Path) -> None:
    """The same CPU model and flags, its ciphers 0.74× as fast: another physical machine under
    the same virtual CPU. The ratio stands beside each encryption's figures in every form."""
    a, b = host_run(tmp_path / "a", HOST), host_run(tmp_path / "b", HOST, speed=0.74)
    comparison = compared(a, b)
    assert comparison.hosts.differ == ["raw cipher speed B ÷ A 0.74× (the median of the 5 cipher and page-size "
                                       "figures both measured; more than 10% apart)"]
    lines = first_lines(a, b)
    assert lines[0].endswith(", from different hosts")
    assert "  raw aes-256-cbc, 1 MiB pages: 1,100 → 814 MiB/s (0.74×)" in lines
    report = compare.document(comparison)
    assert compare.cipher_lines(comparison) == [f"raw {cipher}, 1 MiB pages: {a_speed} → {b_speed} MiB/s (0.74×)"
                              for cipher, a_speed, b_speed in (("aes-256-ctr", "5,200", "3,848"),
                                                               ("aes-256-gcm", "4,100", "3,034"),
                                                               ("aes-256-cbc", "1,100", "814"),
                                                               ("chacha20-poly1305", "1,900", "1,406"))]
    overheads = overhead_table(report)
    gcm = next(row for row in overheads.rows if row["encryption"] == "aes-256-gcm")
    assert "raw_ratio" in overheads.keys and gcm["raw_ratio"] == pytest.approx(0.74)
    assert "## Raw cipher speed, A → B" in markdown.render_comparison(report)


def overhead_table(report: compare.CompareReport) -> Table:
    """The comparison's table of the overheads' changes, as its section shows it."""
    section = report.section("Change of the overhead against none")
    assert section is not None and isinstance(section.parts[0], Part)
    return section.parts[0].table


# --- the command line ----------------------------------------------------------------------


def invoke(*args: str):
    return CliRunner().invoke(main, ["compare", *args], catch_exceptions=False, terminal_width=100_000)


def one_error_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), output[:3000]
    return lines[0]


def test_cli_prints_the_comparison_and_fails_above_a_threshold(runs: dict[str, Path]) -> None:
    same = invoke(str(runs["a"]), str(runs["a"]), "--fail-above", "2", "--markdown")  # the same directory twice
    assert same.exit_code == 0, same.output
    assert "## Change of the median, B against A" in same.output
    assert "no headline figure got slower by more than 2% with its 95% CI above 0" in same.output
    slow = invoke(str(runs["a"]), str(runs["slow"]), "--fail-above", "5", "--markdown")
    assert slow.exit_code == 1
    assert "9 headline figure(s) got slower by more than 5% with the 95% CI above 0" in slow.output
    assert "| duckdb | none | tpch | 0.01 | power geomean | ms |" in slow.output
    assert invoke(str(runs["a"]), str(runs["slow"]), "--fail-above", "12").exit_code == 0
    assert invoke(str(runs["a"]), str(runs["slow"])).exit_code == 0  # without --fail-above: what changed, exit 0


def test_cli_prints_a_summary_that_reads_at_80_columns(runs: dict[str, Path]) -> None:
    """Without --markdown: no line past the terminal's 80 columns, no table rule, a block per
    configuration with a line per figure, and the slower figure's reading in it."""
    printed = CliRunner().invoke(main, ["compare", str(runs["a"]), str(runs["slow"])], catch_exceptions=False,
                                 terminal_width=80)
    assert printed.exit_code == 0, printed.output
    lines = printed.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "| duckdb |" not in printed.output and "## " not in printed.output
    block = printed.output.split("\nduckdb none tpch sf0.01\n")[1].split("\n\n")[0].splitlines()
    power = next(line for line in block if line.strip().startswith("power geomean"))
    assert power.rstrip().endswith("slower") and "[" in power


@pytest.mark.parametrize("case", ["no run", "not a directory", "negative", "not a number", "out not empty",
                                  "out a file"])
def test_cli_bad_input_is_exit_2_with_one_line(runs: dict[str, Path], tmp_path: Path, case: str) -> None:
    a, b = str(runs["a"]), str(runs["slow"])
    (tmp_path / "empty").mkdir()
    (tmp_path / "file").write_text("x")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    args = {"no run": [a, str(tmp_path / "empty")], "not a directory": [str(tmp_path / "nothing"), b],
            "negative": [a, b, "--fail-above", "-1"], "not a number": [a, b, "--fail-above", "nan"],
            "out not empty": [a, b, "--out", str(tmp_path / "mine")],
            "out a file": [a, b, "--out", str(tmp_path / "file")]}[case]
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    line = one_error_line(result.output)
    assert "Traceback" not in result.output and len(line) < 500
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["notes.txt"]


def test_cli_out_writes_only_the_comparisons_files(runs: dict[str, Path], tmp_path: Path) -> None:
    for out in (tmp_path / "new" / "deeper", tmp_path / "empty"):
        if out.name == "empty":
            out.mkdir()
        result = invoke(str(runs["a"]), str(runs["slow"]), "--out", str(out))
        assert result.exit_code == 0, result.output
        assert sorted(p.name for p in out.iterdir()) == sorted(compare.WRITTEN)
        assert "## Findings" not in result.output  # written, not printed: the paths are
        assert str(out / compare.COMPARE_HTML) in result.output
    again = invoke(str(runs["a"]), str(runs["slow"]), "--out", str(tmp_path / "empty"))
    assert again.exit_code == 2 and "is not empty" in one_error_line(again.output)


def test_cli_runs_with_nothing_in_common_are_exit_2(runs: dict[str, Path], tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    write_fake_run(other, plan=PLAN.format(warmups=1), memories=(64,))  # every configuration at 64 MB
    result = invoke(str(runs["a"]), str(other))
    assert result.exit_code == 2
    assert "only in A: duckdb none tpch sf0.01" in result.output
    assert "only in B: duckdb 64 MB none tpch sf0.01" in result.output
    assert result.output.strip().splitlines()[-1].startswith("error: no headline figure of the same configuration")


def oltp_run(directory: Path, factor: float) -> Path:
    """The hand-made oltp run of test_oltp_report, its encrypted throughput times `factor`."""
    from test_oltp_report import PLAN as OLTP_PLAN, REPETITIONS, TESTS, _run_records

    from tdebench.results import Measurement, TrialKey, TrialOutcome
    from tdebench.store import ResultStore

    store = ResultStore(directory)
    store.start(OLTP_PLAN, {"cpu": {"cores": 2}})
    for repetition in range(1, REPETITIONS + 1):
        for encryption, base in (("none", 1.0), ("aes-256-cbc", 0.9 * factor)):
            trial = TrialKey("sqlite", encryption, "oltp", 1.0, repetition)
            store.append(Measurement(trial, "load", "total", {"elapsed_s": 5.0}))
            for test in TESTS:
                for record in _run_records(trial, test, base):
                    if record.step == "consistency":  # every check passed
                        record = replace(record, metrics={"conditions": 4.0, "problems": 0.0}, answer="ok")
                    store.append(record)
            store.append(TrialOutcome(trial, "ok", cache="warm", cache_dropped=False, elapsed_s=70.0))
    return directory


def test_tpm_and_nopm_are_compared_and_a_drop_fails_above_a_threshold(tmp_path: Path) -> None:
    """Throughput is a headline figure too: a TPM 10% lower in B is found, said in the findings
    and makes --fail-above fail, as a slower time does."""
    a, b = oltp_run(tmp_path / "a", 1.0), oltp_run(tmp_path / "b", 0.9)
    comparison = compared(a, b)
    rates = {(c.cell.encryption, c.name): c for c in comparison.changes if c.unit == "/min"}
    assert set(rates) == {(e, f"{t} {r}") for e in ("none", "aes-256-cbc") for t in ("load", "stress")
                          for r in ("TPM", "NOPM")}
    assert rates[("none", "stress TPM")].reading == compare.WITHIN_NOISE
    dropped = rates[("aes-256-cbc", "stress TPM")]
    assert dropped.reading == compare.LOWER and dropped.median.pct == pytest.approx(-10.0, abs=0.5)
    assert {(c.cell.encryption, c.name) for c in comparison.regressions(5)} == {
        ("aes-256-cbc", f"{t} {r}") for t in ("load", "stress") for r in ("TPM", "NOPM")}
    assert not comparison.regressions(15)
    assert any(s.startswith("Throughput lower in B beyond noise") and "stress TPM -9.9%" in s
               for s in compare.comparison_findings(comparison)), compare.comparison_findings(comparison)
    result = invoke(str(a), str(b), "--fail-above", "5")
    assert result.exit_code == 1 and "(a TPM or NOPM: lower, its CI below 0)" in " ".join(result.output.split())


def test_an_older_runs_cold_plan_without_an_order_compares_in_the_order_it_ran(tmp_path: Path) -> None:
    """A stored plan that names no order is from before tdebench wrote the one it chose: a cold one
    ran interleaved, whatever today's default (lockstep), and its settings say so."""
    text = 'name = "old"\ncache = "cold"\n[[engines]]\nname = "duckdb"\n[[workloads]]\nname = "tpch"\n'
    settings = compare.plan_settings(RunData(directory=tmp_path, plan_text=text, environment={}))
    assert settings is not None and settings["plan"]["order"] == "interleaved"
    written = compare.plan_settings(RunData(directory=tmp_path, plan_text='order = "lockstep"\n' + text,
                                            environment={}))
    assert written is not None and written["plan"]["order"] == "lockstep"
