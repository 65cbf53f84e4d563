"""Seeded ADVI with a relative-ELBO stopping rule."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pymc as pm
import xarray as xr


@dataclass
class ElboConvergence:
    """Stop when the mean loss of the last window moves by less than ``tolerance`` (relative).

    Attributes
    ----------
    window
        Steps per window; the rule compares the last two windows' mean loss.
    tolerance
        Relative change below which the fit stops.
    fired
        Whether the rule stopped the fit (False: the step budget ran out).
    relative_changes
        The relative change at every check.

    """

    window: int = 200
    tolerance: float = 1e-3
    fired: bool = False
    relative_changes: list[float] = field(default_factory=list)

    def __call__(self, approx: object, losses: np.ndarray, step: int) -> None:
        """PyMC callback: check every ``window`` steps."""
        if step % self.window or step < 2 * self.window:
            return
        last = float(np.mean(losses[-self.window :]))
        previous = float(np.mean(losses[-2 * self.window : -self.window]))
        change = abs(previous - last) / max(abs(last), 1e-12)
        self.relative_changes.append(change)
        if change < self.tolerance:
            self.fired = True
            raise StopIteration(f"ELBO converged: relative change {change:.2e} < {self.tolerance}")


def final_elbo(elbo: xr.Dataset, window: int) -> float:
    """Mean ELBO over the last ``window`` steps (the value the stopping rule compares)."""
    values = np.asarray(elbo["elbo"].values, dtype=float)
    values = values[np.isfinite(values)]
    return float(np.mean(values[-window:])) if values.size else float("nan")


@dataclass(frozen=True)
class AdviResult:
    """Draws from the fitted approximation and the optimisation record."""

    posterior: xr.Dataset
    elbo: xr.Dataset


def run_advi(
    model: pm.Model,
    *,
    method: str = "advi",
    draws: int = 1000,
    max_steps: int = 20000,
    tolerance: float = 1e-3,
    window: int = 200,
    learning_rate: float = 0.02,
    random_seed: int,
    progressbar: bool = True,
    start: dict | None = None,
) -> AdviResult:
    """Fit mean-field (``"advi"``) or full-rank (``"fullrank_advi"``) ADVI and draw from it.

    Adam with gradient-norm clipping: PyMC's default optimiser diverges to NaN
    on this model (see ``shared/docs/MEASURED.md``).
    """
    rule = ElboConvergence(window=window, tolerance=tolerance)
    with model:
        approx = pm.fit(
            n=max_steps,
            method=method,
            random_seed=random_seed,
            obj_optimizer=pm.adam(learning_rate=learning_rate),
            total_grad_norm_constraint=100.0,
            callbacks=[rule],
            progressbar=progressbar,
            start=start,
        )
        tree = approx.sample(draws, random_seed=random_seed + 1)
    losses = np.asarray(approx.hist, dtype=float)
    elbo = xr.Dataset(
        {"elbo": ("step", -losses)},
        coords={"step": np.arange(1, losses.size + 1)},
        attrs={
            "method": method,
            "steps": int(losses.size),
            "max_steps": max_steps,
            "tolerance": tolerance,
            "window": window,
            "learning_rate": learning_rate,
            "stopping_rule_fired": int(rule.fired),
            "final_relative_change": rule.relative_changes[-1] if rule.relative_changes else np.nan,
        },
    )
    return AdviResult(tree["posterior"].to_dataset(), elbo)
