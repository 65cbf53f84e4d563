"""benchmirt_bayes: Bayesian multidimensional IRT audits of LLM benchmarks, item by item.

The public API, by layer (see ARCHITECTURE.md):

- data: :class:`ResponseMatrix`, :func:`load_responses` and the loaders of the real sets;
- simulation: :func:`simulate_benchmirt`, streamed cell sources;
- model: specs (:func:`load_spec`), response models (:func:`response_model`), :func:`build_model`;
- inference: :func:`fit_posterior` (NUTS, ADVI, MAP; settings grouped in :class:`NutsSettings`
  and :class:`AdviSettings`) and :func:`fit_minibatch_advi`, both returning the same
  identified DataTree;
- fits on disk: :func:`save_posterior`, :func:`load_posterior`;
- diagnostics: :func:`check_convergence`, :func:`check_stability`, :func:`sbc_uniformity`;
- analyses: benchmark audits, item rankings and subsets, held-out prediction, scoring new LLMs;
- workflows: :func:`cross_validate`, :func:`choose_n_dims`, :func:`choose_asymptotes`,
  :func:`simulation_based_calibration`;
- reports: :func:`write_report`; many fits: :func:`run_batch`.
"""

from benchmirt_bayes.analyses.abilities import ability_table
from benchmirt_bayes.analyses.asymptote_choice import compare_asymptote_models
from benchmirt_bayes.analyses.asymptote_flags import asymptote_flags
from benchmirt_bayes.analyses.audit import (
    BenchmarkAudit,
    DimensionNames,
    benchmark_correlations,
    name_dimensions,
)
from benchmirt_bayes.analyses.comparison import LLMComparison, compare_llms
from benchmirt_bayes.analyses.dif import differential_item_functioning
from benchmirt_bayes.analyses.heldout import CrossValidation, psis_loo
from benchmirt_bayes.analyses.item_fit import item_fit
from benchmirt_bayes.analyses.items import rank_items
from benchmirt_bayes.analyses.miskeyed import miskeyed_items
from benchmirt_bayes.analyses.person_fit import person_fit
from benchmirt_bayes.analyses.score_estimation import (
    ScoreLink,
    estimate_scores,
    fit_score_link,
    with_score_link,
)
from benchmirt_bayes.analyses.score_selection import select_for_scores
from benchmirt_bayes.analyses.scoring import LLMScore, adaptive_test, score_llm
from benchmirt_bayes.analyses.selection import (
    evaluate_subset,
    fidelity_summary,
    held_out_benchmark_error,
    select_items,
)
from benchmirt_bayes.analyses.study_findings import study_findings
from benchmirt_bayes.batch import BatchError, DaskExecutor, run_batch
from benchmirt_bayes.data.loaders import load_responses
from benchmirt_bayes.data.real_data import (
    load_mirt_reference,
    load_open_llm_leaderboard,
    load_opencompass,
    load_xstest,
)
from benchmirt_bayes.data.responses import ItemFilterReport, ResponseMatrix
from benchmirt_bayes.diagnostics.calibration import sbc_uniformity
from benchmirt_bayes.diagnostics.convergence import ConvergenceReport, check_convergence
from benchmirt_bayes.diagnostics.stability import StabilityReport, check_stability
from benchmirt_bayes.errors import MissingExtraError, PosteriorFileError, ResponseDataError
from benchmirt_bayes.inference.fit import fit_posterior
from benchmirt_bayes.inference.minibatch import fit_minibatch_advi
from benchmirt_bayes.inference.settings import AdviSettings, NutsSettings
from benchmirt_bayes.io import load_posterior, save_posterior
from benchmirt_bayes.model.pymc_model import build_model
from benchmirt_bayes.model.spec import ModelSpec, available_specs, load_spec
from benchmirt_bayes.posterior import with_log_likelihood
from benchmirt_bayes.reports.report import write_report
from benchmirt_bayes.response_types import RESPONSE_MODELS, response_model
from benchmirt_bayes.response_types.base import ResponseModel
from benchmirt_bayes.simulation.asymptote_plants import AsymptotePlan
from benchmirt_bayes.simulation.audit_plants import AuditPlan
from benchmirt_bayes.simulation.simulate import SimulatedBenchmark, simulate_benchmirt
from benchmirt_bayes.simulation.streaming import MatrixSource, StreamingSimulation
from benchmirt_bayes.workflows.asymptote_fits import AsymptoteChoice, choose_asymptotes
from benchmirt_bayes.workflows.crossval import DimensionChoice, choose_n_dims, cross_validate
from benchmirt_bayes.workflows.sbc import SbcSetting, simulation_based_calibration

__version__ = "0.2.0"

__all__ = [
    # data
    "ResponseMatrix",
    "ItemFilterReport",
    "load_responses",
    "load_mirt_reference",
    "load_open_llm_leaderboard",
    "load_opencompass",
    "load_xstest",
    "MissingExtraError",
    "PosteriorFileError",
    "ResponseDataError",
    # simulation
    "SimulatedBenchmark",
    "simulate_benchmirt",
    "AsymptotePlan",
    "AuditPlan",
    "MatrixSource",
    "StreamingSimulation",
    # model
    "ModelSpec",
    "available_specs",
    "load_spec",
    "ResponseModel",
    "RESPONSE_MODELS",
    "response_model",
    "build_model",
    # inference, fits on disk
    "fit_posterior",
    "fit_minibatch_advi",
    "NutsSettings",
    "AdviSettings",
    "save_posterior",
    "load_posterior",
    "with_log_likelihood",
    # diagnostics
    "ConvergenceReport",
    "check_convergence",
    "StabilityReport",
    "check_stability",
    "sbc_uniformity",
    # analyses
    "ability_table",
    "item_fit",
    "BenchmarkAudit",
    "benchmark_correlations",
    "DimensionNames",
    "name_dimensions",
    "study_findings",
    "rank_items",
    "select_items",
    "evaluate_subset",
    "fidelity_summary",
    "held_out_benchmark_error",
    "CrossValidation",
    "psis_loo",
    "LLMScore",
    "score_llm",
    "adaptive_test",
    "ScoreLink",
    "fit_score_link",
    "select_for_scores",
    "estimate_scores",
    "with_score_link",
    # audits of LLMs and items
    "LLMComparison",
    "compare_llms",
    "person_fit",
    "differential_item_functioning",
    "miskeyed_items",
    "asymptote_flags",
    "compare_asymptote_models",
    # workflows
    "DimensionChoice",
    "choose_n_dims",
    "cross_validate",
    "AsymptoteChoice",
    "choose_asymptotes",
    "SbcSetting",
    "simulation_based_calibration",
    # reports and batches
    "write_report",
    "BatchError",
    "DaskExecutor",
    "run_batch",
]
