"""`fit_posterior`: one entry point for NUTS, ADVI and MAP, always returning the same DataTree."""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pymc as pm
import pytensor
import xarray as xr

from benchmirt_bayes.batch import ExecutorArg, run_batch
from benchmirt_bayes.checks import check_integer
from benchmirt_bayes.data.responses import ResponseMatrix
from benchmirt_bayes.errors import MissingExtraError
from benchmirt_bayes.inference.advi import AdviResult, run_advi
from benchmirt_bayes.inference.identification import _identify_in_place
from benchmirt_bayes.inference.initialisation import jittered_start, sampler_start, spectral_start
from benchmirt_bayes.inference.nutpie_run import sample_nutpie
from benchmirt_bayes.inference.settings import (
    METHODS,
    AdviSettings,
    FitSettings,
    Method,
    NutsSettings,
    automatic_method,
    automatic_nuts,
    coerce_settings,
)
from benchmirt_bayes.inference.thinning import kept_draws, thin_sample_stats
from benchmirt_bayes.model.pymc_model import build_model, resolve_likelihood
from benchmirt_bayes.model.spec import ModelSpec, load_spec
from benchmirt_bayes.posterior import (
    KEPT_VARIABLES,
    final_elbo,
    kept_variables,
    observed_dataset,
    provenance,
    with_log_likelihood,
)
from benchmirt_bayes.response_types.capped_ceilings import draw_ceilings

_SAMPLER_EXTRAS = {"nutpie": ("nutpie", "nutpie"), "numpyro": ("numpyro", "jax")}


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
    nuts: NutsSettings | Mapping[str, Any] | None = None,
    advi: AdviSettings | Mapping[str, Any] | None = None,
    restarts: int = 1,
    seed: int | None = None,
    spec: str | Path | ModelSpec | Mapping[str, Any] | None = None,
    likelihood: Literal["auto", "fused", "fused64", "dense", "cells"] = "auto",
    progressbar: bool = True,
    executor: ExecutorArg = "auto",
    restart_dir: str | Path | None = None,
    log_likelihood: bool = False,
) -> xr.DataTree:
    """Fit the hierarchical MIRT model and return an identified posterior.

    Parameters
    ----------
    responses
        The data.
    n_dims
        Number of latent dimensions.
    method
        ``"nuts"`` (full MCMC; the default, calibrated at every size), ``"advi"``
        (mean-field), ``"fullrank_advi"``, ``"map"`` (one point, stored as a single draw), or
        ``"auto"``: NUTS up to
        :data:`~benchmirt_bayes.inference.settings.AUTO_NUTS_CELLS` observed cells, where it
        costs about what ADVI does, mean-field ADVI above (the choice and why are in the
        fit's attrs; settings given for the method not chosen are unused).
    nuts
        NUTS settings (:class:`~benchmirt_bayes.NutsSettings`, or a dict of its fields such
        as ``{"draws": 500, "chains": 2}``); only with ``method="nuts"``. With no speed
        settings, the start, tree depth and thinning are chosen from the data's size
        (:func:`~benchmirt_bayes.inference.settings.automatic_nuts`): the configuration the
        README's speed figures measure, recorded in the fit's attrs.
    advi
        ADVI settings (:class:`~benchmirt_bayes.AdviSettings` or a dict of its fields);
        with ``method="advi"``/``"fullrank_advi"``, and with ``method="nuts"`` when the
        NUTS settings say ``init="advi"``.
    restarts
        Independent fits with different seeds and initialisations; their
        chains are concatenated (coordinate ``restart`` on ``chain``) so that
        :func:`benchmirt_bayes.check_stability` can compare them.
    seed
        Seed of everything; ``None`` draws one from the OS and stores it, so
        every fit is reproducible from its attrs.
    spec
        Priors and structure (see :mod:`benchmirt_bayes.model.spec`).
    likelihood
        Form of the likelihood terms (see :func:`benchmirt_bayes.build_model`):
        ``"auto"`` (default: when at least half the cells are observed,
        ``"fused"``, or ``"dense"`` with the numpyro sampler, which has no fused
        kernel; else ``"cells"``), ``"fused"`` (cells in float32), ``"fused64"``,
        ``"dense"`` or ``"cells"``. The log density is the same (``"fused"``'s to about
        1e-8 of its size); the sampler's trajectory is not bit-identical, because
        floating-point sums run in another order. The resolved form is stored in the attrs.
    progressbar
        Show progress of sampling or optimisation.
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
    log_likelihood
        Add a ``log_likelihood`` group (one value per draw and observed cell) so that
        ``az.loo(fit)`` and ``az.compare`` work; for fits where draws × cells fit in
        memory (:func:`benchmirt_bayes.posterior.with_log_likelihood` adds it later).

    Returns
    -------
    xarray.DataTree
        Groups ``posterior`` (``ability (chain, draw, llm, dimension)``,
        ``loading (…, item, dimension)``, ``intercept``, ``difficulty``,
        ``mdisc`` and hyperparameters, all identified), ``sample_stats``,
        ``observed_data`` (the response matrix with item metadata), ``elbo``
        (ADVI only) and attrs with the spec, settings, data hash, seeds and
        versions.

    Examples
    --------
    >>> from benchmirt_bayes import simulate_benchmirt, fit_posterior
    >>> sim = simulate_benchmirt(scale=0.02, n_llms=40)
    >>> fit = fit_posterior(sim.responses, 2, method="advi", advi={"max_steps": 5000})  # doctest: +SKIP

    """
    if not isinstance(responses, ResponseMatrix):
        raise TypeError(f"responses must be a ResponseMatrix, got {type(responses).__name__}")
    check_integer("restarts", restarts)
    settings = resolve_settings(
        responses, n_dims, method=method, nuts=nuts, advi=advi, spec=spec, likelihood=likelihood
    )
    if seed is None:
        seed = int(np.random.SeedSequence().generate_state(1)[0])
    build_model(responses, settings.n_dims, spec=settings.spec, likelihood=settings.likelihood)  # fail fast
    seeds = restart_seeds(seed, restarts)
    raw_fits = run_restarts(responses, settings, seeds, progressbar, executor, restart_dir)
    tree = assemble_posterior(responses, settings, raw_fits, seed)
    return with_log_likelihood(tree) if log_likelihood else tree


