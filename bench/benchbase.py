"""Does tdebench's OLTP driver keep up with BenchBase's TPC-C on the same server?

The goal is tdebench's NOPM at least BenchBase's on the same server, warehouses and
users. This starts one server with tdebench's own settings and classes (MariaDB or
PostgreSQL, no encryption), loads W warehouses once for each side (tdebench's schema into its
own database, BenchBase's into a database `benchbase` by BenchBase's own loader), and then, for
each number of terminals, runs side by side, the order alternating between rounds:
  - tdebench's load test with client-side statements (`client`) and with stored procedures
    (`procedures`), its virtual users as worker processes (the default);
  - BenchBase's TPC-C (Java, JDBC, client-side prepared statements) with a config it writes:
    the same terminals, ramp-up (BenchBase's warm-up) and measured seconds, no keying or think
    time, no rate limit, the mix 45/43/4/4/4, the isolation tdebench runs at (the engine's
    default: REPEATABLE READ on MariaDB, READ COMMITTED on PostgreSQL).
Both connect over the server's unix socket (BenchBase's MariaDB driver through `localSocket`,
its PostgreSQL driver through junixsocket). Per run it prints NOPM and TPM, the server's CPU
time and the driver's (tdebench and its worker processes; BenchBase's JVM) over the measured
window, and per terminals the ratio tdebench ÷ BenchBase of NOPM: the geometric mean of the
rounds' own ratios with its 95% t-interval.

NOPM is the same quantity on both sides: New-Orders committed in the measured window per
minute of it. tdebench counts a transaction that ends in the window; BenchBase keeps a sample
per transaction that started and ended in its window (`.raw.csv`, aborts and errors included)
and counts outcomes per type over the whole run (`--json-histograms`): its committed
New-Orders in the window are its window's New-Order samples times the share of its New-Orders
that committed (the spec's 1% rolled back on purpose are neither side's NOPM). TPM likewise
over all five types.

BenchBase reads its password from its config file: the file is 0600 in a private temporary
directory (0700) with BenchBase's output, and both go when this ends; the password is in no
argv, log or output of this script.

Build BenchBase (JDK 21+) outside the repository, one profile per engine, e.g.
    export JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64
    mvn -B package -P mariadb -DskipTests -Dfmt.skip=true -Dmaven.compiler.release=23
    tar -xzf target/benchbase-mariadb.tgz -C /work/benchbase      # likewise -P postgres
and for PostgreSQL put junixsocket's jars into its lib/ (pgjdbc has no unix socket of its own):
    mvn dependency:copy -Dartifact=com.kohlschutter.junixsocket:junixsocket-common:2.10.1 \\
        -DoutputDirectory=/work/benchbase/benchbase-postgres/lib      # and junixsocket-native-common

    .venv/bin/python bench/benchbase.py --engine mariadb|postgres --benchbase DIR [--java JAVA]
        [--terminals 1 4 8] [--duration 30] [--rampup 5] [--rounds 3] [--warehouses 1]
        [--modes client procedures] [--only tdebench]
Without a usable BenchBase (or with `--only tdebench`, which runs tdebench's side alone) it says
why and exits 2.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import psutil

from oltp_driver import oltp_server, paired_ratio  # bench/, this script's directory
from tdebench.engines.base import Database
from tdebench.measure import process as counters
from tdebench.workloads.base import RunContext

BENCHBASE = "benchbase"
MODES = ("client", "procedures")
SCHEMA = "benchbase"  # BenchBase's database on the server, beside tdebench's own
_TYPES = ("NewOrder", "Payment", "OrderStatus", "Delivery", "StockLevel")
_WEIGHTS = "45,43,4,4,4"  # tdebench's mix (inputs.KINDS), in _TYPES' order
_ISOLATION = {"mariadb": "TRANSACTION_REPEATABLE_READ", "postgres": "TRANSACTION_READ_COMMITTED"}
_WINDOW_START = "Warmup complete, starting measurements"
_WINDOW_END = "Waiting for all terminals to finish"
_MIN_JAVA = 21


@dataclass(frozen=True)
class Figures:
    """One run's figures: per minute of its measured window, CPU seconds over it."""

    nopm: float
    tpm: float
    server_cpu_s: float
    driver_cpu_s: float

    @property
    def driver_share(self) -> float:
        total = self.server_cpu_s + self.driver_cpu_s
        return self.driver_cpu_s / total if total else 0.0


class Unusable(Exception):
    """BenchBase cannot run here (no directory, jar, Java or socket library): exit 2."""


