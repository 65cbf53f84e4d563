"""Recovery of graded, continuous and count data by NUTS at a reduced size (slow tier)."""

import numpy as np
import pytest

from benchmirt_bayes import fit_posterior, simulate_benchmirt
from benchmirt_bayes.model.layout import ResponseLayout

from .conftest import correlation
from .test_recovery import aligned_to_truth, whitened_truth

pytestmark = pytest.mark.slow

TYPES = {
    "BBH": "graded",
    "MMLU-Pro": "graded",
    "IFEval": "graded",
    "WildJailbreak": "continuous",
    "StrongREJECT": "continuous",
    "TrustLLM": "continuous",
    "MATH": "count",
}


@pytest.fixture(scope="module")
def sim():
    # 60 LLMs × 689 items: 367 graded, 78 continuous, 26 count, 218 binary
    return simulate_benchmirt(scale=0.02, n_llms=60, seed=5, response_types=TYPES)


@pytest.fixture(scope="module")
def nuts(sim):
    return fit_posterior(
        sim.responses,
        2,
        method="nuts",
        seed=1,
        progressbar=False,
        nuts={"draws": 300, "tune": 300, "chains": 2},
    )


def coverage(truth, draws):
    low, high = np.quantile(draws, [0.05, 0.95], axis=0)
    return float(np.mean((truth >= low) & (truth <= high)))


def test_abilities_and_loadings_are_recovered_from_mixed_types(nuts, sim):
    truths = whitened_truth(sim.truth)
    draws = aligned_to_truth(nuts, truths)
    for name, minimum in (("ability", 0.95), ("loading", 0.90)):
        flat = draws[name].reshape(-1, *draws[name].shape[2:])
        for k in range(2):
            assert correlation(flat.mean(0)[:, k], truths[name][:, k]) >= minimum, (name, k)
        assert 0.80 <= coverage(truths[name], flat) <= 0.97, name


def test_graded_thresholds_and_continuous_parameters_are_recovered(nuts, sim):
    responses, truth = sim.responses, sim.truth
    post = nuts["posterior"]
    layout = ResponseLayout.from_responses(responses)
    graded = layout.columns["graded"]
    item_of_cut = np.repeat(graded, responses.n_categories[graded] - 1)
    cut_draws = post["cutpoint"].values.reshape(-1, item_of_cut.size)
    intercept_draws = post["intercept"].values.reshape(-1, responses.n_items)
    # thresholds in R mirt's sense: d_k = intercept − cutpoint_k
    threshold_draws = intercept_draws[:, item_of_cut] - cut_draws
    threshold_truth = truth["intercept"].values[item_of_cut] - truth["cutpoint"].values
    assert correlation(threshold_draws.mean(0), threshold_truth) >= 0.95
    assert 0.80 <= coverage(threshold_truth, threshold_draws) <= 0.97
    assert 0.80 <= coverage(truth["cutpoint"].values, cut_draws) <= 0.97
    cutpoints = post["continuous_cutpoints"].values.reshape(-1, 3, 2)
    precision = post["continuous_precision"].values.reshape(-1, 3)
    assert coverage(truth["continuous_cutpoints"].values, cutpoints) >= 0.8
    assert coverage(truth["continuous_precision"].values, precision) >= 0.6
