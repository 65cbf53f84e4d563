"""Loaders of the real sets in ../shared/data (fail, not skip, under CI=true when missing)."""

import numpy as np
import pytest

from benchmirt_bayes import load_mirt_reference, load_open_llm_leaderboard, load_opencompass, load_xstest
from benchmirt_bayes.data.real_data import load_mirt_coefficients, load_open_llm_leaderboard_reference

from .conftest import shared_path

pytestmark = pytest.mark.realdata


def test_open_llm_leaderboard():
    m = load_open_llm_leaderboard(shared_path("open_llm_leaderboard_v1"))
    assert (m.n_llms, m.n_items) == (2461, 693)
    assert m.missing_share == 0
    counts = m.summary()["items"].to_dict()
    assert counts == {"arc": 100, "gsm8k": 249, "mmlu": 102, "truthfulqa": 136, "winogrande": 106}
    assert "0-hero/Matter-0.1-7B-boost-DPO-preview" in set(m.llms)
    assert len(set(m.subset(benchmarks=["mmlu"]).subgroups)) > 1  # MMLU subjects


def test_open_llm_leaderboard_reference():
    ref = load_open_llm_leaderboard_reference(shared_path("open_llm_leaderboard_v1"), "arc")
    assert {"authors_theta", "authors_theta_se", "full_score", "split"} <= set(ref.columns)
    assert ref["full_score"].between(0, 100).all()


def test_opencompass():
    m = load_opencompass(shared_path("opencompass_12llm"))
    assert (m.n_llms, m.n_items) == (12, 41871)
    summary = m.summary()["items"]
    assert summary["MMLU"] == 14042 and summary["GPQA Diamond"] == 198
    mmlu = m.subset(benchmarks=["MMLU"])
    assert np.nanmean(mmlu.values[3]) == 1.0  # the caveat in the data README


def test_xstest_both_scorings():
    correct = load_xstest(shared_path("xstest"))
    refusal = load_xstest(shared_path("xstest"), scoring="refusal")
    assert (correct.n_llms, correct.n_items) == (5, 450)
    assert (correct.subgroups == "safe").sum() == 250
    assert (correct.subgroups == "contrast_unsafe").sum() == 200
    safe = correct.subgroups == "safe"
    # complied with a safe prompt = correct and not refused
    assert np.array_equal(correct.values[:, safe], 1 - refusal.values[:, safe])
    assert np.array_equal(correct.values[:, ~safe], refusal.values[:, ~safe])
    assert "homonyms" in set(correct.data["category"].values)


@pytest.mark.parametrize(
    ("dataset", "shape"), [("LSAT7", (1000, 5)), ("SAT12", (600, 32)), ("LSAT6", (1000, 5))]
)
def test_mirt_reference(dataset, shape):
    m = load_mirt_reference(shared_path("mirt_reference"), dataset)
    assert (m.n_llms, m.n_items) == shape
    assert m.benchmark_names == [dataset]


def test_mirt_coefficients():
    coef = load_mirt_coefficients(shared_path("mirt_reference"), "LSAT7_1F_2PL")
    assert coef.loc["Item.1", "a1"] == pytest.approx(0.988, abs=1e-3)
    assert coef.loc["Item.5", "d"] == pytest.approx(1.855, abs=1e-3)
