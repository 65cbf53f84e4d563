"""Fit settings, grouped by method: one way to say how to fit, for the API, the CLI and cross-validation.

``fit_posterior(responses, 2, method="nuts", nuts=NutsSettings(draws=500))`` (or
``nuts={"draws": 500}``): settings of one method never appear in another's, every value is
checked when the object is made, and the whole :class:`FitSettings` is stored in a fit's
attrs, from which :func:`FitSettings.from_json` rebuilds it to rerun the fit exactly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Literal

import numpy as np

from benchmirt_bayes.checks import check_integer
from benchmirt_bayes.model.spec import ModelSpec

Method = Literal["auto", "nuts", "advi", "fullrank_advi", "map"]
METHODS: tuple[str, ...] = Method.__args__
Sampler = Literal["nutpie", "numpyro", "pymc"]
NutsInit = Literal["auto", "prior", "advi", "spectral"]
Kernel = Literal["nuts", "mclmc"]
MassAdaptation = Literal["diag", "low_rank"]
Auto = Literal["auto"]
AdviInit = Literal["spectral", "prior"]
AdviStopping = Literal["noise", "relative"]
DEFAULT_TOLERANCE = {"noise": 1.0, "relative": 1e-3}
"""Each ADVI stopping rule's default threshold (see :class:`AdviSettings`)."""

LARGE_NUTS_CELLS = 1_000_000
"""Observed cells from which ``"auto"`` NUTS settings take the large-data path (a spectral
start, or ADVI's where the spec rules the spectral one out; depth 5, every second draw kept):
the configuration validated on the built-in 100 × 34k set (3 million cells). Below it the
sampler's own start and depth 10 (trees U-turn by themselves at depth 5 there) were as fast
(``benchmarks/harness.py``)."""


def _in_open_unit(name: str, value: Any) -> None:
    if not isinstance(value, int | float) or not 0 < value < 1:
        raise ValueError(f"{name} must be in (0, 1), got {value!r}")


