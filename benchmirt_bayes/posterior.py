"""What a fit is, for everyone who reads one: variable names, reading helpers, provenance.

The fitting machinery (:mod:`benchmirt_bayes.inference`) writes fits in this shape and
every diagnostic, analysis and report reads them through these helpers, so none of them
needs to import the fitting code.
"""

from __future__ import annotations

import importlib.metadata
import json
import platform
from datetime import UTC, datetime
from typing import Any

import numpy as np
import xarray as xr

from benchmirt_bayes.data.responses import ITEM_DIM, LLM_DIM, ResponseMatrix
from benchmirt_bayes.model.layout import ItemParameters, ResponseLayout
from benchmirt_bayes.model.spec import ModelSpec
from benchmirt_bayes.response_types import (
    DEFAULT_TYPE,
    draw_variables,
    response_model,
    type_variables,
    whole_numbers,
)
from benchmirt_bayes.response_types.base import cell_linear_predictor, linear_predictor

KEPT_VARIABLES = (
    "ability",
    "loading",
    "intercept",
    "benchmark_loading_mean",
    "benchmark_loading_spread",
    "benchmark_intercept_mean",
    "benchmark_intercept_spread",
    "subgroup_intercept_offset",
    "ability_correlation",
    *type_variables(),
)
"""Posterior variables a fit keeps (raw sampler variables such as ``*_z`` are dropped)."""


def kept_variables(model: Any) -> list[str]:
    """The :data:`KEPT_VARIABLES` a built PyMC model has, in that order."""
    return [name for name in KEPT_VARIABLES if name in model.named_vars]


TYPE_PARAMETER_VARIABLES = draw_variables()
"""Item parameters of the response types beyond loading and intercept (rotation-invariant;
absent for 0/1 data)."""
ROTATED_VARIABLES = ("ability", "loading", "benchmark_loading_mean")
"""Variables multiplied by the same orthogonal matrix per draw when a fit is identified."""
SIGN_CONVENTION = (
    "dimensions ordered by sum of squared loadings (largest first); each dimension's sign makes "
    "the mean loading of the items that load mainly on it positive: positive ability = better "
    "on the items (and benchmarks) that define the dimension"
)
OPTIMISATION_METHODS = ("advi", "fullrank_advi", "minibatch_advi")
"""Methods whose fits are draws from a fitted approximation, with an ``elbo`` record."""
SPEC_ATTR = "benchmirt_spec"
SETTINGS_ATTR = "benchmirt_settings"
METHOD_ATTR = "benchmirt_method"


