"""Full-benchmark scores from a few items: ``fit_score_link`` and ``estimate_scores``.

The task as users pose it: a new LLM has answered a small subset of a benchmark's items;
what is its score on the *whole* benchmark (every item, including items the package never
saw), and how sure are we? Three steps:

1. **Abilities from the subset.** Each LLM's ability posterior given its answers on the
   kept items, averaged over posterior draws of the items (item uncertainty integrated):
   on a grid over the ability space for one or two dimensions, as Laplace-SIR samples for
   more (:func:`ability_posterior`).
2. **A link to the full score, learned from LLMs whose full scores are known**
   (:func:`fit_score_link`). The fitted items are rarely the whole benchmark (metabench's
   reduced sets keep 2–10 % of the items, chosen to be informative), so the full score is
   not an expectation the IRT model can compute; it is learned, per benchmark, by a
   regression on the features the subset gives: a natural cubic spline of the posterior
   mean ability (on every dimension), the model's expected score on all fitted items,
   the plain mean on the kept items and, under a stronger ridge penalty, the answers to
   the kept items themselves. Two forms are fitted and the one with the smaller
   out-of-fold error is kept: *additive* (the terms added up) and *single-index* (a
   natural spline of one weighted sum of the same terms, fitted by Gauss–Newton), which
   lets the items' weights act inside the curve that maps ability to a percentage.
   Training LLMs far off every smooth link (such as LLMs trained on the test set, at the
   ceiling) are left out of this regression (:func:`gross_outliers`); their errors go to
   the kriging below. The training LLMs' features come from the *same* kept items and
   the same scorer as the new LLMs' will, so the link sees the noise it will meet. This
   is a posterior-predictive regression rather than a second likelihood term in the model:
   the model stays a model of item responses, the link is cheap to refit for another
   subset, and it needs no full scores to fit the items.
   Its errors cluster by family (fine-tunes and merges of one base model answer alike and
   miss alike), so the ``package`` estimate adds the out-of-fold error of the training LLMs
   that answered the kept items most alike, kriged from them (weighing how far apart
   their estimates are too), when that helps out of sample
   (:mod:`~benchmirt_bayes.analyses.score_neighbours`).
3. **Calibrated intervals.** The regression's out-of-fold residuals (cross-fitting within
   the training LLMs) are scaled by a fitted local spread and their empirical quantile
   gives the interval half-width (split-conformal prediction): 90 % intervals cover 90 %
   of held-out LLMs whatever the residuals' shape.

``estimate_scores`` returns, per LLM and benchmark, the link's estimate with its interval,
the IRT expectation on the fitted items and the plain mean on the kept items. Without a
link it returns the IRT estimate of the mean score on all fitted items of each benchmark,
with posterior intervals.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.analyses.score_neighbours import (
    NEIGHBOURS,
    Kernel,
    Neighbours,
    between_neighbours,
    choose_kernel,
    correction,
    decode_answers,
    encode_answers,
    nearest,
)
from benchmirt_bayes.analyses.score_selection import known_scores, score_frame
from benchmirt_bayes.analyses.scoring import ItemDraws, ability_samples, probabilities_for_samples
from benchmirt_bayes.model.response_models import BINARY, linear_predictor
from benchmirt_bayes.posterior import responses_from_tree
from benchmirt_bayes.summaries import CI_PROB, check_ci_prob, interval_quantiles

GRID_POINTS = {1: 81, 2: 31}
"""Grid points per dimension of :func:`grid_ability_posterior`."""
GRID_LIMIT = 4.0
SAMPLES_PER_DRAW = 8
"""Ability samples per item draw of :func:`sampled_ability_posterior` (three or more dimensions)."""
SPLINE_KNOTS = 5
INDEX_KNOTS = 7
INDEX_ITERATIONS = 10
RIDGE = 1e-4
ITEM_RIDGES = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2)
"""Ridge penalties (per training LLM) of the link's smooth terms, and the candidates for its
kept-item answers (chosen per benchmark by the out-of-fold error)."""
INDEX_RIDGES = ITEM_RIDGES[2:]
"""The candidates of the single-index form (inside the curve, weak penalties overfit)."""
OUTLIER_CUT = 8.0
"""Training LLMs whose full score is more than this many robust SDs from a robust fit of the
smooth terms are left out of the ``package`` regression (their errors still go to the
kriging): see :func:`gross_outliers`."""
HUBER_TUNING = 1.345
"""Huber's constant in robust SDs (95 % efficiency when the residuals are normal)."""
LINK_ATTR = "benchmirt_score_link"


# ------------------------------------------------------------ ability posteriors
@dataclass(frozen=True)
class AbilityPosterior:
    """Ability posteriors of many LLMs as weighted points.

    Attributes
    ----------
    points
        ``(point, dimension)`` abilities shared by every unit (a grid), or
        ``(unit, point, dimension)`` abilities of each unit (posterior samples).
    weights
        ``(unit, point)`` posterior probabilities (rows sum to one), averaged over item draws.
    expected
        ``(unit, item)`` posterior expected scores on ``[0, 1]`` of every fitted item.

    """

    points: np.ndarray
    weights: np.ndarray
    expected: np.ndarray

    @property
    def shared(self) -> bool:
        """Whether every unit has the same points (a grid)."""
        return self.points.ndim == 2

    def average(self, values: np.ndarray) -> np.ndarray:
        """Posterior mean of per-point ``values``: ``(point, …)`` if shared, else ``(unit, point, …)``."""
        if self.shared:
            return np.tensordot(self.weights, values, axes=(1, 0))
        return np.einsum("up,up...->u...", self.weights, values)

    @property
    def mean(self) -> np.ndarray:
        """``(unit, dimension)`` posterior means."""
        return self.average(self.points)

    @property
    def sd(self) -> np.ndarray:
        """``(unit, dimension)`` posterior SDs."""
        second = self.average(self.points**2)
        return np.sqrt(np.maximum(second - self.mean**2, 0.0))


