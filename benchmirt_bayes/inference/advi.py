"""Seeded ADVI: a stopping rule, then a short low-learning-rate polish."""

from __future__ import annotations

import logging
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import pymc as pm
import pytensor
import xarray as xr

from benchmirt_bayes.posterior import CRITERION_LABELS, relative_change, with_variational

TREND_WINDOWS = 5
"""Windows over which the noise rule fits its linear trend of the loss."""

POLISH_FACTOR = 0.1
"""Learning rate of the polish phase, as a share of the search phase's."""

NAN_RETRIES = 2
"""Reruns of an optimisation whose ELBO became NaN, each at a lower learning rate."""

NAN_RATE_FACTOR = 0.25
"""Learning rate of each rerun, as a share of the previous one's."""


def trend_in_noise_units(losses: np.ndarray) -> float:
    """How far a straight line fitted to ``losses`` falls over their span, in per-step noise SDs.

    The noise SD is that of the residuals around the line (the Monte Carlo noise of one
    step's loss estimate). Positive while the loss still falls.
    """
    steps = np.arange(losses.size, dtype=float)
    slope, intercept = np.polyfit(steps, losses, 1)
    noise = float(np.std(losses - (intercept + slope * steps)))
    return float(-slope * losses.size / max(noise, 1e-12))


@dataclass
class ElboConvergence:
    """When the search phase ends, then the polish phase; also the fit's progress display.

    Every ``window`` steps the rule checks one criterion:

    - ``"noise"``: the drop of a straight line fitted to the loss over the last
      ``TREND_WINDOWS`` windows, in units of the per-step noise SD around it. The search
      ends when it falls below ``tolerance``: continuing would gain less than the noise of
      one step. A trend over several windows is needed because the difference of two
      windows' means is as noisy as the improvement it has to detect, so a two-window rule
      fires by chance.
    - ``"relative"``: the relative change of the mean loss between the last two windows
      (the rule of fits stored before the noise rule).

    Then ``polish_steps`` steps run at ``POLISH_FACTOR`` times the learning rate, which
    lets the parameters settle from the jitter of the search's step size; the fit's final
    ELBO is the mean of the last window of that phase. ``fired`` is False when the step
    budget ended the search instead.
    """

    window: int = 200
    tolerance: float = 1.0
    stopping: str = "noise"
    polish_steps: int = 0
    max_steps: int = 20000
    learning_rate: object | None = None
    fired: bool = False
    criteria: list[float] = field(default_factory=list)
    polish_from: int | None = None
    progress: object | None = None
    task: object | None = None

    def __call__(self, approx: object, losses: np.ndarray, step: int) -> None:
        """PyMC callback: check every ``window`` steps."""
        if self.progress is not None and step % 10 == 0:
            loss = float(np.mean(losses[-self.window :]))
            value = self.criteria[-1] if self.criteria else float("nan")
            self.progress.update(self.task, completed=step, loss=f"{loss:,.0f}", change=f"{value:.2g}")
        if self.polish_from is not None:
            if step - self.polish_from >= self.polish_steps:
                raise StopIteration("polish phase done")
            return
        if step >= self.max_steps:
            self._end_search(step)
            return
        needed = (TREND_WINDOWS if self.stopping == "noise" else 2) * self.window
        if step % self.window or step < needed:
            return
        if self.stopping == "noise":
            value = trend_in_noise_units(np.asarray(losses[-needed:], dtype=float))
        else:
            value = relative_change(np.asarray(losses, dtype=float), self.window)
        self.criteria.append(value)
        if value < self.tolerance:
            self.fired = True
            self._end_search(step)

    def _end_search(self, step: int) -> None:
        if self.polish_steps <= 0:
            raise StopIteration("search ended; no polish phase")
        self.polish_from = step
        if self.learning_rate is not None:
            self.learning_rate.set_value(self.learning_rate.get_value() * POLISH_FACTOR)

    @property
    def label(self) -> str:
        """What the progress display and the closing line call the criterion."""
        return CRITERION_LABELS[self.stopping]


@contextmanager
def optimisation_progress(rule: ElboConvergence, enabled: bool, method: str):
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
        TextColumn(f"· {rule.label} " + "{task.fields[change]}"),
        TextColumn(f"(search stops below {rule.tolerance:g})"),
        TimeElapsedColumn(),
    )
    total = rule.max_steps + rule.polish_steps
    with Progress(*columns, transient=True) as progress:
        rule.progress, rule.task = progress, progress.add_task("advi", total=total, loss="…", change="…")
        yield
    rule.progress = rule.task = None
    value = rule.criteria[-1] if rule.criteria else float("nan")
    polish = f", then {rule.polish_steps:,} polish steps" if rule.polish_steps else ""
    if rule.fired:
        print(f"{method.upper()} converged: {rule.label} {value:.2g} < {rule.tolerance:g}{polish}")
    else:
        print(
            f"{method.upper()} stopped at its step budget ({rule.max_steps:,} steps) with {rule.label} "
            f"{value:.2g} (tolerance {rule.tolerance:g}){polish}: raise AdviSettings.max_steps"
        )


