"""The CSV files: plain, one header row, no index, so Excel and pandas open them as they are.

Values are written raw (seconds, bytes, full precision) except where the file's shape
says otherwise (queries.csv is in ms, as the spreadsheets of Carvalho (2025) were). Missing values
and NaN are empty cells, which Excel reads as blank rather than as text.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

from tdebench.report.summaries.tables import Table


def cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def write(table: Table, path: Path) -> Path:
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(table.keys)
        writer.writerows([cell(row.get(key)) for key in table.keys] for row in table.rows)
    return path
