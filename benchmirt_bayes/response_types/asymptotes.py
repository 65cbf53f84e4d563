"""Floors and ceilings of binary items (3PL / 4PL): which benchmarks have them, and their priors.

The binary type's ``[binary]`` spec section says per benchmark whether its items have no
asymptotes (``"2pl"``), a floor (``"3pl"``) or a floor and a ceiling (``"4pl"``), and how
many answer options a benchmark's items have (an item-metadata column ``n_options``, where
the data have one, overrides the benchmark's number item by item). The floor ``g`` of an item
is partially pooled within its benchmark around the chance rate ``c = 1 / n_options`` on the
logit scale,

``logit g_i = logit c_b + floor_offset_b + floor_spread_b · floor_z_i``,

and a 4PL item either reaches one (most items) or is *capped*, with probability
``capped_share_b ~ Beta(ceiling_share_alpha, ceiling_share_beta)``, at a ceiling ``u`` that
lies a share ``s_i`` of the way from the floor to one,

``u_i = g_i + (1 − g_i) s_i``, ``logit s_i = ceiling_mean_b + ceiling_spread_b · ceiling_z_i``,

so ``g < u`` in every draw and the probability always rises with ability. The capped-or-not
indicator is summed out of the likelihood item by item (the prior of a ceiling is a spike at
one plus a pooled bump below it);
:func:`~benchmirt_bayes.response_types.capped_ceilings.draw_ceilings` draws it back after
sampling. Floors and ceilings are non-centred (the benchmark spreads are weakly identified by
a few tens of LLMs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt

from benchmirt_bayes.dims import ITEM_DIM
from benchmirt_bayes.response_types.base import PYTENSOR, logit, sigmoid

ASYMPTOTE_KINDS = ("2pl", "3pl", "4pl")
"""What a benchmark's binary items may have: nothing, a floor, a floor and a ceiling."""

N_OPTIONS_COLUMN = "n_options"
"""Item-metadata column with each item's number of answer options (blank: the benchmark's)."""

BLANK_TEXT = ("", "nan", "none", "<na>")
"""Metadata text read as "not given" (stored fits keep item metadata as text)."""

CEILING_ITEM_DIM = "ceiling_item"
"""Dimension of the 4PL items' ceiling variables (``capped_ceiling``, ``capped_probability``)."""

AUTO = "auto"
"""A benchmark whose model the data choose (:func:`benchmirt_bayes.choose_asymptotes`)."""


@dataclass(frozen=True)
class AsymptotePrior:
    """The numeric fields of the ``[binary]`` spec section (see the module docstring)."""

    floor_offset_sigma: float
    floor_spread_sigma: float
    unknown_options_floor: float
    ceiling_mean_mu: float
    ceiling_mean_sigma: float
    ceiling_spread_sigma: float
    ceiling_share_alpha: float
    ceiling_share_beta: float


