"""The import arrows of src/tdebench point down: cli → runner → (plan, workloads, report) →
(engines, measure, verify) → (keys, store, stats, byte_counts) → (results, runstate), with no circle.

The graph is read from the source with `ast` (every `import` and `from … import`, at any depth
of a module, `if TYPE_CHECKING:` blocks included), so nothing is imported and no module's side
effects run. Between the top-level pieces (a package such as `engines`, or a module such as
`store`) an arrow may point to a lower tier; the few that stay within a tier are listed in
SIDEWAYS with the reason. The report reads the workloads through their registry in one module
(report/data/declared.py) and nothing of the engines (what it needs of them the run recorded), and a
workload judges what it writes at rest through `RunContext`, never through verify.py or store.py."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = Path(__file__).parents[2] / "src"
PACKAGE = SOURCE / "tdebench"

TIERS = (
    ("cli",),
    ("cluster", "kit"),  # the commands cli hands whole runs to: --cluster, the script kit and its import
    ("run",),  # the trial loop, a run's setup and its --out directory (run/)
    ("plan", "workloads", "report", "capture"),  # capture: the transient scan while a trial runs (verify below)
    ("engines", "measure", "verify"),
    ("keys", "store", "stats", "byte_counts"),  # byte_counts: verify's compiled entropy loop (numba)
    ("results", "runstate", "collector"),  # the record types, the run's process registry, the collector's pause
    ("errors",),  # the base of the errors a user can fix: imports nothing
)
"""Every top-level piece of tdebench, highest first: a piece imports only pieces of lower tiers
(and the SIDEWAYS ones of its own)."""

SIDEWAYS = {
    ("plan", "workloads"): "a plan's workload keys, scales and dialects are checked against the workloads' registry",
    ("report", "plan"): "the plan's comparison groups and orders decide what the report pairs and compares",
    ("report", "workloads"): "what each workload declares for its report, read through the registry (REGISTRY)",
    ("engines", "measure"): "the query watchdog runs as a helper thread (measure.process.helper), its CPU not the "
                            "engine's",
}
"""Arrows within a tier, each with why it is there."""

REGISTRY = "tdebench.workloads"
"""The one module of workloads/ the report may import ..."""
REGISTRY_READER = "tdebench.report.data.declared"
"""... and the one module of report/ that imports it."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(SOURCE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(path: Path) -> set[str]:
    """The tdebench modules `path` imports: for `from X import Y`, X.Y where that is a module of
    its own, else X."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.add(candidate if _is_module(candidate) else base)
    return {module for module in found if module == "tdebench" or module.startswith("tdebench.")}


def _is_module(name: str) -> bool:
    path = SOURCE.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _graph() -> dict[str, set[str]]:
    """Every module of src/tdebench and the tdebench modules it imports."""
    return {_module_name(path): _imported(path) for path in sorted(PACKAGE.rglob("*.py"))}


GRAPH = _graph()


def _piece(module: str) -> str:
    """The top-level piece a module belongs to: `engines` for tdebench.engines.base."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "tdebench"


def _tier(piece: str) -> int:
    return next(index for index, pieces in enumerate(TIERS) if piece in pieces)


def _arrows() -> list[tuple[str, str]]:
    """Every (importer, imported) pair of modules in different top-level pieces."""
    return [(module, target) for module, targets in GRAPH.items() for target in sorted(targets)
            if _piece(module) != _piece(target) and _piece(module) != "tdebench"]


def test_the_graph_is_read_from_the_source() -> None:
    """The walker finds the arrows it checks (a walker that found none would pass everything)."""
    assert ("tdebench.run.runner", "tdebench.verify") in _arrows()
    assert "tdebench.report.data.declared" in GRAPH and REGISTRY in GRAPH[REGISTRY_READER]
    assert ("tdebench.kit.readme", "tdebench.kit.scripts") in [(m, t) for m, ts in GRAPH.items() for t in ts]


def test_every_piece_has_a_tier() -> None:
    pieces = {_piece(module) for module in GRAPH} - {"tdebench"}
    assert pieces == {piece for tier in TIERS for piece in tier}


def test_every_arrow_points_down_or_is_a_listed_sideways_one() -> None:
    wrong = [f"{module} imports {target}" for module, target in _arrows()
             if _tier(_piece(module)) > _tier(_piece(target))
             or (_tier(_piece(module)) == _tier(_piece(target)) and (_piece(module), _piece(target)) not in SIDEWAYS)]
    assert wrong == []


