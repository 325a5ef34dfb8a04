"""`tdebench script`: the numbered SQL scripts of a plan for an engine tdebench cannot run here.

Per scale and encryption the kit holds one directory of scripts (setup with the encryption,
schema, load, canaries, the power test, the throughput streams, teardown), `run.sh` to run them
round by round with the client and its timing on, a README, the CSV files they load and
`kit.json`, which `tdebench import` reads to find the logs and what each marker means.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tdebench.engines.dbapi import parquet_to_csv
from tdebench.kit.targets import CANARY_TABLE, STEP, Directive, Item, Sql, Target, data_dir
from tdebench.plan import DEFAULT_REPETITIONS, Checker, PlanError, workload_spec
from tdebench.run.runner import new_canaries
from tdebench.workloads.tpch import data, schema, streams
from tdebench.workloads.tpch.queries import query

KIT = "kit.json"
RUN = "run.sh"
README = "README.md"
LOGS = "logs"
CANARIES = 3


@dataclass(frozen=True)
class KitPlan:
    """What of a plan drives a kit: its TPC-H workload and the engine's encryptions."""

    name: str
    repetitions: int
    warmups: int
    scales: tuple[float, ...]
    tests: tuple[str, ...]
    streams: int
    passes: int
    encryptions: tuple[str, ...]  # "none" first


@dataclass(frozen=True)
class Script:
    """One script of a trial: its file (relative to the kit) and what it does."""

    file: str
    kind: str  # setup, schema, load, canaries, power, throughput, teardown
    pass_label: str = ""  # throughput: "w1" (a warm-up) or "1"
    stream: int = 0

    @property
    def log(self) -> str:
        """The log's name in the trial's round directory (logs/<scale>/<encryption>/r<N>/)."""
        return Path(self.file).with_suffix(".log").name


@dataclass(frozen=True)
class KitTrial:
    scale: float
    encryption: str
    directory: str  # relative to the kit: <scale>/<encryption>
    scripts: tuple[Script, ...]
    canaries: tuple[str, ...]
    markers: tuple[str, ...]


def read_plan(text: str, source: str, target: Target) -> KitPlan:
    """The kit's part of a plan: its tpch workload (scales, tests, streams, passes, checked as
    `tdebench run` checks them) and the [[engines]] table named as the target, whose
    encryptions must be the target's (all of them when the plan has no such table). Other
    engines' tables are left alone: a kit is written for one engine. PlanError (file, line,
    valid choices) otherwise. Not `parse_plan`, which checks a plan `tdebench run` can run: its
    sqlserver, oracle and mysql tables need the url of a server to reach, which a kit's plan has
    no use for. The tpch table is checked by the same `workload_spec` all the same."""
    try:
        data_ = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PlanError(f"not valid TOML: {exc}", source) from None
    check = Checker(text, source)
    workloads = data_.get("workloads")
    tables = check.tables(workloads, "workloads") if workloads else []
    names = [table.get("name") for table in tables]
    if "tpch" not in names:
        have = ", ".join(map(str, names)) or "none"
        raise check.error(f"the script kit runs the tpch workload; this plan has {have}: "
                          "add [[workloads]] name = \"tpch\"", "[[workloads]]")
    tpch = workload_spec(check.within("workloads", names.index("tpch")), tables[names.index("tpch")])
    valid = target.encryption_names()
    engines = check.tables(data_.get("engines", []), "engines")
    mine = [i for i, table in enumerate(engines) if table.get("name") == target.name]
    chosen = list(valid)
    if mine:
        table, where = engines[mine[0]], check.within("engines", mine[0])
        if table.get("encryptions") not in ("all", ["all"]):
            chosen = where.string_list(table, "encryptions", list(valid))
        for name in chosen:
            if name not in valid:
                raise where.error(f"the script kit's {target.name} has no encryption {name!r}; valid: "
                                  f"{', '.join(valid)}", name)
        if len(set(chosen)) != len(chosen):
            raise where.error(f"engine {target.name!r} lists an encryption twice", "encryptions")
    return KitPlan(
        name=check.string(data_, "name", Path(source).stem),
        repetitions=check.integer(data_, "repetitions", DEFAULT_REPETITIONS, 1, 1000),
        warmups=check.integer(data_, "warmups", 1, 0, 100),
        scales=tpch.scales, tests=tpch.tests, streams=tpch.streams,
        passes=int(tpch.option_values().get("passes", 1)),
        encryptions=("none", *[name for name in chosen if name != "none"]),
    )


