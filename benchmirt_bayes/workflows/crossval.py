"""Cross-validation and the choice of dimensions: workflows that fit a model per fold.

Each (fold, ``n_dims``) fit is a :mod:`benchmirt_bayes.batch` task run on any executor
and saved as it finishes; the predictions and scores of the fitted folds come from
:mod:`benchmirt_bayes.analyses.heldout`, which never fits anything itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.analyses.heldout import (
    SCHEMES,
    CrossValidation,
    Scheme,
    baseline_predictions,
    check_fold_count,
    fold_split,
    mirt_name,
    mirt_predictions,
    pool_calibration,
    psis_loo,
    spearman_by_benchmark,
    typed_metric_rows,
    typed_predictive_scores,
)
from benchmirt_bayes.analyses.metrics import LOWER_IS_BETTER, calibration_table, prediction_metrics
from benchmirt_bayes.batch import ExecutorArg, fields_fingerprint, run_batch
from benchmirt_bayes.checks import check_integer
from benchmirt_bayes.data.responses import ResponseMatrix
from benchmirt_bayes.inference.fit import fit_posterior, resolve_settings
from benchmirt_bayes.inference.settings import (
    AdviSettings,
    FitSettings,
    Method,
    NutsSettings,
    coerce_settings,
)
from benchmirt_bayes.model.spec import ModelSpec
from benchmirt_bayes.response_types import DEFAULT_TYPE

FOLD_ADVI_DRAWS = 100
"""Draws from the approximation of an ADVI fold fit (held-out predictions average them)."""


def fold_seed(seed: int, fold: int, n_dims: int) -> int:
    """The fit seed of one (fold, n_dims) task, derived from the run's seed."""
    return int(np.random.SeedSequence([seed, fold, n_dims]).generate_state(1)[0])


@dataclass(frozen=True)
class CVFitTask:
    """Fit one fold's training matrix with one number of dimensions."""

    scheme: str
    fold: int
    n_folds: int
    seed: int
    reveal_share: float
    n_dims: int
    fit_json: str

    @property
    def key(self) -> str:
        """File stem of the stored fold fit."""
        return f"cv_{self.scheme}_fold{self.fold:02d}_of{self.n_folds:02d}_dims{self.n_dims}"

    @property
    def fingerprint(self) -> str:
        """Everything that determines the fit."""
        return fields_fingerprint(self)

    def run(self, responses: ResponseMatrix) -> xr.DataTree:
        """Fit the fold (serially: parallelism lives at the batch level)."""
        split = fold_split(responses, self.scheme, self.fold, self.n_folds, self.seed, self.reveal_share)
        fit = json.loads(self.fit_json)
        return fit_posterior(
            split.train,
            self.n_dims,
            method=fit["method"],
            nuts=fit["nuts"],
            advi=fit["advi"],
            spec=ModelSpec.from_json(fit["spec"]),
            likelihood=fit["likelihood"],
            seed=fold_seed(self.seed, self.fold, self.n_dims),
            executor="serial",
            progressbar=False,
        )


def fold_fit_request(
    responses: ResponseMatrix,
    n_dims: int,
    *,
    method: Method = "auto",
    nuts: NutsSettings | Mapping[str, Any] | None = None,
    advi: AdviSettings | Mapping[str, Any] | None = None,
    spec: str | Path | ModelSpec | Mapping[str, Any] | None = None,
    likelihood: str = "auto",
) -> tuple[FitSettings, str]:
    """Check how fold fits are made and return the settings and their JSON for :class:`CVFitTask`.

    ADVI fold fits default to :data:`FOLD_ADVI_DRAWS` draws from the approximation; NUTS
    fold fits keep :func:`fit_posterior`'s draws. The method, the likelihood
    form and ``"auto"`` NUTS settings are stored as asked and resolved per fold, on the
    fold's own matrix.
    """
    if method in ("auto", "advi", "fullrank_advi") and advi is None:
        advi = AdviSettings(draws=FOLD_ADVI_DRAWS)
    settings = resolve_settings(
        responses, n_dims, method=method, nuts=nuts, advi=advi, spec=spec, likelihood="cells"
    )
    keep_nuts = nuts is not None or settings.nuts is not None
    asked = coerce_settings(nuts, NutsSettings, "nuts") if keep_nuts else None
    kept_advi = coerce_settings(advi, AdviSettings, "advi") if method == "auto" else settings.advi
    request = {
        "method": method,
        "nuts": asdict(asked) if asked is not None else None,
        "advi": asdict(kept_advi) if kept_advi is not None else None,
        "spec": settings.spec_json,
        "likelihood": likelihood,
    }
    return settings, json.dumps(request, sort_keys=True)


