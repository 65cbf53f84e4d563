import numpy as np
import pymc as pm
import pytensor
import pytest

from benchmirt_bayes import build_model, load_spec
from benchmirt_bayes.model.pymc_model import whiten
from benchmirt_bayes.response_types import RESPONSE_TYPES
from benchmirt_bayes.workflows.sbc import SbcSetting, sbc_design


def test_variables_and_dims(tiny_sim):
    model = build_model(tiny_sim.responses, 2, likelihood="auto")
    dims = model.named_vars_to_dims
    assert dims["ability"] == ("llm", "dimension")
    assert dims["loading"] == ("item", "dimension")
    assert dims["intercept"] == ("item",)
    assert dims["benchmark_loading_mean"] == ("benchmark", "dimension")
    assert dims["benchmark_loading_spread"] == ("benchmark",)
    assert "subgroup_intercept_offset" in model.named_vars  # HarmBench etc. have subgroups
    assert model.benchmirt_likelihood == "fused"  # tiny_sim is nearly full
    assert model["correct"].eval().shape == tiny_sim.responses.values.shape
    cells = build_model(tiny_sim.responses, 2, likelihood="cells")
    assert cells["correct"].eval().shape == (tiny_sim.responses.n_observed,)
    assert "llm" in model.coords and "model" not in model.coords


def test_auto_likelihood_form_follows_the_observed_share(tiny_sim):
    values = tiny_sim.responses.values.copy()
    values[np.random.default_rng(0).random(values.shape) < 0.6] = np.nan
    sparse = tiny_sim.responses.with_values(values)
    assert build_model(sparse, 2, likelihood="auto").benchmirt_likelihood == "cells"
    assert build_model(tiny_sim.responses, 2).benchmirt_likelihood == "fused"  # the default: auto
    with pytest.raises(ValueError, match="likelihood must be"):
        build_model(tiny_sim.responses, 2, likelihood="long")


@pytest.mark.parametrize("likelihood", ["dense", "fused", "fused64", "cells"])
def test_likelihood_matches_a_hand_written_one(tiny_sim, likelihood):
    responses = tiny_sim.responses
    values = responses.values.copy()
    values[np.random.default_rng(1).random(values.shape) < 0.1] = np.nan  # some unobserved cells
    responses = responses.with_values(values)
    model = build_model(responses, 2, likelihood=likelihood)
    point = model.initial_point(random_seed=1)
    rng = np.random.default_rng(0)
    point = {k: v + rng.normal(0, 0.3, size=np.shape(v)) for k, v in point.items()}
    outputs = [
        *model.replace_rvs_by_values([model["ability"], model["loading"], model["intercept"]]),
        model.logp(vars=[model["correct"]], sum=True),
    ]
    fn = pytensor.function(model.value_vars, outputs, on_unused_input="ignore")
    ability, loading, intercept, logp = fn(*[point[v.name] for v in model.value_vars])
    logits = ability @ loading.T + intercept
    y = responses.values
    mask = responses.observed
    expected = np.sum((y * logits - np.logaddexp(0, logits))[mask])
    # "fused" computes each cell in float32 (its documented bound: 1e-7 of the total)
    assert logp == pytest.approx(expected, rel=1e-7 if likelihood == "fused" else 1e-9)


def test_abilities_sum_to_zero_over_llms(tiny_sim):
    model = build_model(tiny_sim.responses, 3)
    draw = pm.draw(model["ability"], random_seed=1)
    assert draw.shape == (tiny_sim.responses.n_llms, 3)
    np.testing.assert_allclose(draw.sum(axis=0), 0, atol=1e-9)


@pytest.mark.parametrize("n_dims", [1, 2, 3])
def test_default_abilities_are_whitened_within_the_sample(tiny_sim, n_dims):
    model = build_model(tiny_sim.responses, n_dims)
    for seed in (1, 2):
        draw = pm.draw(model["ability"], random_seed=seed)
        covariance = np.cov(draw, rowvar=False).reshape(n_dims, n_dims)
        np.testing.assert_allclose(covariance, np.eye(n_dims), atol=1e-9)


@pytest.mark.parametrize("n_dims", [2, 3])
def test_whitening_is_rotation_equivariant(n_dims):
    rng = np.random.default_rng(3)
    raw = rng.normal(size=(40, n_dims)) @ rng.normal(size=(n_dims, n_dims))
    raw -= raw.mean(axis=0)
    rotation = np.linalg.qr(rng.normal(size=(n_dims, n_dims)))[0]
    x = pytensor.tensor.matrix("x")
    whitened = pytensor.function([x], whiten(x, n_dims))
    np.testing.assert_allclose(whitened(raw @ rotation), whitened(raw) @ rotation, atol=1e-10)
    # the symmetric inverse square root, not any other whitening
    values, vectors = np.linalg.eigh(np.cov(raw, rowvar=False))
    np.testing.assert_allclose(whitened(raw), raw @ (vectors / np.sqrt(values)) @ vectors.T, atol=1e-10)