def package_versions() -> dict[str, str]:
    """Versions of Python and of the packages a fit's numbers depend on."""
    names = ["benchmirt_bayes", "pymc", "pytensor", "arviz", "numpy", "xarray", "nutpie", "numpyro", "jax"]
    versions = {"python": platform.python_version()}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def provenance(
    *,
    method: str,
    sampler: str,
    n_dims: int,
    spec_json: str,
    settings: dict[str, Any],
    data_hash: str,
    seed: int,
    restart_seeds: list[int],
    seconds: list[float],
    identification: str,
) -> dict[str, Any]:
    """The attrs that make a fit self-describing and reproducible (every fitting path writes these)."""
    return {
        METHOD_ATTR: method,
        "benchmirt_sampler": sampler,
        "benchmirt_n_dims": int(n_dims),
        SPEC_ATTR: spec_json,
        SETTINGS_ATTR: json.dumps(settings, sort_keys=True),
        "benchmirt_data_hash": data_hash,
        "benchmirt_random_seed": int(seed),
        "benchmirt_restart_seeds": json.dumps([int(s) for s in restart_seeds]),
        "benchmirt_restarts": len(restart_seeds),
        "benchmirt_fit_seconds": json.dumps([round(float(s), 3) for s in seconds]),
        "benchmirt_versions": json.dumps(package_versions(), sort_keys=True),
        "benchmirt_identification": identification,
        "benchmirt_sign_convention": SIGN_CONVENTION,
        "benchmirt_created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def fit_spec(tree: xr.DataTree) -> ModelSpec | None:
    """The model spec a fit was made with (``None`` for a tree without provenance)."""
    text = tree.attrs.get(SPEC_ATTR)
    return ModelSpec.from_json(text) if text else None


def fit_settings_dict(tree: xr.DataTree) -> dict:
    """The fit's stored settings as a plain dict (empty without provenance)."""
    text = tree.attrs.get(SETTINGS_ATTR)
    return json.loads(text) if text else {}


def deliberate_depth_cap(tree: xr.DataTree) -> bool:
    """Whether a NUTS fit's tree-depth cap was the large-data path's automatic choice.

    Truncated trees there cost mixing, not correctness (``inference.settings.automatic_nuts``),
    so convergence is judged by R-hat and ESS rather than by the share of capped draws.
    """
    settings = fit_settings_dict(tree)
    chosen = dict(settings.get("automatic") or ())
    nuts = settings.get("nuts") or {}
    return "nuts.max_treedepth" in chosen and int(nuts.get("max_treedepth", 10)) < 10


def observed_dataset(responses: ResponseMatrix) -> xr.Dataset:
    """The response matrix (NaN = not evaluated) with its item (and LLM) metadata coords.

    Whole-number data are stored as float32 (exact); a type whose values are any number in
    its range keeps float64, so that a reloaded fit sees the very values (and data hash) it
    was fitted on.
    """
    exact = bool(whole_numbers(responses.response_types).all())
    dtype = np.float32 if exact else np.float64
    data = responses.data.astype(dtype).rename("correct")
    for name in (*responses.item_coords, *responses.llm_coords):
        data[name] = data[name].astype(str)
    data[LLM_DIM] = data[LLM_DIM].astype(str)
    data[ITEM_DIM] = data[ITEM_DIM].astype(str)
    return data.to_dataset()


def responses_from_tree(tree: xr.DataTree) -> ResponseMatrix:
    """The :class:`ResponseMatrix` a fit was made on (from its ``observed_data``)."""
    data = tree["observed_data"]["correct"].astype(float)
    return ResponseMatrix(data.drop_attrs(), validate=False)


def response_layout(tree: xr.DataTree) -> ResponseLayout:
    """The response type of every item of the data a fit was made on.

    A posterior without ``observed_data`` (a bare trace, e.g. from a hand-written PyMC model)
    is read as 0/1 data when it has none of the other types' item parameters.
    """
    if "observed_data" in tree.children:
        return ResponseLayout.from_responses(responses_from_tree(tree))
    posterior = tree["posterior"]
    typed = [name for name in TYPE_PARAMETER_VARIABLES if name in posterior.data_vars]
    if typed:
        raise ValueError(
            f"the posterior has {typed} but no observed_data group to say which items are "
            "of which response type; keep observed_data with the fit"
        )
    return ResponseLayout.binary(posterior.sizes[ITEM_DIM])


def type_parameters(
    layout: ResponseLayout, draws: xr.Dataset, sample_dim: str = "sample_index"
) -> ItemParameters:
    """The response types' own item parameters of ``draws``, sample axis first.

    The arrays broadcast against ``η`` of shape ``(sample, llm, item)``; empty for 2PL data.
    """
    arrays = {}
    for name in TYPE_PARAMETER_VARIABLES:
        if name in draws:
            values = draws[name]
            arrays[name] = (
                values.transpose(sample_dim, ...).values if sample_dim in values.dims else values.values
            )
    return layout.parameters(arrays)


def thinned_draws(
    posterior: xr.DataTree,
    n_draws: int,
    *,
    seed: int = 0,
    variables: tuple[str, ...] = ("ability", "loading", "intercept", *TYPE_PARAMETER_VARIABLES),
) -> xr.Dataset:
    """A seeded random subset of ``n_draws`` posterior draws, stacked on dim ``sample_index``.

    The same seed picks the same draws whatever ``variables`` are asked for; variables the
    fit does not hold (the item parameters of absent response types) are left out.
    """
    post = posterior["posterior"].to_dataset()
    post = post[[v for v in variables if v in post]]
    stacked = post.stack(sample_index=("chain", "draw"))
    total = stacked.sizes["sample_index"]
    if n_draws >= total:
        return stacked.drop_vars(["chain", "draw", "sample_index", "restart"], errors="ignore")
    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.choice(total, size=n_draws, replace=False))
    out = stacked.isel(sample_index=chosen)
    return out.drop_vars(["chain", "draw", "sample_index", "restart"], errors="ignore")


