"""Differential item functioning between LLM groups: ``differential_item_functioning``.

An item functions differently for a group of LLMs (a family, reasoning models, base models)
when, at equal ability, the group succeeds on it more or less often than the model says.
For every posterior draw and item the focal group's logits on the item get a shift ``δ``
(uniform DIF) beside a shift ``c`` shared by every LLM (the fitted intercept has absorbed
part of any group difference, so ``δ`` must be the contrast, not the remainder): both are
estimated at the mode of the item's log-likelihood with the abilities and items of that
draw held fixed (:func:`~benchmirt_bayes.analyses.item_regression.item_coefficient`, with
the focal-group indicator as covariate; its wide priors only keep a group that solves
every item finite). The draws' estimates
are pooled (mean, and total variance within plus between draws), so the uncertainty of the
abilities and of the items is carried.

Thousands of items need a false-discovery control. Across items the estimates follow a
two-group model, ``δ̂_i ~ π₀ N(0, s_i²) + (1 − π₀) N(0, s_i² + τ²)``, fitted by maximum
likelihood; each item's local false-discovery rate ``lfdr_i`` is the posterior probability
of the null component and ``p_dif = 1 − lfdr_i`` (Efron 2008). The flags do not rest on that
model: its normal alternative puts mass near zero, so when the real shifts are few and large
the ``lfdr`` of null items with ``|z|`` near 3 is too small and a set chosen by mean ``lfdr``
holds more false discoveries than stated. The flagged items are those that the
Benjamini–Hochberg procedure at level ``fdr`` keeps on the two-sided normal p-values of
``z = δ̂ / sd``, which needs only that the null items' ``z`` are standard normal.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import xarray as xr
from scipy.special import logsumexp
from scipy.stats import false_discovery_control, norm

from benchmirt_bayes.analyses.item_regression import item_coefficient, pooled
from benchmirt_bayes.draws import PosteriorDraws


def differential_item_functioning(
    posterior: xr.DataTree,
    group: str | Mapping[str, str],
    *,
    focal: str | None = None,
    fdr: float = 0.1,
    n_draws: int = 50,
    seed: int = 0,
) -> pd.DataFrame:
    """Items that behave differently for one group of LLMs at equal ability.

    Parameters
    ----------
    posterior
        A fit whose data carry LLM metadata (``load_responses(..., llm_metadata=...)``).
    group
        The LLM coordinate that defines the groups (``"family"``), or a mapping LLM → group.
    focal
        The group compared with all other LLMs (default: every group in turn).
    fdr
        False-discovery rate of the flags over items (Benjamini–Hochberg, per focal group).
    n_draws
        Posterior draws used.
    seed
        Seed of the draw subsample.

    Returns
    -------
    DataFrame
        One row per (focal group, item): ``focal``, ``item``, ``benchmark``, ``n_focal``
        (focal LLMs that answered), ``delta_mean`` (posterior mean shift of the focal group's
        logit, > 0: easier for the group), ``delta_sd``, ``lfdr``, ``p_dif``, ``p_value``
        (two-sided, of ``z``), ``flagged`` and ``z = delta_mean / delta_sd``. Sorted by
        focal group, then ``lfdr``, then ``|z|``. The two-group fit (``pi0``, ``tau``) per
        focal group is in ``.attrs["two_group"]``.

    """
    if not 0 < fdr < 1:
        raise ValueError(f"fdr must be in (0, 1), got {fdr!r}")
    draws = PosteriorDraws.from_posterior(posterior, n_draws, seed=seed, abilities=True)
    responses, layout = draws.responses, draws.layout
    labels = _llm_groups(responses, group)
    if len(set(labels)) < 2:
        raise ValueError(
            f"DIF compares a group with the other LLMs, but every LLM is in group {labels[0]!r}; "
            "pass a grouping with at least two groups"
        )
    levels = [focal] if focal is not None else list(pd.unique(labels))
    if focal is not None and focal not in set(labels):
        raise KeyError(f"no LLM is in group {focal!r}; groups: {sorted(set(labels))}")
    observed = responses.observed
    y = np.where(observed, responses.values, 0.0)
    estimates = {level: [] for level in levels}
    for eta, params in draws:
        for level in levels:
            in_focal = (labels == level)[:, None] & observed
            estimates[level].append(item_coefficient(layout, y, eta, params, observed, in_focal))
    frames, fits = [], {}
    for level in levels:
        delta, delta_sd = pooled(*zip(*estimates[level], strict=True))
        n_focal = ((labels == level)[:, None] & observed).sum(axis=0)
        usable = n_focal > 0
        pi0, tau = _two_group_fit(delta[usable], delta_sd[usable])
        lfdr = np.ones_like(delta)
        lfdr[usable] = _local_fdr(delta[usable], delta_sd[usable], pi0, tau)
        strength = np.abs(delta) / delta_sd
        p_value = np.where(usable, 2.0 * norm.sf(strength), 1.0)
        flagged = false_discovery_control(p_value, method="bh") <= fdr
        fits[level] = {"pi0": pi0, "tau": tau}
        frames.append(
            pd.DataFrame(
                {
                    "focal": level,
                    "item": responses.items.astype(str),
                    "benchmark": responses.benchmarks.astype(str),
                    "n_focal": n_focal,
                    "delta_mean": delta,
                    "delta_sd": delta_sd,
                    "lfdr": lfdr,
                    "p_dif": 1.0 - lfdr,
                    "p_value": p_value,
                    "flagged": flagged,
                    "z": np.where(delta >= 0, 1.0, -1.0) * strength,
                }
            )
            .assign(_strength=strength)
            .sort_values(["lfdr", "_strength"], ascending=[True, False], kind="stable")
            .drop(columns="_strength")
        )
    table = pd.concat(frames, ignore_index=True)
    table.attrs = {"two_group": fits, "fdr": fdr, "group": group if isinstance(group, str) else "mapping"}
    return table


def _llm_groups(responses, group: str | Mapping[str, str]) -> np.ndarray:
    llms = responses.llms.astype(str)
    if isinstance(group, str):
        if group not in responses.llm_coords:
            raise KeyError(
                f"the fit's data have no LLM metadata {group!r} (LLM metadata: {responses.llm_coords}); "
                "load it with load_responses(..., llm_metadata=...) before fitting, or pass a mapping"
            )
        return responses.data[group].values.astype(str)
    missing = [llm for llm in llms if llm not in group]
    if missing:
        raise KeyError(f"{len(missing)} LLM(s) have no group: {missing[:10]}")
    return np.array([str(group[llm]) for llm in llms])


def _two_group_fit(delta: np.ndarray, sd: np.ndarray) -> tuple[float, float]:
    """Maximum-likelihood ``(π₀, τ)`` of the null / non-null mixture on a grid."""
    if delta.size == 0:
        return 1.0, 0.0
    best = (-np.inf, 1.0, 0.0)
    null = norm.logpdf(delta, 0.0, sd)
    for tau in np.geomspace(0.05, 5.0, 40):
        alternative = norm.logpdf(delta, 0.0, np.sqrt(sd**2 + tau**2))
        for pi0 in np.linspace(0.02, 1.0, 50):
            value = _log_mixture(null, alternative, pi0).sum()
            if value > best[0]:
                best = (value, pi0, tau)
    return float(best[1]), float(best[2])


def _local_fdr(delta: np.ndarray, sd: np.ndarray, pi0: float, tau: float) -> np.ndarray:
    if pi0 >= 1.0:
        return np.ones_like(delta)
    null = norm.logpdf(delta, 0.0, sd)
    alternative = norm.logpdf(delta, 0.0, np.sqrt(sd**2 + tau**2))
    return np.exp(np.log(pi0) + null - _log_mixture(null, alternative, pi0))


def _log_mixture(null: np.ndarray, alternative: np.ndarray, pi0: float) -> np.ndarray:
    """``log(π₀ e^null + (1 − π₀) e^alternative)`` elementwise, exact at ``π₀ = 1``."""
    return logsumexp(np.stack([null, alternative]), b=np.array([[pi0], [1.0 - pi0]]), axis=0)
