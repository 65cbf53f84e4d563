"""Simulation-based calibration of the model and its fits (Talts et al. 2018; Modrák et al. 2023).

Each replication draws every parameter from the model's prior and responses from those
parameters, fits the responses as :func:`~benchmirt_bayes.fit_posterior` would (the same
model, the settings it chooses for data of that size, the same sampler or ADVI) and records
where the true value of each monitored quantity falls among the posterior draws. When the
fits are calibrated, these normalised ranks are uniform;
:func:`~benchmirt_bayes.diagnostics.calibration.sbc_uniformity` checks that
their empirical CDF stays inside a simultaneous band (ArviZ's ``ecdf_pit``: the envelope of
Säilynoja, Bürkner & Vehtari 2022).

The monitored quantities do not depend on the rotation or reflection of the latent space,
which the likelihood does not identify and ``fit_posterior`` fixes only after sampling:
the linear predictor ``η`` of chosen cells (every response probability is a function of
``η`` and the item's own parameters), items' multidimensional discrimination and difficulty,
distances between LLMs' abilities, each benchmark's pooled intercept mean and its two
spreads, and (two or more dimensions) the cosine between two benchmarks' mean loading vectors.
Settings with floors (3PL) or floors and ceilings (4PL) monitor the chosen items' ``floor``
and each benchmark's floor offset and spread too, and (4PL) the items' ``ceiling`` as every
analysis reads it (capped or one, the indicator drawn back after the fit) and each benchmark's
ceiling mean, spread and share of capped items.

The replications share one compiled model: its observations are shared variables that each
replication sets (:mod:`benchmirt_bayes.model.shared_data`), so a replication costs its
sampling only.
"""

from __future__ import annotations

import dataclasses
import json
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any, Literal

import numpy as np
import pandas as pd
import pymc as pm
import pytensor
import xarray as xr
from rich.progress import track

from benchmirt_bayes.checks import check_integer
from benchmirt_bayes.data.responses import ITEM_DIM, LLM_DIM, ResponseMatrix
from benchmirt_bayes.diagnostics.approximation import (
    PARETO_K_SAMPLES,
    mean_field_pareto_k,
    pareto_k_threshold,
)
from benchmirt_bayes.diagnostics.calibration import SBC_GROUP, normalised_ranks
from benchmirt_bayes.inference.fit import resolve_settings, sample_model
from benchmirt_bayes.inference.nutpie_run import compile_nutpie
from benchmirt_bayes.model.layout import ResponseLayout
from benchmirt_bayes.model.pymc_model import build_model
from benchmirt_bayes.model.shared_data import observed_values, set_observations, with_shared_observations
from benchmirt_bayes.model.spec import load_spec
from benchmirt_bayes.posterior import kept_variables, mean_field_of_record
from benchmirt_bayes.response_types import DEFAULT_TYPE, RESPONSE_TYPES, response_model
from benchmirt_bayes.response_types.asymptotes import ASYMPTOTE_KINDS, CEILING_ITEM_DIM, draw_ceiling
from benchmirt_bayes.response_types.base import (
    cell_linear_predictor,
    linear_predictor,
    mdisc,
    multidimensional_difficulty,
)
from benchmirt_bayes.response_types.capped_ceilings import draw_ceilings

N_PICKS = 3
"""Cells, items and LLM pairs monitored per setting."""


