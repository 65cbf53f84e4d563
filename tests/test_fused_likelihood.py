import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy.special import expit

from benchmirt_bayes import build_model
from benchmirt_bayes.model.pymc_model import resolve_likelihood
from benchmirt_bayes.response_types.fused_logit import (
    MISSING,
    encode_responses,
    fused_loglik,
    loglik_and_grad,
    loglik_and_grad64,
)

from .conftest import calls_matching_the_first_in_two_threads


def _reference(y, ability, loading, intercept):
    eta = ability @ loading.T + intercept
    observed = y != MISSING
    logp = np.sum(np.where(observed, y * eta - np.logaddexp(0, eta), 0.0))
    residual = np.where(observed, y - expit(eta), 0.0)
    return logp, residual @ loading, residual.T @ ability, residual.sum(axis=0)


FLOAT32 = {"logp_rel": 1e-7, "grad_rel": 1e-5}
"""The float32 kernel's documented bounds: log density relative to its size, each gradient
relative to its largest entry."""


def assert_gradients_close(got, expected, grad_rel: float) -> None:
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=grad_rel, atol=grad_rel * np.abs(e).max())


@pytest.mark.parametrize("n_dims", [1, 2, 3])
def test_kernel_matches_numpy_including_missing_cells_and_extreme_logits(n_dims):
    rng = np.random.default_rng(n_dims)
    values = rng.integers(0, 2, size=(30, 257)).astype(float)
    observed = rng.random(values.shape) > 0.2
    y = encode_responses(values, observed)
    assert set(np.unique(y)) == {MISSING, 0, 1}
    ability = rng.normal(0, 3, size=(30, n_dims))
    loading = rng.normal(0, 4, size=(257, n_dims))
    intercept = rng.normal(0, 10, size=257)
    intercept[:5] = [60.0, -60.0, 39.9, -40.1, 0.0]  # beyond the cap of the exponential
    expected = _reference(y, ability, loading, intercept)
    got = loglik_and_grad64(y, ability, loading, intercept)
    assert got[0] == pytest.approx(expected[0], rel=1e-12)
    for g, e in zip(got[1:], expected[1:], strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-10)
    got32 = loglik_and_grad(y, ability, loading, intercept)
    assert all(g.dtype == np.float64 for g in got32[1:])
    assert got32[0] == pytest.approx(expected[0], rel=FLOAT32["logp_rel"])
    assert got32[0] != pytest.approx(expected[0], rel=1e-13)  # float32 cells, not float64
    assert_gradients_close(got32[1:], expected[1:], FLOAT32["grad_rel"])


@pytest.mark.parametrize("float64", [False, True])
@pytest.mark.parametrize("mode", ["NUMBA", "FAST_RUN"])
def test_op_gradient_in_numba_and_c_back_ends(mode, float64):
    rng = np.random.default_rng(0)
    y = encode_responses(rng.integers(0, 2, size=(8, 11)), rng.random((8, 11)) > 0.1)
    ability, loading, intercept = pt.dmatrix("ability"), pt.dmatrix("loading"), pt.dvector("intercept")
    inputs = [ability, loading, intercept]
    # a function of the parameters upstream of the Op, so the chain rule is exercised too
    logp = fused_loglik(y, 2.0 * ability, pt.exp(loading), intercept**2, float64=float64)
    fn = pytensor.function(inputs, [logp, *pytensor.grad(logp, inputs)], mode=mode)
    point = [rng.normal(size=(8, 2)), rng.normal(size=(11, 2)) * 0.3, rng.normal(size=11)]
    value, *grads = fn(*point)
    ref, ga, gl, gb = _reference(y, 2.0 * point[0], np.exp(point[1]), point[2] ** 2)
    expected = [2.0 * ga, gl * np.exp(point[1]), gb * 2 * point[2]]
    if float64:
        assert value == pytest.approx(ref, rel=1e-12)
        for g, e in zip(grads, expected, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-10)
    else:
        assert value == pytest.approx(ref, rel=FLOAT32["logp_rel"])
        assert_gradients_close(grads, expected, FLOAT32["grad_rel"])
    with pytest.raises(NotImplementedError, match="second derivatives"):
        pytensor.grad(pytensor.grad(logp, intercept).sum(), intercept)


