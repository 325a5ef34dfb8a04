"""Against the raw cipher: how much of each measured cost the cipher itself explains, from the bytes
each configuration really read and wrote, and what the rest is.

Per engine, encryption and test (its `total` step, or its one step: the load, TPC-H's power and
throughput tests; and the timed open, `connection.OPEN_CELL`):

  bytes        = what the cipher had to handle: the test's median read_chars + write_chars
                 (measure/process.py: what the engine read from and wrote to its files through
                 system calls, cached by the OS or not: an engine decrypts every page it reads),
                 under a file-system layer its daemon's (layer_read_chars + layer_write_chars:
                 what gocryptfs read from and wrote to its cipher files); a run that recorded
                 neither, read_bytes + write_bytes (what reached the storage layer), said so
  cipher time  = bytes ÷ the raw cipher's MiB/s at the encryption's page size (raw_speed),
                 the cipher, page size and key handling as the run recorded them (report/data/encryptions.py)
  cost         = none's median × the overhead (and its 95% CI likewise): the encryption's time
                 against none, as the Overhead table's interval says it
  share        = cipher time ÷ cost, where the run resolves a cost (its interval above zero and
                 outside the placebo's)

What the cipher does not explain (cost − cipher time) is named from what the run measured, in
this order, each part with its figure (`rest`):

1. the file-system layer: where the run has the encryption's bare layer (fs-passthrough) in the
   same configuration, its cost against none (report/sections/layers.py);
2. key derivation on every open: on the timed open, where the encryption derives its key there
   and the trials took a passphrase (not a raw key), the whole rest of the open's cost;
3. CPU beyond the cipher: the configuration's median CPU time less none's (the bare layer's where
   1 named it) less the cipher time, where the CPU overhead is significant;
4. what is left after those: I/O wait or allocation, not separated by this run.

A run that did not record a test's bytes says so in the row (no size stands in for them), and one
that did not record its encryptions says so in the note (report/data/encryptions.py).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from tdebench.measure.process import LAYER_READ, LAYER_WRITTEN
from tdebench.report.summaries.connection import OPEN_CELL
from tdebench.report.data.encryptions import Known, known
from tdebench.report.data.records import (BASELINE, PLACEBO, CellKey, SummaryRecord, below_resolution, failed_trials,
                                          floors, host_blocks, memory_order)
from tdebench.report.summaries.resources import per_test
from tdebench.report.summaries.tables import UNAVAILABLE, Column, Table, num, shown_config_columns, text
from tdebench.report.data.units import MIB, MS, interval, mib, number, ratio_percent, signed_ms
from tdebench.results import ON_OPEN, RAW, CipherSpeed, EncryptionFacts, RunData

TITLE = "Against the raw cipher"
NOT_MEASURED = "not measured"
NOT_RECORDED = "not recorded by this run"  # the encryption's facts (report/data/encryptions.py)
ELAPSED, CPU = "elapsed_s", "cpu_s"
LAYER_BYTES, ENGINE_BYTES, STORAGE_BYTES = ((LAYER_READ, LAYER_WRITTEN), ("read_chars", "write_chars"),
                                           ("read_bytes", "write_bytes"))
"""The metrics of the bytes the cipher handled: a file-system layer's daemon's, the engine's
through system calls; a run from before those, what reached storage (`_bytes`)."""

# why a row has no cipher time
NO_BYTES = "bytes not recorded in this run: no cipher time"
PER_VALUE = "encrypts per value, not per page: the bytes read and written do not measure its work"
NO_FIGURE = "no raw figure of this cipher: no cipher time"
# what the cost is, where the run resolves none
NO_COST = "no measurable cost"
UNRESOLVED = "inside the noise floor: not resolved as a cost"
FASTER = "faster than none: no cost to explain"
# what the cipher does not explain, in `rest`'s order
COVERED = "nothing: the cipher time covers the measured cost"
LAYER = "the file-system layer {ms} ms {ci} ({bare} against none)"
KEY = "key derivation on every open"
BEYOND = "CPU beyond the cipher {ms} ms"
WAIT = "I/O wait or allocation (not separated by this run)"
LEFT = "the rest, {ms} ms: " + WAIT
SMALL_REST = 0.1
"""What is left after the named parts, as a share of the cost, below which it is not named (the
medians' rounding and the parts' own spread are of that order)."""


def raw_speed(speeds: Iterable[CipherSpeed], cipher: str, page_bytes: int) -> CipherSpeed | None:
    """The figure of `cipher` measured at the page size nearest `page_bytes` (on a log scale,
    the smaller on a tie; the smallest for 0), or None if it has none; where several hosts
    measured it (a cluster run), the median of their figures at that page size."""
    measured = [s for s in speeds if s.cipher == cipher and s.available]
    target = math.log2(page_bytes) if page_bytes > 0 else 0.0
    nearest = min(measured, key=lambda s: (abs(math.log2(s.chunk_bytes) - target), s.chunk_bytes), default=None)
    figures = [s.mib_per_s for s in measured if nearest is not None and s.chunk_bytes == nearest.chunk_bytes]
    if nearest is None or len(figures) == 1:
        return nearest
    return dataclasses.replace(nearest, mib_per_s=statistics.median(f for f in figures if f is not None), host=None)


def speeds_of(run: RunData, hosts: str | None) -> list[CipherSpeed]:
    """The raw cipher figures of the hosts that measured a cell: those of its kind of host
    (`CellKey.host`) where hosts that differ are reported apart, else every host's."""
    if hosts is None:
        return list(run.ciphers)
    groups = host_blocks(run).groups
    return [speed for speed in run.ciphers if speed.host is not None and groups.get(speed.host) == hosts]


