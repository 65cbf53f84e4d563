"""The dense Bernoulli-logit log-likelihood and its gradient in one cache-friendly pass.

``log p(Y) = Σ_{observed ij} y_ij η_ij − softplus(η_ij)``, ``η = ability @ loading.T + intercept``.

Written as a graph of array operations, this term streams several float64
matrices of the full ``(llm, item)`` shape through memory for every gradient
(27 MB each at the built-in 100 × 34k set): 135 ms per log density + gradient
of the whole model with numba, and two chains on two cores slow each other
down further, because they share the memory bandwidth. Here the responses are
stored once as int8 (``-1`` for a missing cell), each LLM's row of logits lives
in a scratch vector that stays in cache, and the log density and all three
gradients come out of the same pass, unchanged in speed with two chains running
at once.

The transcendental functions are written as polynomials so that LLVM can
vectorise the inner loop (NumPy's ``exp`` and ``log1p`` are scalar library calls
in numba): ``exp(x)`` for ``x ≤ 0`` from a degree-14 Taylor polynomial of
``exp(x / 64)`` squared six times (relative error below 1e-14 in float64), and
``log1p(e)`` for ``0 ≤ e ≤ 1`` as ``2 atanh(e / (2 + e))`` from its series.
``|η|`` is capped at 40 inside the exponential, which changes ``softplus`` and the
sigmoid by less than 5e-18.

The default kernel (:func:`loglik_and_grad`, the ``"fused"`` likelihood) computes each
cell in float32, twice as many per vector instruction, and sums the rows in float64:
about 2.3× faster than the same pass in float64 (:func:`loglik_and_grad64`, the
``"fused64"`` likelihood), with the log density within about 1e-8 of it relative to its
size. A sampler then targets that float32 log density exactly (NUTS's leapfrog steps
stay reversible and volume-preserving with any gradient; the acceptance step reads the
log density it is given), which differs from the float64 one by far less than the Monte
Carlo error of any posterior summary.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any, ClassVar

import numba
import numpy as np
import pytensor.tensor as pt
from numba import types
from numba.extending import overload
from pytensor.gradient import DisconnectedType
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch.basic import register_funcify_default_op_cache_key

MISSING = -1
"""Code of an unobserved cell in the int8 response matrix."""

ETA_CAP = 40.0
"""Above this ``|η|``, ``exp(-|η|)`` is taken as ``exp(-40)`` (below 5e-18)."""

ITEM_BLOCK = 1024
"""Items per block of the binary pass: every LLM's row is taken a block at a time, so that the
block's loadings, intercepts and their gradients stay in cache between LLMs."""

_JIT = {"fastmath": True, "error_model": "numpy", "cache": True}
# error_model="numpy": without it every division checks for zero and the loop is not vectorised


EXP_DEGREE = {32: 8, 64: 14}
"""Degree of the Taylor polynomial of ``exp(t / 64)``, ``−40 ≤ t ≤ 0``, per float width (relative
error below 1e-7 and 2e-15 before the six squarings, each of which doubles it; float32's own
rounding, doubled by the same squarings, is of the same size)."""

LOG1P_TERMS = {32: 6, 64: 18}
"""Terms of the ``log1p`` series per float width (absolute error below 1e-7 and 1e-17)."""


def logistic_parts(x: float) -> tuple[float, float, float]:
    """``softplus(x)``, ``σ(x)`` and ``σ(−x)`` in the precision of ``x`` (numba code only).

    From ``e = exp(−|x|)`` with ``|x|`` capped at :data:`ETA_CAP`: ``exp`` for ``−40 ≤ t ≤ 0``
    as a Taylor polynomial of ``exp(t / 64)`` (:data:`EXP_DEGREE`) squared six times,
    ``log1p(e)`` for ``0 ≤ e ≤ 1`` as ``2 atanh(e / (2 + e))`` from its series
    (:data:`LOG1P_TERMS`). Every constant has the argument's type, so float32 arguments are
    computed in float32.
    """
    raise TypeError("logistic_parts is compiled by numba: call it from a numba function")


