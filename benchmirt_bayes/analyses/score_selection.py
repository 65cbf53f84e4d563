"""Items chosen to predict full-benchmark scores: ``select_for_scores``.

:func:`~benchmirt_bayes.analyses.selection.select_items` chooses items for what the
*model* learns from them (Fisher information about the abilities). When the goal is a
benchmark's full score, the LLMs whose full scores are known say directly which items
track it: forward stepwise regression of the full score on the kept items' answers,
per benchmark, adds at each step the item that most reduces the residual sum of squares
given the items already chosen (an orthogonalised greedy search: each candidate is
residualised against the chosen items, and its gain is ``(x̃·r)² / x̃·x̃``). Items whose
answers repeat those already kept gain nothing, so the subset spreads over what the
full score depends on.

Stepwise regression learns from the full scores, so it overfits them when few are known:
with tens of training LLMs it picks items that happen to track *their* scores, loses to
items that ignore the scores, and the link's out-of-fold errors (hence its intervals) do not
see that the items were chosen on the same LLMs, unless the link chooses them itself
(``fit_score_link(per_benchmark=...)`` chooses them again in each fold of its
cross-fitting). Below :data:`STEPWISE_MIN_LLMS` LLMs with known scores the default therefore
draws a seeded uniform random sample of each benchmark's items: it reads neither the scores
nor the fit, so the link's out-of-fold errors are honest, and the ``package`` estimate there
is the simple estimate itself (the IRT expectation blended with the observed mean, see
:mod:`~benchmirt_bayes.analyses.score_link`). ``"stratified"`` (one seeded item from each
equal-count bin of the fit's multidimensional difficulty) is kept as an option; on the Open
LLM Leaderboard at 20–140 LLMs it did not beat random items.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.checks import check_integer
from benchmirt_bayes.posterior import point_parameters, responses_from_tree
from benchmirt_bayes.response_types.base import mdisc, multidimensional_difficulty

MIN_LLMS = 20
"""Fewest LLMs with a known full score for a benchmark's stepwise selection."""
STEPWISE_MIN_LLMS = 1000
"""Under ``method="auto"``, benchmarks with fewer LLMs of known full score get random items
instead of stepwise ones. Measured on the Open LLM Leaderboard: at 40–112 training LLMs
stepwise items gave 90 % intervals covering 0.36–0.93 of held-out LLMs
(``benchmarks/small_population_scores.py``); with thousands of training LLMs they gave the
smallest errors (``benchmarks/score_estimation.py``). Sizes in between were not measured."""
SCORE_SELECTIONS = ("auto", "stepwise", "random", "stratified")


def score_frame(
    full_scores: pd.DataFrame | Mapping[str, pd.Series], benchmarks: Sequence[str] | None = None
) -> pd.DataFrame:
    """Known full scores as a float DataFrame indexed by LLM (as text), one column per benchmark.

    Missing scores are NaN. Raises ValueError for a column that is not one of ``benchmarks``
    (when given), and for a score that is not a finite number, naming the LLM and benchmark.
    """
    frame = pd.DataFrame(dict(full_scores)) if isinstance(full_scores, Mapping) else full_scores.copy()
    frame.index = frame.index.astype(str)
    frame.columns = frame.columns.astype(str)
    if benchmarks is not None:
        unknown = [c for c in frame.columns if c not in set(map(str, benchmarks))]
        if unknown:
            raise ValueError(
                f"no benchmark of the fit has full scores in the column(s) {unknown} "
                f"(the fit's benchmarks: {sorted(map(str, benchmarks))})"
            )
    numbers = frame.apply(pd.to_numeric, errors="coerce").astype(float)
    bad = (frame.notna() & numbers.isna()) | np.isinf(numbers)
    if bad.to_numpy().any():
        cells = [f"{llm!r} / {bench!r}: {frame.at[llm, bench]!r}" for llm, bench in _true_cells(bad)]
        raise ValueError(f"full scores must be finite numbers; {len(cells)} are not: {', '.join(cells[:5])}")
    return numbers


