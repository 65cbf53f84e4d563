"""Let the data choose each benchmark's binary model: ``"auto"`` asymptotes in the spec.

A spec whose ``[binary]`` section says ``"auto"`` for a benchmark (or as the default
``asymptotes``) leaves the choice between the 2PL, the 3PL (a floor) and the 4PL (a floor
and a ceiling) to :func:`choose_asymptotes`: it fits the data once per candidate, with every
``"auto"`` benchmark given that candidate, compares the fits benchmark by benchmark with
PSIS-LOO (:func:`~benchmirt_bayes.analyses.asymptote_choice.compare_asymptote_models`),
fits the spec that names each benchmark's choice, confirms each choice on that fit, and
returns the fit of the confirmed spec.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.analyses.asymptote_choice import compare_asymptote_models
from benchmirt_bayes.data.responses import ResponseMatrix
from benchmirt_bayes.inference.fit import fit_posterior
from benchmirt_bayes.inference.settings import NutsSettings
from benchmirt_bayes.model.spec import ModelSpec, load_spec
from benchmirt_bayes.response_types import DEFAULT_TYPE, response_model
from benchmirt_bayes.response_types.asymptotes import ASYMPTOTE_KINDS, AUTO, benchmark_kinds, decided_section

CHOICE_ATTR = "benchmirt_asymptote_choice"
"""Fit attribute holding the JSON of each ``"auto"`` benchmark's chosen model."""


@dataclass
class AsymptoteChoice:
    """What :func:`choose_asymptotes` chose and the fits behind it.

    Attributes
    ----------
    fit
        The fit of the spec with every ``"auto"`` benchmark replaced by its choice.
    chosen
        ``"auto"`` benchmark → ``"2pl"``, ``"3pl"`` or ``"4pl"``.
    comparison
        The screen: :func:`~benchmirt_bayes.analyses.asymptote_choice.compare_asymptote_models`'s
        table of the candidates on the ``"auto"`` benchmarks (``monte_carlo_error=False``);
        its ``recommended`` is the screen's proposal.
    confirmation
        The same table (``monte_carlo_error=True``) for the fit of the screen's proposals
        against the first candidate, on the benchmarks the screen moved off the first
        candidate: where its ``recommended`` is ``"screened"`` the proposal stands, else the
        benchmark keeps the first candidate. Empty when the screen moved none.
    candidate_fits
        Candidate → its fit (every ``"auto"`` benchmark given that candidate).

    """

    fit: xr.DataTree
    chosen: dict[str, str]
    comparison: pd.DataFrame
    confirmation: pd.DataFrame
    candidate_fits: dict[str, xr.DataTree] = field(repr=False)


