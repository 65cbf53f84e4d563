"""`fit_posterior`: one entry point for NUTS, ADVI and MAP, always returning the same DataTree."""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import platform
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pymc as pm
import xarray as xr

from benchmirt_bayes.advi import AdviResult, run_advi
from benchmirt_bayes.batch import ExecutorArg, run_batch
from benchmirt_bayes.errors import MissingExtraError
from benchmirt_bayes.identification import alignment_rotations
from benchmirt_bayes.model import build_model, resolve_likelihood
from benchmirt_bayes.nutpie_run import sample_nutpie
from benchmirt_bayes.responses import ITEM_DIM, LLM_DIM, ResponseMatrix
from benchmirt_bayes.spec import ModelSpec, load_spec
from benchmirt_bayes.thinning import kept_draws, thin_sample_stats

Method = Literal["nuts", "advi", "fullrank_advi", "map"]
Sampler = Literal["nutpie", "numpyro", "pymc"]
NutsInit = Literal["prior", "advi"]
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
)
ROTATED_VARIABLES = ("ability", "loading", "benchmark_loading_mean")
SIGN_CONVENTION = (
    "dimensions ordered by sum of squared loadings (largest first); each dimension's sign makes "
    "the mean loading of the items that load mainly on it positive: positive ability = better "
    "on the items (and benchmarks) that define the dimension"
)
_SAMPLER_EXTRAS = {"nutpie": ("nutpie", "nutpie"), "numpyro": ("numpyro", "jax")}


@dataclass(frozen=True)
class FitSettings:
    """Everything besides the data and the seed that determines a fit (stored in attrs)."""

    n_dims: int
    method: str
    sampler: str
    draws: int
    tune: int
    chains: int
    spec_json: str
    target_accept: float = 0.8
    advi_max_steps: int = 20000
    advi_tolerance: float = 1e-3
    advi_learning_rate: float = 0.02
    advi_window: int = 200
    nuts_init: str = "prior"
    max_treedepth: int = 10
    likelihood: str = "cells"
    thin: int = 1

    @property
    def spec(self) -> ModelSpec:
        """The model spec."""
        return ModelSpec.from_json(self.spec_json)


@dataclass
class RawFit:
    """One fit before identification: raw posterior, sample stats, ELBO record."""

    posterior: xr.Dataset
    sample_stats: xr.Dataset
    elbo: xr.Dataset | None
    seconds: float
    seed: int


