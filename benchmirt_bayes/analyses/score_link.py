"""The link from a subset's answers to full-benchmark scores, as an object that fits and predicts.

:class:`ScoreLink` holds one :class:`BenchmarkLink` per benchmark. Both sides of a link,
fitting on training LLMs with known full scores and predicting for new LLMs, build their
regression inputs the same way: :class:`LinkFeatures` from the LLMs' ability posteriors
(:mod:`~benchmirt_bayes.analyses.ability_posterior`) and :class:`LinkDesign` from those
features, so the link sees at prediction exactly the kind of noise it was fitted on. The
method is described in :mod:`~benchmirt_bayes.analyses.score_estimation`.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.analyses.ability_posterior import (
    AbilityPosterior,
    ability_posterior,
    fitted_deviation_variance,
    predicted_mean_score,
)
from benchmirt_bayes.analyses.score_neighbours import (
    NEIGHBOURS,
    Kernel,
    Neighbours,
    between_neighbours,
    choose_kernel,
    correction,
    decode_answers,
    encode_answers,
    nearest,
)
from benchmirt_bayes.analyses.score_regression import (
    Design,
    IndexCurve,
    gross_outliers,
    natural_spline_basis,
    ridge,
)
from benchmirt_bayes.analyses.score_selection import (
    known_scores,
    score_frame,
    select_for_scores,
    selection_rule,
    stepwise_choice,
)
from benchmirt_bayes.draws import PosteriorDraws
from benchmirt_bayes.errors import limit_listing
from benchmirt_bayes.posterior import responses_from_tree
from benchmirt_bayes.summaries import CI_PROB, check_ci_prob

STORAGE_FORMAT = 6
"""The one JSON layout :meth:`ScoreLink.to_json` writes and :meth:`ScoreLink.from_json` reads."""
SPLINE_KNOTS = 5
RIDGE = 1e-4
ITEM_RIDGES = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2)
"""Ridge penalties (per training LLM) of the link's smooth terms, and the candidates for its
kept-item answers (chosen per benchmark by the out-of-fold error)."""
INDEX_RIDGES = ITEM_RIDGES[2:]
"""The candidates of the single-index form (inside the curve, weak penalties overfit)."""
FORMS = ("additive", "index")
"""The two forms of the ``package`` regression."""
ESTIMATORS = ("naive", "irt", "blend", "package")
"""``naive``: the plain mean on the kept items, linearly calibrated to the full score;
``irt``: the spline of the subset ability and the IRT expectation; ``blend``: the
tinyBenchmarks idea (a weighted average of the calibrated kept-item mean and the IRT
prediction, the weight learned on the training LLMs); ``package`` (the default): one
regression on the IRT terms, the kept mean and, with a stronger ridge penalty, the answers
to the kept items themselves, so that items whose success tracks the unseen rest of the
benchmark more (or less) than the model says count accordingly; additive or single-index,
whichever predicts the training LLMs better out of fold."""
DEFAULT_DRAWS = 20
"""Item draws that score subsets (training and new LLMs) unless told otherwise."""
LINK_ATTR = "benchmirt_score_link"
"""The attr of a fit that carries its link (:func:`~benchmirt_bayes.with_score_link`)."""


MIN_LINK_LLMS = 10
"""Fewest training LLMs with a known full score that a benchmark's link is fitted from."""
MIN_REGRESSION_LLMS = 100
"""Fewest training LLMs with a known full score for the ``package`` regression; with fewer
the ``package`` estimate is the blend. Measured on the Open LLM Leaderboard
(``benchmarks/small_population_scores.py``): with 16 and 40 training LLMs the regression,
even where it beat the blend out of fold by a paired SE, predicted held-out LLMs worse than
the blend on the same items; with 112 it predicted them better."""
LLMS_PER_SPREAD_TERM = 20
"""The interval's spread follows the ability (a regression of the absolute out-of-fold
errors on the link's smooth terms) only with at least this many training LLMs per term;
with fewer, that regression fits its own errors' noise (its spread is smallest exactly where
the training errors happened to be small) and the interval under-covers, so the spread is
one constant."""


def conformal_quantile(ratios: np.ndarray, ci_prob: float) -> float:
    """The split-conformal quantile of ``n`` ratios.

    The ``ceil((n + 1) ci_prob)``-th smallest; the largest when ``n`` is too small for that rank.
    """
    ordered = np.sort(np.asarray(ratios, dtype=float))
    rank = min(len(ordered) - 1, int(np.ceil((len(ordered) + 1) * ci_prob)) - 1)
    return float(ordered[rank])