@overload(logistic_parts, inline="always")
def _logistic_parts_typed(x):
    if not isinstance(x, types.Float):
        return None
    f = np.float32 if x.bitwidth == 32 else np.float64
    terms, degree = LOG1P_TERMS[x.bitwidth], EXP_DEGREE[x.bitwidth]
    zero, one, two, cap, scale = f(0), f(1), f(2), f(ETA_CAP), f(1 / 64)
    last = f(1 / (2 * terms + 1))
    taylor = tuple(f(1 / math.factorial(n)) for n in range(degree + 1))

    def impl(x):
        z = -min(max(x, -x), cap) * scale
        p = taylor[degree]
        for n in range(degree - 1, -1, -1):
            p = p * z + taylor[n]
        p = p * p
        p = p * p
        p = p * p
        p = p * p
        p = p * p
        e = p * p
        s = e / (two + e)
        s2 = s * s
        q = last
        for m in range(terms - 1, -1, -1):
            q = q * s2 + one / f(2 * m + 1)
        sigmoid = one / (one + e)
        softplus = max(x, zero) + two * s * q
        return softplus, (sigmoid if x >= zero else e * sigmoid), (e * sigmoid if x >= zero else sigmoid)

    return impl


@numba.njit(inline="always", **_JIT)
def row_logits(
    eta: np.ndarray, intercept: np.ndarray, loading_rows: np.ndarray, theta: np.ndarray, start: int = 0
) -> None:
    """``eta[k] = intercept[k] + Σ_d loading_rows[d, start + k] θ_d``: one LLM's logits, in place."""
    for k in range(eta.size):
        eta[k] = intercept[k]
    for d in range(theta.size):
        row = loading_rows[d][start : start + eta.size]
        for k in range(eta.size):
            eta[k] += row[k] * theta[d]


@numba.njit(inline="always", **_JIT)
def accumulate_row(
    residual: np.ndarray,
    theta: np.ndarray,
    loading_rows: np.ndarray,
    grad_loading_rows: np.ndarray,
    grad_theta: np.ndarray,
    start: int = 0,
) -> None:
    """Add one LLM's cell derivatives ``residual`` (items ``start``, ``start + 1``, …) to the gradients."""
    for d in range(theta.size):
        row = loading_rows[d][start : start + residual.size]
        grad_row = grad_loading_rows[d][start : start + residual.size]
        t = theta[d]
        for k in range(residual.size):
            grad_row[k] += residual[k] * t
        # the sum in a loop that stores nothing. A loop that stores and sums gets a vectorised
        # and a scalar path, chosen at run time by the arrays' addresses (LLVM's alias checks),
        # and the two sum in another order, so the bits would depend on where the arrays land
        acc = grad_theta[d]  # of the arrays' type: a float32 pass sums in float32
        for k in range(residual.size):
            acc += residual[k] * row[k]
        grad_theta[d] = acc


