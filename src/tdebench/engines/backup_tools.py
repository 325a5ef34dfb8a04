"""The external tools the engines' backups share: gzip, shell pipelines, copies.

Every compressed backup is gzip at level 6 (gzip's default, and that of `pg_basebackup -z`
and `pg_dump -Fc`), so the compression ratios of all engines compare; gzip is part of every
Debian system. MariaDB's documentation recommends streaming `mariadb-backup` through a
compressor, which `pipeline` does. Every tool runs through `server.run_tool`: in its own
process group, killed whole on timeout or Ctrl-C, its messages in a log in the workspace.
Tools are children of this process, so their CPU time reaches it once they have been waited
for (the backup workload measures it there). No key is ever on a tool's command line.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from tdebench.engines.base import Backup, BackupMethod
from tdebench.engines.server import run_tool

GZIP_LEVEL = 6
TOOL_TIMEOUT_S = 4 * 3600.0  # a backup or restore of a large database takes a while; a hung one must end


def run_backup_tool(argv: Sequence[str], log: Path, run_as: str | None = None,
                    env: dict[str, str] | None = None, pass_fds: Sequence[int] = (), umask: int = -1) -> None:
    """One backup or restore tool, to completion (ServerError with its log's tail if it fails);
    `pass_fds` and `umask` as `run_tool`'s (umask 0o077: what it writes is private)."""
    run_tool(argv, log, run_as=run_as, timeout=TOOL_TIMEOUT_S, env=env, pass_fds=pass_fds, umask=umask)


def pipeline(stages: Sequence[Sequence[str]], log: Path, *, stdout: Path | None = None,
             run_as: str | None = None, env: dict[str, str] | None = None, umask: int = -1) -> None:
    """`stage1 | stage2 | … > stdout` in bash with pipefail, so any stage's failure fails it."""
    command = " | ".join(shlex.join(stage) for stage in stages)
    if stdout is not None:
        command += f" > {shlex.quote(str(stdout))}"
    run_backup_tool(["bash", "-o", "pipefail", "-c", command], log, run_as=run_as, env=env, umask=umask)


def gzip_command() -> list[str]:
    """gzip as a pipeline stage (stdin to stdout); -n leaves names and times out of the output."""
    return ["gzip", "-n", f"-{GZIP_LEVEL}"]


def gzip_file(path: Path, log: Path, run_as: str | None = None) -> Path:
    """Compress `path` in place into `path.gz` (the original is removed); returns the new path."""
    run_backup_tool([*gzip_command(), str(path)], log, run_as=run_as)
    return path.with_name(path.name + ".gz")


def gunzip(source: Path, target: Path, log: Path, run_as: str | None = None) -> None:
    """Decompress `source` into the new file `target`, leaving `source` as it was."""
    pipeline([["gzip", "-dc", str(source)]], log, stdout=target, run_as=run_as)


def copy_tree(source: Path, target: Path, log: Path, run_as: str | None = None) -> None:
    """Copy a directory with its modes and times, but not its owners, into the new path `target`:
    the copies belong to whoever copies (`run_as`), and the restore gives them to the server's
    user after. Keeping owners (`cp -a`) fails inside a gocryptfs mount, which its daemon serves
    as the server's user: that user may not give a file to root ("failed to preserve ownership")."""
    run_backup_tool(["cp", "-R", "--preserve=mode,timestamps", str(source), str(target)], log, run_as=run_as)


def finished(method: BackupMethod, target: Path, file: Path, log: Path) -> Backup:
    """The backup in `target` whose artifact is `file`, gzipped first when the method compresses."""
    if method.compressed:
        gzip_file(file, log)
    return Backup(method, target)


def gunzipped(backup: Backup, name: str, scratch: Path, log: Path) -> Path:
    """`backup_contents` of a backup that is one file `name`, gzipped by `finished` when the
    method compresses: the backup as it is, or that file decompressed into `scratch`."""
    if not backup.method.compressed:
        return backup.path
    scratch.mkdir(parents=True)
    gunzip(backup.path / (name + ".gz"), scratch / name, log)
    return scratch
