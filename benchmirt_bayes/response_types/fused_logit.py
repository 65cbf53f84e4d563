"""The dense Bernoulli-logit log-likelihood and its gradient in one cache-friendly pass.

``log p(Y) = Σ_{observed ij} y_ij η_ij − softplus(η_ij)``, ``η = ability @ loading.T + intercept``.

Written as a graph of array operations, this term streams several float64
matrices of the full ``(llm, item)`` shape through memory for every gradient
(27 MB each at the built-in 100 × 34k set): 135 ms per log density + gradient
of the whole model with numba, and two chains on two cores slow each other
down further, because they share the memory bandwidth. Here the responses are
stored once as int8 (``-1`` for a missing cell), each LLM's row of logits lives
in a scratch vector that stays in cache, and the log density and all three
gradients come out of the same pass: 14 ms for the whole model, unchanged with
two chains running at once.

The transcendental functions are written as polynomials so that LLVM can
vectorise the inner loop (NumPy's ``exp`` and ``log1p`` are scalar library calls
in numba): ``exp(x)`` for ``x ≤ 0`` from a degree-14 Taylor polynomial of
``exp(x / 64)`` squared six times (relative error below 1e-14), and
``log1p(e)`` for ``0 ≤ e ≤ 1`` as ``2 atanh(e / (2 + e))`` from its series
(18 terms: absolute error below 1e-17). ``|η|`` is capped at 40 inside the
exponential, which changes ``softplus`` and the sigmoid by less than 5e-18.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, ClassVar

import numba
import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch.basic import register_funcify_default_op_cache_key

MISSING = -1
"""Code of an unobserved cell in the int8 response matrix."""

ETA_CAP = 40.0
"""Above this ``|η|``, ``exp(-|η|)`` is taken as ``exp(-40)`` (below 5e-18)."""

_JIT = {"fastmath": True, "error_model": "numpy", "cache": True}
# error_model="numpy": without it every division checks for zero and the loop is not vectorised


@numba.njit(inline="always", **_JIT)
def _exp_nonpositive(x: float) -> float:
    """``exp(x)`` for ``-40 ≤ x ≤ 0``."""
    z = x * (1.0 / 64.0)
    p = 1.0 / 87178291200.0
    p = p * z + 1.0 / 6227020800.0
    p = p * z + 1.0 / 479001600.0
    p = p * z + 1.0 / 39916800.0
    p = p * z + 1.0 / 3628800.0
    p = p * z + 1.0 / 362880.0
    p = p * z + 1.0 / 40320.0
    p = p * z + 1.0 / 5040.0
    p = p * z + 1.0 / 720.0
    p = p * z + 1.0 / 120.0
    p = p * z + 1.0 / 24.0
    p = p * z + 1.0 / 6.0
    p = p * z + 0.5
    p = p * z + 1.0
    p = p * z + 1.0
    p = p * p
    p = p * p
    p = p * p
    p = p * p
    p = p * p
    return p * p


@numba.njit(inline="always", **_JIT)
def _log1p_unit(e: float) -> float:
    """``log(1 + e)`` for ``0 ≤ e ≤ 1``."""
    s = e / (2.0 + e)
    s2 = s * s
    q = 1.0 / 37.0
    for m in range(17, -1, -1):
        q = q * s2 + 1.0 / (2 * m + 1)
    return 2.0 * s * q


@numba.njit(inline="always", **_JIT)
def logistic_parts(x: float) -> tuple[float, float, float]:
    """``softplus(x)``, ``σ(x)`` and ``σ(−x)``, from ``e^{−|x|}`` with ``|x|`` capped at :data:`ETA_CAP`."""
    e = _exp_nonpositive(-min(max(x, -x), ETA_CAP))
    p = 1.0 / (1.0 + e)
    softplus = max(x, 0.0) + _log1p_unit(e)
    return softplus, (p if x >= 0.0 else e * p), (e * p if x >= 0.0 else p)


@numba.njit(inline="always", **_JIT)
def row_logits(eta: np.ndarray, intercept: np.ndarray, loading_rows: np.ndarray, theta: np.ndarray) -> None:
    """``eta[k] = intercept[k] + Σ_d loading_rows[d, k] θ_d``: one LLM's logits, in place."""
    for k in range(eta.size):
        eta[k] = intercept[k]
    for d in range(theta.size):
        row = loading_rows[d]
        for k in range(eta.size):
            eta[k] += row[k] * theta[d]