def pass_labels(plan: KitPlan) -> list[str]:
    """The passes of a test: the warm-ups ("w1", …: unmeasured, as a run's), then the measured ones."""
    return [f"w{n}" for n in range(1, plan.warmups + 1)] + [str(n) for n in range(1, plan.passes + 1)]


def marker_text(test: str, stream: int, pass_label: str, step: str) -> str:
    return f"{STEP} {test} {stream} {pass_label} {step}"


def render(target: Target, items: list[Item], title: str) -> str:
    """A script's text for the target's client: sqlcmd batches end with GO, sqlplus statements
    with `;` (PL/SQL blocks with `/`) and the script with EXIT, mysql's with `;`."""
    lines = [f"-- {title}", "-- Written by `tdebench script`; run it as README.md says, with the client's timing on."]
    for item in [*target.preamble, *items]:
        if isinstance(item, Directive):
            lines.append(item.text)
        elif target.tool == "sqlcmd":
            lines += [item.text, "GO"]
        elif target.tool == "sqlplus" and item.text.startswith(("BEGIN", "DECLARE")):
            lines += [item.text, "/"]
        else:
            lines.append(f"{item.text};")
    if target.tool == "sqlplus":
        lines.append("EXIT")
    return "\n".join(lines) + "\n"


def _statement(text: str) -> str:
    """A query file's statement without its leading comment lines (an override's header)."""
    lines = text.strip().splitlines()
    while lines and lines[0].lstrip().startswith("--"):
        lines.pop(0)
    return "\n".join(lines).rstrip().rstrip(";")


def _queries(target: Target, test: str, stream: int, labels: list[str]) -> list[Item]:
    items: list[Item] = []
    for label in labels:
        for number in streams.stream_order(stream):
            items += [target.marker(marker_text(test, stream, label, f"q{number}")),
                      Sql(_statement(query(number, target.dialect)))]
    return items


def trial_scripts(target: Target, plan: KitPlan, scale: float, encryption: str, canaries: list[str],
                  markers: list[str]) -> Iterator[tuple[Script, list[Item]]]:
    """The scripts of one trial, in the order they run, with their items."""
    where = f"{data.scale_name(scale)}/{encryption}"
    use, timed = target.use(), target.timing_on
    yield Script(f"{where}/01-setup.sql", "setup"), [*target.stop_on_error(True), *target.setup(encryption)]
    yield Script(f"{where}/02-schema.sql", "schema"), [
        *target.stop_on_error(True), *use, *[Sql(s) for s in schema.create_tables(target.dialect)]]
    load: list[Item] = [*target.stop_on_error(True), *use, *timed]
    for table, columns in schema.TABLES.items():
        load += [target.marker(marker_text("load", 0, "1", table)),
                 *target.load_table(table, columns, data.scale_name(scale))]
    load += [target.marker(marker_text("load", 0, "1", "indexes")),
             *[Sql(s) for s in schema.create_indexes(target.dialect)]]
    yield Script(f"{where}/03-load.sql", "load"), load
    yield Script(f"{where}/04-canaries.sql", "canaries"), [
        *target.stop_on_error(True), *use,
        Sql(f"CREATE TABLE {CANARY_TABLE} (id INTEGER PRIMARY KEY, canary VARCHAR(64) NOT NULL, "
            "marker VARCHAR(64) NOT NULL)"),
        *[Sql(f"INSERT INTO {CANARY_TABLE} (id, canary, marker) VALUES ({i}, '{c}', '{m}')")
          for i, (c, m) in enumerate(zip(canaries, markers), start=1)],
        *[Sql(s) for s in target.flush], *[Sql(s) for s in target.files]]
    labels = pass_labels(plan)
    if "power" in plan.tests:
        yield Script(f"{where}/05-power.sql", "power"), [
            *target.stop_on_error(False), *use, *timed, *_queries(target, "power", 0, labels)]
    if "throughput" in plan.tests:
        for label in labels:
            for stream in range(1, plan.streams + 1):
                yield (Script(f"{where}/06-throughput-{label}-s{stream}.sql", "throughput", label, stream),
                       [*target.stop_on_error(False), *use, *timed, *_queries(target, "throughput", stream, [label])])
    yield Script(f"{where}/07-teardown.sql", "teardown"), [*target.stop_on_error(False), *target.teardown(encryption)]