@dataclass(frozen=True)
class AsymptoteItems:
    """Which items of a binary block have a floor and a ceiling, and each floor's prior centre.

    Attributes
    ----------
    kind
        ``"2pl"``, ``"3pl"`` or ``"4pl"`` per item.
    chance
        Prior centre of each item's floor (``1 / n_options``, or the spec's
        ``unknown_options_floor`` where the number of options is not given).

    """

    kind: np.ndarray
    chance: np.ndarray

    @classmethod
    def from_section(
        cls,
        benchmarks: Sequence[str],
        section: Mapping[str, Any],
        n_options: Sequence[float] | None = None,
    ) -> AsymptoteItems:
        """The plan for items of ``benchmarks`` under a ``[binary]`` spec section.

        ``n_options`` (per item, NaN where unknown) overrides the section's per-benchmark
        ``n_options`` item by item.

        Raises
        ------
        ValueError
            When the section names benchmarks the data do not have, or an item's number of
            options is not a whole number of at least 2.

        """
        benchmarks = np.asarray(benchmarks, dtype=str)
        present = set(benchmarks.tolist())
        for field in ("benchmarks", "n_options"):
            unknown = sorted(set(section[field]) - present)
            if unknown:
                raise ValueError(
                    f"binary.{field} names benchmark(s) {unknown} that the data do not have "
                    f"(have: {sorted(present)})"
                )
        kinds = benchmark_kinds(benchmarks, section)
        undecided = sorted(b for b, k in kinds.items() if k == AUTO)
        if undecided:
            raise ValueError(
                f"the [binary] section leaves the model of benchmark(s) {undecided} to the data "
                "('auto'): fit with benchmirt_bayes.choose_asymptotes(responses, n_dims, spec=...), "
                "which fits each candidate and keeps the one PSIS-LOO prefers per benchmark, or "
                "name '2pl', '3pl' or '4pl'"
            )
        kind = np.array([kinds[b] for b in benchmarks], dtype=object)
        options = section["n_options"]
        chance = np.array(
            [1.0 / options[b] if b in options else section["unknown_options_floor"] for b in benchmarks]
        )
        if n_options is not None:
            per_item = np.asarray(n_options, dtype=float)
            given = np.isfinite(per_item)
            bad = given & ((per_item < 2) | (per_item != np.round(per_item)))
            if bad.any():
                raise ValueError(
                    f"item metadata {N_OPTIONS_COLUMN!r} must be a whole number of at least 2 "
                    f"(or blank); {int(bad.sum())} item(s) have {sorted(set(per_item[bad].tolist()))[:5]}"
                )
            chance = np.where(given, 1.0 / np.where(given, per_item, 1.0), chance)
        return cls(kind, chance)

    @classmethod
    def for_items(
        cls, responses: Any, section: Mapping[str, Any], columns: Sequence[int] | None = None
    ) -> AsymptoteItems:
        """The plan for ``responses``' items at ``columns`` (all by default).

        Reads the item-metadata column ``n_options`` where ``responses`` have it.
        """
        columns = np.arange(responses.n_items) if columns is None else np.asarray(columns)
        metadata = responses.item_metadata()
        options = None
        if N_OPTIONS_COLUMN in metadata:
            raw = metadata[N_OPTIONS_COLUMN].iloc[columns]
            parsed = pd.to_numeric(raw, errors="coerce")
            blank = raw.isna() | raw.astype(str).str.strip().str.lower().isin(BLANK_TEXT)
            unreadable = parsed.isna() & ~blank
            if unreadable.any():
                examples = ", ".join(map(str, raw.index[unreadable][:5]))
                raise ValueError(
                    f"item metadata {N_OPTIONS_COLUMN!r} is not a number for {int(unreadable.sum())} "
                    f"item(s), e.g. {examples}: {raw[unreadable].iloc[0]!r}"
                )
            options = parsed.to_numpy(float)
        return cls.from_section(np.asarray(responses.benchmarks, dtype=str)[columns], section, options)

    @property
    def floored(self) -> np.ndarray:
        """Items with a floor (3PL and 4PL)."""
        return self.kind != "2pl"

    @property
    def capped(self) -> np.ndarray:
        """Items with a ceiling (4PL)."""
        return self.kind == "4pl"

    @property
    def any(self) -> bool:
        """Whether any item has an asymptote."""
        return bool(self.floored.any())


def benchmark_kinds(benchmarks: Sequence[str], section: Mapping[str, Any]) -> dict[str, str]:
    """Benchmark → ``"2pl"``/``"3pl"``/``"4pl"``/``"auto"`` for the benchmarks present."""
    named = dict(section.get("benchmarks", {}))
    default = section.get("asymptotes", "2pl")
    return {str(b): named.get(str(b), default) for b in pd.unique(np.asarray(benchmarks, dtype=str))}


def leaves_choice_to_data(section: Mapping[str, Any]) -> bool:
    """Whether a ``[binary]`` section says ``"auto"`` anywhere (default or per benchmark)."""
    return AUTO in (section.get("asymptotes"), *dict(section.get("benchmarks", {})).values())


def decided_section(
    benchmarks: Sequence[str], section: Mapping[str, Any], chosen: Mapping[str, str]
) -> dict[str, Any]:
    """The ``[binary]`` fields that replace every ``"auto"`` benchmark by its ``chosen`` model.

    Returns
    -------
    dict
        ``{"asymptotes": ..., "benchmarks": ...}`` naming every benchmark present, for
        :meth:`~benchmirt_bayes.model.spec.ModelSpec.with_overrides`.

    """
    kinds = benchmark_kinds(benchmarks, section)
    missing = sorted(b for b, k in kinds.items() if k == AUTO and b not in chosen)
    if missing:
        raise ValueError(f"no model chosen for the 'auto' benchmark(s) {missing}")
    decided = {b: (chosen[b] if k == AUTO else k) for b, k in kinds.items()}
    default = section.get("asymptotes", "2pl")
    return {"asymptotes": "2pl" if default == AUTO else default, "benchmarks": decided}


def section_problems(section: Mapping[str, Any]) -> list[str]:
    """What is wrong with the non-numeric fields of a ``[binary]`` section (empty: nothing)."""
    problems = []
    kinds = {"asymptotes": section.get("asymptotes", "2pl")}
    kinds |= {f"benchmarks.{b}": k for b, k in dict(section.get("benchmarks", {})).items()}
    for key, kind in kinds.items():
        if kind not in (*ASYMPTOTE_KINDS, AUTO):
            problems.append(f"binary.{key} = {kind!r} must be one of {[*ASYMPTOTE_KINDS, AUTO]}")
    for bench, n in dict(section.get("n_options", {})).items():
        if isinstance(n, bool) or not isinstance(n, int) or n < 2:
            problems.append(f"binary.n_options.{bench} = {n!r} must be an integer of at least 2")
    floor = section.get("unknown_options_floor", 0.1)
    if not 0 < floor < 1:
        problems.append(f"binary.unknown_options_floor = {floor!r} must lie strictly between 0 and 1")
    return problems