# ------------------------------------------------------------------ features and designs
@dataclass(frozen=True)
class LinkFeatures:
    """What a subset tells about each LLM's score on one benchmark (all on ``[0, 1]``).

    Attributes
    ----------
    ability
        ``(unit, dimension)`` posterior mean abilities from the kept items.
    irt
        ``(unit,)`` the model's expected mean score on all the benchmark's fitted items.
    naive
        ``(unit,)`` the plain mean on the benchmark's answered items (NaN: none answered).
    answers
        ``(unit, kept item)`` the answers to the kept items themselves; an unanswered one is
        filled with its IRT expectation.

    """

    ability: np.ndarray
    irt: np.ndarray
    naive: np.ndarray
    answers: np.ndarray

    @classmethod
    def from_posterior(
        cls,
        abilities: AbilityPosterior,
        columns: np.ndarray,
        outcomes: np.ndarray,
        scale: np.ndarray,
        kept: np.ndarray,
    ) -> LinkFeatures:
        """Features of one benchmark (its fitted ``columns``) from ``outcomes (unit, item)``."""
        seen = ~np.isnan(outcomes[:, columns])
        with np.errstate(invalid="ignore"):
            naive = np.nansum(outcomes[:, columns] / scale[columns], axis=1) / seen.sum(axis=1)
        answers = outcomes[:, kept] / scale[kept]
        answers = np.where(np.isnan(answers), abilities.expected[:, kept], answers)
        return cls(abilities.mean, abilities.expected[:, columns].mean(axis=1), naive, answers)

    def take(self, rows: np.ndarray) -> LinkFeatures:
        """The features of some units."""
        return LinkFeatures(self.ability[rows], self.irt[rows], self.naive[rows], self.answers[rows])


@dataclass(frozen=True)
class LinkDesign:
    """The regression designs of a benchmark's link: which terms, with which spline knots.

    ``kind`` ``"naive"`` is an intercept and the kept mean; ``"irt"`` an intercept, a
    natural spline of each ability dimension and the IRT expectation; ``"package"`` all of
    them and the kept answers, whose ridge penalty is ``answer_ridge``.
    """

    knots: list[list[float]]

    @classmethod
    def from_features(cls, features: LinkFeatures) -> LinkDesign:
        """Knots at quantiles of the training LLMs' abilities."""
        return cls(
            [
                [float(q) for q in np.quantile(features.ability[:, k], np.linspace(0.05, 0.95, SPLINE_KNOTS))]
                for k in range(features.ability.shape[1])
            ]
        )

    def matrix(self, features: LinkFeatures, kind: str, answer_ridge: float = ITEM_RIDGES[0]) -> Design:
        """The design of one kind and its per-column ridge penalty."""
        parts, penalty = [np.ones((features.irt.shape[0], 1))], [0.0]
        if kind in ("irt", "package"):
            for k, knot in enumerate(self.knots):
                basis = natural_spline_basis(features.ability[:, k], np.asarray(knot))
                parts.append(basis)
                penalty += [RIDGE] * basis.shape[1]
            parts.append(features.irt[:, None])
            penalty.append(RIDGE)
        if kind in ("naive", "package"):
            parts.append(np.nan_to_num(features.naive, nan=0.5)[:, None])
            penalty.append(RIDGE)
        if kind == "package":
            parts.append(features.answers)
            penalty += [answer_ridge] * features.answers.shape[1]
        return np.column_stack(parts), np.asarray(penalty)


# ------------------------------------------------------------------ one benchmark's link
@dataclass(frozen=True)
class NeighbourCorrection:
    """The kriged errors of the training LLMs nearest by kept-item answers.

    Attributes
    ----------
    count
        Neighbours per LLM.
    kernel
        The kriging kernel's ``[length, noise, score_weight]``.
    rows
        The training LLMs' rows of :attr:`ScoreLink.reference`.
    residuals, estimates
        Their out-of-fold link errors and estimates.

    """

    count: int
    kernel: list[float]
    rows: list[int]
    residuals: list[float]
    estimates: list[float]

    def predict(
        self,
        answers: np.ndarray,
        estimate: np.ndarray,
        reference: np.ndarray,
        cache: dict,
        items: Sequence[str],
    ) -> np.ndarray:
        """Each unit's residual kriged from its nearest training LLMs (by kept-item answers).

        ``cache`` shares the neighbour search between benchmarks with the same kept items
        and training LLMs (a joint fit).
        """
        rows = np.asarray(self.rows, dtype=int)
        key = (tuple(items), rows.tobytes(), self.count)
        if key not in cache:
            found = nearest(answers, reference[rows], self.count)
            cache[key] = (found, between_neighbours(found, reference[rows]))
        found, among = cache[key]
        return correction(
            np.asarray(self.residuals),
            found,
            among,
            Kernel(*self.kernel),
            np.asarray(self.estimates),
            estimate,
        )


