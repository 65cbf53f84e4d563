import numpy as np
import pytest
import xarray as xr

from benchmirt_bayes.inference.thinning import kept_draws, thin_sample_stats
from benchmirt_bayes.posterior import energy_bfmi


def stats_dataset(n_chains=2, n_draws=6, seed=0):
    rng = np.random.default_rng(seed)
    diverging = np.zeros((n_chains, n_draws), bool)
    diverging[0, 2] = True  # dropped by thin=2 (the kept draws are 1, 3, 5)
    return xr.Dataset(
        {
            "diverging": (("chain", "draw"), diverging),
            "n_steps": (("chain", "draw"), rng.integers(1, 64, (n_chains, n_draws))),
            "step_size": (("chain", "draw"), rng.uniform(0.1, 0.2, (n_chains, n_draws))),
            "energy": (("chain", "draw"), rng.normal(size=(n_chains, n_draws))),
        },
        coords={"chain": np.arange(n_chains), "draw": np.arange(n_draws)},
    )


def test_thinning_keeps_the_last_draw_of_each_block_and_every_divergence():
    stats = stats_dataset()
    thinned = thin_sample_stats(stats, 2)
    assert thinned.sizes == {"chain": 2, "draw": 3}
    assert thinned["draw"].values.tolist() == [0, 1, 2]
    assert thinned["diverging"].values.tolist() == [[False, True, False], [False, False, False]]
    np.testing.assert_array_equal(thinned["step_size"], stats["step_size"].values[:, 1::2])
    steps = stats["n_steps"].values
    np.testing.assert_array_equal(thinned["n_steps"], steps[:, 0::2] + steps[:, 1::2])
    np.testing.assert_allclose(thinned["bfmi"], energy_bfmi(stats["energy"].values))
    assert int(thinned["n_steps"].sum()) == int(steps.sum())  # no gradient goes uncounted


def test_thin_one_changes_nothing_and_uneven_blocks_are_refused():
    stats = stats_dataset()
    assert thin_sample_stats(stats, 1) is stats
    assert list(range(6))[kept_draws(3)] == [2, 5]
    with pytest.raises(ValueError, match="cannot be thinned in blocks of 4"):
        thin_sample_stats(stats, 4)