def _true_cells(mask: pd.DataFrame) -> list[tuple[str, str]]:
    stacked = mask.stack()
    return list(stacked.index[stacked.to_numpy(dtype=bool)])


def known_scores(scores: pd.DataFrame, benchmark: object, llms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One benchmark's full scores in the order of ``llms`` (NaN where unknown), and the known rows."""
    target = pd.Series(scores[benchmark]).reindex(llms).to_numpy(dtype=float)
    return target, np.flatnonzero(np.isfinite(target))


def forward_stepwise(x: np.ndarray, y: np.ndarray, k: int) -> list[int]:
    """Columns of ``x (unit, column)`` chosen greedily to predict ``y`` by least squares.

    An intercept is always in the model. A column that is (numerically) a combination of
    those already chosen is never taken. Returns at most ``k`` column indices, in the
    order they were chosen.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.ndim != 2 or x.shape[0] != y.shape[0]:
        raise ValueError(f"x must be (unit, column) with one row per y; got {x.shape} and {y.shape}")
    residual_x = x - x.mean(axis=0)
    residual_y = y - y.mean()
    original = np.einsum("ij,ij->j", residual_x, residual_x)
    chosen: list[int] = []
    for _ in range(min(k, x.shape[1])):
        norm = np.einsum("ij,ij->j", residual_x, residual_x)
        usable = norm > 1e-8 * np.maximum(original, 1e-12)
        usable[chosen] = False
        if not usable.any():
            break
        gain = np.where(usable, (residual_y @ residual_x) ** 2 / np.where(usable, norm, 1.0), -np.inf)
        j = int(np.argmax(gain))
        chosen.append(j)
        q = residual_x[:, j] / np.sqrt(norm[j])
        residual_x -= np.outer(q, q @ residual_x)
        residual_y -= q * (q @ residual_y)
    return chosen


def stepwise_choice(answers: np.ndarray, target: np.ndarray, k: int) -> list[int]:
    """:func:`forward_stepwise` on answers ``(unit, item)``; an unanswered cell counts as its item's mean."""
    answers = np.where(np.isnan(answers), np.nanmean(answers, axis=0), answers)
    return forward_stepwise(np.nan_to_num(answers, nan=0.0), target, k)


def selection_rule(method: str, n_known: int) -> str:
    """The rule ``method`` applies to a benchmark with ``n_known`` LLMs of known full score."""
    if method != "auto":
        return method
    return "stepwise" if n_known >= STEPWISE_MIN_LLMS else "random"


def select_for_scores(
    posterior: xr.DataTree,
    full_scores: pd.DataFrame | Mapping[str, pd.Series],
    *,
    per_benchmark: int | None = None,
    fraction: float | None = None,
    responses=None,
    method: str = "auto",
    seed: int = 0,
) -> pd.Index:
    """Per benchmark, the items whose answers best predict the full-benchmark score.

    Parameters
    ----------
    posterior
        A fit (its items and benchmarks; its data are the training LLMs unless
        ``responses`` is given).
    full_scores
        Known full-benchmark scores: a DataFrame indexed by LLM with one column per
        benchmark, or a mapping benchmark → Series. Only benchmarks with scores get items.
    per_benchmark, fraction
        Items to keep in each benchmark: a count, or a share of the benchmark's fitted
        items (exactly one; at least one item each). There is no ``n_items`` here: across
        the package ``n_items`` is the total number of items kept (:func:`select_items`).
    responses
        The training LLMs' responses (default: the fit's own data). Unanswered cells count
        as the item's mean answer.
    method
        ``"stepwise"`` (forward stepwise regression of the known full scores on the
        answers), ``"random"`` (a seeded uniform sample of the benchmark's items),
        ``"stratified"`` (one seeded random item from each of equal-count bins of
        difficulty), or ``"auto"`` (default): stepwise in benchmarks with at least
        :data:`STEPWISE_MIN_LLMS` LLMs of known score, random in the others (see the module
        docstring for why). Random and stratified items do not read the scores.
    seed
        Seed of the random and stratified draws.

    Returns
    -------
    pandas.Index
        The chosen item ids, benchmark by benchmark in the order chosen.

    Warns
    -----
    UserWarning
        A benchmark gets fewer items than asked (more than it has, or more than the training
        LLMs' answers can tell apart), naming the benchmark and the count.

    Raises
    ------
    ValueError
        Neither or both sizes given, an unknown method, or no benchmark with scores for at
        least :data:`MIN_LLMS` of the LLMs (stepwise) or for any (random, stratified).

    """
    if (per_benchmark is None) == (fraction is None):
        raise ValueError("give exactly one of per_benchmark and fraction")
    if per_benchmark is not None:
        check_integer("per_benchmark", per_benchmark)
    if fraction is not None and not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    if method not in SCORE_SELECTIONS:
        raise ValueError(f"method must be one of {SCORE_SELECTIONS}, got {method!r}")
    fitted = responses_from_tree(posterior)
    responses = responses if responses is not None else fitted
    benchmark_of = fitted.data["benchmark"].to_series().astype(str)
    scores = score_frame(full_scores, fitted.benchmark_names)
    llms = responses.llms.astype(str)
    difficulty = None
    rng = np.random.default_rng(seed)
    chosen: list[str] = []
    usable = []
    short = []  # benchmarks that get fewer items than asked, and why
    for name in scores.columns:
        items = benchmark_of.index[benchmark_of == str(name)].astype(str)
        if items.empty:
            continue
        target, rows = known_scores(scores, name, llms)
        size = per_benchmark if per_benchmark is not None else max(1, round(fraction * len(items)))
        rule = selection_rule(method, len(rows))
        if rule in ("random", "stratified") and len(rows):
            usable.append(str(name))
            if rule == "random":
                picked = np.sort(rng.choice(len(items), min(size, len(items)), replace=False))
            else:
                if difficulty is None:
                    difficulty = pd.Series(
                        _difficulty(posterior), index=posterior["posterior"]["item"].values.astype(str)
                    )
                picked = stratified_items(difficulty[items].to_numpy(), size, rng)
            chosen += [str(items[j]) for j in picked]
            if len(picked) < size:
                short.append(f"{name}: {len(picked)} of {size} (it has {len(items)} fitted items)")
            continue
        if len(rows) < MIN_LLMS:
            continue
        usable.append(str(name))
        answers = responses.data.sel(item=list(items)).transpose("llm", "item").values[rows]
        picked = stepwise_choice(answers, target[rows], size)
        chosen += [str(items[j]) for j in picked]
        if len(picked) < size:
            short.append(
                f"{name}: {len(picked)} of {size} ({len(items)} fitted items; {len(rows)} training LLMs "
                "with known scores, whose answers span no more independent items)"
            )
    if not usable:
        raise ValueError(
            f"no benchmark of the fit has full scores for enough of its LLMs (stepwise needs {MIN_LLMS}, "
            f"random and stratified one; score columns: {list(map(str, scores.columns))})"
        )
    if short:
        warnings.warn(
            "select_for_scores keeps fewer items than asked in " + "; ".join(short), UserWarning, stacklevel=2
        )
    return pd.Index(chosen, name="item")


def _difficulty(posterior: xr.DataTree) -> np.ndarray:
    """Each item's multidimensional difficulty at the posterior means."""
    loading, intercept, _, _ = point_parameters(posterior)
    return multidimensional_difficulty(intercept, mdisc(loading))


def stratified_items(difficulty: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """One random position from each of ``size`` equal-count bins of ``difficulty`` (sorted)."""
    order = np.argsort(difficulty, kind="stable")
    bins = [part for part in np.array_split(order, min(size, len(order))) if part.size]
    return np.sort(np.array([rng.choice(part) for part in bins], dtype=np.int64))