def point_parameters(posterior: xr.DataTree) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Posterior means: ``loading (item, dim)``, ``intercept (item)``, ``ability (llm, dim)``, dims."""
    post = posterior["posterior"]
    loading = post["loading"].mean(("chain", "draw")).transpose("item", "dimension").values
    intercept = post["intercept"].mean(("chain", "draw")).values
    ability = post["ability"].mean(("chain", "draw")).transpose("llm", "dimension").values
    return loading, intercept, ability, list(map(str, post["dimension"].values))


def point_type_parameters(posterior: xr.DataTree, layout: ResponseLayout) -> ItemParameters:
    """Posterior means of the response types' own item parameters (empty for 2PL data)."""
    post = posterior["posterior"]
    means = {n: post[n].mean(("chain", "draw")).values for n in TYPE_PARAMETER_VARIABLES if n in post}
    return layout.parameters(means)


LOG_LIKELIHOOD_VARIABLE = "y"
"""Name of the pointwise log-likelihood in the ``log_likelihood`` group (one value per cell)."""
LOO_MAX_VALUES = 200_000_000
"""Draws × observed cells above which the pointwise log-likelihood is refused (memory)."""


def pointwise_log_likelihood(tree: xr.DataTree) -> xr.Dataset:
    """``y (chain, draw, cell)``: the log-likelihood of every observed cell under every draw.

    Cells are the observed (LLM, item) pairs in row-major order, labelled by the ``llm``
    and ``item`` coordinates on ``cell``. Each type's own likelihood (the response-model
    layer) is used, so ``az.loo`` and ``az.compare`` work on mixed data too.

    Raises
    ------
    ValueError
        When draws × observed cells exceeds :data:`LOO_MAX_VALUES`.

    """
    responses = responses_from_tree(tree)
    post = tree["posterior"]
    n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
    rows, cols = np.nonzero(responses.observed)
    if n_chain * n_draw * rows.size > LOO_MAX_VALUES:
        raise ValueError(
            f"the pointwise log-likelihood would hold {n_chain * n_draw} draws × {rows.size} cells; "
            "not feasible at this size (limit LOO_MAX_VALUES): thin the fit, or use "
            "cross_validate's held-out log loss"
        )
    llms, items = responses.llms.astype(str), responses.items.astype(str)
    ability = post["ability"].sel(llm=llms).transpose("chain", "draw", "llm", "dimension").values
    loading = post["loading"].sel(item=items).transpose("chain", "draw", "item", "dimension").values
    intercept = post["intercept"].sel(item=items).transpose("chain", "draw", "item").values
    layout = ResponseLayout.from_responses(responses)
    if layout.is_binary and not any(name in post for name in TYPE_PARAMETER_VARIABLES):
        eta = cell_linear_predictor(ability[:, :, rows], loading[:, :, cols], intercept[:, :, cols])
        log_lik = response_model(DEFAULT_TYPE).log_likelihood(responses.values[rows, cols], eta)
    else:
        draws = post.to_dataset().stack(sample_index=("chain", "draw"))
        params = type_parameters(layout, draws)
        flat = [a.reshape(-1, *a.shape[2:]) for a in (ability, loading, intercept)]
        log_lik = np.empty((n_chain * n_draw, rows.size))
        for s in range(n_chain * n_draw):
            eta = linear_predictor(flat[0][s], flat[1][s], flat[2][s])
            log_lik[s] = layout.log_likelihood(responses.values, eta, layout.at_sample(params, s))[rows, cols]
        log_lik = log_lik.reshape(n_chain, n_draw, rows.size)
    coords = {
        "chain": post["chain"].values,
        "draw": post["draw"].values,
        "cell": np.arange(rows.size),
        LLM_DIM: ("cell", llms[rows]),
        ITEM_DIM: ("cell", items[cols]),
    }
    return xr.Dataset({LOG_LIKELIHOOD_VARIABLE: (("chain", "draw", "cell"), log_lik)}, coords=coords)