@pytest.mark.slow
@pytest.mark.parametrize("form", ["fused", "fused64"])
def test_fused_model_has_the_dense_models_log_density_and_gradient(tiny_sim, form):
    values = tiny_sim.responses.values.copy()
    values[np.random.default_rng(2).random(values.shape) < 0.1] = np.nan
    responses = tiny_sim.responses.with_values(values)
    dense = build_model(responses, 2, likelihood="dense")
    fused = build_model(responses, 2, likelihood=form)
    assert fused.benchmirt_likelihood == form
    point = dense.initial_point(random_seed=1)
    rng = np.random.default_rng(0)
    point = {k: v + rng.normal(0, 0.3, size=np.shape(v)) for k, v in point.items()}
    results = []
    for model in (dense, fused):
        logp = model.logp()
        fn = pytensor.function(model.value_vars, [logp, *pytensor.grad(logp, model.value_vars)])
        results.append(fn(*[point[v.name] for v in model.value_vars]))
    (dense_logp, *dense_grads), (fused_logp, *fused_grads) = results
    if form == "fused64":
        for d, f in zip(results[0], results[1], strict=True):
            np.testing.assert_allclose(f, d, rtol=1e-9, atol=1e-9)
    else:
        assert fused_logp == pytest.approx(dense_logp, rel=FLOAT32["logp_rel"])
        assert_gradients_close(fused_grads, dense_grads, FLOAT32["grad_rel"])
    draw = pm.draw(fused["correct"], random_seed=1)  # prior predictive responses
    assert draw.shape == responses.values.shape and set(np.unique(draw)) <= {0, 1}


def test_auto_resolves_to_fused_or_dense_for_jax(tiny_sim):
    responses = tiny_sim.responses
    assert resolve_likelihood(responses, "auto") == "fused"
    assert resolve_likelihood(responses, "auto", jax=True) == "dense"
    assert resolve_likelihood(responses, "cells", jax=True) == "cells"
    assert resolve_likelihood(responses, "fused64") == "fused64"
    for form in ("fused", "fused64"):
        with pytest.raises(ValueError, match="no JAX implementation"):
            resolve_likelihood(responses, form, jax=True)
    values = responses.values.copy()
    values[np.random.default_rng(0).random(values.shape) < 0.6] = np.nan
    assert resolve_likelihood(responses.with_values(values), "auto") == "cells"


def test_a_compiled_graph_with_the_kernel_goes_into_pytensors_numba_cache(monkeypatch):
    """Without a cache key, every model holding the Op compiled from scratch, even on the same data."""
    from pytensor.link.numba.dispatch.basic import numba_funcify_and_cache_key

    from benchmirt_bayes.response_types import fused_logit

    responses = pt.matrix("responses", dtype="int8")
    node = fused_logit.fused_bernoulli_logit(responses, pt.dmatrix(), pt.dmatrix(), pt.dvector())[0].owner
    _, key = numba_funcify_and_cache_key(node.op, node=node)
    assert key is not None
    monkeypatch.setattr(fused_logit, "KERNEL_VERSION", fused_logit.KERNEL_VERSION + 1)
    _, edited = numba_funcify_and_cache_key(node.op, node=node)
    assert edited not in (None, key)  # an edited kernel never reads an older one's cache


@pytest.mark.parametrize("kernel", [loglik_and_grad, loglik_and_grad64])
@pytest.mark.parametrize("n_item", [13, 90, 700])
def test_kernel_bits_do_not_depend_on_where_its_arrays_land(kernel, n_item):
    # see test_fused_asymptotes.py: two threads at once move the kernel's work arrays around
    rng = np.random.default_rng(n_item)
    inputs = (
        rng.integers(-1, 2, size=(20, n_item)).astype(np.int8),
        rng.normal(size=(20, 2)),
        rng.normal(size=(n_item, 2)),
        3 * rng.normal(size=n_item),
    )
    assert calls_matching_the_first_in_two_threads(kernel, inputs, 20_000) == [20_000, 20_000]
