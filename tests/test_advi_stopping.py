"""The ADVI stopping rule and polish phase, on synthetic loss records."""

import numpy as np
import pytensor
import pytest
import xarray as xr

from benchmirt_bayes.inference import advi
from benchmirt_bayes.inference.advi import (
    POLISH_FACTOR,
    TREND_WINDOWS,
    ElboConvergence,
    trend_in_noise_units,
)
from benchmirt_bayes.inference.settings import AdviSettings, FitSettings


def test_trend_is_measured_in_noise_units():
    rng = np.random.default_rng(0)
    noise = rng.normal(0, 30.0, 1000)
    assert abs(trend_in_noise_units(10_000 + noise)) < 0.5
    falling = 10_000 - np.linspace(0, 150.0, 1000) + noise  # falls by 5 noise SDs
    assert trend_in_noise_units(falling) == pytest.approx(5.0, abs=0.5)


def _drive(rule: ElboConvergence, losses: np.ndarray) -> int:
    """Feed ``losses`` to the rule as PyMC would; the step at which it stopped the fit."""
    for step in range(1, losses.size + 1):
        try:
            rule(None, losses[:step], step)
        except StopIteration:
            return step
    return losses.size


def test_search_ends_when_the_trend_is_within_the_noise_then_polishes():
    rng = np.random.default_rng(1)
    steps = np.arange(6000)
    losses = 10_000 + 2_000 * np.exp(-steps / 500) + rng.normal(0, 30.0, steps.size)
    rate = pytensor.shared(0.02)
    rule = ElboConvergence(window=200, polish_steps=400, max_steps=20_000, learning_rate=rate)
    stopped = _drive(rule, losses)
    assert rule.fired and rule.criteria[-1] < 1.0
    assert all(value >= 1.0 for value in rule.criteria[:-1])
    search_end = rule.polish_from
    assert search_end >= TREND_WINDOWS * 200 and stopped == search_end + 400
    # the exponential still fell by more than a noise SD per 1,000 steps until about step 2,300
    assert 2_000 <= search_end <= 3_400
    assert float(rate.get_value()) == pytest.approx(0.02 * POLISH_FACTOR)


def test_budget_ends_the_search_without_firing():
    losses = 10_000 - np.arange(3000, dtype=float)  # still falling steeply
    rule = ElboConvergence(window=200, polish_steps=100, max_steps=2000)
    assert _drive(rule, losses) == 2100 and not rule.fired


def test_relative_rule_and_old_fits_read_back():
    assert AdviSettings().tolerance == 1.0 and AdviSettings(stopping="relative").tolerance == 1e-3
    with pytest.raises(ValueError, match="stopping"):
        AdviSettings(stopping="elbo")
    with pytest.raises(ValueError, match="polish_steps"):
        AdviSettings(polish_steps=-1)
    old = FitSettings.from_dict(
        {
            "n_dims": 2,
            "method": "advi",
            "spec_json": "{}",
            "advi": {"draws": 10, "max_steps": 500, "tolerance": 1e-3, "learning_rate": 0.02, "window": 200},
        }
    )
    assert (old.advi.stopping, old.advi.tolerance, old.advi.polish_steps) == ("relative", 1e-3, 0)


def _fake_runs(monkeypatch, fail_times):
    """Make the one-rate optimisation raise a NaN error ``fail_times`` times, recording rates."""
    rates = []

    def fake(model, *, learning_rate, **kwargs):
        rates.append(learning_rate)
        if len(rates) <= fail_times:
            raise FloatingPointError("NaN occurred in optimization.")
        return advi.AdviResult(xr.Dataset(), xr.Dataset(attrs={"learning_rate": learning_rate}))

    monkeypatch.setattr(advi, "_run_advi_once", fake)
    return rates


def test_a_nan_elbo_reruns_at_a_lower_rate_and_says_so(monkeypatch):
    rates = _fake_runs(monkeypatch, fail_times=1)
    with pytest.warns(RuntimeWarning, match=r"NaN ELBO.*0\.02.*rerunning it at 0\.005"):
        result = advi.run_advi(None, learning_rate=0.02, seed=0)
    assert rates == [0.02, 0.005]
    assert result.elbo.attrs["nan_retries"] == 1
    assert result.elbo.attrs["learning_rate"] == 0.005


def test_a_nan_elbo_at_every_rate_is_one_clear_error(monkeypatch):
    rates = _fake_runs(monkeypatch, fail_times=10)
    with (
        pytest.warns(RuntimeWarning),
        pytest.raises(FloatingPointError, match=r"learning rates 0\.02, 0\.005, 0\.00125.*method='nuts'"),
    ):
        advi.run_advi(None, learning_rate=0.02, seed=0)
    assert len(rates) == advi.NAN_RETRIES + 1
