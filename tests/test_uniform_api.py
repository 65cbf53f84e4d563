"""Results that all look alike: one seed keyword, interval columns named one way, every
returned type exported."""

import inspect
import re
import typing

import numpy as np
import pandas as pd
import pytest

import benchmirt_bayes
from benchmirt_bayes import (
    adaptive_test,
    benchmark_correlations,
    compare_llms,
    differential_item_functioning,
    estimate_scores,
    evaluate_subset,
    fidelity_summary,
    item_fit,
    miskeyed_items,
    name_dimensions,
    person_fit,
    rank_items,
    score_llm,
)
from benchmirt_bayes.analyses.abilities import ability_table
from benchmirt_bayes.analyses.metrics import calibration_table

INTERVAL_ENDS = ("lower", "upper")
OTHER_INTERVAL_NAMES = re.compile(r"(^|_)(low|high|lo|hi|q\d+|hdi|ci|eti)(_|$)|^(mean|sd)_")


def _public_callables():
    for name in benchmirt_bayes.__all__:
        obj = getattr(benchmirt_bayes, name)
        if inspect.isclass(obj):
            yield obj
            yield from (m for n, m in inspect.getmembers(obj, inspect.isfunction) if not n.startswith("_"))
        elif callable(obj):
            yield obj


def test_one_seed_keyword_across_the_public_api():
    """Every public function or method that takes a seed calls it ``seed``."""
    problems, seeded = [], 0
    for function in _public_callables():
        try:
            parameters = inspect.signature(function).parameters
        except (TypeError, ValueError):
            continue
        for other in ("random_seed", "random_state", "rng_seed"):  # (an rng is a Generator, not a seed)
            if other in parameters:
                problems.append(f"{function.__qualname__}({other}=...): call it seed")
        seeded += "seed" in parameters
    assert not problems, problems
    assert seeded >= 15  # the check sees the functions it is about


def _contained_classes(hint) -> set[type]:
    found = {hint} if inspect.isclass(hint) else set()
    for argument in typing.get_args(hint):
        found |= _contained_classes(argument)
    return found


def test_every_returned_type_is_exported():
    """A user can name (and import from the top level) every type a public function returns."""
    exported = [getattr(benchmirt_bayes, name) for name in benchmirt_bayes.__all__]
    exported = {obj for obj in exported if inspect.isclass(obj)}
    missing = []
    for function in _public_callables():
        if inspect.isclass(function):
            continue
        returned = typing.get_type_hints(function).get("return")
        for cls in _contained_classes(returned):
            if cls.__module__.startswith("benchmirt_bayes") and cls not in exported:
                missing.append(f"{function.__qualname__} -> {cls.__name__}")
    assert not missing, missing


def _check_columns(name: str, table: pd.DataFrame) -> list[str]:
    """The naming rules of summary columns, as problems found in one table."""
    columns = [str(c) for c in table.columns] + [str(n) for n in table.index.names if n is not None]
    problems = [
        f"{name}.{c}: name intervals lower/upper, summaries X_mean/X_sd"
        for c in columns
        if OTHER_INTERVAL_NAMES.search(c)
    ]
    problems += [f"{name}.{c}: a probability is p_…" for c in columns if c.endswith("_prob")]
    for column in columns:
        for end in ("lower", "upper", "sd"):
            if column == end or column.endswith(f"_{end}"):
                stem = column[: -len(end)]
                partners = [f"{stem}mean"] + [f"{stem}{e}" for e in INTERVAL_ENDS if end != "sd"]
                absent = [p for p in partners if p not in columns]
                if absent:
                    problems.append(f"{name}.{column} without {absent}")
    return problems


@pytest.fixture(scope="module")
def public_tables(advi_fit, small_sim):
    """Every table the public analyses return, made small on the shared ADVI fit."""
    fit, responses = advi_fit, small_sim.responses
    llms = list(responses.llms)
    answers = responses.data.sel(llm=llms[0]).to_series().dropna().iloc[:40]
    scored = score_llm(fit, answers, n_draws=20, samples_per_draw=2)
    comparison = compare_llms(fit, llms[0], llms[1], n_draws=30)
    subset = evaluate_subset(fit, fractions=(0.1,), repeats=2, n_draws=10, executor="serial")
    groups = dict(zip(llms, ["a", "b"] * len(llms), strict=False))
    audit = benchmark_correlations(fit, n_draws=30)
    return {
        "ability_table": ability_table(fit),
        "item_fit": item_fit(fit, n_draws=10),
        "benchmark_correlations": audit.table,
        "name_dimensions": name_dimensions(fit).proposals,
        "rank_items": rank_items(fit, n_draws=20),
        "person_fit": person_fit(fit, n_draws=10),
        "miskeyed_items": miskeyed_items(fit, n_draws=10),
        "differential_item_functioning": differential_item_functioning(fit, groups, n_draws=10),
        "evaluate_subset": subset,
        "fidelity_summary": fidelity_summary(subset),
        "LLMScore.ability_summary": scored.ability_summary(),
        "LLMScore.benchmark_scores": scored.benchmark_scores,
        "adaptive_test": adaptive_test(fit, lambda item: 1.0, budget=3, n_draws=10),
        "LLMComparison.ability": comparison.ability,
        "LLMComparison.scores": comparison.scores,
        "LLMComparison.items": comparison.items,
        "estimate_scores": estimate_scores(fit, answers.to_frame("new").T, n_draws=10),
        "calibration_table": calibration_table(np.array([0.0, 1.0]), np.array([0.2, 0.7])),
    }


def test_tables_name_means_sds_intervals_and_probabilities_alike(public_tables):
    problems = [p for name, table in public_tables.items() for p in _check_columns(name, table)]
    assert not problems, problems


def test_the_column_rules_catch_the_old_names():
    old = pd.DataFrame(
        columns=[
            "r_mean",
            "r_low",
            "r_high",
            "dim_1",
            "dim_1_lower",
            "dim_1_upper",
            "mean_dim_1",
            "main_dimension_prob",
            "delta",
            "delta_sd",
        ]
    )
    problems = "\n".join(_check_columns("old", old))
    for column in ("r_low", "r_high", "dim_1_lower", "mean_dim_1", "main_dimension_prob", "delta_sd"):
        assert f"old.{column}" in problems


def test_abilities_have_one_layout_for_fitted_and_scored_llms(public_tables):
    fitted, scored = public_tables["ability_table"], public_tables["LLMScore.ability_summary"]
    assert list(fitted.index.names) == list(scored.index.names) == ["llm", "dimension"]
    assert list(scored.columns) == list(fitted.columns[: len(scored.columns)])
