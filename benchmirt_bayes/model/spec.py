"""Model specifications: the priors, documented in one place and overridable.

A spec is a small declarative TOML file in ``models/`` (see
``models/exploratory.toml`` for every field with its meaning). ``fit_posterior``
and ``build_model`` accept a spec by name (``"exploratory"``, ``"2pl"``,
``"confirmatory_safety_reasoning"``), by path, as a :class:`ModelSpec`, or as a
nested dict of overrides applied to the default exploratory spec.
"""

from __future__ import annotations

import copy
import difflib
import json
import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from benchmirt_bayes.response_types import RESPONSE_MODELS

_PACKAGE_DIR = Path(__file__).resolve().parent.parent
SPEC_DIRS = (_PACKAGE_DIR / "models", _PACKAGE_DIR.parent / "models")
DEFAULT_SPEC = "exploratory"

_SECTIONS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "ability": {"sigma": (int, float), "correlation": str, "lkj_eta": (int, float)},
    "loading": {
        "mean_sigma": (int, float),
        "spread_sigma": (int, float),
        "noncentered": bool,
        "zero_sum": bool,
    },
    "intercept": {
        "mean_mu": (int, float),
        "mean_sigma": (int, float),
        "spread_sigma": (int, float),
        "subgroup_sigma": (int, float),
        "noncentered": (bool, str),
    },
    "confirmatory": {"dimensions": list, "pattern": dict},
    "identification": {"anchors": (str, list)},
}
# fields a spec may leave out, with the value that applies then (older specs, e.g. those
# stored in the attrs of earlier fits, predate them); the shipped spec files set every field
_OPTIONAL: dict[str, dict[str, Any]] = {
    "loading": {"zero_sum": False},
    "identification": {"anchors": "none"},
}
# each response type with parameters of its own has a section named after it (its priors)
for _model in RESPONSE_MODELS.values():
    if _model.prior_defaults or _model.spec_options:
        _SECTIONS[_model.name] = {key: (int, float) for key in _model.prior_defaults}
        _SECTIONS[_model.name] |= {key: type(value) for key, value in _model.spec_options.items()}
        _OPTIONAL[_model.name] = _model.spec_section(None)
AbilityCorrelation = Literal["whitened", "none", "lkj"]


@dataclass(frozen=True)
class AbilityPrior:
    """``[ability]``: zero-sum normal abilities of scale ``sigma`` (see ``exploratory.toml``)."""

    sigma: float
    correlation: AbilityCorrelation
    lkj_eta: float


@dataclass(frozen=True)
class LoadingPrior:
    """``[loading]``: benchmark mean ``N(0, mean_sigma)``, isotropic spread ``HalfNormal(spread_sigma)``."""

    mean_sigma: float
    spread_sigma: float
    noncentered: bool
    zero_sum: bool


@dataclass(frozen=True)
class InterceptPrior:
    """``[intercept]``: benchmark mean ``N(mean_mu, mean_sigma)``, spread and subgroup offset scales."""

    mean_mu: float
    mean_sigma: float
    spread_sigma: float
    subgroup_sigma: float
    noncentered: bool | str
    """``True`` (every benchmark non-centred), ``False`` (every benchmark centred) or
    ``"auto"``: centred in benchmarks with at least :data:`CENTRED_INTERCEPT_ITEMS` items
    answered by a median of :data:`CENTRED_INTERCEPT_RESPONSES` LLMs, non-centred in the
    others (:func:`noncentred_benchmarks`)."""