def resolve_settings(
    responses: ResponseMatrix,
    n_dims: int,
    *,
    method: str,
    nuts: NutsSettings | Mapping[str, Any] | None = None,
    advi: AdviSettings | Mapping[str, Any] | None = None,
    spec: str | Path | ModelSpec | Mapping[str, Any] | None = None,
    likelihood: str = "auto",
) -> FitSettings:
    """Check a fit's arguments and gather them into the :class:`FitSettings` stored with it.

    ``"auto"`` settings (the likelihood form; NUTS's ``init``, ``max_treedepth`` and
    ``thin``) are resolved here from the data's size and density, and what was chosen, with
    why, is recorded in :attr:`FitSettings.automatic`.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    check_integer("n_dims", n_dims)
    if n_dims >= responses.n_items:
        raise ValueError(
            f"n_dims={n_dims} needs more items than dimensions, and the data have {responses.n_items} items"
        )
    automatic: dict[str, str] = {}
    if method == "auto":
        method, automatic["method"] = automatic_method(responses.n_observed)
        if method != "nuts" and nuts is not None:
            automatic["nuts"] = "settings unused: method 'auto' resolved to ADVI"
            nuts = None
        elif advi is not None and coerce_settings(nuts, NutsSettings, "nuts").init == "prior":
            automatic["advi"] = "settings unused: method 'auto' resolved to NUTS started from the prior"
            advi = None
    if method != "nuts" and nuts is not None:
        raise ValueError(f"nuts settings apply to method='nuts' only, not to method={method!r}")
    nuts_settings = None
    model_spec = load_spec(spec)
    spectral = not model_spec.is_confirmatory and model_spec.anchors == "none"
    if method == "nuts":
        nuts_settings, nuts_notes = automatic_nuts(
            coerce_settings(nuts, NutsSettings, "nuts"), responses.n_observed, spectral
        )
        automatic |= nuts_notes
        if nuts_settings.init == "spectral" and not spectral:
            raise ValueError(
                "nuts init='spectral' starts from an unrotated SVD solution, which a confirmatory "
                "or anchored spec does not allow; use init='advi' or 'prior'"
            )
    uses_advi = method in ("advi", "fullrank_advi") or (
        nuts_settings is not None and nuts_settings.init == "advi"
    )
    if not uses_advi and advi is not None:
        if "nuts.init" not in automatic:
            raise ValueError(
                f"advi settings apply to ADVI fits and NUTS with init='advi', not to method={method!r}"
            )
        automatic["advi"] = f"settings unused: NUTS init resolved to {automatic['nuts.init']}"
        advi = None
    advi_settings = coerce_settings(advi, AdviSettings, "advi") if uses_advi else None
    if nuts_settings is not None:
        require_sampler(nuts_settings.sampler)
    jax = nuts_settings is not None and nuts_settings.sampler == "numpyro"
    form = resolve_likelihood(responses, likelihood, jax=jax, spec=model_spec)
    if likelihood == "auto":
        share = responses.n_observed / responses.values.size
        automatic["likelihood"] = f"{form!r} ({share:.0%} of cells observed)"
    if method != "nuts" and model_spec.intercept.noncentered == "auto":
        # the funnel that "auto" avoids is NUTS's; the optimisers' figures were measured centred
        model_spec = model_spec.with_overrides({"name": model_spec.name, "intercept": {"noncentered": False}})
        automatic["intercept.noncentered"] = f"False (method {method!r}: 'auto' non-centres for NUTS only)"
    return FitSettings(
        n_dims=int(n_dims),
        method=method,
        spec_json=model_spec.to_json(),
        likelihood=form,
        nuts=nuts_settings,
        advi=advi_settings,
        automatic=tuple(sorted(automatic.items())),
    )


def restart_seeds(seed: int, restarts: int) -> list[int]:
    """Independent per-restart seeds derived from one seed (restart 0 uses ``seed``)."""
    children = np.random.SeedSequence(seed).spawn(max(restarts - 1, 0))
    return [int(seed)] + [int(c.generate_state(1)[0]) for c in children]


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
        return json.dumps({"settings": self.settings.to_dict(), "seed": self.seed}, sort_keys=True)

    def run(self, responses: ResponseMatrix) -> xr.DataTree:
        """Fit once and return the raw (unidentified) fit as a DataTree."""
        return raw_fit_to_tree(fit_once(responses, self.settings, self.seed, self.progressbar, self.index))


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
        cores_per_task=settings.chains,
        fork_safe=settings.sampler != "numpyro",  # JAX is not fork-safe; its chains are vectorised
    )
    return [raw_fit_from_tree(trees[task.key]) for task in tasks]


# ------------------------------------------------------------------ one fit
def fit_once(
    responses: ResponseMatrix, settings: FitSettings, seed: int, progressbar: bool = False, restart: int = 0
) -> RawFit:
    """One fit with one seed, before identification (runs in worker processes too).

    The first restart starts ADVI and MAP where ``AdviSettings.init`` says (the spectral
    solution by default); later restarts start from prior draws, so that restarts explore
    independently and :func:`~benchmirt_bayes.check_stability` compares separate searches.

    PyTensor's numba back end (the default linker, and nutpie's) compiles with ``fastmath``
    unless told otherwise; a function compiled fresh and the same function loaded from the
    compile cache then round differently (about 1e-11 in the log density, after which the
    chains part), so the same seed gave other draws on a cold cache. Fits compile without
    it: the same seed gives the same draws, cold or warm, at no measured cost in speed.
    The package's own kernels keep ``fastmath`` (their loops vectorise only with it); they
    sum in loops that store nothing, so their results do not depend on where their arrays
    land in memory (which differs between chains, runs and caches), and fits with floors or
    ceilings repeat too.
    """
    with pytensor.config.change_flags(numba__fastmath=False):
        return _fit_once(responses, settings, seed, progressbar, restart)


def _fit_once(
    responses: ResponseMatrix, settings: FitSettings, seed: int, progressbar: bool, restart: int
) -> RawFit:
    model = build_model(responses, settings.n_dims, spec=settings.spec, likelihood=settings.likelihood)
    return sample_model(model, responses, settings, seed, progressbar=progressbar, restart=restart)


def sample_model(
    model: pm.Model,
    responses: ResponseMatrix,
    settings: FitSettings,
    seed: int,
    *,
    progressbar: bool = False,
    restart: int = 0,
    nutpie_model: Any = None,
) -> RawFit:
    """Run the fit's method on a built ``model`` of ``responses`` (no identification).

    :func:`fit_once` builds the model and calls this; a caller that fits many data sets of
    one shape (simulation-based calibration) builds one model with shared observations
    (:mod:`benchmirt_bayes.model.shared_data`), sets each data set into it and passes the
    nutpie model compiled from it once (:func:`~benchmirt_bayes.inference.nutpie_run.compile_nutpie`)
    as ``nutpie_model``; ``responses`` must be the data set the model holds.
    """
    if nutpie_model is not None and (settings.nuts is None or settings.nuts.sampler != "nutpie"):
        sampler = settings.nuts.sampler if settings.nuts is not None else settings.method
        raise ValueError(f"a compiled nutpie model was given, but this fit samples with {sampler!r}")
    # where ADVI and MAP start: the configured start for the first restart, prior draws after
    configured = settings.advi.init if settings.advi is not None else "spectral"
    init = configured if restart == 0 else "prior"
    start = time.perf_counter()
    elbo = None
    if settings.nuts is not None:
        initvals = None
        if settings.nuts.init == "advi":
            result = _advi(model, responses, settings, "advi", 100, seed, progressbar, init)
            initvals, elbo = advi_start(model, result.posterior), result.elbo
        elif settings.nuts.init == "spectral":
            initvals = sampler_start(model, responses, settings.n_dims, seed, restart)
        posterior, stats = _run_nuts(model, settings.nuts, seed, progressbar, initvals, nutpie_model)
    elif settings.method in ("advi", "fullrank_advi"):
        result = _advi(
            model, responses, settings, settings.method, settings.advi.draws, seed, progressbar, init
        )
        posterior, elbo = result.posterior, result.elbo
        stats = xr.Dataset(coords={"chain": [0], "draw": np.arange(settings.advi.draws)})
    else:
        posterior = _run_map(
            model, optimisation_start(model, responses, settings, init, seed), seed, progressbar
        )
        stats = xr.Dataset(coords={"chain": [0], "draw": [0]})
    seconds = time.perf_counter() - start
    keep = [v for v in KEPT_VARIABLES if v in posterior]
    return RawFit(_drop_attrs(posterior[keep]), _drop_attrs(stats), elbo, seconds, seed)


def optimisation_start(
    model: pm.Model, responses: ResponseMatrix, settings: FitSettings, init: str, seed: int
) -> dict[str, np.ndarray]:
    """Where ADVI or MAP starts: the spectral solution (exploratory specs) or a prior draw."""
    spec = settings.spec
    if init == "spectral" and not spec.is_confirmatory and spec.anchors == "none":
        return spectral_start(model, responses, settings.n_dims, seed)
    return jittered_start(model, seed)


def _advi(
    model: pm.Model,
    responses: ResponseMatrix,
    settings: FitSettings,
    method: str,
    draws: int,
    seed: int,
    progressbar: bool,
    first_init: str,
) -> AdviResult:
    """ADVI from ``first_init`` (and ``starts − 1`` prior draws); the best final ELBO wins."""
    advi = settings.advi
    results = []
    for start in range(advi.starts):
        start_seed = seed if start == 0 else int(np.random.SeedSequence([seed, start]).generate_state(1)[0])
        init = first_init if start == 0 else "prior"
        result = run_advi(
            model,
            method=method,
            draws=draws,
            max_steps=advi.max_steps,
            stopping=advi.stopping,
            tolerance=advi.tolerance,
            polish_steps=advi.polish_steps,
            learning_rate=advi.learning_rate,
            window=advi.window,
            seed=start_seed,
            progressbar=progressbar,
            start=optimisation_start(model, responses, settings, init, start_seed),
        )
        result.elbo.attrs["start"] = init
        results.append(result)
    if len(results) == 1:
        return results[0]
    finals = [final_elbo(r.elbo, advi.window) for r in results]
    best = results[int(np.argmax(finals))]
    best.elbo.attrs["starts_final_elbo"] = json.dumps([round(f, 3) for f in finals])
    return best


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


def _drop_attrs(ds: xr.Dataset) -> xr.Dataset:
    ds = ds.copy()
    ds.attrs = {}
    return ds


def _run_nuts(
    model: pm.Model,
    settings: NutsSettings,
    seed: int,
    progressbar: bool,
    initvals: dict[str, np.ndarray] | None = None,
    nutpie_model: Any = None,
) -> tuple[xr.Dataset, xr.Dataset]:
    # only what the fit keeps: at L the sampler's raw and z-scored copies would double
    # the trace (4 chains × 1,000 draws × 10^5 quantities is 3.3 GB per copy)
    var_names = kept_variables(model)
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
            compiled=nutpie_model,
            kernel=settings.kernel,
            adaptation=settings.adaptation,
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


def _run_map(model: pm.Model, start: dict[str, np.ndarray], seed: int, progressbar: bool) -> xr.Dataset:
    with model:
        point = pm.find_MAP(start=start, random_seed=seed, progressbar=progressbar)
    variables = {}
    for name in KEPT_VARIABLES:
        if name in point:
            dims = model.named_vars_to_dims.get(name, ())
            variables[name] = (("chain", "draw", *dims), np.asarray(point[name])[None, None])
    coords = {k: np.asarray(v) for k, v in model.coords.items() if k != "cell"}
    return xr.Dataset(variables, coords={"chain": [0], "draw": [0], **coords})


# ----------------------------------------------------------------- assembly
def assemble_posterior(
    responses: ResponseMatrix | None,
    settings: FitSettings,
    raw_fits: list[RawFit],
    seed: int,
    *,
    data_hash: str | None = None,
) -> xr.DataTree:
    """Concatenate restarts, identify, and attach data, stats and provenance.

    The raw fits are consumed: a single restart's draws become the posterior's
    arrays and are identified in place, without a copy. ``responses`` is ``None`` for data
    that never was one matrix in memory (a streamed source): the tree then has no
    ``observed_data`` and ``data_hash`` names the data.
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
    broken = [name for name, values in posterior.data_vars.items() if not np.isfinite(values.values).all()]
    if broken:
        raise FloatingPointError(
            f"the sampler returned non-finite draws of {', '.join(broken)} (settings: {settings.method}, "
            f"{settings.nuts or settings.advi}); the chains did not settle: run longer or use the defaults"
        )
    posterior = _identify_in_place(posterior, rotate=not spec.is_confirmatory)
    if responses is not None:
        posterior = draw_ceilings(posterior, responses, seed)
    restart_coord = ("chain", np.asarray(restart_of_chain))
    posterior = posterior.assign_coords(restart=restart_coord)
    if "chain" in sample_stats.dims:
        sample_stats = sample_stats.assign_coords(chain=posterior["chain"].values)
        sample_stats = sample_stats.assign_coords(restart=restart_coord)
    groups: dict[str, xr.Dataset] = {"posterior": posterior, "sample_stats": sample_stats}
    if responses is not None:
        groups["observed_data"] = observed_dataset(responses)
    if elbos:
        groups["elbo"] = xr.concat(elbos, dim="restart", join="outer")
    tree = xr.DataTree.from_dict(groups)
    tree.attrs = provenance_attrs(responses, settings, raw_fits, seed, data_hash=data_hash)
    return tree