@dataclass(frozen=True)
class BenchBase:
    """An unpacked BenchBase build for one engine and the Java that runs it."""

    home: Path
    java: str

    def command(self, config: Path, out: Path, *phases: str) -> list[str]:
        return [self.java, "-cp", f"{self.home / 'benchbase.jar'}:{self.home / 'lib'}/*",
                "com.oltpbenchmark.DBWorkload", "-b", "tpcc", "-c", str(config), "-d", str(out),
                *(f"--{phase}=true" for phase in phases)]


def find_benchbase(home: Path | None, java: str | None, engine: str) -> BenchBase:
    """The BenchBase in `home`, checked before any server starts; Unusable says what is missing."""
    if home is None:
        raise Unusable("no BenchBase: pass --benchbase DIR (an unpacked build, see this script's docstring), "
                       "or --only tdebench")
    jar = home / "benchbase.jar"
    if not jar.is_file() or not (home / "config" / "plugin.xml").is_file():
        raise Unusable(f"{home}: no BenchBase build (benchbase.jar and config/plugin.xml); see this script's "
                       "docstring for how to build one")
    driver = {"mariadb": "mariadb-java-client-*.jar", "postgres": "postgresql-*.jar"}[engine]
    if not any((home / "lib").glob(driver)):
        raise Unusable(f"{home}: its lib/ has no {driver}: build BenchBase with the profile {engine} (-P {engine})")
    if engine == "postgres" and not any((home / "lib").glob("junixsocket-native-common-*.jar")):
        raise Unusable(f"{home}: its lib/ has no junixsocket jars, which PostgreSQL's JDBC driver needs for the "
                       "server's unix socket; see this script's docstring")
    java = java or (str(Path(os.environ["JAVA_HOME"]) / "bin" / "java") if "JAVA_HOME" in os.environ
                    else shutil.which("java"))
    if java is None or not Path(java).is_file():
        raise Unusable(f"no Java: pass --java or set JAVA_HOME to a JDK {_MIN_JAVA}+ (found {java or 'none'})")
    version = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    found = re.search(r'version "(\d+)', version)
    if found is None or int(found.group(1)) < _MIN_JAVA:
        raise Unusable(f"{java}: BenchBase needs Java {_MIN_JAVA}+; this says {version.splitlines()[:1]}")
    return BenchBase(home, java)


def _url(engine: str, database: Any) -> str:
    """BenchBase's JDBC URL for the server's unix socket (the servers take no password over TCP)."""
    if engine == "mariadb":
        return f"jdbc:mariadb://localhost/{SCHEMA}?localSocket={database.socket}&useServerPrepStmts=true"
    socket = database.socket_dir / ".s.PGSQL.5432"
    return (f"jdbc:postgresql://localhost:5432/{SCHEMA}?socketFactory=org.newsclub.net.unix.AFUNIXSocketFactory"
            f"$FactoryArg&socketFactoryArg={socket}&sslmode=disable&reWriteBatchedInserts=true")


def write_config(path: Path, engine: str, database: Any, warehouses: int, terminals: int, rampup_s: int,
                 duration_s: int) -> None:
    """BenchBase's config for this server, 0600: it holds the database's password."""
    user = "root" if engine == "mariadb" else "postgres"
    kinds = "".join(f"<transactiontype><name>{name}</name><preExecutionWait>0</preExecutionWait>"
                    f"<postExecutionWait>0</postExecutionWait></transactiontype>" for name in _TYPES)
    text = (f"<?xml version=\"1.0\"?>\n<parameters>\n<type>{engine.upper()}</type>\n"
            f"<driver>{'org.mariadb.jdbc.Driver' if engine == 'mariadb' else 'org.postgresql.Driver'}</driver>\n"
            f"<url>{escape(_url(engine, database))}</url>\n<username>{user}</username>\n"
            f"<password>{database._password.hex()}</password>\n"
            "<reconnectOnConnectionFailure>true</reconnectOnConnectionFailure>\n"
            f"<isolation>{_ISOLATION[engine]}</isolation>\n<batchsize>128</batchsize>\n"
            f"<scalefactor>{warehouses}</scalefactor>\n<terminals>{terminals}</terminals>\n"
            f"<works><work><warmup>{rampup_s}</warmup><time>{duration_s}</time><rate>unlimited</rate>"
            f"<weights>{_WEIGHTS}</weights></work></works>\n"
            f"<transactiontypes>{kinds}</transactiontypes>\n</parameters>\n")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)