@numba.njit(**_JIT)
def _bernoulli_logit_pass(
    responses: np.ndarray, ability: np.ndarray, loading: np.ndarray, intercept: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """The pass of :func:`loglik_and_grad` in the parameters' precision (float32 or float64)."""
    # rows are read as vectors: a column selection of a C matrix (numpy's
    # ``y[:, items]``) is Fortran-ordered, and the loops over its strided rows do not vectorise
    responses = np.ascontiguousarray(responses)
    n_llm, n_item = responses.shape
    n_dim = ability.shape[1]
    dtype = ability.dtype
    loading_rows = np.ascontiguousarray(loading.T)
    grad_ability = np.zeros((n_llm, n_dim), dtype=dtype)
    grad_loading_rows = np.zeros((n_dim, n_item), dtype=dtype)
    grad_intercept = np.zeros(n_item, dtype=dtype)
    eta = np.empty(n_item, dtype=dtype)
    residual = np.empty(n_item, dtype=dtype)
    unit = np.arange(2).astype(dtype)
    zero, one = unit[0], unit[1]  # typed constants: a float literal would promote float32 cells
    total = 0.0
    for start in range(0, n_item, ITEM_BLOCK):
        stop = min(start + ITEM_BLOCK, n_item)
        eta_block, residual_block = eta[: stop - start], residual[: stop - start]
        intercept_block, grad_intercept_block = intercept[start:stop], grad_intercept[start:stop]
        for i in range(n_llm):
            row_logits(eta_block, intercept_block, loading_rows, ability[i], start)
            answers = responses[i][start:stop]
            row_total = zero
            # sums beside its stores, unlike ``accumulate_row``: no address has been seen to change
            # its bits (tests/test_fused_likelihood.py), and moving the sum would change them
            for k in range(eta_block.size):
                y = answers[k]
                x = eta_block[k]
                softplus, sigmoid, _ = logistic_parts(x)
                observed = y >= 0
                outcome = one if y == 1 else zero
                row_total += (outcome * x - softplus) if observed else zero
                r = (outcome - sigmoid) if observed else zero
                residual_block[k] = r
                grad_intercept_block[k] += r
            total += row_total
            theta, grad_theta = ability[i], grad_ability[i]
            accumulate_row(residual_block, theta, loading_rows, grad_loading_rows, grad_theta, start)
    return total, grad_ability, np.ascontiguousarray(grad_loading_rows.T), grad_intercept


@numba.njit(**_JIT)
def loglik_and_grad(
    responses: np.ndarray, ability: np.ndarray, loading: np.ndarray, intercept: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """Log-likelihood of ``responses`` and its gradients, each cell computed in float32.

    Parameters
    ----------
    responses
        ``(n_llm, n_item)`` int8: 1 correct, 0 wrong, ``MISSING`` (-1) unobserved.
    ability
        ``(n_llm, n_dim)``.
    loading
        ``(n_item, n_dim)``.
    intercept
        ``(n_item,)``.

    Returns
    -------
    tuple
        The log-likelihood and its gradients (float64), shaped like ``ability``, ``loading``
        and ``intercept``. The parameters are rounded to float32, each LLM's row is summed in
        float32 a block of :data:`ITEM_BLOCK` items at a time and the blocks in float64: the
        log-likelihood is within about 1e-8 of
        :func:`loglik_and_grad64`'s relative to its size, the gradients within about 1e-6 of
        their largest entry.

    """
    total, grad_ability, grad_loading, grad_intercept = _bernoulli_logit_pass(
        responses, ability.astype(np.float32), loading.astype(np.float32), intercept.astype(np.float32)
    )
    return (
        total,
        grad_ability.astype(np.float64),
        grad_loading.astype(np.float64),
        grad_intercept.astype(np.float64),
    )


@numba.njit(**_JIT)
def loglik_and_grad64(
    responses: np.ndarray, ability: np.ndarray, loading: np.ndarray, intercept: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`loglik_and_grad` in float64 throughout (to about 1e-14 of the exact value)."""
    return _bernoulli_logit_pass(responses, ability, loading, intercept)


def encode_responses(values: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """The int8 matrix :func:`loglik_and_grad` reads: 0/1 where observed, ``MISSING`` elsewhere."""
    return np.where(observed, values, MISSING).astype(np.int8)


class FusedKernelOp(Op):
    """PyTensor Op around a fused kernel: ``(data…, parameters…) ↦ (loglik, one gradient per parameter)``.

    Subclasses name the numba ``kernel``, how many leading inputs are data (integer arrays
    of the ranks in ``data_ranks``; nothing is differentiated with respect to them) and the
    ranks of the float parameters after them. Only the first output is meant to be used;
    its gradient is read off the other outputs of the same node, so a compiled log density
    + gradient runs the kernel once. Runs natively in the numba back end (nutpie) and
    through :meth:`perform` in the C and Python back ends (PyMC's NUTS, ADVI). There is no
    JAX implementation: the JAX samplers use the ``"dense"`` or ``"cells"`` form.
    """

    __props__ = ()
    kernel: ClassVar[Any]
    data_ranks: ClassVar[tuple[int, ...]]
    parameter_ranks: ClassVar[tuple[int, ...]]

    def make_node(self, *inputs) -> Apply:
        """Check the inputs; the outputs are a float64 scalar and one gradient per parameter."""
        n_data = len(self.data_ranks)
        if len(inputs) != n_data + len(self.parameter_ranks):
            raise TypeError(f"{type(self).__name__} takes {n_data + len(self.parameter_ranks)} inputs")
        data = [pt.as_tensor_variable(x) for x in inputs[:n_data]]
        parameters = [pt.as_tensor_variable(x).astype("float64") for x in inputs[n_data:]]
        for x, rank in zip(data, self.data_ranks, strict=True):
            if x.dtype != "int8" or x.ndim != rank:
                raise TypeError(f"data inputs must be int8 tensors of ranks {self.data_ranks}")
        if tuple(x.ndim for x in parameters) != self.parameter_ranks:
            raise TypeError(f"parameters must have ranks {self.parameter_ranks}")
        outputs = [pt.dscalar(), *(x.type() for x in parameters)]
        return Apply(self, [*data, *parameters], outputs)

    def perform(self, node, inputs, output_storage) -> None:
        """Run the kernel (C and Python back ends)."""
        total, *gradients = type(self).kernel(*inputs)
        output_storage[0][0] = np.asarray(total)
        for storage, gradient in zip(output_storage[1:], gradients, strict=True):
            storage[0] = gradient

    def infer_shape(self, node, input_shapes):
        """A scalar, then the parameters' shapes."""
        return [(), *input_shapes[len(self.data_ranks) :]]

    def connection_pattern(self, node):
        """The data inputs are constants: no output depends differentiably on them."""
        n_out = 1 + len(self.parameter_ranks)
        return [[False] * n_out] * len(self.data_ranks) + [[True] * n_out] * len(self.parameter_ranks)

    def pullback(self, inputs, outputs, cotangents):
        """The log-likelihood's gradient: the node's own gradient outputs, scaled."""
        if any(not isinstance(g.type, DisconnectedType) for g in cotangents[1:]):
            raise NotImplementedError(f"{type(self).__name__} has no second derivatives")
        upstream = cotangents[0]
        data = [DisconnectedType()() for _ in self.data_ranks]
        return data + [upstream * g for g in outputs[1:]]


def kernel_version(*modules: str) -> int:
    """A number that changes with the source of ``modules`` (files), for PyTensor's numba cache key."""
    digest = hashlib.sha256(b"".join(Path(m).read_bytes() for m in modules)).digest()
    return int.from_bytes(digest[:6], "big")


def numba_kernel_call(op: FusedKernelOp) -> Any:
    """The numba function a compiled graph calls for ``op``'s node: its kernel, total as an array."""
    kernel = type(op).kernel

    @numba.njit
    def fused(*inputs):
        out = kernel(*inputs)
        return (np.asarray(out[0]),) + out[1:]  # noqa: RUF005 (numba has no starred tuples)

    return fused


@register_funcify_default_op_cache_key(FusedKernelOp)
def _numba_funcify_fused(op, node=None, **kwargs):
    # with a cache key the whole compiled model graph goes into PyTensor's numba cache: a
    # graph compiled before (same model, same data) is loaded, not typed and optimised again
    return numba_kernel_call(op), type(op).kernel_version()


class FusedBernoulliLogit(FusedKernelOp):
    """``(responses, ability, loading, intercept) ↦ (loglik, three gradients)`` (:func:`loglik_and_grad`)."""

    kernel = loglik_and_grad
    data_ranks = (2,)
    parameter_ranks = (2, 2, 1)

    @staticmethod
    def kernel_version() -> int:
        """Changes with this file (read at call time, so that a test can change it)."""
        return KERNEL_VERSION


class FusedBernoulliLogit64(FusedBernoulliLogit):
    """:class:`FusedBernoulliLogit` in float64 throughout (:func:`loglik_and_grad64`)."""

    kernel = loglik_and_grad64


fused_bernoulli_logit = FusedBernoulliLogit()
fused_bernoulli_logit64 = FusedBernoulliLogit64()


KERNEL_VERSION = kernel_version(__file__)
"""Changes with this file, so that PyTensor's numba cache never serves an older kernel."""


def fused_loglik(
    responses: pt.TensorLike,
    ability: pt.TensorLike,
    loading: pt.TensorLike,
    intercept: pt.TensorLike,
    *,
    float64: bool = False,
) -> pt.TensorVariable:
    """The log-likelihood as a scalar PyTensor expression with a one-pass gradient.

    Cells in float32 (:func:`loglik_and_grad`), or in float64 with ``float64=True``
    (:func:`loglik_and_grad64`).
    """
    op = fused_bernoulli_logit64 if float64 else fused_bernoulli_logit
    return op(responses, ability, loading, intercept)[0]