@dataclass(frozen=True)
class SbcSetting:
    """The size and kind of data one calibration run simulates.

    Attributes
    ----------
    n_llms, items_per_benchmark, n_benchmarks
        The design: every LLM answers every item.
    n_dims
        Latent dimensions, of the simulation and of the fits.
    response_type
        Response type of every item (``"binary"``, ``"graded"``, ``"continuous"``, ``"count"``).
    asymptotes
        Binary items only: ``"2pl"`` (none), ``"3pl"`` (floors) or ``"4pl"`` (floors and
        ceilings) for every benchmark, with the ``[binary]`` section's priors.
    n_options
        Answer options of every item (the floors' prior centre is ``1 / n_options``).

    """

    n_llms: int = 30
    items_per_benchmark: int = 20
    n_benchmarks: int = 2
    n_dims: int = 2
    response_type: str = DEFAULT_TYPE
    asymptotes: str = "2pl"
    n_options: int = 4

    def __post_init__(self) -> None:
        minimum = {
            "n_llms": 5,
            "items_per_benchmark": N_PICKS,
            "n_benchmarks": 1,
            "n_dims": 1,
            "n_options": 2,
        }
        for name, low in minimum.items():
            check_integer(name, getattr(self, name), minimum=low)
        if self.response_type not in RESPONSE_TYPES:
            raise ValueError(f"response_type must be one of {RESPONSE_TYPES}, got {self.response_type!r}")
        if self.asymptotes not in ASYMPTOTE_KINDS:
            raise ValueError(f"asymptotes must be one of {list(ASYMPTOTE_KINDS)}, got {self.asymptotes!r}")
        if self.asymptotes != "2pl" and self.response_type != DEFAULT_TYPE:
            raise ValueError(f"asymptotes are for binary items; {self.response_type!r} items have none")

    @property
    def label(self) -> str:
        """A short description, e.g. ``binary, 30 LLMs x 40 items, 2 dims``."""
        n_items = self.items_per_benchmark * self.n_benchmarks
        kind = "" if self.asymptotes == "2pl" else f" {self.asymptotes.upper()} ({self.n_options} options)"
        return f"{self.response_type}{kind}, {self.n_llms} LLMs x {n_items} items, {self.n_dims} dims"

    def spec_overrides(self) -> dict[str, Any]:
        """The ``[binary]`` fields that give every benchmark the setting's asymptotes (none for the 2PL)."""
        if self.asymptotes == "2pl":
            return {}
        options = {f"bench_{b}": self.n_options for b in range(self.n_benchmarks)}
        return {DEFAULT_TYPE: {"asymptotes": self.asymptotes, "n_options": options}}


def sbc_design(setting: SbcSetting, seed: int = 0) -> ResponseMatrix:
    """The setting's LLMs and items, every cell observed, with valid placeholder responses."""
    rng = np.random.default_rng(seed)
    benchmarks = np.repeat([f"bench_{b}" for b in range(setting.n_benchmarks)], setting.items_per_benchmark)
    n_items = benchmarks.size
    types = np.full(n_items, setting.response_type, dtype=object)
    model = response_model(setting.response_type)
    categories, trials = model.simulation_metadata(n_items)
    layout = ResponseLayout(types, np.asarray(categories), np.asarray(trials), benchmarks)
    columns = np.arange(n_items)
    params = layout.parameters(model.simulate_parameters(layout, columns, rng))
    values = layout.draw(np.zeros((setting.n_llms, n_items)), params, rng)
    coords: dict[str, Any] = {
        LLM_DIM: [f"llm_{j:03d}" for j in range(setting.n_llms)],
        ITEM_DIM: [
            f"{b}/{i:03d}" for b, i in zip(benchmarks, columns % setting.items_per_benchmark, strict=True)
        ],
        "benchmark": (ITEM_DIM, benchmarks),
        "subgroup": (ITEM_DIM, benchmarks),
    }
    if setting.response_type != DEFAULT_TYPE:
        coords |= {
            "response_type": (ITEM_DIM, types.astype(str)),
            "n_categories": (ITEM_DIM, layout.n_categories),
            "n_trials": (ITEM_DIM, layout.n_trials),
        }
    return ResponseMatrix(xr.DataArray(values, dims=(LLM_DIM, ITEM_DIM), coords=coords, name="correct"))


