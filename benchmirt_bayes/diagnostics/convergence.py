"""`check_convergence`: is a fitted posterior trustworthy? (on identified quantities)."""

from __future__ import annotations

import html
from dataclasses import dataclass, field

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.diagnostics.approximation import PARETO_K_SAMPLES, advi_pareto_k, pareto_k_threshold
from benchmirt_bayes.posterior import (
    CRITERION_LABELS,
    KEPT_VARIABLES,
    OPTIMISATION_METHODS,
    deliberate_depth_cap,
    energy_bfmi,
    final_elbo,
    relative_change,
)

# every identified variable a fit returns, less those with structurally constant elements
# (zero offsets of single-subgroup benchmarks, the unit diagonal of a correlation matrix)
DEFAULT_VARIABLES = tuple(
    v for v in KEPT_VARIABLES if v not in ("subgroup_intercept_offset", "ability_correlation")
)


@dataclass
class ConvergenceReport:
    """Outcome of :func:`check_convergence`.

    Attributes
    ----------
    ok
        True when every check passed.
    method
        The fit's method (``nuts``, ``advi``, ...).
    table
        One row per variable: worst R-hat, lowest bulk and tail ESS, and how
        many elements fail (NUTS); or the ELBO record (ADVI).
    sampler_checks
        Divergences, tree-depth saturation, E-BFMI (NUTS) or ELBO change (ADVI).
    messages
        Plain-language findings, worst first.

    """

    ok: bool
    method: str
    table: pd.DataFrame
    sampler_checks: dict[str, float] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        verdict = "OK" if self.ok else "PROBLEMS FOUND"
        lines = [f"Convergence ({self.method}): {verdict}", *[f"  - {m}" for m in self.messages]]
        return "\n".join(lines) + "\n" + self.table.to_string()

    def _repr_html_(self) -> str:
        colour = "#1a7f37" if self.ok else "#b42318"
        verdict = "OK" if self.ok else "problems found"
        items = "".join(f"<li>{html.escape(m)}</li>" for m in self.messages)
        return (
            f"<div><b style='color:{colour}'>Convergence ({self.method}): {verdict}</b>"
            f"<ul>{items}</ul>{self.table.to_html(float_format=lambda v: f'{v:.3g}')}</div>"
        )


def check_convergence(
    posterior: xr.DataTree,
    *,
    var_names: tuple[str, ...] | None = None,
    rhat_max: float = 1.01,
    ess_bulk_min: float = 400,
    ess_tail_min: float = 400,
    max_divergences: int = 0,
    max_treedepth_share: float | None = None,
    bfmi_min: float = 0.3,
    elbo_tolerance: float | None = None,
    min_dimension_share: float = 0.01,
    pareto_k_samples: int | None = PARETO_K_SAMPLES,
) -> ConvergenceReport:
    """Check convergence of an identified posterior from :func:`fit_posterior`.

    Parameters
    ----------
    posterior
        The fit.
    var_names
        Variables to check (default: abilities, loadings, intercepts and the
        benchmark hyperparameters).
    rhat_max, ess_bulk_min, ess_tail_min
        Thresholds on rank-normalised split R-hat and bulk / tail ESS.
    max_divergences, max_treedepth_share, bfmi_min
        NUTS sampler thresholds. Truncated trees leave the chain valid but
        slower to mix, so a run whose depth cap was chosen to fit a time budget
        is judged by R-hat and ESS alone (``max_treedepth_share=1``). The default
        ``None`` does that for fits whose cap was the automatic large-data choice
        (``fit_posterior`` with no depth given on 10⁶ cells or more) and allows
        5 % of capped draws otherwise; the share is reported either way.
    elbo_tolerance
        ADVI: largest acceptable value of the criterion the fit's stopping rule compared
        (the loss trend over noise, or the relative change for fits stored before the
        noise rule; default: the tolerance the fit used).
    min_dimension_share
        Smallest share of the items' squared loadings (posterior means) that every
        dimension must carry; a dimension below it has collapsed (the fit may sit at the
        optimum of a model with fewer dimensions, or the data do not support that many).
        The shares are in ``sampler_checks`` as ``dimension_share_<name>``.
    pareto_k_samples
        Mean-field ADVI: draws from the approximation for the Pareto k̂ of its importance
        ratios (:func:`~benchmirt_bayes.diagnostics.approximation.advi_pareto_k`), reported
        per restart as ``pareto_k`` beside ``pareto_k_ok`` (k̂ below
        ``min(1 − 1/log₁₀ S, 0.7)``) and in ``sampler_checks["max_pareto_k"]``. ``ok`` says
        whether the optimisation converged; k̂ says whether what it converged to is a
        usable approximation of the posterior. ``None`` skips it (fits without their data
        or without a mean-field approximation report none).

    Returns
    -------
    ConvergenceReport

    """
    report = _check_method(
        posterior,
        var_names,
        rhat_max,
        ess_bulk_min,
        ess_tail_min,
        max_divergences,
        max_treedepth_share,
        bfmi_min,
        elbo_tolerance,
    )
    if report.method in ("advi", "minibatch_advi") and pareto_k_samples:
        _add_pareto_k(report, posterior, pareto_k_samples)
    shares = dimension_shares(posterior)
    report.sampler_checks.update({f"dimension_share_{name}": share for name, share in shares.items()})
    collapsed = {name: share for name, share in shares.items() if share < min_dimension_share}
    if collapsed and len(shares) > 1:
        report.ok = False
        listed = ", ".join(f"{name} ({share:.2%})" for name, share in collapsed.items())
        report.messages.insert(
            0,
            f"dimension(s) {listed} carry almost none of the items' squared loadings (< "
            f"{min_dimension_share:.0%}): the fit may have settled at a lower-dimensional optimum "
            "(ADVI: AdviSettings(starts=3), or NUTS), or the data support fewer dimensions",
        )
    return report


