"""Chance floors and capped items planted in simulated binary benchmarks (3PL / 4PL truth)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from benchmirt_bayes.response_types.base import logit, sigmoid


@dataclass(frozen=True)
class AsymptotePlan:
    """Floors and ceilings to plant in ``simulate_benchmirt(asymptotes=)``.

    Attributes
    ----------
    n_options
        Benchmark → number of answer options. Each of its items gets a floor
        ``g = σ(logit(1 / n_options) + floor_sd · z)``: a guess among the options, give or take.
    capped_share
        Benchmark → share of its items whose ceiling ``u`` lies below one (drawn uniformly
        from ``ceiling_range``; a wrong key or an ambiguous item); the other items reach one.
    floor_sd
        Spread of the floors around the chance rate on the logit scale.
    ceiling_range
        Range of the ceilings of capped items.

    """

    n_options: Mapping[str, int] = field(default_factory=dict)
    capped_share: Mapping[str, float] = field(default_factory=dict)
    floor_sd: float = 0.3
    ceiling_range: tuple[float, float] = (0.55, 0.85)

    def __post_init__(self) -> None:
        bad = {
            b: n for b, n in self.n_options.items() if isinstance(n, bool) or not isinstance(n, int) or n < 2
        }
        if bad:
            raise ValueError(f"n_options must be integers of at least 2, got {bad}")
        bad_share = {b: s for b, s in self.capped_share.items() if not 0 <= s <= 1}
        if bad_share:
            raise ValueError(f"capped_share must lie in [0, 1], got {bad_share}")
        low, high = self.ceiling_range
        if not 0 < low <= high < 1:
            raise ValueError(f"ceiling_range must satisfy 0 < low <= high < 1, got {self.ceiling_range}")
        if self.floor_sd < 0:
            raise ValueError(f"floor_sd must be non-negative, got {self.floor_sd}")

    def benchmarks(self) -> set[str]:
        """Every benchmark the plan names."""
        return set(self.n_options) | set(self.capped_share)

    def draw(
        self, benchmarks: np.ndarray, binary: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """True ``floor`` and ``ceiling`` of every item (0 and 1 where nothing is planted).

        Raises
        ------
        ValueError
            When the plan names benchmarks that are not binary benchmarks of the data.

        """
        benchmarks = np.asarray(benchmarks, dtype=str)
        known = set(benchmarks[binary].tolist())
        unknown = sorted(self.benchmarks() - known)
        if unknown:
            raise ValueError(
                f"asymptotes name benchmark(s) {unknown} that are not binary benchmarks: {sorted(known)}"
            )
        floor, ceiling = np.zeros(benchmarks.size), np.ones(benchmarks.size)
        for bench in sorted(self.benchmarks()):
            items = np.flatnonzero(benchmarks == bench)
            if bench in self.n_options:
                centre = logit(1.0 / self.n_options[bench])
                floor[items] = sigmoid(centre + self.floor_sd * rng.standard_normal(items.size))
            share = self.capped_share.get(bench, 0.0)
            capped = items[rng.random(items.size) < share]
            ceiling[capped] = rng.uniform(*self.ceiling_range, size=capped.size)
        return floor, np.maximum(ceiling, floor + 0.05)