def fit_posterior(
    responses: ResponseMatrix,
    n_dims: int = 2,
    *,
    method: Method = "nuts",
    sampler: Sampler = "nutpie",
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    restarts: int = 1,
    random_seed: int | None = None,
    spec: str | Path | ModelSpec | Mapping[str, Any] | None = None,
    progressbar: bool = True,
    target_accept: float = 0.8,
    advi_max_steps: int = 20000,
    advi_tolerance: float = 1e-3,
    advi_learning_rate: float = 0.02,
    nuts_init: NutsInit = "prior",
    max_treedepth: int = 10,
    thin: int = 1,
    likelihood: Literal["auto", "fused", "dense", "cells"] = "cells",
    executor: ExecutorArg = "auto",
    restart_dir: str | Path | None = None,
) -> xr.DataTree:
    """Fit the hierarchical MIRT model and return an identified posterior.

    Parameters
    ----------
    responses
        The data.
    n_dims
        Number of latent dimensions.
    method
        ``"nuts"`` (full MCMC), ``"advi"`` (mean-field), ``"fullrank_advi"`` or
        ``"map"`` (one point, stored as a single draw).
    sampler
        NUTS back end: ``"nutpie"`` (default), ``"numpyro"`` or ``"pymc"``. A
        missing back end raises an error naming the extra to install; there is
        no silent fallback.
    draws, tune, chains
        NUTS draws and tuning steps per chain, and chains per restart. For
        ADVI, ``draws`` is the number of draws taken from the approximation
        (one chain per restart).
    restarts
        Independent fits with different seeds and initialisations; their
        chains are concatenated (coordinate ``restart`` on ``chain``) so that
        :func:`benchmirt_bayes.check_stability` can compare them.
    random_seed
        Seed of everything; ``None`` draws one from the OS and stores it, so
        every fit is reproducible from its attrs.
    spec
        Priors and structure (see :mod:`benchmirt_bayes.spec`).
    progressbar
        Show progress of sampling or optimisation.
    target_accept
        NUTS target acceptance rate (0.8, as PyMC; with whitened abilities the higher 0.9
        used before 2026-11-30 halved ESS per second at S with no divergences either way).
    advi_max_steps, advi_tolerance, advi_learning_rate
        ADVI step budget, relative-ELBO stopping tolerance and Adam rate (also
        used by ``nuts_init="advi"``).
    nuts_init
        Where NUTS chains start. ``"prior"`` (default): the sampler's own start
        (the prior's support point, jittered). ``"advi"``: the posterior mean of
        a mean-field ADVI fit run first in each restart (from that restart's
        own random start); the chains of a restart then start there without
        jitter, which skips the long early adaptation far from the typical set
        at large scale. The ADVI record is kept in the ``elbo`` group.
    max_treedepth
        NUTS tree-depth cap (at most ``2**max_treedepth`` gradient evaluations
        per draw); draws that hit it are counted by
        :func:`benchmirt_bayes.check_convergence`.
    thin
        NUTS only: run ``draws × thin`` iterations per chain and keep every
        ``thin``-th, so that ``draws`` is always the number kept. Divergences
        and tree-depth hits anywhere in a block mark its kept draw, gradient
        counts (``n_steps``) are summed over the block, and E-BFMI is computed
        on every iteration (``bfmi`` per chain). With trees one level shallower,
        ``thin=2`` costs the same gradients and, at the full built-in scale,
        decorrelates squared draws that long trajectories leave correlated
        (see ARCHITECTURE.md, "Sampling efficiency").
    likelihood
        Form of the Bernoulli term (see :func:`benchmirt_bayes.build_model`):
        ``"cells"`` (default), ``"fused"``, ``"dense"`` or ``"auto"`` (when at
        least half the cells are observed: ``"fused"``, or ``"dense"`` with
        ``sampler="numpyro"``, which has no fused kernel; else ``"cells"``).
        The whole-matrix forms are faster per gradient on nearly full
        matrices, the fused one by far at scale. The log density is the same;
        the sampler's trajectory is not bit-identical, because floating-point
        sums run in another order. The resolved form is stored in the attrs.
    executor
        Where restarts run: any ``concurrent.futures.Executor`` (for example a
        Dask client's ``get_executor()``); ``"auto"`` (default) uses a local
        process pool when there are several restarts and the cores allow one
        worker per restart (each NUTS restart uses ``chains`` cores), else runs
        them one after another in this process; ``"serial"`` or ``None`` always
        runs in this process. Results agree for identical seeds (up to BLAS summation order).
    restart_dir
        Folder where every restart is saved as it finishes; a rerun with the
        same settings and seed loads finished restarts instead of refitting.

    Returns
    -------
    xarray.DataTree
        Groups ``posterior`` (``ability (chain, draw, llm, dimension)``,
        ``loading (…, item, dimension)``, ``intercept``, ``difficulty``,
        ``mdisc`` and hyperparameters, all identified), ``sample_stats``,
        ``observed_data`` (the response matrix with item metadata), ``elbo``
        (ADVI only) and attrs with the spec, data hash, seeds, versions and
        method.

    Examples
    --------
    >>> from benchmirt_bayes import simulate_benchmirt, fit_posterior
    >>> sim = simulate_benchmirt(scale=0.02, n_llms=40)
    >>> fit = fit_posterior(sim.responses, n_dims=2, method="advi", random_seed=1)  # doctest: +SKIP

    """
    if not isinstance(responses, ResponseMatrix):
        raise TypeError(f"responses must be a ResponseMatrix, got {type(responses).__name__}")
    if method not in Method.__args__:
        raise ValueError(f"method must be one of {Method.__args__}, got {method!r}")
    if sampler not in Sampler.__args__:
        raise ValueError(f"sampler must be one of {Sampler.__args__}, got {sampler!r}")
    if nuts_init not in NutsInit.__args__:
        raise ValueError(f"nuts_init must be one of {NutsInit.__args__}, got {nuts_init!r}")
    if not isinstance(max_treedepth, int | np.integer) or not 1 <= max_treedepth <= 15:
        raise ValueError(f"max_treedepth must be an integer in 1..15, got {max_treedepth!r}")
    for name, value in (("draws", draws), ("chains", chains), ("restarts", restarts), ("thin", thin)):
        if not isinstance(value, int | np.integer) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if method == "nuts":
        require_sampler(sampler)
    elif thin != 1:
        raise ValueError(f"thin applies to NUTS draws only, not to method={method!r}")
    if random_seed is None:
        random_seed = int(np.random.SeedSequence().generate_state(1)[0])
    spec_obj = load_spec(spec)
    likelihood = resolve_likelihood(responses, likelihood, jax=method == "nuts" and sampler == "numpyro")
    settings = FitSettings(
        n_dims=int(n_dims),
        method=method,
        sampler=sampler if method == "nuts" else "none",
        draws=int(draws) if method != "map" else 1,
        tune=int(tune) if method == "nuts" else 0,
        chains=int(chains) if method == "nuts" else 1,
        spec_json=spec_obj.to_json(),
        target_accept=target_accept,
        advi_max_steps=advi_max_steps,
        advi_tolerance=advi_tolerance,
        advi_learning_rate=advi_learning_rate,
        nuts_init=nuts_init if method == "nuts" else "prior",
        max_treedepth=int(max_treedepth),
        likelihood=likelihood,
        thin=int(thin),
    )
    build_model(responses, settings.n_dims, spec=spec_obj, likelihood=likelihood)  # fail fast on bad settings
    seeds = restart_seeds(random_seed, restarts)
    raw_fits = run_restarts(responses, settings, seeds, progressbar, executor, restart_dir)
    return assemble_posterior(responses, settings, raw_fits, random_seed)