@dataclass(frozen=True)
class ModelSpec:
    """Priors and structure of a hierarchical MIRT model.

    Attributes
    ----------
    name, description
        Identity of the spec.
    settings
        Nested dict with sections ``ability``, ``loading``, ``intercept`` and
        optionally ``confirmatory`` (``dimensions`` names and a ``pattern``
        mapping benchmark → list of dimension names it may load on).

    """

    name: str
    description: str
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __getitem__(self, section: str) -> dict[str, Any]:
        return {**_OPTIONAL.get(section, {}), **self.settings.get(section, {})}

    @property
    def ability(self) -> AbilityPrior:
        """The ``[ability]`` section."""
        return AbilityPrior(**self["ability"])

    @property
    def loading(self) -> LoadingPrior:
        """The ``[loading]`` section."""
        return LoadingPrior(**self["loading"])

    @property
    def intercept(self) -> InterceptPrior:
        """The ``[intercept]`` section."""
        return InterceptPrior(**self["intercept"])

    def type_prior(self, name: str) -> dict[str, Any]:
        """The spec section of response type ``name`` (its defaults where the spec is silent)."""
        return self[name]

    @property
    def anchors(self) -> str | list[str]:
        """``[identification] anchors``: ``"none"`` (default), ``"auto"`` or benchmark names."""
        return self["identification"]["anchors"]

    @property
    def dimensions(self) -> list[str] | None:
        """Confirmatory dimension names (``None`` for exploratory specs)."""
        return list(self["confirmatory"]["dimensions"]) if self.is_confirmatory else None

    @property
    def pattern(self) -> dict[str, list[str]]:
        """Confirmatory benchmark → allowed dimensions (empty for exploratory specs)."""
        return dict(self["confirmatory"].get("pattern", {}))

    @property
    def is_confirmatory(self) -> bool:
        """Whether the spec fixes which benchmarks load on which dimensions."""
        return bool(self.settings.get("confirmatory", {}).get("pattern"))

    def with_overrides(self, overrides: Mapping[str, Mapping[str, Any]]) -> ModelSpec:
        """A new spec with some fields replaced, e.g. ``{"loading": {"spread_sigma": 1.0}}``."""
        settings = copy.deepcopy(self.settings)
        for section, values in overrides.items():
            if section in ("name", "description"):
                continue
            settings.setdefault(section, {}).update(values)
        name = overrides.get("name", f"{self.name}+overrides")
        spec = ModelSpec(str(name), self.description, settings)
        validate_spec(spec)
        return spec

    def to_json(self) -> str:
        """Serialise (stored in a fit's attrs so the fit can be reproduced)."""
        return json.dumps(
            {"name": self.name, "description": self.description, "settings": self.settings},
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> ModelSpec:
        """Inverse of :meth:`to_json`."""
        raw = json.loads(text)
        return cls(raw["name"], raw["description"], raw["settings"])


def available_specs() -> list[str]:
    """Names of the specs shipped in ``models/``."""
    names = set()
    for folder in SPEC_DIRS:
        if folder.is_dir():
            names.update(p.stem for p in folder.glob("*.toml"))
    return sorted(names)


def load_spec(spec: str | Path | ModelSpec | Mapping[str, Any] | None = None) -> ModelSpec:
    """Resolve a spec given by name, path, object, override dict or ``None`` (default).

    Raises
    ------
    ValueError
        Unknown name, unknown section or field, or a value of the wrong type.

    """
    if spec is None:
        spec = DEFAULT_SPEC
    if isinstance(spec, ModelSpec):
        validate_spec(spec)
        return spec
    if isinstance(spec, Mapping):
        return load_spec(DEFAULT_SPEC).with_overrides(spec)
    path = Path(spec)
    if path.suffix != ".toml":
        candidates = [folder / f"{spec}.toml" for folder in SPEC_DIRS]
        path = next((c for c in candidates if c.exists()), candidates[-1])
        if not path.exists():
            raise ValueError(f"unknown model spec {spec!r}; available: {available_specs()}")
    if not path.exists():
        raise ValueError(f"model spec file not found: {path}")
    with path.open("rb") as handle:
        raw = tomllib.load(handle)
    name = raw.pop("name", path.stem)
    description = raw.pop("description", "")
    result = ModelSpec(name, description, raw)
    validate_spec(result)
    return result


MAX_PRIOR_SCALE = 100.0
"""Largest prior scale or location a spec may give: on the logit scale, anything larger is
absurd (and overflows the samplers), so it is an error rather than a silent failure later."""


def _number_problem(key: str, value: float) -> str | None:
    """Why a numeric field is unusable, or ``None``: finite, locations within ±100, scales in (0, 100]."""
    try:
        number = float(value)
    except OverflowError:
        return f"is too large (more than {MAX_PRIOR_SCALE:g})"
    if not math.isfinite(number):
        return "must be a finite number"
    if key.endswith("_mu"):
        return None if abs(number) <= MAX_PRIOR_SCALE else f"must lie within ±{MAX_PRIOR_SCALE:g}"
    if number <= 0:
        return "must be positive"
    if number > MAX_PRIOR_SCALE:
        return f"is absurdly large for a prior scale on the logit scale (at most {MAX_PRIOR_SCALE:g})"
    return None


CENTRED_INTERCEPT_ITEMS = 20
"""Under ``intercept.noncentered = "auto"``, benchmarks with at least this many items (and
:data:`CENTRED_INTERCEPT_RESPONSES` responses per item) have centred intercepts. A benchmark
with few items identifies its intercept spread weakly; when the spread wanders towards zero,
centred intercepts form a funnel that NUTS cannot enter (divergences, and restarts that
disagree: 30-40 % divergent transitions at 40 LLMs with 4-24 items per benchmark; one at 100
LLMs, in an 8-item benchmark). With many items the spread is pinned and centred intercepts
mix about ten times faster (ARCHITECTURE.md)."""

CENTRED_INTERCEPT_RESPONSES = 50
"""Under ``"auto"``, benchmarks whose items have a median of fewer responses than this get
non-centred intercepts whatever their size: with few LLMs the data pin each intercept weakly
and the centred form funnels again (simulation-based calibration at 30-40 LLMs with 20-30
items per benchmark: a third to two thirds of the fits diverged and the intercept spread's
rank ECDF left its band; benchmarks/RESULTS.md)."""


def noncentred_benchmarks(
    noncentered: bool | str,
    items_per_benchmark: Sequence[int],
    responses_per_item: Sequence[float] | None = None,
) -> np.ndarray:
    """Which benchmarks get non-centred intercepts, one boolean per benchmark.

    ``responses_per_item`` is each benchmark's median number of observed responses per item
    (only ``"auto"`` reads it; ``None`` counts as plenty).
    """
    counts = np.asarray(items_per_benchmark)
    if noncentered == "auto":
        few_items = counts < CENTRED_INTERCEPT_ITEMS
        if responses_per_item is None:
            return few_items
        return few_items | (np.asarray(responses_per_item, dtype=float) < CENTRED_INTERCEPT_RESPONSES)
    return np.full(counts.shape, bool(noncentered))


def check_pattern_benchmarks(spec: ModelSpec, benchmarks: list[str]) -> None:
    """Raise ValueError when a confirmatory pattern names benchmarks the data does not have.

    A misspelled name would otherwise leave the real benchmark out of the pattern, free to
    load on every dimension; the message suggests the closest benchmark.
    """
    unknown = [b for b in spec.pattern if b not in benchmarks]
    if not unknown:
        return
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, benchmarks, n=1)
        hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    raise ValueError(
        f"model spec {spec.name!r}: confirmatory.pattern names benchmark(s) not in the data: "
        f"{', '.join(hints)}; the data's benchmarks are {benchmarks}"
    )