def with_log_likelihood(tree: xr.DataTree) -> xr.DataTree:
    """A copy of a fit with a ``log_likelihood`` group, so that ``az.loo`` and ``az.compare`` work.

    The fit's own arrays are shared, not copied; only the new group is added (see
    :func:`pointwise_log_likelihood` for its shape and the memory limit).
    """
    out = tree.copy(deep=False)
    out["log_likelihood"] = xr.DataTree(pointwise_log_likelihood(tree))
    return out


def energy_bfmi(energy: np.ndarray) -> np.ndarray:
    """E-BFMI of each chain (rows of ``energy``, consecutive iterations)."""
    return np.square(np.diff(energy, axis=1)).mean(axis=1) / energy.var(axis=1)


# ----------------------------------------------------------- ADVI loss records
CRITERION_LABELS = {"noise": "trend over noise", "relative": "relative change"}
"""What reports call each stopping rule's criterion."""


def relative_change(losses: np.ndarray, window: int) -> float:
    """Relative change between the mean loss of the last two windows (NaN if fewer steps)."""
    if losses.size < 2 * window:
        return float("nan")
    last = float(np.mean(losses[-window:]))
    previous = float(np.mean(losses[-2 * window : -window]))
    return abs(previous - last) / max(abs(last), 1e-12)


def final_elbo(elbo: xr.Dataset | np.ndarray, window: int) -> float:
    """Mean ELBO over the last ``window`` steps (the fit's final ELBO).

    ``elbo`` is a fit's ELBO record of one restart, as a dataset or as the array of values.
    """
    values = np.asarray(elbo["elbo"].values if isinstance(elbo, xr.Dataset) else elbo, dtype=float)
    values = values[np.isfinite(values)]
    return float(np.mean(values[-window:])) if values.size else float("nan")


# ------------------------------------------------------------ the variational approximation
Q_LAYOUT_ATTR = "q_layout"
"""Attr of an ADVI fit's ``elbo`` group: JSON ``[[name, start, stop, shape], …]`` of the flat
mean-field parameters ``q_mean`` / ``q_sd`` (one entry per free variable, unconstrained scale)."""


def with_variational(
    elbo: xr.Dataset, mean: np.ndarray, sd: np.ndarray, layout: list[tuple[str, int, int, tuple[int, ...]]]
) -> xr.Dataset:
    """An ADVI fit's ``elbo`` record with its mean-field ``q``: ``q_mean``, ``q_sd`` and the layout attr.

    ``layout`` gives each free variable's ``(name, start, stop, shape)`` in the flat vectors.
    """
    out = elbo.assign(q_mean=("q_index", np.asarray(mean, float)), q_sd=("q_index", np.asarray(sd, float)))
    out.attrs[Q_LAYOUT_ATTR] = json.dumps([[n, int(a), int(b), list(map(int, s))] for n, a, b, s in layout])
    return out


def variational_parameters(tree: xr.DataTree, restart: int = 0) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The mean-field approximation of an ADVI fit: free variable → (mean, SD), unconstrained scale.

    Raises
    ------
    ValueError
        For a fit that holds none (NUTS, MAP, full-rank ADVI, ADVI fits stored before 0.2).

    """
    if "elbo" not in tree.children or "q_mean" not in tree["elbo"].data_vars:
        raise ValueError("the fit holds no mean-field approximation (only mean-field ADVI fits do)")
    return mean_field_of_record(tree["elbo"].to_dataset().sel(restart=restart))


def mean_field_of_record(elbo: xr.Dataset) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The mean-field ``q`` in one run's ``elbo`` record (:func:`with_variational`): name → (mean, SD)."""
    mean = elbo["q_mean"].values
    sd = elbo["q_sd"].values
    layout = json.loads(elbo.attrs[Q_LAYOUT_ATTR])
    return {
        name: (mean[start:stop].reshape(shape), sd[start:stop].reshape(shape))
        for name, start, stop, shape in layout
    }
