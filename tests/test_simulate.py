import numpy as np
import pytest
import xarray as xr

from benchmirt_bayes import simulate_benchmirt
from benchmirt_bayes.simulation.datasets import STORED_SIMULATION, load_builtin, write_simulated
from benchmirt_bayes.simulation.simulate import DESIGN

from .conftest import correlation


def test_full_scale_matches_the_published_counts():
    sim = simulate_benchmirt()
    m = sim.responses
    assert m.n_llms == 100
    assert 34_000 <= m.n_items <= 34_600
    counts = m.summary()["items"]
    for bench, n in {
        "BBH": 5761,
        "GPQA": 1192,
        "MATH": 1324,
        "MMLU-Pro": 12032,
        "MuSR": 756,
        "IFEval": 541,
    }.items():
        assert counts[bench] == n
    safety = counts.drop(["BBH", "GPQA", "MATH", "MMLU-Pro", "MuSR", "IFEval"])
    assert len(safety) == 10 and 12_000 <= safety.sum() <= 13_500
    assert 0.025 < m.missing_share < 0.035
    assert set(m.subset(benchmarks=["HarmBench"]).subgroups) == {"standard", "contextual", "copyright"}


def test_scale_shrinks_every_subgroup():
    small = simulate_benchmirt(scale=0.01)
    assert 300 < small.responses.n_items < 420
    assert small.responses.summary()["items"].min() >= 4
    with pytest.raises(ValueError, match="scale"):
        simulate_benchmirt(scale=0)


def test_deterministic_by_seed():
    a = simulate_benchmirt(scale=0.01, seed=5)
    b = simulate_benchmirt(scale=0.01, seed=5)
    c = simulate_benchmirt(scale=0.01, seed=6)
    assert a.responses == b.responses
    xr.testing.assert_identical(a.truth, b.truth)
    assert a.responses.data_hash() != c.responses.data_hash()


def test_planted_structure_in_the_truth():
    truth = simulate_benchmirt().truth
    loading = truth["loading"].to_pandas()
    loading["benchmark"] = truth["benchmark"].values
    loading["subgroup"] = truth["subgroup"].values
    means = loading.groupby(["benchmark", "subgroup"])[["safety", "reasoning"]].mean()
    assert means.loc[("BBQ", "ambiguous"), "reasoning"] > 3 * means.loc[("BBQ", "ambiguous"), "safety"]
    assert (means.loc["WMDP", "reasoning"] < -0.5).all()
    hb = means.loc["HarmBench", "safety"]
    assert hb["copyright"] < 0.3 * min(hb["standard"], hb["contextual"])
    wj = means.loc["WildJailbreak"]
    assert wj.loc["harmful", "safety"] > 1 and wj.loc["benign", "reasoning"] > 0.7
    for bench in ("BBH", "MATH", "MMLU-Pro"):
        assert means.loc[(bench, bench), "reasoning"] > 1
    assert len(DESIGN) == 24


def test_planted_structure_is_visible_in_the_responses():
    sim = simulate_benchmirt(scale=0.05, seed=2)
    scores = sim.responses.benchmark_scores()
    ability = sim.truth["ability"].to_pandas()
    assert correlation(scores["MMLU-Pro"], ability["reasoning"]) > 0.8
    assert correlation(scores["HarmBench"], ability["safety"]) > 0.6
    assert correlation(scores["WMDP"], ability["reasoning"]) < -0.5
    assert correlation(scores["BBQ"], ability["reasoning"]) > correlation(scores["BBQ"], ability["safety"])


def test_stored_copy_regenerates_identically(tmp_path):
    stored = load_builtin()
    fresh = write_simulated(tmp_path / "again.nc")
    again = load_builtin(fresh)
    assert stored.responses.data_hash() == again.responses.data_hash()
    np.testing.assert_allclose(stored.truth["loading"].values, again.truth["loading"].values, rtol=1e-6)
    assert STORED_SIMULATION.stat().st_size < 5 * 2**20


def test_an_empty_audit_plan_gives_families_and_the_same_responses():
    from benchmirt_bayes import AuditPlan

    plain = simulate_benchmirt(scale=0.002, n_llms=30, seed=8)
    clean = simulate_benchmirt(scale=0.002, n_llms=30, seed=8, audits=AuditPlan())
    assert np.array_equal(plain.responses.values, clean.responses.values, equal_nan=True)
    assert set(clean.responses.llm_metadata()["family"]) <= {"alpha", "beta", "gamma"}
    assert not clean.truth["flipped"].values.any() and not (clean.truth["dif_shift"].values != 0).any()


def test_contamination_never_touches_the_llms_of_planted_pairs():
    from benchmirt_bayes import AuditPlan

    plan = AuditPlan(n_pairs=10, n_contaminated=40)
    sim = simulate_benchmirt(scale=0.01, seed=20260301, audits=plan)
    cells = sim.truth["contaminated"].to_series()
    contaminated = {llm for llm, _ in cells[cells].index}
    paired = set(sim.truth["pair_base"].values) | set(sim.truth["pair_modified"].values)
    assert len(cells[cells]) == 40 and not contaminated & paired
