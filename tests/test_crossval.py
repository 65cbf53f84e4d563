import json

import numpy as np
import pandas as pd
import pytest

from benchmirt_bayes.analyses.heldout import CrossValidation, baseline_predictions, fold_split
from benchmirt_bayes.workflows.crossval import choose_n_dims, cross_validate
from tests.conftest import make_matrix


def test_cell_folds_partition_the_observed_cells(tiny_sim):
    responses = tiny_sim.responses
    tests = [fold_split(responses, "cells", k, 4, seed=1).test for k in range(4)]
    assert np.array_equal(np.sum(tests, axis=0) == 1, responses.observed)
    split = fold_split(responses, "cells", 0, 4, seed=1)
    assert not (split.known & split.test).any()
    assert np.isnan(split.train.values[split.test]).all()


@pytest.mark.parametrize("scheme", ["llms", "items"])
def test_held_out_schemes_hold_out_whole_rows_or_columns(tiny_sim, scheme):
    responses = tiny_sim.responses
    split = fold_split(responses, scheme, 1, 5, seed=2, reveal_share=0.5)
    axis = 0 if scheme == "llms" else 1
    size = responses.observed.shape[axis]
    assert (split.train.n_llms if axis == 0 else split.train.n_items) == size - len(split.held_out)
    held_cells = np.zeros_like(split.test)
    if axis == 0:
        held_cells[split.held_out] = True
    else:
        held_cells[:, split.held_out] = True
    assert not (split.test & ~held_cells).any()  # only held-out rows/columns are tested
    share_tested = split.test[held_cells].sum() / responses.observed[held_cells].sum()
    assert 0.35 < share_tested < 0.65  # the rest is revealed for placing them
    all_held = np.concatenate([fold_split(responses, scheme, k, 5, seed=2).held_out for k in range(5)])
    assert np.array_equal(np.sort(all_held), np.arange(size))


def test_baselines_are_smoothed_group_means():
    responses = make_matrix([[1, 1, 0, 0], [0, 1, 1, 1]], benchmarks=["A", "A", "B", "B"])
    known = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], dtype=bool)
    glob = baseline_predictions(responses, known, "global")
    assert glob[0, 0] == pytest.approx(5 / 7)
    llm = baseline_predictions(responses, known, "llm")
    assert llm[0, 3] == pytest.approx((2 + 0.5) / (3 + 1))
    bench = baseline_predictions(responses, known, "benchmark")
    assert bench[0, 3] == pytest.approx((0 + 0.5) / (1 + 1))
    assert bench[1, 0] == pytest.approx((1 + 0.5) / (2 + 1))


@pytest.mark.slow
def test_cross_validation_table_and_mirt_beats_the_benchmark_mean(small_sim):
    cv = cross_validate(
        small_sim.responses,
        n_dims=(2,),
        folds=2,
        category="subgroup",
        method="advi",
        seed=3,
        executor="serial",
        progressbar=False,
    )
    assert set(cv.table.columns) == {"scheme", "model", "fold", "metric", "benchmark", "value"}
    models = {"global_mean", "llm_mean", "llm_x_subgroup_mean", "llm_x_benchmark_mean", "mirt_1d", "mirt_2d"}
    assert set(cv.table["model"]) == models
    assert set(cv.table["fold"]) == {0, 1}
    wide = cv.wide()
    assert wide.loc["mirt_2d", "accuracy"] > wide.loc["llm_x_benchmark_mean", "accuracy"]
    assert wide.loc["mirt_2d", "log_loss"] < wide.loc["llm_x_benchmark_mean", "log_loss"]
    assert wide.loc["global_mean", "auc"] == pytest.approx(0.5)
    summary = cv.summary()
    assert (summary["lower"] <= summary["mean"]).all() and (summary["n_folds"] == 2).all()
    per_bench = cv.table[(cv.table["metric"] == "spearman") & (cv.table["benchmark"] != "all")]
    assert set(per_bench["benchmark"]) <= set(small_sim.responses.benchmark_names)
    assert cv.calibration.groupby("model")["count"].sum().nunique() == 1  # every model, every cell


@pytest.mark.parametrize("scheme", ["llms", "items"])
def test_held_out_schemes_run_and_beat_the_global_mean(tiny_sim, scheme):
    cv = cross_validate(
        tiny_sim.responses,
        n_dims=(1,),
        folds=2,
        scheme=scheme,
        method="advi",
        seed=1,
        executor="serial",
        progressbar=False,
    )
    wide = cv.wide()
    assert wide.loc["mirt_1d", "log_loss"] < wide.loc["global_mean", "log_loss"]