@dataclass(frozen=True)
class BenchmarkLink:
    """The learned map from a benchmark's subset features to its full score.

    Attributes
    ----------
    items
        The kept items it reads.
    design
        Its regression terms.
    coefficients
        Ridge coefficients of the ``naive``, ``irt`` and additive ``package`` regressions.
    index
        The single-index ``package`` curve, when that form predicted better out of fold.
    blend_weight
        The ``blend`` estimator's weight on the calibrated kept mean.
    scale_coefficients, spread_floor, quantiles, ci_prob
        The intervals: ``quantiles[estimator]`` × the spread (a regression on the smooth
        terms, or a constant with few training LLMs; at least ``spread_floor``) covers
        ``ci_prob`` of that estimator's out-of-fold errors on the training LLMs.
    neighbours
        The neighbour correction of the ``package`` estimate, if it helped out of sample.
    package_is_blend
        ``True`` when the ``package`` estimate is the ``blend``: fewer than
        :data:`MIN_REGRESSION_LLMS` training LLMs, or the regression did not beat the blend
        out of fold by more than one paired standard error (:func:`regression_beats_blend`).
    training
        Out-of-fold errors per estimator and what was chosen, for reports.

    """

    items: list[str]
    design: LinkDesign
    coefficients: dict[str, list[float]]
    index: IndexCurve | None
    blend_weight: float
    scale_coefficients: list[float]
    spread_floor: float
    quantiles: dict[str, float]
    ci_prob: float
    neighbours: NeighbourCorrection | None = None
    package_is_blend: bool = False
    training: dict[str, float] = field(default_factory=dict)

    @property
    def package_form(self) -> str:
        """``"blend"``, ``"index"`` or ``"additive"``: what the ``package`` estimate is."""
        if self.package_is_blend:
            return "blend"
        return "index" if self.index is not None else "additive"

    def predict(self, features: LinkFeatures, estimator: str = "package") -> np.ndarray:
        """One estimator's estimate (before any neighbour correction)."""
        if estimator == "blend" or (estimator == "package" and self.package_is_blend):
            naive, irt = self.predict(features, "naive"), self.predict(features, "irt")
            return self.blend_weight * naive + (1 - self.blend_weight) * irt
        x = self.design.matrix(features, estimator)[0]
        if estimator == "package" and self.index is not None:
            return self.index.predict(x)
        return x @ np.asarray(self.coefficients[estimator])

    def half_width(self, features: LinkFeatures, estimator: str = "package") -> np.ndarray:
        """Each unit's interval half-width for one estimator."""
        spread = self.design.matrix(features, "irt")[0] @ np.asarray(self.scale_coefficients)
        return self.quantiles[estimator] * np.maximum(spread, self.spread_floor)

    @classmethod
    def fit(
        cls,
        features: LinkFeatures,
        target: np.ndarray,
        *,
        items: list[str],
        ci_prob: float,
        folds: int,
        rng: np.random.Generator,
        neighbours: Neighbours,
        among: np.ndarray,
        rows: np.ndarray | None = None,
        fold_features: Callable[[np.ndarray], list[LinkFeatures]] | None = None,
    ) -> BenchmarkLink:
        """Fit one benchmark's link on its training LLMs.

        Parameters
        ----------
        features, target
            The training LLMs' features and known full scores.
        items
            The kept items.
        ci_prob
            Coverage of the conformal interval.
        folds
            Cross-fitting folds, at most one per LLM (the form, the answers' ridge, the blend
            weight, the neighbour kernel and the interval all come from out-of-fold errors).
        rng
            Draws the folds and the kernel's seed.
        neighbours, among
            Each training LLM's nearest other training LLMs and the distances between them
            (:func:`~benchmirt_bayes.analyses.score_neighbours.between_neighbours`).
        rows
            The training LLMs' rows of the stored reference answers (default: in order).
        fold_features
            For items chosen on the training LLMs' scores: given each LLM's fold, the
            features every fold's regressions see, from items chosen again without that
            fold's LLMs, so the out-of-fold errors (hence the interval) count the choice.
            Default: ``features`` in every fold. With them the ``package`` estimate gets no
            neighbour correction.

        """
        design = LinkDesign.from_features(features)
        folds = min(folds, len(target))
        fold_of = rng.permutation(len(target)) % folds
        per_fold = fold_features(fold_of) if fold_features is not None else None
        fitted = _CrossFit(design, features, target, fold_of, folds, per_fold)
        form, answer_ridge = fitted.best_package()
        out_of_fold = {"naive": fitted.predicted["naive", 0.0], "irt": fitted.predicted["irt", 0.0]}
        raw_estimate = fitted.predicted[form, answer_ridge]
        coefficients = {
            kind: ridge(design.matrix(features, kind, answer_ridge), target) for kind in ("naive", "irt")
        }
        inlier = fitted.inlier
        x, penalty = design.matrix(features, "package", answer_ridge)
        coefficients["package"] = ridge((x[inlier], penalty), target[inlier])
        index = IndexCurve.fit((x[inlier], penalty), target[inlier]) if form == "index" else None
        blend_weight = _blend_weight(out_of_fold["naive"], out_of_fold["irt"], target)
        raw_residual = target - raw_estimate
        kernel_seed = int(rng.integers(2**31))
        # with items chosen again per fold, the training LLMs' out-of-fold errors come from
        # different items in each fold, and kriging them across folds looks better out of
        # fold than it does for new LLMs (benchmarks/selection_optimism.py): no correction
        kernel = (
            None
            if per_fold is not None
            else choose_kernel(raw_residual, neighbours, among, raw_estimate, seed=kernel_seed)
        )
        count = neighbours.index.shape[1] if kernel is not None else 0
        out_of_fold["package"] = raw_estimate + correction(
            raw_residual, neighbours, among, kernel, raw_estimate, raw_estimate
        )
        out_of_fold["blend"] = blend_weight * out_of_fold["naive"] + (1 - blend_weight) * out_of_fold["irt"]
        residual = target - out_of_fold["package"]
        scale_design = design.matrix(features, "irt")
        if len(target) >= LLMS_PER_SPREAD_TERM * scale_design[0].shape[1]:
            scale_beta = ridge(scale_design, np.abs(residual))
        else:
            scale_beta = np.zeros(scale_design[0].shape[1])
            scale_beta[0] = 1.0  # the intercept column: one spread for every LLM
        floor = 0.1 * float(np.median(np.abs(residual))) + 1e-9
        spread = np.maximum(scale_design[0] @ scale_beta, floor)
        quantiles = {
            kind: conformal_quantile(np.abs(target - value) / spread, ci_prob)
            for kind, value in out_of_fold.items()
        }
        rmse = {kind: float(np.sqrt(np.mean((target - value) ** 2))) for kind, value in out_of_fold.items()}
        package_is_blend = not regression_beats_blend(target, out_of_fold["package"], out_of_fold["blend"])
        rmse["regression"] = rmse["package"]
        if package_is_blend:
            quantiles["package"], rmse["package"] = quantiles["blend"], rmse["blend"]
            kernel, count = None, 0
        training = (
            {f"out_of_fold_rmse_{kind}": value for kind, value in rmse.items()}
            | {f"out_of_fold_rmse_{name}": fitted.best_rmse(name) for name in FORMS}
            | {
                "n_llms": float(len(target)),
                "folds": float(folds),
                "outliers_left_out": float(np.sum(~inlier)),
                "item_ridge": answer_ridge,
                "neighbour_count": float(count),
                "package_is_blend": float(package_is_blend),
            }
            | dict(zip(("neighbour_length", "neighbour_noise"), kernel or (), strict=False))
        )
        correction_part = None
        if count:
            correction_part = NeighbourCorrection(
                count=count,
                kernel=[float(k) for k in kernel],
                rows=[int(r) for r in (np.arange(len(target)) if rows is None else rows)],
                residuals=[float(r) for r in raw_residual],
                estimates=[float(e) for e in raw_estimate],
            )
        return cls(
            items=list(items),
            design=design,
            coefficients={kind: [float(b) for b in beta] for kind, beta in coefficients.items()},
            index=index,
            blend_weight=blend_weight,
            scale_coefficients=[float(b) for b in scale_beta],
            spread_floor=floor,
            quantiles=quantiles,
            ci_prob=float(ci_prob),
            neighbours=correction_part,
            package_is_blend=package_is_blend,
            training=training,
        )

    @classmethod
    def from_dict(cls, raw: Mapping) -> BenchmarkLink:
        """Inverse of :func:`dataclasses.asdict`."""
        raw = dict(raw)
        raw["design"] = LinkDesign(**raw["design"])
        raw["index"] = IndexCurve(**raw["index"]) if raw["index"] is not None else None
        raw["neighbours"] = (
            NeighbourCorrection(**raw["neighbours"]) if raw["neighbours"] is not None else None
        )
        return cls(**raw)


