"""The report's sources gathered on several processes (report/sections/gather.py): the same report
as one process makes, every source's content able to travel back from a worker, and a worker's
error raised where the report is built."""

from __future__ import annotations

import pickle
import threading
from pathlib import Path

import pytest

from fakes import DEMO, DEMO_PLAN, write_fake_run
from tdebench.report.data.records import summary_records
from tdebench.report.sections import gather
from tdebench.report.sections.document import SOURCES, assemble
from tdebench.report.writers import html, markdown
from tdebench.store import read_run


def _square(value: int) -> int:
    return value * value


def _fail(value: int) -> int:
    raise ValueError(f"source {value} failed")


def test_a_gathering_keeps_the_order_and_the_results_of_one_process() -> None:
    functions = [lambda x, i=i: _square(x + i) for i in range(6)]  # the fork inherits them: no pickling
    with gather.Gathering(functions, (1,), workers=2) as forked, gather.Gathering(functions, (1,), workers=1) as here:
        assert forked.results() == here.results() == [1, 4, 9, 16, 25, 36]


def test_a_workers_error_is_raised_in_the_process_that_gathers() -> None:
    with gather.Gathering([_square, _fail, _square], (3,), workers=2) as forked:
        with pytest.raises(ValueError, match="source 3 failed"):
            forked.results()


def test_no_fork_beside_another_thread() -> None:
    """A thread alive (the run's progress bar) could hold a lock the forked worker would wait on."""
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert gather.workers_here() == 1
    finally:
        stop.set()
        thread.join()


@pytest.mark.parametrize("shape", ["small", "demo"])
def test_the_report_is_the_same_on_one_process_and_on_two(tmp_path: Path, shape: str) -> None:
    if shape == "demo":
        write_fake_run(tmp_path, plan=DEMO_PLAN, placebo=True, memories=(None,), shape=DEMO)
    else:
        write_fake_run(tmp_path, placebo=True, memories=(2, 64))
    run = read_run(tmp_path)
    records = summary_records(run)
    for source in SOURCES:  # what a worker sends back pickles (a lambda in a table's column would not)
        pickle.dumps(source(run, records))
    alone, forked = assemble(run, records, workers=1), assemble(run, records, workers=2)
    assert markdown.render(forked) == markdown.render(alone)
    assert html.render(forked) == html.render(alone)
    assert [figure.png for figure in forked.figures] == [figure.png for figure in alone.figures]
