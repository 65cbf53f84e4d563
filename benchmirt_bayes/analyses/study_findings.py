"""The BenchMIRT study's findings, checked on a two-dimension fit of BenchMIRT-like data.

The study (100 LLMs × 16 benchmarks, two dimensions) reports what each benchmark measures:
reasoning benchmarks track reasoning; HarmBench tracks safety, its copyright items much less
than its standard and contextual ones; BBQ tracks reasoning more than safety; WMDP tracks
reasoning negatively; WildJailbreak's harmful items track safety and its benign items
reasoning. The built-in simulator plants them. :func:`study_findings` says which of them a
fit shows, from :func:`~benchmirt_bayes.analyses.audit.benchmark_correlations` (the
correlation across LLMs between each ability and each group's mean score, per draw).
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import xarray as xr

from benchmirt_bayes.analyses.audit import benchmark_correlations
from benchmirt_bayes.posterior import responses_from_tree

REASONING_BENCHMARKS = ("BBH", "GPQA", "MATH", "MMLU-Pro", "MuSR", "IFEval")
"""Benchmarks the study finds on the reasoning dimension (correlation above 0.5 and above safety's)."""

REASONING_ANCHOR = "MMLU-Pro"
"""The benchmark that names the reasoning dimension: the one it correlates with most."""

SUBGROUP_MARGIN = 0.2
"""How much lower HarmBench's copyright items must correlate with safety than its other subgroups."""


def study_findings(posterior: xr.DataTree, *, seed: int = 0) -> pd.DataFrame:
    """Which of the study's findings a two-dimension fit shows.

    Parameters
    ----------
    posterior
        A two-dimension fit of data with the study's benchmarks and subgroup labels (the
        built-in simulated set, or the study's release); benchmarks or subgroups it lacks
        make their findings ``holds = NaN``.
    seed
        Seed of :func:`benchmark_correlations`' draw subsample.

    Returns
    -------
    pandas.DataFrame
        One row per finding: ``finding``, ``holds`` (``True``/``False``, ``NaN`` where the
        data lack what it is about) and ``evidence`` (the posterior mean correlations, and
        for WMDP the upper end of its 90 % interval, that decided it). The reasoning
        dimension is the one that ``MMLU-Pro`` correlates with most.

    """
    if posterior["posterior"].sizes["dimension"] != 2:
        raise ValueError("the study's findings are about two dimensions; fit n_dims=2")
    responses = responses_from_tree(posterior)
    audit = benchmark_correlations(posterior, responses, seed=seed)
    by_benchmark = audit.wide()
    if REASONING_ANCHOR not in by_benchmark.index:
        raise ValueError(f"the fit has no {REASONING_ANCHOR!r} items to name the reasoning dimension by")
    reasoning = by_benchmark.loc[REASONING_ANCHOR].idxmax()
    safety = next(d for d in by_benchmark.columns if d != reasoning)
    upper = audit.wide("r_upper")
    by_subgroup = (
        benchmark_correlations(posterior, responses, by="subgroup", seed=seed).wide()
        if "subgroup" in responses.item_coords
        else pd.DataFrame()
    )

    dims = {"reasoning": reasoning, "safety": safety}
    rows = []

    def value(table: pd.DataFrame, group: str, dim: str) -> float | None:
        return float(table.loc[group, dim]) if group in table.index else None

    def add(finding: str, values: dict[str, float | None], rule: Callable[..., bool]) -> None:
        known = None not in values.values()
        evidence = ", ".join(f"{k} {v:+.2f}" for k, v in values.items() if v is not None)
        holds = bool(rule(*values.values())) if known else None
        rows.append({"finding": finding, "holds": holds, "evidence": evidence})

    def tracks(table: pd.DataFrame, group: str, more: str, less: str, at_least: float = -1.0) -> None:
        values = {d: value(table, group, dims[d]) for d in (more, less)}
        above = f"r > {at_least} and above {less}" if at_least > -1 else f"more than {less}"
        add(f"{group} tracks {more} ({above})", values, lambda a, b: a > max(at_least, b))

    for bench in REASONING_BENCHMARKS:
        tracks(by_benchmark, bench, "reasoning", "safety", at_least=0.5)
    tracks(by_benchmark, "HarmBench", "safety", "reasoning")
    tracks(by_benchmark, "BBQ", "reasoning", "safety")
    add(
        "WMDP tracks reasoning negatively (90 % interval below zero)",
        {"reasoning": value(by_benchmark, "WMDP", reasoning), "upper": value(upper, "WMDP", reasoning)},
        lambda _mean, top: top < 0,
    )
    add(
        f"HarmBench/copyright tracks safety at least {SUBGROUP_MARGIN} less than standard and contextual",
        {g: value(by_subgroup, f"HarmBench/{g}", safety) for g in ("copyright", "standard", "contextual")},
        lambda copyright, standard, contextual: copyright < min(standard, contextual) - SUBGROUP_MARGIN,
    )
    tracks(by_subgroup, "WildJailbreak/harmful", "safety", "reasoning")
    tracks(by_subgroup, "WildJailbreak/benign", "reasoning", "safety")
    return pd.DataFrame(rows, columns=["finding", "holds", "evidence"])