def grid_ability_posterior(
    item_draws: ItemDraws, outcomes: np.ndarray, *, chunk: int = 256
) -> AbilityPosterior:
    """Ability posteriors of the rows of ``outcomes (unit, item)`` on a grid (NaN = not answered).

    ``outcomes`` is in ``item_draws.items`` order. The prior is ``N(0, I)`` (the fitted LLMs'
    abilities are whitened in the sample); each item draw gives a posterior on the grid and
    the draws' posteriors are averaged, so item uncertainty widens the result. Works for one
    or two dimensions (:data:`GRID_POINTS`) and for every response type; for more,
    :func:`ability_posterior` samples instead.
    """
    k = item_draws.loading.shape[-1]
    if k not in GRID_POINTS:
        raise ValueError(
            f"grid posteriors are for 1 or 2 dimensions; the fit has {k} (use ability_posterior)"
        )
    axis = np.linspace(-GRID_LIMIT, GRID_LIMIT, GRID_POINTS[k])
    grid = np.stack(np.meshgrid(*[axis] * k, indexing="ij"), axis=-1).reshape(-1, k)
    log_prior = -0.5 * (grid**2).sum(axis=1)
    outcomes = np.atleast_2d(np.asarray(outcomes, dtype=float))
    answered = ~np.isnan(outcomes)
    n_units, n_draws = outcomes.shape[0], item_draws.loading.shape[0]
    weights = np.zeros((n_units, grid.shape[0]))
    expected = np.zeros((n_units, outcomes.shape[1]))
    columns = np.flatnonzero(answered.any(axis=0))
    layout = item_draws.layout
    for s in range(n_draws):
        eta = linear_predictor(grid, item_draws.loading[s], item_draws.intercept[s])  # (point, item)
        params = layout.at_sample(item_draws.params, s)
        score = layout.expected_score(eta, params, expand=0)  # (point, item)
        if layout.is_binary:
            log_p = BINARY.log_likelihood(1.0, eta[:, columns])  # log P(correct) per point and item
            log_q = BINARY.log_likelihood(0.0, eta[:, columns])
            y = np.where(answered[:, columns], outcomes[:, columns], 0.0)
            seen = answered[:, columns].astype(float)
            loglik = y @ log_p.T + (seen - y) @ log_q.T  # (unit, point)
        else:
            loglik = np.zeros((n_units, grid.shape[0]))
            sub = layout.take(columns)
            sub_params = layout.take_parameters(params, columns)
            for start in range(0, n_units, chunk):
                rows = outcomes[start : start + chunk][:, columns]
                cell = sub.log_likelihood(rows[:, None, :], eta[None, :, columns], sub_params, expand=0)
                loglik[start : start + chunk] = np.nansum(cell, axis=-1)
        log_post = loglik + log_prior[None, :]
        log_post -= log_post.max(axis=1, keepdims=True)
        post = np.exp(log_post)
        post /= post.sum(axis=1, keepdims=True)
        weights += post / n_draws
        expected += post @ score / n_draws
    return AbilityPosterior(grid, weights, expected)


def sampled_ability_posterior(
    item_draws: ItemDraws,
    outcomes: np.ndarray,
    *,
    samples_per_draw: int = SAMPLES_PER_DRAW,
    seed: int = 0,
    chunk: int = 256,
) -> AbilityPosterior:
    """Ability posteriors of the rows of ``outcomes (unit, item)`` as samples, in any dimension.

    The samples are those of :func:`~benchmirt_bayes.analyses.scoring.ability_samples`
    (per item draw, a Laplace approximation refined by sampling-importance-resampling), so
    item uncertainty is integrated as on the grid; each unit gets its own equally weighted
    points.
    """
    outcomes = np.atleast_2d(np.asarray(outcomes, dtype=float))
    samples = ability_samples(item_draws, outcomes, samples_per_draw=samples_per_draw, seed=seed)
    n_units, n_points = samples.shape[:2]
    everything = np.arange(len(item_draws.items))
    expected = (
        np.concatenate(
            [
                probabilities_for_samples(item_draws, samples[start : start + chunk], everything).mean(axis=1)
                for start in range(0, n_units, chunk)
            ]
        )
        if n_units
        else np.zeros((0, len(everything)))
    )
    weights = np.full((n_units, n_points), 1.0 / n_points)
    return AbilityPosterior(samples, weights, expected)


def ability_posterior(item_draws: ItemDraws, outcomes: np.ndarray, *, seed: int = 0) -> AbilityPosterior:
    """Ability posteriors of the rows of ``outcomes``: on a grid up to two dimensions, sampled above.

    The one scorer of :func:`fit_score_link` and :func:`estimate_scores`, so training LLMs
    and new LLMs are scored alike. ``seed`` drives the sampling (the grid is deterministic).
    """
    if item_draws.loading.shape[-1] in GRID_POINTS:
        return grid_ability_posterior(item_draws, outcomes)
    return sampled_ability_posterior(item_draws, outcomes, seed=seed)


