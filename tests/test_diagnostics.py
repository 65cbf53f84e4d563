import numpy as np
import pandas as pd
import pytest
import xarray as xr

from benchmirt_bayes import check_convergence
from benchmirt_bayes.posterior import relative_change


def constructed_fit(shift_chain: float, n_draw=500, divergences=0, seed=0, capped=False):
    """A DataTree shaped like a NUTS fit, with chain 1 shifted by ``shift_chain``."""
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=(2, n_draw, 5, 2))
    ability[1] += shift_chain
    diverging = np.zeros((2, n_draw), bool)
    diverging[0, :divergences] = True
    energy = rng.normal(size=(2, n_draw)).cumsum(axis=1) * 0.05 + rng.normal(size=(2, n_draw))
    tree = xr.DataTree.from_dict(
        {
            "posterior": xr.Dataset({"ability": (("chain", "draw", "llm", "dimension"), ability)}),
            "sample_stats": xr.Dataset(
                {
                    "diverging": (("chain", "draw"), diverging),
                    "maxdepth_reached": (("chain", "draw"), np.full((2, n_draw), capped)),
                    "energy": (("chain", "draw"), energy),
                }
            ),
        }
    )
    tree.attrs["benchmirt_method"] = "nuts"
    return tree


def test_well_mixed_chains_pass():
    report = check_convergence(constructed_fit(0.0))
    assert report.ok, report.messages
    assert report.table.loc["ability", "max_rhat"] < 1.01
    assert "OK" in str(report) and "<table" in report._repr_html_()


def test_disagreeing_chains_fail_with_a_reason():
    report = check_convergence(constructed_fit(1.0))
    assert not report.ok
    assert any("R-hat" in m for m in report.messages)
    assert report.table.loc["ability", "failing"] == 10


def test_divergences_fail():
    report = check_convergence(constructed_fit(0.0, divergences=3))
    assert not report.ok and report.sampler_checks["divergences"] == 3
    assert any("divergent" in m for m in report.messages)


def test_thresholds_are_arguments():
    fit = constructed_fit(0.0, n_draw=150)
    assert not check_convergence(fit).ok  # ESS below 400
    assert check_convergence(fit, ess_bulk_min=100, ess_tail_min=100).ok


def test_a_deliberate_depth_cap_is_judged_by_rhat_and_ess():
    import json

    fit = constructed_fit(0.0, capped=True)
    report = check_convergence(fit)
    assert not report.ok and any("maximum tree depth" in m for m in report.messages)
    # the automatic large-data path chose the cap: R-hat and ESS decide, the share is reported
    fit.attrs["benchmirt_settings"] = json.dumps(
        {"nuts": {"max_treedepth": 5}, "automatic": [["nuts.max_treedepth", "5 (3,000,000 cells)"]]}
    )
    report = check_convergence(fit)
    assert report.ok, report.messages
    assert report.sampler_checks["treedepth_share"] == 1.0
    assert not check_convergence(fit, max_treedepth_share=0.05).ok


def test_bfmi_is_computed():
    report = check_convergence(constructed_fit(0.0))
    assert 0 < report.sampler_checks["min_bfmi"] < 5


def test_real_nuts_fit(nuts_fit):
    report = check_convergence(nuts_fit)
    assert set(report.table.index) >= {"ability", "loading", "intercept"}
    assert report.table["elements"].sum() > 100
    assert report.sampler_checks["divergences"] >= 0


def test_advi_fit_reports_elbo_convergence(advi_fit):
    report = check_convergence(advi_fit)
    assert report.method == "advi"
    assert list(report.table.columns) == [
        "steps",
        "final_elbo",
        "stopping_criterion",
        "stopping_rule_fired",
        "pareto_k",
        "pareto_k_ok",
    ]
    assert bool(report.table["stopping_rule_fired"].iloc[0]) == report.ok


def test_advi_says_how_good_its_approximation_is(advi_fit):
    """Pareto k̂ of the importance ratios: a narrower q is worse, and the report states the verdict."""
    from benchmirt_bayes.diagnostics.approximation import advi_pareto_k, pareto_k_threshold

    assert pareto_k_threshold(1000) == pytest.approx(2 / 3) and pareto_k_threshold(10**9) == 0.7
    khat = advi_pareto_k(advi_fit, n_samples=400)
    # mean-field ADVI on the hierarchical model: q is far narrower than the posterior (README)
    assert khat[0] > pareto_k_threshold(400)
    narrow = advi_fit.copy()
    elbo = narrow["elbo"].to_dataset()
    narrow["elbo"] = xr.DataTree(elbo.assign(q_sd=elbo["q_sd"] * 0.5))
    assert advi_pareto_k(narrow, n_samples=400)[0] > khat[0]
    report = check_convergence(advi_fit, pareto_k_samples=400)
    assert report.sampler_checks["max_pareto_k"] == pytest.approx(float(khat.max()))
    verdict = "usable" if khat.max() < pareto_k_threshold(400) else "poor"
    assert any(verdict in message for message in report.messages)
    skipped = check_convergence(advi_fit, pareto_k_samples=None)
    assert "pareto_k" not in skipped.table


@pytest.mark.parametrize(
    ("advi", "expected"),
    [
        # the rule checked but the budget ended the search while the loss still fell
        ({"max_steps": 1200, "draws": 20, "tolerance": 1e-6, "polish_steps": 0}, ["still moving"]),
        # the budget ended the search before the rule first checked; the polish ran after it
        (
            {"max_steps": 40, "draws": 10},
            [
                "ended at its step budget, before the stopping rule first checked",
                "then 1000 polish steps ran",
            ],
        ),
    ],
    ids=["still_moving", "budget_below_the_rule"],
)
def test_advi_stopped_early_is_flagged(tiny_sim, advi, expected):
    from benchmirt_bayes import fit_posterior

    fit = fit_posterior(tiny_sim.responses, 2, method="advi", seed=1, progressbar=False, advi=advi)
    report = check_convergence(fit)
    assert not report.ok
    for text in expected:
        assert any(text in m for m in report.messages), (text, report.messages)


def test_relative_change():
    assert np.isnan(relative_change(np.ones(10), 20))
    assert relative_change(np.r_[np.full(10, -100.0), np.full(10, -99.0)], 10) == pytest.approx(1 / 99)


def test_map_fit_is_explained(map_fit):
    report = check_convergence(map_fit)
    assert report.ok and "point estimate" in report.messages[0]
    assert isinstance(report.table, pd.DataFrame)
