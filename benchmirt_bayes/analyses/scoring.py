"""Place a new LLM (or a new item) given a fitted posterior: ``score_llm`` and ``adaptive_test``.

The ability posterior of a new LLM given its responses ``y`` is
``p(θ | y, D) = ∫ p(θ | y, items) p(items | D) d items``. We integrate over item
uncertainty by Monte Carlo over posterior draws of the item parameters: for each
draw, a Laplace approximation of ``p(θ | y, items_s)`` (Newton's method on a
strictly concave log density) serves as proposal for sampling-importance-
resampling, so each draw contributes exact (weighted) samples, not a plug-in.
The same routine estimates new items' parameters from known abilities.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.analyses.abilities import ability_frame
from benchmirt_bayes.model.layout import ItemParameters, ResponseLayout
from benchmirt_bayes.model.response_models import information_matrix, linear_predictor
from benchmirt_bayes.posterior import fit_spec, responses_from_tree, thinned_draws, type_parameters
from benchmirt_bayes.summaries import CI_PROB, check_ci_prob, summarise_draws


@dataclass(frozen=True)
class CellModel:
    """The response models of a regression's ``n`` columns and their per-draw item parameters.

    ``params`` arrays are sample-first, ``(draw, n, …)``, paired with the design's draws.
    """

    layout: ResponseLayout
    params: ItemParameters

    @classmethod
    def binary(cls, n: int) -> CellModel:
        """``n`` binary columns."""
        return cls(ResponseLayout.binary(n), {})

    def log_likelihood(self, y: np.ndarray, eta: np.ndarray, expand: int = 0) -> np.ndarray:
        """Per cell; ``eta (unit, draw, [m,] n)``, ``expand`` the axes between draw and item."""
        return self.layout.log_likelihood(y, eta, self.params, expand=expand)

    def score_residual(self, y: np.ndarray, eta: np.ndarray) -> np.ndarray:
        """``∂ log p / ∂η`` per cell, ``eta (unit, draw, n)``."""
        return self.layout.score_residual(y, eta, self.params, expand=0)

    def information_weight(self, eta: np.ndarray) -> np.ndarray:
        """Fisher information of ``η`` per cell, ``eta (unit, draw, n)``."""
        return self.layout.information_weight(eta, self.params, expand=0)


# ------------------------------------------------------------------ the core
def laplace_sir(
    design: np.ndarray,
    offset: np.ndarray,
    outcomes: np.ndarray,
    prior_mean: np.ndarray,
    prior_var: np.ndarray,
    *,
    samples_per_draw: int = 4,
    seed: int = 0,
    newton_steps: int = 50,
    cells: CellModel | None = None,
) -> np.ndarray:
    """Samples of regression weights, one regression per (unit, draw).

    Model: ``y_un ~ ResponseModel_n(design_sn · w_us + offset_sn)`` (Bernoulli-logit
    unless ``cells`` says otherwise) with prior ``w_us ~ N(prior_mean, diag(prior_var))``.

    Parameters
    ----------
    design
        ``(draw, n, p)`` covariates per posterior draw.
    offset
        ``(draw, n)`` fixed part of the logit.
    outcomes
        ``(unit, n)`` responses, NaN where not observed.
    prior_mean, prior_var
        Broadcastable to ``(unit, draw, p)``.
    samples_per_draw
        Importance samples drawn per (unit, draw); the pooled, resampled set has
        ``draw × samples_per_draw`` samples per unit.
    seed
        Seed of the proposals and the resampling.
    newton_steps
        Maximum Newton iterations for the mode (Fisher scoring with step halving).
    cells
        The response models of the ``n`` columns and their per-draw item parameters
        (default: all binary).

    Returns
    -------
    ndarray
        ``(unit, draw × samples_per_draw, p)``; sample ``k`` belongs to draw
        ``k // samples_per_draw``, so it can be paired with that draw's design.

    """
    n_draw, n_cols, p = design.shape
    n_unit = outcomes.shape[0]
    cells = CellModel.binary(n_cols) if cells is None else cells
    mask = ~np.isnan(outcomes)
    y = np.where(mask, outcomes, 0.0)
    shape = (n_unit, n_draw, p)
    mean = np.broadcast_to(prior_mean, shape).astype(float)
    var = np.broadcast_to(prior_var, shape).astype(float)
    w = mean.copy()
    value = _objective(design, offset, y, mask, w, mean, var, cells)
    for _ in range(newton_steps):
        grad, hess = _gradient_hessian(design, offset, y, mask, w, mean, var, cells)
        step = np.linalg.solve(-hess, grad[..., None])[..., 0]
        # damped Newton: halve the step wherever it would lower the log density (saturated
        # logits make the plain Newton step overshoot for LLMs that get nearly everything right)
        size = np.ones(value.shape)
        for _halving in range(30):
            candidate = w + size[..., None] * step
            new_value = _objective(design, offset, y, mask, candidate, mean, var, cells)
            worse = new_value < value - 1e-10
            if not worse.any():
                break
            size = np.where(worse, size / 2, size)
        w, value = candidate, new_value
        if np.max(np.abs(size[..., None] * step)) < 1e-8:
            break
    _, hess = _gradient_hessian(design, offset, y, mask, w, mean, var, cells)
    cov = np.linalg.inv(-hess)
    cov = 0.5 * (cov + np.swapaxes(cov, -1, -2))
    chol = np.linalg.cholesky(cov)
    rng = np.random.default_rng(seed)
    m = samples_per_draw * 4  # proposals per (unit, draw), resampled down to samples_per_draw
    noise = rng.standard_normal((n_unit, n_draw, m, p))
    proposals = w[:, :, None, :] + np.einsum("udpq,udmq->udmp", chol, noise)
    log_q = -0.5 * np.sum(noise**2, axis=-1)
    log_target = _log_density(design, offset, y, mask, proposals, mean, var, cells)
    log_weight = log_target - log_q
    log_weight -= log_weight.max(axis=-1, keepdims=True)
    weight = np.exp(log_weight)
    weight /= weight.sum(axis=-1, keepdims=True)
    cumulative = np.cumsum(weight, axis=-1)
    cumulative[..., -1] = 1.0
    u = rng.random((n_unit, n_draw, samples_per_draw))
    chosen = np.minimum((cumulative[:, :, None, :] < u[..., None]).sum(axis=-1), m - 1)
    picked = np.take_along_axis(proposals, chosen[..., None], axis=2)
    return picked.reshape(n_unit, n_draw * samples_per_draw, p)


def _objective(design, offset, y, mask, w, mean, var, cells):
    """Unnormalised log posterior at ``w (unit, draw, p)``."""
    eta = np.einsum("snp,usp->usn", design, w) + offset[None]
    loglik = np.sum(cells.log_likelihood(y[:, None, :], eta) * mask[:, None, :], axis=-1)
    return loglik - 0.5 * np.sum((w - mean) ** 2 / var, axis=-1)


def _gradient_hessian(design, offset, y, mask, w, mean, var, cells):
    eta = np.einsum("snp,usp->usn", design, w) + offset[None]
    resid = cells.score_residual(y[:, None, :], eta) * mask[:, None, :]
    grad = np.einsum("snp,usn->usp", design, resid) - (w - mean) / var
    # Fisher scoring: the expected information (the exact Hessian for the logistic types)
    weight = cells.information_weight(eta) * mask[:, None, :]
    hess = -np.einsum("snp,usn,snq->uspq", design, weight, design)
    idx = np.arange(w.shape[-1])
    hess[..., idx, idx] -= 1.0 / var
    return grad, hess


def _log_density(design, offset, y, mask, w, mean, var, cells):
    """Unnormalised log posterior at ``w (unit, draw, m, p)``."""
    eta = np.einsum("snp,usmp->usmn", design, w) + offset[None, :, None, :]
    loglik = cells.log_likelihood(y[:, None, None, :], eta, expand=1)
    loglik = np.sum(loglik * mask[:, None, None, :], axis=-1)
    prior = -0.5 * np.sum((w - mean[:, :, None, :]) ** 2 / var[:, :, None, :], axis=-1)
    return loglik + prior


# ---------------------------------------------------------- item parameters
@dataclass(frozen=True)
class ItemDraws:
    """Thinned posterior draws of the item parameters, aligned to one item order."""

    items: np.ndarray
    loading: np.ndarray  # (draw, item, dimension)
    intercept: np.ndarray  # (draw, item)
    dimensions: list[str]
    ability_prior_cov: np.ndarray  # (dimension, dimension)
    layout: ResponseLayout
    params: ItemParameters  # graded / continuous / count item parameters, (draw, item, …)

    @classmethod
    def from_posterior(cls, posterior: xr.DataTree, n_draws: int = 100, seed: int = 0) -> ItemDraws:
        """Thin the posterior and pull out item parameters and the ability prior."""
        draws = thinned_draws(posterior, n_draws, seed=seed)
        loading = draws["loading"].transpose("sample_index", "item", "dimension")
        intercept = draws["intercept"].transpose("sample_index", "item")
        spec = fit_spec(posterior)
        sigma = float(spec.ability.sigma) if spec is not None else 1.0
        if spec is not None and spec.ability.correlation == "whitened":
            sigma = 1.0  # the fitted LLMs' abilities have unit sample variance whatever sigma is
        k = loading.sizes["dimension"]
        cov = np.eye(k) * sigma**2
        post = posterior["posterior"]
        if "ability_correlation" in post.data_vars:
            corr = post["ability_correlation"].mean(("chain", "draw")).values
            cov = corr * sigma**2
        layout = ResponseLayout.from_responses(responses_from_tree(posterior))
        return cls(
            np.asarray(loading["item"].values).astype(str),
            loading.values,
            intercept.values,
            list(map(str, loading["dimension"].values)),
            cov,
            layout,
            type_parameters(layout, draws),
        )

    def cells(self, columns: np.ndarray, draws: np.ndarray | None = None) -> CellModel:
        """The response models of ``columns``, with parameters of all draws (or of ``draws``)."""
        params = self.params if draws is None else self.layout.at_sample(self.params, draws)
        return CellModel(self.layout.take(columns), self.layout.take_parameters(params, columns))

    def check_responses(self, columns: np.ndarray, values: np.ndarray) -> None:
        """Raise ValueError naming every value that does not fit its item's response type."""
        types = self.layout.types[columns]
        scale = self.layout.score_scale[columns]
        values = np.asarray(values, dtype=float)
        seen = ~np.isnan(values)
        whole = values == np.round(values)
        bad = seen & ((values < 0) | (values > scale) | ((types != "continuous") & ~whole))
        if bad.any():
            shown = {
                f"{self.items[c]} ({t}, highest {s:g})": float(v)
                for c, t, s, v in zip(
                    columns[bad][:5], types[bad][:5], scale[bad][:5], values[bad][:5], strict=True
                )
            }
            raise ValueError(f"responses outside their items' response types: {shown}")

    def columns(self, items: np.ndarray) -> np.ndarray:
        """Positions of ``items`` in this item order (KeyError listing unknown ids)."""
        position = {item: i for i, item in enumerate(self.items)}
        unknown = [i for i in items if i not in position]
        if unknown:
            shown = ", ".join(map(str, unknown[:10]))
            raise KeyError(f"{len(unknown)} items are not in the fitted posterior: {shown}")
        return np.array([position[i] for i in items], dtype=np.int64)


