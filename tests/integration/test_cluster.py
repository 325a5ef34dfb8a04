"""One plan across a real Dask cluster on 127.0.0.1: a `dask scheduler` and two
`dask worker` processes (one "machine" resource each, no nanny, so a killed worker stays dead),
started and stopped here; DuckDB and SQLite at TPC-H SF 0.01, few rounds, to stay fast.

The workers share one data directory (they prepare the same Parquet files at once) and one
work directory, which must be empty after every run, however it ended.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pymysql
import pytest
from click.testing import CliRunner

from own_servers import OwnServer, own_mariadb
from tdebench.cli import main
from tdebench.plan import parse_plan, schedule
from tdebench.results import MOST_ROUNDS
from tdebench.store import manifest, read_run

pytest.importorskip("distributed")

ENCRYPTIONS = {"duckdb": '["none", "aes-256-gcm"]', "sqlite": '["none", "aes-256-cbc"]'}


def plan_text(name: str, order: str, engines: tuple[str, ...], repetitions: int) -> str:
    """A tiny plan: `repetitions` rounds with the placebo, TPC-H SF 0.01, one pass of the power test."""
    tables = "".join(f'\n[[engines]]\nname = "{engine}"\nencryptions = {ENCRYPTIONS[engine]}\n' for engine in engines)
    return (f'name = "{name}"\nrepetitions = {repetitions}\nwarmups = 0\nplacebo = true\norder = "{order}"\nseed = 5\n'
            f'{tables}\n[[workloads]]\nname = "tpch"\nscale = 0.01\ntests = ["power"]\npasses = 1\n')


# one round: a unit per engine (duckdb's and sqlite's none, cipher and placebo side by side), one
# per worker; a worker running unit after unit is the adaptive test's (three rounds on two workers)
PLAN = plan_text("across", "lockstep", ("duckdb", "sqlite"), repetitions=1)
# one trial after another within a unit (a worker has one trial in flight); two units, one per
# worker, of none and aes-256-gcm (no placebo: the plan across both workers above runs it)
ONE_AT_A_TIME = plan_text("one-at-a-time", "interleaved", ("duckdb",), repetitions=2).replace("placebo = true",
                                                                                         "placebo = false")
DASK = str(Path(sys.executable).parent / "dask")
UNIT = "tdebench.cluster.unit"
HOST = socket.gethostname()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def stop(process: subprocess.Popen) -> None:
    """Stop a process of this test and everything in its session."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@dataclass
