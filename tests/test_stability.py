"""Stability across restarts: a stable fit and genuinely unstable ones must be told apart."""

import pytest

from benchmirt_bayes import check_stability, fit_posterior, simulate_benchmirt


@pytest.fixture(scope="module")
def stable_nuts(tiny_sim):
    return fit_posterior(
        tiny_sim.responses,
        2,
        method="nuts",
        restarts=2,
        seed=21,
        progressbar=False,
        nuts={"draws": 200, "tune": 300, "chains": 2},
    )


def test_well_specified_nuts_fit_is_stable(stable_nuts):
    report = check_stability(stable_nuts)
    assert report.stable, report.reasons
    assert report.table["tucker_congruence"].min() > 0.95
    assert report.table["matched_to"].tolist() == report.table.index.get_level_values("dimension").tolist()
    assert report.rhat_between < 1.05
    assert "stable" in report._repr_html_()


@pytest.mark.slow
def test_too_many_dimensions_is_unstable():
    """4 dimensions for 15 LLMs with a 2-dimension truth: the extra dimensions do not come back."""
    data = simulate_benchmirt(scale=0.004, n_llms=15, seed=5).responses
    fit = fit_posterior(data, 4, method="advi", restarts=3, seed=4, progressbar=False, advi={"draws": 100})
    report = check_stability(fit)
    assert not report.stable
    assert any("congruence" in r for r in report.reasons)
    by_dim = report.table["tucker_congruence"].groupby(level="dimension").min()
    assert by_dim[["dim_1", "dim_2"]].min() > 0.95  # the real dimensions are stable
    assert by_dim[["dim_3", "dim_4"]].min() < 0.9


def test_advi_stopped_far_too_early_is_unstable(tiny_sim):
    fit = fit_posterior(
        tiny_sim.responses,
        2,
        method="advi",
        restarts=3,
        seed=6,
        progressbar=False,
        advi={"draws": 100, "max_steps": 40},
    )
    report = check_stability(fit)
    assert not report.stable
    assert report.table["tucker_congruence"].min() < 0.9
    assert any("not judged" in r for r in report.reasons)  # ADVI: R-hat reported, not judged


def test_needs_restarts(advi_fit):
    with pytest.raises(ValueError, match="restarts >= 2"):
        check_stability(advi_fit)