class _Watch:
    """BenchBase's output, read as it comes: the server's and the JVM's counters are taken when
    BenchBase says its measured window starts and when it ends."""

    def __init__(self, process: subprocess.Popen[str], server: Database) -> None:
        self.process, self.server = process, server
        self.lines: list[str] = []
        self.marks: list[tuple[counters.Snapshot, counters.Snapshot]] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        java = [psutil.Process(self.process.pid)]
        for line in self.process.stdout:
            if _WINDOW_START in line or (_WINDOW_END in line and self.marks):
                self.marks.append((counters.take(self.server.engine_processes()), counters.take(java)))
            self.lines.append(line)


def _run_benchbase(benchbase: BenchBase, database: Any, config: Path, out: Path, phases: Sequence[str]) -> _Watch:
    """Run BenchBase's `phases` (create, load, execute) to the end; RuntimeError with its output's
    tail (the password scrubbed) if it fails. Its JVM is killed if this is interrupted."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(mode=0o700)
    process = subprocess.Popen(benchbase.command(config, out, *phases) + ["--json-histograms",
                                                                        str(out / "histograms.json")],
                               cwd=benchbase.home, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        watch = _Watch(process, database)
        process.wait()
        watch.thread.join()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    if process.returncode != 0:
        tail = database._password.scrub("".join(watch.lines[-30:]))
        raise RuntimeError(f"BenchBase {' '.join(phases)} failed (exit {process.returncode}):\n{tail}")
    return watch


def benchbase_figures(out: Path, watch: _Watch) -> Figures:
    """A BenchBase run's figures from its own output (module docstring: the same NOPM as tdebench's)."""
    summary = json.loads(next(out.glob("*.summary.json")).read_text())
    minutes = summary["Elapsed Time (nanoseconds)"] / 1e9 / 60
    with next(out.glob("*.raw.csv")).open() as raw:
        samples = Counter(row["Transaction Name"] for row in csv.DictReader(raw, skipinitialspace=True))
    outcomes = json.loads((out / "histograms.json").read_text())

    def committed(kind: str) -> float:
        done = _count(outcomes, "completed", kind)
        tried = done + sum(_count(outcomes, name, kind) for name in ("aborted", "rejected", "unexpected"))
        return samples[kind] * done / tried if tried else 0.0

    if len(watch.marks) != 2:
        raise RuntimeError("BenchBase's output did not mark its measured window; its log:\n"
                           + "".join(watch.lines[-30:]))
    (server_before, java_before), (server_after, java_after) = watch.marks
    return Figures(nopm=committed("NewOrder") / minutes, tpm=sum(committed(kind) for kind in _TYPES) / minutes,
                   server_cpu_s=counters.delta(server_before, server_after)["cpu_s"],
                   driver_cpu_s=counters.delta(java_before, java_after)["cpu_s"])


def _count(outcomes: dict[str, Any], outcome: str, kind: str) -> int:
    """How many of `kind` ended so over the whole run: BenchBase's histogram JSON keys each type
    by its class and id (`com.oltpbenchmark.benchmarks.tpcc.procedures.NewOrder/01`)."""
    histogram = outcomes.get(outcome, {}).get("HISTOGRAM", {})
    return sum(int(n) for key, n in histogram.items() if key.split("/")[0].rsplit(".", 1)[-1] == kind)


def tdebench_figures(mix: dict[str, float]) -> Figures:
    """A tdebench run's figures from the `mix` record it stored."""
    minutes = mix["elapsed_s"] / 60
    return Figures(nopm=mix["new_orders"] / minutes, tpm=mix["committed"] / minutes,
                   server_cpu_s=mix["cpu_s"], driver_cpu_s=mix["driver_cpu_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=("mariadb", "postgres"), default="mariadb")
    parser.add_argument("--benchbase", type=Path, help="an unpacked BenchBase build for --engine")
    parser.add_argument("--java", help="Java 21+ to run BenchBase (default: $JAVA_HOME/bin/java, else java)")
    parser.add_argument("--terminals", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--duration", type=int, default=30, help="seconds in each measured window")
    parser.add_argument("--rampup", type=int, default=5, help="seconds of ramp-up (BenchBase: warm-up) before it")
    parser.add_argument("--rounds", type=int, default=3, help="alternations of the sides per terminals")
    parser.add_argument("--warehouses", type=int, default=1)
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES), help="tdebench's paths")
    parser.add_argument("--only", choices=("tdebench",), help="run tdebench's side alone (no BenchBase)")
    parser.add_argument("--data-dir", type=Path, default=Path.home() / ".cache" / "tdebench" / "data")
    args = parser.parse_args()
    if args.duration < 1 or args.rampup < 1 or args.rounds < 1 or min(args.terminals) < 1:
        parser.error("--duration, --rampup, --rounds and --terminals must be whole numbers of 1 or more")
    benchbase = None
    if args.only is None:
        try:
            benchbase = find_benchbase(args.benchbase, args.java, args.engine)
        except Unusable as problem:
            print(f"{parser.prog}: error: {problem}", file=sys.stderr)
            sys.exit(2)
    sides = [*args.modes, *([BENCHBASE] if benchbase else [])]
    results = measure(args, benchbase, sides)
    report(args, sides, results)


def measure(args: argparse.Namespace, benchbase: BenchBase | None,
            sides: list[str]) -> dict[tuple[int, str], list[Figures]]:
    """Every run of every side at every terminals, the order of the sides alternating by round."""
    private = Path(tempfile.mkdtemp(prefix="tdebench-benchbase-"))  # 0700: BenchBase's config and output
    results: dict[tuple[int, str], list[Figures]] = {}
    try:
        with oltp_server(args.engine, args.warehouses, args.data_dir) as bench:
            def context(terminals: int, mode: str) -> RunContext:
                return bench.context({"virtual_users": terminals, "duration_s": float(args.duration),
                                      "rampup_s": float(args.rampup), "procedures": mode == "procedures"})

            database: Any = bench.database
            conn = database.connect()
            print(f"loading {args.warehouses} warehouse(s) into {bench.engine.version()} for tdebench …", flush=True)
            bench.workload.load(context(1, "procedures"), conn)  # with the procedures: both modes can run
            config, out = private / "tpcc.xml", private / "out"
            if benchbase is not None:
                conn.execute(f"CREATE DATABASE {SCHEMA}")
                write_config(config, args.engine, database, args.warehouses, 1, args.rampup, args.duration)
                print(f"loading {args.warehouses} warehouse(s) for BenchBase …", flush=True)
                _run_benchbase(benchbase, database, config, out, ("create", "load"))
            for round_ in range(args.rounds):
                for index, terminals in enumerate(args.terminals):
                    for side in sides if (round_ + index) % 2 == 0 else sides[::-1]:
                        if side == BENCHBASE:
                            assert benchbase is not None
                            write_config(config, args.engine, database, args.warehouses, terminals, args.rampup,
                                         args.duration)
                            figures = benchbase_figures(out, _run_benchbase(benchbase, database, config, out,
                                                                            ("execute",)))
                        else:
                            figures = tdebench_figures(bench.run(context(terminals, side), conn))
                        results.setdefault((terminals, side), []).append(figures)
                        print(f"  round {round_ + 1}, {terminals} terminals, {side}: {figures.nopm:,.0f} NOPM, "
                              f"{figures.tpm:,.0f} TPM, server {figures.server_cpu_s:.1f} s, driver "
                              f"{figures.driver_cpu_s:.1f} s CPU, load average {os.getloadavg()[0]:.1f}",
                              flush=True)
            conn.close()
    finally:
        shutil.rmtree(private, ignore_errors=True)
    return results


def report(args: argparse.Namespace, sides: list[str], results: dict[tuple[int, str], list[Figures]]) -> None:
    """The table of medians, then tdebench ÷ BenchBase per terminals with its interval."""
    rounds = f"median of {args.rounds} rounds" if args.rounds > 1 else "1 round"
    print(f"\n{args.engine}, W={args.warehouses}, {args.rampup} s ramp-up, {args.duration} s windows, "
          f"{os.cpu_count()} cores, {rounds}\n")
    header = ("terminals", "driver", "NOPM", "TPM", "NOPM vs BenchBase", "server CPU s", "driver CPU s",
              "driver share")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for terminals in args.terminals:
        for side in sides:
            runs = results[(terminals, side)]
            ratio = _ratio(runs, results.get((terminals, BENCHBASE))) if side != BENCHBASE else ""
            median = {name: statistics.median(getattr(f, name) for f in runs)
                      for name in ("nopm", "tpm", "server_cpu_s", "driver_cpu_s", "driver_share")}
            print(f"| {terminals} | {side} | {median['nopm']:,.0f} | {median['tpm']:,.0f} | {ratio} "
                  f"| {median['server_cpu_s']:.1f} | {median['driver_cpu_s']:.1f} | {median['driver_share']:.0%} |")
    print(f"\nload average after the runs: {' '.join(f'{load:.1f}' for load in os.getloadavg())}")


def _ratio(runs: list[Figures], baseline: list[Figures] | None) -> str:
    """tdebench's NOPM over BenchBase's of the same round: their geometric mean [95% t-interval]."""
    if not baseline:
        return ""
    return paired_ratio([f.nopm for f in baseline], [f.nopm for f in runs])


if __name__ == "__main__":
    main()