class _CrossFit:
    """Out-of-fold predictions of every candidate regression of one benchmark.

    The candidates are ``naive``, ``irt`` and the two ``package`` forms at each ridge of the
    kept answers. The ``package`` regressions leave out gross outliers of their smooth terms;
    the baselines stay plain least squares. With ``fold_features`` each fold's regressions
    are fitted and predict on that fold's own features (items chosen without its LLMs).
    """

    def __init__(
        self,
        design: LinkDesign,
        features: LinkFeatures,
        target: np.ndarray,
        fold_of: np.ndarray,
        folds: int,
        fold_features: Sequence[LinkFeatures] | None = None,
    ):
        self.ridges = {"additive": ITEM_RIDGES, "index": INDEX_RIDGES}
        self.target = target
        designs, self.inlier = self._designs(design, features), self._inlier(design, features)
        candidates = [("naive", 0.0), ("irt", 0.0), *[(f, r) for f in FORMS for r in self.ridges[f]]]
        self.predicted = {key: np.zeros(len(target)) for key in candidates}
        for fold in range(folds):
            test = fold_of == fold
            fold_designs, fold_inlier = designs, self.inlier
            if fold_features is not None:
                own, own_design = fold_features[fold], LinkDesign.from_features(fold_features[fold])
                fold_designs, fold_inlier = self._designs(own_design, own), self._inlier(own_design, own)
            for kind, answer_ridge in candidates:
                x, penalty = self._design_of(fold_designs, kind, answer_ridge)
                train = (fold_of != fold) & fold_inlier if kind in FORMS else fold_of != fold
                if kind == "index":
                    curve = IndexCurve.fit((x[train], penalty), target[train])
                    self.predicted[kind, answer_ridge][test] = curve.predict(x[test])
                else:
                    self.predicted[kind, answer_ridge][test] = x[test] @ ridge(
                        (x[train], penalty), target[train]
                    )
        everyone = np.ones(len(target), dtype=bool)
        self.mse = {
            key: float(np.mean((target - value)[self.rows_of(key[0], everyone)] ** 2))
            for key, value in self.predicted.items()
        }

    @staticmethod
    def _designs(design: LinkDesign, features: LinkFeatures) -> tuple[dict[str, Design], int]:
        """Each kind's design, and how many of the ``package`` design's last columns are answers.

        Every row's design depends on that row alone (the knots are fixed), so the folds take
        rows of it.
        """
        designs = {kind: design.matrix(features, kind) for kind in ("naive", "irt", "package")}
        return designs, features.answers.shape[1]

    def _inlier(self, design: LinkDesign, features: LinkFeatures) -> np.ndarray:
        """Rows that are no gross outliers of the ``package`` design's smooth terms."""
        x, penalty = design.matrix(features, "package")
        smooth = x.shape[1] - features.answers.shape[1]
        return ~gross_outliers((x[:, :smooth], penalty[:smooth]), self.target)

    @staticmethod
    def _design_of(designs: tuple[dict[str, Design], int], kind: str, answer_ridge: float) -> Design:
        """The ridge candidates differ in the penalty of the answers, the package design's last columns."""
        by_kind, n_answers = designs
        if kind not in FORMS:
            return by_kind[kind]
        x, penalty = by_kind["package"]
        penalty = penalty.copy()
        penalty[x.shape[1] - n_answers :] = answer_ridge
        return x, penalty

    def rows_of(self, kind: str, rows: np.ndarray) -> np.ndarray:
        return rows & self.inlier if kind in FORMS else rows

    def best_package(self) -> tuple[str, float]:
        """The form and answers' ridge with the smallest out-of-fold error."""
        return min(((f, r) for f in FORMS for r in self.ridges[f]), key=self.mse.__getitem__)

    def best_rmse(self, form: str) -> float:
        return float(np.sqrt(min(self.mse[form, r] for r in self.ridges[form])))


