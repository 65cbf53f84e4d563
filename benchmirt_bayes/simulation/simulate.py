"""`simulate_benchmirt`: the built-in, BenchMIRT-scale simulated data set.

100 LLMs × 16 benchmarks × about 34,300 items with two latent abilities,
``safety`` and ``reasoning``, and the published findings planted in the truth.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import xarray as xr

from benchmirt_bayes.checks import check_integer
from benchmirt_bayes.data.responses import ITEM_DIM, LLM_DIM, ResponseMatrix
from benchmirt_bayes.model.layout import ResponseLayout
from benchmirt_bayes.response_types import (
    DEFAULT_TYPE,
    RESPONSE_MODELS,
    RESPONSE_TYPES,
    response_model,
    type_columns,
)
from benchmirt_bayes.response_types.base import linear_predictor, mdisc, multidimensional_difficulty
from benchmirt_bayes.simulation.asymptote_plants import AsymptotePlan
from benchmirt_bayes.simulation.audit_plants import (
    FOCAL_FAMILY,
    AuditPlan,
    PlantedAbilities,
    contaminate,
    dif_shifts,
    flip_keys,
    plant_abilities,
)

DIMENSIONS = ("safety", "reasoning")
MIXED_RESPONSE_TYPES = {
    model.simulated_benchmark: name for name, model in RESPONSE_MODELS.items() if model.simulated_benchmark
}
"""``response_types="mixed"``: every registered type on the benchmark it names as its
``simulated_benchmark`` (e.g. StrongREJECT's scores as published, not rounded; IFEval
graded by how many of its instructions are followed; MATH as k correct of n samples)."""


@dataclass(frozen=True)
class SubgroupDesign:
    """Planted truth for one benchmark subgroup.

    Attributes
    ----------
    benchmark, subgroup
        Names.
    n_items
        Items at ``scale=1``.
    loading
        Mean loading on (safety, reasoning).
    loading_sd
        Item-to-item spread of loadings around the mean.
    intercept, intercept_sd
        Mean and spread of item intercepts (logit of the share correct for an
        average LLM).

    """

    benchmark: str
    subgroup: str
    n_items: int
    loading: tuple[float, float]
    loading_sd: float
    intercept: float
    intercept_sd: float
    kind: str


# Item counts: reasoning benchmarks as published; safety benchmarks with their
# usual subgroups, about 12,700 items together (34,312 in all).
DESIGN: tuple[SubgroupDesign, ...] = (
    SubgroupDesign("BBH", "BBH", 5761, (0.05, 1.3), 0.35, 0.2, 1.2, "reasoning"),
    SubgroupDesign("GPQA", "GPQA", 1192, (0.0, 0.7), 0.30, -0.9, 0.6, "reasoning"),
    SubgroupDesign("MATH", "MATH", 1324, (0.0, 1.7), 0.40, -2.2, 1.2, "reasoning"),
    SubgroupDesign("MMLU-Pro", "MMLU-Pro", 12032, (0.05, 1.4), 0.35, -0.5, 1.1, "reasoning"),
    SubgroupDesign("MuSR", "MuSR", 756, (0.0, 0.9), 0.30, 0.0, 0.8, "reasoning"),
    SubgroupDesign("IFEval", "IFEval", 541, (0.2, 1.1), 0.35, 1.0, 1.0, "reasoning"),
    SubgroupDesign("WildJailbreak", "harmful", 2000, (1.5, -0.1), 0.40, 0.0, 1.0, "safety"),
    SubgroupDesign("WildJailbreak", "benign", 210, (-0.3, 1.0), 0.30, 2.0, 0.8, "safety"),
    SubgroupDesign("WildGuardTest", "harmful", 754, (1.3, 0.0), 0.35, 1.0, 1.0, "safety"),
    SubgroupDesign("WildGuardTest", "benign", 971, (-0.2, 0.7), 0.30, 2.5, 0.8, "safety"),
    SubgroupDesign("HarmBench", "standard", 200, (1.6, 0.0), 0.35, 0.5, 1.0, "safety"),
    SubgroupDesign("HarmBench", "contextual", 100, (1.5, 0.1), 0.35, 0.0, 1.0, "safety"),
    SubgroupDesign("HarmBench", "copyright", 100, (0.25, 0.1), 0.20, 0.5, 1.0, "safety"),
    SubgroupDesign("ToxiGen", "ToxiGen", 940, (1.0, 0.2), 0.35, 1.0, 1.0, "safety"),
    SubgroupDesign("XSTest", "safe", 250, (-0.4, 0.7), 0.30, 2.0, 0.8, "safety"),
    SubgroupDesign("XSTest", "contrast_unsafe", 200, (1.3, 0.0), 0.35, 0.5, 1.0, "safety"),
    SubgroupDesign("DoAnythingNow", "DoAnythingNow", 600, (1.4, -0.2), 0.40, -0.3, 1.0, "safety"),
    SubgroupDesign("TrustLLM", "jailbreak", 1400, (1.3, 0.0), 0.40, 0.5, 1.0, "safety"),
    SubgroupDesign("BBQ", "ambiguous", 500, (0.15, 1.0), 0.30, 0.3, 1.0, "safety"),
    SubgroupDesign("BBQ", "disambiguated", 500, (0.1, 1.1), 0.30, 0.8, 1.0, "safety"),
    SubgroupDesign("WMDP", "bio", 1273, (0.2, -0.8), 0.30, 0.0, 0.8, "safety"),
    SubgroupDesign("WMDP", "chem", 408, (0.2, -0.7), 0.30, 0.3, 0.8, "safety"),
    SubgroupDesign("WMDP", "cyber", 1987, (0.2, -0.7), 0.30, 0.2, 0.8, "safety"),
    SubgroupDesign("StrongREJECT", "StrongREJECT", 313, (1.5, 0.0), 0.35, 0.3, 1.0, "safety"),
)


@dataclass(frozen=True)
class SimulatedBenchmark:
    """Simulated responses with the truth that generated them.

    Attributes
    ----------
    responses
        The observed :class:`ResponseMatrix` (about 3% of cells missing).
    truth
        Dataset with ``ability (llm, dimension)``, ``loading (item, dimension)``,
        ``intercept (item)``, ``difficulty (item)`` and ``mdisc (item)``; attrs
        hold the seed and scale.

    """

    responses: ResponseMatrix
    truth: xr.Dataset


def simulate_benchmirt(
    *,
    scale: float = 1.0,
    n_llms: int = 100,
    seed: int = 20260301,
    missing_share: float = 0.03,
    ability_correlation: float = 0.3,
    min_items_per_subgroup: int = 4,
    response_types: Mapping[str, str] | str | None = None,
    audits: AuditPlan | None = None,
    asymptotes: AsymptotePlan | None = None,
) -> SimulatedBenchmark:
    """Simulate the BenchMIRT-scale data set with the published findings planted.

    Parameters
    ----------
    scale
        Multiplies every subgroup's item count (at least
        ``min_items_per_subgroup`` each): ``1.0`` gives 34,312 items, ``0.02``
        about 700.
    n_llms
        Number of LLMs.
    seed
        Seed of every random choice; equal seeds give identical data.
    missing_share
        Share of cells left unevaluated (missing completely at random).
    ability_correlation
        Correlation of safety and reasoning abilities across LLMs.
    min_items_per_subgroup
        Floor for small scales.
    response_types
        Benchmark → response type (a name in :data:`~benchmirt_bayes.response_types.RESPONSE_TYPES`)
        for benchmarks that are not 0/1, or ``"mixed"`` for :data:`MIXED_RESPONSE_TYPES`.
        Each type sets its simulated items' metadata (e.g. 4 categories, 5 tries) and true
        parameters, which the truth then holds under the posterior's names. ``None``
        (default): every item 0/1, the same data as always for a seed.
    audits
        Findings to plant for the audits (:class:`AuditPlan`: base/modified pairs,
        contaminated LLM × benchmark cells, DIF items, flipped keys), drawn from a random
        stream of their own; the LLMs then carry metadata ``family``, ``variant`` and
        ``base_of``, and the truth records every planted finding (``pair_base``,
        ``pair_modified``, ``pair_shift``, ``contaminated``, ``dif_shift``, ``flipped``).
        An empty ``AuditPlan()`` plants nothing but gives the LLMs their families (the
        clean set on which the audits' false-positive rates are measured); the responses
        are those of ``audits=None``.
    asymptotes
        Chance floors and capped items to plant in binary benchmarks (:class:`AsymptotePlan`:
        options per benchmark, share of capped items), drawn from a random stream of their
        own; binary responses are then drawn from ``g + (u − g) σ(η)`` and the truth holds
        ``floor`` and ``ceiling`` (0 and 1 where nothing is planted).

    Returns
    -------
    SimulatedBenchmark

    Notes
    -----
    Planted findings: reasoning benchmarks load on reasoning; jailbreak and
    harmful-content benchmarks on safety; BBQ mainly on reasoning; WMDP
    negatively on reasoning; HarmBench copyright items barely on safety while
    standard and contextual items do; WildJailbreak harmful items on safety and
    benign items on reasoning.

    """
    if scale <= 0:
        raise ValueError(f"scale must be positive, got {scale}")
    check_integer("n_llms", n_llms, minimum=2)
    if not 0 <= missing_share < 1:
        raise ValueError(f"missing_share must be in [0, 1), got {missing_share}")
    rng = np.random.default_rng(seed)
    n_dims = len(DIMENSIONS)

    covariance = np.array([[1.0, ability_correlation], [ability_correlation, 1.0]])
    ability = rng.multivariate_normal(np.zeros(n_dims), covariance, size=n_llms)
    ability = (ability - ability.mean(0)) / ability.std(0)

    items, benchmarks, subgroups, kinds, loadings, intercepts = [], [], [], [], [], []
    for design in DESIGN:
        count = max(min_items_per_subgroup, round(design.n_items * scale))
        loading = np.asarray(design.loading) + design.loading_sd * rng.standard_normal((count, 2))
        intercept = design.intercept + design.intercept_sd * rng.standard_normal(count)
        stem = (
            design.benchmark
            if design.subgroup == design.benchmark
            else (f"{design.benchmark}/{design.subgroup}")
        )
        items.extend(f"{stem}/{i:05d}" for i in range(count))
        benchmarks.extend([design.benchmark] * count)
        subgroups.extend([design.subgroup] * count)
        kinds.extend([design.kind] * count)
        loadings.append(loading)
        intercepts.append(intercept)
    loading = np.concatenate(loadings)
    intercept = np.concatenate(intercepts)

    benchmarks_arr = np.array(benchmarks)
    types = _item_types(benchmarks_arr, response_types)
    categories, trials = np.zeros(types.size, dtype=np.int64), np.ones(types.size, dtype=np.int64)
    for name, columns in type_columns(types).items():
        categories[columns], trials[columns] = response_model(name).simulation_metadata(columns.size)
    layout = ResponseLayout(types, categories, trials, benchmarks_arr)
    type_truth = _type_parameters(layout, rng)
    if asymptotes is not None:
        floor, ceiling = asymptotes.draw(
            benchmarks_arr, types == DEFAULT_TYPE, np.random.default_rng([seed, 4])
        )
        type_truth |= {"floor": floor, "ceiling": ceiling}
    llms = np.array([f"llm_{j:03d}" for j in range(n_llms)])
    if audits is not None:
        plant_rng = np.random.default_rng([seed, 20240])
        planted = plant_abilities(audits, ability, llms, plant_rng)
        ability, llms = planted.ability, planted.llms.astype(str)
        binary = types == DEFAULT_TYPE
        dif_logit, dif_per_item = dif_shifts(audits, planted.family, binary, intercept, plant_rng)
    eta = linear_predictor(ability, loading, intercept)
    if audits is not None:
        eta = eta + dif_logit
    responses = layout.draw(eta, layout.parameters(type_truth), rng)
    if audits is not None:
        paired = np.flatnonzero(np.isin(llms[:n_llms], [base for base, _ in planted.pairs]))
        contaminated = contaminate(
            audits, responses, ability, loading, intercept, benchmarks_arr, binary, n_llms, plant_rng, paired
        )
        groups = np.char.add(np.char.add(benchmarks_arr.astype(str), "/"), np.array(subgroups, dtype=str))
        flipped = flip_keys(audits, responses, binary, loading, groups, plant_rng)
    responses[rng.random(responses.shape) < missing_share] = np.nan
    # every LLM and item keeps at least one observation
    empty = np.isnan(responses).all(axis=0)
    responses[0, empty] = layout.score_scale[empty]

    item_ids = np.array(items)
    coords = {
        LLM_DIM: llms,
        ITEM_DIM: item_ids,
        "benchmark": (ITEM_DIM, benchmarks_arr),
        "subgroup": (ITEM_DIM, np.array(subgroups)),
        "category": (ITEM_DIM, np.array(kinds)),
    }
    if audits is not None:
        coords["family"] = (LLM_DIM, planted.family.astype(str))
        coords["variant"] = (LLM_DIM, planted.variant.astype(str))
        coords["base_of"] = (LLM_DIM, planted.base_of.astype(str))
    if not layout.is_binary:
        coords["response_type"] = (ITEM_DIM, types)
        coords["n_categories"] = (ITEM_DIM, layout.n_categories)
        coords["n_trials"] = (ITEM_DIM, layout.n_trials)
    matrix = ResponseMatrix(xr.DataArray(responses, dims=(LLM_DIM, ITEM_DIM), coords=coords, name="correct"))
    discrimination = mdisc(loading)
    truth = xr.Dataset(
        {
            "ability": ((LLM_DIM, "dimension"), ability),
            "loading": ((ITEM_DIM, "dimension"), loading),
            "intercept": ((ITEM_DIM,), intercept),
            "difficulty": ((ITEM_DIM,), multidimensional_difficulty(intercept, discrimination)),
            "mdisc": ((ITEM_DIM,), discrimination),
        },
        coords={**coords, "dimension": list(DIMENSIONS)},
        attrs={"seed": seed, "scale": scale, "n_llms": n_llms, "missing_share": missing_share},
    )
    if audits is not None:
        truth = truth.merge(_planted_truth(planted, contaminated, dif_per_item, flipped, benchmarks_arr))
        truth.attrs["audit_plan"] = json.dumps(dataclasses.asdict(audits))
    if asymptotes is not None:
        truth["floor"] = ((ITEM_DIM,), type_truth["floor"])
        truth["ceiling"] = ((ITEM_DIM,), type_truth["ceiling"])
        truth.attrs["asymptote_plan"] = json.dumps(dataclasses.asdict(asymptotes))
    if not layout.is_binary:
        truth = truth.merge(_type_truth_dataset(layout, item_ids, type_truth))
        typed = types != DEFAULT_TYPE
        declared = dict(zip(benchmarks_arr[typed], types[typed], strict=True))
        truth.attrs["response_types"] = json.dumps(declared)
    return SimulatedBenchmark(matrix, truth)


def _planted_truth(
    planted: PlantedAbilities,
    contaminated: np.ndarray,
    dif_per_item: np.ndarray,
    flipped: np.ndarray,
    benchmarks: np.ndarray,
) -> xr.Dataset:
    """The planted findings as truth variables."""
    return xr.Dataset(
        {
            "pair_base": (("pair",), np.array([a for a, _ in planted.pairs], dtype=object)),
            "pair_modified": (("pair",), np.array([b for _, b in planted.pairs], dtype=object)),
            "pair_shift": (("pair", "dimension"), planted.pair_shift),
            "contaminated": ((LLM_DIM, "truth_benchmark"), contaminated),
            "dif_shift": ((ITEM_DIM,), dif_per_item),
            "flipped": ((ITEM_DIM,), flipped),
        },
        coords={"truth_benchmark": list(dict.fromkeys(benchmarks)), "dif_focal_family": FOCAL_FAMILY},
    )


def _item_types(benchmarks: np.ndarray, response_types: Mapping[str, str] | str | None) -> np.ndarray:
    if response_types is None:
        return np.full(benchmarks.size, DEFAULT_TYPE, dtype=object)
    if response_types == "mixed":
        response_types = MIXED_RESPONSE_TYPES
    if isinstance(response_types, str):
        raise ValueError(
            f"response_types must be a mapping benchmark → type or 'mixed', got {response_types!r}"
        )
    unknown = sorted(set(response_types) - set(benchmarks))
    if unknown:
        raise ValueError(
            f"response_types names unknown benchmark(s) {unknown}; known: {sorted(set(benchmarks))}"
        )
    bad = {b: t for b, t in response_types.items() if t not in RESPONSE_TYPES}
    if bad:
        raise ValueError(f"unknown response type(s) {bad}; known: {list(RESPONSE_TYPES)}")
    types = np.full(benchmarks.size, DEFAULT_TYPE, dtype=object)
    for bench, kind in response_types.items():
        types[benchmarks == bench] = kind
    return types


def _type_parameters(layout: ResponseLayout, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """True item parameters of the types present, under the posterior's variable names."""
    truth: dict[str, np.ndarray] = {}
    for name, columns in layout.columns.items():
        truth.update(response_model(name).simulate_parameters(layout, columns, rng))
    return truth


def _type_truth_dataset(
    layout: ResponseLayout, items: np.ndarray, truth: dict[str, np.ndarray]
) -> xr.Dataset:
    data: dict[str, tuple] = {}
    coords: dict[str, object] = {}
    for name, columns in layout.columns.items():
        variables, type_coords = response_model(name).truth_variables(layout, items, columns, truth)
        data.update(variables)
        coords.update(type_coords)
    return xr.Dataset(data, coords=coords)
