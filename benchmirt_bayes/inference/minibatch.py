"""Minibatch ADVI: the model ``fit_posterior`` fits, its likelihood read one block of items at a time.

The model, the variational family, the optimiser, the stopping rule and the result are
those of ``fit_posterior(method="advi")``: mean-field Gaussian ADVI on the unconstrained
free variables of :func:`~benchmirt_bayes.model.pymc_model.build_model`'s model (whitened
abilities, zero-sum loading deviations, intercepts with subgroup offsets, as the spec
says), Adam with gradient-norm clipping, the stopping rule of
:class:`~benchmirt_bayes.inference.advi.ElboConvergence` with its polish phase, and the
identified DataTree of :func:`~benchmirt_bayes.inference.fit.assemble_posterior`. The prior's
log density and the map from free variables to abilities, loadings and intercepts are
PyMC's own graph of that model compiled to JAX, so the two paths cannot drift apart.

What differs is how each step estimates the ELBO: every prior term exactly (they cost
``O((n_llms + n_items) K)``), the log-likelihood from one block of ``item_batch`` items ×
every LLM, times ``n_items / item_batch`` (unbiased). A block holds every LLM because the
abilities are whitened within the sample at every step. An epoch visits every item once,
in a seeded random order. Memory is the parameters, their Adam state and one
``n_llms × item_batch`` block; the matrix itself is never needed
(:class:`~benchmirt_bayes.simulation.streaming.CellSource`).

Fits are seeded (start, block order, Monte Carlo noise) and run on JAX (the ``jax``
extra); a block's items can be sharded over devices (ARCHITECTURE.md).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pymc as pm
import xarray as xr

from benchmirt_bayes.checks import check_integer
from benchmirt_bayes.data.responses import ITEM_DIM, LLM_DIM, ResponseMatrix
from benchmirt_bayes.inference.advi import POLISH_FACTOR, ElboConvergence, elbo_record, optimisation_progress
from benchmirt_bayes.inference.fit import RawFit, assemble_posterior, optimisation_start
from benchmirt_bayes.inference.initialisation import jittered_start
from benchmirt_bayes.inference.settings import AdviSettings, FitSettings, coerce_settings
from benchmirt_bayes.model.pymc_model import build_model, has_binary_asymptotes
from benchmirt_bayes.model.spec import ModelSpec, load_spec
from benchmirt_bayes.posterior import kept_variables, with_variational
from benchmirt_bayes.response_types.base import linear_predictor, softplus
from benchmirt_bayes.response_types.binary import BINARY
from benchmirt_bayes.simulation.streaming import CellSource, MatrixSource, import_jax

METHOD = "minibatch_advi"
ADAM = (0.9, 0.999, 1e-8)
"""Adam's ``β₁``, ``β₂`` and ``ε`` (PyMC's ``pm.adam`` defaults)."""
GRADIENT_NORM_LIMIT = 100.0
"""Total gradient norm above which a step's gradient is scaled down (as ``fit_posterior``'s ADVI)."""
OBSERVED_DATA_MAX_CELLS = 50_000_000
"""A streamed source is written into ``observed_data`` only up to this many cells."""
MINIBATCH_ATTR = "benchmirt_minibatch"
"""Attr of a minibatch fit: JSON of its block settings (``item_batch``, ``devices``)."""
MODEL_DIFFERENCES_ATTR = "benchmirt_model_differences"
"""Attr of a minibatch fit: JSON list of where its model differs from ``fit_posterior``'s (empty)."""