def ability_samples(
    item_draws: ItemDraws,
    outcomes: np.ndarray,
    *,
    samples_per_draw: int = 4,
    seed: int = 0,
    chunk: int = 32,
) -> np.ndarray:
    """Ability samples ``(unit, sample, dimension)`` for rows of ``outcomes (unit, item)``.

    ``outcomes`` is in ``item_draws.items`` order, NaN where not evaluated.
    Sample ``k`` pairs with item draw ``k // samples_per_draw``.
    """
    outcomes = np.atleast_2d(np.asarray(outcomes, dtype=float))
    answered = np.flatnonzero((~np.isnan(outcomes)).any(axis=0))
    design = item_draws.loading[:, answered, :]
    offset = item_draws.intercept[:, answered]
    prior_var = np.diag(item_draws.ability_prior_cov)
    cells = item_draws.cells(answered)
    parts = []
    for start in range(0, outcomes.shape[0], chunk):
        rows = outcomes[start : start + chunk][:, answered]
        parts.append(
            laplace_sir(
                design,
                offset,
                rows,
                0.0,
                prior_var,
                samples_per_draw=samples_per_draw,
                seed=seed + start,
                cells=cells,
            )
        )
    return np.concatenate(parts, axis=0)


def probabilities_for_samples(item_draws: ItemDraws, samples: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """``(unit, sample, item)`` expected scores on ``[0, 1]`` on ``columns`` (binary: probabilities)."""
    per_draw = samples.shape[1] // item_draws.loading.shape[0]
    draw_of_sample = np.arange(samples.shape[1]) // per_draw
    loading = item_draws.loading[draw_of_sample][:, columns, :]  # (sample, item, dim)
    intercept = item_draws.intercept[draw_of_sample][:, columns]
    eta = linear_predictor(samples[:, :, None, :], loading, intercept)[:, :, 0, :]  # (unit, sample, item)
    cells = item_draws.cells(columns, draw_of_sample)
    return cells.layout.expected_score(eta, cells.params, expand=0)


# ---------------------------------------------------------------- score_llm
@dataclass
class LLMScore:
    """The posterior of a new LLM's abilities and predicted benchmark scores."""

    ability: xr.DataArray  # (sample, dimension)
    benchmark_scores: pd.DataFrame  # benchmark × mean, sd, lower, upper, observed, n_answered
    items_answered: int
    n_draws: int = 200
    samples_per_draw: int = 4
    seed: int = 0
    llm: str = "scored LLM"
    """How the samples pair with posterior draws: sample ``k`` belongs to the ``k //
    samples_per_draw``-th of the ``n_draws`` draws that ``thinned_draws(..., seed=seed)``
    picks (what :func:`~benchmirt_bayes.compare_llms` needs to compare it with fitted LLMs)."""

    def ability_summary(self, ci_prob: float = CI_PROB) -> pd.DataFrame:
        """Mean, SD and central interval (of mass ``ci_prob``) of each ability dimension.

        The layout of :func:`~benchmirt_bayes.ability_table`: index ``(llm, dimension)``
        (``llm`` is this score's name), columns ``mean``, ``sd``, ``lower``, ``upper``.
        """
        dims = self.ability["dimension"].values
        return ability_frame(self.ability.values[:, None, :], [self.llm], dims, ci_prob)


def score_llm(
    posterior: xr.DataTree,
    responses_of_new_llm: Mapping[str, float] | pd.Series,
    *,
    n_draws: int = 200,
    samples_per_draw: int = 4,
    ci_prob: float = CI_PROB,
    seed: int = 0,
    llm: str = "scored LLM",
) -> LLMScore:
    """Posterior of a new LLM's abilities from any subset of the fitted items.

    Item uncertainty is integrated over (``n_draws`` posterior draws, each with
    its own ability posterior), not plugged in at point estimates.

    Parameters
    ----------
    posterior
        A fit from :func:`benchmirt_bayes.fit_posterior`.
    responses_of_new_llm
        ``{item_id: response}`` for the items the LLM was evaluated on (0/1 for binary
        items, a category, a score in [0, 1] or a count for the other types; NaN = not
        evaluated). Unknown item ids raise ``KeyError``; a value that does not fit its
        item's type raises ``ValueError``.
    n_draws, samples_per_draw
        Posterior draws of the items used, and ability samples per draw.
    ci_prob
        Probability mass of the reported central intervals.
    seed
        Seed of the thinning and the importance sampling.
    llm
        A name for the LLM (shown by :func:`~benchmirt_bayes.compare_llms`).

    Returns
    -------
    LLMScore
        ``ability (sample, dimension)`` and, per benchmark, the predicted mean score
        on ``[0, 1]`` (share correct for binary items) over *all* its items with
        interval, next to the observed mean on the answered items.

    """
    check_ci_prob(ci_prob)
    answers = pd.Series(responses_of_new_llm, dtype=float)
    item_draws = ItemDraws.from_posterior(posterior, n_draws, seed=seed)
    columns = item_draws.columns(answers.index.astype(str).to_numpy())
    item_draws.check_responses(columns, answers.to_numpy())
    outcomes = np.full((1, len(item_draws.items)), np.nan)
    outcomes[0, columns] = answers.to_numpy()
    samples = ability_samples(item_draws, outcomes, samples_per_draw=samples_per_draw, seed=seed)
    all_columns = np.arange(len(item_draws.items))
    probs = probabilities_for_samples(item_draws, samples, all_columns)[0]  # (sample, item)
    benchmarks = responses_from_tree(posterior).benchmarks.astype(str)
    rows = []
    for name in pd.unique(benchmarks):
        cols = benchmarks == name
        score = probs[:, cols].mean(axis=1)
        answered = outcomes[0, cols] / item_draws.layout.score_scale[cols]
        n_answered = int((~np.isnan(answered)).sum())
        rows.append(
            {
                "benchmark": name,
                **{k: float(v) for k, v in summarise_draws(score, ci_prob=ci_prob).items()},
                "observed": np.nanmean(answered) if n_answered else np.nan,
                "n_answered": n_answered,
                "n_items": int(cols.sum()),
            }
        )
    ability = xr.DataArray(
        samples[0], dims=("sample", "dimension"), coords={"dimension": item_draws.dimensions}
    )
    return LLMScore(
        ability,
        pd.DataFrame(rows).set_index("benchmark"),
        int(answers.notna().sum()),
        n_draws=n_draws,
        samples_per_draw=samples_per_draw,
        seed=seed,
        llm=llm,
    )


def table_answers(table: pd.DataFrame, llm_col: str, item_col: str, correct_col: str) -> pd.DataFrame:
    """A results table as ``(llm, item)`` numeric answers.

    Long (``llm_col``, ``item_col``, ``correct_col``) or wide (the first column holds LLM
    ids, the others item ids).
    """
    from benchmirt_bayes.data.tables import numeric_values

    columns = [str(c) for c in table.columns]
    if {llm_col, item_col, correct_col} <= set(columns):
        long = table.rename(columns={llm_col: "llm", item_col: "item", correct_col: "correct"})
        values, bad = numeric_values(long[["correct"]])
        if bad:
            raise ValueError(f"{len(bad)} non-numeric response(s) in column {correct_col!r}")
        long = long.assign(correct=values[:, 0], llm=long["llm"].astype(str), item=long["item"].astype(str))
        return long.pivot_table(index="llm", columns="item", values="correct", aggfunc="first")
    wide = table.set_index(table.columns[0])
    values, bad = numeric_values(wide)
    if bad:
        raise ValueError(f"{len(bad)} non-numeric response(s) in the wide table")
    return pd.DataFrame(values, index=wide.index.astype(str), columns=[str(c) for c in wide.columns])


def score_table(
    posterior: xr.DataTree,
    table: pd.DataFrame,
    *,
    llm_col: str = "llm",
    item_col: str = "item",
    correct_col: str = "correct",
    n_draws: int = 200,
    ci_prob: float = CI_PROB,
    seed: int = 0,
) -> pd.DataFrame:
    """:func:`score_llm` for every LLM of a results table (what ``benchmirt score`` writes).

    ``table`` is long (``llm_col``, ``item_col``, ``correct_col``) or wide (the first column
    holds LLM ids, the other columns are fitted item ids). Returns one tidy row per LLM and
    quantity: ``llm``, ``quantity`` (``ability`` or ``benchmark_score``), ``name`` (the
    dimension or benchmark), ``mean``, ``sd``, ``lower``, ``upper``, ``observed`` and
    ``n_answered``.
    """
    answers_table = table_answers(table, llm_col, item_col, correct_col)
    per_llm = {str(llm): row.dropna() for llm, row in answers_table.iterrows()}
    rows = []
    for llm, answers in per_llm.items():
        result = score_llm(posterior, answers, n_draws=n_draws, ci_prob=ci_prob, seed=seed, llm=llm)
        for (_, dim), row in result.ability_summary(ci_prob).iterrows():
            rows.append({"llm": llm, "quantity": "ability", "name": dim, **row.to_dict()})
        for bench, row in result.benchmark_scores.iterrows():
            values = row[["mean", "sd", "lower", "upper", "observed", "n_answered"]].to_dict()
            rows.append({"llm": llm, "quantity": "benchmark_score", "name": bench, **values})
    return pd.DataFrame(rows)


# ------------------------------------------------------------ adaptive test
def expected_information(item_draws: ItemDraws, samples: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """``(candidate, dim, dim)`` Fisher information averaged over the ability posterior samples.

    ``E[p(1-p) a aᵀ]`` with each sample paired with its item draw, so item
    uncertainty is integrated as well.
    """
    per_draw = samples.shape[0] // item_draws.loading.shape[0]
    draw_of_sample = np.arange(samples.shape[0]) // per_draw
    loading = item_draws.loading[draw_of_sample][:, candidates, :]  # (sample, cand, dim)
    intercept = item_draws.intercept[draw_of_sample][:, candidates]
    eta = linear_predictor(samples[:, None, :], loading, intercept)[:, 0, :]  # (sample, cand)
    cells = item_draws.cells(candidates, draw_of_sample)
    weight = cells.layout.information_weight(eta, cells.params, expand=0)
    return information_matrix(weight, loading).mean(axis=0)


def adaptive_test(
    posterior: xr.DataTree,
    answer: Callable[[str], float],
    *,
    budget: int,
    stop_sd: float | None = None,
    items: np.ndarray | list[str] | None = None,
    order: str = "information",
    n_draws: int = 50,
    samples_per_draw: int = 8,
    seed: int = 0,
) -> pd.DataFrame:
    """Computerised adaptive testing of a new LLM on the fitted items.

    At every step the next item maximises ``log det(P + I_i)``, where ``P`` is
    the precision of the current ability posterior and ``I_i`` the item's
    expected Fisher information over that posterior (D-optimality:
    the largest expected shrinkage of the multidimensional posterior).

    Parameters
    ----------
    posterior
        A fit from :func:`benchmirt_bayes.fit_posterior`.
    answer
        ``answer(item_id) -> response``: evaluates the LLM on one item (0/1 for a binary
        item; a category, score or count for the other types).
    budget
        Maximum number of items asked.
    stop_sd
        Stop early once every dimension's posterior SD is below this.
    items
        The item pool (default: every fitted item).
    order
        ``"information"`` (adaptive) or ``"random"`` (the baseline, seeded).
    n_draws, samples_per_draw
        Posterior draws of the items, ability samples per draw.
    seed
        Seed of thinning, sampling and random order.

    Returns
    -------
    DataFrame
        One row per step: ``step``, ``item``, ``response``, then
        ``<dim>_mean`` and ``<dim>_sd`` of the ability posterior after it.

    """
    if budget < 1:
        raise ValueError(f"budget must be at least 1, got {budget}")
    if order not in ("information", "random"):
        raise ValueError(f"order must be 'information' or 'random', got {order!r}")
    item_draws = ItemDraws.from_posterior(posterior, n_draws, seed=seed)
    pool = item_draws.items if items is None else np.asarray(items, dtype=str)
    pool_columns = list(item_draws.columns(pool))
    rng = np.random.default_rng(seed)
    outcomes = np.full((1, len(item_draws.items)), np.nan)
    k = len(item_draws.dimensions)
    samples = _prior_samples(item_draws, samples_per_draw, rng)
    rows = []
    for step in range(1, min(budget, len(pool_columns)) + 1):
        if order == "random":
            choice = int(rng.integers(len(pool_columns)))
        else:
            info = expected_information(item_draws, samples, np.array(pool_columns))
            precision = np.linalg.inv(np.cov(samples.T).reshape(k, k) + 1e-9 * np.eye(k))
            _, logdet = np.linalg.slogdet(precision[None] + info)
            choice = int(np.argmax(logdet))
        column = pool_columns.pop(choice)
        item = str(item_draws.items[column])
        response = float(answer(item))
        item_draws.check_responses(np.array([column]), np.array([response]))
        outcomes[0, column] = response
        samples = ability_samples(item_draws, outcomes, samples_per_draw=samples_per_draw, seed=seed + step)[
            0
        ]
        row = {"step": step, "item": item, "response": response}
        for d, name in enumerate(item_draws.dimensions):
            row[f"{name}_mean"] = samples[:, d].mean()
            row[f"{name}_sd"] = samples[:, d].std()
        rows.append(row)
        sds = samples.std(axis=0)
        if stop_sd is not None and np.all(sds < stop_sd):
            break
    return pd.DataFrame(rows)


def _prior_samples(item_draws: ItemDraws, per_draw: int, rng: np.random.Generator) -> np.ndarray:
    n = item_draws.loading.shape[0] * per_draw
    chol = np.linalg.cholesky(item_draws.ability_prior_cov)
    return rng.standard_normal((n, chol.shape[0])) @ chol.T
