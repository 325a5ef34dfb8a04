"""One way into a document: every section, source of findings and CSV file of `tdebench report`
is a `Source` in document.SOURCES, every section and CSV file of `tdebench compare` one in
compare.VIEWS, and both documents are drawn by the same writers (markdown.py, html.py's
templates). The lists are spelled out here, so that a source added or moved is seen in review,
and report/ is scanned for a second way in: a workload's `section` or a CSV name no source lists,
a CSV file written, a findings function called or a section drawn anywhere else."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

from tdebench import report
from tdebench.report import DERIVED
from tdebench.report.sections import Source, compare, document

REPORT = Path(report.__file__).parent
LAYERS = ("data", "summaries", "sections", "writers")
"""report/'s subpackages, lowest first: a module imports only from its own layer and lower ones
(report/__init__.py, `build`, stands above them all)."""

SOURCES = (
    "core.csv_files", "core.failures", "core.overhead", "core.cost_curve", "core.cache_fit", "core.cipher_context",
    "core.connection", "layers.section", "core.per_query",
    "backup.section", "strength.section", "maintenance.section", "oltp.section", "crud.section",
    "core.resources", "core.sizes", "core.verdicts", "core.ciphers", "core.environment", "core.noisy",
    "core.machine_load",
    "core.cache_findings", "core.overhead_findings", "core.connection_findings", "core.claims", "core.noise_findings",
)
CSV_FILES = ("summary.csv", "queries.csv", "verdicts.csv", "resources.csv",
             "backups.csv", "strength.csv", "maintenance.csv", "oltp.csv", "crud.csv")
VIEWS = ("compare._differences_section", "compare._only_section", "compare._findings_section",
         "compare._ciphers_section", "compare._tables_section")


def names(sources: tuple[Source, ...]) -> tuple[str, ...]:
    return tuple(f"{source.content.__module__.rsplit('.', 1)[-1]}.{source.content.__name__}" for source in sources)


def test_the_report_and_the_comparison_list_every_source_once_in_reading_order() -> None:
    assert names(document.SOURCES) == SOURCES
    assert names(compare.VIEWS) == VIEWS


def test_every_csv_file_is_declared_by_its_source_and_derived() -> None:
    assert document.CSV_FILES == CSV_FILES
    assert set(CSV_FILES) <= set(DERIVED)
    assert compare.WRITTEN == ("compare.md", "compare.html", "compare.csv")


def modules() -> dict[str, ast.Module]:
    """Every module of report/ by its file's name (each name is used once), its package's
    `__init__.py` by the package's."""
    paths = sorted(REPORT.rglob("*.py"))
    return {(f"{path.parent.name}.py" if path.name == "__init__.py" and path.parent != REPORT else path.name):
            ast.parse(path.read_text(), str(path)) for path in paths}


def test_each_layer_imports_only_its_own_and_lower_ones() -> None:
    for path in sorted(REPORT.rglob("*.py")):
        layer = path.relative_to(REPORT).parts[0]
        if layer not in LAYERS:
            continue  # report/__init__.py
        allowed = {f"tdebench.report.{below}" for below in LAYERS[:LAYERS.index(layer) + 1]}
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tdebench.report"):
                imported = [node.module] if node.module != "tdebench.report" else [
                    f"tdebench.report.{alias.name}" for alias in node.names]
                for module in imported:
                    assert ".".join(module.split(".")[:3]) in allowed, f"{path.relative_to(REPORT)} imports {module}"


def calls(tree: ast.Module) -> list[tuple[str, str]]:
    """(module alias, function) of every call of another module's function: `csvfiles.write(…)`."""
    return [(node.func.value.id, node.func.attr) for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)]


def test_every_section_and_csv_name_in_report_is_registered() -> None:
    """A module's `section` or `CSV` that no source lists would be a section the report never shows."""
    registered = {(source.content.__module__.rsplit(".", 1)[-1], source.content.__name__)
                  for source in document.SOURCES}
    for name, tree in modules().items():
        for node in tree.body:
            if (isinstance(node, ast.FunctionDef) and node.name == "section"
                    and [arg.arg for arg in node.args.args] == ["run", "records"]):
                assert (name.removesuffix(".py"), "section") in registered, name
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                    and isinstance(node.value.value, str) and node.value.value.endswith(".csv")):
                assert node.value.value in (*document.CSV_FILES, *compare.WRITTEN), (name, node.value.value)


def test_csv_files_are_written_where_each_command_writes_its_documents_alone() -> None:
    """report/__init__.py writes what the report's sources hold (`build`) and what compare's
    views hold (`write_comparison`): no module writes a CSV file of its own."""
    written = Counter(name for name, tree in modules().items() for call in calls(tree)
                      if call == ("csvfiles", "write"))
    assert written == Counter({"__init__.py": 2})
    writers = [name for name, tree in modules().items() for call in calls(tree) if call == ("csv", "writer")]
    assert writers == ["csvfiles.py"]


def test_findings_reach_the_report_through_its_sources_alone() -> None:
    """Another module's findings are called only by the sources of findings (report/sections/core.py) and
    by the first lines (headline.py, which quote the cache's caveat); the report's findings are
    what its entries hold, nothing wired in beside them."""
    callers = {name for name, tree in modules().items() for _, function in calls(tree)
               if function in ("findings", "claim_lines") or function.endswith("_findings")}
    assert callers == {"core.py", "headline.py"}
    assemble = next(node for node in ast.walk(modules()["document.py"])
                    if isinstance(node, ast.FunctionDef) and node.name == "assemble")
    given = next(keyword.value for node in ast.walk(assemble) if isinstance(node, ast.Call)
                 for keyword in node.keywords if keyword.arg == "findings")
    assert {node.id for node in ast.walk(given) if isinstance(node, ast.Name)} <= {"entries", "content", "sentence"}


def test_sections_are_drawn_by_the_writers_alone() -> None:
    """An h2 is drawn in markdown.py and in the templates' section macro; report.html draws its
    own Findings (with the alerts and the at-rest verdict) and nothing else."""
    drawn = [path.name for path in sorted(REPORT.rglob("*.py")) if '"## ' in path.read_text()]
    assert drawn == ["markdown.py"]
    templates = {path.name: path.read_text().count("<h2>")
                 for path in sorted((REPORT / "writers" / "templates").glob("*.j2"))}
    assert {name: count for name, count in templates.items() if count} == {"macros.html.j2": 1,
                                                                          "report.html.j2": 1}