@numba.njit(inline="always", **_JIT)
def accumulate_row(
    residual: np.ndarray,
    theta: np.ndarray,
    loading_rows: np.ndarray,
    grad_loading_rows: np.ndarray,
    grad_theta: np.ndarray,
) -> None:
    """One LLM's cell derivatives ``residual`` (in ``η``) into the loading and ability gradients."""
    for d in range(theta.size):
        row = loading_rows[d]
        grad_row = grad_loading_rows[d]
        acc = 0.0
        for k in range(residual.size):
            r = residual[k]
            grad_row[k] += r * theta[d]
            acc += r * row[k]
        grad_theta[d] = acc


@numba.njit(**_JIT)
def loglik_and_grad(
    responses: np.ndarray, ability: np.ndarray, loading: np.ndarray, intercept: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """Log-likelihood of ``responses`` and its gradients with respect to the three parameters.

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
        The log-likelihood and its gradients, shaped like ``ability``,
        ``loading`` and ``intercept``.

    """
    n_llm, n_item = responses.shape
    n_dim = ability.shape[1]
    loading_rows = np.ascontiguousarray(loading.T)
    grad_ability = np.zeros((n_llm, n_dim))
    grad_loading_rows = np.zeros((n_dim, n_item))
    grad_intercept = np.zeros(n_item)
    eta = np.empty(n_item)
    residual = np.empty(n_item)
    total = 0.0
    for i in range(n_llm):
        row_logits(eta, intercept, loading_rows, ability[i])
        answers = responses[i]
        for k in range(n_item):
            y = answers[k]
            x = eta[k]
            softplus, sigmoid, _ = logistic_parts(x)
            observed = y >= 0
            total += (y * x - softplus) if observed else 0.0
            r = (y - sigmoid) if observed else 0.0
            residual[k] = r
            grad_intercept[k] += r
        accumulate_row(residual, ability[i], loading_rows, grad_loading_rows, grad_ability[i])
    return total, grad_ability, np.ascontiguousarray(grad_loading_rows.T), grad_intercept


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


@register_funcify_default_op_cache_key(FusedKernelOp)
def _numba_funcify_fused(op, node=None, **kwargs):
    # with a cache key the whole compiled model graph goes into PyTensor's numba cache: a
    # graph compiled before (same model, same data) is loaded, not typed and optimised again
    kernel = type(op).kernel

    @numba.njit
    def fused(*inputs):
        out = kernel(*inputs)
        return (np.asarray(out[0]),) + out[1:]  # noqa: RUF005 (numba has no starred tuples)

    return fused, type(op).kernel_version()


class FusedBernoulliLogit(FusedKernelOp):
    """``(responses, ability, loading, intercept) ↦ (loglik, three gradients)`` (:func:`loglik_and_grad`)."""

    kernel = loglik_and_grad
    data_ranks = (2,)
    parameter_ranks = (2, 2, 1)

    @staticmethod
    def kernel_version() -> int:
        """Changes with this file (read at call time, so that a test can change it)."""
        return KERNEL_VERSION


fused_bernoulli_logit = FusedBernoulliLogit()


KERNEL_VERSION = kernel_version(__file__)
"""Changes with this file, so that PyTensor's numba cache never serves an older kernel."""


def fused_loglik(
    responses: pt.TensorLike, ability: pt.TensorLike, loading: pt.TensorLike, intercept: pt.TensorLike
) -> pt.TensorVariable:
    """The log-likelihood as a scalar PyTensor expression with a one-pass gradient."""
    return fused_bernoulli_logit(responses, ability, loading, intercept)[0]
