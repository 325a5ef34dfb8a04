"""bench/plan_stability.py at tiny settings (test_bench_scripts.py runs the other bench scripts)."""

from __future__ import annotations

import re

from test_bench_scripts import run


def test_plan_stability_prints_each_databases_plans_and_mariadbs_are_the_same() -> None:
    """Two loads of the same data on tdebench's MariaDB, which reads every leaf page when it analyzes:
    the same plan for every query (sampled, Q18's join order differed between loads)."""
    out = run("plan_stability.py", "--scale", "0.01", "--databases", "2")
    assert len(re.findall(r"^database [12]: (q\d+:[0-9a-f]{4} ?){22}$", out, re.M)) == 2, out
    assert re.search(r"^mariadb TPC-H SF 0\.01, 2 databases loaded one after the other, "
                     r"innodb_stats_persistent_sample_pages = 4294967295: 0 of 22 queries' plans differ between them$",
                     out, re.M), out