def asymptote_variables(
    plan: AsymptoteItems, benchmarks: Sequence[str], prior: AsymptotePrior, positions: np.ndarray
) -> tuple[pt.TensorVariable, pt.TensorVariable, pt.TensorVariable]:
    """Add the floors and ceilings to the current PyMC model.

    ``benchmarks`` are the block's items' benchmarks and ``positions`` their columns on the
    model's item axis. The model gains ``floor`` over the whole item axis (0 for items
    without one), ``capped_ceiling`` over the 4PL items (an item's ceiling *if* it is capped)
    and the pooled parameters behind them, ``capped_share`` among them.

    Returns
    -------
    tuple
        ``(floor, capped_ceiling, capped_share)`` for the block's items (the last is the
        item's benchmark's share of capped items, 0 for items without a ceiling).

    """
    model = pm.modelcontext(None)
    n_all = len(model.coords[ITEM_DIM])
    floored, capped = np.flatnonzero(plan.floored), np.flatnonzero(plan.capped)
    floor = pt.zeros(len(plan.kind))
    ceiling = pt.ones(len(plan.kind))
    share = pt.zeros(len(plan.kind))
    codes, names = pd.factorize(np.asarray(benchmarks, dtype=str)[floored])
    model.add_coord("floor_benchmark", [str(n) for n in names])
    model.add_coord("floor_item", np.asarray(model.coords[ITEM_DIM])[positions[floored]])
    offset = pm.Normal("floor_offset", 0.0, prior.floor_offset_sigma, dims="floor_benchmark")
    spread = pm.HalfNormal("floor_spread", prior.floor_spread_sigma, dims="floor_benchmark")
    z = pm.Normal("floor_z", 0.0, 1.0, dims="floor_item")
    centre = logit(plan.chance[floored])
    floor = pt.set_subtensor(floor[floored], sigmoid(centre + offset[codes] + spread[codes] * z, PYTENSOR))
    if capped.size:
        codes, names = pd.factorize(np.asarray(benchmarks, dtype=str)[capped])
        model.add_coord("ceiling_benchmark", [str(n) for n in names])
        model.add_coord(CEILING_ITEM_DIM, np.asarray(model.coords[ITEM_DIM])[positions[capped]])
        mean = pm.Normal(
            "ceiling_mean", prior.ceiling_mean_mu, prior.ceiling_mean_sigma, dims="ceiling_benchmark"
        )
        spread = pm.HalfNormal("ceiling_spread", prior.ceiling_spread_sigma, dims="ceiling_benchmark")
        z = pm.Normal("ceiling_z", 0.0, 1.0, dims=CEILING_ITEM_DIM)
        capped_share = pm.Beta(
            "capped_share", prior.ceiling_share_alpha, prior.ceiling_share_beta, dims="ceiling_benchmark"
        )
        s_i = sigmoid(mean[codes] + spread[codes] * z, PYTENSOR)
        ceiling = pt.set_subtensor(ceiling[capped], floor[capped] + (1.0 - floor[capped]) * s_i)
        share = pt.set_subtensor(share[capped], capped_share[codes])
        pm.Deterministic("capped_ceiling", ceiling[capped], dims=CEILING_ITEM_DIM)
    pm.Deterministic("floor", pt.set_subtensor(pt.zeros(n_all)[positions], floor), dims=ITEM_DIM)
    return floor, ceiling, share


def draw_ceiling(capped_ceiling: Any, capped_share: Any, rng: np.random.Generator) -> np.ndarray:
    """Items' ceilings drawn from the prior's spike and bump.

    ``capped_ceiling`` with probability ``capped_share`` (same shape: each item's benchmark's
    share of capped items), else one.
    """
    return np.where(rng.random(np.shape(capped_share)) < capped_share, capped_ceiling, 1.0)


def capped_or_not(log_lik_capped: Any, log_lik_uncapped: Any, share: Any, xp: Any = np) -> tuple[Any, Any]:
    """An item's log likelihood with its capped-or-not indicator summed out, and the log odds.

    ``log_lik_capped`` / ``log_lik_uncapped`` are the item's summed cell log likelihoods
    with its ceiling at ``u`` and at one, ``share`` its benchmark's share of capped items.

    Returns
    -------
    tuple
        ``(log p(y), log odds of "capped" given y)``.

    """
    with_cap = xp.log(share) + log_lik_capped
    without = xp.log1p(-share) + log_lik_uncapped
    return xp.logaddexp(with_cap, without), with_cap - without
