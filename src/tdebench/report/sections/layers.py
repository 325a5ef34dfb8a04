"""An fs-layer encryption's cost in two parts: the file-system layer's and its cipher's.

gocryptfs under an engine costs a FUSE round trip (every read the page cache does not answer,
every write, open and stat goes to a daemon in user space and back) and the cipher's
arithmetic. A run that also has the layer's setting without a cipher (`fs-passthrough`, the
same FUSE mount with nothing encrypted: engines/fs.py) measures the first alone, so each
headline figure of an fs-* encryption splits in two overheads, each with its interval and
computed as every overhead of the report is (records.compare: paired by round where the run's
order pairs its configurations, else from the medians):

  layer  = the passthrough against none      (what the report's overhead table shows for it)
  cipher = the fs-* encryption against the passthrough

Ratios multiply (fs-* ÷ none = layer × cipher), so the layer's share of the cost is taken on
the log scale: ln(layer ratio) ÷ (ln(layer ratio) + ln(cipher ratio)), given only where both
parts are costs. Which part dominates is said only where their intervals do not overlap.

Which setting is the bare layer, the run's recorded encryptions say (report/data/encryptions.py): an
encryption of the same layer that does not encrypt, so nothing here names an engine or a layer.

Which part dominates is said in one set of phrases (`in_words`, `DOMINANCE`), which the answer
table's cost cell, the headline's sentences and this section's findings all take: "mostly the
file-system layer: +50.0% [+48.1, +52.0] of it without the cipher". No phrase is made without the
bare layer's arm: a run without it makes no claim of which part dominates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from tdebench.report.data import declared
from tdebench.report.data.encryptions import known
from tdebench.report.data.records import (BASELINE, CellKey, SummaryRecord, cell_data, compare, headline_records,
                                          paired_design, scale_label)
from tdebench.report.sections import Block, Content, Part
from tdebench.report.summaries.tables import Column, Table, num, text
from tdebench.report.data.units import change, interval, percent, ratio_percent
from tdebench.results import RunData
from tdebench.stats import Overhead

TITLE = "Layer and cipher"
LAYER, CIPHER, NEITHER = "layer", "cipher", "neither (the intervals overlap)"
DOMINANCE = {
    LAYER: ("mostly the file-system layer", "{layer} of it without the cipher"),
    CIPHER: ("mostly the cipher", "{cipher} on top of the layer without it"),
    NEITHER: ("neither part dominates (their intervals overlap)",
              "the layer {layer} without the cipher, the cipher {cipher} on top of it"),
}
"""Which part an fs-layer encryption's cost is mostly, by `dominant`: a short phrase (a line of
“In one minute”) and its figures (every other place), each part's overhead with its interval."""


def dominant(layer: Overhead, cipher: Overhead) -> str:
    """The part whose whole interval lies above the other's, else NEITHER."""
    if layer.ci_low > cipher.ci_high:
        return LAYER
    if cipher.ci_low > layer.ci_high:
        return CIPHER
    return NEITHER


def layer_share(layer: Overhead, cipher: Overhead) -> float | None:
    """The layer's part of the combined cost on the log scale (0 to 1), where both parts are costs."""
    logs = math.log1p(layer.pct / 100.0), math.log1p(cipher.pct / 100.0)
    if min(logs) < 0 or sum(logs) <= 0:
        return None
    return logs[0] / sum(logs)


@dataclass(frozen=True)
class Split:
    """One figure of an fs-layer encryption in two parts: the bare layer against none (`layer`,
    the bare layer's own overhead) and the encryption against the bare layer (`cipher`)."""

    bare: str
    layer: Overhead
    cipher: Overhead

    @property
    def dominant(self) -> str:
        return dominant(self.layer, self.cipher)

    @property
    def share(self) -> float | None:
        return layer_share(self.layer, self.cipher)


def in_words(split: Split, short: bool = False) -> str:
    """Which part dominates (DOMINANCE), with each part's overhead and interval unless `short`."""
    phrase, figures = DOMINANCE[split.dominant]
    if short:
        return phrase
    return f"{phrase}: " + figures.format(layer=change(split.layer.pct, split.layer.ci_low, split.layer.ci_high),
                                          cipher=change(split.cipher.pct, split.cipher.ci_low, split.cipher.ci_high))