def elbo_record(
    losses: np.ndarray, rule: ElboConvergence, *, method: str, learning_rate: float
) -> xr.Dataset:
    """An ADVI fit's optimisation record: the ELBO per step, the stopping rule and its verdict.

    ``final_criterion`` and ``stopping_rule_fired`` are kept per restart as variables too:
    the very number the rule compared cannot be recomputed from the record once the
    polish phase has run.
    """
    final = rule.criteria[-1] if rule.criteria else np.nan
    elbo = xr.Dataset(
        {"elbo": ("step", -losses)},
        coords={"step": np.arange(1, losses.size + 1)},
        attrs={
            "method": method,
            "steps": int(losses.size),
            "max_steps": rule.max_steps,
            "stopping": rule.stopping,
            "tolerance": rule.tolerance,
            "polish_steps": rule.polish_steps,
            "window": rule.window,
            "learning_rate": learning_rate,
            "stopping_rule_fired": int(rule.fired),
            "final_criterion": final,
        },
    )
    elbo["final_criterion"] = xr.DataArray(final)
    elbo["stopping_rule_fired"] = xr.DataArray(bool(rule.fired))
    return elbo


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
    stopping: str = "noise",
    tolerance: float = 1.0,
    polish_steps: int = 1000,
    window: int = 200,
    learning_rate: float = 0.02,
    seed: int,
    progressbar: bool = True,
    start: dict | None = None,
) -> AdviResult:
    """Fit mean-field (``"advi"``) or full-rank (``"fullrank_advi"``) ADVI and draw from it.

    Adam with gradient-norm clipping: PyMC's default optimiser diverges to NaN
    on this model (see ``shared/docs/MEASURED.md``). The step size is a shared variable so
    that the polish phase (:class:`ElboConvergence`) lowers it without recompiling.

    An optimisation whose ELBO becomes NaN is rerun from the same start and seed at
    ``NAN_RATE_FACTOR`` times the learning rate, at most ``NAN_RETRIES`` times (with a
    warning); the rate that finished is recorded in the ELBO record's attrs
    (``learning_rate``, ``nan_retries``), so the fit stays reproducible from its settings.

    Raises
    ------
    FloatingPointError
        When every rate diverged.

    """
    rates = [learning_rate * NAN_RATE_FACTOR**k for k in range(NAN_RETRIES + 1)]
    for retry, rate in enumerate(rates):
        try:
            result = _run_advi_once(
                model,
                method=method,
                draws=draws,
                max_steps=max_steps,
                stopping=stopping,
                tolerance=tolerance,
                polish_steps=polish_steps,
                window=window,
                learning_rate=rate,
                seed=seed,
                progressbar=progressbar,
                start=start,
            )
        except FloatingPointError:
            if retry < NAN_RETRIES:
                warnings.warn(
                    f"ADVI diverged (a NaN ELBO) at learning rate {rate:.3g}; "
                    f"rerunning it at {rates[retry + 1]:.3g}",
                    RuntimeWarning,
                    stacklevel=2,
                )
                continue
            raise FloatingPointError(
                f"ADVI diverged (a NaN ELBO) at learning rates {', '.join(f'{r:.3g}' for r in rates)}; "
                "set AdviSettings(learning_rate=...) lower, or fit with method='nuts'"
            ) from None
        result.elbo.attrs["nan_retries"] = retry
        return result


def _run_advi_once(
    model: pm.Model,
    *,
    method: str,
    draws: int,
    max_steps: int,
    stopping: str,
    tolerance: float,
    polish_steps: int,
    window: int,
    learning_rate: float,
    seed: int,
    progressbar: bool,
    start: dict | None,
) -> AdviResult:
    """One optimisation at one learning rate (see :func:`run_advi`)."""
    rate = pytensor.shared(np.asarray(learning_rate, dtype=pytensor.config.floatX), name="learning_rate")
    rule = ElboConvergence(
        window=window,
        tolerance=tolerance,
        stopping=stopping,
        polish_steps=polish_steps,
        max_steps=max_steps,
        learning_rate=rate,
    )
    quiet = logging.getLogger("pymc.variational.inference")
    level = quiet.level
    quiet.setLevel(logging.WARNING)  # "Interrupted at 799 [3%]" reads as a failure; ours says what happened
    try:
        with model, optimisation_progress(rule, progressbar, method):
            approx = pm.fit(
                n=max_steps + polish_steps,
                method=method,
                random_seed=seed,
                obj_optimizer=pm.adam(learning_rate=rate),
                total_grad_norm_constraint=100.0,
                callbacks=[rule],
                progressbar=False,
                start=start,
            )
        with model:
            tree = approx.sample(draws, random_seed=seed + 1)
    finally:
        quiet.setLevel(level)
    elbo = elbo_record(np.asarray(approx.hist, dtype=float), rule, method=method, learning_rate=learning_rate)
    if method == "advi":  # the mean-field q itself, for its Pareto k̂ (check_convergence)
        group = approx.groups[0]
        layout = [(name, s.start, s.stop, tuple(shape)) for name, s, shape, _ in group.ordering.values()]
        elbo = with_variational(elbo, approx.mean.eval(), approx.std.eval(), layout)
    return AdviResult(tree["posterior"].to_dataset(), elbo)