def _thousands(value: int | None) -> str:
    return "–" if value is None else f"{value:,}"


@dataclass(frozen=True)
class Parts:
    """What the run measured of one cost besides its cipher time, in seconds (None: not measured)."""

    bare: str = ""  # the bare layer measured in the same cell ("": none)
    layer_s: float | None = None  # its cost against none
    layer_ci: tuple[float, float] | None = None
    key_on_open: bool = False  # the timed open derives the key (and the trials took a passphrase)
    cpu_extra_s: float | None = None  # CPU time over none's (over the bare layer's, with a layer)


def rest(cost_s: float, cipher_s: float, parts: Parts) -> str:
    """What the cipher does not explain of a resolved cost, named (the module's rules 1–4)."""
    left = cost_s - cipher_s
    if left <= 0:
        return COVERED
    named = []
    if parts.bare and parts.layer_s is not None and parts.layer_ci is not None:
        named.append(LAYER.format(ms=signed_ms(parts.layer_s * MS), bare=parts.bare,
                                  ci=interval(parts.layer_ci[0] * MS, parts.layer_ci[1] * MS, signed_ms)))
        left -= parts.layer_s
    beyond = None if parts.cpu_extra_s is None else parts.cpu_extra_s - cipher_s
    if parts.key_on_open:  # what an open does more under the encryption: the rest is its key derivation's
        named.append(KEY + (f" ({BEYOND.format(ms=signed_ms(beyond * MS))})" if beyond is not None and beyond > 0
                            else ""))
        left = 0.0
    elif beyond is not None and beyond > 0:
        named.append(BEYOND.format(ms=signed_ms(beyond * MS)))
        left -= min(beyond, max(left, 0.0))
    if not named:
        return WAIT
    if left > SMALL_REST * cost_s:
        named.append(LEFT.format(ms=signed_ms(left * MS)))
    return "; ".join(named)


def _key_forms(run: RunData) -> dict[tuple, set[str]]:
    """Per configuration (engine, memory_mb, encryption, workload, scale), how its trials took the key."""
    failed = failed_trials(run)
    forms: dict[tuple, set[str]] = defaultdict(set)
    for outcome in run.trials:
        t = outcome.trial
        if t not in failed:
            forms[(t.engine, t.memory_mb, t.encryption, t.workload, t.scale)].add(outcome.key_form)
    return forms


def _figures(records: list[SummaryRecord]) -> list[SummaryRecord]:
    """Each configuration's elapsed time per test (`resources.per_test`) and its timed open."""
    opens = [r for r in records if (r.cell.test, r.cell.step, r.cell.metric) == OPEN_CELL]
    return per_test(records, ELAPSED) + opens


def _cost(record: SummaryRecord, base: SummaryRecord) -> tuple[float, tuple[float, float] | None]:
    """The encryption's cost in seconds against none's median, and its interval (None: no interval)."""
    compared = record.overhead
    assert compared is not None
    median = base.summary.median
    ci = ((median * compared.ci_low / 100.0, median * compared.ci_high / 100.0)
          if not math.isnan(compared.ci_low) else None)
    return median * compared.pct / 100.0, ci


def _verdict(record: SummaryRecord, floor: SummaryRecord | None) -> str:
    """"" for a cost the run resolves; else what it is instead."""
    compared = record.overhead
    assert compared is not None
    if not compared.significant:
        return NO_COST
    if below_resolution(record, floor):
        return UNRESOLVED
    return FASTER if compared.pct < 0 else ""