def restart_seeds(random_seed: int, restarts: int) -> list[int]:
    """Independent per-restart seeds derived from one seed (restart 0 uses ``random_seed``)."""
    children = np.random.SeedSequence(random_seed).spawn(max(restarts - 1, 0))
    return [int(random_seed)] + [int(c.generate_state(1)[0]) for c in children]


def require_sampler(sampler: str) -> None:
    """Raise :class:`MissingExtraError` if a NUTS back end is not installed."""
    if sampler in _SAMPLER_EXTRAS:
        package, extra = _SAMPLER_EXTRAS[sampler]
        try:
            importlib.import_module(package)
        except ImportError:
            raise MissingExtraError(package, extra, f"sampler={sampler!r}") from None


# ------------------------------------------------------------------ restarts
@dataclass(frozen=True)
class RestartTask:
    """One restart as a :mod:`benchmirt_bayes.batch` task."""

    settings: FitSettings
    seed: int
    index: int
    progressbar: bool = False

    @property
    def key(self) -> str:
        """File stem of the stored restart."""
        return f"restart_{self.index:03d}_seed_{self.seed}"

    @property
    def fingerprint(self) -> str:
        """Settings and seed: a stored restart is reused only when both match."""
        return json.dumps({"settings": asdict(self.settings), "seed": self.seed}, sort_keys=True)

    def run(self, responses: ResponseMatrix) -> xr.DataTree:
        """Fit once and return the raw (unidentified) fit as a DataTree."""
        return raw_fit_to_tree(fit_once(responses, self.settings, self.seed, self.progressbar))


