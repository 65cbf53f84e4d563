"""Our posterior floors and ceilings against another project's point estimates, item by item.

Shared by ``asymptote_real.py`` (metabench's R ``mirt`` ``g``/``u``) and
``asymptote_opencompass.py`` (PSN-IRT's guessing and feasibility).
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def agreement_columns(
    flags: pd.DataFrame, theirs: pd.DataFrame, accuracy: pd.Series, pairs: dict[str, str], label: str
) -> dict[str, object]:
    """One table row's comparison columns for the items of ``flags``.

    Parameters
    ----------
    flags
        :func:`benchmirt_bayes.asymptote_flags` rows indexed by item (``floor_mean``,
        ``floor_lower``, ``floor_upper`` and the same for ``ceiling``).
    theirs
        The other project's estimates indexed by item.
    accuracy
        Each item's share of correct answers in the fitted data.
    pairs
        Our quantity → their column, e.g. ``{"floor": "g"}``.
    label
        The other project's name, shown in the column headers.

    Returns
    -------
    dict
        Per quantity: both means, Pearson and Spearman correlations, our mean 90 % width,
        the share of our intervals that hold their value, and each estimate's correlation
        with the item's accuracy (ours, theirs in brackets).

    """
    items = flags.index
    row: dict[str, object] = {}
    for ours, their in pairs.items():
        value = theirs.loc[items, their].to_numpy(float)
        mean = flags[f"{ours}_mean"].to_numpy(float)
        lower, upper = flags[f"{ours}_lower"].to_numpy(float), flags[f"{ours}_upper"].to_numpy(float)
        seen = accuracy.loc[items].to_numpy(float)
        row[f"{ours}_mean ({label})"] = f"{mean.mean():.3f} ({value.mean():.3f})"
        row[f"{ours}_r"] = round(float(np.corrcoef(mean, value)[0, 1]), 3)
        row[f"{ours}_spearman"] = round(float(pd.Series(mean).corr(pd.Series(value), method="spearman")), 3)
        row[f"{ours}_width_90"] = round(float((upper - lower).mean()), 3)
        row[f"{ours}_holds_{label.lower().replace('-', '_')}"] = round(
            float(((lower <= value) & (value <= upper)).mean()), 3
        )
        # both track how many LLMs answer the item: say how much of the agreement that explains
        row[f"{ours}_r_accuracy ({label})"] = (
            f"{np.corrcoef(mean, seen)[0, 1]:.2f} ({np.corrcoef(value, seen)[0, 1]:.2f})"
        )
    return row
