import numpy as np
import pytest

from benchmirt_bayes.analyses.metrics import auc, calibration_table, prediction_metrics, spearman


def test_metrics_on_hand_computed_values():
    y = np.array([1, 0, 1, 0])
    p = np.array([0.9, 0.2, 0.4, 0.6])
    m = prediction_metrics(y, p)
    assert m["accuracy"] == pytest.approx(0.5)
    expected_log_loss = -np.mean(np.log([0.9, 0.8, 0.4, 0.4]))
    assert m["log_loss"] == pytest.approx(expected_log_loss)
    assert m["brier"] == pytest.approx(np.mean([0.01, 0.04, 0.36, 0.36]))
    assert m["mae"] == pytest.approx(np.mean([0.1, 0.2, 0.6, 0.6]))
    # pairs (pos, neg): (0.9,0.2) (0.9,0.6) (0.4,0.2) win; (0.4,0.6) loses -> 3/4
    assert m["auc"] == pytest.approx(0.75)


def test_auc_ties_and_single_class():
    assert auc([1, 0], [0.5, 0.5]) == pytest.approx(0.5)
    assert np.isnan(auc([1, 1], [0.2, 0.3]))


def test_calibration_bins_count_every_cell():
    rng = np.random.default_rng(0)
    p = rng.random(5000)
    y = (rng.random(5000) < p).astype(float)
    table = calibration_table(y, p, n_bins=5)
    assert table["count"].sum() == 5000
    np.testing.assert_allclose(table["observed_rate"], table["predicted_mean"], atol=0.04)


def test_spearman_is_rank_based():
    x = np.arange(10.0)
    assert spearman(x, x**3) == pytest.approx(1.0)
    assert np.isnan(spearman(x, np.ones(10)))


def test_mismatched_inputs_are_refused():
    with pytest.raises(ValueError, match="same shape"):
        prediction_metrics([1, 0], [0.5])