def regression_beats_blend(target: np.ndarray, regression: np.ndarray, blend: np.ndarray) -> bool:
    """Whether the regression's out-of-fold squared errors beat the blend's by a paired SE.

    True with at least :data:`MIN_REGRESSION_LLMS` training LLMs when their mean is below
    the blend's by more than one paired standard error. The ``package`` regression has many
    terms; with few training LLMs its choice of form and penalty fits their noise, and it
    can predict new LLMs worse than the two-term blend. So it is used only where it wins
    clearly, and never from a few dozen LLMs.
    """
    difference = (target - regression) ** 2 - (target - blend) ** 2
    if len(difference) < MIN_REGRESSION_LLMS:
        return False
    return bool(difference.mean() < -difference.std(ddof=1) / np.sqrt(len(difference)))


def _blend_weight(naive: np.ndarray, irt: np.ndarray, target: np.ndarray) -> float:
    """The weight on the calibrated kept mean that minimises the out-of-fold squared error."""
    denominator = float(np.sum((naive - irt) ** 2))
    if denominator <= 0:
        return 0.0
    return float(np.clip(np.sum((target - irt) * (naive - irt)) / denominator, 0.0, 1.0))


# ------------------------------------------------------------------ the links of a fit
@dataclass(frozen=True)
class ScoreLink:
    """Links to full-benchmark scores, per benchmark: fitted by :meth:`fit`, used by :meth:`predict`.

    Attributes
    ----------
    benchmarks
        One link per benchmark that has one.
    score_max
        The highest possible full score (1 or 100): the unit of every estimate.
    reference
        The training LLMs' answers on the kept items
        (:func:`~benchmirt_bayes.analyses.score_neighbours.encode_answers`) when a link uses
        neighbour corrections.
    n_draws, seed
        The item draws that scored the training LLMs; :meth:`predict` scores new LLMs with
        the same ones by default.

    """

    benchmarks: dict[str, BenchmarkLink]
    score_max: float
    reference: dict = field(default_factory=dict)
    n_draws: int = DEFAULT_DRAWS
    seed: int = 0

    @property
    def items(self) -> list[str]:
        """The kept items new LLMs answer (every benchmark's link reads the same ones)."""
        return list(dict.fromkeys(item for link in self.benchmarks.values() for item in link.items))

    @classmethod
    def fit(
        cls,
        posterior: xr.DataTree,
        full_scores: pd.DataFrame | Mapping[str, pd.Series],
        *,
        items: Sequence[str] | None = None,
        per_benchmark: int | None = None,
        method: str = "auto",
        responses=None,
        ci_prob: float = CI_PROB,
        folds: int = 5,
        n_draws: int = DEFAULT_DRAWS,
        seed: int = 0,
        score_max: float | None = None,
    ) -> ScoreLink:
        """Learn the links from the training LLMs (see :func:`~benchmirt_bayes.fit_score_link`)."""
        check_ci_prob(ci_prob)
        if items is not None and per_benchmark is not None:
            raise ValueError("give the kept items or per_benchmark (the link chooses them), not both")
        fitted = responses_from_tree(posterior)
        scores = score_frame(full_scores, fitted.benchmark_names)
        responses = responses if responses is not None else fitted
        if per_benchmark is not None:
            items = select_for_scores(
                posterior, scores, per_benchmark=per_benchmark, responses=responses, method=method, seed=seed
            )
        llms = responses.llms.astype(str)
        if not scores.index.isin(llms).any():
            raise ValueError(
                f"none of the {len(scores)} LLMs with full scores is among the {len(llms)} training "
                f"LLMs (scores for e.g. {list(scores.index[:3])}; LLMs e.g. {list(llms[:3])})"
            )
        _say_which_scores_are_unused(scores, llms)
        if score_max is None:
            score_max = 100.0 if float(np.nanmax(np.abs(scores.to_numpy()))) > 1 else 1.0
        item_draws = PosteriorDraws.from_posterior(posterior, n_draws, seed=seed, responses=fitted)
        kept = list(item_draws.items) if items is None else [str(i) for i in items]
        outcomes = outcome_matrix(item_draws, responses, kept)
        bench_of_item = item_draws.layout.benchmarks.astype(str)
        rng = np.random.default_rng(seed)
        scale = item_draws.layout.score_scale
        # every kept item's answers, also those of other benchmarks: in a joint fit they tell
        # about this one's unseen items too (regression) and about who is whose relative
        kept_columns = item_draws.columns(np.asarray(kept, dtype=str))
        reference = outcomes[:, kept_columns] / scale[kept_columns]
        links, unlinked, without_items = {}, {}, []
        neighbours_of = {}  # benchmarks with the same known LLMs (a joint fit) share one search
        for name in scores.columns:
            target, rows = known_scores(scores, name, llms)
            if len(rows) < MIN_LINK_LLMS:
                unlinked[name] = (
                    f"{len(rows)} training LLMs have a known full score; "
                    f"a link needs at least {MIN_LINK_LLMS}"
                )
                continue
            if not np.any(bench_of_item[kept_columns] == str(name)):
                without_items.append(name)
                continue
            abilities = ability_posterior(item_draws, outcomes[rows], seed=seed)
            columns = np.flatnonzero(bench_of_item == name)
            features = LinkFeatures.from_posterior(abilities, columns, outcomes[rows], scale, kept_columns)
            chosen_again = None
            if per_benchmark is not None and selection_rule(method, len(rows)) == "stepwise":
                chosen_again = _StepwiseFolds(
                    item_draws, responses, rows, target[rows], columns, kept_columns, seed
                ).features
            key = rows.tobytes()
            if key not in neighbours_of:
                found = nearest(reference[rows], reference[rows], NEIGHBOURS, exclude_self=True)
                neighbours_of[key] = (found, between_neighbours(found, reference[rows]))
            found, among = neighbours_of[key]
            links[str(name)] = BenchmarkLink.fit(
                features,
                target[rows],
                items=kept,
                ci_prob=ci_prob,
                folds=folds,
                rng=rng,
                neighbours=found,
                among=among,
                rows=rows,
                fold_features=chosen_again,
            )
        _say_what_has_no_link(links, unlinked, without_items, score_max)
        uses_neighbours = any(link.neighbours is not None for link in links.values())
        return cls(
            links, float(score_max), encode_answers(reference) if uses_neighbours else {}, n_draws, seed
        )

    def predict(
        self,
        posterior: xr.DataTree,
        responses_on_subset: pd.DataFrame | Mapping[str, Mapping[str, float]],
        *,
        estimator: str | Sequence[str] = "package",
        n_draws: int | None = None,
        seed: int | None = None,
        ci_prob: float = CI_PROB,
    ) -> pd.DataFrame:
        """Full-benchmark score estimates (see :func:`~benchmirt_bayes.estimate_scores`).

        ``n_draws`` and ``seed`` default to the link's own; ``ci_prob`` applies to the
        benchmarks without a link only (the linked ones have the link's calibrated
        coverage).
        """
        return score_table(
            posterior,
            responses_on_subset,
            self,
            estimator,
            self.n_draws if n_draws is None else n_draws,
            self.seed if seed is None else seed,
            ci_prob,
        )

    def to_json(self) -> str:
        """Plain JSON (stored in a fit's attrs by :func:`~benchmirt_bayes.with_score_link`)."""
        return json.dumps({"format": STORAGE_FORMAT, **asdict(self)})

    @classmethod
    def from_json(cls, text: str) -> ScoreLink:
        """Inverse of :meth:`to_json`; a link stored in another format must be refitted."""
        raw = json.loads(text)
        if not isinstance(raw, dict) or raw.pop("format", None) != STORAGE_FORMAT:
            raise ValueError(
                "this score link was stored by an earlier version of benchmirt_bayes; refit it with "
                f"fit_score_link (links are stored in format {STORAGE_FORMAT})"
            )
        raw["benchmarks"] = {name: BenchmarkLink.from_dict(link) for name, link in raw["benchmarks"].items()}
        return cls(**raw)