def cross_validate(
    responses: ResponseMatrix,
    *,
    n_dims: Sequence[int] = (1, 2, 3, 4),
    folds: int = 10,
    scheme: Scheme = "cells",
    method: Method = "auto",
    nuts: NutsSettings | Mapping[str, Any] | None = None,
    advi: AdviSettings | Mapping[str, Any] | None = None,
    spec: str | Path | ModelSpec | Mapping[str, Any] | None = None,
    likelihood: Literal["auto", "fused", "fused64", "dense", "cells"] = "auto",
    seed: int = 42,
    category: str | None = None,
    reveal_share: float = 0.5,
    executor: ExecutorArg = "auto",
    results_dir: str | Path | None = None,
    progressbar: bool = True,
) -> CrossValidation:
    """K-fold held-out prediction of MIRT models against simple baselines.

    Parameters
    ----------
    responses
        The data.
    n_dims
        MIRT dimensions to fit; the 1-D model (the 2PL) is always included as a baseline.
    folds
        Number of folds K.
    scheme
        ``"cells"`` (the published protocol), ``"llms"`` or ``"items"``; see the module docstring.
    method, nuts, advi, spec, likelihood
        How every fold is fitted, exactly as in :func:`benchmirt_bayes.fit_posterior`
        (default ``"auto"``, per fold: NUTS on small folds, where it is calibrated and costs
        about what ADVI does, else ADVI with 100 draws from the approximation).
    seed
        Seed of the folds and of every fit (each fold × n_dims gets its own derived seed).
    category
        An item coordinate for the "LLM × category mean" baseline (e.g. ``"subgroup"``).
    reveal_share
        For ``llms`` / ``items``: share of a held-out LLM's items (an item's LLMs)
        that are revealed for placing it; the rest are predicted.
    executor
        Where the fold fits run (see :func:`benchmirt_bayes.batch.run_batch`).
    results_dir
        Folder where each fold fit is saved as it finishes; reruns skip finished fits.
    progressbar
        Print one line per finished fit.

    Returns
    -------
    CrossValidation
        The tidy table, calibration data and settings.

    """
    typed = not responses.is_binary
    if typed and scheme != "cells":
        raise ValueError(
            f"scheme={scheme!r} predicts binary items only; data with graded, continuous or count "
            "items are cross-validated over cells (scheme='cells')"
        )
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
    check_integer("folds", folds, minimum=2)
    check_fold_count(responses, scheme, folds)
    if category is not None and category not in responses.item_coords:
        raise KeyError(f"unknown item coordinate {category!r}; available: {responses.item_coords}")
    dims = sorted({1, *(int(d) for d in n_dims)})
    if dims[0] < 1:
        raise ValueError(f"n_dims must be positive, got {list(n_dims)}")
    settings, fit_json = fold_fit_request(
        responses, dims[-1], method=method, nuts=nuts, advi=advi, spec=spec, likelihood=likelihood
    )
    tasks = [
        CVFitTask(scheme, fold, folds, seed, reveal_share, d, fit_json) for fold in range(folds) for d in dims
    ]

    finished = []

    def report(key: str, _tree: xr.DataTree) -> None:
        finished.append(key)
        if progressbar:
            print(f"[cross_validate] {len(finished)}/{len(tasks)} fits done ({key})", flush=True)

    fits = run_batch(
        tasks,
        responses,
        executor=executor,
        results_dir=results_dir,
        cores_per_task=settings.chains,
        fork_safe=settings.sampler != "numpyro",
        on_result=report,
    )
    baselines = {"global_mean": "global", "llm_mean": "llm", "llm_x_benchmark_mean": "benchmark"}
    if category is not None:
        baselines[f"llm_x_{category}_mean"] = category
    rows, calibration = [], []
    types = responses.response_types
    for fold in range(folds):
        split = fold_split(responses, scheme, fold, folds, seed, reveal_share)
        outcome = responses.values[split.test]
        binary = types[np.nonzero(split.test)[1]] == DEFAULT_TYPE
        predictions = {
            name: baseline_predictions(responses, split.known, by)[split.test]
            for name, by in baselines.items()
        }
        for d in dims:
            task = CVFitTask(scheme, fold, folds, seed, reveal_share, d, fit_json)
            predictions[mirt_name(d)] = mirt_predictions(fits[task.key], responses, split, scheme, seed=fold)
            if typed:
                scores = typed_predictive_scores(fits[task.key], responses, split.test, seed=fold)
                rows.extend((scheme, mirt_name(d), fold, *row) for row in typed_metric_rows(scores))
        for model, prob in predictions.items():
            if binary.any():
                for metric, value in prediction_metrics(outcome[binary], prob[binary]).items():
                    rows.append((scheme, model, fold, metric, "all", value))
                cal = calibration_table(outcome[binary], prob[binary])
                cal.insert(0, "model", model)
                cal.insert(1, "fold", fold)
                calibration.append(cal)
            for bench, value in spearman_by_benchmark(responses, split.test, prob).items():
                rows.append((scheme, model, fold, "spearman", bench, value))
            if typed:
                scaled = responses.scaled_values[split.test]
                for kind in pd.unique(types[types != DEFAULT_TYPE]):
                    cells = types[np.nonzero(split.test)[1]] == kind
                    mse = float(np.mean((prob[cells] - scaled[cells]) ** 2))
                    rows.append((scheme, model, fold, f"{kind}_mse", "all", mse))
    table = pd.DataFrame(rows, columns=["scheme", "model", "fold", "metric", "benchmark", "value"])
    pooled = pool_calibration(pd.concat(calibration, ignore_index=True)) if calibration else pd.DataFrame()
    settings = {
        "scheme": scheme,
        "folds": folds,
        "seed": seed,
        "n_dims": dims,
        "reveal_share": reveal_share,
        "category": category,
        "fit": json.loads(fit_json),
        "data_hash": responses.data_hash(),
    }
    return CrossValidation(table, pooled, settings)


