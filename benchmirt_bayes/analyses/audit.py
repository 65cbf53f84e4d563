"""Benchmark audit: what each benchmark and subgroup measures, with posterior uncertainty."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.data.responses import ResponseMatrix
from benchmirt_bayes.posterior import responses_from_tree, thinned_draws
from benchmirt_bayes.summaries import CI_PROB, check_ci_prob, summarise_draws


@dataclass(frozen=True)
class BenchmarkAudit:
    """Result of :func:`benchmark_correlations`.

    Attributes
    ----------
    table
        Tidy: one row per (group, dimension) with ``r_mean``, ``r_sd``, ``r_lower``,
        ``r_upper`` (posterior of the correlation between ability and the group's mean
        score), ``r_point`` (at the posterior mean abilities, the published method),
        ``loading_mean``/``loading_sd``/``loading_lower``/``loading_upper`` (the group's
        mean loading), ``share_main`` (share of its items loading
        mainly on the dimension), ``share_negative`` (share with a negative
        loading on it) and ``n_items``.
    draws
        ``correlation (sample_index, group, dimension)`` and
        ``group_loading (sample_index, group, dimension)``.

    """

    table: pd.DataFrame
    draws: xr.Dataset

    def wide(self, value: str = "r_mean") -> pd.DataFrame:
        """``group × dimension`` matrix of one column of :attr:`table`."""
        return self.table.pivot(index="group", columns="dimension", values=value).loc[
            pd.unique(self.table["group"])
        ]


def _stacked(posterior: xr.DataTree, name: str, n_draws: int | None, seed: int) -> xr.DataArray:
    """One variable's draws, thinned as every per-draw analysis thins them (``sample_index``)."""
    total = posterior["posterior"].sizes["chain"] * posterior["posterior"].sizes["draw"]
    return thinned_draws(posterior, total if n_draws is None else n_draws, seed=seed, variables=(name,))[name]


def benchmark_correlations(
    posterior: xr.DataTree,
    responses: ResponseMatrix | None = None,
    *,
    by: str = "benchmark",
    ci_prob: float = CI_PROB,
    n_draws: int | None = 1000,
    seed: int = 0,
) -> BenchmarkAudit:
    """Correlation across LLMs between each ability and each group's mean score, per draw.

    Parameters
    ----------
    posterior
        A fit from :func:`fit_posterior`.
    responses
        The data (default: the fit's own ``observed_data``).
    by
        Any item coordinate: ``"benchmark"``, ``"subgroup"``, ``"category"``...
        Subgroup names are prefixed with their benchmark when ``by="subgroup"``.
    ci_prob
        Credible interval mass (equal-tailed).
    n_draws
        Posterior draws used (seeded subsample; ``None`` for all).
    seed
        Seed of the subsample.

    Returns
    -------
    BenchmarkAudit

    """
    responses = responses if responses is not None else responses_from_tree(posterior)
    if by not in responses.item_coords:
        raise KeyError(f"unknown item coordinate {by!r}; available: {responses.item_coords}")
    labels = responses.data[by].values.astype(str)
    if by == "subgroup":
        labels = np.char.add(np.char.add(responses.benchmarks.astype(str), "/"), labels)
    groups = list(pd.unique(labels))
    ability = _stacked(posterior, "ability", n_draws, seed).transpose("sample_index", "llm", "dimension")
    ability = ability.sel(llm=responses.llms.astype(str)).values
    loading = _stacked(posterior, "loading", n_draws, seed).transpose("sample_index", "item", "dimension")
    loading = loading.sel(item=responses.items.astype(str)).values
    dims = posterior["posterior"]["dimension"].values
    observed, values = responses.observed, np.where(responses.observed, responses.scaled_values, 0.0)
    mean_ability = ability.mean(axis=0)
    mean_loading = loading.mean(axis=0)
    correlations = np.zeros((ability.shape[0], len(groups), len(dims)))
    point = np.zeros((len(groups), len(dims)))
    group_loading = np.zeros_like(correlations)
    rows = []
    check_ci_prob(ci_prob)
    for g, group in enumerate(groups):
        cols = labels == group
        count = observed[:, cols].sum(axis=1)
        keep = count > 0
        score = values[:, cols].sum(axis=1)[keep] / count[keep]
        correlations[:, g] = _pearson_over_llms(ability[:, keep], score)
        point[g] = _pearson_over_llms(mean_ability[None, keep], score)[0]
        group_loading[:, g] = loading[:, cols].mean(axis=1)
        main = np.argmax(np.abs(mean_loading[cols]), axis=1)
        for k, dim in enumerate(dims):
            r, gl = correlations[:, g, k], group_loading[:, g, k]
            rows.append(
                {
                    "group": group,
                    "dimension": str(dim),
                    **_scalars(summarise_draws(r, ci_prob=ci_prob, prefix="r", skipna=True)),
                    "r_point": float(point[g, k]),
                    **_scalars(summarise_draws(gl, ci_prob=ci_prob, prefix="loading")),
                    "share_main": float(np.mean(main == k)),
                    "share_negative": float(np.mean(mean_loading[cols, k] < 0)),
                    "n_items": int(cols.sum()),
                    "n_llms": int(keep.sum()),
                }
            )
    draws = xr.Dataset(
        {
            "correlation": (("sample_index", "group", "dimension"), correlations),
            "group_loading": (("sample_index", "group", "dimension"), group_loading),
        },
        coords={"group": groups, "dimension": dims},
        attrs={"by": by, "ci_prob": ci_prob},
    )
    table = pd.DataFrame(rows)
    table.attrs = {"by": by, "ci_prob": ci_prob}
    return BenchmarkAudit(table, draws)