_TITLES = {"setup": "create the database with encryption {encryption}", "schema": "create the TPC-H tables",
           "load": "bulk load the CSV files, then the keys, indexes and statistics (timed)",
           "canaries": "write the canaries tdebench verify looks for, show the data files and the encryption state",
           "power": "the power test: the 22 queries in stream 0's order (timed)",
           "throughput": "throughput pass {pass_label}, stream {stream} (timed; run with the other streams at once)",
           "teardown": "drop everything the setup created"}


def write_kit(target: Target, plan: KitPlan, plan_text: str, out: Path, data_cache: Path) -> list[KitTrial]:
    """Write the kit into `out` (new or empty): scripts, CSV data, run.sh, README.md, kit.json
    and the plan; returns its trials."""
    trials = []
    for scale in plan.scales:
        files = data.generate(scale, data_cache)
        csv_dir = out / data_dir(data.scale_name(scale))
        csv_dir.mkdir(parents=True, exist_ok=True)
        for table, columns in schema.TABLES.items():
            parquet_to_csv(files[table], columns, csv_dir / f"{table}.csv", delimiter="|")
        for encryption in plan.encryptions:
            canaries, markers = new_canaries(CANARIES), new_canaries(CANARIES, "MARKER")
            scripts = []
            for script, items in trial_scripts(target, plan, scale, encryption, canaries, markers):
                title = _TITLES[script.kind].format(encryption=encryption, pass_label=script.pass_label,
                                                    stream=script.stream)
                path = out / script.file
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(render(target, items, f"tdebench kit: {target.name} {encryption} "
                                                      f"{data.scale_name(scale)}: {title}"))
                scripts.append(script)
            trials.append(KitTrial(scale, encryption, f"{data.scale_name(scale)}/{encryption}", tuple(scripts),
                                   tuple(canaries), tuple(markers)))
    (out / "plan.toml").write_text(plan_text)
    (out / KIT).write_text(json.dumps({"engine": target.name, "tool": target.tool, "dialect": target.dialect,
                                       "plan": asdict(plan), "trials": [asdict(t) for t in trials]}, indent=1) + "\n")
    from tdebench.kit.readme import readme, run_script  # the texts are long: a module of their own
    (out / README).write_text(readme(target, plan, trials))
    (out / RUN).write_text(run_script(target, plan, trials))
    (out / RUN).chmod(0o755)
    return trials


def read_kit(directory: Path) -> dict[str, Any]:
    """kit.json of a kit directory; FileNotFoundError or ValueError naming it."""
    path = directory / KIT
    if not path.is_file():
        raise FileNotFoundError(f"{directory} holds no script kit: {path} is missing (written by tdebench script)")
    try:
        kit = json.loads(path.read_text())
        lists = {k: tuple(kit["plan"][k]) for k in ("scales", "tests", "encryptions")}
        kit["plan"] = KitPlan(**{**kit["plan"], **lists})
        kit["trials"] = [KitTrial(**{**t, "scripts": tuple(Script(**s) for s in t["scripts"]),
                                     "canaries": tuple(t["canaries"]), "markers": tuple(t["markers"])})
                         for t in kit["trials"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a tdebench kit ({exc})") from None
    return dict(kit)

