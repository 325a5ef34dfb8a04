"""The engine registry (engines/__init__.py) is the one place engine names are listed: each
entry's classes and kit target carry its name, a name cannot be given twice, every engine class
and kit target is in it, the CLI's and the plan's choices are its own, and no module of
src/tdebench keeps a list of engine names beside it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tdebench.cli.kit import import_command, script_command
from tdebench.engines import BY_URL, KIT, PROVISIONED, REGISTRY, Engine, Reach, dialects, registry
from tdebench.engines.duckdb import DuckDBEngine
from tdebench.engines.mariadb import MariaDBEngine
from tdebench.engines.remote_mysql import RemoteMariaDBEngine
from tdebench.engines.remote_oracle import RemoteOracleEngine
from tdebench.kit import targets
from tdebench.plan import PlanError, parse_plan

PACKAGE = Path(__file__).parents[2] / "src" / "tdebench"


def test_each_entry_s_classes_and_kit_target_carry_its_name() -> None:
    for name, reach in REGISTRY.items():
        assert reach.here is None or reach.here.name == name
        assert reach.url is None or reach.url.name == name
        assert reach.kit is None or targets.target(name).name == name
    assert set(PROVISIONED) | set(BY_URL) == set(REGISTRY) and set(KIT) <= set(BY_URL)


def test_a_name_given_twice_or_a_kit_without_its_engine_by_url_is_refused() -> None:
    with pytest.raises(ValueError, match="'mariadb' is in the registry twice: give its ways in one entry"):
        registry(Reach(here=MariaDBEngine), Reach(here=DuckDBEngine), Reach(url=RemoteMariaDBEngine))
    with pytest.raises(ValueError, match="'duckdb' has a script kit but no engine by url"):
        registry(Reach(here=DuckDBEngine, kit="MYSQL"))
    assert list(registry(Reach(here=MariaDBEngine, url=RemoteMariaDBEngine), Reach(url=RemoteOracleEngine))) == [
        "mariadb", "oracle"]


def _subclasses(cls: type) -> list[type]:
    return [found for sub in cls.__subclasses__() for found in (sub, *_subclasses(sub))]


def test_every_engine_class_and_kit_target_is_in_the_registry() -> None:
    """An engine module or a kit target added without its entry would be reachable by no name."""
    named = {cls for cls in _subclasses(Engine) if cls.__module__.startswith("tdebench.engines.")
             and "name" in vars(cls)}  # the classes that name an engine, not bases such as RemoteEngine
    assert named == {way for reach in REGISTRY.values() for way in (reach.here, reach.url) if way is not None}
    defined = {attribute for attribute, value in vars(targets).items() if isinstance(value, targets.Target)}
    assert defined == {reach.kit for reach in REGISTRY.values() if reach.kit is not None}
    with pytest.raises(ValueError, match="the script kit has no engine 'postgres'; valid: mysql, sqlserver, oracle"):
        targets.target("postgres")


def test_the_cli_s_and_the_plan_s_choices_are_the_registry_s() -> None:
    for command in (script_command, import_command):
        (engine,) = [option for option in command.params if option.name == "engine"]
        assert list(getattr(engine.type, "choices")) == list(KIT)
    plan = '[[engines]]\nname = "{name}"\n{url}[[workloads]]\nname = "tpch"\n'
    with pytest.raises(PlanError, match=f"unknown name 'acme'; valid: {', '.join(PROVISIONED)}$"):
        parse_plan(plan.format(name="acme", url=""), "p.toml")
    with pytest.raises(PlanError, match=f"unknown name 'acme'; valid: {', '.join(BY_URL)}$"):
        parse_plan(plan.format(name="acme", url='url = "mysql://b@db/x"\npassword_env = "X"\n'), "p.toml")


def _lists_of_names(source: str, names: set[str]) -> list[tuple[int, list[str]]]:
    """Each tuple, list, set or dict's keys in `source` whose two or more elements are all engine
    names, with its line. The same words are also SQL dialects (engines/dialects.py) and URL
    schemes, so a collection of dialect names only, or one engine's URL schemes, is not a list of
    engines."""
    spoken = set(dialects.DIALECTS)
    schemes = {frozenset(engine.schemes) for engine in BY_URL.values()}
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            elements = node.elts
        elif isinstance(node, ast.Dict):
            elements = [key for key in node.keys if key is not None]
        else:
            continue
        words = [e.value for e in elements if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        if (len(words) >= 2 and len(words) == len(elements) and set(words) <= names
                and not set(words) <= spoken and frozenset(words) not in schemes):
            found.append((node.lineno, words))
    return found


def test_the_scanner_finds_a_list_of_engine_names() -> None:
    """(a scanner that found none would pass every module)"""
    assert _lists_of_names('KIT_ENGINES = ("sqlserver", "oracle", "mysql")\nDIALECTS = ("duckdb", "mysql")\n'
                           'SCHEMES = ("mariadb", "mysql")\nELSE = {"duckdb": 1, "mariadb": 2}\n', set(REGISTRY)) == [
        (1, ["sqlserver", "oracle", "mysql"]), (4, ["duckdb", "mariadb"])]


def test_no_module_keeps_a_list_of_engine_names_beside_the_registry() -> None:
    found = {str(path.relative_to(PACKAGE)): lists for path in sorted(PACKAGE.rglob("*.py"))
             for lists in [_lists_of_names(path.read_text(), set(REGISTRY))] if lists}
    assert found == {}