@dataclass(frozen=True)
class MonitoredPicks:
    """Which cells, items and LLM pairs a calibration run monitors (seeded)."""

    cells: np.ndarray
    items: np.ndarray
    pairs: np.ndarray

    @classmethod
    def choose(cls, n_llms: int, n_items: int, seed: int) -> MonitoredPicks:
        """``N_PICKS`` distinct cells, items and LLM pairs."""
        rng = np.random.default_rng([seed, 1])
        cells = rng.choice(n_llms * n_items, N_PICKS, replace=False)
        pairs = np.array([rng.choice(n_llms, 2, replace=False) for _ in range(N_PICKS)])
        return cls(
            np.column_stack(np.divmod(cells, n_items)),
            np.sort(rng.choice(n_items, N_PICKS, replace=False)),
            pairs,
        )


def monitored_quantities(params: Mapping[str, np.ndarray], picks: MonitoredPicks) -> dict[str, np.ndarray]:
    """The rotation-invariant quantities of parameter samples, each ``(sample, k)``.

    ``params`` holds ``ability (S, llm, K)``, ``loading (S, item, K)``, ``intercept (S, item)``
    and the benchmark hyperparameters ``(S, benchmark[, K])``.
    """
    ability, loading, intercept = (np.asarray(params[name]) for name in ("ability", "loading", "intercept"))
    llm, item = picks.cells[:, 0], picks.cells[:, 1]
    discrimination = mdisc(loading[:, picks.items])
    out = {
        "eta": cell_linear_predictor(ability[:, llm], loading[:, item], intercept[:, item]),
        "mdisc": discrimination,
        "difficulty": multidimensional_difficulty(intercept[:, picks.items], discrimination),
        "ability_distance": mdisc(ability[:, picks.pairs[:, 0]] - ability[:, picks.pairs[:, 1]]),
    }
    for name in ("benchmark_intercept_mean", "benchmark_intercept_spread", "benchmark_loading_spread"):
        out[name] = np.asarray(params[name])
    means = np.asarray(params["benchmark_loading_mean"])
    if means.shape[-1] >= 2 and means.shape[-2] >= 2:
        first, second = means[:, 0], means[:, 1]
        out["benchmark_loading_cosine"] = ((first * second).sum(-1) / (mdisc(first) * mdisc(second)))[:, None]
    for item_level, benchmark_level in (
        ("floor", ("floor_offset", "floor_spread")),
        ("ceiling", ("ceiling_mean", "ceiling_spread", "capped_share")),
    ):
        if item_level in params:
            out[item_level] = np.asarray(params[item_level])[:, picks.items]
            out |= {name: np.asarray(params[name]) for name in benchmark_level}
    return out


def simulation_based_calibration(
    setting: SbcSetting | None = None,
    *,
    method: Literal["nuts", "advi"] = "nuts",
    n_replications: int = 100,
    seed: int = 0,
    nuts: Mapping[str, Any] | None = None,
    advi: Mapping[str, Any] | None = None,
    spec: Any = None,
    n_ranks: int = 99,
    progressbar: bool = True,
) -> xr.DataTree:
    """Run simulation-based calibration of ``method`` on data of one ``setting``.

    Parameters
    ----------
    setting
        Size and response type of the simulated data (default :class:`SbcSetting`).
    method
        ``"nuts"`` or ``"advi"``, as in :func:`~benchmirt_bayes.fit_posterior`.
    n_replications
        Prior draws, each simulated and fitted once (100 or more for a verdict).
    seed
        Seed of the prior draws, the responses, the fits and the rank tie-breaks.
    nuts, advi
        Settings as in :func:`~benchmirt_bayes.fit_posterior` (NUTS: default 2 chains of
        500 + 500 draws here, enough for ``n_ranks`` nearly independent draws).
    spec
        Model spec, as in :func:`~benchmirt_bayes.fit_posterior`.
    n_ranks
        Posterior draws (evenly spaced over the fit's draws) each truth is ranked among.
    progressbar
        Show a progress bar over replications.

    Returns
    -------
    xarray.DataTree
        ``prior_sbc``: normalised ranks of every monitored quantity, dims ``(chain, draw, …)``
        with one chain and a draw per replication (the layout of ``simuk``, read by
        ``arviz_plots.plot_ecdf_pit``); ``replications``: per replication its seconds, NUTS
        divergences and largest R-hat of the monitored quantities, or ADVI's Pareto k̂, and
        whether the fit ``failed`` (a ``FloatingPointError``, such as ADVI's NaN ELBO at every
        learning rate; warned about). A failed fit leaves no ranks: the ranks are those of
        the fits that succeeded, and a setting with failed fits is not calibrated as a whole.
        The attrs hold the setting, the method, the fit settings, the seed and ``failed_fits``.

    """
    setting = SbcSetting() if setting is None else setting
    if method not in ("nuts", "advi"):
        raise ValueError(f"method must be 'nuts' or 'advi', got {method!r}")
    check_integer("n_replications", n_replications, minimum=2)
    if method == "nuts":
        nuts = {"chains": 2, "tune": 500, "draws": 500} | dict(nuts or {})
    design = sbc_design(setting, seed)
    overrides = setting.spec_overrides()
    if overrides:
        spec = load_spec(spec).with_overrides(overrides)
    settings = resolve_settings(design, setting.n_dims, method=method, nuts=nuts, advi=advi, spec=spec)
    with pytensor.config.change_flags(numba__fastmath=False):  # as fit_once: reproducible draws
        return _run(setting, design, settings, method, n_replications, seed, n_ranks, progressbar)


