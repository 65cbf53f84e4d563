"""The per-item Newton fit and the empirical-Bayes tail probability that the audits share."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit
from scipy.stats import norm

from benchmirt_bayes.analyses.item_regression import item_coefficient, pooled, probability_below
from benchmirt_bayes.model.layout import ResponseLayout


def test_item_coefficient_recovers_a_slope_and_its_standard_error():
    rng = np.random.default_rng(0)
    n_llms, n_items = 400, 3
    x = rng.normal(size=(n_llms, n_items))
    true_slope = np.array([-1.5, 0.0, 1.0])
    base = np.full((n_llms, n_items), 0.3)
    y = (rng.random((n_llms, n_items)) < expit(base + 0.5 + x * true_slope)).astype(float)
    observed = np.ones_like(y, dtype=bool)
    observed[:50, 0] = False  # unobserved cells carry no information
    y[:50, 0] = 1.0
    layout = ResponseLayout.binary(n_items)
    slope, variance = item_coefficient(layout, y, base, {}, observed, x)
    sd = np.sqrt(variance)
    assert np.all(np.abs(slope - true_slope) < 3 * sd)
    assert np.all((sd > 0.05) & (sd < 0.3))
    mean, total_sd = pooled([slope, slope + 0.2], [variance, variance])
    np.testing.assert_allclose(mean, slope + 0.1)
    np.testing.assert_allclose(total_sd, np.sqrt(variance + 0.01))


def test_probability_below_keeps_a_real_outlier_and_shrinks_chance_ones():
    rng = np.random.default_rng(1)
    true = np.concatenate([rng.normal(1.0, 0.3, 2000), np.full(10, -1.5)])
    sd = np.full(true.size, 0.3)
    estimate = true + rng.normal(0.0, sd)
    probability, weights = probability_below(estimate, sd, -0.25)
    assert weights.sum() == pytest.approx(1.0)
    assert probability[-10:].min() > 0.9  # the planted outliers
    assert probability[:2000].max() < 0.5  # the most extreme of 2,000 ordinary items
    # a wide N(0, sd) reading of the same estimates would have put ordinary items high
    naive = norm.cdf((-0.25 - estimate) / sd)
    assert probability[:2000].max() < naive[:2000].max()
