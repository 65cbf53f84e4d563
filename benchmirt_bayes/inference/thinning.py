"""Keep every ``thin``-th NUTS draw without hiding what happened in the draws dropped.

At the full built-in scale NUTS's trajectories run long enough (about 1.5 half-periods
of a unit-scale direction) that consecutive draws are antithetic for means but
correlated for second moments (lag-1 autocorrelation of squared draws ≈ 0.45), so
the folded R-hat needs more draws than the bulk one. Half-length trajectories kept
every second draw cost the same gradients and decorrelate both (see ARCHITECTURE.md,
"Sampling efficiency").
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from benchmirt_bayes.posterior import energy_bfmi

# statistics that count gradient evaluations: a kept draw carries the cost of its block
SUMMED_STATS = ("n_steps", "tree_size")


def kept_draws(thin: int) -> slice:
    """Indices along ``draw`` of the kept draws: the last of each block of ``thin``."""
    return slice(thin - 1, None, thin)


def thin_sample_stats(stats: xr.Dataset, thin: int) -> xr.Dataset:
    """Per-draw sampler statistics of every iteration, reduced to one row per kept draw.

    Boolean statistics (divergences, tree depth reached) are true for a kept draw when
    they were true anywhere in its block, so no divergence is thinned away; gradient
    counts are summed over the block; every other statistic is the kept draw's own.
    E-BFMI compares consecutive energies, which thinning would break, so it is computed
    on all iterations first and stored per chain as ``bfmi``.

    Parameters
    ----------
    stats
        Statistics with dims ``(chain, draw)``, ``draw`` a multiple of ``thin`` long.
    thin
        Block length.

    Returns
    -------
    xarray.Dataset
        The statistics with ``draw`` ``thin`` times shorter and numbered from 0 (and
        ``bfmi`` when ``energy`` is present).

    """
    if thin == 1:
        return stats
    n_draws = stats.sizes["draw"]
    if n_draws % thin:
        raise ValueError(f"{n_draws} draws cannot be thinned in blocks of {thin}")
    kept = stats.isel(draw=kept_draws(thin))
    out = {}
    for name, var in stats.data_vars.items():
        if name in SUMMED_STATS or var.dtype == bool:
            values = var.transpose("chain", "draw").values
            blocks = values.reshape(values.shape[0], n_draws // thin, thin)
            reduced = blocks.any(axis=-1) if var.dtype == bool else blocks.sum(axis=-1)
            out[name] = (("chain", "draw"), reduced)
        else:
            out[name] = kept[name]
    result = xr.Dataset(out, coords=kept.coords).assign_coords(draw=np.arange(n_draws // thin))
    if "energy" in stats:
        result["bfmi"] = ("chain", energy_bfmi(stats["energy"].transpose("chain", "draw").values))
    return result


# END