@dataclass(frozen=True)
class NutsSettings:
    """How NUTS runs (``method="nuts"``).

    Attributes
    ----------
    sampler
        Back end: ``"nutpie"`` (default), ``"numpyro"`` or ``"pymc"``. A missing back end
        raises an error naming the extra to install; there is no silent fallback.
    draws, tune, chains
        Kept draws and tuning iterations per chain, and chains per restart.
    target_accept
        Target acceptance rate of the step-size adaptation.
    max_treedepth
        Tree-depth cap (at most ``2**max_treedepth`` gradients per iteration); draws that
        reach it are counted by :func:`benchmirt_bayes.check_convergence`.
    thin
        Run ``draws × thin`` iterations and keep every ``thin``-th, so that ``draws`` is
        always the number kept. Divergences and depth hits anywhere in a block mark its
        kept draw, gradient counts are summed over the block, and E-BFMI is computed on
        every iteration (``bfmi`` per chain).
    init
        Where chains start: ``"prior"`` (the sampler's own jittered start), ``"spectral"``
        (the rank-``n_dims`` SVD solution of the response matrix, randomly rotated after the
        first restart; exploratory specs without anchors only) or ``"advi"`` (the mean of a
        mean-field ADVI fit run first in each restart, with the :class:`AdviSettings` of the
        fit). From ``"spectral"`` and ``"advi"`` the chains start without jitter.
    kernel
        nutpie's transition kernel: ``"nuts"`` (default) or ``"mclmc"`` (microcanonical
        Langevin Monte Carlo: fixed-length trajectories, no tree; ``max_treedepth`` does
        not apply).
    adaptation
        nutpie's mass-matrix adaptation: ``"diag"`` (default) or ``"low_rank"`` (diagonal
        plus the leading eigenvectors of the draws' and gradients' covariance).

    ``draws``, ``init``, ``max_treedepth`` and ``thin`` default to ``"auto"``: resolved from
    the data by :func:`automatic_nuts` when the fit starts (1,000 kept draws, the spectral
    start, depth 5 and every second draw kept from :data:`LARGE_NUTS_CELLS` observed cells on; else
    3,000 draws, the sampler's start, depth 10, every draw: with 2,000, one of six default
    fits at the quickstart's size ended just short of ``check_convergence``'s R-hat 1.01, and
    with 1,000 two of three). The fit stores the resolved values and why they were chosen.

    """

    sampler: Sampler = "nutpie"
    draws: int | Auto = "auto"
    tune: int = 1000
    chains: int = 4
    target_accept: float = 0.8
    max_treedepth: int | Auto = "auto"
    thin: int | Auto = "auto"
    init: NutsInit = "auto"
    kernel: Kernel = "nuts"
    adaptation: MassAdaptation = "diag"

    def __post_init__(self) -> None:
        if self.sampler not in Sampler.__args__:
            raise ValueError(f"sampler must be one of {Sampler.__args__}, got {self.sampler!r}")
        for name, kind in (("kernel", Kernel), ("adaptation", MassAdaptation)):
            value = getattr(self, name)
            if value not in kind.__args__:
                raise ValueError(f"{name} must be one of {kind.__args__}, got {value!r}")
            if value != kind.__args__[0] and self.sampler != "nutpie":
                raise ValueError(f"{name}={value!r} is nutpie's; sampler is {self.sampler!r}")
        if self.init not in NutsInit.__args__:
            raise ValueError(f"init must be one of {NutsInit.__args__}, got {self.init!r}")
        check_integer("chains", self.chains)
        for name in ("draws", "thin"):
            if getattr(self, name) != "auto":
                check_integer(name, getattr(self, name))
        check_integer("tune", self.tune, minimum=0)
        _in_open_unit("target_accept", self.target_accept)
        depth = self.max_treedepth
        if depth != "auto":
            check_integer("max_treedepth", depth, minimum=1, maximum=15)

    @property
    def is_resolved(self) -> bool:
        """Whether no field is ``"auto"`` any more."""
        return "auto" not in (self.draws, self.init, self.max_treedepth, self.thin)


AUTO_NUTS_CELLS = 20_000
"""Under ``method="auto"``, NUTS up to this many observed cells and mean-field ADVI above.
Simulation-based calibration (``benchmarks/sbc.py``, 20–40 LLMs) found NUTS calibrated and
mean-field ADVI not (item spreads, mdisc and intercepts too narrow), at the same cost per
fit there (about 4 s at 800–3,600 cells, 2 × (500 + 500)); at 87,000 cells NUTS took 2.5×
ADVI's time at that length (``benchmarks/harness.py``, size S), and it grows from there."""


def automatic_method(n_observed: int) -> tuple[str, str]:
    """The method ``"auto"`` resolves to for data with ``n_observed`` cells, and why."""
    cells = f"{n_observed:,} observed cells"
    if n_observed <= AUTO_NUTS_CELLS:
        return "nuts", f"'nuts' ({cells} <= {AUTO_NUTS_CELLS:,}: calibrated, about ADVI's cost)"
    return "advi", f"'advi' ({cells} > {AUTO_NUTS_CELLS:,}: NUTS would cost many ADVI fits)"


def automatic_nuts(
    settings: NutsSettings, n_observed: int, spectral: bool = True
) -> tuple[NutsSettings, dict[str, str]]:
    """Resolve the ``"auto"`` fields of ``settings`` for data with ``n_observed`` cells.

    ``spectral``: whether the spec allows the spectral start (exploratory, no anchors); where
    it does not, large data start from ADVI instead.

    Returns the resolved settings and, for every field that was ``"auto"``, the value chosen
    and why (stored in the fit's attrs).
    """
    large = n_observed >= LARGE_NUTS_CELLS
    reason = (
        f"{n_observed:,} observed cells >= {LARGE_NUTS_CELLS:,}: the large-data path"
        if large
        else f"{n_observed:,} observed cells < {LARGE_NUTS_CELLS:,}"
    )
    chosen = {
        "draws": 1000 if large else 3000,
        "init": ("spectral" if spectral else "advi") if large else "prior",
        "max_treedepth": 5 if large else 10,
        "thin": 2 if large else 1,
    }
    values, notes = {}, {}
    for name, value in chosen.items():
        if getattr(settings, name) == "auto":
            values[name] = value
            notes[f"nuts.{name}"] = f"{value!r} ({reason})"
    return replace(settings, **values), notes