def fit_minibatch_advi(
    source: CellSource | ResponseMatrix,
    n_dims: int = 2,
    *,
    item_batch: int = 2000,
    advi: AdviSettings | Mapping[str, Any] | None = None,
    seed: int = 0,
    spec: str | ModelSpec | Mapping[str, Any] | None = None,
    devices: int | Sequence[Any] | None = None,
    progressbar: bool = True,
) -> xr.DataTree:
    """Fit the hierarchical MIRT model by minibatch ADVI, reading one block of items at a time.

    Parameters
    ----------
    source
        A :class:`~benchmirt_bayes.simulation.streaming.CellSource` (for example a
        :class:`~benchmirt_bayes.StreamingSimulation`) or a ``ResponseMatrix`` of 0/1
        responses.
    n_dims
        Latent dimensions.
    item_batch
        Items per block; a step reads every LLM's responses to ``item_batch`` items (capped
        at the number of items). Memory grows with the block, not with the matrix.
    advi
        ADVI settings (:class:`~benchmirt_bayes.AdviSettings` or a dict of its fields), as
        for ``fit_posterior(method="advi")``: draws, step budget, stopping rule, polish phase,
        learning rate, start. Steps are block steps: an epoch is ``n_items / item_batch``
        of them.
    seed
        Seeds the start, the block order and the Monte Carlo noise.
    spec
        The model spec, as for :func:`~benchmirt_bayes.fit_posterior` (default:
        ``"exploratory"``; ``anchors = "auto"`` needs a source that holds a matrix).
    devices
        Shard every block's items across these JAX devices (a count takes the first ones):
        each device computes its slice of the block and XLA reduces the log-likelihood and
        the gradients across them. ``item_batch`` must be a multiple of the device count.
        Default: one device, no sharding.
    progressbar
        Show the optimisation's progress.

    Returns
    -------
    xarray.DataTree
        What :func:`~benchmirt_bayes.fit_posterior` returns for ADVI (``posterior`` with
        ``advi.draws`` identified draws, ``sample_stats``, ``elbo``, ``observed_data`` where
        the source holds a matrix that fits in memory, the provenance attrs with method
        ``"minibatch_advi"``; the approximation itself in ``elbo``, read by
        :func:`~benchmirt_bayes.posterior.variational_parameters`).

    Raises
    ------
    ValueError
        For data with other than 0/1 items (the block likelihood is the Bernoulli logit),
        bad block or device settings, more than one ADVI start, or ``anchors = "auto"`` on a
        streamed source.

    """
    import jax

    jnp = import_jax()
    if isinstance(source, ResponseMatrix):
        source = MatrixSource(source)
    if isinstance(source, MatrixSource) and not source.responses.is_binary:
        raise ValueError(
            "the minibatch path fits 0/1 responses only (its block likelihood is the Bernoulli "
            "logit); data with other response types fit with fit_posterior (method='nuts', "
            "'advi' or 'map')"
        )
    check_integer("n_dims", n_dims)
    check_integer("item_batch", item_batch)
    n_items = len(source.items)
    item_batch = min(item_batch, n_items)
    responses = _source_matrix(source)
    settings = _fit_settings(n_dims, spec, advi)
    if settings.advi.starts > 1:
        raise ValueError("the minibatch path runs one start (AdviSettings.starts=1); compare seeds instead")
    model_spec = settings.spec
    if responses is None and model_spec.anchors == "auto":
        raise ValueError("anchors = 'auto' chooses anchors from the whole matrix; name the anchor benchmarks")
    col_placement, replicated = _placements(devices, item_batch)
    structure = responses if responses is not None else _structure_matrix(source)
    if has_binary_asymptotes(structure, model_spec):
        raise ValueError(
            "the minibatch path fits the 2PL only (its block likelihood is the Bernoulli logit); "
            "benchmarks with floors or ceilings (3PL/4PL) fit with fit_posterior"
        )
    model = build_model(structure, n_dims, spec=model_spec, observed=False)
    layout = _FlatLayout.from_model(model)
    start_point = _unconstrained_start(model, responses, settings, seed)
    params = {
        "mu": jnp.asarray(layout.flatten(start_point), dtype=jnp.float32),
        "rho": jnp.zeros(layout.size, dtype=jnp.float32),  # sd = log 2 at the start, as PyMC's MeanField
    }
    state = {
        "m": {k: jnp.zeros_like(v) for k, v in params.items()},
        "v": {k: jnp.zeros_like(v) for k, v in params.items()},
        "step": jnp.zeros((), dtype=jnp.float32),
    }
    if replicated is not None:
        params, state = jax.device_put((params, state), replicated)
    step = jax.jit(_make_step(model, layout, source, n_items / item_batch), donate_argnums=(0, 1))

    advi_settings = settings.advi
    rule = ElboConvergence(
        window=advi_settings.window,
        tolerance=advi_settings.tolerance,
        stopping=advi_settings.stopping,
        polish_steps=advi_settings.polish_steps,
        max_steps=advi_settings.max_steps,
    )
    total = advi_settings.max_steps + advi_settings.polish_steps
    losses = np.empty(total)
    rate = float(advi_settings.learning_rate)
    rng = np.random.default_rng([seed, 97])
    key = jax.random.PRNGKey(seed)
    blocks = _BlockOrder(n_items, item_batch, rng)
    done = 0
    started = time.perf_counter()
    with optimisation_progress(rule, progressbar, METHOD):
        for i in range(total):
            key, sub = jax.random.split(key)
            cols = blocks.next()
            if col_placement is not None:
                cols = jax.device_put(cols, col_placement)
            params, state, loss = step(params, state, sub, cols, rate)
            losses[i] = float(loss)
            done = i + 1
            polishing = rule.polish_from is not None
            try:
                rule(None, losses[:done], done)
            except StopIteration:
                break
            if rule.polish_from is not None and not polishing:
                rate *= POLISH_FACTOR
    seconds = time.perf_counter() - started
    if not np.all(np.isfinite(losses[:done])):
        raise FloatingPointError(
            "minibatch ADVI diverged (a non-finite ELBO); lower AdviSettings.learning_rate"
        )
    mu = np.asarray(params["mu"], dtype=float)
    sd = mean_field_sd(np.asarray(params["rho"], dtype=float), np)
    posterior = _draws(model, layout, mu, sd, advi_settings.draws, seed)
    raw = RawFit(
        posterior,
        xr.Dataset(coords={"chain": [0], "draw": np.arange(advi_settings.draws)}),
        with_variational(
            elbo_record(losses[:done], rule, method=METHOD, learning_rate=advi_settings.learning_rate),
            mu,
            sd,
            layout.entries,
        ),
        seconds,
        seed,
    )
    tree = assemble_posterior(
        responses, settings, [raw], seed, data_hash=None if responses is not None else _source_hash(source)
    )
    tree.attrs.update(
        {
            "benchmirt_source": repr(source),
            MINIBATCH_ATTR: json.dumps({"item_batch": item_batch, "devices": _device_count(devices)}),
            MODEL_DIFFERENCES_ATTR: json.dumps([]),
            "benchmirt_blocks_per_epoch": blocks.per_epoch,
        }
    )
    return tree


