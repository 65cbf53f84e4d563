"""``benchmirt audit``: every audit of one fit, written as CSV tables in a folder."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import xarray as xr

from benchmirt_bayes.analyses.abilities import ability_table
from benchmirt_bayes.analyses.asymptote_flags import asymptote_flags
from benchmirt_bayes.analyses.audit import benchmark_correlations
from benchmirt_bayes.analyses.comparison import compare_llms
from benchmirt_bayes.analyses.dif import differential_item_functioning
from benchmirt_bayes.analyses.item_fit import item_fit
from benchmirt_bayes.analyses.items import rank_items
from benchmirt_bayes.analyses.miskeyed import miskeyed_items
from benchmirt_bayes.analyses.person_fit import person_fit
from benchmirt_bayes.data.loaders import with_llm_metadata
from benchmirt_bayes.data.tables import read_table
from benchmirt_bayes.posterior import observed_dataset, responses_from_tree


def with_fit_llm_metadata(
    posterior: xr.DataTree, metadata: str | Path | pd.DataFrame, llm_col: str = "llm"
) -> xr.DataTree:
    """A copy of ``posterior`` whose ``observed_data`` carries LLM metadata (for DIF by group).

    The metadata must name exactly the fitted LLMs (see :func:`with_llm_metadata`).
    """
    table = metadata if isinstance(metadata, pd.DataFrame) else read_table(metadata)
    responses = with_llm_metadata(responses_from_tree(posterior), table, llm_col=llm_col)
    out = posterior.copy(deep=False)
    out["observed_data"] = xr.DataTree(observed_dataset(responses))
    return out


def write_audit_tables(
    posterior: xr.DataTree,
    folder: str | Path,
    *,
    llm_metadata: str | Path | pd.DataFrame | None = None,
    llm_col: str = "llm",
    group_by: str | None = None,
    pairs: Sequence[tuple[str, str]] | None = None,
    n_draws: int = 200,
    seed: int = 0,
) -> list[Path]:
    """Write the audits of ``posterior`` to ``folder`` and return the paths written.

    Always: ``abilities.csv`` (:func:`~benchmirt_bayes.ability_table`),
    ``benchmark_correlations.csv`` and ``subgroup_correlations.csv``
    (:func:`~benchmirt_bayes.benchmark_correlations`), ``item_fit.csv``
    (:func:`~benchmirt_bayes.item_fit`), ``item_ranking.csv``
    (:func:`~benchmirt_bayes.rank_items` within benchmarks), ``person_fit.csv``
    (:func:`~benchmirt_bayes.person_fit`) and ``miskeyed_items.csv``
    (:func:`~benchmirt_bayes.miskeyed_items`). With floors or ceilings in the fit (3PL/4PL
    benchmarks): ``asymptote_flags.csv`` (:func:`~benchmirt_bayes.asymptote_flags`). With
    ``group_by`` (an LLM metadata column, from the fit's data or ``llm_metadata``): ``dif.csv``
    (:func:`~benchmirt_bayes.differential_item_functioning`, every group against the
    rest). With ``pairs``: ``comparison_abilities.csv``, ``comparison_scores.csv`` and
    ``comparison_items.csv`` (:func:`~benchmirt_bayes.compare_llms`).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if llm_metadata is not None:
        posterior = with_fit_llm_metadata(posterior, llm_metadata, llm_col)
    tables: dict[str, tuple[pd.DataFrame, bool]] = {
        "abilities.csv": (ability_table(posterior), True),
        "benchmark_correlations.csv": (
            benchmark_correlations(posterior, n_draws=n_draws, seed=seed).table,
            False,
        ),
        "subgroup_correlations.csv": (
            benchmark_correlations(posterior, by="subgroup", n_draws=n_draws, seed=seed).table,
            False,
        ),
        "item_fit.csv": (item_fit(posterior, n_draws=min(n_draws, 100), seed=seed), True),
        "item_ranking.csv": (rank_items(posterior, within="benchmark", seed=seed), True),
        "person_fit.csv": (person_fit(posterior, n_draws=min(n_draws, 100), seed=seed), False),
        "miskeyed_items.csv": (miskeyed_items(posterior, n_draws=min(n_draws, 50), seed=seed), False),
    }
    if "floor" in posterior["posterior"]:
        tables["asymptote_flags.csv"] = (asymptote_flags(posterior), False)
    if group_by is not None:
        dif = differential_item_functioning(posterior, group_by, n_draws=min(n_draws, 50), seed=seed)
        tables["dif.csv"] = (dif, False)
    if pairs:
        comparison = compare_llms(posterior, list(pairs), n_draws=n_draws, seed=seed)
        tables["comparison_abilities.csv"] = (comparison.ability, False)
        tables["comparison_scores.csv"] = (comparison.scores, False)
        tables["comparison_items.csv"] = (comparison.items, False)
    written = []
    for name, (table, index) in tables.items():
        path = folder / name
        table.to_csv(path, index=index)
        written.append(path)
    return written