def _say_which_scores_are_unused(scores: pd.DataFrame, llms: np.ndarray) -> None:
    """Known scores of LLMs that are not training LLMs teach the link nothing: say which."""
    unused = scores.index[~scores.index.isin(llms) & scores.notna().any(axis=1).to_numpy()]
    if len(unused):
        warnings.warn(
            f"{len(unused)} of the {len(scores)} LLMs with full scores are not among the fit's "
            f"{len(llms)} LLMs and are not used by the link (e.g. {limit_listing(unused, 3)}); "
            "if they should be, check that their ids are written as in the responses",
            UserWarning,
            stacklevel=3,
        )


def _say_what_has_no_link(links: dict, unlinked: dict, without_items: list, score_max: float) -> None:
    """No link at all is an error; benchmarks without one (too few known scores) a warning."""
    reasons = "; ".join(f"{name}: {why}" for name, why in unlinked.items())
    if not links:
        reasons += "; " * bool(reasons) + f"no kept item in {without_items}" * bool(without_items)
        raise ValueError(
            f"no benchmark gets a link to full scores ({reasons}); without a link, "
            "estimate_scores gives the IRT expectation on the fitted items"
        )
    if unlinked:
        warnings.warn(
            f"{len(unlinked)} benchmark(s) get no link ({reasons}); estimate_scores gives their IRT "
            f"expectation on the fitted items, scaled to {score_max:g}",
            UserWarning,
            stacklevel=3,
        )