def raw_fit_to_tree(raw: RawFit) -> xr.DataTree:
    """A :class:`RawFit` as a DataTree (for storage and transport)."""
    groups = {"posterior": raw.posterior, "sample_stats": raw.sample_stats}
    if raw.elbo is not None:
        groups["elbo"] = raw.elbo
    tree = xr.DataTree.from_dict(groups)
    tree.attrs = {"seed": raw.seed, "seconds": raw.seconds}
    return tree


def raw_fit_from_tree(tree: xr.DataTree) -> RawFit:
    """Inverse of :func:`raw_fit_to_tree`."""
    elbo = tree["elbo"].to_dataset() if "elbo" in tree.children else None
    return RawFit(
        tree["posterior"].to_dataset(),
        tree["sample_stats"].to_dataset(),
        elbo,
        float(tree.attrs["seconds"]),
        int(tree.attrs["seed"]),
    )


def run_restarts(
    responses: ResponseMatrix,
    settings: FitSettings,
    seeds: list[int],
    progressbar: bool,
    executor: ExecutorArg,
    restart_dir: str | Path | None,
) -> list[RawFit]:
    """Run (or load) one raw fit per seed on ``executor``, saving each as it finishes."""
    serial = executor is None or executor == "serial" or len(seeds) == 1
    tasks = [RestartTask(settings, seed, i, progressbar and serial) for i, seed in enumerate(seeds)]
    trees = run_batch(
        tasks,
        responses,
        executor=executor,
        results_dir=restart_dir,
        cores_per_task=settings.chains if settings.method == "nuts" else 1,
        fork_safe=settings.sampler != "numpyro",  # JAX is not fork-safe; its chains are vectorised
    )
    return [raw_fit_from_tree(trees[task.key]) for task in tasks]


# ------------------------------------------------------------------ one fit
def fit_once(
    responses: ResponseMatrix, settings: FitSettings, seed: int, progressbar: bool = False
) -> RawFit:
    """One fit with one seed, before identification (runs in worker processes too)."""
    model = build_model(responses, settings.n_dims, spec=settings.spec, likelihood=settings.likelihood)
    start = time.perf_counter()
    elbo = None
    if settings.method == "nuts":
        initvals = None
        if settings.nuts_init == "advi":
            result = _advi(model, settings, "advi", 100, seed, progressbar)
            initvals, elbo = advi_start(model, result.posterior), result.elbo
        posterior, stats = _run_nuts(model, settings, seed, progressbar, initvals)
    elif settings.method in ("advi", "fullrank_advi"):
        result = _advi(model, settings, settings.method, settings.draws, seed, progressbar)
        posterior, elbo = result.posterior, result.elbo
        stats = xr.Dataset(coords={"chain": [0], "draw": np.arange(settings.draws)})
    else:
        posterior = _run_map(model, seed, progressbar)
        stats = xr.Dataset(coords={"chain": [0], "draw": [0]})
    seconds = time.perf_counter() - start
    keep = [v for v in KEPT_VARIABLES if v in posterior]
    return RawFit(_drop_attrs(posterior[keep]), _drop_attrs(stats), elbo, seconds, seed)


def _advi(
    model: pm.Model, settings: FitSettings, method: str, draws: int, seed: int, progressbar: bool
) -> AdviResult:
    return run_advi(
        model,
        method=method,
        draws=draws,
        max_steps=settings.advi_max_steps,
        tolerance=settings.advi_tolerance,
        learning_rate=settings.advi_learning_rate,
        window=settings.advi_window,
        random_seed=seed,
        progressbar=progressbar,
        start=jittered_start(model, seed),
    )


