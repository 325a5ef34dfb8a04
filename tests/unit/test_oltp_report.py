"""The oltp workload's report section from a hand-made run: TPM and NOPM with intervals and
overhead against `none` (oltp.csv), the latency table with the mix's shares, throughput over
time, a failed run kept out, and reports of runs without oltp unchanged."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from fakes import write_fake_run
from plots import drawn
from tdebench.report import build
from tdebench.report.sections import oltp
from tdebench.report.summaries.noise import widest_headline
from tdebench.report.data.records import summary_records
from tdebench.results import Measurement, TrialKey, TrialOutcome
from tdebench.store import ResultStore, read_run

TESTS = ("load", "stress")
FACTORS = {"none": 1.0, "aes-256-cbc": 0.9}  # encrypted: 10% fewer transactions
REPETITIONS = 3
WINDOW_S = 30.0
COMMITTED = {"new_order": 450, "payment": 430, "delivery": 40, "order_status": 40, "stock_level": 40}
FAILED = TrialKey("sqlite", "aes-256-cbc", "oltp", 1.0, 3)  # its consistency check failed
PLAN = '''name = "oltp-fake"
repetitions = 3

[[engines]]
name = "sqlite"

[[workloads]]
name = "oltp"
scale = 1
'''


def _run_records(trial: TrialKey, test: str, factor: float) -> list[Measurement]:
    # repetition r is r% faster than its factor says, so every figure has a spread
    scale = factor * (1 + 0.01 * (trial.repetition - 2)) * (1.5 if test == "stress" else 1.0)
    committed = {kind: round(count * scale) for kind, count in COMMITTED.items()}
    records = [Measurement(trial, test, "mix", {
        "elapsed_s": WINDOW_S, "committed": float(sum(committed.values())),
        "new_orders": float(committed["new_order"]), "rollbacks": 4.0, "retries": 2.0, "errors": 0.0,
        "virtual_users": 2.0 if test == "load" else 4.0, "procedures": 0.0, "cpu_s": 20.0})]
    for kind, count in committed.items():
        p50 = 0.002 / factor
        records.append(Measurement(trial, test, kind, {
            "committed": float(count), "retries": 0.0, "errors": 0.0, "p50_elapsed_s": p50,
            "p90_elapsed_s": 2 * p50, "p95_elapsed_s": 3 * p50, "p99_elapsed_s": 5 * p50,
            "max_elapsed_s": 10 * p50, "mean_elapsed_s": 1.5 * p50}))
    per_interval = sum(committed.values()) / 3
    records += [Measurement(trial, test, "interval", {"elapsed_s": WINDOW_S / 3, "committed": per_interval,
                                                      "new_orders": per_interval * 0.45}, stream=n)
                for n in (1, 2, 3)]
    failed = trial == FAILED and test == "load"
    records.append(Measurement(trial, test, "consistency", {"conditions": 4.0, "problems": float(failed)},
                               answer="failed" if failed else "ok"))
    return records


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("oltp-run")
    store = ResultStore(directory)
    store.start(PLAN, {"cpu": {"cores": 2}})
    for repetition in range(1, REPETITIONS + 1):
        for encryption, factor in FACTORS.items():
            trial = TrialKey("sqlite", encryption, "oltp", 1.0, repetition)
            store.append(Measurement(trial, "load", "total", {"elapsed_s": 5.0}))
            for test in TESTS:
                for record in _run_records(trial, test, factor):
                    store.append(record)
            failed = trial == FAILED
            store.append(TrialOutcome(trial, "failed" if failed else "ok", cache="warm", cache_dropped=False,
                                      elapsed_s=70.0, error="WrongAnswer: oltp load: condition 2" if failed else ""))
    build(directory)
    return directory


def test_tpm_and_nopm_with_intervals_and_overhead_against_none(run_dir: Path) -> None:
    rows = {(r["test"], r["encryption"]): r for r in csv.DictReader((run_dir / "oltp.csv").open())}
    assert set(rows) == {(t, e) for t in TESTS for e in FACTORS}
    none, aes = rows[("load", "none")], rows[("load", "aes-256-cbc")]
    assert float(none["tpm"]) == pytest.approx(sum(COMMITTED.values()) / WINDOW_S * 60)
    assert float(none["nopm"]) == pytest.approx(450 / WINDOW_S * 60)
    assert none["n"] == "3" and aes["n"] == "2"  # the failed repetition is left out
    assert float(none["tpm_ci_low"]) < float(none["tpm"]) < float(none["tpm_ci_high"])
    # paired by round: the repetitions' shared speed-up cancels, rounds 1 and 2 both give 0.9
    # (the medians would compare 0.9 × 0.995 with 1.0 and make it -10.45%)
    assert float(aes["tpm_vs_none_pct"]) == pytest.approx(-10.0, abs=0.1)
    assert float(aes["nopm_vs_none_ci_low"]) < float(aes["nopm_vs_none_pct"]) < float(aes["nopm_vs_none_ci_high"])
    assert none["tpm_vs_none_pct"] == "" and none["driver"] == "client" and none["virtual_users"] == "2.0"
    assert rows[("stress", "none")]["virtual_users"] == "4.0"


def test_the_report_has_the_oltp_sections_plot_and_the_failure(run_dir: Path) -> None:
    report = (run_dir / "report.md").read_text()
    throughput, latency = report.index("## OLTP throughput"), report.index("## OLTP latency")
    assert throughput < latency < report.index("## Resources")
    assert "plots/oltp-throughput-sqlite-w1.png" in report
    assert drawn(run_dir / "plots" / "oltp-throughput-sqlite-w1.png")
    assert "load consistency" in report  # the failed check is listed among the failures
    assert ("- OLTP on sqlite (W=1), load test with 2 users (client): 2,000 TPM without encryption; TPM "
            "aes-256-cbc -10.0% \\[-10.6, -9.5\\] (significant, 2 rounds).") in report
    html = (run_dir / "report.html").read_text()
    assert "<h2>OLTP throughput</h2>" in html and "<h2>OLTP latency</h2>" in html


def test_latency_rows_show_the_mix_beside_its_target(run_dir: Path) -> None:
    run = read_run(run_dir)
    table = oltp.latency_table(summary_records(run))
    rows = {(r["test"], r["encryption"], r["transaction"]): r for r in table.rows}
    assert len(rows) == len(TESTS) * len(FACTORS) * len(COMMITTED)
    payment = rows[("load", "none", "payment")]
    assert payment["share"] == pytest.approx(43.0) and payment["target"] == pytest.approx(43.0)
    assert payment["p50"] == pytest.approx(2.0) and payment["p99"] == pytest.approx(10.0)
    assert rows[("load", "aes-256-cbc", "payment")]["p50"] == pytest.approx(2.0 / 0.9)
    assert list(rows)[:5] == [("load", "none", kind) for kind in COMMITTED]  # baseline first, mix order


def test_a_run_without_oltp_has_no_oltp_section(tmp_path: Path) -> None:
    write_fake_run(tmp_path)
    build(tmp_path)
    assert "OLTP" not in (tmp_path / "report.md").read_text()
    assert oltp.section(read_run(tmp_path), []) is None
    assert not (tmp_path / "oltp.csv").exists()  # not a lone header


def test_adaptive_repetitions_wait_on_tpm_and_nopm_too(run_dir: Path) -> None:
    run = read_run(run_dir)
    label, width = widest_headline(run, summary_records(run))
    # the load's elapsed time is the same in every trial (no interval); TPM/NOPM have one
    assert label.startswith("sqlite aes-256-cbc oltp W=1 ") and label.endswith((" mix tpm", " mix nopm"))
    assert 0 < width < 1


SERVER_PLAN = PLAN.replace('name = "sqlite"', 'name = "mariadb"')


def _server_run(directory: Path, driver_cpu_s: float, server_cpu_s: float, worker_processes: float | None) -> Path:
    """A MariaDB run on 2 cores whose 30-s windows used `server_cpu_s` and `driver_cpu_s`."""
    store = ResultStore(directory)
    store.start(SERVER_PLAN, {"logical_cores": 2})
    for repetition in range(1, REPETITIONS + 1):
        for encryption, factor in FACTORS.items():
            trial = TrialKey("mariadb", encryption, "oltp", 1.0, repetition)
            for record in _run_records(trial, "load", factor):
                if record.step == "mix":
                    extra = {"cpu_s": server_cpu_s * (1 + 0.1 * (encryption != "none")), "driver_cpu_s": driver_cpu_s}
                    if worker_processes is not None:
                        extra["worker_processes"] = worker_processes
                    record = Measurement(trial, record.test, record.step, record.metrics | extra)
                if record.step != "consistency" or record.answer == "ok":
                    store.append(record)
            store.append(TrialOutcome(trial, "ok", cache="warm", cache_dropped=False, elapsed_s=40.0))
    return directory


def test_a_client_bound_server_run_is_found_and_its_cpu_shares_reported(tmp_path: Path) -> None:
    """The driver used 24 of 60 CPU seconds: 40% of 2 cores; the server 30 (33) s: 50% (55%)."""
    run = read_run(_server_run(tmp_path, driver_cpu_s=24.0, server_cpu_s=30.0, worker_processes=None))
    rows = {r["encryption"]: r for r in oltp.throughput_table(run, summary_records(run)).rows}
    assert rows["none"]["driver_cpu_pct"] == pytest.approx(40.0)
    assert rows["none"]["server_cpu_pct"] == pytest.approx(50.0)
    assert rows["aes-256-cbc"]["server_cpu_pct"] == pytest.approx(55.0)
    assert rows["none"]["users_as"] == "threads"  # a run from before worker_processes was recorded
    section = oltp.section(run, summary_records(run))
    assert section is not None and [b.title for b in section.blocks] == [
        "OLTP throughput", "OLTP saturation", "OLTP latency"]
    saturation = section.blocks[1].parts[0].table.rows
    assert [r["machine_cpu_pct"] for r in saturation] == pytest.approx([90.0, 95.0])
    assert ("OLTP on mariadb (W=1), load test (2 users as threads): the server was not the bottleneck — the "
            "client used 40% of the machine's CPU (the server 50–55%, the client 40%, of 2 cores); the TPM "
            "overhead of encryption may be understated.") in section.findings


@pytest.mark.parametrize("driver_cpu_s, server_cpu_s, found", [
    (6.0, 50.0, False),  # the client 10%, the server 83–92%: the server set the pace
    (6.0, 24.0, True),  # the client 10%, the server 40–44%: half the machine idle
])
def test_an_idle_machine_is_found_and_a_saturated_server_is_not(tmp_path: Path, driver_cpu_s: float,
                                                                 server_cpu_s: float, found: bool) -> None:
    run = read_run(_server_run(tmp_path, driver_cpu_s, server_cpu_s, worker_processes=2.0))
    section = oltp.section(run, summary_records(run))
    assert section is not None
    sentences = [f for f in section.findings if "not the bottleneck" in f]
    assert bool(sentences) == found
    if found:
        assert "(2 users as processes)" in sentences[0] and "left 46–50% of the machine's CPU idle" in sentences[0]


def test_an_embedded_run_has_no_saturation_table(run_dir: Path) -> None:
    run = read_run(run_dir)
    section = oltp.section(run, summary_records(run))
    assert section is not None and "OLTP saturation" not in [b.title for b in section.blocks]
    assert not [f for f in section.findings if "bottleneck" in f]


def test_in_one_minute_leads_with_the_rates_and_calls_a_drop_a_cost(run_dir: Path) -> None:
    """An oltp plan is read for its TPM and NOPM, not its load: 10% fewer transactions is a cost
    of -10%, a drop, in the first sentence."""
    from tdebench.report.sections.headline import headline

    run = read_run(run_dir)
    (sentence, *_) = headline(run, summary_records(run))
    assert sentence.startswith("sqlite · oltp W=1 · "), sentence
    assert re.search(r"· (load|stress) (TPM|NOPM) \(", sentence), sentence
    assert re.search(r"costs -10\.\d% of the rate: aes-256-cbc -10\.\d% \[-1\d\.\d, -\d\.\d\]", sentence), sentence


def test_a_plan_of_the_load_test_alone_is_read_for_its_rates_not_its_data_load(tmp_path: Path) -> None:
    """oltp's load test shares its name with the data load's records (test "load", step
    "total", TPC-H's headline): with no stress test beside it, the first sentence is still about
    TPM or NOPM, not the data load (here 2.5 times slower encrypted, "more than doubles")."""
    from tdebench.report.sections.headline import headline

    store = ResultStore(tmp_path)
    store.start(PLAN, {"cpu": {"cores": 2}})
    for repetition in range(1, REPETITIONS + 1):
        for encryption, factor in FACTORS.items():
            trial = TrialKey("sqlite", encryption, "oltp", 1.0, repetition)
            loading = 5.0 * (2.5 if encryption != "none" else 1.0) * (1 + 0.01 * repetition)
            store.append(Measurement(trial, "load", "total", {"elapsed_s": loading}))
            for record in _run_records(trial, "load", factor):
                store.append(record)
            store.append(TrialOutcome(trial, "ok", cache="warm", cache_dropped=False, elapsed_s=40.0))
    run = read_run(tmp_path)
    (sentence, *_) = headline(run, summary_records(run))
    assert re.search(r"· load (TPM|NOPM) \(", sentence), sentence
    assert re.search(r"costs -10\.\d% of the rate", sentence) and "doubles" not in sentence, sentence


def test_a_rate_that_halves_is_named_apart_and_a_higher_rate_is_not_a_cost() -> None:
    from dataclasses import dataclass
    from types import SimpleNamespace

    from tdebench.report.sections.headline import _grouped
    from tdebench.stats import PAIRED, Overhead

    @dataclass(frozen=True)
    class Cell:  # what the grouping reads of a cell; hashable, as the layer splits look cells up
        encryption: str

    def rate(encryption: str, pct: float, low: float, high: float) -> SimpleNamespace:
        return SimpleNamespace(cell=Cell(encryption),
                               overhead=Overhead(pct, low, high, 0.001, 5, 5, PAIRED))

    groups = _grouped([rate("half", -60.0, -65.0, -55.0), rate("drop", -8.0, -10.0, -6.0),
                       rate("more", 7.0, 5.0, 9.0)], None, rate=True)
    assert groups == [
        "costs -8.0% of the rate: drop -8.0% [-10.0, -6.0]",
        "halves the rate or worse (avoid where speed matters): half -60.0% [-65.0, -55.0]",
        "a higher rate than no encryption, with no placebo arm to tell it from noise: more +7.0% [+5.0, +9.0]",
    ]


MEMORY_FACTORS = {64: 0.8, 128: 0.95}  # aes-256-cbc's TPM against none's at each memory_mb


def _write_memory_run(directory: Path) -> None:
    """sqlite's load test at the memory sizes of MEMORY_FACTORS, three rounds of each encryption."""
    store = ResultStore(directory)
    store.start(PLAN.replace('name = "sqlite"\n', 'name = "sqlite"\nmemory_mb = [64, 128]\n'), {"logical_cores": 2})
    for repetition in range(1, REPETITIONS + 1):
        for memory, factor in MEMORY_FACTORS.items():
            for encryption in FACTORS:
                trial = TrialKey("sqlite", encryption, "oltp", 1.0, repetition, memory_mb=memory)
                for record in _run_records(trial, "load", factor if encryption != "none" else 1.0):
                    store.append(record)
                store.append(TrialOutcome(trial, "ok", cache="warm", cache_dropped=False, elapsed_s=40.0))


def test_tpm_and_nopm_are_the_summary_records_per_memory_size(tmp_path: Path) -> None:
    """A run of one engine at two memory sizes: a row per size, each encryption compared with
    `none` at its own size, and the figures those of summary.csv's records (cell_data's rates)."""
    _write_memory_run(tmp_path)
    factors = MEMORY_FACTORS
    run = read_run(tmp_path)
    records = summary_records(run)
    table = oltp.throughput_table(run, records)
    rows = {(r["memory_mb"], r["encryption"]): r for r in table.rows}
    assert set(rows) == {(m, e) for m in factors for e in FACTORS}
    assert "memory (MB)" in [column.header for column in table.columns]
    for memory, factor in factors.items():
        assert rows[(memory, "aes-256-cbc")]["tpm_vs_none_pct"] == pytest.approx(100 * (factor - 1), abs=0.1)
    tpm = {(r.cell.memory_mb, r.cell.encryption): r for r in records if r.cell.metric == "tpm"}
    assert all(rows[key]["tpm"] == tpm[key].summary.median and rows[key]["tpm_ci_low"] == tpm[key].summary.ci_low
               for key in rows)
    sentences = oltp.findings(oltp.throughput_table(run, records, csv=False).rows)
    assert [s.split(",")[0] for s in sentences] == ["OLTP on sqlite 64 MB (W=1)", "OLTP on sqlite 128 MB (W=1)"]


def test_two_memory_sizes_are_kept_apart_in_the_summary_and_the_report(tmp_path: Path) -> None:
    """summary.csv holds TPM and NOPM per memory size, each compared with `none` at that size
    (-20% at 64 MB, -5% at 128 MB), and the report keeps the sizes apart in its throughput and
    latency tables, its plots over time and its findings."""
    _write_memory_run(tmp_path)
    written = build(tmp_path)
    with (tmp_path / "summary.csv").open() as fh:
        tpm = {(row["memory_mb"], row["encryption"]): row for row in csv.DictReader(fh)
               if (row["test"], row["step"], row["metric"]) == ("load", "mix", "tpm")}
    assert set(tpm) == {(str(m), e) for m in MEMORY_FACTORS for e in FACTORS}
    for memory, factor in MEMORY_FACTORS.items():
        assert float(tpm[(str(memory), "aes-256-cbc")]["overhead_pct"]) == pytest.approx(100 * (factor - 1), abs=0.1)
    report = (tmp_path / "report.md").read_text()
    throughput = report.split("\n## OLTP throughput", 1)[1].split("\n## ", 1)[0]
    latency = report.split("\n## OLTP latency", 1)[1].split("\n## ", 1)[0]
    for memory in MEMORY_FACTORS:
        assert f"| sqlite | {memory} | 1 | load | aes-256-cbc | client | 2 | 3 |" in throughput
        assert sum(line.startswith(f"| sqlite | {memory} | 1 | load |") for line in latency.splitlines()) == \
            len(FACTORS) * len(COMMITTED)
        assert f"- OLTP on sqlite {memory} MB (W=1), load test" in report
        assert drawn(tmp_path / "plots" / f"oltp-throughput-sqlite_{memory}_MB-w1.png")
        assert tmp_path / "plots" / f"oltp-throughput-sqlite_{memory}_MB-w1.png" in written

