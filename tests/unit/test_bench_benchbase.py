"""bench/benchbase.py reads BenchBase's output as tdebench counts: New-Orders committed in the
measured window per minute of it. These check that reading on a BenchBase output written by
hand in its formats (BenchBase 2023's `.summary.json`, `.raw.csv` and `--json-histograms`),
and that its config, which holds the password, is private."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tdebench.keys import Secret
from tdebench.measure.process import ProcessCounters

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import benchbase  # noqa: E402  (bench/ is no package: the script, as it runs)

_CLASS = "com.oltpbenchmark.benchmarks.tpcc.procedures."


def _output(out: Path) -> None:
    """30 s measured: 100 New-Orders sampled (1 of its 50 over the whole run rolled back on
    purpose), 90 Payments (all committed), 10 Deliveries (2 of 10 aborted)."""
    (out / "tpcc_1.summary.json").write_text(json.dumps({"Elapsed Time (nanoseconds)": 30_000_000_000}))
    rows = ["1,NewOrder,1.0,5,0,1"] * 100 + ["2,Payment,1.0,5,0,1"] * 90 + ["4,Delivery,1.0,5,0,1"] * 10
    (out / "tpcc_1.raw.csv").write_text("Transaction Type Index,Transaction Name,Start Time (microseconds),"
                                        "Latency (microseconds),Worker Id (start number),"
                                        "Phase Id (index in config file)\n" + "\n".join(rows) + "\n")
    (out / "histograms.json").write_text(json.dumps({
        "completed": {"HISTOGRAM": {f"{_CLASS}NewOrder/01": 49, f"{_CLASS}Payment/02": 45,
                                    f"{_CLASS}Delivery/04": 8}},
        "aborted": {"HISTOGRAM": {f"{_CLASS}NewOrder/01": 1, f"{_CLASS}Delivery/04": 2}},
        "rejected": {"HISTOGRAM": {}}, "unexpected": {"HISTOGRAM": {}}}))


def _counters(cpu_s: float) -> dict[int, ProcessCounters]:
    return {1: ProcessCounters(cpu_s, 0, 0, 0, 0)}


def test_benchbase_figures_count_the_windows_committed_new_orders_per_minute(tmp_path: Path) -> None:
    _output(tmp_path)
    watch = SimpleNamespace(marks=[(_counters(10.0), _counters(1.0)), (_counters(25.0), _counters(4.0))], lines=[])
    figures = benchbase.benchbase_figures(tmp_path, watch)
    assert figures.nopm == pytest.approx(100 * 49 / 50 * 2)  # per minute of a 30 s window
    assert figures.tpm == pytest.approx((100 * 49 / 50 + 90 + 10 * 8 / 10) * 2)
    assert (figures.server_cpu_s, figures.driver_cpu_s) == (15.0, 3.0)
    assert figures.driver_share == pytest.approx(3 / 18)


def test_benchbase_figures_refuse_a_run_whose_window_was_not_seen(tmp_path: Path) -> None:
    _output(tmp_path)
    with pytest.raises(RuntimeError, match="did not mark its measured window"):
        benchbase.benchbase_figures(tmp_path, SimpleNamespace(marks=[], lines=["BenchBase's log\n"]))


def test_the_config_is_private_and_asks_for_tdebenchs_isolation_and_mix(tmp_path: Path) -> None:
    password = Secret(bytes(range(32)))
    server = SimpleNamespace(socket=tmp_path / "mysqld.sock", _password=password)
    config = tmp_path / "tpcc.xml"
    benchbase.write_config(config, "mariadb", server, 1, 4, 5, 30)
    text = config.read_text()
    assert config.stat().st_mode & 0o777 == 0o600
    assert f"<password>{password.hex()}</password>" in text
    assert f"localSocket={tmp_path / 'mysqld.sock'}&amp;useServerPrepStmts=true" in text
    for element in ("<isolation>TRANSACTION_REPEATABLE_READ</isolation>", "<terminals>4</terminals>",
                    "<warmup>5</warmup><time>30</time><rate>unlimited</rate><weights>45,43,4,4,4</weights>",
                    "<postExecutionWait>0</postExecutionWait>"):
        assert element in text