# ------------------------------------------------------------------ the link
def natural_spline_basis(x: np.ndarray, knots: np.ndarray) -> np.ndarray:
    """Natural cubic spline basis at ``x`` (ESL eq. 5.4–5.5): linear beyond the boundary knots.

    Repeated knots (quantiles of a variable with few distinct values) count once; with fewer
    than three distinct knots the basis is ``x`` alone (a straight line).
    """
    x = np.asarray(x, dtype=float)
    knots = np.unique(np.asarray(knots, dtype=float))
    if knots.size < 3:
        return x[:, None]

    def d(k: int) -> np.ndarray:
        return (np.maximum(x - knots[k], 0) ** 3 - np.maximum(x - knots[-1], 0) ** 3) / (knots[-1] - knots[k])

    last = d(len(knots) - 2)
    columns = [x] + [d(k) - last for k in range(len(knots) - 2)]
    return np.column_stack(columns)


@dataclass
class BenchmarkLink:
    """The learned map from a benchmark's subset features to its full score (one benchmark)."""

    items: list[str]
    knots: list[list[float]]
    coefficients: dict[str, list[float]]
    scale_coefficients: list[float]
    quantile: float
    spread_floor: float
    lam: float
    coverage: float
    training: dict[str, float] = field(default_factory=dict)
    package_form: str = "additive"
    index: dict[str, list[float]] = field(default_factory=dict)
    neighbour_count: int = 0
    neighbour_kernel: list[float] = field(default_factory=list)
    neighbour_rows: list[int] = field(default_factory=list)
    neighbour_residuals: list[float] = field(default_factory=list)
    neighbour_estimates: list[float] = field(default_factory=list)


@dataclass
class ScoreLink:
    """Links per benchmark (:func:`fit_score_link`); stored in a fit's attrs by :func:`with_score_link`.

    ``reference`` holds the training LLMs' answers on the kept items
    (:func:`~benchmirt_bayes.analyses.score_neighbours.encode_answers`) when a benchmark's
    link uses neighbour corrections; ``neighbour_rows`` index its rows,
    ``neighbour_residuals`` and ``neighbour_estimates`` are those rows' out-of-fold link
    errors and estimates, and ``neighbour_kernel`` is the kriging kernel's
    ``[length, noise, score_weight]``.
    """

    benchmarks: dict[str, BenchmarkLink]
    reference: dict = field(default_factory=dict)
    score_max: float | None = None
    """The highest possible full score (1 or 100), the unit of the link's estimates (unknown
    in links stored before it was recorded)."""

    def to_json(self) -> str:
        """Plain JSON (stored in attrs)."""
        links = {b: asdict(link) for b, link in self.benchmarks.items()}
        return json.dumps(
            {"format": 4, "benchmarks": links, "reference": self.reference, "score_max": self.score_max}
        )

    @classmethod
    def from_json(cls, text: str) -> ScoreLink:
        """Inverse of :meth:`to_json`.

        Also reads the earlier formats: 3 (kriging by answers alone, score weight 0), and
        1 (benchmark → link) and 2 (neighbours averaged, not kriged) as long as they use no
        neighbour correction; those that do need a refit.
        """
        raw = json.loads(text)
        if raw.get("format") not in (2, 3, 4):
            return cls({b: BenchmarkLink(**link) for b, link in raw.items()})
        links = {b: BenchmarkLink(**link) for b, link in raw["benchmarks"].items()}
        if raw["format"] == 2 and any(link.neighbour_count for link in links.values()):
            raise ValueError("this link averages neighbours (format 2); refit it with fit_score_link")
        return cls(links, raw.get("reference", {}), raw.get("score_max"))


def _features(
    grid: AbilityPosterior, columns: np.ndarray, outcomes: np.ndarray, scale: np.ndarray, kept: np.ndarray
) -> dict:
    """Per-unit features of one benchmark.

    The subset abilities, the IRT expectation on all the benchmark's fitted items, the plain
    mean on its answered items, and the answers to its kept items themselves (``kept``
    columns; an unanswered one is filled with its IRT expectation), all on ``[0, 1]``.
    """
    seen = ~np.isnan(outcomes[:, columns])
    with np.errstate(invalid="ignore"):
        naive = np.nansum(outcomes[:, columns] / scale[columns], axis=1) / seen.sum(axis=1)
    answers = outcomes[:, kept] / scale[kept]
    answers = np.where(np.isnan(answers), grid.expected[:, kept], answers)
    return {
        "ability": grid.mean,
        "irt": grid.expected[:, columns].mean(axis=1),
        "naive": naive,
        "answers": answers,
    }


def _design(features: dict, knots: list[list[float]], kind: str) -> tuple[np.ndarray, np.ndarray]:
    """The regression design of one estimator and its per-column ridge penalty.

    The kept answers, the ``package`` design's last columns, get the weakest candidate
    penalty; :func:`_fit_benchmark_link` sets the one it chooses.
    """
    parts, penalty = [np.ones((features["irt"].shape[0], 1))], [0.0]
    if kind in ("irt", "package"):
        for k, knot in enumerate(knots):
            basis = natural_spline_basis(features["ability"][:, k], np.asarray(knot))
            parts.append(basis)
            penalty += [RIDGE] * basis.shape[1]
        parts.append(features["irt"][:, None])
        penalty.append(RIDGE)
    if kind in ("naive", "package"):
        parts.append(np.nan_to_num(features["naive"], nan=0.5)[:, None])
        penalty.append(RIDGE)
    if kind == "package":
        parts.append(features["answers"])
        penalty += [ITEM_RIDGES[0]] * features["answers"].shape[1]
    return np.column_stack(parts), np.asarray(penalty)


