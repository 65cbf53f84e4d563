import numpy as np
import pytest

from benchmirt_bayes.analyses.items import rank_items
from tests.conftest import constructed_posterior


@pytest.fixture(scope="module")
def planted():
    """Benchmark A measures dim_1, B measures dim_2; q0..q3 are planted special items in A."""
    rng = np.random.default_rng(0)
    loading = np.vstack([np.tile([1.2, 0.1], (30, 1)), np.tile([0.1, 1.2], (30, 1))])
    loading += 0.1 * rng.standard_normal(loading.shape)
    loading[0] = [3.0, 0.0]  # most informative
    loading[1] = [0.01, 0.01]  # uninformative
    loading[2] = [-1.5, 0.0]  # negatively keyed
    loading[3] = [0.1, 1.8]  # off-dimension for benchmark A
    intercept = 0.3 * rng.standard_normal(60)
    ability = rng.standard_normal((100, 2))
    return constructed_posterior(loading, intercept, ability, ["A"] * 30 + ["B"] * 30, n_draws=60)


def test_flags_find_the_planted_items(planted):
    table = rank_items(planted)
    assert table.loc[table["uninformative"]].index.tolist() == ["q1"]
    assert table.loc[table["negatively_keyed"]].index.tolist() == ["q2"]
    assert table.loc[table["off_dimension"]].index.tolist() == ["q3"]
    assert table.loc["q3", "main_dimension"] == "dim_2" and table.loc["q0", "main_dimension"] == "dim_1"


def test_ranks_intervals_and_top_k(planted):
    table = rank_items(planted, by="information", top_k=1)
    assert table.index[0] == "q0"
    assert table.loc["q0", "p_top_k"] > 0.9
    assert (table["rank_lower"] <= table["rank_mean"]).all() and (
        table["rank_mean"] <= table["rank_upper"]
    ).all()
    assert table.loc["q1", "rank_mean"] == pytest.approx(60, abs=1.5)
    by_dim = rank_items(planted, by="information", dimension="dim_2")
    assert by_dim.index[0] == "q3"  # the largest dim_2 loading, although it sits in benchmark A
    assert (by_dim.head(10)["benchmark"].iloc[1:] == "B").all()


def test_within_benchmark_ranks_restart_at_one(planted):
    table = rank_items(planted, by="discrimination", within="benchmark", top_k=1)
    assert table.groupby("benchmark")["rank_mean"].min().max() < 2
    assert table.loc["q0", "p_top_k"] > 0.9  # highest mdisc in A
    hardest = rank_items(planted, by="difficulty")
    assert hardest["difficulty_mean"].iloc[:5].min() > hardest["difficulty_mean"].iloc[-5:].max()


def test_bad_arguments(planted):
    with pytest.raises(ValueError, match="by must be"):
        rank_items(planted, by="fame")
    with pytest.raises(KeyError, match="unknown dimension"):
        rank_items(planted, dimension="dim_9")
