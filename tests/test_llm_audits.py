"""Audits of LLMs and items on planted simulations: paired comparisons, person fit, DIF, miskeyed items.

Reduced scale with effects large enough to be found at that scale; the built-in-scale rates
are measured by benchmarks/audit_calibration.py.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmirt_bayes import (
    AuditPlan,
    compare_llms,
    differential_item_functioning,
    fit_posterior,
    miskeyed_items,
    person_fit,
    score_llm,
    simulate_benchmirt,
)
from benchmirt_bayes.rotations import procrustes, whitened_frame
from benchmirt_bayes.simulation.audit_plants import FOCAL_FAMILY

PLAN = AuditPlan(
    n_pairs=4,
    pair_shifts=((-1.5, 0.0), (-1.0, 0.0), (-0.6, 0.0), (0.0, 0.0)),
    n_contaminated=12,
    contamination_share=0.5,
    n_dif_items=12,
    dif_shift=3.0,
    n_flipped=12,
)


@pytest.fixture(scope="module")
def planted():
    sim = simulate_benchmirt(scale=0.05, seed=3, audits=PLAN)
    fit = fit_posterior(sim.responses, 2, method="advi", seed=1, progressbar=False, advi={"draws": 200})
    return sim, fit


@pytest.fixture(scope="module")
def clean():
    sim = simulate_benchmirt(scale=0.05, seed=4)
    fit = fit_posterior(sim.responses, 2, method="advi", seed=1, progressbar=False, advi={"draws": 200})
    return sim, fit


def _truth_rotation(sim, fit):
    _, true_loading = whitened_frame(sim.truth["ability"].values, sim.truth["loading"].values)
    mean = fit["posterior"]["loading"].mean(("chain", "draw")).sel(item=sim.truth["item"].values).values
    return procrustes(mean, true_loading)


def test_the_simulator_plants_what_it_is_asked_and_records_it(planted):
    sim, _ = planted
    truth = sim.truth
    assert truth.sizes["pair"] == 4 and set(truth["pair_modified"].values) <= set(sim.responses.llms)
    assert int(truth["contaminated"].sum()) == 12 and int(truth["flipped"].sum()) == 12
    assert int((truth["dif_shift"] != 0).sum()) == 12
    meta = sim.responses.llm_metadata()
    assert set(meta.columns) == {"family", "variant", "base_of"}
    modified = meta[meta["variant"] == "modified"]
    assert (modified["base_of"].to_numpy() == truth["pair_base"].values).all()
    # the unplanted parts of a seed are untouched by a plan of nothing
    plain = simulate_benchmirt(scale=0.05, seed=3, audits=AuditPlan())
    assert plain.responses.data_hash() == simulate_benchmirt(scale=0.05, seed=3).responses.data_hash()


def test_paired_comparisons_recover_the_planted_safety_drops(planted):
    sim, fit = planted
    truth = sim.truth
    pairs = list(zip(truth["pair_base"].values, truth["pair_modified"].values, strict=True))
    comparison = compare_llms(fit, pairs)
    rotation = _truth_rotation(sim, fit)
    safety = int(np.argmax(np.abs(rotation[:, 0])))  # the fitted dimension that is the truth's safety
    table = comparison.ability[comparison.ability["dimension"] == f"dim_{safety + 1}"].reset_index(drop=True)
    sign = np.sign(rotation[safety, 0])
    for row, shift in zip(table.itertuples(), truth["pair_shift"].values[:, 0], strict=True):
        if shift <= -0.5:  # the drop's interval excludes 0, on the side the fitted dimension's sign says
            assert (row.upper < 0) if sign > 0 else (row.lower > 0), row
        else:
            assert row.lower < 0 < row.upper, row
    other = comparison.ability[comparison.ability["dimension"] != f"dim_{safety + 1}"]
    assert (other["mean"].abs() < 0.35).all()  # reasoning does not move
    assert set(comparison.scores["group"]) == set(sim.responses.benchmark_names)
    harm = comparison.scores.set_index(["pair", "group"]).loc[(f"{pairs[0][0]} → {pairs[0][1]}", "HarmBench")]
    assert harm["mean"] < -0.05 and harm["upper"] < 0  # the safety drop shows on HarmBench
    assert len(comparison.items) == 4 * 20


def test_an_llm_scored_later_compares_like_a_fitted_one(planted):
    sim, fit = planted
    truth = sim.truth
    base, modified = str(truth["pair_base"].values[0]), str(truth["pair_modified"].values[0])
    answers = sim.responses.data.sel(llm=modified).to_series().dropna()
    scored = score_llm(fit, answers, n_draws=100, samples_per_draw=2, llm="modified, scored later")
    later = compare_llms(fit, base, scored).ability.set_index("dimension")["mean"]
    fitted = compare_llms(fit, base, modified, n_draws=100).ability.set_index("dimension")["mean"]
    np.testing.assert_allclose(later.to_numpy(), fitted.to_numpy(), atol=0.25)
    assert compare_llms(fit, base, scored).ability["b"].iloc[0] == "modified, scored later"
    with pytest.raises(KeyError, match="not in the fit"):
        compare_llms(fit, base, "nobody")


def test_person_fit_flags_contaminated_cells_and_few_clean_ones(planted, clean):
    sim, fit = planted
    table = person_fit(fit, n_draws=60)
    cells = {(a, b) for (a, b), v in sim.truth["contaminated"].to_series().items() if v}
    planted_rows = [(a, b) in cells for a, b in zip(table["llm"], table["group"], strict=True)]
    table["planted"] = planted_rows
    assert table.loc[table["planted"], "aberrant"].mean() >= 0.75
    assert table.loc[~table["planted"], "aberrant"].mean() <= 0.05
    assert table.loc[table["planted"], "lz_mean"].mean() < -2
    # the contamination also shows as a level departure, reported beside the pattern flag
    assert table.loc[table["planted"], "level_shift"].mean() >= 0.75
    assert (table.loc[table["planted"], "level_z"] > 0).all()
    clean_table = person_fit(clean[1], n_draws=60)
    assert clean_table["aberrant"].mean() <= 0.05
    assert {"lz_mean", "p_value", "observed_mean", "expected_mean", "n_items"} <= set(clean_table.columns)


def test_dif_finds_planted_items_and_nothing_on_a_clean_set(planted, clean):
    sim, fit = planted
    planted_items = set(sim.truth["item"].values[sim.truth["dif_shift"].values != 0])
    table = differential_item_functioning(fit, "family", focal=FOCAL_FAMILY)
    assert table.head(len(planted_items))["item"].isin(planted_items).mean() >= 0.8
    flagged = table[table["flagged"]]
    assert len(flagged) >= len(planted_items) // 2 and flagged["item"].isin(planted_items).mean() >= 0.8
    clean_sim, clean_fit = clean
    groups = dict(
        zip(
            clean_sim.responses.llms,
            np.random.default_rng(0).choice(["a", "b"], clean_sim.responses.n_llms),
            strict=True,
        )
    )
    null = differential_item_functioning(clean_fit, groups, focal="a")
    assert null["flagged"].sum() == 0 and null.attrs["two_group"]["a"]["pi0"] > 0.9
    with pytest.raises(KeyError, match="no LLM metadata 'family'"):
        differential_item_functioning(clean_fit, "family")
    with pytest.raises(ValueError, match="at least two groups"):  # A16: one group, nothing to compare
        differential_item_functioning(clean_fit, dict.fromkeys(clean_sim.responses.llms, "a"))


@pytest.mark.slow
def test_miskeyed_items_rank_the_flipped_keys_first_and_flag_nothing_on_a_clean_set(planted, clean):
    sim, fit = planted
    flipped = set(sim.truth["item"].values[sim.truth["flipped"].values])
    table = miskeyed_items(fit)
    assert table.head(len(flipped))["item"].isin(flipped).mean() >= 0.9
    flagged = table[table["flagged"]]
    # the Bayesian FDR at 0.1 bounds the expected false share; one set of ~12 flags may hold 2
    assert len(flagged) >= len(flipped) // 2 and flagged["item"].isin(flipped).mean() >= 0.8
    assert (table.loc[table["item"].isin(flipped), "strong_minus_weak"] < 0).mean() >= 0.9
    # the item's own slope shows more of the reversal than its loading, shrunk towards the group
    reversed_rows = table[table["item"].isin(flipped)]
    assert (reversed_rows["slope_mean"] < reversed_rows["alignment_mean"]).mean() >= 0.8
    assert miskeyed_items(clean[1])["flagged"].sum() <= 1


def test_audit_command_writes_every_table(planted, tmp_path):
    from benchmirt_bayes import save_posterior
    from benchmirt_bayes.cli import main

    sim, fit = planted
    path = save_posterior(fit, tmp_path / "fit.nc")
    meta = sim.responses.llm_metadata().reset_index()
    meta.to_csv(tmp_path / "llms.csv", index=False)
    pair = f"{sim.truth['pair_base'].values[0]}:{sim.truth['pair_modified'].values[0]}"
    out = tmp_path / "audit"
    args = ["audit", str(path), "--out", str(out), "--llm-metadata", str(tmp_path / "llms.csv")]
    assert main([*args, "--group-by", "family", "--pairs", pair, "--draws", "40"]) == 0
    names = {p.name for p in out.iterdir()}
    assert {
        "abilities.csv",
        "person_fit.csv",
        "dif.csv",
        "miskeyed_items.csv",
        "comparison_scores.csv",
    } <= names
    dif = pd.read_csv(out / "dif.csv")
    assert set(dif["focal"]) == {"alpha", "beta", "gamma"}
