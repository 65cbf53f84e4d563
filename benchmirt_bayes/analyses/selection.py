"""Small item subsets that keep the picture: ``select_items``, ``evaluate_subset``, held-out LLM error.

Three selection rules:

``published``
    The study's rule on identified parameters: per dimension, items are cut
    into 100 equal-count bins of multidimensional difficulty; in every bin the
    items whose loading on the dimension is at or above the bin's
    ``1 − fraction`` quantile are kept (the lowest for a dimension whose items
    load negatively on average). Per-dimension selections are united and, if
    the union is larger than asked, trimmed by largest absolute loading.
``information``
    Greedy D-optimal design over the fitted LLM population: add the item that
    most increases ``Σ_j log det(P_j)``, where ``P_j`` is LLM ``j``'s ability
    precision (prior precision plus the Fisher information of the items so far,
    ``p(1−p) a aᵀ`` at posterior means). The log-det saturates for an LLM
    already well measured, so the rule spreads items over the ability range
    (difficulty coverage) by itself; benchmark balance is enforced by quotas
    proportional to benchmark size (at least one item each). Submodular, so a
    lazy greedy search gives the exact greedy answer quickly. Each cell's information is
    averaged over posterior draws (abilities and items of each draw together), so an item is
    valued by the information it carries on average, not at the posterior mean alone.
``random``
    A seeded uniform sample: the baseline.

The rules serve the *picture* (abilities, dimensions, rankings). Information-chosen items
make abilities precise, not the subset's mean representative of the benchmark: when the
goal is a benchmark's score, take random items (for a link to known full scores,
:func:`~benchmirt_bayes.analyses.score_selection.select_for_scores`, whose default is a
seeded random sample below 1,000 LLMs of known score).
"""

from __future__ import annotations

import hashlib
import heapq
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.analyses.ability_posterior import ability_posterior
from benchmirt_bayes.analyses.metrics import spearman
from benchmirt_bayes.batch import ExecutorArg, fields_fingerprint, run_batch
from benchmirt_bayes.checks import check_integer
from benchmirt_bayes.data.responses import ResponseMatrix
from benchmirt_bayes.draws import PosteriorDraws
from benchmirt_bayes.model.layout import ResponseLayout
from benchmirt_bayes.posterior import point_parameters, point_type_parameters, responses_from_tree
from benchmirt_bayes.response_types.base import (
    information_matrix,
    linear_predictor,
    mdisc,
    multidimensional_difficulty,
)
from benchmirt_bayes.rotations import procrustes
from benchmirt_bayes.summaries import CI_PROB, check_ci_prob, summarise_draws

SelectionMethod = Literal["published", "information", "random"]
METHODS = ("published", "information", "random")
FRACTIONS = (0.01, 0.05, 0.1, 0.25, 0.5)


def _target_size(n_total: int, fraction: float | None, n_items: int | None) -> int:
    if (fraction is None) == (n_items is None):
        raise ValueError("give exactly one of fraction= or n_items=")
    if fraction is not None:
        if not 0 < fraction <= 1:
            raise ValueError(f"fraction must be in (0, 1], got {fraction}")
        return max(1, round(fraction * n_total))
    return check_integer("n_items", n_items, minimum=1, maximum=n_total)


