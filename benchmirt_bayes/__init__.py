"""benchmirt_bayes: Bayesian multidimensional IRT audits of LLM benchmarks, item by item."""

from benchmirt_bayes.diagnostics import ConvergenceReport, check_convergence
from benchmirt_bayes.errors import MissingExtraError, PosteriorFileError, ResponseDataError
from benchmirt_bayes.inference import fit_posterior
from benchmirt_bayes.io import load_posterior, save_posterior
from benchmirt_bayes.loaders import load_responses
from benchmirt_bayes.model import build_model
from benchmirt_bayes.real_data import (
    load_mirt_reference,
    load_open_llm_leaderboard,
    load_opencompass,
    load_xstest,
)
from benchmirt_bayes.report import write_report
from benchmirt_bayes.responses import ResponseMatrix
from benchmirt_bayes.simulate import SimulatedBenchmark, simulate_benchmirt
from benchmirt_bayes.spec import ModelSpec, available_specs, load_spec
from benchmirt_bayes.stability import StabilityReport, check_stability

__version__ = "0.1.0"

__all__ = [
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