class DaskCluster:
    directory: Path
    address: str = ""
    scheduler: subprocess.Popen | None = None
    workers: dict[str, subprocess.Popen] = field(default_factory=dict)

    def start(self) -> None:
        port = free_port()
        self.address = f"tcp://127.0.0.1:{port}"
        self.scheduler = self._spawn("scheduler", [DASK, "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                                   "--no-dashboard"])
        for name in ("w1", "w2"):
            self.start_worker(name)

    def _spawn(self, name: str, command: list[str]) -> subprocess.Popen:
        log = (self.directory / f"{name}.log").open("ab")
        # Dask's scratch (dask-scratch-space) in the test's directory, not in /tmp after the test
        environment = {**os.environ, "DASK_TEMPORARY_DIRECTORY": str(self.directory)}
        return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=environment)

    def start_worker(self, name: str) -> None:
        self.workers[name] = self._spawn(name, [DASK, "worker", self.address, "--name", name, "--nthreads", "1",
                                                "--resources", "machine=1", "--no-nanny", "--no-dashboard",
                                                "--host", "127.0.0.1"])
        wait_for(lambda: self._joined(name), 60, f"worker {name} to join")

    def _joined(self, name: str) -> bool:
        from distributed import Client

        with Client(self.address, timeout="10s") as client:
            return any(info.get("name") == name for info in client.scheduler_info(n_workers=-1)["workers"].values())

    def ensure_two_workers(self) -> None:
        for name, process in list(self.workers.items()):
            if process.poll() is not None:
                self.start_worker(name)

    def units_running(self) -> dict[str, list[psutil.Process]]:
        """Each worker's unit processes (python -m tdebench.cluster.unit) still running."""
        found = {}
        for name, process in self.workers.items():
            try:
                children = psutil.Process(process.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                children = []
            found[name] = [child for child in children if _is_unit(child)]
        return found

    def stop(self) -> None:
        for process in [*self.workers.values(), *([self.scheduler] if self.scheduler else [])]:
            stop(process)


def _is_unit(process: psutil.Process) -> bool:
    try:
        return UNIT in " ".join(process.cmdline())
    except psutil.NoSuchProcess:
        return False


def wait_for(condition: Callable[[], object], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds:g} s waiting for {what}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[DaskCluster]:
    running = DaskCluster(tmp_path_factory.mktemp("dask"))
    try:
        running.start()
        yield running
    finally:
        running.stop()
    assert not any(_is_unit(process) for process in psutil.process_iter()), "a unit process outlived its worker"


@pytest.fixture(scope="module")
def shared(tmp_path_factory) -> tuple[Path, Path]:
    """The data and work directories both workers use (one machine)."""
    base = tmp_path_factory.mktemp("shared")
    (base / "data").mkdir()
    (base / "work").mkdir()
    return base / "data", base / "work"


def workspaces_left(work_dir: Path) -> list[str]:
    return sorted(path.name for path in work_dir.iterdir())


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def client(cluster: DaskCluster, shared: tuple[Path, Path], directory: Path) -> tuple[subprocess.Popen, Path]:
    """`tdebench run ONE_AT_A_TIME --cluster ADDRESS` as a process of its own (to be interrupted
    or to lose a worker), with both workers up; and its run directory."""
    cluster.ensure_two_workers()
    plan, out = directory / "plan.toml", directory / "out"
    plan.write_text(ONE_AT_A_TIME)
    data, work = shared
    running = subprocess.Popen([sys.executable, "-m", "tdebench.cli", "run", str(plan), "--out", str(out), "--quiet",
                                "--cluster", cluster.address, "--data-dir", str(data), "--work-dir", str(work)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    return running, out


@pytest.fixture(scope="module")
def across(cluster: DaskCluster, shared: tuple[Path, Path], tmp_path_factory) -> Path:
    """The plan run across both workers through the CLI."""
    base = tmp_path_factory.mktemp("across")
    (base / "plan.toml").write_text(PLAN)
    data, work = shared
    result = invoke("run", str(base / "plan.toml"), "--out", str(base / "out"), "--quiet", "--cluster",
                    cluster.address, "--data-dir", str(data), "--work-dir", str(work))
    assert result.exit_code == 0, result.output
    assert workspaces_left(work) == []
    return base / "out"


def test_a_plan_runs_across_two_workers_into_a_run_directory_shaped_like_a_local_one(
        across: Path, shared: tuple[Path, Path], tmp_path: Path) -> None:
    run = read_run(across)
    planned = {spec.key for spec in schedule(parse_plan(PLAN))}
    assert run.complete_trials() == planned
    assert all(outcome.status == "ok" for outcome in run.trials)
    assert all(verdict.as_expected for verdict in run.verdicts)
    assert {outcome.host for outcome in run.trials} == {f"{HOST}/w1", f"{HOST}/w2"}
    assert set(run.environment["hosts"]) == {f"{HOST}/w1", f"{HOST}/w2"}
    assert {speed.host for speed in run.ciphers} == {f"{HOST}/w1", f"{HOST}/w2"}  # each host's own figures
    (tmp_path / "plan.toml").write_text(PLAN)
    data, work = shared
    local = invoke("run", str(tmp_path / "plan.toml"), "--out", str(tmp_path / "local"), "--quiet",
                   "--data-dir", str(data), "--work-dir", str(work))
    assert local.exit_code == 0, local.output
    assert _shape(manifest(across)) == _shape(manifest(tmp_path / "local"))


def test_every_overhead_is_measured_within_one_host(across: Path) -> None:
    run = read_run(across)
    hosts_of_round: dict[tuple, set] = {}
    for outcome in run.trials:
        key = outcome.trial
        hosts_of_round.setdefault((key.engine, key.workload, key.scale, key.repetition), set()).add(outcome.host)
    assert all(len(hosts) == 1 for hosts in hosts_of_round.values()), hosts_of_round
    summary = (across / "summary.csv").read_text()
    assert "aes-256-gcm" in summary and "@" not in summary  # two workers of one machine: alike, pooled


def test_killing_a_worker_mid_plan_loses_at_most_its_trial_in_flight(
        cluster: DaskCluster, shared: tuple[Path, Path], tmp_path: Path) -> None:
    running, out = client(cluster, shared, tmp_path)
    try:
        wait_for(lambda: cluster.units_running()["w1"] or running.poll() is not None, 120, "a unit on w1")
        os.killpg(cluster.workers["w1"].pid, signal.SIGKILL)  # the machine is gone: worker and unit at once
        cluster.workers["w1"].wait()
        _, stderr = running.communicate(timeout=300)
    finally:
        stop(running)
    assert running.returncode in (0, 1), stderr
    run = read_run(out)
    assert run.complete_trials() == {spec.key for spec in schedule(parse_plan(ONE_AT_A_TIME))}
    assert len([outcome for outcome in run.trials if outcome.status != "ok"]) <= 1, stderr
    assert workspaces_left(shared[1]) == []  # the survivor cleaned what the dead unit left
    cluster.ensure_two_workers()


def test_ctrl_c_of_the_client_leaves_nothing_on_either_worker_and_resume_finishes_the_run(
        cluster: DaskCluster, shared: tuple[Path, Path], tmp_path: Path) -> None:
    running, out = client(cluster, shared, tmp_path)
    try:
        wait_for(lambda: all(cluster.units_running().values()) or running.poll() is not None, 120,
                 "a unit on each worker")
        wait_for(lambda: '"kind": "trial"' in (out / "results.jsonl").read_text(), 120, "a trial to end")
        running.send_signal(signal.SIGINT)
        _, stderr = running.communicate(timeout=120)
    finally:
        stop(running)
    assert running.returncode == 130, stderr
    assert "interrupted" in stderr
    assert cluster.units_running() == {"w1": [], "w2": []}
    assert workspaces_left(shared[1]) == []
    assert f"tdebench report {out}" in stderr  # no report after an interrupt: the command that writes it
    before = read_run(out).complete_trials()
    assert 0 < len(before) < len(schedule(parse_plan(ONE_AT_A_TIME)))

    data, work = shared
    resumed = invoke("run", "--resume", str(out), "--quiet", "--cluster", cluster.address, "--data-dir", str(data),
                     "--work-dir", str(work))
    assert resumed.exit_code == 0, resumed.output
    run = read_run(out)
    assert run.complete_trials() == {spec.key for spec in schedule(parse_plan(ONE_AT_A_TIME))}
    assert len(run.resumes) == 1 and run.resumes[0].kept == len(before)
    assert workspaces_left(work) == []
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len([line for line in lines if line["kind"] == "trial"]) == len(run.complete_trials())  # none twice


def test_a_cluster_without_workers_or_with_a_bad_address_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "plan.toml").write_text(PLAN)
    result = invoke("run", str(tmp_path / "plan.toml"), "--out", str(tmp_path / "out"), "--cluster", "local:0")
    assert result.exit_code == 2 and "local:N with N from 1 to 64" in result.output
    result = invoke("run", str(tmp_path / "plan.toml"), "--out", str(tmp_path / "out"), "--cluster",
                    f"tcp://127.0.0.1:{free_port()}")
    assert result.exit_code == 2 and "no Dask scheduler answers there" in result.output
    sequential = tmp_path / "sequential.toml"
    sequential.write_text(PLAN.replace('order = "lockstep"', 'order = "sequential"'))
    result = invoke("run", str(sequential), "--out", str(tmp_path / "out"), "--cluster", "local:2")
    assert result.exit_code == 2 and 'not "sequential"' in result.output
    assert not (tmp_path / "out").exists()


def test_local_workers_leave_no_scratch_directory_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--cluster local:N`'s workers keep their scratch in a directory of tdebench's, removed with
    them (Dask's default, dask-scratch-space in the temporary directory, outlives them)."""
    from tdebench.cluster.client import Cluster  # after importorskip("distributed")

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with Cluster("local:1") as running:
        assert running.client is not None and len(running.client.scheduler_info()["workers"]) == 1
        made = list(tmp_path.iterdir())
        assert [path.name[:len("tdebench-dask-")] for path in made] == ["tdebench-dask-"]
        assert any(made[0].iterdir())  # the worker's scratch is in it
    assert list(tmp_path.iterdir()) == []


def _shape(files: list[str]) -> list[str]:
    """A run directory's files, but the resource plots: one is drawn only where the sampler took
    2 readings in a trial (report.plots.MIN_POINTS), which a quick trial on a quiet machine may
    not give, here or on a worker."""
    return [name for name in files if not name.startswith("plots/resources-")]


def test_clean_on_the_cluster_cleans_what_a_killed_run_left_on_each_worker_and_says_per_host(
        cluster: DaskCluster, shared: tuple[Path, Path]) -> None:
    cluster.ensure_two_workers()
    work = shared[1]
    killed = subprocess.run([sys.executable, "-c", "import sys, tempfile\nfrom pathlib import Path\n"
                             "from tdebench import runstate\n"
                             "root = Path(tempfile.mkdtemp(prefix=runstate.ROOT_PREFIX, dir=sys.argv[1]))\n"
                             "with runstate.recording(root): pass\n", str(work)], check=True)  # its run is gone
    assert killed.returncode == 0 and len(workspaces_left(work)) == 1
    result = invoke("clean", "--cluster", cluster.address, "--work-dir", str(work))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len([line for line in lines if "cleaned up after a killed run" in line]) == 1, result.output
    assert {line.split(": ")[0] for line in lines} == {f"{HOST}/w1", f"{HOST}/w2"}  # one answer per host
    assert f"nothing to clean in {work}" in result.output  # the other worker, after the first had cleaned
    assert workspaces_left(work) == []
    local = invoke("clean", "--cluster", "local:2")
    assert local.exit_code == 2 and "tdebench clean" in local.output


DRIVERS_PLAN = '''name = "two-drivers"
repetitions = 1
warmups = 0
order = "interleaved"
seed = 1

[[engines]]
name = "mariadb"
url = "{url}"
password_file = "{password_file}"
encryptions = ["none"]

[[workloads]]
name = "oltp"
scale = 1
tests = ["load"]
virtual_users = 4
rampup_s = 0.5
duration_s = 2
interval_s = 1
driver_hosts = 2
'''


@pytest.fixture(scope="module")
def own_mariadb_server(server_tmp_dir: Path) -> Iterator[OwnServer]:
    """A MariaDB started outside tdebench, reached by url (tests/own_servers.py)."""
    with own_mariadb(server_tmp_dir) as server:
        yield server


def _drivers_plan(directory: Path, server: OwnServer) -> Path:
    password_file = server.password_file(directory / "mariadb-password")
    plan = directory / "drivers.toml"
    plan.write_text(DRIVERS_PLAN.format(url=server.url(), password_file=password_file))
    return plan


def test_two_drivers_of_one_server_sum_to_the_databases_own_count(
        cluster: DaskCluster, shared: tuple[Path, Path], own_mariadb_server: OwnServer, tmp_path: Path) -> None:
    cluster.ensure_two_workers()
    plan = _drivers_plan(tmp_path, own_mariadb_server)
    work = shared[1]
    # the warehouse in tdebench's own data cache, where test_oltp_engines.py's (seed 1) is
    result = invoke("run", str(plan), "--out", str(tmp_path / "out"), "--quiet", "--cluster", cluster.address,
                    "--work-dir", str(work))
    assert result.exit_code == 0, result.output
    run = read_run(tmp_path / "out")
    assert len(run.trials) == 1 and run.trials[0].status == "ok", run.trials[0].error  # one trial, one verdict
    assert run.trials[0].host in (f"{HOST}/w1", f"{HOST}/w2")  # its owner; the other host only drove users
    for trial in run.trials:
        [mix] = [m for m in run.measurements if m.trial == trial.trial and m.step == "mix"]
        assert mix.metrics["driver_hosts"] == 2 and mix.metrics["virtual_users"] == 4
        # both hosts committed in the one window: the other host's users are in the sum
        assert 0 < mix.metrics["committed_elsewhere"] < mix.metrics["committed"]
        by_type = [m for m in run.measurements if m.trial == trial.trial and m.test == "load"
                   and m.step in ("new_order", "payment", "delivery", "order_status", "stock_level")]
        assert sum(m.metrics["committed"] for m in by_type) == mix.metrics["committed"]
        [consistency] = [m for m in run.measurements if m.trial == trial.trial and m.step == "consistency"]
        assert consistency.answer == "ok"
        # every driver's committed New-Orders over the run = the database's own count (sum(d_next_o_id))
        assert consistency.metrics["new_orders_counted"] == consistency.metrics["new_orders_in_database"] > 0
    assert workspaces_left(work) == []
    conn = pymysql.connect(host="127.0.0.1", port=own_mariadb_server.port, user="bench",
                           password=own_mariadb_server.password)
    try:
        with conn.cursor() as cursor:
            cursor.execute("SHOW DATABASES LIKE 'tdebench%'")
            assert cursor.fetchall() == ()  # every trial's database dropped
    finally:
        conn.close()


def test_driver_hosts_without_a_cluster_or_with_too_few_workers_is_refused(
        cluster: DaskCluster, own_mariadb_server: OwnServer, tmp_path: Path) -> None:
    plan = _drivers_plan(tmp_path, own_mariadb_server)
    result = invoke("run", str(plan), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2 and "driver_hosts = 2" in result.output and "--cluster" in result.output
    plan.write_text(plan.read_text().replace("driver_hosts = 2", "driver_hosts = 3"))
    result = invoke("run", str(plan), "--out", str(tmp_path / "out"), "--cluster", cluster.address)
    assert result.exit_code == 2 and "driver_hosts = 3 needs as many workers" in result.output, result.output
    assert not (tmp_path / "out").exists()


def test_an_adaptive_plan_adds_rounds_on_the_cluster_until_it_stops(
        cluster: DaskCluster, shared: tuple[Path, Path], tmp_path: Path) -> None:
    cluster.ensure_two_workers()
    # two rounds of none and aes-256-gcm, then rounds added while the CI is wider than ±0.01%: one more
    text = ONE_AT_A_TIME.replace("seed = 5", "seed = 5\ntarget_ci_pct = 0.01\nmax_repetitions = 3")
    (tmp_path / "plan.toml").write_text(text)
    data, work = shared
    result = invoke("run", str(tmp_path / "plan.toml"), "--out", str(tmp_path / "out"), "--quiet", "--cluster",
                    cluster.address, "--data-dir", str(data), "--work-dir", str(work))
    assert result.exit_code == 0, result.output
    run = read_run(tmp_path / "out")
    assert run.stopping is not None and run.stopping.reason == MOST_ROUNDS  # ±0.01% is out of reach
    assert {key.repetition for key in run.complete_trials()} == {1, 2, 3}  # a third round was added
    assert len(run.complete_trials()) == 3 * len(schedule(parse_plan(text))) // 2
    hosts_of_round: dict[int, set] = {}
    for outcome in run.trials:
        hosts_of_round.setdefault(outcome.trial.repetition, set()).add(outcome.host)
    assert all(len(hosts) == 1 for hosts in hosts_of_round.values()), hosts_of_round  # paired within a host
    assert workspaces_left(work) == []
