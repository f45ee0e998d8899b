"""Markdown for experiment reports: a DataFrame as a pipe table (no extra dependency)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd


def markdown_table(frame: pd.DataFrame, digits: int = 3) -> str:
    """A pipe table of ``frame`` (index as the first column when it is named)."""
    table = (
        frame.reset_index()
        if frame.index.name or isinstance(frame.index, pd.MultiIndex)
        else frame
    )

    def cell(value: Any) -> str:
        if isinstance(value, float | np.floating):
            return "" if math.isnan(value) else f"{value:.{digits}f}"
        return str(value)

    lines = [
        "| " + " | ".join(map(str, table.columns)) + " |",
        "| " + " | ".join("---" for _ in table.columns) + " |",
    ]
    lines += [
        "| " + " | ".join(cell(v) for v in row) + " |"
        for row in table.itertuples(index=False)
    ]
    return "\n".join(lines)
