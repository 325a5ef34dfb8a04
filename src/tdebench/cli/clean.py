"""`tdebench clean`: what killed runs left behind, here or on every worker of a cluster."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import click

from tdebench.run import setup as runsetup
from tdebench.cli.console import err, out, plain, print_cleaned
from tdebench.cli.places import cluster_client
from tdebench.errors import InputError


@click.command("clean")
@click.option("--work-dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Where the killed runs' workspaces are. [default: the system's temporary directory]")
@click.option("--cluster", "cluster", metavar="ADDRESS",
              help="Clean on every worker of this Dask scheduler (tcp://HOST:8786) instead, each in its own "
                   "--work-dir (a path on every worker), and say what each host cleaned.")
def clean_command(work_dir: Path | None, cluster: str | None) -> None:
    """Clean up after killed runs: stop the servers and gocryptfs processes their state files
    name (by pid and start time), unmount what is still mounted in their workspaces, and remove
    the workspaces (databases, key files). `tdebench run` does this first by itself; a running
    run is never touched. Exit 1 if something could not be cleaned."""
    if cluster is not None:
        _clean_cluster(cluster, work_dir)
    if work_dir is not None and not work_dir.is_dir():
        raise InputError(f"--work-dir {work_dir} is not an existing directory")
    cleaned = runsetup.clean_dead_runs(work_dir)
    print_cleaned(cleaned)
    if not cleaned:
        out.print(f"nothing to clean in {work_dir or tempfile.gettempdir()}", highlight=False)
    sys.exit(0 if all(c.removed for c in cleaned) else 1)


def _clean_cluster(address: str, work_dir: Path | None) -> None:
    """`tdebench clean --cluster ADDRESS`: the clean on every worker, reported per host; exits."""
    cluster = cluster_client().Cluster(address)
    if cluster.local_workers is not None:
        raise InputError(f"--cluster {address}: local workers share this machine: clean it with `tdebench clean`")
    with cluster:
        answers = cluster.clean(work_dir)
    for answer in answers:
        for line in answer["cleaned"] or [f"nothing to clean in {answer['directory']}"]:
            (out if answer["removed"] else err).print(plain(f"{answer['host']}: {line}"), highlight=False,
                                                      soft_wrap=True)
    if not answers:
        out.print(f"--cluster {address}: no workers are connected: nothing cleaned", highlight=False)
    sys.exit(0 if all(answer["removed"] for answer in answers) else 1)