def select_items(
    posterior: xr.DataTree,
    *,
    n_items: int | None = None,
    fraction: float | None = None,
    method: SelectionMethod = "information",
    dimension: str | None = None,
    seed: int = 0,
    n_bins: int = 100,
    n_draws: int | None = 100,
) -> pd.Index:
    """Choose a small item subset (see the module docstring for the three rules).

    Parameters
    ----------
    posterior
        A fit from :func:`benchmirt_bayes.fit_posterior`.
    fraction, n_items
        Size of the subset: a share of all items or a count (exactly one).
    method
        ``"published"``, ``"information"`` or ``"random"``. For full-benchmark scores use
        ``"random"`` or :func:`~benchmirt_bayes.analyses.score_selection.select_for_scores`
        (see the module docstring).
    dimension
        Select for one dimension only (``published``: its bins only;
        ``information``: precision of that dimension only). Default: all.
    seed
        Seed of the random baseline.
    n_bins
        Difficulty bins of the published rule.
    n_draws
        ``information``: posterior draws over which each cell's information is averaged
        (item and ability uncertainty integrated); ``None`` uses the posterior means.

    Returns
    -------
    pandas.Index
        The selected item ids, in the posterior's item order.

    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    loading, intercept, _, dims = point_parameters(posterior)
    items = posterior["posterior"]["item"].values.astype(str)
    size = _target_size(len(items), fraction, n_items)
    share = size / len(items)
    dim_index = list(range(len(dims)))
    if dimension is not None:
        if dimension not in dims:
            raise KeyError(f"unknown dimension {dimension!r}; available: {dims}")
        dim_index = [dims.index(dimension)]
    if method == "random":
        chosen = np.random.default_rng(seed).choice(len(items), size=size, replace=False)
    elif method == "published":
        chosen = _published(loading, intercept, dim_index, share, size, n_bins)
    else:
        info = cell_information(posterior, dim_index, n_draws=n_draws, seed=seed)
        benchmarks = responses_from_tree(posterior).benchmarks.astype(str)
        chosen = _greedy_information(info, benchmarks, size)
    return pd.Index(items[np.sort(chosen)], name="item")


def write_subset(posterior: xr.DataTree, kept: Sequence[str], path: str | Path) -> Path:
    """Write a subset as an evaluation harness can read it: item ids grouped per benchmark.

    ``.json``: ``{"benchmarks": {benchmark: [item ids]}, "n_items": …, "source": …}`` with
    ids exactly as in the data (lm-evaluation-harness items are ``<task>:<doc_id>``, so the
    ``doc_id`` after the colon is what ``--samples`` takes); ``.txt``: one item id per line.
    """
    path = Path(path)
    benchmarks = posterior["observed_data"]["benchmark"].to_series().astype(str)
    kept = [str(k) for k in kept]
    unknown = sorted(set(kept) - set(benchmarks.index))
    if unknown:
        raise KeyError(f"{len(unknown)} kept items are not in the fit: {unknown[:10]}")
    if path.suffix.lower() == ".txt":
        path.write_text("".join(f"{item}\n" for item in kept))
        return path
    if path.suffix.lower() != ".json":
        raise ValueError(f"write the subset to .json or .txt, got {path.name!r}")
    grouped: dict[str, list[str]] = {}
    for item in kept:
        grouped.setdefault(benchmarks[item], []).append(item)
    document = {
        "benchmarks": grouped,
        "n_items": len(kept),
        "source": {
            "data_hash": posterior.attrs.get("benchmirt_data_hash"),
            "n_items_fitted": len(benchmarks),
        },
    }
    path.write_text(json.dumps(document, indent=1))
    return path


def _published(
    loading: np.ndarray, intercept: np.ndarray, dim_index: list[int], share: float, size: int, n_bins: int
) -> np.ndarray:
    difficulty = multidimensional_difficulty(intercept, mdisc(loading))
    order = np.argsort(difficulty, kind="stable")
    bins = np.empty(len(order), dtype=np.int64)
    bins[order] = np.arange(len(order)) * n_bins // len(order)  # equal-count bins
    keep: set[int] = set()
    for d in dim_index:
        disc = loading[:, d]
        sign = 1.0 if disc.mean() >= 0 else -1.0  # lowest for a negatively signed dimension
        for b in range(n_bins):
            members = np.flatnonzero(bins == b)
            if members.size == 0:
                continue
            values = sign * disc[members]
            cut = np.quantile(values, 1 - share)
            keep.update(members[values >= cut].tolist())
    chosen = np.array(sorted(keep), dtype=np.int64)
    if chosen.size > size:
        strength = np.abs(loading[chosen][:, dim_index]).max(axis=1)
        chosen = chosen[np.argsort(-strength, kind="stable")[:size]]
    return chosen


def cell_information(
    posterior: xr.DataTree, dim_index: list[int], *, n_draws: int | None = 100, seed: int = 0
) -> np.ndarray:
    """``(llm, item, k, k)`` Fisher information of every cell about the chosen dimensions.

    Averaged over ``n_draws`` posterior draws (abilities and items of each draw together,
    :meth:`PosteriorDraws.expected_information <benchmirt_bayes.draws.PosteriorDraws.expected_information>`),
    so that an item whose parameters are uncertain is valued by the information it carries
    on average; ``n_draws=None`` evaluates it at the posterior means.
    """
    if n_draws is None:
        responses = responses_from_tree(posterior)
        layout = ResponseLayout.from_responses(responses)
        loading, intercept, ability, _ = point_parameters(posterior)
        eta = linear_predictor(ability, loading, intercept)
        weight = layout.information_weight(eta, point_type_parameters(posterior, layout), expand=0)
        a = loading[:, dim_index]
        return information_matrix(weight, np.broadcast_to(a, (*weight.shape, len(dim_index))))
    draws = PosteriorDraws.from_posterior(posterior, n_draws, seed=seed, abilities=True)
    return draws.expected_information(draws.ability, dims=dim_index)


def _greedy_information(info: np.ndarray, benchmarks: np.ndarray, size: int) -> np.ndarray:
    """Greedy D-optimal choice from every cell's information matrix ``info (llm, item, k, k)``.

    Adds the item with the largest ``Σ_j log det(P_j + I_ji) − log det P_j`` (``P_j``: LLM
    ``j``'s precision, prior identity) within the benchmark quotas.
    """
    n_llm, n_item, k = info.shape[0], info.shape[1], info.shape[2]
    covariance = np.repeat(np.eye(k)[None], n_llm, axis=0)  # P_j⁻¹

    def gain(i: int) -> float:
        # log det(P + I) − log det P = log det(1 + P⁻¹ I)
        _, logdet = np.linalg.slogdet(np.eye(k)[None] + covariance @ info[:, i])
        return float(logdet.sum())

    names, codes = np.unique(benchmarks, return_inverse=True)
    counts = np.bincount(codes)
    quota = np.maximum(1, np.floor(size * counts / counts.sum())).astype(int)
    while quota.sum() < size:  # hand out the remainder by largest fractional part
        remainder = size * counts / counts.sum() - quota
        quota[np.argmax(np.where(quota < counts, remainder, -np.inf))] += 1
    heap = [(-gain(i), i, 0) for i in range(n_item)]
    heapq.heapify(heap)
    chosen: list[int] = []
    taken = np.zeros(len(names), dtype=int)
    step = 0
    while heap and len(chosen) < size:
        _, i, evaluated_at = heapq.heappop(heap)
        if taken[codes[i]] >= quota[codes[i]]:
            continue
        if evaluated_at != step:  # stale upper bound: re-evaluate and push back
            heapq.heappush(heap, (-gain(i), i, step))
            continue
        chosen.append(i)
        taken[codes[i]] += 1
        step += 1
        covariance = np.linalg.inv(np.linalg.inv(covariance) + info[:, i])
    return np.array(chosen, dtype=np.int64)


# ------------------------------------------------------------------ evaluation
@dataclass(frozen=True)
class _PosteriorPayload:
    """The posterior as the shared object of a batch."""

    tree: xr.DataTree

    def data_hash(self) -> str:
        attrs = self.tree.attrs
        key = json.dumps([attrs.get("benchmirt_data_hash"), attrs.get("benchmirt_created_at")])
        return hashlib.sha256(key.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class SubsetTask:
    """Re-estimate every LLM's abilities from one subset, items held at their posterior."""

    method: str
    fraction: float
    repeat: int
    seed: int
    n_draws: int

    @property
    def key(self) -> str:
        """File stem."""
        return f"subset_{self.method}_{self.fraction:g}_rep{self.repeat:02d}"

    @property
    def fingerprint(self) -> str:
        """Everything that determines the result."""
        return fields_fingerprint(self)

    def run(self, payload: _PosteriorPayload) -> xr.DataTree:
        """Select the subset and estimate abilities and benchmark scores from it."""
        posterior = payload.tree
        kept = select_items(
            posterior, fraction=self.fraction, method=self.method, seed=self.seed + self.repeat
        )
        responses = responses_from_tree(posterior)
        mean_ability, scores = subset_estimates(
            posterior, responses, kept, n_draws=self.n_draws, seed=self.seed
        )
        ds = xr.Dataset(
            {
                "ability": (("llm", "dimension"), mean_ability),
                "benchmark_score": (("llm", "benchmark"), scores.to_numpy()),
                "kept": (("kept_item",), np.asarray(kept, dtype=str)),
            },
            coords={
                "llm": responses.llms.astype(str),
                "dimension": posterior["posterior"]["dimension"].values.astype(str),
                "benchmark": scores.columns.astype(str),
            },
        )
        return xr.DataTree(ds)


def subset_estimates(
    posterior: xr.DataTree,
    responses: ResponseMatrix,
    kept: Sequence[str],
    *,
    n_draws: int = 50,
    seed: int = 0,
    item_draws: PosteriorDraws | None = None,
) -> tuple[np.ndarray, pd.DataFrame]:
    """Abilities and benchmark scores of every LLM in ``responses`` from the ``kept`` items only.

    Item parameters stay at their posterior (``n_draws`` draws, integrated over);
    abilities are re-estimated (posterior means). A benchmark score is the
    observed share correct on the kept items plus the model's expected share on
    the rest, over all the benchmark's items. Pass ``item_draws`` (thinned once)
    when scoring many subsets of one posterior.

    Returns
    -------
    ability
        ``(llm, dimension)`` posterior means.
    scores
        LLM × benchmark estimated share correct.

    """
    if item_draws is None:
        item_draws = PosteriorDraws.from_posterior(posterior, n_draws, seed=seed)
    order = item_draws.columns(responses.items.astype(str))
    kept_mask = np.isin(item_draws.items, np.asarray(kept, dtype=str))
    outcomes = np.full((responses.n_llms, len(item_draws.items)), np.nan)
    outcomes[:, order] = responses.values
    revealed = np.where(kept_mask[None, :], outcomes, np.nan)
    samples = ability_posterior(
        item_draws, revealed, method="samples", samples_per_draw=4, seed=seed, expected=False
    ).points
    benchmarks = np.empty(len(item_draws.items), dtype=object)
    benchmarks[order] = responses.benchmarks.astype(str)
    names = list(pd.unique(responses.benchmarks.astype(str)))
    scores = np.zeros((responses.n_llms, len(names)))
    all_columns = np.arange(len(item_draws.items))
    for j in range(responses.n_llms):
        expected = item_draws.expected_scores(samples[j : j + 1], all_columns)[0].mean(axis=0)
        filled = np.where(kept_mask & ~np.isnan(outcomes[j]), outcomes[j], expected)
        for b, name in enumerate(names):
            scores[j, b] = filled[benchmarks == name].mean()
    return samples.mean(axis=1), pd.DataFrame(scores, index=responses.llms.astype(str), columns=names)


def evaluate_subset(
    posterior: xr.DataTree,
    *,
    fractions: Sequence[float] = FRACTIONS,
    methods: Sequence[str] = METHODS,
    repeats: int = 5,
    truth: xr.Dataset | None = None,
    n_draws: int = 50,
    seed: int = 0,
    executor: ExecutorArg = "auto",
    results_dir: str | Path | None = None,
) -> pd.DataFrame:
    """Fidelity of small subsets: abilities re-estimated from the kept items vs the full data.

    For every method and fraction (``repeats`` subsets for ``random``, one for
    the deterministic rules), every LLM's abilities are re-estimated from the
    kept items with item parameters held at their posterior, and compared with
    the full-data posterior mean abilities (per dimension) and with the full
    benchmark means (per benchmark, estimated score vs observed share), by
    Pearson and Spearman correlation; with ``truth`` (a simulation's truth,
    ``ability (llm, dimension)``), also against the true abilities, after one
    orthogonal Procrustes rotation of the full-data abilities onto the truth.

    Returns
    -------
    DataFrame
        Tidy: ``method, fraction, repeat, target, dimension_or_benchmark,
        pearson, spearman``; ``target`` is ``full_ability``, ``benchmark_mean``
        or ``true_ability``. :func:`fidelity_summary` condenses it.

    """
    for method in methods:
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}; choose from {METHODS}")
    tasks = [
        SubsetTask(method, float(f), r, seed, n_draws)
        for method in methods
        for f in fractions
        for r in range(repeats if method == "random" else 1)
    ]
    results = run_batch(tasks, _PosteriorPayload(posterior), executor=executor, results_dir=results_dir)
    responses = responses_from_tree(posterior)
    _, _, full_ability, dims = point_parameters(posterior)
    observed = responses.benchmark_scores()
    rotation = None
    true_ability = None
    if truth is not None:
        true_ability = truth["ability"].sel(llm=responses.llms).transpose("llm", ...).values
        rotation = procrustes(full_ability, true_ability)
    rows = []
    for task in tasks:
        ds = results[task.key].to_dataset()
        base = (task.method, task.fraction, task.repeat)
        est = ds["ability"].values
        for d, name in enumerate(dims):
            rows.append((*base, "full_ability", name, *_correlations(est[:, d], full_ability[:, d])))
        for bench in ds["benchmark"].values:
            estimated = ds["benchmark_score"].sel(benchmark=bench).values
            actual = observed[bench].reindex(ds["llm"].values).to_numpy()
            rows.append((*base, "benchmark_mean", str(bench), *_correlations(estimated, actual)))
        if rotation is not None:
            rotated = est @ rotation
            true_names = truth["ability"][truth["ability"].dims[-1]].values
            for d in range(true_ability.shape[1]):
                name = f"true_{true_names[d]}"
                rows.append((*base, "true_ability", name, *_correlations(rotated[:, d], true_ability[:, d])))
    columns = ["method", "fraction", "repeat", "target", "dimension_or_benchmark", "pearson", "spearman"]
    return pd.DataFrame(rows, columns=columns)