def _parts(record: SummaryRecord, by_cell: dict[CellKey, SummaryRecord], encryptions: Known,
           key_forms: dict[tuple, set[str]]) -> Parts:
    """What the run measured of `record`'s cost besides the cipher (the module's rules 1–3)."""
    cell = record.cell
    base = by_cell[replace(cell, encryption=BASELINE)]
    bare = encryptions.bare_layer(cell.engine, cell.encryption)
    layer = by_cell.get(replace(cell, encryption=bare)) if bare is not None else None
    named = layer if layer is not None and layer.overhead is not None else None
    layer_s, layer_ci = _cost(named, base) if named is not None else (None, None)
    cpu = by_cell.get(replace(cell, metric=CPU))
    reference = by_cell.get(replace((named or base).cell, metric=CPU))
    cpu_extra = (cpu.summary.median - reference.summary.median if cpu is not None and reference is not None
                 and cpu.overhead is not None and cpu.overhead.significant else None)
    facts = encryptions.get(cell.engine, cell.encryption)
    forms = key_forms.get((cell.engine, cell.memory_mb, cell.encryption, cell.workload, cell.scale), set())
    key_on_open = ((cell.test, cell.step, cell.metric) == OPEN_CELL and facts is not None
                   and facts.key_taken == ON_OPEN and forms != {RAW})
    return Parts(named.cell.encryption if named is not None else "", layer_s, layer_ci, key_on_open, cpu_extra)


def _cipher(run: RunData, cell: CellKey, facts: EncryptionFacts | None) -> dict[str, Any]:
    """The raw cipher of a cell's encryption as the table shows it, and its figure at the
    encryption's page size (`chunk`, `mib_per_s`) where the run measured one."""
    if facts is None:
        return {"cipher": NOT_RECORDED}
    speeds = speeds_of(run, cell.host)
    speed = raw_speed(speeds, facts.cipher, facts.page_bytes) if facts.page_bytes else None
    unavailable = any(s.cipher == facts.cipher and not s.available for s in speeds)
    missing = "" if speed or not facts.page_bytes else f"({UNAVAILABLE if unavailable else NOT_MEASURED})"
    shown: dict[str, Any] = {
        "cipher": " ".join(filter(None, (facts.cipher, f"plus {facts.adds}" if facts.adds else "", missing)))}
    if speed is not None and speed.mib_per_s:
        shown |= {"chunk": speed.chunk_bytes, "mib_per_s": speed.mib_per_s}
    return shown


def rows(run: RunData, records: list[SummaryRecord]) -> list[dict[str, Any]]:
    """One row per engine, encryption and test whose encryption has a cipher: its raw cipher, the
    bytes, the cipher time, the measured cost, the cipher's share of it and the rest, named."""
    encryptions, key_forms = known(run), _key_forms(run)
    by_cell, floor_of = {r.cell: r for r in records}, floors(records)
    found = []
    for record in _figures(records):
        cell = record.cell
        facts = encryptions.get(cell.engine, cell.encryption)
        base = by_cell.get(replace(cell, encryption=BASELINE))
        if (record.overhead is None or base is None or cell.encryption in (BASELINE, PLACEBO)
                or (facts is not None and not facts.encrypts)):
            continue
        row: dict[str, Any] = {"engine": cell.engine, "memory_mb": cell.memory_mb, "hosts": cell.host or "",
                               "encryption": cell.encryption, "workload": cell.workload, "scale": cell.scale,
                               "test": cell.test, **_cipher(run, cell, facts)}
        row |= _bytes(cell, by_cell, facts)
        if "bytes" in row:
            if "mib_per_s" in row:
                row["cipher_s"] = row["bytes"] / MIB / row["mib_per_s"]
        row["cost_s"], row["cost_ci"] = _cost(record, base)
        verdict = _verdict(record, floor_of.get(cell.comparison))
        if "cipher_s" not in row:
            row["rest"] = (NO_BYTES if "bytes" not in row else PER_VALUE if facts is not None and not facts.page_bytes
                           else NO_FIGURE)
        elif verdict:
            row["rest"] = verdict
        else:
            row["share"] = row["cipher_s"] / row["cost_s"]
            row["rest"] = rest(row["cost_s"], row["cipher_s"], _parts(record, by_cell, encryptions, key_forms))
        found.append(row)
    return sorted(found, key=lambda row: (row["engine"], memory_order(row["memory_mb"]), row["hosts"],
                                          row["encryption"], row["workload"], row["scale"], row["test"]))


def _bytes(cell: CellKey, by_cell: dict[CellKey, SummaryRecord], facts: EncryptionFacts | None) -> dict[str, Any]:
    """The bytes the cipher handled (median read + written) and the metrics they came from: a
    file-system layer's daemon's, else the engine's through system calls; what reached storage
    where a run recorded neither (an older run; the engine's chars there would count the layer's
    reads beside the engine's own, and the helper threads'). {} where none was recorded."""
    layer = facts is not None and facts.layer == "fs"
    for pair in ((LAYER_BYTES if layer else ENGINE_BYTES), STORAGE_BYTES):
        read, written = (by_cell.get(replace(cell, metric=metric)) for metric in pair)
        if read is not None and written is not None:
            return {"bytes": read.summary.median + written.summary.median, "bytes_of": pair}
    return {}