def splits(run: RunData, records: list[SummaryRecord], wanted: list[SummaryRecord]) -> dict[CellKey, Split]:
    """Of the `wanted` records, each of an fs-layer encryption whose bare layer the run measured in
    the same cell (engine, memory, workload, scale, test, step, metric, hosts), split in two; the
    cipher part is compared as every overhead of the report is (paired where the run pairs)."""
    encryptions = known(run)
    by_cell = {r.cell: r for r in records}
    found: list[tuple[CellKey, CellKey, Overhead]] = []  # the encryption's cell, its bare layer's, the layer's cost
    for record in wanted:
        bare = encryptions.bare_layer(record.cell.engine, record.cell.encryption)
        layer = by_cell.get(replace(record.cell, encryption=bare)) if bare is not None else None
        if record.overhead is not None and layer is not None and layer.overhead is not None:
            found.append((record.cell, layer.cell, layer.overhead))
    if not found:
        return {}
    groups = cell_data(run)
    ciphers = compare([(groups[layer], groups[cell]) for cell, layer, _ in found], paired_design(run))
    return {cell: Split(layer.encryption, layer_cost, cipher)
            for (cell, layer, layer_cost), cipher in zip(found, ciphers)}


def split_rows(run: RunData, records: list[SummaryRecord]) -> list[dict[str, Any]]:
    """One row per headline figure of every fs-layer encryption whose bare layer the run measured
    in the same configuration: the total, the layer and the cipher, each with its interval."""
    timed = [r for r in records if declared.timed(r.cell.workload)]
    figures = headline_records(timed)
    split = splits(run, timed, [record for _, record in figures])
    rows = []
    for label, record in ((headline.label, record) for headline, record in figures if record.cell in split):
        parts, total, cell = split[record.cell], record.overhead, record.cell
        assert total is not None
        rows.append({"engine": cell.configured, "workload": f"{cell.workload} {scale_label(cell.workload, cell.scale)}",
                     "figure": label, "encryption": cell.encryption, "bare": parts.bare,
                     "total": total.pct, "total_ci": _ci(total),
                     "layer": parts.layer.pct, "layer_ci": _ci(parts.layer),
                     "cipher": parts.cipher.pct, "cipher_ci": _ci(parts.cipher),
                     "share": parts.share, "dominant": parts.dominant,
                     "n": parts.cipher.n_treatment, "method": parts.cipher.method,
                     "sentence": _sentence(label, cell, total, parts)})
    return rows


def _ci(compared: Overhead) -> str:
    return interval(compared.ci_low, compared.ci_high, percent)


def _sentence(label: str, cell: CellKey, total: Overhead, split: Split) -> str:
    where = f"{cell.configured} {cell.workload} {scale_label(cell.workload, cell.scale)}, {label}"
    share = split.share
    shown = f" ({ratio_percent(share)} of the cost on the log scale)" if share is not None else ""
    layer, cipher = split.layer, split.cipher
    return (f"{where}: of {cell.encryption}'s {change(total.pct, total.ci_low, total.ci_high)} against "
            f"{BASELINE}, the layer alone ({split.bare} against {BASELINE}) is "
            f"{change(layer.pct, layer.ci_low, layer.ci_high)} and the cipher ({cell.encryption} against "
            f"{split.bare}) {change(cipher.pct, cipher.ci_low, cipher.ci_high)}: {in_words(split, short=True)}"
            f"{shown}.")


def split_table(rows: list[dict[str, Any]]) -> Table:
    columns = (Column("engine", "engine"), Column("workload", "workload"), Column("figure", "figure"),
               Column("encryption", "encryption"), num("total", "vs none", percent), num("total_ci", "95% CI", text),
               num("layer", "layer: bare vs none", percent), num("layer_ci", "95% CI", text),
               num("cipher", "cipher: vs bare", percent), num("cipher_ci", "95% CI", text),
               num("share", "layer's share", ratio_percent), Column("dominant", "dominates"), num("n", "n", text))
    return Table(TITLE, columns, rows,
                 intro="An fs-layer encryption's overhead in two parts: what its file-system layer costs with "
                       "no cipher (the bare layer, e.g. fs-passthrough: the same FUSE mount, nothing encrypted) "
                       "against none, and what the cipher adds on top of that layer.",
                 note="Layer = the bare layer against none; cipher = the encryption against the bare layer, "
                      "computed as every overhead here (paired by round in a lockstep or interleaved run). "
                      "The two multiply to the total. Layer's share = ln(layer ratio) ÷ (ln(layer ratio) + "
                      "ln(cipher ratio)), where both are costs. A part dominates only where its whole interval "
                      "lies above the other's.")


def section(run: RunData, records: list[SummaryRecord]) -> Content | None:
    """The split, for runs that measured an fs-layer encryption beside its bare layer; None otherwise."""
    rows = split_rows(run, records)
    if not rows:
        return None
    table = split_table(rows)
    return Content(blocks=(Block(TITLE, (Part(table),)),), findings=tuple(row["sentence"] for row in rows))
