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

Which setting is the bare layer, the engine says: an encryption of the same layer that does not
encrypt (`Encryption.encrypts`), so nothing here names an engine or a layer.
"""

from __future__ import annotations

import math
from typing import Any

from tdebench.engines import ENGINES
from tdebench.engines.base import Encryption
from tdebench.report import declared
from tdebench.report.records import (BASELINE, CellKey, SummaryRecord, cell_data, compare, headline_records,
                                     paired_design, scale_label)
from tdebench.report.sections import Block, Content, Part
from tdebench.report.tables import Column, Table, num, text
from tdebench.report.units import change, interval, percent, ratio_percent
from tdebench.results import RunData
from tdebench.stats import Overhead

TITLE = "Layer and cipher"
LAYER, CIPHER, NEITHER = "layer", "cipher", "neither (the intervals overlap)"


def _encryption(engine: str, name: str) -> Encryption | None:
    engine_class = ENGINES.get(engine)
    return next((e for e in engine_class.encryptions if e.name == name), None) if engine_class else None


def bare_layer(engine: str, encryption: str) -> str | None:
    """The engine's setting of `encryption`'s layer without a cipher (fs-aes-256-gcm →
    fs-passthrough), or None: the encryption is not below the engine, or its layer has none."""
    found = _encryption(engine, encryption)
    if found is None or not found.encrypts or found.provider is None:
        return None
    engine_class = ENGINES[engine]
    return next((e.name for e in engine_class.encryptions
                 if e.layer == found.layer and not e.encrypts and not e.is_baseline), None)


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


def split_rows(run: RunData, records: list[SummaryRecord]) -> list[dict[str, Any]]:
    """One row per headline figure of every fs-layer encryption whose bare layer the run measured
    in the same configuration: the total, the layer and the cipher, each with its interval."""
    timed = [r for r in records if declared.timed(r.cell.workload)]
    by_cell = {r.cell: r for r in timed}
    wanted: list[tuple[str, SummaryRecord, SummaryRecord]] = []
    for headline, record in headline_records(timed):
        bare = bare_layer(record.cell.engine, record.cell.encryption)
        if bare is None or record.overhead is None:
            continue
        layer = by_cell.get(_with(record.cell, bare))
        if layer is not None and layer.overhead is not None:
            wanted.append((headline.label, record, layer))
    if not wanted:
        return []
    groups = cell_data(run)
    ciphers = compare([(groups[layer.cell], groups[record.cell]) for _, record, layer in wanted], paired_design(run))
    rows = []
    for (label, record, layer), cipher in zip(wanted, ciphers):
        assert record.overhead is not None and layer.overhead is not None
        cell = record.cell
        rows.append({"engine": cell.configured, "workload": f"{cell.workload} {scale_label(cell.workload, cell.scale)}",
                     "figure": label, "encryption": cell.encryption, "bare": layer.cell.encryption,
                     "total": record.overhead.pct, "total_ci": _ci(record.overhead),
                     "layer": layer.overhead.pct, "layer_ci": _ci(layer.overhead),
                     "cipher": cipher.pct, "cipher_ci": _ci(cipher),
                     "share": layer_share(layer.overhead, cipher), "dominant": dominant(layer.overhead, cipher),
                     "n": cipher.n_treatment, "method": cipher.method,
                     "sentence": _sentence(label, cell, layer.cell.encryption, record.overhead, layer.overhead,
                                           cipher)})
    return rows


def _with(cell: CellKey, encryption: str) -> CellKey:
    return CellKey(cell.engine, encryption, cell.workload, cell.scale, cell.test, cell.step, cell.metric,
                   cell.memory_mb, cell.host)


def _ci(compared: Overhead) -> str:
    return interval(compared.ci_low, compared.ci_high, percent)


def _sentence(label: str, cell: CellKey, bare: str, total: Overhead, layer: Overhead, cipher: Overhead) -> str:
    where = f"{cell.configured} {cell.workload} {scale_label(cell.workload, cell.scale)}, {label}"
    text_ = (f"{where}: of {cell.encryption}'s {change(total.pct, total.ci_low, total.ci_high)} against "
             f"{BASELINE}, the layer alone ({bare} against {BASELINE}) is "
             f"{change(layer.pct, layer.ci_low, layer.ci_high)} and the cipher ({cell.encryption} against "
             f"{bare}) {change(cipher.pct, cipher.ci_low, cipher.ci_high)}")
    part = dominant(layer, cipher)
    share = layer_share(layer, cipher)
    shown = f", {ratio_percent(share)} of the cost on the log scale" if share is not None else ""
    if part == LAYER:
        return f"{text_}: the file-system layer dominates, not the cipher{shown}."
    if part == CIPHER:
        return f"{text_}: the cipher dominates, not the file-system layer{shown}."
    return f"{text_}: neither part dominates (their intervals overlap){shown}."


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