def validate_spec(spec: ModelSpec) -> None:
    """Check sections, field names and types; raise one ValueError listing every problem."""
    problems = []
    for section, values in spec.settings.items():
        if section not in _SECTIONS:
            problems.append(f"unknown section [{section}] (known: {sorted(_SECTIONS)})")
            continue
        for key, value in values.items():
            expected = _SECTIONS[section].get(key)
            if expected is None:
                problems.append(f"unknown field {section}.{key} (known: {sorted(_SECTIONS[section])})")
            elif not isinstance(value, expected) or (
                isinstance(value, bool)
                and bool not in (expected if isinstance(expected, tuple) else (expected,))
            ):
                problems.append(f"{section}.{key} = {value!r} has the wrong type")
            elif isinstance(value, int | float) and not isinstance(value, bool):
                problem = _number_problem(key, value)
                if problem:
                    problems.append(f"{section}.{key} = {value!r} {problem}")
    for section in ("ability", "loading", "intercept"):
        given = set(spec.settings.get(section, {})) | set(_OPTIONAL.get(section, {}))
        missing = set(_SECTIONS[section]) - given
        if missing:
            problems.append(f"section [{section}] lacks {sorted(missing)}")
    loading = spec.settings.get("loading", {})
    if loading.get("zero_sum") and loading.get("noncentered") is False:
        problems.append("loading.zero_sum = true needs loading.noncentered = true (it sums the z-scores)")
    intercept_param = spec.settings.get("intercept", {}).get("noncentered")
    if isinstance(intercept_param, str) and intercept_param != "auto":
        problems.append(f"intercept.noncentered must be true, false or 'auto', got {intercept_param!r}")
    correlation = spec.settings.get("ability", {}).get("correlation")
    if correlation not in ("none", "lkj", "whitened"):
        problems.append(f"ability.correlation must be 'none', 'lkj' or 'whitened', got {correlation!r}")
    if correlation == "lkj" and not spec.is_confirmatory:
        problems.append(
            "ability.correlation = 'lkj' needs a [confirmatory] pattern: in an exploratory model "
            "correlated abilities and rotated loadings are not separately identified"
        )
    for name, model in RESPONSE_MODELS.items():
        if name in spec.settings and not problems:
            problems += model.spec_problems(spec[name])
    anchors = spec.anchors
    if isinstance(anchors, str) and anchors not in ("auto", "none"):
        problems.append(f"identification.anchors must be 'auto', 'none' or a list, got {anchors!r}")
    if spec.is_confirmatory:
        dims = spec.settings["confirmatory"].get("dimensions", [])
        for bench, allowed in spec.settings["confirmatory"]["pattern"].items():
            unknown = [d for d in allowed if d not in dims]
            if unknown:
                problems.append(f"confirmatory pattern for {bench!r} names unknown dimensions {unknown}")
    if problems:
        raise ValueError(f"invalid model spec {spec.name!r}:\n" + "\n".join(f"  - {p}" for p in problems))
