"""`check_stability`: whether independent restarts find the same dimensions."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.rotations import procrustes, tucker_congruence


@dataclass
class StabilityReport:
    """Outcome of :func:`check_stability`.

    Attributes
    ----------
    stable
        The verdict.
    table
        One row per (restart, dimension) against the reference restart:
        matched reference dimension, Tucker congruence of mean loadings,
        correlation of mean abilities.
    rhat_between
        Largest between-restart R-hat over abilities and intercepts (restarts as
        super-chains: ArviZ's nested R-hat for NUTS; restarts as chains for
        one-chain-per-restart methods).
    reasons
        Why the verdict was reached.

    """

    stable: bool
    table: pd.DataFrame
    rhat_between: float
    reasons: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        verdict = "STABLE" if self.stable else "UNSTABLE"
        return "\n".join(
            [
                f"Stability across restarts: {verdict}",
                *[f"  - {r}" for r in self.reasons],
                self.table.to_string(),
            ]
        )

    def _repr_html_(self) -> str:
        colour = "#1a7f37" if self.stable else "#b42318"
        verdict = "stable" if self.stable else "unstable"
        items = "".join(f"<li>{html.escape(r)}</li>" for r in self.reasons)
        return (
            f"<div><b style='color:{colour}'>Stability across restarts: {verdict}</b>"
            f"<ul>{items}</ul>{self.table.to_html(float_format=lambda v: f'{v:.3f}')}</div>"
        )


def restart_means(posterior: xr.DataTree, name: str) -> list[np.ndarray]:
    """Posterior mean of ``name`` within each restart, in restart order."""
    post = posterior["posterior"]
    restarts = post["restart"].values
    values = post[name]
    return [
        values.isel(chain=np.flatnonzero(restarts == r)).mean(("chain", "draw")).values
        for r in np.unique(restarts)
    ]


def check_stability(
    posterior: xr.DataTree,
    *,
    congruence_min: float = 0.95,
    ability_correlation_min: float = 0.95,
    rhat_between_max: float = 1.05,
) -> StabilityReport:
    """Compare restarts of one fit (``fit_posterior(..., restarts=k)``).

    Each restart's mean loadings are aligned to restart 0's by orthogonal
    Procrustes (abilities with the same matrix); the matching of dimensions is
    read off the alignment matrix.

    Parameters
    ----------
    posterior
        A fit with at least two restarts.
    congruence_min
        Smallest acceptable Tucker congruence per dimension (0.95 is the
        usual "factors are equal" threshold, Lorenzo-Seva & ten Berge 2006).
    ability_correlation_min
        Smallest acceptable correlation of aligned mean abilities.
    rhat_between_max
        Largest acceptable between-restart R-hat (judged for NUTS fits only:
        ADVI and MAP draws understate the posterior spread).

    Returns
    -------
    StabilityReport

    """
    n_restarts = int(posterior.attrs.get("benchmirt_restarts", 1))
    if n_restarts < 2:
        raise ValueError("check_stability needs a fit with restarts >= 2 (fit_posterior(restarts=k))")
    loadings = restart_means(posterior, "loading")
    abilities = restart_means(posterior, "ability")
    dims = posterior["posterior"]["dimension"].values
    rows = []
    for r in range(1, n_restarts):
        rotation = procrustes(loadings[r], loadings[0])
        congruence = tucker_congruence(loadings[r] @ rotation, loadings[0])
        aligned = abilities[r] @ rotation
        for k, dim in enumerate(dims):
            rows.append(
                {
                    "restart": r,
                    "dimension": dim,
                    "matched_to": dims[int(np.argmax(np.abs(rotation[:, k])))],
                    "rotation_needed_deg": float(np.degrees(np.arccos(np.clip(abs(rotation[k, k]), 0, 1)))),
                    "tucker_congruence": float(congruence[k]),
                    "ability_correlation": float(np.corrcoef(aligned[:, k], abilities[0][:, k])[0, 1]),
                }
            )
    table = pd.DataFrame(rows).set_index(["restart", "dimension"])
    rhat_between = between_restart_rhat(posterior)
    reasons, stable = [], True
    low = table[table["tucker_congruence"] < congruence_min]
    if len(low):
        stable = False
        worst = low["tucker_congruence"].idxmin()
        reasons.append(
            f"{len(low)} restart × dimension pair(s) with loading congruence < {congruence_min} "
            f"(worst {low['tucker_congruence'].min():.3f}, restart {worst[0]}, {worst[1]}): the "
            "restarts found different dimensions — too many dimensions, or an unfinished fit"
        )
    weak = table[table["ability_correlation"] < ability_correlation_min]
    if len(weak):
        stable = False
        reasons.append(
            f"{len(weak)} pair(s) with ability correlation < {ability_correlation_min} "
            f"(lowest {weak['ability_correlation'].min():.3f})"
        )
    method = posterior.attrs.get("benchmirt_method", "nuts")
    if method == "nuts" and np.isfinite(rhat_between) and rhat_between > rhat_between_max:
        stable = False
        reasons.append(
            f"between-restart R-hat {rhat_between:.3f} > {rhat_between_max}: restarts disagree "
            "beyond their within-restart uncertainty"
        )
    elif method != "nuts":
        reasons.append(
            f"between-restart R-hat {rhat_between:.3f} reported, not judged: {method} draws "
            "understate posterior spread, so R-hat across restarts overstates disagreement"
        )
    if stable:
        reasons.append(
            f"all {n_restarts} restarts agree: congruence ≥ {table['tucker_congruence'].min():.3f}, "
            f"ability correlation ≥ {table['ability_correlation'].min():.3f}, between-restart "
            f"R-hat {rhat_between:.3f}"
        )
    return StabilityReport(stable, table, rhat_between, reasons)


def between_restart_rhat(
    posterior: xr.DataTree, var_names: tuple[str, ...] = ("ability", "intercept")
) -> float:
    """Largest R-hat over ``var_names`` with restarts as super-chains."""
    post = posterior["posterior"].to_dataset()[list(var_names)]
    restarts = post["restart"].values
    chains_per_restart = np.bincount(restarts)
    if chains_per_restart.min() >= 2:
        values = az.rhat_nested(post, superchain_ids=restarts.tolist())
    else:
        # one chain per restart (ADVI/MAP): restarts are the chains
        values = az.rhat(post)
    return float(max(np.nanmax(values[name].values) for name in var_names))


def restart_seeds_of(posterior: xr.DataTree) -> list[int]:
    """The seeds the restarts of a fit used."""
    return json.loads(posterior.attrs["benchmirt_restart_seeds"])