def _run(
    setting: SbcSetting,
    design: ResponseMatrix,
    settings: Any,
    method: str,
    n_replications: int,
    seed: int,
    n_ranks: int,
    progressbar: bool,
) -> xr.DataTree:
    base = build_model(design, setting.n_dims, spec=settings.spec, likelihood=settings.likelihood)
    shared = with_shared_observations(base)
    names = kept_variables(base)
    own = [v for v in response_model(setting.response_type).draw_variables if v in base.named_vars]
    with base:
        prior = pm.sample_prior_predictive(draws=n_replications, var_names=names + own, random_seed=seed)
    prior = prior["prior"].to_dataset().isel(chain=0)
    ceilings = _CeilingDraw.of(base, design) if "capped_ceiling" in prior else None
    layout = ResponseLayout.from_responses(design)
    picks = MonitoredPicks.choose(design.n_llms, design.n_items, seed)
    nutpie_model = None
    if method == "nuts" and settings.nuts.sampler == "nutpie" and settings.nuts.init != "advi":
        nutpie_model = compile_nutpie(shared)
    log_density = shared.compile_logp() if method == "advi" else None

    ranks: dict[str, list[np.ndarray]] = {}
    records = []
    for r in track(range(n_replications), f"SBC {method}: {setting.label}", disable=not progressbar):
        rng = np.random.default_rng([seed, 2, r])
        truth = {name: prior[name].values[r] for name in prior.data_vars}
        if ceilings is not None:
            truth["ceiling"] = ceilings.draw(truth, rng)
        eta = linear_predictor(truth["ability"], truth["loading"], truth["intercept"])
        responses = design.with_values(layout.draw(eta, layout.parameters(truth), rng))
        fresh = build_model(responses, setting.n_dims, spec=settings.spec, likelihood=settings.likelihood)
        set_observations(shared, observed_values(fresh))  # one compiled model for every replication
        fit_seed = int(rng.integers(2**31))
        start = time.perf_counter()
        try:
            raw = sample_model(shared, responses, settings, fit_seed, nutpie_model=nutpie_model)
        except FloatingPointError as error:  # a fit that fails is a result of the run, not its end
            records.append({"seconds": time.perf_counter() - start, "failed": True})
            warnings.warn(f"SBC {method}: replication {r} failed: {error}", RuntimeWarning, stacklevel=3)
            continue
        seconds = time.perf_counter() - start
        posterior = raw.posterior
        if ceilings is not None:
            posterior = draw_ceilings(posterior, responses, fit_seed)
        monitored = names + ["ceiling"] * (ceilings is not None)
        draws = posterior.stack(sample=("chain", "draw")).transpose("sample", ...)
        keep = np.linspace(0, draws.sizes["sample"] - 1, n_ranks).round().astype(int)
        fitted = monitored_quantities({n: draws[n].values[keep] for n in monitored}, picks)
        true = monitored_quantities({n: truth[n][None] for n in monitored}, picks)
        for name, values in fitted.items():
            ranks.setdefault(name, []).append(normalised_ranks(values, true[name][0], rng))
        record = {"seconds": seconds, "failed": False}
        if method == "nuts":
            record["divergences"] = (
                int(raw.sample_stats["diverging"].sum()) if "diverging" in raw.sample_stats else 0
            )
            record["max_rhat"] = _max_rhat(posterior, monitored, picks)
        else:
            q = mean_field_of_record(raw.elbo)
            record["pareto_k"] = mean_field_pareto_k(shared, q, seed=[seed, 3, r], log_density=log_density)
        records.append(record)
    return _tree(setting, settings, method, seed, n_ranks, ranks, records)