def dimension_shares(posterior: xr.DataTree) -> dict[str, float]:
    """Each dimension's share of the sum of squared posterior-mean loadings over items."""
    if "loading" not in posterior["posterior"]:
        return {}
    loading = posterior["posterior"]["loading"].mean(("chain", "draw")).transpose("item", "dimension")
    energy = (loading.values**2).sum(axis=0)
    total = max(float(energy.sum()), 1e-300)
    return {str(d): float(e / total) for d, e in zip(loading["dimension"].values, energy, strict=True)}


def _check_method(
    posterior: xr.DataTree,
    var_names: tuple[str, ...] | None,
    rhat_max: float,
    ess_bulk_min: float,
    ess_tail_min: float,
    max_divergences: int,
    max_treedepth_share: float | None,
    bfmi_min: float,
    elbo_tolerance: float | None,
) -> ConvergenceReport:
    method = posterior.attrs.get("benchmirt_method", "nuts")
    names = [v for v in (var_names or DEFAULT_VARIABLES) if v in posterior["posterior"]]
    if method in OPTIMISATION_METHODS:
        return _check_advi(posterior, elbo_tolerance)
    if method == "map":
        table = pd.DataFrame({"note": ["a MAP fit is one point: no convergence diagnostics"]})
        return ConvergenceReport(
            True,
            method,
            table,
            messages=["MAP gives a point estimate only; use method='nuts' for uncertainty"],
        )
    if max_treedepth_share is None:
        max_treedepth_share = 1.0 if deliberate_depth_cap(posterior) else 0.05
    return _check_nuts(
        posterior, names, rhat_max, ess_bulk_min, ess_tail_min, max_divergences, max_treedepth_share, bfmi_min
    )


def _check_nuts(
    posterior: xr.DataTree,
    names: list[str],
    rhat_max: float,
    ess_bulk_min: float,
    ess_tail_min: float,
    max_divergences: int,
    max_treedepth_share: float,
    bfmi_min: float,
) -> ConvergenceReport:
    post = posterior["posterior"].to_dataset()[names]
    if post.sizes["chain"] < 2:
        raise ValueError("R-hat needs at least 2 chains; refit with chains >= 2")
    rhat = az.rhat(post)
    ess_bulk = az.ess(post, method="bulk")
    ess_tail = az.ess(post, method="tail")
    rows = []
    for name in names:
        r, b, t = rhat[name].values, ess_bulk[name].values, ess_tail[name].values
        failing = (r > rhat_max) | (b < ess_bulk_min) | (t < ess_tail_min)
        rows.append(
            {
                "variable": name,
                "elements": r.size,
                "max_rhat": float(np.nanmax(r)),
                "min_ess_bulk": float(np.nanmin(b)),
                "min_ess_tail": float(np.nanmin(t)),
                "failing": int(failing.sum()),
            }
        )
    table = pd.DataFrame(rows).set_index("variable")
    messages, ok = [], True
    worst_rhat = table["max_rhat"].max()
    if worst_rhat > rhat_max:
        ok = False
        messages.append(
            f"R-hat up to {worst_rhat:.3f} (> {rhat_max}): chains disagree; run longer, "
            "check the restarts with check_stability, or reparameterise"
        )
    low_bulk = table["min_ess_bulk"].min()
    if low_bulk < ess_bulk_min:
        ok = False
        messages.append(f"bulk ESS as low as {low_bulk:.0f} (< {ess_bulk_min}): draw more")
    low_tail = table["min_ess_tail"].min()
    if low_tail < ess_tail_min:
        ok = False
        messages.append(f"tail ESS as low as {low_tail:.0f} (< {ess_tail_min}): intervals unreliable")
    checks = sampler_checks(posterior)
    if checks.get("divergences", 0) > max_divergences:
        ok = False
        messages.append(
            f"{int(checks['divergences'])} divergent transitions: the posterior has regions NUTS "
            "cannot explore; raise target_accept or reparameterise"
        )
    if checks.get("treedepth_share", 0) > max_treedepth_share:
        ok = False
        messages.append(
            f"{checks['treedepth_share']:.1%} of draws hit the maximum tree depth: trajectories "
            "are truncated, which costs efficiency, not correctness; raise max_treedepth, or, when "
            "the cap is deliberate, let R-hat and ESS judge (max_treedepth_share=1)"
        )
    if checks.get("min_bfmi", np.inf) < bfmi_min:
        ok = False
        messages.append(
            f"E-BFMI {checks['min_bfmi']:.2f} (< {bfmi_min}): momentum resampling explores "
            "energy poorly (heavy tails or funnels)"
        )
    if ok:
        messages.append(
            f"all {int(table['elements'].sum())} checked quantities have R-hat ≤ {rhat_max} and "
            f"ESS ≥ {ess_bulk_min}; no sampler warnings"
        )
    return ConvergenceReport(ok, "nuts", table, checks, messages)