def test_one_dimension_is_a_2pl(tiny_sim):
    model = build_model(tiny_sim.responses, 1, spec="2pl")
    assert model.coords["dimension"] == ("dim_1",)


def test_confirmatory_pattern_zeros_loadings(tiny_sim):
    spec = load_spec("confirmatory_safety_reasoning")
    model = build_model(tiny_sim.responses, 2, spec=spec)
    loading = pm.draw(model["loading"], random_seed=2)
    bench = tiny_sim.responses.benchmarks
    dims = list(model.coords["dimension"])
    assert dims == ["safety", "reasoning"]
    assert np.all(loading[bench == "MATH", dims.index("safety")] == 0)
    assert np.all(loading[bench == "HarmBench", dims.index("reasoning")] == 0)
    assert np.all(loading[bench == "BBQ"] != 0)  # unlisted: loads on both
    corr = pm.draw(model["ability_correlation"], random_seed=2)
    np.testing.assert_allclose(np.diag(corr), 1.0)
    with pytest.raises(ValueError, match="defines 2 dimensions"):
        build_model(tiny_sim.responses, 3, spec=spec)


def test_anchored_identification_option(tiny_sim):
    model = build_model(tiny_sim.responses, 2, spec={"identification": {"anchors": "auto"}})
    anchors = model.benchmirt_anchors
    assert anchors.kind == "benchmark" and len(anchors.codes) == 2
    mean = pm.draw(model["benchmark_loading_mean"], random_seed=3)
    block = mean[anchors.codes]
    assert block[0, 1] == 0 and block[0, 0] > 0 and block[1, 1] > 0
    named = build_model(tiny_sim.responses, 2, spec={"identification": {"anchors": ["HarmBench", "MATH"]}})
    assert named.benchmirt_anchors.names == ["HarmBench", "MATH"]


def test_bad_arguments(tiny_sim):
    with pytest.raises(ValueError, match="n_dims"):
        build_model(tiny_sim.responses, 0)
    with pytest.raises(TypeError, match="ResponseMatrix"):
        build_model(tiny_sim.responses.values, 2)


def test_subgroup_offsets_sum_to_zero_within_each_benchmark(tiny_sim):
    model = build_model(tiny_sim.responses, 2)
    keys = np.array(model.coords["subgroup_key"])
    bench = np.array([k.split("/")[0] for k in keys])
    for seed in range(3):
        offset = pm.draw(model["subgroup_intercept_offset"], random_seed=seed)
        for name in np.unique(bench):
            assert abs(offset[bench == name].sum()) < 1e-10
        assert np.abs(offset[bench == "HarmBench"]).max() > 0


@pytest.mark.parametrize("spec", ["exploratory", "confirmatory_safety_reasoning"])
def test_zero_sum_loadings_average_to_their_benchmark_mean(tiny_sim, spec):
    model = build_model(tiny_sim.responses, 2, spec=spec)
    names = list(model.coords["benchmark"])
    codes = np.array([names.index(b) for b in tiny_sim.responses.benchmarks])
    for seed in (1, 2):
        loading, mean = pm.draw([model["loading"], model["benchmark_loading_mean"]], random_seed=seed)
        averages = np.stack([loading[codes == b].mean(axis=0) for b in range(codes.max() + 1)])
        pattern = averages != 0  # confirmatory zeros stay zero
        np.testing.assert_allclose(averages[pattern], mean[pattern], atol=1e-10)
        assert loading.std() > 0.1  # items still differ within their benchmark
    free = build_model(tiny_sim.responses, 2, spec={"loading": {"zero_sum": False}})
    loading, mean = pm.draw([free["loading"], free["benchmark_loading_mean"]], random_seed=1)
    assert np.abs(loading[codes == 0].mean(axis=0) - mean[0]).max() > 1e-3