def test_auto_method_is_nuts_on_small_data_and_advi_on_large_and_says_why(tiny_sim):
    from benchmirt_bayes.inference.fit import resolve_settings
    from benchmirt_bayes.inference.settings import AUTO_NUTS_CELLS, automatic_method
    from benchmirt_bayes.workflows.crossval import fold_fit_request

    assert tiny_sim.responses.n_observed <= AUTO_NUTS_CELLS
    settings = resolve_settings(tiny_sim.responses, 2, method="auto", advi={"draws": 100})
    automatic = dict(settings.automatic)
    assert settings.method == "nuts" and settings.nuts is not None and settings.advi is None
    assert automatic["method"].startswith("'nuts'")
    assert f"{tiny_sim.responses.n_observed:,}" in automatic["method"]
    assert "settings unused" in automatic["advi"]
    assert automatic_method(AUTO_NUTS_CELLS)[0] == "nuts"
    assert automatic_method(AUTO_NUTS_CELLS + 1)[0] == "advi"
    # cross-validation keeps "auto" and the ADVI draws, so that each fold resolves on its own matrix
    _, request = fold_fit_request(tiny_sim.responses, 2)
    request = json.loads(request)
    assert request["method"] == "auto" and request["advi"]["draws"] == 100


def _fake_cv(values_by_dims):
    """A CrossValidation with given per-fold log losses for each n_dims."""
    rows = []
    for d, values in values_by_dims.items():
        for fold, value in enumerate(values):
            rows.append(("llms", f"mirt_{d}d", fold, "log_loss", "all", value))
    table = pd.DataFrame(rows, columns=["scheme", "model", "fold", "metric", "benchmark", "value"])
    return CrossValidation(table, pd.DataFrame())


def test_paired_one_standard_error_rule():
    # folds differ a lot in difficulty (the held-out-LLM scheme); 2 dims win in 4 of 5 folds
    hard = np.array([0.40, 0.55, 0.48, 0.62, 0.35])
    cv = _fake_cv({1: hard + 0.010, 2: hard + np.array([0.0, 0.0, 0.0, 0.0, 0.012]), 3: hard + 0.004})
    choice = choose_n_dims(cv)
    assert choice.n_dims == 2, choice.table
    assert choice.table.loc[1, "wins"] == 1 and choice.table.loc[1, "folds"] == 5
    # the unpaired SE (0.05) would have kept 1 dimension: its mean is 0.0076 above the best
    assert choice.table.loc[1, "difference_to_best"] < choice.table.loc[2, "se"]
    assert not choice.table.loc[1, "within_one_se"] and "paired SE" in choice.rule
    # a difference that changes sign from fold to fold is noise: the smaller model stays
    noisy = _fake_cv({1: hard + np.array([0.012, -0.008, 0.012, -0.008, 0.0]), 2: hard + 0.001})
    noisy_choice = choose_n_dims(noisy)
    assert noisy_choice.table["mean"].idxmin() == 2 and noisy_choice.n_dims == 1
    assert noisy_choice.table.loc[1, "difference_to_best"] == pytest.approx(0.0006)


def test_bad_arguments(tiny_sim):
    with pytest.raises(ValueError, match="scheme"):
        cross_validate(tiny_sim.responses, scheme="rows")
    with pytest.raises(KeyError, match="unknown item coordinate"):
        cross_validate(tiny_sim.responses, category="colour")
    with pytest.raises(TypeError):
        choose_n_dims("data.csv")


def test_psis_loo_on_a_nuts_fit_and_in_the_dimension_table(nuts_fit):
    from benchmirt_bayes.analyses.heldout import psis_loo

    loo = psis_loo(nuts_fit)
    n_cells = int(nuts_fit["observed_data"]["correct"].notnull().sum())
    assert loo["n_cells"] == n_cells
    assert -n_cells * np.log(2) * 1.2 < loo["elpd_loo"] < 0  # better than coin-flipping, roughly
    assert 0 < loo["p_loo"] < n_cells
    choice = choose_n_dims(_fake_cv({1: [0.61, 0.59], 2: [0.49, 0.51]}), fits={2: nuts_fit})
    assert choice.table.loc[2, "elpd_loo"] == pytest.approx(loo["elpd_loo"])
    assert np.isnan(choice.table.loc[1, "elpd_loo"])