def sampler_checks(posterior: xr.DataTree) -> dict[str, float]:
    """Divergences, share of draws at maximum tree depth, and the lowest per-chain E-BFMI."""
    stats = posterior["sample_stats"].to_dataset()
    checks: dict[str, float] = {}
    for name in ("diverging", "divergent"):
        if name in stats:
            checks["divergences"] = float(stats[name].sum())
            break
    for name in ("maxdepth_reached", "reached_max_treedepth"):
        if name in stats:
            checks["treedepth_share"] = float(stats[name].mean())
            break
    if "bfmi" in stats:  # thinned fits: computed on every iteration before thinning
        checks["min_bfmi"] = float(stats["bfmi"].min())
    elif "energy" in stats:
        checks["min_bfmi"] = float(np.min(energy_bfmi(stats["energy"].transpose("chain", "draw").values)))
    return checks


def _add_pareto_k(report: ConvergenceReport, posterior: xr.DataTree, n_samples: int) -> None:
    """Add the approximation's k̂ per restart to an ADVI report (nothing when it cannot be had)."""
    if "observed_data" not in posterior.children or "q_mean" not in posterior["elbo"].data_vars:
        return
    khat = advi_pareto_k(posterior, n_samples=n_samples)
    limit = pareto_k_threshold(n_samples)
    report.table["pareto_k"] = khat
    report.table["pareto_k_ok"] = khat < limit
    report.sampler_checks["max_pareto_k"] = float(khat.max())
    if khat.max() < limit:
        report.messages.insert(-1, f"the approximation is usable: Pareto k̂ {khat.max():.2f} < {limit:.2f}")
    else:
        report.messages.insert(
            -1,
            f"the approximation is poor: Pareto k̂ {khat.max():.2f} ≥ {limit:.2f} (its importance ratios "
            "have a heavy tail); its means may hold but its intervals are too narrow: use NUTS for "
            "anything that reads an interval",
        )


def _check_advi(posterior: xr.DataTree, tolerance: float | None) -> ConvergenceReport:
    elbo = posterior["elbo"].to_dataset()
    window = int(elbo.attrs.get("window", 200))
    rule = str(elbo.attrs.get("stopping", "relative"))
    tol = tolerance if tolerance is not None else float(elbo.attrs.get("tolerance", 1e-3))
    label = CRITERION_LABELS.get(rule, rule)
    rows, messages, ok = [], [], True
    polish = int(elbo.attrs.get("polish_steps", 0))  # the polish phase always runs to its end
    for restart in elbo["restart"].values:
        record = elbo["elbo"].sel(restart=restart).dropna("step").values
        stored = next((n for n in ("final_criterion", "final_relative_change") if n in elbo), None)
        if stored is not None:  # the very number the stopping rule compared
            value = float(elbo[stored].sel(restart=restart))
            fired = bool(elbo["stopping_rule_fired"].sel(restart=restart))
        else:  # fits stored before 0.2, and minibatch fits
            value = relative_change(record, window)
            fired = (
                bool(elbo.attrs.get("stopping_rule_fired", 0))
                if elbo.sizes["restart"] == 1
                else bool(np.isfinite(value) and value < tol)
            )
        rows.append(
            {
                "restart": int(restart),
                "steps": record.size,
                "final_elbo": final_elbo(record, window),
                "stopping_criterion": value,
                "stopping_rule_fired": fired,
            }
        )
        if not np.isfinite(value):
            ok = False
            messages.append(
                f"restart {restart}: the search ended at its step budget, before the stopping "
                f"rule first checked{f' (then {polish} polish steps ran)' if polish else ''}; "
                "raise AdviSettings.max_steps"
            )
        elif value > tol:
            ok = False
            messages.append(
                f"restart {restart}: ELBO still moving ({label} {value:.2g} > {tol:g}); "
                "raise AdviSettings.max_steps"
            )
    if ok:
        messages.append(f"ELBO converged in every restart ({label} below {tol:g})")
    messages.append(
        "ADVI is an approximation: mean-field ADVI understates posterior spread; confirm key "
        "results with NUTS"
    )
    table = pd.DataFrame(rows).set_index("restart")
    return ConvergenceReport(
        ok,
        posterior.attrs.get("benchmirt_method", "advi"),
        table,
        {"min_stopping_criterion": float(table["stopping_criterion"].min())},
        messages,
    )