# ------------------------------------------------------------------ settings and start
def _fit_settings(
    n_dims: int, spec: str | ModelSpec | Mapping[str, Any] | None, advi: AdviSettings | Mapping | None
) -> FitSettings:
    """The settings ``fit_posterior(method="advi")`` would store, under this method's name."""
    model_spec = load_spec(spec)
    if model_spec.intercept.noncentered == "auto":  # as fit_posterior resolves it for its optimisers
        model_spec = model_spec.with_overrides({"name": model_spec.name, "intercept": {"noncentered": False}})
    return FitSettings(
        n_dims=int(n_dims),
        method=METHOD,
        spec_json=model_spec.to_json(),
        likelihood="minibatch",
        advi=coerce_settings(advi, AdviSettings, "advi"),
    )


def _unconstrained_start(
    model: pm.Model, responses: ResponseMatrix | None, settings: FitSettings, seed: int
) -> dict[str, np.ndarray]:
    """Where ``fit_posterior``'s ADVI starts (a prior draw when there is no matrix), unconstrained."""
    from pymc.initial_point import make_initial_point_fn

    if responses is not None:
        start = optimisation_start(model, responses, settings, settings.advi.init, seed)
    else:  # no matrix for a spectral start
        start = jittered_start(model, seed)
    point = make_initial_point_fn(model=model, overrides=start, jitter_rvs=set(), return_transformed=True)
    return point(seed)