def _scalars(summary: dict[str, np.ndarray]) -> dict[str, float]:
    return {key: float(value) for key, value in summary.items()}


def _pearson_over_llms(ability: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Pearson r between ``ability (S, J, K)`` and ``score (J,)`` over J, per draw and dimension."""
    a = ability - ability.mean(axis=1, keepdims=True)
    s = score - score.mean()
    denom = np.sqrt((a**2).sum(axis=1) * (s**2).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.einsum("sjk,j->sk", a, s) / denom


@dataclass(frozen=True)
class DimensionNames:
    """Result of :func:`name_dimensions`: the renamed posterior and the table behind the names."""

    posterior: xr.DataTree
    proposals: pd.DataFrame


def name_dimensions(
    posterior: xr.DataTree,
    names: Sequence[str] | None = None,
    *,
    n_defining: int = 2,
    min_share: float = 0.5,
) -> DimensionNames:
    """Propose (or apply user-given) names for the dimensions, and fix their signs.

    Each dimension's *defining benchmarks* are those whose mean loading vector points
    mainly along it (share ``loading_k² / ‖loading‖² ≥ min_share``), strongest first
    (largest ``share · |loading_k|``); a dimension that no benchmark loads on mainly is
    named after the benchmark with the largest share on it, marked ``~``. The sign
    convention, applied to abilities, loadings and benchmark mean loadings together
    (predictions unchanged): **positive = better on the defining benchmarks**, i.e. their
    mean loading on the dimension is positive.

    Parameters
    ----------
    posterior
        A fit.
    names
        Names to use, one per dimension (default: the defining benchmarks
        joined by ``+``).
    n_defining
        Largest number of defining benchmarks listed per dimension.
    min_share
        Smallest share of a benchmark's squared mean loading on the dimension for it to
        define the dimension.

    Returns
    -------
    DimensionNames
        The renamed posterior and a table with, per dimension, the proposed name, the
        defining benchmarks and their shares.

    """
    post = posterior["posterior"]
    dims = list(post["dimension"].values)
    if names is not None and len(names) != len(dims):
        raise ValueError(f"need {len(dims)} names, got {len(names)}")
    if not 0 < min_share <= 1:
        raise ValueError(f"min_share must be in (0, 1], got {min_share!r}")
    bench_mean = post["benchmark_loading_mean"].mean(("chain", "draw")).transpose("benchmark", "dimension")
    benchmarks = bench_mean["benchmark"].values
    values = bench_mean.values
    share = values**2 / ((values**2).sum(axis=1, keepdims=True) + 1e-12)
    rows, signs = [], np.ones(len(dims))
    for k, dim in enumerate(dims):
        strength = share[:, k] * np.abs(values[:, k])
        order = [i for i in np.argsort(-strength) if share[i, k] >= min_share][:n_defining]
        mixed = not order
        if mixed:
            order = [int(np.argmax(share[:, k]))]
        defining = [str(benchmarks[i]) for i in order]
        signs[k] = -1.0 if values[order, k].sum() < 0 else 1.0
        proposed = ("~" if mixed else "") + "+".join(defining)
        rows.append(
            {
                "dimension": dim,
                "name": names[k] if names is not None else proposed,
                "proposed": proposed,
                "defining_benchmarks": ", ".join(defining),
                "shares": ", ".join(f"{share[i, k]:.2f}" for i in order),
                "sign_flipped": bool(signs[k] < 0),
            }
        )
    proposals = pd.DataFrame(rows)
    new_names = proposals["name"].tolist()
    if len(set(new_names)) != len(new_names):
        raise ValueError(f"dimension names must be distinct, got {new_names}")
    flip = xr.DataArray(signs, dims="dimension", coords={"dimension": dims})
    renamed = posterior.copy()
    out = post.to_dataset()
    for name in ("ability", "loading", "benchmark_loading_mean"):
        out[name] = out[name] * flip
    if "ability_correlation" in out:
        flip_b = flip.rename(dimension="dimension_b")
        out["ability_correlation"] = out["ability_correlation"] * flip * flip_b
        out = out.assign_coords(dimension_b=new_names)
    out = out.assign_coords(dimension=new_names)
    renamed["posterior"] = xr.DataTree(out)
    renamed.attrs = {**posterior.attrs, "benchmirt_dimension_names": ", ".join(new_names)}
    return DimensionNames(renamed, proposals)
