"""Where a run's trials run: here (`Here`: the engines checked, the cipher speeds, the runner) or
on the workers of a Dask cluster (`OnCluster`); `place` picks one, `run` and `run --resume`
use either the same way."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tdebench.run import setup as runsetup
from tdebench.cli.console import err, print_cleaned
from tdebench.engines.timeout import interrupt_on_signals
from tdebench.errors import InputError
from tdebench.keys import KeySource
from tdebench.plan import Plan
from tdebench.store import Cut, ResultStore, read_run

if TYPE_CHECKING:
    from tdebench.cli.progress import ProgressBar
    from tdebench.run.runner import RunSummary


def ready_or_exit(the_plan: Plan, key_file: Path | None, work_dir: Path | None,
                   owned: bool = False) -> tuple[KeySource, dict]:
    """The key source and the plan's engines, once every one can run here in `work_dir` (and every
    server reached by url has a target of nothing but tdebench's, unless `owned`)."""
    ready = runsetup.ready(the_plan, key_file, work_dir, owned)
    print_cleaned(ready.cleaned)
    return ready.keys, ready.engines


def cluster_client() -> Any:
    """tdebench.cluster.client, which needs Dask distributed (the `cluster` extra); an InputError
    saying how to install it when it is missing."""
    try:
        from tdebench.cluster import client
    except ImportError as exc:
        raise InputError(f"--cluster needs Dask distributed ({exc.name} is missing): pip install "
                         "'tdebench[cluster]'") from None
    return client


Work = Callable[["ProgressBar", threading.Event], "RunSummary"]
"""What a run does between its start and its report: the trials, here or on a cluster."""


class Here:
    """Trials on this machine: its engines checked, its cipher speeds, the runner."""

    def __init__(self, the_plan: Plan, key_file: Path | None, data_dir: Path | None, work_dir: Path | None,
                 owned: bool = False) -> None:
        if the_plan.driver_hosts > 1:
            raise InputError(f"the plan's driver_hosts = {the_plan.driver_hosts} spreads the oltp virtual users "
                             "over that many hosts of a cluster: run it with --cluster ADDRESS (docs/cluster.md), or "
                             "remove driver_hosts to drive the server from this machine alone")
        self.plan, self.data_dir, self.work_dir = the_plan, data_dir, work_dir
        # before --out is made: a run that cannot prepare its data leaves no half-made run directory
        runsetup.check_data_dir(data_dir or runsetup.default_data_dir())
        self.keys, self.engines = ready_or_exit(the_plan, key_file, work_dir, owned)

    def __enter__(self) -> "Here":
        return self

    def __exit__(self, *exc_info: object) -> None:
        pass

    @property
    def keys_derived(self) -> bool:
        return self.keys.derived

    @property
    def key_source(self) -> dict | None:
        return self.keys.describe()

    def environment(self) -> dict:
        return {**runsetup.environment(self.engines), runsetup.KEY_SOURCE: self.keys.describe()}

    def work(self, store: ResultStore, resumed: Cut | None = None) -> Work:
        def trials(progress: ProgressBar, interrupted: threading.Event) -> RunSummary:
            from tdebench.run.runner import Runner

            with interrupt_on_signals():  # Ctrl-C also stops a long embedded query at once
                if resumed is None or not resumed.ciphers:
                    progress.phase("measuring this machine's raw cipher throughput")
                    runsetup.measure_cipher_speeds(store, self.plan, self.engines)
                runner = Runner(plan=self.plan, store=store, data_dir=self.data_dir or runsetup.default_data_dir(),
                                keys=self.keys, progress=progress, workspace_parent=self.work_dir,
                                interrupted=interrupted)
                return runner.run()
        return trials


class OnCluster:
    """Trials on the workers of a Dask cluster (tdebench.cluster): the workers checked on entry,
    every host's environment, the units run there."""

    def __init__(self, address: str, the_plan: Plan, source: str, key_file: Path | None, data_dir: Path | None,
                 work_dir: Path | None) -> None:
        client = cluster_client()
        from tdebench.cluster import work

        problem = work.cluster_problem(the_plan)
        if problem:
            raise InputError(problem)
        self.plan, self.source, self.address = the_plan, source, address
        self.key_file, self.data_dir, self.work_dir = key_file, data_dir, work_dir
        self.cluster = client.Cluster(address)
        if self.cluster.local_workers is not None:
            err.print(f"[yellow]warning:[/] --cluster {address} runs {self.cluster.local_workers} workers on this "
                      "machine: their trials disturb each other, so its figures test tdebench, they measure nothing",
                      highlight=False, soft_wrap=True)
        self.hosts: dict = {}
        self.started = client.started_utc()

    def __enter__(self) -> "OnCluster":
        try:
            self.cluster.__enter__()
            self.hosts = self.cluster.check(self.plan, self.source, self.key_file, self.work_dir)
        except runsetup.SetupError:
            self.cluster.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.cluster.__exit__(None, None, None)

    @property
    def keys_derived(self) -> bool:
        return self.key_file is not None

    @property
    def key_source(self) -> dict | None:
        return None  # the key file is read on each worker: only whether there is one is known here

    def environment(self) -> dict:
        from tdebench.cluster.work import cluster_environment

        return cluster_environment(self.hosts, self.address, self.started)

    def work(self, store: ResultStore, resumed: Cut | None = None) -> Work:
        def trials(progress: ProgressBar, interrupted: threading.Event) -> RunSummary:
            from tdebench.cluster.client import Collector
            from tdebench.plan import to_run
            from tdebench.run.runner import elapsed_before, kept_summary

            stored = read_run(store.directory)
            done = stored.complete_trials()
            summary, specs = kept_summary(stored), to_run(self.plan, done)
            collector = Collector(store, stored.environment, done, summary, summary.trials + len(specs), specs,
                                  progress, stored.ciphers)
            progress.phase(f"{len(specs)} trials on {len(self.hosts)} hosts: {', '.join(self.hosts)}")
            options = {"key_file": str(self.key_file) if self.key_file else None,
                       "data_dir": str(self.data_dir) if self.data_dir else None,
                       "work_dir": str(self.work_dir) if self.work_dir else None}
            more = None
            if self.plan.adaptive and stored.stopping is None:  # rounds added as a local run adds them
                more = self._more_rounds(store, collector, elapsed_before(stored))
            self.cluster.run(self.plan, self.source, specs, collector, options, more)
            return summary
        return trials

    def _more_rounds(self, store: ResultStore, collector: Any, before_s: float) -> Callable[[], list]:
        """An adaptive plan's next rounds, decided by the client from the records stored so far
        (runner.more_rounds, as a local run adds them: every overhead is within one host, so the
        rounds of all hosts make each group's interval); once none is added, the `Stopping` record
        stored."""
        from tdebench.run.runner import more_rounds

        start = time.monotonic() - before_s

        def more() -> list:
            trials = more_rounds(self.plan, store, time.monotonic() - start, collector.progress)
            collector.expect(trials)
            return trials
        return more


def place(cluster: str | None, the_plan: Plan, source: str, key_file: Path | None, data_dir: Path | None,
           work_dir: Path | None, owned: bool = False) -> Here | OnCluster:
    """Where the trials run: here, or on the cluster at `cluster`; exits 2 if they cannot."""
    if cluster is None:
        return Here(the_plan, key_file, data_dir, work_dir, owned)
    return OnCluster(cluster, the_plan, source, key_file, data_dir, work_dir)