def _ridge(
    design: tuple[np.ndarray, np.ndarray], target: np.ndarray, weights: np.ndarray | None = None
) -> np.ndarray:
    x, penalty = design
    weighted = x if weights is None else x * weights[:, None]
    gram = weighted.T @ x + len(target) * np.diag(penalty)
    return np.linalg.solve(gram, weighted.T @ target)


def _robust_scale(residual: np.ndarray) -> float:
    """The residuals' SD estimated from their median absolute deviation."""
    return 1.4826 * float(np.median(np.abs(residual - np.median(residual)))) + 1e-9


def gross_outliers(
    design: tuple[np.ndarray, np.ndarray], target: np.ndarray, cut: float = OUTLIER_CUT, iterations: int = 10
) -> np.ndarray:
    """Rows whose target is more than ``cut`` robust SDs from a Huber ridge fit of ``design``.

    A few LLMs can be far off every smooth link, such as LLMs trained on the test set: they
    score at the ceiling and answer every kept item right, including items that no other
    LLM gets. Least squares would give such an item the weight of that whole cluster's
    excess, and an ordinary LLM that happens to get it right would inherit it. A Huber fit
    (iteratively reweighted ridge) does not bend towards such rows, so its residuals find
    them.

    Parameters
    ----------
    design
        The regression design and its per-column ridge penalty, as :func:`_design` returns.
    target
        The training LLMs' full scores.
    cut
        The threshold, in SDs estimated from the residuals' median absolute deviation.
    iterations
        Reweighting steps of the Huber fit.

    Returns
    -------
    numpy.ndarray
        One boolean per row, true for a gross outlier.

    """
    weights = np.ones(len(target))
    for _ in range(iterations):
        residual = target - design[0] @ _ridge(design, target, weights)
        spread = HUBER_TUNING * _robust_scale(residual)
        weights = np.minimum(1.0, spread / (np.abs(residual) + 1e-12))
    residual = target - design[0] @ _ridge(design, target, weights)
    return np.abs(residual) > cut * _robust_scale(residual)


def _index_curve(z: np.ndarray, knots: np.ndarray) -> np.ndarray:
    """Design of the single-index curve: an intercept and a natural spline of ``z``."""
    return np.column_stack([np.ones(len(z)), natural_spline_basis(z, knots)])