def choose_asymptotes(
    responses: ResponseMatrix,
    n_dims: int = 2,
    *,
    spec: str | Path | ModelSpec | Mapping[str, Any] | None = None,
    candidates: Sequence[str] = ASYMPTOTE_KINDS,
    tolerance_se: float = 2.0,
    nuts: NutsSettings | Mapping[str, Any] | None = None,
    seed: int = 0,
    progressbar: bool = True,
) -> AsymptoteChoice:
    """Fit each candidate binary model and keep, per benchmark, the one PSIS-LOO prefers.

    The benchmarks the spec's ``[binary]`` section marks ``"auto"`` (every benchmark when
    ``asymptotes = "auto"``) get each candidate in turn; the others keep what the spec
    says. The choice is made in two steps:

    1. *Screen*: per ``"auto"`` benchmark, the simplest candidate whose PSIS-LOO ``elpd``
       over the benchmark's cells is within ``tolerance_se`` paired standard errors (over
       the cells) of the best candidate's. With every benchmark floored at once a
       candidate's chains may not mix (many weakly identified floors), and its ``elpd``
       carries a Monte Carlo error the cells' SE does not hold, so the screen only proposes.
    2. *Confirm*: the spec that names the screen's choices is fitted (floors only where
       proposed), and a proposed benchmark keeps its choice where that fit beats the first
       candidate's by more than ``tolerance_se`` standard errors counting both fits' Monte
       Carlo errors (:func:`~benchmirt_bayes.analyses.asymptote_choice.compare_asymptote_models`
       with ``monte_carlo_error=True``); the others fall back to the first candidate, and
       the data are fitted once more when some fell back and some did not.

    Costs two to five NUTS fits.

    Parameters
    ----------
    responses
        The data; binary items only are concerned.
    n_dims
        Number of latent dimensions.
    spec
        A spec with ``"auto"`` somewhere in its ``[binary]`` section, e.g.
        ``load_spec("exploratory").with_overrides({"binary": {"asymptotes": "auto",
        "n_options": {"MMLU": 4}}})``.
    candidates
        Models tried, simplest first (a subset of ``("2pl", "3pl", "4pl")``, at least two).
    tolerance_se
        How many paired standard errors a simpler model may fall behind the best.
    nuts
        NUTS settings of every fit (PSIS-LOO needs NUTS draws).
    seed
        Seed of every fit.
    progressbar
        Show the fits' progress.

    Returns
    -------
    AsymptoteChoice
        The final fit (its attrs hold the choice under ``benchmirt_asymptote_choice``),
        the choice, the screen's and the confirmation's tables and the candidates' fits.

    Raises
    ------
    ValueError
        When the spec has no ``"auto"`` benchmark among the data's binary items, or the
        candidates are not at least two distinct binary models.

    """
    candidates = list(candidates)
    if (
        len(candidates) < 2
        or len(set(candidates)) != len(candidates)
        or set(candidates) - set(ASYMPTOTE_KINDS)
    ):
        raise ValueError(
            f"candidates must be at least two distinct models of {list(ASYMPTOTE_KINDS)}, got {candidates}"
        )
    candidates = sorted(candidates, key=ASYMPTOTE_KINDS.index)
    spec = load_spec(spec)
    binary = np.asarray(responses.response_types) == DEFAULT_TYPE
    benchmarks = np.asarray(responses.benchmarks, dtype=str)[binary]
    section = response_model(DEFAULT_TYPE).spec_section(spec.type_prior(DEFAULT_TYPE))
    auto = sorted(b for b, kind in benchmark_kinds(benchmarks, section).items() if kind == AUTO)
    if not auto:
        raise ValueError(
            "no benchmark of the data's binary items is 'auto' in the spec's [binary] section: "
            "set asymptotes = 'auto' (every benchmark) or name benchmarks with 'auto'"
        )

    def spec_for(chosen: Mapping[str, str], name: str) -> ModelSpec:
        overrides = decided_section(benchmarks, section, chosen)
        return spec.with_overrides({DEFAULT_TYPE: overrides, "name": f"{spec.name}+{name}"})

    def fit_for(chosen: Mapping[str, str], name: str) -> xr.DataTree:
        return fit_posterior(
            responses,
            n_dims,
            method="nuts",
            nuts=nuts,
            seed=seed,
            spec=spec_for(chosen, name),
            progressbar=progressbar,
        )

    fits = {kind: fit_for(dict.fromkeys(auto, kind), kind) for kind in candidates}
    comparison = compare_asymptote_models(
        fits, tolerance_se=tolerance_se, monte_carlo_error=False, benchmarks=auto
    )
    screened = comparison.groupby("benchmark", sort=False)["recommended"].first().to_dict()
    first = candidates[0]
    moved = sorted(b for b, kind in screened.items() if kind != first)
    confirmation = comparison.iloc[:0]
    chosen = dict(screened)
    fit = fits[first]
    if moved:
        kinds = set(screened.values())
        screened_fit = fits[kinds.pop()] if len(kinds) == 1 else fit_for(screened, "screened")
        confirmation = compare_asymptote_models(
            {first: fits[first], "screened": screened_fit},
            tolerance_se=tolerance_se,
            monte_carlo_error=True,
            benchmarks=moved,
        )
        confirmed = confirmation.groupby("benchmark")["recommended"].first() == "screened"
        chosen.update({b: first for b in moved if not confirmed[b]})
        if confirmed.all():
            fit = screened_fit
        elif confirmed.any():
            fit = fit_for(chosen, "chosen")
    fit = fit.copy()
    fit.attrs[CHOICE_ATTR] = json.dumps(chosen, sort_keys=True)
    return AsymptoteChoice(
        fit=fit, chosen=chosen, comparison=comparison, confirmation=confirmation, candidate_fits=fits
    )
