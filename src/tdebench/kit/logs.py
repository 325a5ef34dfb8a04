"""Console logs of sqlcmd, sqlplus and the mysql client, read back into timed steps.

A kit's script prints a marker line (`tdebench-step <test> <stream> <pass> <step>`) before
each timed step; everything the client prints until the next marker belongs to that step:
its timings are added up (a load step is several statements) and an error among them makes
the step failed. What each tool prints, as documented:

- sqlcmd with `SET STATISTICS TIME ON`: "SQL Server parse and compile time:" and "SQL Server
  Execution Times:", each followed by "CPU time = n ms, elapsed time = n ms." (the server's
  own measurement); errors as "Msg n, Level l, State s, …" with a level above 10.
- sqlplus with `SET TIMING ON`: "Elapsed: hh:mm:ss.cc" after every statement; errors as
  ORA-nnnnn, SP2-nnnn or PLS-nnnnn lines.
- mysql (and mariadb) with -vvv: "N rows in set (0.01 sec)", "Empty set (0.01 sec)", "Query
  OK, … (0.01 sec)", with "1 min", "1 hour", "1 day" before the seconds past a minute, and 3
  decimals from MariaDB's client; errors as "ERROR n (state) at line l: …". The marker is a
  SELECT of its own here, so the first timing after it is the marker's and is skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tdebench.kit.targets import STEP

_MARKER = re.compile(rf"{re.escape(STEP)} (\S+) (\d+) (\S+) ([^\s|']+)")
_SQLCMD_TIME = re.compile(r"CPU time = (\d+) ms,\s*elapsed time = (\d+) ms")
_SQLCMD_ERROR = re.compile(r"^\s*Msg (\d+), Level (\d+), State \d+")
_SQLPLUS_TIME = re.compile(r"^\s*Elapsed: (\d+):(\d{2}):(\d{2}(?:\.\d+)?)\s*$")
_SQLPLUS_ERROR = re.compile(r"^\s*((?:ORA|SP2|PLS)-\d{4,5}):")
_MYSQL_TIME = re.compile(r"\((?:(\d+) days? )?(?:(\d+) hours? )?(?:(\d+) min )?(\d+(?:\.\d+)?) sec\)\s*$")
_MYSQL_ERROR = re.compile(r"^ERROR \d+( \(\w+\))?")
TOOLS = ("sqlcmd", "sqlplus", "mysql")


@dataclass
class Step:
    """One timed step of a log: its marker's fields, the time and CPU the tool reported for it
    (None when it reported none), and the first error printed within it ("" when none)."""

    test: str
    stream: int
    pass_label: str
    step: str
    elapsed_s: float | None = None
    cpu_s: float | None = None
    error: str = ""
    _timings: int = field(default=0, repr=False)

    @property
    def key(self) -> tuple[str, int, str, str]:
        return (self.test, self.stream, self.pass_label, self.step)

    @property
    def failed(self) -> bool:
        return bool(self.error) or self.elapsed_s is None


def _timing(tool: str, line: str) -> tuple[float, float | None] | None:
    """(elapsed s, CPU s or None) of a timing line, or None."""
    if tool == "sqlcmd":
        match = _SQLCMD_TIME.search(line)
        return (int(match[2]) / 1000, int(match[1]) / 1000) if match else None
    if tool == "sqlplus":
        match = _SQLPLUS_TIME.match(line)
        return (int(match[1]) * 3600 + int(match[2]) * 60 + float(match[3]), None) if match else None
    match = _MYSQL_TIME.search(line)
    if not match:
        return None
    days, hours, minutes = (int(part or 0) for part in match.groups()[:3])
    return (((days * 24 + hours) * 60 + minutes) * 60 + float(match[4]), None)


def _error(tool: str, lines: list[str], index: int) -> str:
    """The error that starts at `lines[index]` (with sqlcmd's message, on the next line), or ""."""
    line = lines[index]
    if tool == "sqlcmd":
        match = _SQLCMD_ERROR.match(line)
        if not match or int(match[2]) <= 10:  # levels up to 10 are informational messages
            return ""
        following = lines[index + 1].strip() if index + 1 < len(lines) else ""
        return f"{line.strip()}: {following}"
    pattern = _SQLPLUS_ERROR if tool == "sqlplus" else _MYSQL_ERROR
    return line.strip() if pattern.match(line) else ""


def parse(tool: str, text: str) -> list[Step]:
    """The marked steps of one console log, in the order they appear. Lines before the first
    marker (settings, setup) belong to no step. ValueError for an unknown tool."""
    if tool not in TOOLS:
        raise ValueError(f"no log parser for {tool!r}; valid: {', '.join(TOOLS)}")
    lines = text.splitlines()
    steps: list[Step] = []
    own_timing = False  # mysql: the marker's own SELECT prints a timing before the step's
    for index, line in enumerate(lines):
        marker = _MARKER.search(line)
        if marker:
            key = (marker[1], int(marker[2]), marker[3], marker[4])
            current = steps[-1] if steps else None
            fresh = current is None or current.key != key or current._timings or current.error
            if fresh:  # mysql -vvv shows a marker twice: its statement echoed, then its row
                steps.append(Step(*key))
                own_timing = tool == "mysql"
            continue
        if not steps:
            continue
        step = steps[-1]
        timing = _timing(tool, line)
        if timing is not None:
            if own_timing:
                own_timing = False
                continue
            elapsed, cpu = timing
            step.elapsed_s = (step.elapsed_s or 0.0) + elapsed
            if cpu is not None:
                step.cpu_s = (step.cpu_s or 0.0) + cpu
            step._timings += 1
            continue
        error = _error(tool, lines, index)
        if error and not step.error:
            step.error = error
    return steps
