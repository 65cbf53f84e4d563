import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from benchmirt_bayes.response_types.asymptotes import capped_or_not
from benchmirt_bayes.response_types.base import PYTENSOR
from benchmirt_bayes.response_types.binary import BINARY
from benchmirt_bayes.response_types.fused_asymptotes import (
    FOUR_PL,
    THREE_PL,
    TWO_PL,
    asymptotic_loglik_and_grad,
    asymptotic_loglik_and_grad64,
    fused_asymptotic_loglik,
)
from benchmirt_bayes.response_types.fused_logit import MISSING, encode_responses

from .conftest import calls_matching_the_first_in_two_threads


def _reference_graph(y, kind):
    """The cell form's log-likelihood as a PyTensor graph of the six parameters (autodiff gradients)."""
    ability, loading = pt.dmatrix("ability"), pt.dmatrix("loading")
    intercept, floor, ceiling, share = (pt.dvector(n) for n in ("intercept", "floor", "ceiling", "share"))
    eta = ability @ loading.T + intercept[None, :]
    observed = y != MISSING
    values = np.where(observed, y, 0)
    total = 0.0
    for k in range(y.shape[1]):
        rows = np.flatnonzero(observed[:, k])
        e, v = eta[rows, k], values[rows, k]
        if kind[k] == TWO_PL:
            total += pt.sum(BINARY.log_likelihood(v, e, PYTENSOR))
            continue
        at_one = pt.sum(BINARY.log_likelihood(v, e, PYTENSOR, floor=floor[k]))
        if kind[k] == THREE_PL:
            total += at_one
            continue
        capped = pt.sum(BINARY.log_likelihood(v, e, PYTENSOR, floor=floor[k], ceiling=ceiling[k]))
        total += capped_or_not(capped, at_one, share[k], PYTENSOR)[0]
    inputs = [ability, loading, intercept, floor, ceiling, share]
    return pytensor.function(inputs, [total, *pytensor.grad(total, inputs)])