def advi_start(model: pm.Model, posterior: xr.Dataset) -> dict[str, np.ndarray]:
    """Initial values for NUTS: the ADVI posterior mean of every free variable.

    A mean of correlation Cholesky factors is not one, so those take the first
    draw instead.
    """
    start = {}
    for rv in model.free_RVs:
        values = posterior[rv.name]
        if "cholesky" in rv.name:
            start[rv.name] = values.isel(chain=0, draw=0).values
        else:
            start[rv.name] = values.mean(("chain", "draw")).values
    return start


def jittered_start(model: pm.Model, seed: int) -> dict[str, np.ndarray]:
    """A seeded random starting point: one draw of every free variable from its prior.

    Restarts must differ in their initialisation, not only in their random stream:
    from one shared start, ADVI restarts land on the same optimum and say nothing about
    stability.
    """
    free = model.free_RVs
    draws = pm.draw(free, random_seed=np.random.default_rng([seed, 7]))
    return {rv.name: np.asarray(value) for rv, value in zip(free, draws, strict=True)}


def _drop_attrs(ds: xr.Dataset) -> xr.Dataset:
    ds = ds.copy()
    ds.attrs = {}
    return ds


def _run_nuts(
    model: pm.Model,
    settings: FitSettings,
    seed: int,
    progressbar: bool,
    initvals: dict[str, np.ndarray] | None = None,
) -> tuple[xr.Dataset, xr.Dataset]:
    # only what the fit keeps: at L the sampler's raw and z-scored copies would double
    # the trace (4 chains × 1,000 draws × 10^5 quantities is 3.3 GB per copy)
    var_names = [name for name in KEPT_VARIABLES if name in model.named_vars]
    common: dict[str, Any] = {
        "draws": settings.draws * settings.thin,
        "tune": settings.tune,
        "chains": settings.chains,
        "cores": min(settings.chains, os.cpu_count() or 1),
        "target_accept": settings.target_accept,
        "progressbar": progressbar,
    }
    if settings.sampler == "nutpie":
        posterior, stats = sample_nutpie(
            model,
            var_names,
            seed=seed,
            max_treedepth=settings.max_treedepth,
            initvals=initvals,
            thin=settings.thin,
            **common,
        )
        return posterior, thin_sample_stats(stats, settings.thin)
    kwargs: dict[str, Any] = {"initvals": initvals}
    nuts: dict[str, Any] = {"max_treedepth": settings.max_treedepth}
    if settings.sampler == "numpyro":
        nuts = {"chain_method": "vectorized", "max_tree_depth": settings.max_treedepth}
    if initvals is not None:
        # start at the ADVI mean itself, without the usual unit jitter (see sample_nutpie)
        if settings.sampler == "numpyro":
            nuts["jitter"] = False
        else:
            kwargs["init"] = "adapt_diag"
    with model:
        tree = pm.sample(
            var_names=var_names,
            random_seed=seed,
            nuts_sampler=settings.sampler,
            compute_convergence_checks=False,
            nuts=nuts,
            **common,
            **kwargs,
        )
    posterior = tree["posterior"].to_dataset().isel(draw=kept_draws(settings.thin))
    posterior = posterior.assign_coords(draw=np.arange(settings.draws))
    return posterior, thin_sample_stats(tree["sample_stats"].to_dataset(), settings.thin)


def _run_map(model: pm.Model, seed: int, progressbar: bool) -> xr.Dataset:
    with model:
        point = pm.find_MAP(random_seed=seed, progressbar=progressbar, jitter=True)
    variables = {}
    for name in KEPT_VARIABLES:
        if name in point:
            dims = model.named_vars_to_dims.get(name, ())
            variables[name] = (("chain", "draw", *dims), np.asarray(point[name])[None, None])
    coords = {k: np.asarray(v) for k, v in model.coords.items() if k != "cell"}
    return xr.Dataset(variables, coords={"chain": [0], "draw": [0], **coords})