@dataclass(frozen=True)
class _StepwiseFolds:
    """One benchmark's stepwise items chosen again in each fold of the link's cross-fitting.

    The kept items of this benchmark were chosen by forward stepwise on every training LLM;
    each fold's regressions must not have seen its LLMs' scores, so for each fold the same
    number of items is chosen on the other folds' LLMs alone (the other benchmarks' kept
    items stay), and every training LLM is scored on that fold's items.
    """

    item_draws: PosteriorDraws
    responses: object
    rows: np.ndarray
    target: np.ndarray
    columns: np.ndarray
    kept_columns: np.ndarray
    seed: int

    def features(self, fold_of: np.ndarray) -> list[LinkFeatures]:
        """Each fold's features of every training LLM (``fold_of``: each LLM's fold)."""
        draws = self.item_draws
        own = np.isin(self.kept_columns, self.columns)
        others, size = self.kept_columns[~own], int(own.sum())
        # every answer a fold may keep, read once: the benchmark's items and the others' kept ones
        items = np.asarray(draws.items).astype(str)[np.concatenate([others, self.columns])]
        readable = outcome_matrix(draws, self.responses, items)[self.rows]
        answers = readable[:, self.columns]
        scale = draws.layout.score_scale
        per_fold = []
        for fold in range(int(fold_of.max()) + 1):
            train = fold_of != fold
            picked = self.columns[stepwise_choice(answers[train], self.target[train], size)]
            kept = np.concatenate([others, picked])
            outcomes = np.full_like(readable, np.nan)
            outcomes[:, kept] = readable[:, kept]
            abilities = ability_posterior(draws, outcomes, seed=self.seed)
            per_fold.append(LinkFeatures.from_posterior(abilities, self.columns, outcomes, scale, kept))
        return per_fold