def _problem(seed, n_llm=9, n_item=12, n_dims=2, kinds=(THREE_PL, FOUR_PL), arrange=np.repeat):
    """Random responses and parameters; ``arrange=np.repeat`` puts the kinds in blocks (as the kernel
    wants them), ``np.tile`` interleaves them."""
    rng = np.random.default_rng(seed)
    y = encode_responses(rng.integers(0, 2, size=(n_llm, n_item)), rng.random((n_llm, n_item)) > 0.15)
    kind = arrange(np.array(kinds, dtype=np.int8), n_item // len(kinds))
    params = [
        rng.normal(0, 1.5, size=(n_llm, n_dims)),
        rng.normal(0, 1.5, size=(n_item, n_dims)),
        rng.normal(0, 2.0, size=n_item),
        rng.uniform(0.05, 0.5, size=n_item),
        rng.uniform(0.6, 0.95, size=n_item),
        rng.uniform(0.05, 0.6, size=n_item),
    ]
    return y, kind, params


@pytest.mark.parametrize("float64", [True, False])
@pytest.mark.parametrize("seed", [0, 2])
def test_kernel_matches_the_cell_forms_log_likelihood_and_gradients(seed, float64):
    y, kind, params = _problem(seed)
    if seed == 2:  # logits far beyond the kernel's cap of the exponential, both signs
        params[2][3:9] = [60.0, -60.0, 45.0, -45.0, 300.0, -300.0]
    expected = _reference_graph(y, kind)(*params)
    kernel = asymptotic_loglik_and_grad64 if float64 else asymptotic_loglik_and_grad
    got = kernel(y, kind, *params)
    # float32 cells: the log-likelihood to about 1e-7 of its size, gradients to about 1e-6
    # of the largest entry (float32's rounding of logits up to 300 included)
    rel, grad_rel, atol = (1e-10, 1e-8, 1e-10) if float64 else (1e-6, 1e-5, 1e-5)
    assert got[0] == pytest.approx(float(expected[0]), rel=rel)
    names = ("ability", "loading", "intercept", "floor", "ceiling", "share")
    for name, g, e in zip(names, got[1:], expected[1:], strict=True):
        np.testing.assert_allclose(g, e, rtol=grad_rel, atol=atol * max(1.0, np.abs(e).max()), err_msg=name)


def test_a_ceiling_within_float32_rounding_of_one_keeps_the_float32_kernel_finite():
    y, kind, params = _problem(1)
    four = kind == FOUR_PL
    params[4][four] = 1.0 - 1e-9  # rounds to 1 in float32: log(1 - u) would be -inf there
    expected = _reference_graph(y, kind)(*params)
    got = asymptotic_loglik_and_grad(y, kind, *params)
    assert np.isfinite(got[0]) and all(np.all(np.isfinite(g)) for g in got[1:])
    assert got[0] == pytest.approx(float(expected[0]), rel=1e-6)


@pytest.mark.parametrize("mode", ["NUMBA", "FAST_RUN"])
def test_op_gradient_in_numba_and_c_back_ends(mode):
    y, kind, params = _problem(3, n_llm=5, n_item=6)
    inputs = [pt.dmatrix(), pt.dmatrix(), pt.dvector(), pt.dvector(), pt.dvector(), pt.dvector()]
    ability, loading, intercept, floor, ceiling, share = inputs
    # a function of the parameters upstream of the Op, so the chain rule is exercised too
    logp = fused_asymptotic_loglik(y, kind, ability, loading, intercept, pt.sigmoid(floor), ceiling, share)
    fn = pytensor.function(inputs, [logp, *pytensor.grad(logp, inputs)], mode=mode)
    point = [*params[:3], np.zeros(6), *params[4:]]
    value, *grads = fn(*point)
    ref = asymptotic_loglik_and_grad(y, kind, *params[:3], np.full(6, 0.5), *params[4:])
    assert value == pytest.approx(ref[0], rel=1e-12)
    np.testing.assert_allclose(grads[3], ref[4] * 0.25, rtol=1e-10)
    for got, want in zip(grads[:3] + grads[4:], ref[1:4] + ref[5:], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10)


@pytest.mark.parametrize("float64", [True, False])
def test_2pl_items_among_floored_ones_take_the_2pl_kernel_and_the_same_log_likelihood(float64):
    kinds = (TWO_PL, FOUR_PL, THREE_PL, TWO_PL, TWO_PL)
    y, kind, params = _problem(4, n_llm=11, n_item=15, kinds=kinds, arrange=np.tile)
    inputs = [pt.dmatrix(), pt.dmatrix(), pt.dvector(), pt.dvector(), pt.dvector(), pt.dvector()]
    logp = fused_asymptotic_loglik(y, kind, *inputs, float64=float64)
    got = pytensor.function(inputs, [logp, *pytensor.grad(logp, inputs)], mode="NUMBA")(*params)
    expected = _reference_graph(y, kind)(*params)
    # float32 cells (the default for 2PL items) agree to about 1e-6 of the largest gradient
    rel, atol = (1e-10, 1e-10) if float64 else (1e-6, 1e-5)
    assert got[0] == pytest.approx(float(expected[0]), rel=rel)
    names = ("ability", "loading", "intercept", "floor", "ceiling", "share")
    for name, g, e in zip(names, got[1:], expected[1:], strict=True):
        np.testing.assert_allclose(g, e, rtol=rel, atol=atol, err_msg=name)
    plain = kind == TWO_PL
    assert np.all(got[4][plain] == 0) and np.all(got[5][kind != FOUR_PL] == 0)


@pytest.mark.parametrize("kernel", [asymptotic_loglik_and_grad, asymptotic_loglik_and_grad64])
def test_kernel_bits_do_not_depend_on_where_its_arrays_land(kernel):
    # Two threads calling the kernel at once interleave their allocations, so its work arrays
    # land at other addresses from call to call. A loop that both stores and sums is compiled
    # with a vectorised and a scalar path, taken by the arrays' addresses, that sum in another
    # order: before the sums had loops of their own, from 1 to 5,000 of 20,000 such calls differed.
    rng = np.random.default_rng(0)
    n_llm, n_three, n_four = 20, 30, 60
    n_item = n_three + n_four
    kind = np.repeat(np.array([THREE_PL, FOUR_PL], np.int8), [n_three, n_four])
    inputs = (
        rng.integers(-1, 2, size=(n_llm, n_item)).astype(np.int8),
        kind,
        rng.normal(size=(n_llm, 2)),
        rng.normal(size=(n_item, 2)),
        3 * rng.normal(size=n_item),
        rng.uniform(0.05, 0.4, n_item),
        rng.uniform(0.6, 0.99, n_item),
        rng.uniform(0.001, 0.5, n_item),
    )
    assert calls_matching_the_first_in_two_threads(kernel, inputs, 20_000) == [20_000, 20_000]
