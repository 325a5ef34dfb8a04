"""memory_mb as a plan axis: trial identity, storage, the comparison within one memory value,
and the report's cache fit (data size against the memory the engine was given)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from fake_engine import FAKE_ENC, FakeEngine, FakeWorkload
from fakes import PLAN, SQUEEZE, as_before_defaults_were_recorded, write_fake_run
from tdebench import report
from fake_clock import FakeClock
from tdebench.plan import EngineChoice, Plan, WorkloadSpec
from tdebench.report.data import units
from tdebench.report.sections import answer
from tdebench.report.summaries import cache, plots, resources
from tdebench.report.data.records import summary_records
from tdebench.run.runner import Runner
from tdebench.results import FORMAT, Measurement, RunData, TrialKey, TrialOutcome, from_json, to_json, upgrade
from tdebench.store import ResultStore, read_run


def test_a_trial_key_with_memory_round_trips_and_old_records_still_load(tmp_path: Path) -> None:
    key = TrialKey("duckdb", "aes-256-gcm", "tpch", 1.0, 2, memory_mb=64)
    assert key.id == "duckdb/aes-256-gcm/tpch/sf1/m64/r2"
    outcome = TrialOutcome(key, "ok", cache="cold", cache_dropped=True, elapsed_s=1.0, cache_mb=64)
    store = ResultStore(tmp_path)
    store.start("name = 'x'\n", {})
    store.append(outcome)
    assert read_run(tmp_path).trials == [outcome]
    # without memory_mb a record is written exactly as before memory was an axis
    plain = TrialKey("duckdb", "none", "tpch", 1.0, 1)
    assert plain.id == "duckdb/none/tpch/sf1/r1"
    data = to_json(TrialOutcome(plain, "ok", cache="warm", cache_dropped=False, elapsed_s=1.0))
    assert "memory_mb" not in data["trial"]
    # a record from an older version: no memory_mb in its trial, no cache_mb
    old = {"kind": "trial", "trial": {"engine": "duckdb", "encryption": "none", "workload": "tpch",
                                      "scale": 0.01, "repetition": 1},
           "status": "ok", "cache": "warm", "cache_dropped": False, "elapsed_s": 2.0}
    loaded = from_json(json.loads(json.dumps(old)))
    assert isinstance(loaded, TrialOutcome)
    assert loaded.trial == TrialKey("duckdb", "none", "tpch", 0.01, 1)
    assert loaded.trial.memory_mb is None and loaded.cache_mb is None


@pytest.mark.parametrize("version", [1, FORMAT])
def test_a_stored_trial_is_grouped_by_its_memory_as_it_is_read(version: int) -> None:
    """Every format writes a trial's memory_mb when it has one, so a stored crud record reads back
    with its memory in its configuration (`TrialKey.config`): no format change was needed."""
    stored = {"kind": "measurement", "test": "select", "step": "total", "metrics": {"elapsed_s": 0.1},
              "trial": {"engine": "sqlite", "encryption": "none", "workload": "crud", "scale": 1000.0,
                        "repetition": 1, "memory_mb": 2}}
    loaded = from_json(upgrade(json.loads(json.dumps(stored)), version))
    assert isinstance(loaded, Measurement)
    assert loaded.trial.config == ("sqlite", "none", "crud", 1000.0, 2)


def _run(directory: Path, memory_mb: tuple[int, ...]) -> RunData:
    plan = Plan(name="fake", repetitions=2, warmups=0, cache="warm", order="interleaved", seed=7,
                engines=(EngineChoice("fake", ("none", FAKE_ENC.name), memory_mb),),
                workloads=(WorkloadSpec("fakeload", (1.0,), ("power",), 1),), text="name = 'fake'\n")
    clock = FakeClock()
    store = ResultStore(directory / "out")
    store.start(plan.text, {})
    given = []

    def engine(name: str, **settings) -> FakeEngine:
        given.append(settings["memory_mb"])
        return FakeEngine(**settings)

    summary = Runner(plan=plan, store=store, data_dir=directory / "data", clock=clock, engine_factory=engine,
                     workload_factory=lambda name: FakeWorkload(clock), empty_cache=lambda evict, root: True,
                     workspace_parent=directory).run()
    assert summary.ok
    run_data = read_run(directory / "out")
    assert given == [o.trial.memory_mb for o in run_data.trials]  # each trial's engine got its memory
    return run_data


def test_the_runner_gives_each_trial_its_memory_and_records_the_cache(tmp_path: Path) -> None:
    data = _run(tmp_path, (32, 128))
    assert sorted((o.trial.memory_mb, o.cache_mb) for o in data.trials) == [(32, 32)] * 4 + [(128, 128)] * 4
    data = _run(tmp_path / "default", ())
    assert {(o.trial.memory_mb, o.cache_mb) for o in data.trials} == {(None, 0)}  # no limit set


def _record(records, engine: str, encryption: str, memory: int | None, step: str = "geomean"):
    return next(r for r in records if (r.cell.engine, r.cell.encryption, r.cell.memory_mb, r.cell.test,
                                       r.cell.step) == (engine, encryption, memory, "power", step))


@pytest.fixture(scope="module")
def two_memories(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fake run at 4 MB (data 2.1× to 2.6× the cache: SQUEEZE times the cost) and 64 MB
    (fits), with the placebo, and its report built: read, never changed, by the tests below."""
    run_dir = tmp_path_factory.mktemp("two-memories")
    write_fake_run(run_dir, placebo=True, memories=(4, 64))
    report.build(run_dir)
    return run_dir


