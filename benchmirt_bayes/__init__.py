"""benchmirt_bayes: Bayesian multidimensional IRT audits of LLM benchmarks, item by item."""

from benchmirt_bayes.batch import BatchError, DaskExecutor, run_batch
from benchmirt_bayes.crossval import CrossValidation, DimensionChoice, choose_n_dims, cross_validate
from benchmirt_bayes.diagnostics import ConvergenceReport, check_convergence
from benchmirt_bayes.errors import MissingExtraError, PosteriorFileError, ResponseDataError
from benchmirt_bayes.inference import fit_posterior
from benchmirt_bayes.io import load_posterior, save_posterior
from benchmirt_bayes.items import rank_items
from benchmirt_bayes.loaders import load_responses
from benchmirt_bayes.minibatch import MinibatchFit, fit_minibatch_advi
from benchmirt_bayes.model import build_model
from benchmirt_bayes.real_data import (
    load_mirt_reference,
    load_open_llm_leaderboard,
    load_opencompass,
    load_xstest,
)
from benchmirt_bayes.report import write_report
from benchmirt_bayes.responses import ResponseMatrix
from benchmirt_bayes.scoring import LLMScore, adaptive_test, score_llm
from benchmirt_bayes.selection import (
    evaluate_subset,
    fidelity_summary,
    held_out_benchmark_error,
    select_items,
)
from benchmirt_bayes.simulate import SimulatedBenchmark, simulate_benchmirt
from benchmirt_bayes.spec import ModelSpec, available_specs, load_spec
from benchmirt_bayes.stability import StabilityReport, check_stability
from benchmirt_bayes.streaming import MatrixSource, StreamingSimulation

__version__ = "0.1.0"

__all__ = [
    "BatchError",
    "CrossValidation",
    "DaskExecutor",
    "DimensionChoice",
    "LLMScore",
    "MatrixSource",
    "MinibatchFit",
    "StreamingSimulation",
    "adaptive_test",
    "choose_n_dims",
    "cross_validate",
    "evaluate_subset",
    "fidelity_summary",
    "fit_minibatch_advi",
    "held_out_benchmark_error",
    "rank_items",
    "run_batch",
    "score_llm",
    "select_items",
    "ConvergenceReport",
    "StabilityReport",
    "check_convergence",
    "check_stability",
    "write_report",
    "MissingExtraError",
    "ModelSpec",
    "PosteriorFileError",
    "ResponseDataError",
    "ResponseMatrix",
    "SimulatedBenchmark",
    "available_specs",
    "build_model",
    "fit_posterior",
    "load_mirt_reference",
    "load_open_llm_leaderboard",
    "load_opencompass",
    "load_posterior",
    "load_responses",
    "load_spec",
    "load_xstest",
    "save_posterior",
    "simulate_benchmirt",
]
