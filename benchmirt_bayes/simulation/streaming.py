"""Cell sources for minibatch fitting: response blocks made or read on demand.

A *cell source* hands out the responses of one block ``(llm rows × item columns)`` at a
time, so a fit never holds the whole matrix. Two sources are provided:

- :class:`StreamingSimulation`: a simulated BenchMIRT-like set of any size (10,000 LLMs ×
  100,000 items is 10⁹ cells) whose responses are a pure function of the cell's indices and
  the seed (a counter-based hash), so every block is reproducible and nothing is stored but
  the true parameters;
- :class:`MatrixSource`: an in-memory :class:`~benchmirt_bayes.responses.ResponseMatrix`,
  so the minibatch path can be checked against the full-data fit on the same data.

Blocks are JAX arrays computed inside the fitting step's ``jit``; JAX is the ``jax`` extra.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.data.responses import ResponseMatrix
from benchmirt_bayes.errors import MissingExtraError
from benchmirt_bayes.response_types.base import linear_predictor
from benchmirt_bayes.response_types.binary import BINARY


def import_jax() -> Any:
    """``jax.numpy``, or an error naming the extra to install."""
    try:
        import jax.numpy as jnp
    except ImportError:
        raise MissingExtraError("jax", "jax", "Minibatch ADVI") from None
    return jnp


class CellSource(Protocol):
    """What :func:`~benchmirt_bayes.minibatch.fit_minibatch_advi` needs from data."""

    @property
    def llms(self) -> np.ndarray:
        """LLM names (length ``n_llms``)."""
        ...

    @property
    def items(self) -> np.ndarray:
        """Item names (length ``n_items``)."""
        ...

    @property
    def benchmarks(self) -> tuple[str, ...]:
        """Benchmark names."""
        ...

    @property
    def item_benchmark(self) -> np.ndarray:
        """Integer benchmark code (index into :attr:`benchmarks`) of every item."""
        ...

    def block(self, rows: Any, cols: Any) -> tuple[Any, Any]:
        """``(correct, observed)`` float32 JAX arrays of shape ``(len(rows), len(cols))``."""
        ...


def _concrete() -> Any:
    import jax

    return jax.ensure_compile_time_eval()


# ------------------------------------------------------------------ hashing
def _mix32(x: Any) -> Any:
    """The "lowbias32" integer finaliser: a well-mixed uint32 from a uint32."""
    jnp = import_jax()
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * jnp.uint32(0x846CA68B)
    return x ^ (x >> 16)


def cell_uniforms(rows: Any, cols: Any, seed: int, stream: int) -> Any:
    """Uniform(0, 1) numbers, one per cell of ``rows × cols``, fixed by ``(seed, stream)``.

    A counter-based generator: the number for cell ``(i, j)`` depends only on ``i``, ``j``,
    the seed and the stream, never on which block asked for it.
    """
    jnp = import_jax()
    salt = np.uint32((seed * 0x9E3779B1 + stream * 0x85EBCA77) % 2**32)
    row_hash = _mix32(jnp.asarray(rows, dtype=jnp.uint32) ^ salt)
    cell = _mix32(row_hash[:, None] + jnp.asarray(cols, dtype=jnp.uint32)[None, :] * 0x27D4EB2F)
    return (cell >> 8).astype(jnp.float32) * np.float32(2.0**-24)


# ------------------------------------------------------------------ sources
@dataclass(frozen=True)
class StreamingSimulation:
    """A simulated benchmark set generated cell by cell, never stored as a matrix.

    Benchmarks are contiguous equal blocks of items; benchmark ``b`` mainly measures
    dimension ``b mod n_dims`` (mean loading 1.0 there and 0.2 elsewhere, item loadings
    scattered around it with SD 0.25); intercepts are normal around a benchmark mean.
    Abilities are standard normal. Each cell is missing with probability
    ``missing_share``.

    Parameters
    ----------
    n_llms, n_items
        Size of the (virtual) response matrix; each at most 2³² − 1.
    n_dims
        Latent dimensions of the truth.
    n_benchmarks
        Number of benchmarks (items are split into equal contiguous blocks).
    missing_share
        Probability that a cell is unobserved.
    seed
        Fixes the true parameters and every response.

    """

    n_llms: int = 10_000
    n_items: int = 100_000
    n_dims: int = 2
    n_benchmarks: int = 16
    missing_share: float = 0.03
    seed: int = 0
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if min(self.n_llms, self.n_items, self.n_dims, self.n_benchmarks) < 1:
            raise ValueError("n_llms, n_items, n_dims and n_benchmarks must be positive")
        if max(self.n_llms, self.n_items) >= 2**32:
            raise ValueError("n_llms and n_items must each be below 2**32")
        if self.n_benchmarks > self.n_items:
            raise ValueError("n_benchmarks cannot exceed n_items")
        if not 0 <= self.missing_share < 1:
            raise ValueError("missing_share must be in [0, 1)")

    @property
    def llms(self) -> np.ndarray:
        """LLM names."""
        return np.array([f"llm_{i:05d}" for i in range(self.n_llms)])

    @property
    def items(self) -> np.ndarray:
        """Item names."""
        return np.array([f"item_{i:06d}" for i in range(self.n_items)])

    @property
    def benchmarks(self) -> tuple[str, ...]:
        """Benchmark names."""
        return tuple(f"bench_{b:02d}" for b in range(self.n_benchmarks))

    @property
    def item_benchmark(self) -> np.ndarray:
        """Benchmark code of every item."""
        return (np.arange(self.n_items) * self.n_benchmarks) // self.n_items

    @cached_property
    def truth(self) -> xr.Dataset:
        """The true parameters (small: ``(n_llms + n_items) × n_dims`` numbers)."""
        rng = np.random.default_rng([self.seed, 20261129])
        k, n_bench = self.n_dims, self.n_benchmarks
        bench_loading = np.full((n_bench, k), 0.2)
        bench_loading[np.arange(n_bench), np.arange(n_bench) % k] = 1.0
        bench_intercept = rng.normal(0.0, 0.5, n_bench)
        code = self.item_benchmark
        loading = bench_loading[code] + rng.normal(0.0, 0.25, (self.n_items, k))
        intercept = bench_intercept[code] + rng.normal(0.0, 1.0, self.n_items)
        ability = rng.normal(0.0, 1.0, (self.n_llms, k))
        dims = [f"dim_{d}" for d in range(k)]
        return xr.Dataset(
            {
                "ability": (("llm", "dimension"), ability),
                "loading": (("item", "dimension"), loading),
                "intercept": ("item", intercept),
                "benchmark_loading_mean": (("benchmark", "dimension"), bench_loading),
                "benchmark_intercept_mean": ("benchmark", bench_intercept),
            },
            coords={"dimension": dims, "benchmark": list(self.benchmarks)},
            attrs={"seed": self.seed, "missing_share": self.missing_share},
        )

    def _device_truth(self) -> tuple[Any, Any, Any]:
        if "device" not in self._cache:
            jnp = import_jax()
            truth = self.truth
            with _concrete():  # cache real arrays, not tracers, when first called inside jit
                self._cache["device"] = (
                    jnp.asarray(truth["ability"].values, dtype=jnp.float32),
                    jnp.asarray(truth["loading"].values, dtype=jnp.float32),
                    jnp.asarray(truth["intercept"].values, dtype=jnp.float32),
                )
        return self._cache["device"]

    def block(self, rows: Any, cols: Any) -> tuple[Any, Any]:
        """Responses and observed mask of ``rows × cols`` (made on demand, traceable)."""
        jnp = import_jax()
        ability, loading, intercept = self._device_truth()
        eta = linear_predictor(ability[rows], loading[cols], intercept[cols])
        prob = BINARY.expected_score(eta, xp=jnp)
        correct = (cell_uniforms(rows, cols, self.seed, 1) < prob).astype(jnp.float32)
        observed = (cell_uniforms(rows, cols, self.seed, 2) >= self.missing_share).astype(jnp.float32)
        return correct, observed

    def to_responses(self) -> ResponseMatrix:
        """The whole matrix as a :class:`ResponseMatrix` (only for sizes that fit in memory)."""
        values = self.block_numpy(np.arange(self.n_llms), np.arange(self.n_items))
        names = np.asarray(self.benchmarks)[self.item_benchmark]
        data = xr.DataArray(
            values,
            dims=("llm", "item"),
            coords={
                "llm": self.llms,
                "item": self.items,
                "benchmark": ("item", names),
                "subgroup": ("item", names),
            },
            name="correct",
        )
        return ResponseMatrix(data)

    def block_numpy(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """One block as a NumPy array with NaN for missing cells (for checks and tests)."""
        correct, observed = self.block(np.asarray(rows), np.asarray(cols))
        out = np.asarray(correct, dtype=float)
        out[np.asarray(observed) == 0] = np.nan
        return out


@dataclass(frozen=True)
class MatrixSource:
    """An in-memory :class:`ResponseMatrix` served block by block."""

    responses: ResponseMatrix
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def llms(self) -> np.ndarray:
        """LLM names."""
        return np.asarray(self.responses.llms)

    @property
    def items(self) -> np.ndarray:
        """Item names."""
        return np.asarray(self.responses.items)

    @property
    def benchmarks(self) -> tuple[str, ...]:
        """Benchmark names, in order of first appearance (as ``ModelIndex``)."""
        return tuple(map(str, pd.factorize(self.responses.benchmarks)[1]))

    @property
    def item_benchmark(self) -> np.ndarray:
        """Benchmark code of every item."""
        return pd.factorize(self.responses.benchmarks)[0]

    def _device_matrix(self) -> tuple[Any, Any]:
        if "device" not in self._cache:
            jnp = import_jax()
            values, observed = self.responses.values, self.responses.observed
            with _concrete():
                self._cache["device"] = (
                    jnp.asarray(np.where(observed, values, 0.0), dtype=jnp.float32),
                    jnp.asarray(observed, dtype=jnp.float32),
                )
        return self._cache["device"]

    def block(self, rows: Any, cols: Any) -> tuple[Any, Any]:
        """Responses (0 where unobserved) and observed mask of ``rows × cols``."""
        correct, observed = self._device_matrix()
        index = (rows[:, None], cols[None, :])
        return correct[index], observed[index]
