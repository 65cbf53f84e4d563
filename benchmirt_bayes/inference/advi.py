"""Seeded ADVI with a relative-ELBO stopping rule."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import pymc as pm
import xarray as xr


@dataclass
class ElboConvergence:
    """Stop when the mean loss of the last window moves by less than ``tolerance`` (relative).

    Also the fit's progress display (``progressbar``): the step, the mean loss of the last
    window and the relative change the rule compares, and one closing line that says
    whether the rule stopped the fit or the step budget ran out.

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
    progress: object | None = None
    task: object | None = None

    def __call__(self, approx: object, losses: np.ndarray, step: int) -> None:
        """PyMC callback: check every ``window`` steps."""
        if self.progress is not None and step % 10 == 0:
            loss = float(np.mean(losses[-self.window :]))
            change = self.relative_changes[-1] if self.relative_changes else float("nan")
            self.progress.update(self.task, completed=step, loss=f"{loss:,.0f}", change=f"{change:.1e}")
        if step % self.window or step < 2 * self.window:
            return
        last = float(np.mean(losses[-self.window :]))
        previous = float(np.mean(losses[-2 * self.window : -self.window]))
        change = abs(previous - last) / max(abs(last), 1e-12)
        self.relative_changes.append(change)
        if change < self.tolerance:
            self.fired = True
            raise StopIteration(f"ELBO converged: relative change {change:.2e} < {self.tolerance}")


@contextmanager
def _progress(rule: ElboConvergence, enabled: bool, max_steps: int, method: str):
    """A progress display that reads as the stopping rule does (PyMC's own is switched off)."""
    if not enabled:
        yield
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (
        SpinnerColumn(),
        TextColumn(f"{method.upper()}"),
        TextColumn("step {task.completed:>6,.0f} of at most {task.total:,.0f}"),
        TextColumn("· mean loss {task.fields[loss]}"),
        TextColumn("· relative change {task.fields[change]} (stops below " + f"{rule.tolerance:.0e})"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, transient=True) as progress:
        rule.progress, rule.task = progress, progress.add_task("advi", total=max_steps, loss="…", change="…")
        yield
    rule.progress = rule.task = None
    change = rule.relative_changes[-1] if rule.relative_changes else float("nan")
    if rule.fired:
        print(f"{method.upper()} converged: relative ELBO change {change:.2e} < {rule.tolerance:g}")
    else:
        print(
            f"{method.upper()} stopped at its step budget ({max_steps:,} steps) with relative ELBO change "
            f"{change:.2e} (tolerance {rule.tolerance:g}): raise AdviSettings.max_steps"
        )


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
    quiet = logging.getLogger("pymc.variational.inference")
    level = quiet.level
    quiet.setLevel(logging.WARNING)  # "Interrupted at 799 [3%]" reads as a failure; ours says what happened
    try:
        with model, _progress(rule, progressbar, max_steps, method):
            approx = pm.fit(
                n=max_steps,
                method=method,
                random_seed=random_seed,
                obj_optimizer=pm.adam(learning_rate=learning_rate),
                total_grad_norm_constraint=100.0,
                callbacks=[rule],
                progressbar=False,
                start=start,
            )
        with model:
            tree = approx.sample(draws, random_seed=random_seed + 1)
    finally:
        quiet.setLevel(level)
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
    # per restart, the very number the stopping rule compared (the stored record may end a step
    # earlier than the rule saw, so recomputing it from the record can differ)
    elbo["final_relative_change"] = xr.DataArray(elbo.attrs["final_relative_change"])
    elbo["stopping_rule_fired"] = xr.DataArray(bool(rule.fired))
    return AdviResult(tree["posterior"].to_dataset(), elbo)
