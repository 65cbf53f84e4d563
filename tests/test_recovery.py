"""Recovery tier: real NUTS and ADVI fits on simulated data with known truth (slow)."""

import numpy as np
import pytest

from benchmirt_bayes import check_convergence, fit_posterior, simulate_benchmirt
from benchmirt_bayes.rotations import procrustes, whitened_frame

from .conftest import correlation

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sim():
    return simulate_benchmirt(scale=0.0175, n_llms=100, seed=7)  # 100 LLMs × 606 items


@pytest.fixture(scope="module")
def nuts(sim):
    return fit_posterior(sim.responses, 2, seed=1, progressbar=False)  # the default call


def whitened_truth(truth):
    """The simulation's truth (abilities correlated 0.3) in the default spec's frame.

    Whitening changes no predicted probability (tested in test_identification.py);
    the fit and this truth then differ only by an orthogonal rotation.
    """
    ability, loading = whitened_frame(truth["ability"].values, truth["loading"].values)
    return {"ability": ability, "loading": loading, "intercept": truth["intercept"].values}


def aligned_to_truth(fit, truth):
    post = fit["posterior"]
    rotation = procrustes(post["loading"].mean(("chain", "draw")).values, truth["loading"])
    return {
        "ability": post["ability"].values @ rotation,
        "loading": post["loading"].values @ rotation,
        "intercept": post["intercept"].values,
    }


def test_nuts_recovers_the_truth_with_calibrated_intervals(nuts, sim):
    truths = whitened_truth(sim.truth)
    draws = aligned_to_truth(nuts, truths)
    for name, minimum in (("ability", 0.95), ("loading", 0.90), ("intercept", 0.95)):
        truth = truths[name]
        mean = draws[name].mean(axis=(0, 1))
        if mean.ndim == 1:
            assert correlation(mean, truth) >= minimum, name
        else:
            for k in range(mean.shape[1]):
                assert correlation(mean[:, k], truth[:, k]) >= minimum, (name, k)
        low, high = np.quantile(draws[name], [0.05, 0.95], axis=(0, 1))
        coverage = np.mean((truth >= low) & (truth <= high))
        assert 0.80 <= coverage <= 0.97, (name, coverage)


def test_the_default_call_passes_every_convergence_check(nuts):
    settings = nuts.attrs["benchmirt_settings"]
    assert '"chains": 4' in settings and '"draws": 3000' in settings and '"tune": 1000' in settings
    assert "nuts.draws" in settings  # chosen from the data's size, and said so
    report = check_convergence(nuts)  # every default threshold: R-hat, ESS 400, sampler checks
    assert report.ok, str(report)


def test_nuts_converges_on_identified_quantities(nuts):
    report = check_convergence(
        nuts, var_names=("ability", "loading", "intercept"), ess_bulk_min=100, ess_tail_min=100
    )
    assert report.table["max_rhat"].max() <= 1.01, report.table
    assert report.sampler_checks["divergences"] == 0


def test_advi_agrees_with_nuts_on_abilities(nuts, sim):
    advi = fit_posterior(sim.responses, 2, method="advi", seed=2, progressbar=False, advi={"draws": 500})
    a = nuts["posterior"]["ability"].mean(("chain", "draw")).values
    b = advi["posterior"]["ability"].mean(("chain", "draw")).values
    b = b @ procrustes(b, a)
    for k in range(2):
        assert correlation(a[:, k], b[:, k]) >= 0.98