# ---------------------------------------------------------- identification
def identify_posterior(
    posterior: xr.Dataset, *, rotate: bool, reference: np.ndarray | None = None
) -> xr.Dataset:
    """Apply per-draw orthogonal alignment (see :mod:`benchmirt_bayes.identification`).

    Abilities, loadings and benchmark mean loadings are multiplied by the same
    matrix per draw; the LKJ correlation transforms as ``Rᵀ C R``. Adds
    ``difficulty`` and ``mdisc``. ``posterior`` itself is not changed.
    """
    return _identify_in_place(posterior.copy(deep=True), rotate=rotate, reference=reference)


def _identify_in_place(
    posterior: xr.Dataset, *, rotate: bool, reference: np.ndarray | None = None
) -> xr.Dataset:
    """:func:`identify_posterior` that overwrites ``posterior``'s arrays.

    At the full built-in scale a rotated copy of the loadings is 2.2 GB, so the
    assembly of a fit, which owns its draws, rotates them where they are.
    """
    n_chain, n_draw = posterior.sizes["chain"], posterior.sizes["draw"]
    loading = posterior["loading"].transpose("chain", "draw", ITEM_DIM, "dimension").values
    k = loading.shape[-1]
    flat = loading.reshape(n_chain * n_draw, -1, k)
    rotations = alignment_rotations(flat, rotate=rotate, reference=reference)
    rotations = rotations.reshape(n_chain, n_draw, k, k)
    for name in ROTATED_VARIABLES:
        if name in posterior:
            var = posterior[name]
            other = [d for d in var.dims if d not in ("chain", "draw", "dimension")]
            values = var.transpose("chain", "draw", *other, "dimension").values
            values = np.require(values, requirements="W")  # pm.sample's traces can be read-only
            _rotate_draws(values, rotations)
            posterior[name] = (("chain", "draw", *other, "dimension"), values)
    if "ability_correlation" in posterior:
        corr = posterior["ability_correlation"].transpose("chain", "draw", "dimension", "dimension_b")
        rotated = np.einsum("cdka,cdkl,cdlb->cdab", rotations, corr.values, rotations)
        posterior["ability_correlation"] = (("chain", "draw", "dimension", "dimension_b"), rotated)
    loading = posterior["loading"]
    values = loading.values
    mdisc = np.einsum("...k,...k->...", values, values)  # no squared copy of the loadings
    np.sqrt(mdisc, out=mdisc)
    mdisc_dims = [d for d in loading.dims if d != "dimension"]
    posterior["mdisc"] = (mdisc_dims, mdisc)
    intercept = posterior["intercept"].transpose(*mdisc_dims).values
    difficulty = intercept / mdisc
    posterior["difficulty"] = (mdisc_dims, np.negative(difficulty, out=difficulty))
    return posterior


def _rotate_draws(values: np.ndarray, rotations: np.ndarray, block: int = 64) -> None:
    """``values[c, d] ← values[c, d] @ rotations[c, d]`` in place, a block of draws at a time."""
    for chain in range(values.shape[0]):
        for start in range(0, values.shape[1], block):
            part = values[chain, start : start + block]
            part[...] = np.einsum("d...k,dkl->d...l", part, rotations[chain, start : start + block])