@dataclass
class DimensionChoice:
    """Result of :func:`choose_n_dims`."""

    n_dims: int
    table: pd.DataFrame
    rule: str
    cross_validation: CrossValidation | None = None

    def __str__(self) -> str:
        return f"recommended n_dims = {self.n_dims} ({self.rule})\n{self.table.to_string()}"


def _fold_values(cv: CrossValidation, metric: str) -> pd.DataFrame:
    """``(fold, n_dims)`` values of a pooled metric of the MIRT models."""
    table = cv.table[(cv.table["metric"] == metric) & (cv.table["benchmark"] == "all")]
    table = table[table["model"].str.match(r"mirt_\d+d$")]
    wide = table.pivot_table(index="fold", columns="model", values="value", aggfunc="mean")
    wide.columns = [int(c.removeprefix("mirt_").removesuffix("d")) for c in wide.columns]
    return wide


def choose_n_dims(
    data: ResponseMatrix | CrossValidation,
    *,
    n_dims: Sequence[int] = (1, 2, 3, 4),
    metric: str = "log_loss",
    fits: Mapping[int, xr.DataTree] | None = None,
    **cv_kwargs: Any,
) -> DimensionChoice:
    """Recommend the number of dimensions from held-out prediction (a paired one-SE rule).

    The best model has the best mean held-out ``metric`` over folds. Every model is compared
    with it fold by fold (the same held-out cells, LLMs or items): the recommendation is the
    smallest ``n_dims`` whose mean paired difference to the best is within one standard
    error *of that paired difference*. Pairing removes the fold-to-fold spread that all
    models share (some folds are harder), which in the held-out-LLM scheme dwarfs the
    differences between models; an unpaired SE let a model that lost in four folds of five
    look as good as the winner. ``wins`` counts the folds in which a model beats the best
    one. Pass a :class:`CrossValidation` to reuse folds already fitted, or a
    :class:`ResponseMatrix` to run :func:`cross_validate` (``cv_kwargs`` are passed on; use
    ``executor=`` to run the sweep on a cluster).

    ``fits`` (``{n_dims: posterior}`` on the full data, ideally NUTS) adds PSIS-LOO
    columns (:func:`psis_loo`) to the table, where it is feasible; they inform but do
    not change the recommendation, which stays with the held-out metric.

    Returns
    -------
    DimensionChoice
        ``n_dims``, the table behind it (mean, unpaired se, ``paired_difference`` and
        ``paired_se`` against the best, ``wins`` and ``folds``, and ``elpd_loo`` /
        ``elpd_loo_se`` / ``p_loo`` / ``share_k_above_0.7`` with ``fits``) and the rule.

    """
    if isinstance(data, ResponseMatrix):
        cv = cross_validate(data, n_dims=n_dims, **cv_kwargs)
    elif isinstance(data, CrossValidation):
        cv = data
    else:
        raise TypeError(f"expected a ResponseMatrix or CrossValidation, got {type(data).__name__}")
    summary = cv.summary().reset_index()
    rows = summary[(summary["metric"] == metric) & summary["model"].str.match(r"mirt_\d+d$")].copy()
    if rows.empty:
        raise ValueError(f"no MIRT rows for metric {metric!r} in the cross-validation")
    rows["n_dims"] = rows["model"].str.extract(r"mirt_(\d+)d")[0].astype(int)
    rows = rows.sort_values("n_dims").set_index("n_dims")
    sign = 1.0 if LOWER_IS_BETTER.get(metric, True) else -1.0
    best = int((sign * rows["mean"]).idxmin())
    per_fold = _fold_values(cv, metric)  # (fold, n_dims)
    difference = sign * (per_fold.sub(per_fold[best], axis=0))  # > 0: worse than the best
    rows["paired_difference"] = sign * difference.mean()
    rows["paired_se"] = difference.std(ddof=1) / np.sqrt(difference.count())
    rows["wins"] = (difference < 0).sum()
    rows["folds"] = difference.count()
    eligible = rows.index[(difference.mean() <= rows["paired_se"].fillna(0.0)) | (rows.index == best)]
    choice = int(eligible.min())
    rows["difference_to_best"] = rows["mean"] - rows.loc[best, "mean"]
    rows["within_one_se"] = rows.index.isin(eligible)
    rule = (
        f"smallest n_dims whose mean held-out {metric} is within one paired SE of the best's, "
        f"fold by fold (best: {best} dims, {rows.loc[best, 'mean']:.4f})"
    )
    columns = ["mean", "se", "lower", "upper", "difference_to_best", "paired_difference", "paired_se"]
    table = rows[[*columns, "wins", "folds", "within_one_se"]].copy()
    for d, fit in (fits or {}).items():
        loo = psis_loo(fit)
        table.loc[int(d), ["elpd_loo", "elpd_loo_se", "p_loo", "share_k_above_0.7"]] = [
            loo["elpd_loo"],
            loo["se"],
            loo["p_loo"],
            loo["share_k_above_0.7"],
        ]
    return DimensionChoice(choice, table, rule, cv)