def test_the_pieces_import_each_other_in_no_circle() -> None:
    edges: dict[str, set[str]] = {}
    for module, target in _arrows():
        edges.setdefault(_piece(module), set()).add(_piece(target))

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(step == goal or (step not in seen and reaches(step, goal, seen | {step}))
                   for step in edges.get(start, ()))

    assert [piece for piece in edges if reaches(piece, piece, set())] == []


def test_the_report_reads_the_workloads_only_through_their_registry_in_one_module() -> None:
    readers = {module: sorted(t for t in targets if _piece(t) == "workloads")
               for module, targets in GRAPH.items() if _piece(module) == "report"}
    assert {module: targets for module, targets in readers.items() if targets} == {REGISTRY_READER: [REGISTRY]}


def test_the_report_imports_nothing_of_the_engines() -> None:
    """The report is a function of the stored run: what it needs to know of an engine (its
    encryptions' ciphers, page sizes and key handling, its default cache, what it documents as
    different when encrypted) the run recorded (results.ENGINE_FACTS, ENCRYPTIONS), and the run
    format's names (key forms, backup methods) are results.py's, so an engine this tdebench does not
    have, or has changed since, reports as the run recorded it (tests/unit/test_recorded_facts.py)."""
    assert "tdebench.report.data.encryptions" in GRAPH  # the walker sees report/
    assert [(m, t) for m, t in _arrows() if _piece(m) == "report" and _piece(t) == "engines"] == []


@pytest.mark.parametrize("below", ["engines", "measure", "verify", "keys", "store", "stats"])
def test_the_lower_pieces_import_no_runner_cli_report_or_workload(below: str) -> None:
    above = {"run", "cli", "report", "workloads"}
    assert [(m, t) for m, t in _arrows() if _piece(m) == below and _piece(t) in above] == []


def test_no_workload_imports_verify_or_store() -> None:
    """A workload judges what it writes beside the trial's database through RunContext.judge_at_rest
    (the runner's rules), and records through its Recorder."""
    assert [(m, t) for m, t in _arrows() if _piece(m) == "workloads" and _piece(t) in {"verify", "store"}] == []


HEAVY = ("matplotlib", "scipy", "distributed")
"""Libraries that take seconds to import on a loaded 2-core machine: the report's plots and
statistics, and Dask's client."""
RUNS_TRIALS = ("tdebench.cli", "tdebench.cli.run", "tdebench.run.outdir", "tdebench.run.setup", "tdebench.run.runner",
               "tdebench.cluster.unit")
"""What `tdebench run` loads before its first trial, and a cluster unit's process in all."""


def test_what_runs_trials_loads_no_plots_statistics_or_dask_client() -> None:
    """The one check here that imports, in a fresh interpreter: a cluster unit's process (one per
    unit) or a run interrupted early would pay HEAVY's seconds for nothing; the report imports
    them when it is built, an adaptive plan when it adds rounds, a gang's unit its Dask client."""
    script = (f"import sys\nimport {', '.join(RUNS_TRIALS)}\n"
              f"print(sorted({{name.split('.')[0] for name in sys.modules}} & {set(HEAVY)!r}))")
    found = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120)
    assert found.stdout.strip() == "[]", found.stdout + found.stderr


def test_verify_into_a_pipe_loads_no_rich_nor_numba_and_numpy_with_one_blas_thread(tmp_path: Path) -> None:
    """`tdebench verify`'s start-up is most of its time on a file in the page cache
    (docs/method/scan-speed.md): into a pipe it prints without rich (console.line), and numpy
    loads with OpenBLAS's pool of one thread (the process's only thread after the scan), the
    environment as it was."""
    data = tmp_path / "data"
    data.write_bytes(os.urandom(1 << 20))
    script = ("import os, sys\nfrom tdebench.cli import main\ntry:\n"
              "    main(['verify', sys.argv[1], '--canary', 'XXXX'])\nexcept SystemExit:\n"
              "    loaded = {name.split('.')[0] for name in sys.modules}\n"
              "    print(sorted(loaded & {'rich', 'numba', 'numpy'}), len(os.listdir('/proc/self/task')),"
              " os.environ.get('OPENBLAS_NUM_THREADS'))")
    env = {name: value for name, value in os.environ.items() if name not in ("OPENBLAS_NUM_THREADS", "FORCE_COLOR",
                                                                              "TTY_COMPATIBLE")}
    found = subprocess.run([sys.executable, "-c", script, str(data)], capture_output=True, text=True, env=env,
                           timeout=120)
    assert found.stdout.endswith("verdict: encrypted: no canary, and the data looks like ciphertext (0/256 blocks "
                                 "below 7 bits/byte)\n['numpy'] 1 None\n"), found.stdout + found.stderr