def cipher_cost_table(run: RunData, records: list[SummaryRecord]) -> Table:
    """`rows` as the report's table "Against the raw cipher"."""
    found = rows(run, records)
    config = shown_config_columns(found)
    if any(row["hosts"] for row in found):  # hosts that differ: each kind's own cipher figures
        config = (*config[:1], Column("hosts", "hosts"), *config[1:])
    columns = config + (
        Column("test", "test"), Column("cipher", "raw cipher", prose=True), num("chunk", "page (bytes)", _thousands),
        num("mib_per_s", "MiB/s"), num("bytes", "read + written (MiB)", mib),
        num("cipher_s", "cipher time (ms)", _ms), num("cost_s", "measured cost (ms)", _signed_ms),
        num("cost_ci", "95% CI (ms)", _ms_interval), num("share", "cipher's share", ratio_percent),
        Column("rest", "the rest", prose=True))
    return Table(TITLE, columns, found, intro=intro(found), note=note(known(run).caveat),
                 summary=f"{len(found)} encryptions and tests: " + (
                     f"the cipher's time is {span} of the costs resolved, the rest named"
                     if (span := _span(found)) else "no cost resolved"))


def _ms(seconds: float | None) -> str:
    return text(None) if seconds is None else number(seconds * MS)


def _signed_ms(seconds: float | None) -> str:
    return text(None) if seconds is None else signed_ms(seconds * MS)


def _ms_interval(bounds: tuple[float, float] | None) -> str:
    return text(None) if bounds is None else interval(bounds[0] * MS, bounds[1] * MS, signed_ms)


def _span(found: list[dict[str, Any]]) -> str:
    """The cipher's shares of the resolved costs, from the least to the most ("" without one)."""
    shares = sorted(row["share"] for row in found if "share" in row)
    if not shares:
        return ""
    low, high = ratio_percent(shares[0]), ratio_percent(shares[-1])
    return low if len(shares) == 1 else f"{low} to {high}"


def intro(found: list[dict[str, Any]]) -> str:
    """What the table answers, and the span of the shares it found."""
    words = ("How much of each measured cost does the cipher itself explain? Below, per encryption and test, "
             "the bytes the cipher had to handle (what the engine read from and wrote to its files, cached by "
             "the OS or not; under a file-system layer, what its daemon read from and wrote to its cipher "
             "files), the time its raw cipher needs for "
             "them at the engine's page size on the machine that ran it (cipher time), the cost the run "
             "measured against none, the cipher's share of that cost, and what the rest is, named from what "
             "the run measured.")
    span = _span(found)
    if span:
        words += f" Where the run resolved a cost, the cipher's time is {span} of it."
    if any(row["rest"] == NO_BYTES for row in found):
        words += " Where this run did not record the bytes, the row says so: no size stands in for them."
    if any(row.get("bytes_of") == STORAGE_BYTES for row in found):
        words += (" This run recorded only what reached storage (an older run): pages the OS cache served, "
                  "which the engine still decrypted, are not counted, so its cipher times are a lower bound.")
    return words


def note(caveat: str) -> str:
    """The arithmetic, and where its figures come from (`caveat`: where the encryptions' facts do,
    `Known.caveat`)."""
    return ("Read + written: the test's median bytes that the engine's processes (a file-system layer's "
            "included) read from and wrote to the storage layer; each byte of an encrypted file among them "
            "crossed the cipher once. "
            "Cipher time = those bytes ÷ the raw throughput, taken at the encryption's page size (or the "
            "nearest size measured; on a cluster the median of the hosts' own figures, of each kind of host "
            "where hosts that differ are reported apart). Measured cost = none's median × the overhead, its "
            "95% CI likewise (paired by round where the run pairs). Cipher's share = cipher time ÷ measured "
            "cost, where the run resolves a cost. The rest names, in turn, the file-system layer (its bare "
            "layer against none, where the run has it), key derivation on every open (on the timed open), "
            "CPU beyond the cipher (the median CPU time over none's, or over the bare layer's, less the "
            "cipher time) and what is left (I/O wait or allocation, not separated by this run). Pages a "
            "native engine reads again from the OS page cache are decrypted again but never reach storage: "
            "they are not in these bytes, so where the data is larger than the engine's cache their cipher "
            "work shows as CPU beyond the cipher. A CBC cipher's decryption runs in parallel and is faster "
            "than the encryption measured, so reads can take less than their cipher time."
            + (f" {caveat}" if caveat else ""))