def provenance_attrs(
    responses: ResponseMatrix | None,
    settings: FitSettings,
    raw_fits: list[RawFit],
    seed: int,
    *,
    data_hash: str | None = None,
) -> dict[str, Any]:
    """The attrs that make a fit self-describing and reproducible."""
    if data_hash is None:
        data_hash = responses.data_hash()
    return provenance(
        method=settings.method,
        sampler=settings.sampler,
        n_dims=settings.n_dims,
        spec_json=settings.spec_json,
        settings=settings.to_dict(),
        data_hash=data_hash,
        seed=seed,
        restart_seeds=[raw.seed for raw in raw_fits],
        seconds=[raw.seconds for raw in raw_fits],
        identification=(
            "confirmatory pattern + sign convention"
            if settings.spec.is_confirmatory
            else "per-draw orthogonal Procrustes to a pivot, varimax, sign and order convention"
        ),
    )


def fit_settings_from_attrs(tree: xr.DataTree) -> tuple[FitSettings, int, int]:
    """Recover ``(settings, seed, restarts)`` to reproduce a stored fit."""
    return (
        FitSettings.from_json(tree.attrs["benchmirt_settings"]),
        int(tree.attrs["benchmirt_random_seed"]),
        int(tree.attrs["benchmirt_restarts"]),
    )