class _FlatLayout:
    """The free variables' unconstrained values as one flat vector (as PyMC's ADVI holds them)."""

    def __init__(self, names: list[str], shapes: list[tuple[int, ...]]) -> None:
        self.names, self.shapes = names, shapes
        self.sizes = [int(np.prod(shape)) for shape in shapes]
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)]).astype(int)
        self.size = int(self.offsets[-1])

    @classmethod
    def from_model(cls, model: pm.Model) -> _FlatLayout:
        point = model.initial_point()
        names = [v.name for v in model.value_vars]
        return cls(names, [tuple(np.shape(point[name])) for name in names])

    def flatten(self, point: Mapping[str, np.ndarray]) -> np.ndarray:
        return np.concatenate([np.asarray(point[name], dtype=float).ravel() for name in self.names])

    def split(self, flat: Any) -> list[Any]:
        return [
            flat[..., start : start + size].reshape((*flat.shape[:-1], *shape))
            for start, size, shape in zip(self.offsets[:-1], self.sizes, self.shapes, strict=True)
        ]

    @property
    def entries(self) -> list[tuple[str, int, int, tuple[int, ...]]]:
        return [
            (name, int(start), int(start + size), shape)
            for name, start, size, shape in zip(
                self.names, self.offsets[:-1], self.sizes, self.shapes, strict=True
            )
        ]


def mean_field_sd(rho: Any, xp: Any) -> Any:
    """The SD of PyMC's ``MeanField`` from its unconstrained parameter: ``softplus(ρ)``."""
    return softplus(rho, xp)


# ------------------------------------------------------------------ the step
def _make_step(model: pm.Model, layout: _FlatLayout, source: CellSource, scale: float) -> Any:
    """One Adam step on a one-sample ELBO estimate from one block of items (to be jitted)."""
    import jax
    from pymc.sampling.jax import get_jaxified_graph

    jnp = import_jax()
    values = model.value_vars
    prior_logp = get_jaxified_graph(inputs=values, outputs=[model.logp()])
    core = model.replace_rvs_by_values([model["ability"], model["loading"], model["intercept"]])
    core_fn = get_jaxified_graph(inputs=values, outputs=core)
    rows = jnp.arange(len(source.llms))
    beta1, beta2, eps = ADAM

    def negative_elbo(params: dict, key: Any, cols: Any) -> Any:
        sd = mean_field_sd(params["rho"], jnp)
        z = params["mu"] + sd * jax.random.normal(key, sd.shape, dtype=sd.dtype)
        parts = layout.split(z)
        prior = prior_logp(*parts)[0]
        ability, loading, intercept = core_fn(*parts)
        correct, observed = source.block(rows, cols)
        eta = linear_predictor(ability, loading[cols], intercept[cols])
        loglik = jnp.sum(observed * BINARY.log_likelihood(correct, eta, xp=jnp))
        return -(prior + scale * loglik + jnp.sum(jnp.log(sd)))

    grad_fn = jax.value_and_grad(negative_elbo)

    def step(params: dict, state: dict, key: Any, cols: Any, rate: float) -> tuple[dict, dict, Any]:
        loss, grads = grad_fn(params, key, cols)
        norm = jnp.sqrt(sum(jnp.sum(g**2) for g in grads.values()))
        shrink = jnp.minimum(1.0, GRADIENT_NORM_LIMIT / jnp.maximum(norm, 1e-12))
        count = state["step"] + 1.0
        new_params, new_m, new_v = {}, {}, {}
        for name, grad in grads.items():
            grad = grad * shrink
            m = beta1 * state["m"][name] + (1 - beta1) * grad
            v = beta2 * state["v"][name] + (1 - beta2) * grad**2
            m_hat = m / (1 - beta1**count)
            v_hat = v / (1 - beta2**count)
            new_params[name] = params[name] - rate * m_hat / (jnp.sqrt(v_hat) + eps)
            new_m[name], new_v[name] = m, v
        return new_params, {"m": new_m, "v": new_v, "step": count}, loss

    return step


