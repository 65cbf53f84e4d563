"""Markdown tables for the benchmark scripts' RESULTS.md sections (no ``tabulate`` needed)."""

from __future__ import annotations

import pandas as pd


def markdown_table(table: pd.DataFrame, digits: int | None = None) -> str:
    """A GitHub Markdown table of ``table`` (empty cells for missing values), rounded to ``digits``."""
    if digits is not None:
        table = table.round(digits)
    cells = [[str(c) for c in table.columns]] + [
        ["" if pd.isna(v) else str(v) for v in row] for row in table.to_numpy()
    ]
    lines = ["| " + " | ".join(row) + " |" for row in cells]
    lines.insert(1, "|" + "---|" * len(table.columns))
    return "\n".join(lines)