def test_auto_intercepts_are_centred_in_large_benchmarks_and_the_same_model(tiny_sim, monkeypatch):
    """'auto' centres the intercepts of benchmarks with ≥ 20 items (each answered by enough
    LLMs) only; the model is unchanged.

    With the intercepts fixed, the non-centred z-scores are a change of variables: the log
    density differs from the centred model's by the log Jacobian ``Σ log spread_b`` over the
    non-centred items, and by nothing else.
    """
    from benchmirt_bayes.model import spec as spec_module
    from benchmirt_bayes.model.spec import CENTRED_INTERCEPT_ITEMS, noncentred_benchmarks

    responses = tiny_sim.responses
    counts = responses.summary()["items"]
    assert (counts >= CENTRED_INTERCEPT_ITEMS).any() and (counts < CENTRED_INTERCEPT_ITEMS).any()
    np.testing.assert_array_equal(noncentred_benchmarks("auto", [5, 20, 40]), [True, False, False])
    few_llms = noncentred_benchmarks("auto", [5, 20, 40], [80, 80, 30])
    np.testing.assert_array_equal(few_llms, [True, False, True])
    np.testing.assert_array_equal(noncentred_benchmarks(False, [5, 20]), [False, False])
    assert responses.n_llms < spec_module.CENTRED_INTERCEPT_RESPONSES  # too few LLMs: all non-centred
    assert build_model(responses, 2).benchmirt_noncentred_items.all()
    monkeypatch.setattr(spec_module, "CENTRED_INTERCEPT_RESPONSES", 1)  # as if every item had many
    auto = build_model(responses, 2)
    centred = build_model(responses, 2, spec={"intercept": {"noncentered": False}})
    small = auto.benchmirt_noncentred_items
    large_benchmarks = set(counts.index[counts >= CENTRED_INTERCEPT_ITEMS])
    np.testing.assert_array_equal(~small, np.isin(responses.benchmarks, list(large_benchmarks)))
    assert {"intercept_centred", "intercept_z"} <= {v.name for v in auto.free_RVs}
    assert "intercept" not in {v.name for v in auto.free_RVs} and "intercept" in auto.named_vars

    rng = np.random.default_rng(3)
    auto_point = auto.initial_point(random_seed=2)
    auto_point = {k: v + rng.normal(0, 0.2, size=np.shape(v)) for k, v in auto_point.items()}
    (graph,) = auto.replace_rvs_by_values([auto["intercept"]])
    values = pytensor.function(auto.value_vars, graph, on_unused_input="ignore")
    intercept = values(*[auto_point[v.name] for v in auto.value_vars])
    point = {k: v for k, v in auto_point.items() if k not in ("intercept_centred", "intercept_z")}
    point["intercept"] = intercept
    spread_name = next(k for k in point if k.startswith("benchmark_intercept_spread"))
    spread = np.exp(point[spread_name])  # the value variable of a HalfNormal is its log
    codes = np.array([list(auto.coords["benchmark"]).index(b) for b in responses.benchmarks])
    np.testing.assert_array_equal(intercept[~small], auto_point["intercept_centred"])
    jacobian = np.sum(np.log(spread[codes][small]))
    assert auto.compile_logp()(auto_point) == pytest.approx(
        centred.compile_logp()(point) + jacobian, rel=1e-9
    )


@pytest.mark.parametrize("response_type", RESPONSE_TYPES)
def test_the_log_density_does_not_depend_on_the_order_of_items_or_benchmarks(response_type):
    # the model treats benchmarks alike: reversing the items (which also swaps the two
    # benchmarks' codes) and mapping every parameter along gives the same log density
    setting = SbcSetting(
        n_llms=10, items_per_benchmark=6, n_benchmarks=2, n_dims=2, response_type=response_type
    )
    design = sbc_design(setting, seed=0)
    reversed_design = design.take_items(np.arange(design.n_items)[::-1])
    first, second = build_model(design, 2), build_model(reversed_design, 2)
    assert list(second.coords["benchmark"]) == list(first.coords["benchmark"])[::-1]
    logp_first, logp_second = first.compile_logp(), second.compile_logp()
    rng = np.random.default_rng(4)
    for _ in range(3):
        point, mapped = {}, {}
        for rv in first.free_RVs:
            name = first.rvs_to_values[rv].name
            value = 0.7 * rng.standard_normal(np.shape(first.initial_point()[name]))
            point[name] = mapped[name] = value
            for axis, dim in enumerate(first.named_vars_to_dims.get(rv.name, ())):
                if dim in ("llm", "dimension"):  # unchanged (and reduced by the zero-sum transform)
                    continue
                if dim == "graded_gap":  # item-major, the same number of gaps per item here
                    by_item = mapped[name].reshape(design.n_items, -1)[::-1]
                    mapped[name] = by_item.reshape(-1)
                    continue
                order = [list(first.coords[dim]).index(label) for label in second.coords[dim]]
                mapped[name] = np.take(mapped[name], order, axis=axis)
        # the binary default sums cells in float32 (1e-7 of the log density), the others in float64
        assert logp_second(mapped) == pytest.approx(
            logp_first(point), rel=1e-7 if response_type == "binary" else 1e-10
        )
