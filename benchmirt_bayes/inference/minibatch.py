"""Minibatch (stochastic) mean-field ADVI for response matrices too large for memory.

The model is the package's hierarchical exploratory MIRT without subgroup offsets:
``logit P(correct_ij) = loading_i · ability_j + intercept_i``; abilities ``N(0, σ²I)``;
``loading_i ~ N(benchmark mean vector, spread_b² I)``; ``intercept_i ~ N(benchmark mean,
spread_b²)``; benchmark means normal and spreads half-normal with the spec's scales. The
variational family is mean-field Gaussian on every parameter (spreads on the log scale).

Each step takes one block ``(llm_batch LLMs × item_batch items)`` of cells from a
:class:`~benchmirt_bayes.streaming.CellSource` and forms an unbiased estimate of the ELBO:
the block's log-likelihood times ``n_cells / block_cells``, the rows' prior and entropy
terms times ``n_llms / llm_batch`` and the columns' times ``n_items / item_batch``. An epoch
visits every (row block, column block) pair once in a seeded random order, so every cell is
used once per epoch. Local parameters (abilities, item parameters) get *lazy* Adam updates:
only the rows and columns in the block move, with their own step counts; the benchmark-level
parameters get ordinary Adam. Memory is the parameters, their optimiser state and one block.

Fits are seeded (initial values, block order, Monte Carlo noise) and run on JAX (the ``jax``
extra); the same step function shards over devices as described in ``ARCHITECTURE.md``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import xarray as xr

from benchmirt_bayes.data.responses import ResponseMatrix
from benchmirt_bayes.model.pymc_model import dimension_names
from benchmirt_bayes.model.spec import ModelSpec, load_spec
from benchmirt_bayes.posterior import observed_dataset, provenance
from benchmirt_bayes.response_types.base import linear_predictor, mdisc, multidimensional_difficulty
from benchmirt_bayes.response_types.binary import BINARY
from benchmirt_bayes.rotations import sign_and_order, symmetric_sqrt_pair, varimax
from benchmirt_bayes.simulation.streaming import CellSource, MatrixSource, import_jax

LOCAL_ROWS = ("ability_loc", "ability_log_sd")
LOCAL_COLS = ("loading_loc", "loading_log_sd", "intercept_loc", "intercept_log_sd")
ADAM = (0.9, 0.999, 1e-8)


@dataclass(frozen=True)
class MinibatchSettings:
    """Everything that determines a minibatch fit (stored in the result's attrs)."""

    n_dims: int = 2
    llm_batch: int = 1000
    item_batch: int = 2000
    max_epochs: int = 30
    min_epochs: int = 3
    tolerance: float = 2e-4
    learning_rate: float = 0.1
    anneal_epochs: int = 2
    seed: int = 0
    spec: str = "exploratory"

    def __post_init__(self) -> None:
        if self.n_dims < 1 or self.llm_batch < 1 or self.item_batch < 1:
            raise ValueError("n_dims, llm_batch and item_batch must be positive")
        if not 1 <= self.min_epochs <= self.max_epochs:
            raise ValueError("need 1 <= min_epochs <= max_epochs")
        if self.learning_rate <= 0 or self.tolerance < 0 or self.anneal_epochs < 0:
            raise ValueError("learning_rate must be positive, tolerance and anneal_epochs non-negative")


def fit_minibatch_advi(
    source: CellSource | Any,
    n_dims: int = 2,
    *,
    llm_batch: int = 1000,
    item_batch: int = 2000,
    max_epochs: int = 30,
    min_epochs: int = 3,
    tolerance: float = 2e-4,
    learning_rate: float = 0.1,
    anneal_epochs: int = 2,
    seed: int = 0,
    spec: str | ModelSpec = "exploratory",
    devices: int | Sequence[Any] | None = None,
    draws: int = 200,
    progressbar: bool = True,
) -> xr.DataTree:
    """Fit the hierarchical MIRT model by minibatch ADVI, reading one block of cells at a time.

    Parameters
    ----------
    source
        A :class:`~benchmirt_bayes.streaming.CellSource` (for example a
        :class:`~benchmirt_bayes.streaming.StreamingSimulation`) or a ``ResponseMatrix``.
    n_dims
        Latent dimensions.
    llm_batch, item_batch
        Block size; a step touches ``llm_batch × item_batch`` cells (capped at the data's
        size). Memory grows with the block, not with the matrix.
    max_epochs, min_epochs, tolerance
        Stop after ``max_epochs``, or earlier once the mean ELBO of an epoch changes by less
        than ``tolerance`` (relative) from the previous epoch, but not before ``min_epochs``.
    learning_rate
        Adam step size.
    anneal_epochs
        Epochs run after the stopping rule (or ``max_epochs``) at a tenth of the step size,
        so the final means are not left jittering at the scale of the step size.
    seed
        Seeds initial values, block order and the Monte Carlo noise.
    spec
        Prior scales are read from this spec (abilities, loadings, intercepts); subgroup
        offsets and confirmatory patterns are not supported in the minibatch path.
    devices
        Shard every block's items across these JAX devices (a count takes the first ones):
        each device computes its slice of the block and XLA reduces the log-likelihood and
        the gradients of the shared parameters across them. ``item_batch`` must be a multiple
        of the device count. Default: one device, no sharding.
    draws
        Draws taken from the fitted approximation for the returned posterior.
    progressbar
        Show a progress bar over steps.

    Returns
    -------
    xarray.DataTree
        The same identified form as :func:`benchmirt_bayes.fit_posterior` returns for
        ADVI (``posterior`` with ``draws`` draws from the approximation, ``sample_stats``,
        ``elbo (restart, step)`` with one step per epoch, ``observed_data`` where the
        source holds a matrix that fits in memory, and the provenance attrs), plus a
        ``variational`` group: the identified variational means and SDs
        (``ability_mean``, ``ability_sd``, ...), the ``rotation`` applied and the raw
        (unrotated) variational locations ``raw_<name>``.

    """
    import jax

    jnp = import_jax()
    if isinstance(source, ResponseMatrix):
        source = MatrixSource(source)
    if isinstance(source, MatrixSource) and not source.responses.is_binary:
        raise ValueError(
            "the minibatch path fits binary responses only; data with graded, continuous or "
            "count items fit with fit_posterior (method='nuts', 'advi' or 'map')"
        )
    model_spec = load_spec(spec)
    if model_spec.is_confirmatory:
        raise ValueError("the minibatch path fits exploratory specs only")
    n_llms, n_items = len(source.llms), len(source.items)
    settings = MinibatchSettings(
        n_dims=n_dims,
        llm_batch=min(llm_batch, n_llms),
        item_batch=min(item_batch, n_items),
        max_epochs=max_epochs,
        min_epochs=min_epochs,
        tolerance=tolerance,
        learning_rate=learning_rate,
        anneal_epochs=anneal_epochs,
        seed=seed,
        spec=model_spec.name,
    )
    prior = _prior_scales(model_spec)
    codes = jnp.asarray(source.item_benchmark, dtype=jnp.int32)
    n_bench = len(source.benchmarks)
    rng = np.random.default_rng([seed, 97])
    params = _initial_params(n_llms, n_items, n_bench, n_dims, rng)
    state = _initial_adam_state(params, n_llms, n_items)
    col_placement, replicated = _placements(devices, settings.item_batch)
    if replicated is not None:
        params, state = jax.device_put((params, state), replicated)
    step = jax.jit(_make_step(source, codes, prior, (n_llms, n_items), settings), donate_argnums=(0, 1))
    row_blocks = _block_count(n_llms, settings.llm_batch)
    col_blocks = _block_count(n_items, settings.item_batch)
    key = jax.random.PRNGKey(seed)
    elbo_history: list[float] = []
    seconds: list[float] = []
    converged = False
    blocks = row_blocks * col_blocks
    bar = _progress(progressbar, (settings.max_epochs + settings.anneal_epochs) * blocks)

    def run_epoch(label: str, rate: float) -> None:
        nonlocal params, state, key
        start = time.perf_counter()
        rows, cols, pairs = _epoch_blocks(rng, n_llms, n_items, settings)
        total = jnp.zeros(())
        for r, c in pairs:
            key, sub = jax.random.split(key)
            block_cols = cols[c] if col_placement is None else jax.device_put(cols[c], col_placement)
            params, state, value = step(params, state, sub, rows[r], block_cols, rate)
            total = total + value
            bar.advance()
        elbo_history.append(float(total) / len(pairs))
        seconds.append(time.perf_counter() - start)
        bar.describe(f"{label}: ELBO {elbo_history[-1]:.6g}")

    for epoch in range(settings.max_epochs):
        run_epoch(f"epoch {epoch + 1}", settings.learning_rate)
        params = standardize_along_ridges(params, prior["ability_sigma"])
        if epoch + 1 >= settings.min_epochs and len(elbo_history) > 1:
            change = abs(elbo_history[-1] - elbo_history[-2]) / abs(elbo_history[-1])
            if change < settings.tolerance:
                converged = True
                break
    stopped_at = len(elbo_history)
    for epoch in range(settings.anneal_epochs):
        run_epoch(f"annealing {epoch + 1}", settings.learning_rate / 10)
    bar.close()
    raw = {name: np.asarray(value, dtype=float) for name, value in params.items()}
    return _assemble(source, raw, elbo_history, seconds, converged, stopped_at, settings, model_spec, draws)


def standardize_along_ridges(params: dict[str, Any], ability_sigma: float) -> dict[str, Any]:
    """Move to the best point on the likelihood's flat directions (parameter expansion).

    The likelihood is unchanged when every ability becomes ``(θ − m) W`` and every item
    ``a W⁻ᵀ``, ``b + a·m`` for any shift ``m`` and invertible ``W``. Along these ridges the
    ELBO changes only through the priors and entropies, and with the hierarchical item prior
    (benchmark means and spreads follow the items) the best point is close to abilities with
    mean zero and second-moment matrix ``σ² I``. Stochastic gradients creep along such flat
    directions (every parameter must move a little at once), so after each epoch we jump
    there: centre the ability means and whiten them with the symmetric ``W = σ S^{-1/2}``
    (no rotation). Mean-field SDs are carried through the diagonal of the transformed
    covariance, an approximation the following gradient steps correct.
    """
    jnp = import_jax()
    loc, var = params["ability_loc"], jnp.exp(2 * params["ability_log_sd"])
    shift = jnp.mean(loc, axis=0)
    centred = loc - shift
    second_moment = (centred.T @ centred + jnp.diag(jnp.sum(var, axis=0))) / loc.shape[0]
    sqrt, inv_sqrt = symmetric_sqrt_pair(second_moment, xp=jnp)
    whiten = ability_sigma * inv_sqrt  # symmetric
    unwhiten_t = sqrt / ability_sigma  # W⁻ᵀ (= W⁻¹)
    out = dict(params)
    out["ability_loc"] = centred @ whiten
    out["ability_log_sd"] = 0.5 * jnp.log(var @ whiten**2)
    out["intercept_loc"] = params["intercept_loc"] + params["loading_loc"] @ shift
    for name in ("loading", "bench_loading_mean"):
        out[f"{name}_loc"] = params[f"{name}_loc"] @ unwhiten_t
        out[f"{name}_log_sd"] = 0.5 * jnp.log(jnp.exp(2 * params[f"{name}_log_sd"]) @ unwhiten_t**2)
    out["bench_intercept_mean_loc"] = params["bench_intercept_mean_loc"] + (
        params["bench_loading_mean_loc"] @ shift
    )
    n_dims = second_moment.shape[0]
    log_scale = -0.5 * (jnp.linalg.slogdet(second_moment)[1] / n_dims - jnp.log(ability_sigma**2))
    out["bench_loading_log_spread_loc"] = params["bench_loading_log_spread_loc"] - log_scale
    return out


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


# ------------------------------------------------------------------ model and step
def _prior_scales(spec: ModelSpec) -> dict[str, float]:
    return {
        "ability_sigma": float(spec.ability.sigma),
        "loading_mean_sigma": float(spec.loading.mean_sigma),
        "loading_spread_sigma": float(spec.loading.spread_sigma),
        "intercept_mean_mu": float(spec.intercept.mean_mu),
        "intercept_mean_sigma": float(spec.intercept.mean_sigma),
        "intercept_spread_sigma": float(spec.intercept.spread_sigma),
    }


def _initial_params(
    n_llms: int, n_items: int, n_bench: int, k: int, rng: np.random.Generator
) -> dict[str, Any]:
    jnp = import_jax()
    f32 = np.float32
    values = {
        # random abilities and small random loadings break the rotation symmetry at zero
        "ability_loc": rng.normal(0.0, 1.0, (n_llms, k)),
        "ability_log_sd": np.full((n_llms, k), -1.0),
        "loading_loc": rng.normal(0.0, 0.1, (n_items, k)),
        "loading_log_sd": np.full((n_items, k), -1.0),
        "intercept_loc": np.zeros(n_items),
        "intercept_log_sd": np.full(n_items, -1.0),
        "bench_loading_mean_loc": np.zeros((n_bench, k)),
        "bench_loading_mean_log_sd": np.full((n_bench, k), -2.0),
        "bench_loading_log_spread_loc": np.full(n_bench, np.log(0.3)),
        "bench_loading_log_spread_log_sd": np.full(n_bench, -2.0),
        "bench_intercept_mean_loc": np.zeros(n_bench),
        "bench_intercept_mean_log_sd": np.full(n_bench, -2.0),
        "bench_intercept_log_spread_loc": np.zeros(n_bench),
        "bench_intercept_log_spread_log_sd": np.full(n_bench, -2.0),
    }
    return {name: jnp.asarray(value.astype(f32)) for name, value in values.items()}


def _initial_adam_state(params: dict[str, Any], n_llms: int, n_items: int) -> dict[str, Any]:
    jnp = import_jax()
    state: dict[str, Any] = {
        "m": {k: jnp.zeros_like(v) for k, v in params.items()},
        "v": {k: jnp.zeros_like(v) for k, v in params.items()},
        "row_count": jnp.zeros(n_llms, dtype=jnp.float32),
        "col_count": jnp.zeros(n_items, dtype=jnp.float32),
        "step": jnp.zeros((), dtype=jnp.float32),
    }
    return state


def _normal_logpdf(x: Any, mu: Any, sigma: Any) -> Any:
    jnp = import_jax()
    return -0.5 * ((x - mu) / sigma) ** 2 - jnp.log(sigma) - 0.5 * np.log(2 * np.pi)


def _make_step(
    source: CellSource,
    codes: Any,
    prior: dict[str, float],
    shape: tuple[int, int],
    settings: MinibatchSettings,
) -> Any:
    import jax

    jnp = import_jax()
    n_llms, n_items = shape
    row_scale = n_llms / settings.llm_batch
    col_scale = n_items / settings.item_batch
    beta1, beta2, eps = ADAM

    def negative_elbo(local_rows: dict, local_cols: dict, hyper: dict, key: Any, rows, cols):
        keys = jax.random.split(key, 7)

        def draw(loc, log_sd, k):
            return loc + jnp.exp(log_sd) * jax.random.normal(k, loc.shape)

        ability = draw(local_rows["ability_loc"], local_rows["ability_log_sd"], keys[0])
        loading = draw(local_cols["loading_loc"], local_cols["loading_log_sd"], keys[1])
        intercept = draw(local_cols["intercept_loc"], local_cols["intercept_log_sd"], keys[2])
        bl_mean = draw(hyper["bench_loading_mean_loc"], hyper["bench_loading_mean_log_sd"], keys[3])
        bl_log_spread = draw(
            hyper["bench_loading_log_spread_loc"], hyper["bench_loading_log_spread_log_sd"], keys[4]
        )
        bi_mean = draw(hyper["bench_intercept_mean_loc"], hyper["bench_intercept_mean_log_sd"], keys[5])
        bi_log_spread = draw(
            hyper["bench_intercept_log_spread_loc"],
            hyper["bench_intercept_log_spread_log_sd"],
            keys[6],
        )
        correct, observed = source.block(rows, cols)
        eta = linear_predictor(ability, loading, intercept)
        loglik = jnp.sum(observed * BINARY.log_likelihood(correct, eta, xp=jnp))
        code = codes[cols]
        lp_rows = jnp.sum(_normal_logpdf(ability, 0.0, prior["ability_sigma"]))
        lp_cols = jnp.sum(
            _normal_logpdf(loading, bl_mean[code], jnp.exp(bl_log_spread[code])[:, None])
        ) + jnp.sum(_normal_logpdf(intercept, bi_mean[code], jnp.exp(bi_log_spread[code])))
        lp_hyper = (
            jnp.sum(_normal_logpdf(bl_mean, 0.0, prior["loading_mean_sigma"]))
            + jnp.sum(_halfnormal_log_scale(bl_log_spread, prior["loading_spread_sigma"]))
            + jnp.sum(_normal_logpdf(bi_mean, prior["intercept_mean_mu"], prior["intercept_mean_sigma"]))
            + jnp.sum(_halfnormal_log_scale(bi_log_spread, prior["intercept_spread_sigma"]))
        )
        entropy_rows = jnp.sum(local_rows["ability_log_sd"])
        entropy_cols = jnp.sum(local_cols["loading_log_sd"]) + jnp.sum(local_cols["intercept_log_sd"])
        entropy_hyper = sum(jnp.sum(v) for k, v in hyper.items() if k.endswith("log_sd"))
        elbo = (
            row_scale * col_scale * loglik
            + row_scale * (lp_rows + entropy_rows)
            + col_scale * (lp_cols + entropy_cols)
            + lp_hyper
            + entropy_hyper
        )
        return -elbo

    grad_fn = jax.value_and_grad(negative_elbo, argnums=(0, 1, 2))

    def adam(value, grad, m, v, count, lr):
        m = beta1 * m + (1 - beta1) * grad
        v = beta2 * v + (1 - beta2) * grad**2
        m_hat = m / (1 - beta1**count)
        v_hat = v / (1 - beta2**count)
        return value - lr * m_hat / (jnp.sqrt(v_hat) + eps), m, v

    def step(params, state, key, rows, cols, lr):
        local_rows = {k: params[k][rows] for k in LOCAL_ROWS}
        local_cols = {k: params[k][cols] for k in LOCAL_COLS}
        hyper = {k: v for k, v in params.items() if k not in LOCAL_ROWS + LOCAL_COLS}
        loss, (g_rows, g_cols, g_hyper) = grad_fn(local_rows, local_cols, hyper, key, rows, cols)
        row_count = state["row_count"].at[rows].add(1.0)
        col_count = state["col_count"].at[cols].add(1.0)
        count = state["step"] + 1.0
        new_params, new_m, new_v = dict(params), dict(state["m"]), dict(state["v"])
        for group, grads, index, counts in (
            (LOCAL_ROWS, g_rows, rows, row_count[rows]),
            (LOCAL_COLS, g_cols, cols, col_count[cols]),
        ):
            for name in group:
                c = counts.reshape((-1,) + (1,) * (grads[name].ndim - 1))
                value, m, v = adam(
                    params[name][index],
                    grads[name],
                    state["m"][name][index],
                    state["v"][name][index],
                    c,
                    lr,
                )
                new_params[name] = params[name].at[index].set(value)
                new_m[name] = state["m"][name].at[index].set(m)
                new_v[name] = state["v"][name].at[index].set(v)
        for name, grad in g_hyper.items():
            new_params[name], new_m[name], new_v[name] = adam(
                params[name], grad, state["m"][name], state["v"][name], count, lr
            )
        new_state = {"m": new_m, "v": new_v, "row_count": row_count, "col_count": col_count, "step": count}
        return new_params, new_state, -loss

    return step


def _halfnormal_log_scale(log_scale: Any, sigma: float) -> Any:
    """Log density of ``log s`` when ``s ~ HalfNormal(sigma)`` (includes the Jacobian ``s``)."""
    jnp = import_jax()
    scale = jnp.exp(log_scale)
    return np.log(2.0) + _normal_logpdf(scale, 0.0, sigma) + log_scale


# ------------------------------------------------------------------ epochs
def _block_count(n: int, size: int) -> int:
    return -(-n // size)


def _epoch_blocks(
    rng: np.random.Generator, n_llms: int, n_items: int, settings: MinibatchSettings
) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]:
    """Row and column blocks of one epoch and their visiting order.

    Blocks come from a seeded permutation; the last block is topped up from the start so
    every block has the same shape (one compiled step).
    """
    rows = _padded_blocks(rng.permutation(n_llms), settings.llm_batch)
    cols = _padded_blocks(rng.permutation(n_items), settings.item_batch)
    pairs = [(r, c) for r in range(len(rows)) for c in range(len(cols))]
    order = rng.permutation(len(pairs))
    return rows, cols, [pairs[i] for i in order]


def _padded_blocks(order: np.ndarray, size: int) -> np.ndarray:
    count = _block_count(order.size, size)
    padded = np.concatenate([order, order[: count * size - order.size]])
    return padded.reshape(count, size).astype(np.int32)


class _progress:
    """A minimal rich progress bar (or nothing)."""

    def __init__(self, show: bool, total: int) -> None:
        self._bar = None
        if show:
            from rich.progress import Progress

            self._bar = Progress(transient=False)
            self._task = self._bar.add_task("minibatch ADVI", total=total)
            self._bar.start()

    def advance(self) -> None:
        if self._bar is not None:
            self._bar.advance(self._task)

    def describe(self, text: str) -> None:
        if self._bar is not None:
            self._bar.update(self._task, description=text)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


# ------------------------------------------------------------------ result
OBSERVED_DATA_MAX_CELLS = 50_000_000
"""A streamed source is written into ``observed_data`` only up to this many cells."""


def _assemble(
    source: CellSource,
    raw: dict[str, np.ndarray],
    elbo: list[float],
    seconds: list[float],
    converged: bool,
    stopped_at: int,
    settings: MinibatchSettings,
    spec: ModelSpec,
    draws: int,
) -> xr.DataTree:
    """The identified DataTree of every fit: draws from ``q``, rotated by one orthogonal matrix."""
    loading = raw["loading_loc"]
    rotation = varimax(loading) if settings.n_dims > 1 else np.eye(1)
    rotation = rotation @ sign_and_order(loading @ rotation)
    squared = rotation**2  # marginal variances of a rotated mean-field Gaussian
    dims = dimension_names(settings.n_dims, spec)
    coords = {
        "llm": source.llms,
        "item": source.items,
        "dimension": dims,
        "benchmark": list(source.benchmarks),
    }
    rng = np.random.default_rng([settings.seed, 31])

    def normal(name: str, rotate: bool) -> np.ndarray:
        loc, sd = raw[f"{name}_loc"], np.exp(raw[f"{name}_log_sd"])
        values = loc + sd * rng.standard_normal((draws, *loc.shape))
        return (values @ rotation if rotate else values)[None]

    matrix = ("chain", "draw")
    posterior = xr.Dataset(
        {
            "ability": ((*matrix, "llm", "dimension"), normal("ability", True)),
            "loading": ((*matrix, "item", "dimension"), normal("loading", True)),
            "intercept": ((*matrix, "item"), normal("intercept", False)),
            "benchmark_loading_mean": (
                (*matrix, "benchmark", "dimension"),
                normal("bench_loading_mean", True),
            ),
            "benchmark_loading_spread": (
                (*matrix, "benchmark"),
                np.exp(normal("bench_loading_log_spread", False)),
            ),
            "benchmark_intercept_mean": ((*matrix, "benchmark"), normal("bench_intercept_mean", False)),
            "benchmark_intercept_spread": (
                (*matrix, "benchmark"),
                np.exp(normal("bench_intercept_log_spread", False)),
            ),
        },
        coords={**coords, "chain": [0], "draw": np.arange(draws)},
    )
    discrimination = mdisc(posterior["loading"].values)
    posterior["mdisc"] = ((*matrix, "item"), discrimination)
    posterior["difficulty"] = (
        (*matrix, "item"),
        multidimensional_difficulty(posterior["intercept"].values, discrimination),
    )
    posterior = posterior.assign_coords(restart=("chain", [0]))
    mean_loading = loading @ rotation
    variational = xr.Dataset(
        {
            "ability_mean": (("llm", "dimension"), raw["ability_loc"] @ rotation),
            "ability_sd": (("llm", "dimension"), np.sqrt(np.exp(2 * raw["ability_log_sd"]) @ squared)),
            "loading_mean": (("item", "dimension"), mean_loading),
            "loading_sd": (("item", "dimension"), np.sqrt(np.exp(2 * raw["loading_log_sd"]) @ squared)),
            "intercept_mean": ("item", raw["intercept_loc"]),
            "intercept_sd": ("item", np.exp(raw["intercept_log_sd"])),
            "rotation": (("dimension_raw", "dimension"), rotation),
            **{f"raw_{name}": (("llm", "dimension_raw"), raw[name]) for name in ("ability_loc",)},
            **{f"raw_{name}": (("item", "dimension_raw"), raw[name]) for name in ("loading_loc",)},
            "raw_intercept_loc": ("item", raw["intercept_loc"]),
        },
        coords={
            **{k: coords[k] for k in ("llm", "item", "dimension")},
            "dimension_raw": np.arange(settings.n_dims),
        },
    )
    elbo_group = xr.Dataset(
        {
            "elbo": (("restart", "step"), np.array(elbo)[None]),
            "epoch_seconds": (("restart", "step"), np.array(seconds)[None]),
        },
        coords={"restart": [0], "step": np.arange(len(elbo))},
        attrs={
            "window": 1,
            "tolerance": settings.tolerance,
            "stopping_rule_fired": int(converged),
            "annealing_from_epoch": stopped_at + 1,
            "unit": "epoch",
        },
    )
    groups = {
        "posterior": posterior,
        "sample_stats": xr.Dataset(
            coords={"chain": [0], "draw": np.arange(draws), "restart": ("chain", [0])}
        ),
        "elbo": elbo_group,
        "variational": variational,
    }
    responses = _source_matrix(source)
    if responses is not None:
        groups["observed_data"] = observed_dataset(responses)
    tree = xr.DataTree.from_dict(groups)
    blocks = _block_count(len(source.llms), settings.llm_batch) * _block_count(
        len(source.items), settings.item_batch
    )
    tree.attrs = {
        **provenance(
            method="minibatch_advi",
            sampler="none",
            n_dims=settings.n_dims,
            spec_json=spec.to_json(),
            settings={**asdict(settings), "draws": draws},
            data_hash=responses.data_hash() if responses is not None else _source_hash(source),
            seed=settings.seed,
            restart_seeds=[settings.seed],
            seconds=[float(np.sum(seconds))],
            identification="varimax of the variational mean loadings, sign and order convention",
        ),
        "benchmirt_source": repr(source),
        MODEL_DIFFERENCES_ATTR: json.dumps(model_differences(spec, responses)),
        "benchmirt_converged": int(converged),
        "benchmirt_epochs": len(elbo),
        "benchmirt_blocks_per_epoch": blocks,
    }
    return tree


MODEL_DIFFERENCES_ATTR = "benchmirt_model_differences"
"""Attr of a minibatch fit: JSON list of where its model differs from ``fit_posterior``'s."""


def model_differences(spec: ModelSpec, responses: ResponseMatrix | None) -> list[str]:
    """Where the minibatch model differs from the model :func:`fit_posterior` fits with ``spec``.

    Stored with every minibatch fit (:data:`MODEL_DIFFERENCES_ATTR`) so that a reader of the
    fit, or an analysis that depends on one of these parts, can tell. ``responses`` is the
    fitted data when the source could be materialised (``None``: a streamed source, whose
    subgroups are not known, so the missing offsets are listed).
    """
    differences = []
    if spec.ability.correlation == "whitened":
        differences.append(
            "abilities: independent N(0, sigma^2) per LLM and dimension, centred and standardised "
            "after each epoch (fit_posterior whitens every draw's abilities within the sample)"
        )
    if spec.loading.zero_sum:
        differences.append(
            "loadings: item deviations from the benchmark mean are not constrained to sum to zero"
        )
    subgroups = responses is not None and len(
        set(zip(responses.benchmarks, responses.subgroups, strict=True))
    ) > len(set(responses.benchmarks))
    if subgroups or responses is None:
        differences.append("intercepts: no subgroup offsets (fit_posterior adds one per subgroup)")
    differences.append("intercepts: centred in every benchmark")
    differences.append("response types: binary only")
    return differences


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