def outcome_matrix(item_draws: PosteriorDraws, responses, kept: Sequence[str]) -> np.ndarray:
    """``(llm, item)`` responses in the item draws' order, NaN outside the kept items."""
    columns = item_draws.columns(np.asarray(kept, dtype=str))
    data = responses.data.sel(item=list(np.asarray(item_draws.items)[columns])) if len(kept) else None
    outcomes = np.full((responses.n_llms, len(item_draws.items)), np.nan)
    if data is not None:
        outcomes[:, columns] = data.transpose("llm", "item").values
    return outcomes


def score_table(
    posterior: xr.DataTree,
    responses_on_subset: pd.DataFrame | Mapping[str, Mapping[str, float]],
    link: ScoreLink | None,
    estimator: str | Sequence[str],
    n_draws: int,
    seed: int,
    ci_prob: float,
) -> pd.DataFrame:
    """Per (LLM, benchmark): the link's estimates, or the IRT expectation where there is no link."""
    check_ci_prob(ci_prob)
    estimators = [estimator] if isinstance(estimator, str) else list(estimator)
    unknown = [e for e in estimators if e not in ESTIMATORS]
    if unknown:
        raise ValueError(f"estimator must be one of {ESTIMATORS}, got {unknown}")
    table = responses_on_subset
    if isinstance(table, Mapping):
        table = pd.DataFrame(table).T
    item_draws = PosteriorDraws.from_posterior(posterior, n_draws, seed=seed)
    deviation: dict[str, float] | None = None  # estimated once, where a benchmark has no link
    columns = item_draws.columns(np.asarray([str(c) for c in table.columns]))
    outcomes = np.full((len(table), len(item_draws.items)), np.nan)
    outcomes[:, columns] = table.to_numpy(dtype=float)
    item_draws.check_responses(columns, outcomes[:, columns], llms=list(table.index))
    abilities = ability_posterior(item_draws, outcomes, seed=seed)
    bench_of_item = item_draws.layout.benchmarks.astype(str)
    scale = item_draws.layout.score_scale
    reference = decode_answers(link.reference) if link is not None and link.reference else None
    cache = {}  # benchmarks with the same kept items and known LLMs (a joint fit) share one search
    unit = 1.0 if link is None else link.score_max
    rows = []
    for name in pd.unique(bench_of_item):
        cols = np.flatnonzero(bench_of_item == name)
        bench_link = link.benchmarks.get(name) if link is not None else None
        kept = (
            item_draws.columns(np.asarray(bench_link.items, dtype=str))
            if bench_link is not None
            else cols[:0]
        )
        features = LinkFeatures.from_posterior(abilities, cols, outcomes, scale, kept)
        n_answered = (~np.isnan(outcomes[:, cols])).sum(axis=1)
        if bench_link is None:
            deviation = fitted_deviation_variance(posterior, seed=seed) if deviation is None else deviation
            irt = predicted_mean_score(
                abilities, item_draws, cols, outcomes, ci_prob, deviation_variance=deviation.get(name, 0.0)
            )
            results = {"irt_fitted_items": tuple(unit * irt[key] for key in ("mean", "lower", "upper"))}
        else:
            results = {}
            for kind in estimators:
                half = bench_link.half_width(features, kind)
                estimate = bench_link.predict(features, kind)
                if kind == "package" and bench_link.neighbours is not None:
                    if reference is None:
                        raise ValueError(
                            "the link uses neighbour corrections but carries no reference answers"
                        )
                    answers = outcomes[:, kept] / scale[kept]
                    estimate = estimate + bench_link.neighbours.predict(
                        answers, estimate, reference, cache, bench_link.items
                    )
                results[kind] = (estimate, estimate - half, estimate + half)
        for kind, (estimate, lower, upper) in results.items():
            for u, llm in enumerate(table.index.astype(str)):
                rows.append(
                    {
                        "llm": llm,
                        "benchmark": str(name),
                        "mean": float(estimate[u]),
                        "lower": float(lower[u]),
                        "upper": float(upper[u]),
                        "irt_fitted_items": float(features.irt[u]),
                        "kept_mean": float(features.naive[u]),
                        "n_answered": int(n_answered[u]),
                        "estimator": kind,
                        "score_max": unit,
                    }
                )
    return pd.DataFrame(rows)