def test_an_encryption_is_compared_with_none_at_the_same_memory(two_memories: Path) -> None:
    """At 4 MB the fake databases (8–10.5 MiB) do not fit and encryption costs SQUEEZE times
    as much; each memory value's overhead must come from its own baseline."""
    tmp_path = two_memories
    records = summary_records(read_run(tmp_path))
    small, large = (_record(records, "duckdb", "aes-256-gcm", memory) for memory in (4, 64))
    assert large.overhead is not None and small.overhead is not None
    assert large.overhead.pct == pytest.approx(3.0, abs=0.5)
    assert small.overhead.pct == pytest.approx(3.0 * SQUEEZE, abs=0.7)
    assert _record(records, "duckdb", "none", 4).overhead is None  # each memory value has its baseline
    with (tmp_path / "summary.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0])[:3] == ["engine", "memory_mb", "encryption"]
    assert {row["memory_mb"] for row in rows} == {"4", "64"}
    text = (tmp_path / "report.md").read_text()
    assert "- duckdb 4 MB aes-256-gcm (3 rounds): power test +9." in text
    assert "- duckdb 64 MB aes-256-gcm (3 rounds): power test +3." in text
    assert (tmp_path / "plots" / "overhead-duckdb-tpch-sf0.01.png").is_file()


def _built(figure: plots.Figure):
    """The Matplotlib figure behind `figure` (`plots.later`), built but not drawn."""
    build, args = figure.draw.args
    return build(*args)


def _rows(axes) -> list[str]:
    """An axes' row labels, top to bottom."""
    labels = [(tick.get_position()[1], tick.get_text()) for tick in axes.get_yticklabels()]
    top_down = sorted(labels, reverse=not axes.yaxis_inverted())
    return [text for _, text in top_down]


def test_an_engine_at_two_memories_gets_one_figure_of_each_kind_its_rows_by_cache_size(two_memories: Path) -> None:
    """The per-query heat map, the resource view and the overhead plot show an engine's cache
    sizes in one figure, the largest on top, each row named by its size, not a figure per size;
    the lines over time stay one figure per size (a size's trials ran apart)."""
    names = sorted(path.name for path in (two_memories / "plots").iterdir() if "duckdb" in path.name)
    assert names == ["cost-curve-duckdb--tpch-sf0.01.png", "overhead-duckdb-tpch-sf0.01.png",
                     "queries-duckdb-tpch-sf0.01-power.png", "queries-duckdb-tpch-sf0.01-throughput.png",
                     "resource-view-duckdb-tpch-sf0.01.png", "resources-duckdb_4_MB-tpch-sf0.01.png",
                     "resources-duckdb_64_MB-tpch-sf0.01.png"]
    run = read_run(two_memories)
    records = summary_records(run)
    heat_map = next(f for f in plots.query_plots(records) if f.name == "queries-duckdb-tpch-sf0.01-power.png")
    axes = _built(heat_map).axes[0]
    rows = _rows(axes)
    assert [row.split(" · ")[0] for row in rows] == ["64 MB"] * 3 + ["4 MB"] * 3
    assert sorted(row.split(" · ")[1] for row in rows[:3]) == ["aes-256-ctr", "aes-256-gcm", "placebo"]
    assert "none's median under each query, its range over the cache sizes" in axes.get_title()
    used = resources.cpu_rows(run, records)
    view = next(f for f in resources.resource_view(used) if "duckdb" in f.name)
    cpu = _built(view).axes[0]
    assert [row.split(" · ")[0] for row in _rows(cpu)] == ["64 MB"] * 4 + ["4 MB"] * 4
    assert _rows(cpu)[0] == "64 MB · none"


def test_an_overhead_plot_leaves_to_the_cost_curve_the_figures_it_draws_at_every_size(two_memories: Path) -> None:
    """A headline figure the cost curve draws against data ÷ cache is not drawn again a size at a
    time: the overhead plot keeps the others (the database size), each row with its size's floor."""
    run = read_run(two_memories)
    records = summary_records(run)
    ratios = {config: regime.ratio for config, regime in cache.regimes(run).items()}
    drawn = plots.curved(records, ratios)
    assert {("duckdb", "", "tpch", 0.01, "power geomean", memory) for memory in (4, 64)} <= drawn
    # a size whose data ÷ cache is not known is not on the curve (here, one size left: no curve at
    # all): its overheads stay in the plot
    unknown = {config: ratio for config, ratio in ratios.items() if config != ("duckdb", 4, "tpch", 0.01)}
    assert not {key for key in plots.curved(records, unknown) if key[0] == "duckdb"}
    kept = next(f for f in plots.overhead_plots(records, plots.curved(records, unknown)) if "duckdb" in f.name)
    power = next(axes for axes in _built(kept).axes if axes.get_title().startswith("power geomean"))
    assert [row.split(" · ")[0] for row in _rows(power)] == ["64 MB"] * 2 + ["4 MB"] * 2
    everything = next(f for f in plots.overhead_plots(records) if "duckdb" in f.name)
    left = next(f for f in plots.overhead_plots(records, drawn) if "duckdb" in f.name)
    titles = [[axes.get_title().split("\n")[0] for axes in _built(figure).axes if axes.get_visible()]
              for figure in (everything, left)]
    assert "power geomean" in titles[0] and "power geomean" not in titles[1]
    assert titles[1] and set(titles[1]) < set(titles[0])
    rows = _rows(_built(left).axes[0])
    assert [row.split(" · ")[0] for row in rows] == ["64 MB"] * 2 + ["4 MB"] * 2  # the placebo is the band


def test_a_run_without_memory_has_no_memory_column(tmp_path: Path) -> None:
    write_fake_run(tmp_path)
    report.build(tmp_path)
    with (tmp_path / "summary.csv").open() as fh:
        assert "memory_mb" not in next(csv.reader(fh))
    assert cache.cache_fit_table(read_run(tmp_path)) is None  # cache not recorded: no section
    assert "## Cache fit" not in (tmp_path / "report.md").read_text()


def test_a_run_entirely_in_cache_says_its_overheads_are_the_cipher_path(tmp_path: Path) -> None:
    write_fake_run(tmp_path, memories=(64,))
    run_data = read_run(tmp_path)
    assert cache.findings(run_data) == [
        "tpch sf0.01 runs entirely in cache (databases up to 10.50 MiB, every engine's cache larger, nothing "
        "dropped): these overheads are the CPU cost of the cipher path, not I/O."]
    table = cache.cache_fit_table(run_data)
    assert table is not None
    assert {(row["cache"], row["fits"], row["regime"]) for row in table.rows} == {("64 MB", "yes", cache.IN_MEMORY)}
    report.build(tmp_path)
    text = (tmp_path / "report.md").read_text()
    findings = text.split("## Failures")[0]
    assert "runs entirely in cache" in findings and "## Cache fit" in text


def test_sqlites_default_page_cache_is_its_2000_kib_and_a_larger_database_does_not_fit(tmp_path: Path) -> None:
    """The demo's regime: no memory_mb, so SQLite's default page cache (never "no limit") against
    a database four times its size, named in the table, the findings and the headline."""
    write_fake_run(tmp_path, memories=(None,))
    run_data = read_run(tmp_path)
    table = cache.cache_fit_table(run_data)
    assert table is not None and "memory_mb" not in table.keys
    rows = {(row["engine"], row["encryption"]): row for row in table.rows}
    assert (rows[("sqlite", "aes-256-cbc")]["cache"], rows[("sqlite", "aes-256-cbc")]["fits"]) == ("1.95 MB", "no")
    assert (rows[("duckdb", "aes-256-gcm")]["cache"], rows[("duckdb", "aes-256-gcm")]["fits"]) == ("19,251 MB", "yes")
    assert not any("no limit" in row["cache"] for row in table.rows)
    (sentence,) = cache.findings(run_data)
    assert sentence.startswith("tpch sf0.01: the data is larger than the engine's cache on sqlite (8.25 MiB, "
                               "4.2× its 1.95 MB cache): these configurations decrypt pages again on every read")
    regimes = cache.regimes(run_data)
    sqlite, duckdb = regimes[("sqlite", None, "tpch", 0.01)], regimes[("duckdb", None, "tpch", 0.01)]
    assert (sqlite.words, sqlite.spills) == ("data 4.2× the engine's 1.95 MB cache: pages decrypted again on every "
                                             "read", True)
    assert (duckdb.words, duckdb.spills) == ("data fits in the engine's 19,251 MB cache", False)
    assert sqlite.ratio == pytest.approx(8.25 / 1.953125, rel=0.01)
    report.build(tmp_path)
    first = (tmp_path / "report.md").read_text().split("**Contents:**")[0]
    assert "data 4.2× the engine's 1.95 MB cache: pages decrypted again on every read" in first


def test_an_older_runs_no_limit_is_read_as_the_embedded_engines_default(tmp_path: Path) -> None:
    """Runs from before the defaults were recorded stored 0 ("no limit set"): the report reads an
    embedded engine's default as the run's facts of the engine give it, and says so."""
    write_fake_run(tmp_path, memories=(None,))
    as_before_defaults_were_recorded(tmp_path)
    table = cache.cache_fit_table(read_run(tmp_path))
    assert table is not None
    sqlite_rows = [row for row in table.rows if row["engine"] == "sqlite"]
    assert {(row["cache"], row["fits"]) for row in sqlite_rows} == {("1.95 MB (default, not recorded)", "no")}
    duckdb_rows = [row for row in table.rows if row["engine"] == "duckdb"]  # 80% of the run's 16 GiB
    assert {(row["cache"], row["fits"]) for row in duckdb_rows} == {("13,107 MB (default, not recorded)", "yes")}


def test_cold_data_larger_than_the_cache_is_named_with_its_ratio(tmp_path: Path) -> None:
    write_fake_run(tmp_path, plan=PLAN.replace('"warm"', '"cold"'), memories=(4, 64), cache="cold")
    run_data = read_run(tmp_path)
    (sentence,) = cache.findings(run_data)
    assert sentence.startswith("tpch sf0.01: the data is larger than the engine's cache on duckdb 4 MB (10.40 "
                               "MiB, 2.6× its 4 MB cache), sqlite 4 MB (8.25 MiB, 2.1× its 4 MB cache): these "
                               "configurations decrypt pages again on every read, from disk after the OS cache was "
                               "emptied before each measured test")
    assert "64 MB" not in sentence
    table = cache.cache_fit_table(run_data)
    assert table is not None and table.keys[:2] == ["engine", "memory_mb"]
    rows = {(row["engine"], row["memory_mb"], row["encryption"]): row for row in table.rows}
    small, large = rows[("duckdb", 4, "aes-256-gcm")], rows[("duckdb", 64, "aes-256-gcm")]
    assert (small["cache"], small["fits"], small["regime"]) == ("4 MB", "no", cache.EVICTED_DISK)
    assert (large["cache"], large["fits"], large["regime"]) == ("64 MB", "yes", cache.DISK_ONCE)
    assert small["os_cache"] == "the database's files evicted before each measured test"
    # a run from before evict (format 4) dropped the whole OS cache: the table says so
    results = tmp_path / "results.jsonl"
    results.write_text(results.read_text().replace('"evicted": "files"', '"evicted": "os"'))
    table = cache.cache_fit_table(read_run(tmp_path))
    assert table is not None and {row["os_cache"] for row in table.rows} == {"dropped before each measured test"}


def test_a_cache_not_known_is_never_read_as_fitting(tmp_path: Path) -> None:
    """An older run's 0 for DuckDB on a machine whose memory was not recorded: its cache is not
    known, so neither "fits" nor "runs entirely in cache" is claimed for it."""
    write_fake_run(tmp_path, memories=(None,), environment={})
    as_before_defaults_were_recorded(tmp_path)
    run_data = read_run(tmp_path)
    table = cache.cache_fit_table(run_data)
    assert table is not None
    assert {(row["cache"], row["fits"]) for row in table.rows if row["engine"] == "duckdb"} == {
        ("not known", "not known")}
    (sentence,) = cache.findings(run_data)
    assert "duckdb: cache not known" in sentence and "runs entirely in cache" not in sentence
    assert ("duckdb", None, "tpch", 0.01) not in cache.regimes(run_data)


def test_two_memory_sizes_report_the_overhead_at_each_and_draw_the_cost_curve(two_memories: Path) -> None:
    """4 MB and 64 MB: one point each per encryption and the placebo, one curve per engine, in
    report.md and report.html."""
    tmp_path = two_memories
    run_data = read_run(tmp_path)
    records = summary_records(run_data)
    small, large = (_record(records, "sqlite", "aes-256-cbc", memory) for memory in (4, 64))
    assert small.overhead.pct > large.overhead.pct > 0  # type: ignore[union-attr]
    ratios = {config: regime.ratio for config, regime in cache.regimes(run_data).items()}
    assert ratios[("sqlite", 4, "tpch", 0.01)] > 1 > ratios[("sqlite", 64, "tpch", 0.01)]
    figures = plots.cost_curves(records, ratios)
    assert [f.name for f in figures] == ["cost-curve-duckdb--tpch-sf0.01.png", "cost-curve-sqlite--tpch-sf0.01.png"]
    assert all(f.png.startswith(b"\x89PNG") for f in figures)
    assert plots.cost_curves(records, {k: v for k, v in ratios.items() if k[1] == 64}) == []  # one point: no curve
    text = (tmp_path / "report.md").read_text()
    assert "## Cost curve" in text and "plots/cost-curve-sqlite--tpch-sf0.01.png" in text
    assert "cost-curve-sqlite" in (tmp_path / "manifest.json").read_text()
    assert "Cost curve" in (tmp_path / "report.html").read_text()


def test_the_answer_states_each_encryptions_own_data_to_cache_ratio_as_the_cache_fit_table_does(
        two_memories: Path) -> None:
    """An encryption's database can be larger than none's (here 2.1× to 2.6× the 4 MB cache): its
    answer row states its own ratio, the one the Cache fit table gives it, not its group's median."""
    run_data = read_run(two_memories)
    table = cache.cache_fit_table(run_data)
    assert table is not None
    given = {(row["engine"], row["encryption"], row["memory_mb"]): units.times(row["times"]) for row in table.rows}
    rows = [row for row in answer.rows(run_data, summary_records(run_data)) if row["encryption"] != "none"]
    stated = {(row["engine"], row["encryption"]): re.findall(r"(\d+) MB: [^;]*?\(data ([^ ]+) cache", row["cost"])
              for row in rows}
    assert len({ratio for found in stated.values() for memory, ratio in found if memory == "4"}) > 1
    for (engine, encryption), found in stated.items():
        assert [ratio for _, ratio in found] == [given[(engine, encryption, int(memory))] for memory, _ in found]


def test_the_headline_picture_shows_an_engines_cache_sizes_in_one_panel_per_figure(two_memories: Path) -> None:
    """headline.panels: an engine at two cache sizes has one panel per figure, not one per size: its
    rows grouped by size, the largest on top and cheapest first within it, each with its own size's
    floor band, and data ÷ cache of both sizes under the title (each size's, from the cache fit)."""
    from tdebench.report.data.records import floors, resolution
    from tdebench.report.sections.headline import panels

    run = read_run(two_memories)
    records = summary_records(run)
    drawn = [panel for panel in panels(run, records) if panel.title.startswith("duckdb ·")]
    assert [panel.title for panel in drawn] == ["duckdb · tpch sf0.01 · power test", "duckdb · tpch sf0.01 · data load"]
    power = drawn[0]
    assert power.ordered and power.floor is None
    sizes = [row.encryption.split(" · ")[0] for row in power.rows]
    assert sizes == ["64 MB"] * 2 + ["4 MB"] * 2
    for size in ("64 MB", "4 MB"):
        pcts = [row.pct for row in power.rows if row.encryption.startswith(size)]
        assert pcts == sorted(pcts)  # cheapest first within a size
    placebo = {record.cell.memory_mb: record for record in floors(records).values()
               if (record.cell.engine, record.cell.test, record.cell.step) == ("duckdb", "power", "geomean")}
    assert [row.floor for row in power.rows] == [resolution(placebo[64])] * 2 + [resolution(placebo[4])] * 2
    ratios = cache.regimes(run)
    assert power.regime == (f"data ÷ cache: 64 MB {units.times(ratios[('duckdb', 64, 'tpch', 0.01)].ratio)}, "
                            f"4 MB {units.times(ratios[('duckdb', 4, 'tpch', 0.01)].ratio)}")
    assert plots.headline_plot(drawn) is not None