# ----------------------------------------------------------------- assembly
def assemble_posterior(
    responses: ResponseMatrix,
    settings: FitSettings,
    raw_fits: list[RawFit],
    random_seed: int,
) -> xr.DataTree:
    """Concatenate restarts, identify, and attach data, stats and provenance.

    The raw fits are consumed: a single restart's draws become the posterior's
    arrays and are identified in place, without a copy.
    """
    posteriors, stats, elbos, restart_of_chain = [], [], [], []
    offset = 0
    for index, raw in enumerate(raw_fits):
        n_chain = raw.posterior.sizes["chain"]
        chains = np.arange(offset, offset + n_chain)
        posteriors.append(raw.posterior.assign_coords(chain=chains))
        stats.append(raw.sample_stats.assign_coords(chain=chains))
        restart_of_chain.extend([index] * n_chain)
        if raw.elbo is not None:
            elbos.append(raw.elbo.expand_dims(restart=[index]))
        offset += n_chain
    # one restart: its draws are used as they are (no concatenated copy) and identified in place
    posterior = xr.concat(posteriors, dim="chain") if len(posteriors) > 1 else posteriors[0]
    sample_stats = xr.concat(stats, dim="chain") if any(s.data_vars for s in stats) else stats[0]
    spec = settings.spec
    posterior = _identify_in_place(posterior, rotate=not spec.is_confirmatory)
    restart_coord = ("chain", np.asarray(restart_of_chain))
    posterior = posterior.assign_coords(restart=restart_coord)
    if "chain" in sample_stats.dims:
        sample_stats = sample_stats.assign_coords(chain=posterior["chain"].values)
        sample_stats = sample_stats.assign_coords(restart=restart_coord)
    groups: dict[str, xr.Dataset] = {
        "posterior": posterior,
        "sample_stats": sample_stats,
        "observed_data": observed_dataset(responses),
    }
    if elbos:
        groups["elbo"] = xr.concat(elbos, dim="restart", join="outer")
    tree = xr.DataTree.from_dict(groups)
    tree.attrs = provenance_attrs(responses, settings, raw_fits, random_seed)
    return tree


def observed_dataset(responses: ResponseMatrix) -> xr.Dataset:
    """The response matrix (float32, NaN = not evaluated) with its item metadata coords."""
    data = responses.data.astype(np.float32).rename("correct")
    for name in responses.item_coords:
        data[name] = data[name].astype(str)
    data[LLM_DIM] = data[LLM_DIM].astype(str)
    data[ITEM_DIM] = data[ITEM_DIM].astype(str)
    return data.to_dataset()


def responses_from_tree(tree: xr.DataTree) -> ResponseMatrix:
    """The :class:`ResponseMatrix` a fit was made on (from its ``observed_data``)."""
    data = tree["observed_data"]["correct"].astype(float)
    return ResponseMatrix(data.drop_attrs(), validate=False)


def _versions() -> dict[str, str]:
    names = ["benchmirt_bayes", "pymc", "pytensor", "arviz", "numpy", "xarray", "nutpie", "numpyro", "jax"]
    versions = {"python": platform.python_version()}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def provenance_attrs(
    responses: ResponseMatrix, settings: FitSettings, raw_fits: list[RawFit], random_seed: int
) -> dict[str, Any]:
    """The attrs that make a fit self-describing and reproducible."""
    settings_dict = asdict(settings)
    return {
        "benchmirt_method": settings.method,
        "benchmirt_sampler": settings.sampler,
        "benchmirt_n_dims": settings.n_dims,
        "benchmirt_spec": settings.spec_json,
        "benchmirt_settings": json.dumps(settings_dict, sort_keys=True),
        "benchmirt_data_hash": responses.data_hash(),
        "benchmirt_random_seed": int(random_seed),
        "benchmirt_restart_seeds": json.dumps([raw.seed for raw in raw_fits]),
        "benchmirt_restarts": len(raw_fits),
        "benchmirt_fit_seconds": json.dumps([round(raw.seconds, 3) for raw in raw_fits]),
        "benchmirt_versions": json.dumps(_versions(), sort_keys=True),
        "benchmirt_identification": (
            "confirmatory pattern + sign convention"
            if settings.spec.is_confirmatory
            else "per-draw orthogonal Procrustes to a pivot, varimax, sign and order convention"
        ),
        "benchmirt_sign_convention": SIGN_CONVENTION,
        "benchmirt_created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def fit_settings_from_attrs(tree: xr.DataTree) -> tuple[FitSettings, int, int]:
    """Recover ``(settings, random_seed, restarts)`` to reproduce a stored fit."""
    raw = json.loads(tree.attrs["benchmirt_settings"])
    return (
        FitSettings(**raw),
        int(tree.attrs["benchmirt_random_seed"]),
        int(tree.attrs["benchmirt_restarts"]),
    )