class _BlockOrder:
    """Item blocks of a fixed size, every item once per epoch in a seeded random order.

    The last block of an epoch is topped up from the start of that epoch's permutation, so
    every block has the same shape (one compiled step).
    """

    def __init__(self, n_items: int, size: int, rng: np.random.Generator) -> None:
        self.n_items, self.size, self.rng = n_items, size, rng
        self.per_epoch = -(-n_items // size)
        self._queue: list[np.ndarray] = []

    def next(self) -> np.ndarray:
        if not self._queue:
            order = self.rng.permutation(self.n_items)
            padded = np.concatenate([order, order[: self.per_epoch * self.size - order.size]])
            self._queue = list(padded.reshape(self.per_epoch, self.size).astype(np.int32))
        return self._queue.pop(0)


# ------------------------------------------------------------------ the result
def _draws(
    model: pm.Model, layout: _FlatLayout, mu: np.ndarray, sd: np.ndarray, draws: int, seed: int
) -> xr.Dataset:
    """``draws`` draws from the approximation, as the kept variables of ``model`` (chain 0)."""
    from pytensor import function

    kept = kept_variables(model)
    outputs = model.replace_rvs_by_values([model[name] for name in kept])
    compute = function(model.value_vars, outputs, on_unused_input="ignore")
    rng = np.random.default_rng([seed, 31])
    flat = mu + sd * rng.standard_normal((draws, mu.size))
    per_draw = [compute(*layout.split(row)) for row in flat]
    coords = {name: np.asarray(values) for name, values in model.coords.items()}
    data = {}
    for position, name in enumerate(kept):
        dims = model.named_vars_to_dims.get(name, ())
        stacked = np.stack([values[position] for values in per_draw])[None]
        data[name] = (("chain", "draw", *dims), stacked)
    used = {dim for name in kept for dim in model.named_vars_to_dims.get(name, ())}
    return xr.Dataset(
        data,
        coords={"chain": [0], "draw": np.arange(draws), **{k: v for k, v in coords.items() if k in used}},
    )


# ------------------------------------------------------------------ sources and devices
def _structure_matrix(source: CellSource) -> ResponseMatrix:
    """A matrix with the source's LLMs, items and benchmarks and no values in memory.

    Its values are one NaN broadcast to the matrix's shape (no memory): only the model's
    structure is read from it (``build_model(..., observed=False)``).
    """
    names = np.asarray(source.benchmarks)[np.asarray(source.item_benchmark)]
    subgroups = getattr(source, "item_subgroup", names)
    values = np.broadcast_to(np.float32(np.nan), (len(source.llms), len(source.items)))
    data = xr.DataArray(
        values,
        dims=(LLM_DIM, ITEM_DIM),
        coords={
            LLM_DIM: np.asarray(source.llms),
            ITEM_DIM: np.asarray(source.items),
            "benchmark": (ITEM_DIM, names),
            "subgroup": (ITEM_DIM, np.asarray(subgroups)),
        },
        name="correct",
    )
    return ResponseMatrix(data, validate=False)


def _placements(devices: int | Sequence[Any] | None, item_batch: int) -> tuple[Any, Any]:
    """Shardings for a block's item indices (split) and everything else (replicated).

    ``(None, None)`` for a single device.
    """
    if devices is None:
        return None, None
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    chosen = jax.devices()[:devices] if isinstance(devices, int) else list(devices)
    if isinstance(devices, int) and len(chosen) < devices:
        raise ValueError(f"asked for {devices} devices, JAX sees {len(jax.devices())}")
    if item_batch % len(chosen):
        raise ValueError(f"item_batch={item_batch} is not a multiple of {len(chosen)} devices")
    mesh = Mesh(np.array(chosen), ("items",))
    return NamedSharding(mesh, PartitionSpec("items")), NamedSharding(mesh, PartitionSpec())


def _device_count(devices: int | Sequence[Any] | None) -> int:
    if devices is None:
        return 1
    return devices if isinstance(devices, int) else len(list(devices))


def _source_matrix(source: CellSource) -> ResponseMatrix | None:
    """The source's response matrix when it has one or is small enough to materialise."""
    if isinstance(source, MatrixSource):
        return source.responses
    if len(source.llms) * len(source.items) > OBSERVED_DATA_MAX_CELLS or not hasattr(source, "to_responses"):
        return None
    return source.to_responses()


def _source_hash(source: CellSource) -> str:
    import hashlib

    return hashlib.sha256(repr(source).encode()).hexdigest()[:16]
