import numpy as np
import pandas as pd
import pytest
import xarray as xr

from benchmirt_bayes import ResponseDataError, ResponseMatrix

from .conftest import make_matrix


def test_basic_properties():
    m = make_matrix([[1, 0, np.nan], [0, 1, 1]], benchmarks=["A", "A", "B"])
    assert (m.n_llms, m.n_items, m.n_observed) == (2, 3, 5)
    assert m.missing_share == pytest.approx(1 / 6)
    assert m.benchmark_names == ["A", "B"]
    assert "2 LLMs × 3 items" in repr(m)


def test_scores_by_llm_and_benchmark():
    m = make_matrix([[1, 0, np.nan], [0, 1, 1]], benchmarks=["A", "A", "B"])
    overall = m.llm_scores()
    assert overall.loc["m0", "score"] == pytest.approx(0.5)
    assert overall.loc["m1", "score"] == pytest.approx(2 / 3)
    by_bench = m.benchmark_scores()
    assert by_bench.loc["m0", "A"] == pytest.approx(0.5)
    assert np.isnan(by_bench.loc["m0", "B"])
    assert by_bench.loc["m1", "B"] == 1.0
    with pytest.raises(KeyError, match="unknown item coordinate"):
        m.llm_scores(by="nope")


def test_subset_by_llms_items_benchmarks():
    m = make_matrix([[1, 0, 1], [0, 1, 1]], benchmarks=["A", "A", "B"])
    assert m.subset(benchmarks=["B"]).items.tolist() == ["q2"]
    assert m.subset(llms=["m1"]).n_llms == 1
    assert m.subset(items=["q0", "q2"]).n_items == 2
    with pytest.raises(KeyError, match="unknown benchmark"):
        m.subset(benchmarks=["Z"])


def test_cell_folds_cover_every_observed_cell_once():
    rng = np.random.default_rng(0)
    values = (rng.random((20, 30)) < 0.5).astype(float)
    values[rng.random(values.shape) < 0.1] = np.nan
    values[:, 0] = 1.0
    m = make_matrix(values)
    folds = m.cell_folds(5, seed=42)
    assert (folds[~m.observed] == -1).all()
    counts = np.bincount(folds[m.observed], minlength=5)
    assert counts.sum() == m.n_observed and counts.max() - counts.min() <= 1
    assert (m.cell_folds(5, seed=42) == folds).all()
    assert not (m.cell_folds(5, seed=1) == folds).all()


def test_split_cells_is_seeded_and_hides_only_observed():
    rng = np.random.default_rng(1)
    m = make_matrix((rng.random((30, 40)) < 0.5).astype(float))
    train, test_mask = m.split_cells(0.2, seed=3)
    assert np.isnan(train.values[test_mask]).all()
    assert 0.15 < test_mask.mean() < 0.25
    _, again = m.split_cells(0.2, seed=3)
    assert (again == test_mask).all()


def test_long_and_wide_round_trip():
    m = make_matrix([[1, 0, np.nan], [0, 1, 1]], benchmarks=["A", "A", "B"])
    long = m.to_long()
    assert len(long) == 5 and set(long.columns) >= {"llm", "item", "correct", "benchmark"}
    wide = m.to_wide()
    assert wide.shape == (2, 3)
    items_rows = m.to_wide(orient="items")
    assert list(items_rows.columns[:2]) == ["benchmark", "subgroup"]
    from benchmirt_bayes.data.loaders import from_long_frame

    again = from_long_frame(long)
    assert again == m


def test_filter_items_reports_every_removed_item():
    values = np.zeros((40, 4))
    values[:, 0] = 1  # everyone right
    values[:1, 1] = 1  # 2.5% right
    values[:20, 2] = 1
    values[:30, 3] = 1
    m = make_matrix(values, benchmarks=["A", "A", "B", "B"])
    kept, report = m.filter_items(0.05, 0.95)
    assert kept.items.tolist() == ["q2", "q3"]
    assert report.removed["item"].tolist() == ["q0", "q1"]
    assert set(report.removed["reason"]) == {"share correct > 0.95", "share correct < 0.05"}
    assert "removed 2 item(s), kept 2" in str(report)


def test_hash_changes_with_values_and_ids():
    m = make_matrix([[1, 0], [0, 1]])
    assert m.data_hash() == make_matrix([[1, 0], [0, 1]]).data_hash()
    assert m.data_hash() != make_matrix([[1, 1], [0, 1]]).data_hash()
    assert m.data_hash() != make_matrix([[1, 0], [0, 1]], benchmarks=["A", "B"]).data_hash()


def test_constructor_lists_every_problem():
    da = xr.DataArray(
        np.array([[1, 2.0, np.nan], [0, 0.5, np.nan]]),
        dims=("llm", "item"),
        coords={"llm": ["a", "a"], "item": ["x", "y", "z"], "benchmark": ("item", ["B", None, "B"])},
    )
    with pytest.raises(ResponseDataError) as info:
        ResponseMatrix(da)
    text = str(info.value)
    for fragment in (
        "'subgroup' is missing",
        "without 'benchmark'",
        "duplicate llm ids",
        "outside {0, 1}",
        "items with no observation at all: 'z'",
    ):
        assert fragment in text, fragment
    assert isinstance(info.value, ValueError)


def test_to_netcdf_round_trip(tmp_path):
    from benchmirt_bayes.simulation.datasets import read_response_netcdf

    m = make_matrix([[1, 0, np.nan], [0, 1, 1]], benchmarks=["A", "A", "B"])
    m.to_netcdf(tmp_path / "m.nc")
    back = read_response_netcdf(tmp_path / "m.nc")
    assert back.data_hash() == m.data_hash()
    pd.testing.assert_frame_equal(back.to_wide(), m.to_wide())