@dataclass(frozen=True)
class AdviSettings:
    """How ADVI runs (``method="advi"`` or ``"fullrank_advi"``, and NUTS's ``init="advi"``).

    Attributes
    ----------
    draws
        Draws taken from the fitted approximation (for the ADVI start of NUTS, 100 are
        averaged whatever this says).
    max_steps
        Step budget of the search phase.
    stopping
        The rule that ends the search phase (checked every ``window`` steps; see
        :class:`benchmirt_bayes.inference.advi.ElboConvergence`): ``"noise"`` (default) when
        a straight line fitted to the loss of the last five windows falls by less than
        ``tolerance`` per-step noise SDs over them; ``"relative"`` when the mean loss of the
        last two windows changes by less than ``tolerance`` (relative).
    tolerance
        The rule's threshold; ``None`` (default) takes the rule's own: 1.0 noise SD for
        ``"noise"``, 1e-3 for ``"relative"`` (the rule of fits stored before the noise rule).
    polish_steps
        Steps run after the search at a tenth of the learning rate, so that the
        parameters settle from the search's step-size jitter (0: none).
    learning_rate
        Adam step size of the search phase.
    window
        Steps per window of the stopping rule; the final ELBO is the mean of the last one.
    init
        Where the optimisation starts: ``"spectral"`` (default for exploratory specs: the
        rank-K SVD solution of the centred responses, unrotated; see
        :mod:`benchmirt_bayes.inference.initialisation`) or ``"prior"`` (a seeded draw from
        the prior, which on few LLMs can settle at a lower-dimensional optimum).
        Confirmatory and anchored specs always start from the prior, and so do restarts
        after the first (restarts are independent searches, for ``check_stability``).
    starts
        Independent optimisations per fit (the first from ``init``, the others from prior
        draws); the one with the best final ELBO is kept and every final ELBO is recorded.

    """

    draws: int = 1000
    max_steps: int = 20000
    stopping: AdviStopping = "noise"
    tolerance: float | None = None
    polish_steps: int = 1000
    learning_rate: float = 0.02
    window: int = 200
    init: AdviInit = "spectral"
    starts: int = 1

    def __post_init__(self) -> None:
        for name in ("draws", "max_steps", "window", "starts"):
            check_integer(name, getattr(self, name))
        if self.init not in AdviInit.__args__:
            raise ValueError(f"advi init must be one of {AdviInit.__args__}, got {self.init!r}")
        if self.stopping not in AdviStopping.__args__:
            raise ValueError(f"advi stopping must be one of {AdviStopping.__args__}, got {self.stopping!r}")
        if self.tolerance is None:
            object.__setattr__(self, "tolerance", DEFAULT_TOLERANCE[self.stopping])
        check_integer("polish_steps", self.polish_steps, minimum=0)
        for name in ("tolerance", "learning_rate"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not np.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be a positive number, got {value!r}")


def coerce_settings(value: Any, kind: type, argument: str) -> Any:
    """``value`` as a ``kind`` settings object (from an instance, a mapping of its fields or ``None``)."""
    if value is None:
        return kind()
    if isinstance(value, kind):
        return value
    if isinstance(value, Mapping):
        known = {f.name for f in fields(kind)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(f"unknown {argument} setting(s) {unknown}; known: {sorted(known)}")
        return kind(**value)
    raise TypeError(
        f"{argument} must be a {kind.__name__} or a dict of its fields, got {type(value).__name__}"
    )


@dataclass(frozen=True)
class FitSettings:
    """Everything besides the data and the seed that determines a fit (stored in its attrs).

    ``nuts`` is set for NUTS fits; ``advi`` for ADVI fits and for NUTS started from ADVI.
    """

    n_dims: int
    method: str
    spec_json: str
    likelihood: str = "cells"
    nuts: NutsSettings | None = None
    advi: AdviSettings | None = None
    automatic: tuple[tuple[str, str], ...] = ()
    """Settings that were ``"auto"``: ``(name, value chosen and why)`` pairs."""

    @property
    def spec(self) -> ModelSpec:
        """The model spec."""
        return ModelSpec.from_json(self.spec_json)

    @property
    def chains(self) -> int:
        """Chains per restart (1 for ADVI and MAP)."""
        return self.nuts.chains if self.nuts is not None else 1

    @property
    def draws(self) -> int:
        """Draws per chain of the fit's posterior."""
        if self.nuts is not None:
            return self.nuts.draws
        return self.advi.draws if self.advi is not None else 1

    @property
    def sampler(self) -> str:
        """The NUTS back end, or ``"none"``."""
        return self.nuts.sampler if self.nuts is not None else "none"

    def to_dict(self) -> dict[str, Any]:
        """Plain, JSON-ready form."""
        return asdict(self)

    def to_json(self) -> str:
        """Stable JSON (stored in attrs and used in batch fingerprints)."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> FitSettings:
        """Inverse of :meth:`to_dict` (also reads the flat form stored by fits before 0.2)."""
        if "nuts" not in raw and "draws" in raw:
            raw = _grouped_from_flat(raw)
        nuts = raw.get("nuts")
        advi = raw.get("advi")
        return cls(
            n_dims=int(raw["n_dims"]),
            method=str(raw["method"]),
            spec_json=str(raw["spec_json"]),
            likelihood=str(raw.get("likelihood", "cells")),
            nuts=NutsSettings(**nuts) if nuts is not None else None,
            # fits stored before ADVI had a spectral start began from the prior, and fits
            # stored before the noise rule stopped on the relative rule with no polish phase
            advi=AdviSettings(**{"init": "prior", **_RELATIVE_RULE, **advi}) if advi is not None else None,
            automatic=tuple((str(k), str(v)) for k, v in raw.get("automatic", ())),
        )

    @classmethod
    def from_json(cls, text: str) -> FitSettings:
        """Inverse of :meth:`to_json`."""
        return cls.from_dict(json.loads(text))


_RELATIVE_RULE = {"stopping": "relative", "tolerance": 1e-3, "polish_steps": 0}
"""The ADVI stopping settings of fits stored before the noise rule (their attrs name no ``stopping``)."""


def _grouped_from_flat(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The grouped form of the flat settings dict that fits stored before 0.2."""
    method = raw["method"]
    advi = {
        "draws": raw["draws"] if method != "nuts" else 1000,
        "max_steps": raw.get("advi_max_steps", 20000),
        "tolerance": raw.get("advi_tolerance", 1e-3),
        "learning_rate": raw.get("advi_learning_rate", 0.02),
        "window": raw.get("advi_window", 200),
    }
    nuts = {
        "sampler": raw["sampler"],
        "draws": raw["draws"],
        "tune": raw["tune"],
        "chains": raw["chains"],
        "target_accept": raw.get("target_accept", 0.8),
        "max_treedepth": raw.get("max_treedepth", 10),
        "thin": raw.get("thin", 1),
        "init": raw.get("nuts_init", "prior"),
    }
    uses_advi = method in ("advi", "fullrank_advi") or (method == "nuts" and nuts["init"] == "advi")
    return {
        "n_dims": raw["n_dims"],
        "method": method,
        "spec_json": raw["spec_json"],
        "likelihood": raw.get("likelihood", "cells"),
        "nuts": nuts if method == "nuts" else None,
        "advi": advi if uses_advi else None,
    }