@dataclass(frozen=True)
class _CeilingDraw:
    """Where a 4PL model's capped items sit and whose share of capped items each has."""

    columns: np.ndarray
    benchmark_codes: np.ndarray
    n_items: int

    @classmethod
    def of(cls, model: pm.Model, design: ResponseMatrix) -> _CeilingDraw:
        items = pd.Index(np.asarray(design.items, dtype=str))
        capped = np.asarray(model.coords[CEILING_ITEM_DIM], dtype=str)
        columns = items.get_indexer(capped)
        benchmarks = pd.Index(np.asarray(model.coords["ceiling_benchmark"], dtype=str))
        codes = benchmarks.get_indexer(np.asarray(design.benchmarks, dtype=str)[columns])
        return cls(columns, codes, design.n_items)

    def draw(self, truth: Mapping[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
        """Every item's ceiling for one prior draw: capped with its benchmark's share, else one."""
        ceiling = np.ones(self.n_items)
        share = truth["capped_share"][self.benchmark_codes]
        ceiling[self.columns] = draw_ceiling(truth["capped_ceiling"], share, rng)
        return ceiling


def _max_rhat(posterior: xr.Dataset, names: list[str], picks: MonitoredPicks) -> float:
    """Largest rank-normalised R-hat over the monitored quantities of one NUTS fit."""
    from arviz_stats.base import array_stats

    chains, draws = posterior.sizes["chain"], posterior.sizes["draw"]
    flat = {n: posterior[n].values.reshape(chains * draws, *posterior[n].shape[2:]) for n in names}
    values = np.concatenate(list(monitored_quantities(flat, picks).values()), axis=1)
    values = values.reshape(chains, draws, -1)
    # a ceiling of one in every draw (an item drawn uncapped throughout) has no R-hat
    return float(np.nanmax(array_stats.rhat(values, chain_axis=0, draw_axis=1)))


def _tree(
    setting: SbcSetting,
    settings: Any,
    method: str,
    seed: int,
    n_ranks: int,
    ranks: dict[str, list[np.ndarray]],
    records: list[dict[str, float]],
) -> xr.DataTree:
    sbc = xr.Dataset(
        {name: (("chain", "draw", f"{name}_index"), np.stack(values)[None]) for name, values in ranks.items()}
    )
    table = pd.DataFrame(records).rename_axis("replication")
    attrs = {
        "setting": json.dumps(dataclasses.asdict(setting)),
        "setting_label": setting.label,
        "method": method,
        "fit_settings": json.dumps(settings.to_dict()),
        "seed": seed,
        "n_ranks": n_ranks,
        "n_replications": len(records),
        "failed_fits": int(table["failed"].sum()),
        "pareto_k_threshold": pareto_k_threshold(PARETO_K_SAMPLES),
        "benchmirt_bayes_version": version("benchmirt_bayes"),
        "pymc_version": version("pymc"),
    }
    tree = xr.DataTree.from_dict(
        {SBC_GROUP: sbc, "replications": xr.Dataset.from_dataframe(table)}, name="sbc"
    )
    tree.attrs = attrs
    return tree