def _fit_index(design: tuple[np.ndarray, np.ndarray], target: np.ndarray) -> dict[str, list[float]]:
    """Single-index regression ``target ≈ g(x·w)``, ``g`` a natural spline, ``w`` ridge-penalised.

    Starts from the linear ridge fit (``g`` the identity) and takes damped Gauss–Newton
    steps in ``w`` with ``g`` refitted (knots at quantiles of the index) before each step.
    The curve can absorb any rescaling of the index, so ``w`` is rescaled after each step
    to keep the index's spread that of the start; the penalty then weighs the items'
    relative weights, not a scale the curve would undo.
    """
    x, penalty = design
    n = len(target)
    penalty = np.maximum(penalty, 1e-8)
    weights = _ridge((x, penalty), target)
    spread = float(np.std(x @ weights)) + 1e-12

    def rescaled(w: np.ndarray) -> np.ndarray:
        return w * (spread / (float(np.std(x @ w)) + 1e-12))

    def curve(w: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        z = x @ w
        knots = np.quantile(z, np.linspace(0.02, 0.98, INDEX_KNOTS))
        basis = _index_curve(z, knots)
        coefficients = np.linalg.lstsq(basis, target, rcond=None)[0]
        loss = float(np.sum((target - basis @ coefficients) ** 2) + n * np.sum(penalty * w**2))
        return knots, coefficients, loss

    knots, coefficients, loss = curve(weights)
    for _ in range(INDEX_ITERATIONS):
        z = x @ weights
        fitted = _index_curve(z, knots) @ coefficients
        step = 1e-3 * (float(np.std(z)) + 1e-12)
        slope = (_index_curve(z + step, knots) @ coefficients - fitted) / step
        jacobian = x * slope[:, None]
        gram = jacobian.T @ jacobian + n * np.diag(penalty)
        direction = np.linalg.solve(gram, jacobian.T @ (target - fitted) - n * penalty * weights)
        for damping in (1.0, 0.5, 0.25, 0.125):
            trial = rescaled(weights + damping * direction)
            trial_knots, trial_coefficients, trial_loss = curve(trial)
            if trial_loss < loss:
                weights, knots, coefficients, loss = trial, trial_knots, trial_coefficients, trial_loss
                break
        else:
            break
    return {
        "weights": list(map(float, weights)),
        "knots": list(map(float, knots)),
        "coefficients": list(map(float, coefficients)),
    }


def _index_predict(x: np.ndarray, index: Mapping[str, Sequence[float]]) -> np.ndarray:
    z = x @ np.asarray(index["weights"])
    return _index_curve(z, np.asarray(index["knots"])) @ np.asarray(index["coefficients"])


ESTIMATORS = ("naive", "irt", "blend", "package")
"""``naive``: the plain mean on the kept items, linearly calibrated to the full score;
``irt``: the spline of the subset ability and the IRT expectation; ``blend``: the
tinyBenchmarks idea (a weighted average of the calibrated kept-item mean and the IRT
prediction, the weight learned on the training LLMs); ``package`` (the default): one
regression on the IRT terms, the kept mean and, with a stronger ridge penalty, the answers
to the kept items themselves, so that items whose success tracks the unseen rest of the
benchmark more (or less) than the model says count accordingly; additive or single-index,
whichever predicts the training LLMs better out of fold."""
FORMS = ("additive", "index")
"""The two forms of the ``package`` regression (see the module docstring)."""


def fit_score_link(
    posterior: xr.DataTree,
    full_scores: pd.DataFrame | Mapping[str, pd.Series],
    *,
    items: Sequence[str] | None = None,
    responses=None,
    ci_prob: float = CI_PROB,
    folds: int = 5,
    n_draws: int = 20,
    seed: int = 0,
    score_max: float | None = None,
) -> ScoreLink:
    """Learn, per benchmark, the map from a subset's features to the full-benchmark score.

    Parameters
    ----------
    posterior
        A fit (its items, with uncertainty, score the subsets).
    full_scores
        The known full-benchmark scores (percent or fractions): a DataFrame indexed by LLM
        with one column per benchmark of the fit, or a mapping benchmark → Series. LLMs that
        are not training LLMs are ignored; benchmarks without scores get no link.
    items
        The kept items the new LLMs will answer (default: every fitted item).
    responses
        The training LLMs' responses (default: the fit's own data).
    ci_prob
        Coverage of the intervals :func:`estimate_scores` will give (stored as the link's
        ``coverage``).
    folds
        Cross-fitting folds for the out-of-fold residuals behind the intervals and the
        blend weight.
    n_draws, seed
        Posterior draws of the items used to score subsets, and the seed that picks them.
    score_max
        The highest possible full score, the unit of every estimate
        :func:`estimate_scores` gives with this link (also of the IRT expectation of a
        benchmark without a link): default 100 (percent) when any known score exceeds 1,
        else 1.

    Returns
    -------
    ScoreLink

    Raises
    ------
    ValueError
        A score column that is not a benchmark of the fit, a score that is not a finite
        number, no training LLM with a known score, or no benchmark with enough of them
        (:func:`min_llms_for_link`) and a kept item.

    Warns
    -----
    UserWarning
        Benchmarks with kept items that get no link, with how many training LLMs have a
        known full score.

    """
    check_ci_prob(ci_prob)
    fitted = responses_from_tree(posterior)
    scores = score_frame(full_scores, fitted.benchmark_names)
    responses = responses if responses is not None else fitted
    llms = responses.llms.astype(str)
    if not scores.index.isin(llms).any():
        raise ValueError(
            f"none of the {len(scores)} LLMs with full scores is among the {len(llms)} training LLMs "
            f"(scores for e.g. {list(scores.index[:3])}; LLMs e.g. {list(llms[:3])})"
        )
    if score_max is None:
        score_max = 100.0 if float(np.nanmax(np.abs(scores.to_numpy()))) > 1 else 1.0
    item_draws = ItemDraws.from_posterior(posterior, n_draws, seed=seed)
    kept = list(item_draws.items) if items is None else [str(i) for i in items]
    outcomes = _outcome_matrix(item_draws, responses, kept)
    benchmarks = fitted.data["benchmark"].to_series().astype(str)
    bench_of_item = benchmarks.loc[list(item_draws.items)].to_numpy()
    rng = np.random.default_rng(seed)
    scale = item_draws.layout.score_scale
    # every kept item's answers, also those of other benchmarks: in a joint fit they tell
    # about this one's unseen items too (regression) and about who is whose relative
    kept_columns = item_draws.columns(np.asarray(kept, dtype=str))
    reference = outcomes[:, kept_columns] / scale[kept_columns]
    links = {}
    unlinked = {}  # benchmark → why it gets no link (said in a warning)
    without_items = []  # benchmarks none of the kept items is from: no link, as asked
    neighbours_of = {}  # benchmarks with the same known LLMs (a joint fit) share one search
    for name in scores.columns:
        target, rows = known_scores(scores, name, llms)
        columns = np.flatnonzero(bench_of_item == name)
        kept_here = [i for i in kept if benchmarks.get(i) == name]
        if len(rows) < min_llms_for_link(folds):
            unlinked[name] = (
                f"{len(rows)} training LLMs have a known full score; "
                f"a link needs at least {min_llms_for_link(folds)} ({folds} folds × 5)"
            )
            continue
        if not kept_here:
            without_items.append(name)
            continue
        grid = ability_posterior(item_draws, outcomes[rows], seed=seed)
        features = _features(grid, columns, outcomes[rows], scale, kept_columns)
        knots = [
            list(np.quantile(features["ability"][:, k], np.linspace(0.05, 0.95, SPLINE_KNOTS)))
            for k in range(features["ability"].shape[1])
        ]
        key = rows.tobytes()
        if key not in neighbours_of:
            found = nearest(reference[rows], reference[rows], NEIGHBOURS, exclude_self=True)
            neighbours_of[key] = (found, between_neighbours(found, reference[rows]))
        found, among = neighbours_of[key]
        link = _fit_benchmark_link(features, target[rows], knots, kept, ci_prob, folds, rng, found, among)
        if link.neighbour_count:
            link.neighbour_rows = list(map(int, rows))
        links[str(name)] = link
    reasons = "; ".join(f"{name}: {why}" for name, why in unlinked.items())
    if not links:
        reasons += "; " * bool(reasons) + f"no kept item in {without_items}" * bool(without_items)
        raise ValueError(
            f"no benchmark gets a link to full scores ({reasons}); without a link, "
            "estimate_scores gives the IRT expectation on the fitted items"
        )
    if unlinked:
        warnings.warn(
            f"{len(unlinked)} benchmark(s) get no link ({reasons}); estimate_scores gives their IRT "
            f"expectation on the fitted items, scaled to {score_max:g}",
            UserWarning,
            stacklevel=2,
        )
    uses_neighbours = any(link.neighbour_count for link in links.values())
    return ScoreLink(links, encode_answers(reference) if uses_neighbours else {}, score_max)


def min_llms_for_link(folds: int) -> int:
    """Fewest training LLMs with a known full score that a benchmark's link is fitted from."""
    return 5 * folds


def _fit_benchmark_link(
    features: dict,
    target: np.ndarray,
    knots,
    kept: list[str],
    coverage: float,
    folds: int,
    rng,
    neighbours: Neighbours,
    among: np.ndarray,
) -> BenchmarkLink:
    """One benchmark's link.

    ``neighbours`` are each training row's nearest other rows and ``among`` the distances
    between them (:func:`~benchmirt_bayes.analyses.score_neighbours.between_neighbours`).
    """
    fold_of = rng.permutation(len(target)) % folds
    ridges = {"additive": ITEM_RIDGES, "index": INDEX_RIDGES}
    candidates = [("naive", 0.0), ("irt", 0.0), *[(form, r) for form in FORMS for r in ridges[form]]]
    # every row's design depends on that row alone (the knots are fixed), so each kind's is
    # built once and the folds take rows of it; the ridge candidates differ in the penalty
    # of the answers, the package design's last columns
    designs = {kind: _design(features, knots, kind) for kind in ("naive", "irt", "package")}
    n_answers = features["answers"].shape[1]

    def design_of(kind: str, ridge: float) -> tuple[np.ndarray, np.ndarray]:
        if kind not in FORMS:
            return designs[kind]
        x, penalty = designs["package"]
        penalty = penalty.copy()
        penalty[x.shape[1] - n_answers :] = ridge
        return x, penalty

    # the package regression leaves out gross outliers of its smooth terms; the baselines
    # (naive, irt, blend) stay plain least squares
    x, penalty = designs["package"]
    smooth = x.shape[1] - n_answers
    inlier = ~gross_outliers((x[:, :smooth], penalty[:smooth]), target)
    everyone = np.ones(len(target), dtype=bool)

    def rows_of(kind: str, rows: np.ndarray) -> np.ndarray:
        return rows & inlier if kind in FORMS else rows

    predicted = {key: np.zeros(len(target)) for key in candidates}
    for fold in range(folds):
        test = fold_of == fold
        for kind, ridge in candidates:
            x, penalty = design_of(kind, ridge)
            train = rows_of(kind, fold_of != fold)
            design = (x[train], penalty)
            if kind == "index":
                predicted[kind, ridge][test] = _index_predict(x[test], _fit_index(design, target[train]))
            else:
                predicted[kind, ridge][test] = x[test] @ _ridge(design, target[train])
    oof_mse = {
        key: float(np.mean((target - value)[rows_of(key[0], everyone)] ** 2))
        for key, value in predicted.items()
    }
    form, item_ridge = min(((name, r) for name in FORMS for r in ridges[name]), key=oof_mse.__getitem__)
    out_of_fold = {"naive": predicted["naive", 0.0], "irt": predicted["irt", 0.0]}
    out_of_fold["package"] = predicted[form, item_ridge]
    coefficients = {kind: _ridge(design_of(kind, item_ridge), target) for kind in ("naive", "irt")}
    x, penalty = design_of("additive", item_ridge)
    coefficients["package"] = _ridge((x[inlier], penalty), target[inlier])
    x, penalty = design_of("index", item_ridge)
    index = _fit_index((x[inlier], penalty), target[inlier]) if form == "index" else {}
    # the blend weight on the calibrated kept-item mean, chosen on out-of-fold predictions
    a, b = out_of_fold["naive"], out_of_fold["irt"]
    denominator = float(np.sum((a - b) ** 2))
    lam = float(np.clip(np.sum((target - b) * (a - b)) / denominator, 0.0, 1.0)) if denominator > 0 else 0.0
    raw_estimate = out_of_fold["package"]
    raw_residual = target - raw_estimate
    kernel = choose_kernel(raw_residual, neighbours, among, raw_estimate, seed=int(rng.integers(2**31)))
    count = neighbours.index.shape[1] if kernel is not None else 0
    out_of_fold["package"] = raw_estimate + correction(
        raw_residual, neighbours, among, kernel, raw_estimate, raw_estimate
    )
    residual = target - out_of_fold["package"]
    scale_design = designs["irt"]
    scale_beta = _ridge(scale_design, np.abs(residual))
    floor = 0.1 * float(np.median(np.abs(residual))) + 1e-9
    spread = np.maximum(scale_design[0] @ scale_beta, floor)
    ratio = np.sort(np.abs(residual) / spread)
    rank = min(len(ratio) - 1, int(np.ceil((len(ratio) + 1) * coverage)) - 1)
    rmse = {kind: float(np.sqrt(np.mean((target - value) ** 2))) for kind, value in out_of_fold.items()}
    rmse["blend"] = float(np.sqrt(np.mean((target - (lam * a + (1 - lam) * b)) ** 2)))
    return BenchmarkLink(
        items=kept,
        knots=[list(map(float, k)) for k in knots],
        coefficients={kind: list(map(float, beta)) for kind, beta in coefficients.items()},
        scale_coefficients=list(map(float, scale_beta)),
        quantile=float(ratio[rank]),
        spread_floor=floor,
        lam=lam,
        coverage=coverage,
        training={f"out_of_fold_rmse_{kind}": value for kind, value in rmse.items()}
        | {
            f"out_of_fold_rmse_{name}": float(np.sqrt(min(oof_mse[name, r] for r in ridges[name])))
            for name in FORMS
        }
        | {
            "n_llms": float(len(target)),
            "outliers_left_out": float(np.sum(~inlier)),
            "item_ridge": item_ridge,
            "neighbour_count": float(count),
        }
        | dict(zip(("neighbour_length", "neighbour_noise"), kernel or (), strict=False)),
        package_form=form,
        index=index,
        neighbour_count=count,
        neighbour_kernel=list(kernel) if kernel is not None else [],
        neighbour_residuals=list(map(float, raw_residual)) if count else [],
        neighbour_estimates=list(map(float, raw_estimate)) if count else [],
    )


def _outcome_matrix(item_draws: ItemDraws, responses, kept: Sequence[str]) -> np.ndarray:
    """``(llm, item)`` responses in the item draws' order, NaN outside the kept items."""
    columns = item_draws.columns(np.asarray(kept, dtype=str))
    data = responses.data.sel(item=list(np.asarray(item_draws.items)[columns])) if len(kept) else None
    outcomes = np.full((responses.n_llms, len(item_draws.items)), np.nan)
    if data is not None:
        outcomes[:, columns] = data.transpose("llm", "item").values
    return outcomes


def with_score_link(posterior: xr.DataTree, link: ScoreLink) -> xr.DataTree:
    """A copy of ``posterior`` carrying ``link`` (saved and checked with the fit)."""
    out = posterior.copy(deep=False)
    out.attrs = {**posterior.attrs, LINK_ATTR: link.to_json()}
    return out


def estimate_scores(
    posterior: xr.DataTree,
    responses_on_subset: pd.DataFrame | Mapping[str, Mapping[str, float]],
    *,
    link: ScoreLink | None = None,
    estimator: str | Sequence[str] = "package",
    n_draws: int = 20,
    seed: int = 0,
    ci_prob: float = CI_PROB,
) -> pd.DataFrame:
    """Full-benchmark score estimates with intervals for LLMs evaluated on a subset of the items.

    Parameters
    ----------
    posterior
        A fit, carrying a link (:func:`with_score_link`) unless ``link`` is given.
    responses_on_subset
        ``(llm, item)`` responses: a DataFrame indexed by LLM with item columns (NaN = not
        asked), or a mapping LLM → {item: response}. Items must be fitted items.
    link
        The link to full scores (:func:`fit_score_link`). Without one (and none stored),
        the estimate is the model's expected mean score on all fitted items of each
        benchmark, with a posterior interval of mass ``ci_prob``, on ``[0, 1]``; a
        benchmark the link has no link for gets the same, scaled to the link's
        ``score_max``.
    estimator
        One of :data:`ESTIMATORS` (``"package"``: the default regression on all features),
        or several (one row per estimator each).
    n_draws, seed
        Posterior draws of the items used, and their seed (use the link's).
    ci_prob
        Interval mass without a link (with one, the link's calibrated coverage applies).

    Returns
    -------
    DataFrame
        One row per (LLM, benchmark): ``estimate``, ``lower``, ``upper``, ``irt_fitted_items``
        (expected mean score on the fitted items, ``[0, 1]``), ``kept_mean`` (plain mean on
        the answered items, ``[0, 1]``), ``n_answered``, ``estimator`` and ``score_max``
        (the highest possible score in the estimate's unit: 1 for fractions, 100 for
        percent, the same on every row; NaN for a link stored without it).

    """
    estimators = [estimator] if isinstance(estimator, str) else list(estimator)
    unknown = [e for e in estimators if e not in ESTIMATORS]
    if unknown:
        raise ValueError(f"estimator must be one of {ESTIMATORS}, got {unknown}")
    if link is None and LINK_ATTR in posterior.attrs:
        link = ScoreLink.from_json(posterior.attrs[LINK_ATTR])
    table = responses_on_subset
    if isinstance(table, Mapping):
        table = pd.DataFrame(table).T
    item_draws = ItemDraws.from_posterior(posterior, n_draws, seed=seed)
    columns = item_draws.columns(np.asarray([str(c) for c in table.columns]))
    outcomes = np.full((len(table), len(item_draws.items)), np.nan)
    outcomes[:, columns] = table.to_numpy(dtype=float)
    item_draws.check_responses(columns, outcomes[:, columns])
    grid = ability_posterior(item_draws, outcomes, seed=seed)
    benchmarks = responses_from_tree(posterior).data["benchmark"].to_series().astype(str)
    bench_of_item = benchmarks.loc[list(item_draws.items)].to_numpy()
    scale = item_draws.layout.score_scale
    reference = decode_answers(link.reference) if link is not None and link.reference else None
    neighbours_of = {}  # benchmarks with the same kept items and known LLMs (a joint fit) share one search
    # a link stored before its unit was recorded: its estimates' unit is unknown (NaN)
    unit = 1.0 if link is None else (np.nan if link.score_max is None else link.score_max)
    rows = []
    for name in pd.unique(bench_of_item):
        cols = np.flatnonzero(bench_of_item == name)
        bench_link = link.benchmarks.get(name) if link is not None else None
        kept = (
            item_draws.columns(np.asarray(bench_link.items, dtype=str))
            if bench_link is not None
            else cols[:0]
        )
        features = _features(grid, cols, outcomes, scale, kept)
        n_answered = (~np.isnan(outcomes[:, cols])).sum(axis=1)
        if bench_link is None:
            irt = _irt_interval(grid, item_draws, cols, ci_prob)
            results = {"irt_fitted_items": tuple(np.nan_to_num(unit, nan=1.0) * value for value in irt)}
        else:
            spread = _design(features, bench_link.knots, "irt")[0] @ np.asarray(bench_link.scale_coefficients)
            half = bench_link.quantile * np.maximum(spread, bench_link.spread_floor)
            results = {}
            for kind in estimators:
                estimate = _link_estimate(features, bench_link, kind)
                if kind == "package" and bench_link.neighbour_count:
                    answers = outcomes[:, kept] / scale[kept]
                    estimate = estimate + _neighbour_correction(
                        answers, estimate, reference, bench_link, neighbours_of
                    )
                results[kind] = (estimate, estimate - half, estimate + half)
        for kind, (estimate, lower, upper) in results.items():
            for u, llm in enumerate(table.index.astype(str)):
                rows.append(
                    {
                        "llm": llm,
                        "benchmark": str(name),
                        "estimate": float(estimate[u]),
                        "lower": float(lower[u]),
                        "upper": float(upper[u]),
                        "irt_fitted_items": float(features["irt"][u]),
                        "kept_mean": float(features["naive"][u]),
                        "n_answered": int(n_answered[u]),
                        "estimator": kind,
                        "score_max": unit,
                    }
                )
    return pd.DataFrame(rows)


def _neighbour_correction(
    answers: np.ndarray, estimate: np.ndarray, reference: np.ndarray, link: BenchmarkLink, neighbours_of: dict
) -> np.ndarray:
    """Each row's training residual kriged from its nearest training LLMs (by kept-item answers).

    ``estimate`` is each row's link estimate (the kernel may weigh how far it is from the
    neighbours').

    ``neighbours_of`` caches the search by kept items and training LLMs across benchmarks.
    """
    if reference is None:
        raise ValueError("the link uses neighbour corrections but carries no reference answers")
    rows = np.asarray(link.neighbour_rows, dtype=int)
    key = (tuple(link.items), rows.tobytes(), link.neighbour_count)
    if key not in neighbours_of:
        found = nearest(answers, reference[rows], link.neighbour_count)
        neighbours_of[key] = (found, between_neighbours(found, reference[rows]))
    found, among = neighbours_of[key]
    return correction(
        np.asarray(link.neighbour_residuals),
        found,
        among,
        Kernel(*link.neighbour_kernel),
        np.asarray(link.neighbour_estimates),
        estimate,
    )


def _link_estimate(features: dict, link: BenchmarkLink, estimator: str) -> np.ndarray:
    def predict(kind: str) -> np.ndarray:
        x = _design(features, link.knots, kind)[0]
        if kind == "package" and link.package_form == "index":
            return _index_predict(x, link.index)
        return x @ np.asarray(link.coefficients[kind])

    if estimator == "blend":
        return link.lam * predict("naive") + (1 - link.lam) * predict("irt")
    return predict(estimator)


def _irt_interval(grid: AbilityPosterior, item_draws: ItemDraws, cols: np.ndarray, ci_prob: float):
    """Posterior mean and interval of the mean expected score on ``cols`` (on ``[0, 1]``)."""
    tail, _ = interval_quantiles(ci_prob)
    layout = item_draws.layout
    if grid.shared:
        n = item_draws.loading.shape[0]
        per_point = np.zeros(grid.points.shape[0])  # the mean expected score at each grid point
        for s in range(n):
            eta = linear_predictor(grid.points, item_draws.loading[s][cols], item_draws.intercept[s][cols])
            params = layout.take_parameters(layout.at_sample(item_draws.params, s), cols)
            per_point += layout.take(cols).expected_score(eta, params, expand=0).mean(axis=1) / n
        per_point = np.broadcast_to(per_point, grid.weights.shape)
    else:  # each sample pairs with its own item draw
        per_point = probabilities_for_samples(item_draws, grid.points, cols).mean(axis=-1)
    mean = np.sum(grid.weights * per_point, axis=1)
    order = np.argsort(per_point, axis=1)
    ordered = np.take_along_axis(per_point, order, axis=1)
    cumulative = np.cumsum(np.take_along_axis(grid.weights, order, axis=1), axis=1)
    lower = np.take_along_axis(ordered, np.argmax(cumulative >= tail, axis=1)[:, None], axis=1)[:, 0]
    upper = np.take_along_axis(ordered, np.argmax(cumulative >= 1 - tail, axis=1)[:, None], axis=1)[:, 0]
    return mean, lower, upper