def _correlations(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    ok = ~(np.isnan(a) | np.isnan(b))
    if ok.sum() < 3 or np.std(a[ok]) == 0 or np.std(b[ok]) == 0:
        return float("nan"), float("nan")
    return float(np.corrcoef(a[ok], b[ok])[0, 1]), spearman(a[ok], b[ok])


def fidelity_summary(table: pd.DataFrame, ci_prob: float = CI_PROB) -> pd.DataFrame:
    """Correlations per (target, method, fraction), summarised over repeats.

    Each repeat's correlations are first averaged over dimensions or benchmarks; the
    repeats are then the sample that ``pearson_*`` and ``spearman_*`` (``_mean``, ``_sd``,
    ``_lower``, ``_upper``) summarise, with ``repeats`` their count.
    """
    check_ci_prob(ci_prob)
    per_repeat = table.groupby(["target", "method", "fraction", "repeat"])[["pearson", "spearman"]].mean()
    rows = {}
    for key, part in per_repeat.groupby(["target", "method", "fraction"]):
        row: dict[str, float] = {}
        for column in ("pearson", "spearman"):
            summary = summarise_draws(part[column].to_numpy(), ci_prob=ci_prob, prefix=column, skipna=True)
            row.update({name: float(value) for name, value in summary.items()})
        rows[key] = {**row, "repeats": len(part)}
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index = pd.MultiIndex.from_tuples(out.index, names=["target", "method", "fraction"])
    return out


# ---------------------------------------------------------- held-out LLMs
def held_out_benchmark_error(
    posterior: xr.DataTree,
    held_out: ResponseMatrix,
    *,
    fractions: Sequence[float] = (0.05, 0.1, 0.25),
    methods: Sequence[str] = METHODS,
    repeats: int = 5,
    n_draws: int = 50,
    seed: int = 0,
) -> pd.DataFrame:
    """Error of per-benchmark scores of *new* LLMs estimated from a subset chosen on the fit.

    For every method and fraction, the subset is selected on ``posterior``
    (fitted without the held-out LLMs); each held-out LLM is scored from the
    kept items only (:func:`subset_estimates`) and compared with its full
    benchmark score. ``random`` is repeated ``repeats`` times; its row also
    carries the naive estimate (mean on the kept items of the benchmark) as
    method ``random_naive_mean``.

    Returns
    -------
    DataFrame
        ``method, fraction, benchmark, n_items_kept, mae_pp, rmse_pp`` (percentage
        points; random methods averaged over repeats).

    """
    actual = held_out.benchmark_scores()
    item_draws = PosteriorDraws.from_posterior(posterior, n_draws, seed=seed)
    rows = []
    for method in methods:
        for fraction in fractions:
            for repeat in range(repeats if method == "random" else 1):
                kept = select_items(posterior, fraction=fraction, method=method, seed=seed + repeat)
                _, estimated = subset_estimates(posterior, held_out, kept, seed=seed, item_draws=item_draws)
                variants = {method: estimated}
                if method == "random":
                    variants["random_naive_mean"] = _naive_means(held_out, kept)
                for name, table in variants.items():
                    for bench in actual.columns:
                        error = 100 * (
                            table[bench].to_numpy() - actual[bench].reindex(table.index).to_numpy()
                        )
                        n_kept = int(np.isin(held_out.items[held_out.benchmarks == bench], kept).sum())
                        rows.append(
                            (
                                name,
                                fraction,
                                repeat,
                                bench,
                                n_kept,
                                np.mean(np.abs(error)),
                                np.sqrt(np.mean(error**2)),
                            )
                        )
    frame = pd.DataFrame(
        rows, columns=["method", "fraction", "repeat", "benchmark", "n_items_kept", "mae_pp", "rmse_pp"]
    )
    return frame.groupby(["method", "fraction", "benchmark"], as_index=False)[
        ["n_items_kept", "mae_pp", "rmse_pp"]
    ].mean()


def _naive_means(responses: ResponseMatrix, kept: Sequence[str]) -> pd.DataFrame:
    mask = np.isin(responses.items.astype(str), np.asarray(kept, dtype=str))
    values = np.where(mask[None, :], responses.values, np.nan)
    out = {}
    for bench in responses.benchmark_names:
        cols = responses.benchmarks == bench
        with np.errstate(invalid="ignore"):
            out[bench] = (
                np.nanmean(values[:, cols], axis=1) if mask[cols].any() else np.full(responses.n_llms, np.nan)
            )
    return pd.DataFrame(out, index=responses.llms.astype(str))
