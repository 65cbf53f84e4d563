"""NUTS through nutpie with the trace written to disk while it samples.

``pm.sample(nuts_sampler="nutpie")`` keeps nutpie's trace in memory as an Arrow table
and then converts it to NumPy: at the full built-in scale (4 chains × 1,000 draws ×
10^5 quantities) the two copies, plus the unconstrained free variables nutpie stores
whatever ``var_names`` says, came to about 12 GB before any post-processing. Here
nutpie writes its draws to a temporary Zarr store on disk instead; only the variables
the fit keeps, and the per-draw sampler statistics, are read back, once, and the store
is deleted. While it exists the store takes about 2.5 times the kept draws' size on disk,
under ``TMPDIR`` (8 GB at L): nutpie also writes the free variables, such as ``loading_z``,
and the warm-up draws.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from typing import Any

import numpy as np
import pymc as pm
import xarray as xr

from benchmirt_bayes.inference.thinning import kept_draws
from benchmirt_bayes.model.shared_data import shared_observations
from benchmirt_bayes.posterior import kept_variables


def compile_nutpie(
    model: pm.Model, var_names: Sequence[str] | None = None, initvals: dict[str, np.ndarray] | None = None
) -> Any:
    """Compile ``model`` for nutpie (numba back end), keeping ``var_names`` in its trace.

    ``var_names`` defaults to the variables a fit keeps (what :func:`sample_model
    <benchmirt_bayes.inference.fit.sample_model>` reads back).
    ``initvals``: the start of every chain, without jitter; ``None`` uses nutpie's own
    jittered start. With shared data in the model, ``compiled.with_data(name=value)`` gives
    the same compiled model on new data.
    """
    import nutpie

    var_names = kept_variables(model) if var_names is None else var_names
    compile_kwargs: dict[str, Any] = {}
    if initvals is not None:
        # a unit jitter in the unconstrained space would throw the chains far outside
        # a posterior this concentrated
        compile_kwargs = {"initial_points": initvals, "jitter_rvs": set()}
    return nutpie.compile_pymc_model(model, backend="numba", var_names=list(var_names), **compile_kwargs)


def sample_nutpie(
    model: pm.Model,
    var_names: Sequence[str],
    *,
    draws: int,
    tune: int,
    chains: int,
    cores: int,
    seed: int,
    target_accept: float,
    max_treedepth: int,
    initvals: dict[str, np.ndarray] | None,
    progressbar: bool,
    thin: int = 1,
    compiled: Any = None,
    kernel: str = "nuts",
    adaptation: str = "diag",
) -> tuple[xr.Dataset, xr.Dataset]:
    """Sample ``model`` with nutpie's NUTS and return ``(posterior, sample_stats)`` in memory.

    Parameters
    ----------
    model
        The PyMC model.
    var_names
        Variables of the posterior to read back; the rest of nutpie's trace is discarded.
    draws, tune, chains, cores
        Iterations and tuning steps per chain, number of chains, chains run at once.
    seed
        nutpie's seed.
    target_accept, max_treedepth
        NUTS step-size target and tree-depth cap.
    initvals
        Start of every chain (no jitter), e.g. an ADVI mean; ``None`` uses nutpie's own
        jittered start.
    progressbar
        Show nutpie's progress bar.
    thin
        Read back only every ``thin``-th draw of the posterior (straight from the store,
        so the dropped draws never reach memory); the sampler statistics come back for
        every iteration, for :func:`benchmirt_bayes.thinning.thin_sample_stats`.
    compiled
        ``model`` already compiled by :func:`compile_nutpie`; it samples the data ``model``
        holds now (its shared observations, :mod:`benchmirt_bayes.model.shared_data`).
        ``None`` compiles ``model`` here.
    kernel, adaptation
        nutpie's ``sampler`` (``"nuts"`` or ``"mclmc"``) and mass-matrix ``adaptation``.

    Returns
    -------
    tuple of xarray.Dataset
        The posterior, ``draws // thin`` draws per chain, and the per-draw sampler
        statistics, ``draws`` per chain.

    """
    import nutpie

    if compiled is None:
        compiled = compile_nutpie(model, var_names, initvals)
    elif initvals is not None:
        raise ValueError("a precompiled nutpie model carries its own start; initvals must be None")
    else:
        compiled = compiled.with_data(**shared_observations(model))
    with tempfile.TemporaryDirectory(prefix="benchmirt-nutpie-") as folder:
        store = nutpie.zarr_store.LocalStore(prefix=folder)
        trace = nutpie.sample(
            compiled,
            draws=draws,
            tune=max(tune, 1),  # nuts-rs needs at least one tuning step
            chains=chains,
            cores=cores,
            seed=seed,
            save_warmup=False,
            progress_bar=progressbar,
            target_accept=target_accept,
            zarr_store=store,
            sampler=kernel,
            adaptation=adaptation,
            **({"maxdepth": max_treedepth} if kernel == "nuts" else {}),
        )
        posterior = trace["posterior"].to_dataset()[list(var_names)]
        posterior = posterior.isel(draw=kept_draws(thin)).load()
        stats = trace["sample_stats"].to_dataset()
        # the statistics may include per-draw vectors as long as the trace (the
        # unconstrained position); the fit keeps the per-draw scalars
        per_draw = [name for name, var in stats.data_vars.items() if set(var.dims) == {"chain", "draw"}]
        stats = stats[per_draw].load()
        trace.close()
    # nutpie writes its coordinates as NumPy StringDType; the model's are plain labels
    coords = {dim: np.asarray(model.coords[dim]) for dim in posterior.dims if dim in model.coords}
    chain = {"chain": np.arange(chains)}
    posterior = posterior.assign_coords(coords | chain | {"draw": np.arange(draws // thin)})
    return posterior, stats.assign_coords(chain | {"draw": np.arange(draws)})
