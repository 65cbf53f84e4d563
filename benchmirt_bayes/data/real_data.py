"""Loaders for the real data sets kept in ``../shared/data`` (one function per folder).

Each takes the folder path; none copies data anywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from benchmirt_bayes.data.loaders import from_wide_frame
from benchmirt_bayes.data.responses import ResponseMatrix
from benchmirt_bayes.data.tables import numeric_values, read_table
from benchmirt_bayes.errors import ResponseDataError
from benchmirt_bayes.response_types.graded import GRADED

OPEN_LLM_BENCHMARKS = ("arc", "gsm8k", "mmlu", "truthfulqa", "winogrande")


def _require(path: Path) -> Path:
    if not path.exists():
        raise ResponseDataError([f"file not found: {path}"])
    return path


def _numbers(table: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """``table`` with ``columns`` parsed as numbers (reference tables are read as text)."""
    values, bad = numeric_values(table[columns])
    if bad:
        raise ResponseDataError([f"non-numeric values in columns {columns}"])
    return table.assign(**{name: values[:, k] for k, name in enumerate(columns)})


def load_open_llm_leaderboard(folder: str | Path) -> ResponseMatrix:
    """Open LLM Leaderboard v1 (metabench subset): 2,461 LLMs × 693 items, 5 benchmarks.

    Parameters
    ----------
    folder
        The ``open_llm_leaderboard_v1`` folder.

    """
    folder = Path(folder)
    scores = read_table(_require(folder / "responses_joint_5bench.csv.gz"))
    scores = scores.set_index(scores.columns[0])
    meta = read_table(_require(folder / "item_metadata_joint.csv"))
    return from_wide_frame(scores, meta, source=str(folder))


LLM_FAMILY_PATTERNS = (
    ("mixtral", "mixtral"),
    ("mistral", "mistral"),
    ("zephyr", "mistral"),
    ("tinyllama", "tinyllama"),
    ("llama", "llama"),
    ("qwen", "qwen"),
    ("gemma", "gemma"),
    ("phi-", "phi"),
    ("phi_", "phi"),
    ("yi-", "yi"),
    ("solar", "solar"),
    ("falcon", "falcon"),
    ("pythia", "pythia"),
    ("gpt2", "gpt2"),
    ("gpt-j", "gpt-j"),
    ("gpt-neo", "gpt-neo"),
    ("deepseek", "deepseek"),
    ("internlm", "internlm"),
    ("stablelm", "stablelm"),
    ("bloom", "bloom"),
)
"""``(substring, family)`` in the order they are tried on a lower-cased model name."""


def llm_families(names: Sequence[str]) -> pd.Series:
    """A family per model name (``"org/model"``), from the base-model names it contains.

    The first of :data:`LLM_FAMILY_PATTERNS` found in the lower-cased name decides
    (``mixtral`` before ``mistral``, ``tinyllama`` before ``llama``); a name with none is
    ``"other"``. A heuristic: fine-tunes and merges named after their base model are
    found, creatively named ones are not, so ``"other"`` mixes families.
    """
    out = {}
    for name in names:
        lower = str(name).lower()
        out[str(name)] = next((family for key, family in LLM_FAMILY_PATTERNS if key in lower), "other")
    return pd.Series(out, name="family")


def load_open_llm_leaderboard_reference(folder: str | Path, benchmark: str) -> pd.DataFrame:
    """The metabench authors' per-LLM ability (``F1``, ``SE_F1``) and full-benchmark score.

    Returns
    -------
    DataFrame
        Index ``llm``; columns ``authors_theta``, ``authors_theta_se``,
        ``full_score`` (percent, all items of the benchmark), ``split`` (``train``: the LLMs
        whose responses are in the response files; ``test``: a validation split of
        metabench's without responses here).

    """
    if benchmark not in OPEN_LLM_BENCHMARKS:
        raise ValueError(f"benchmark must be one of {OPEN_LLM_BENCHMARKS}, got {benchmark!r}")
    folder = Path(folder)
    theta = read_table(_require(folder / f"theta_train_{benchmark}_authors.csv"))
    scores = read_table(_require(folder / f"scores_{benchmark}_all_models.csv"))
    theta = _numbers(theta, ["F1", "SE_F1"])
    scores = _numbers(scores, ["score"])
    theta = theta.rename(columns={"model": "llm", "F1": "authors_theta", "SE_F1": "authors_theta_se"})
    scores = scores.rename(columns={"model": "llm", "score": "full_score", "set": "split"})
    merged = scores[["llm", "full_score", "split"]].merge(theta, on="llm", how="left")
    return merged.set_index("llm")


def load_opencompass(folder: str | Path) -> ResponseMatrix:
    """OpenCompass results of 12 LLMs × 41,871 items over 11 benchmarks (PSN-IRT release).

    LLM names are not published; rows are named ``llm_00`` ... ``llm_11``.
    Items are named ``<benchmark>:<index within benchmark>``.
    """
    folder = Path(folder)
    path = _require(folder / "responses.csv")
    try:
        values = pd.read_csv(path, header=None).to_numpy(dtype=float)
    except Exception as exc:
        raise ResponseDataError([f"could not read {path.name}: {exc}"]) from exc
    mapping = _numbers(read_table(_require(folder / "item_benchmark_map.csv")), ["col"]).sort_values("col")
    if len(mapping) != values.shape[1]:
        raise ResponseDataError(
            [f"item map has {len(mapping)} rows but responses have {values.shape[1]} columns"],
            source=str(folder),
        )
    items = (mapping["benchmark"] + ":" + mapping["within_benchmark_index"].astype(str)).to_numpy()
    scores = pd.DataFrame(values, index=[f"llm_{i:02d}" for i in range(values.shape[0])], columns=items)
    meta = pd.DataFrame({"item": items, "benchmark": mapping["benchmark"].to_numpy()})
    return from_wide_frame(scores, meta, source=str(folder))


def load_xstest(folder: str | Path, *, scoring: Literal["correct", "refusal"] = "correct") -> ResponseMatrix:
    """XSTest v2: 5 LLMs × 450 prompts with human labels.

    Parameters
    ----------
    folder
        The ``xstest`` folder.
    scoring
        ``"correct"``: 1 = complied with a safe prompt or refused an unsafe one
        (the scoring used in safety suites); ``"refusal"``: 1 = refused.

    Notes
    -----
    Subgroups are ``safe`` (250 prompts) and ``contrast_unsafe`` (200); the
    prompt ``type`` (homonyms, ...) is kept as the ``category`` coordinate.

    """
    folder = Path(folder)
    if scoring not in ("correct", "refusal"):
        raise ValueError(f"scoring must be 'correct' or 'refusal', got {scoring!r}")
    wide = read_table(_require(folder / f"xstest_wide_{scoring}.csv")).set_index("model")
    items = read_table(_require(folder / "xstest_items.csv"))
    meta = pd.DataFrame(
        {
            "item": items["id"].astype(str),
            "benchmark": "XSTest",
            "subgroup": np.where(
                _numbers(items, ["unsafe_prompt"])["unsafe_prompt"] == 1, "contrast_unsafe", "safe"
            ),
            "category": items["type"].astype(str),
        }
    )
    return from_wide_frame(wide, meta, source=str(folder))


MIRT_DATASETS = {
    "LSAT7": "LSAT7_expanded.csv",
    "LSAT6": "LSAT6_expanded.csv",
    "SAT12": "SAT12_scored.csv",
    "deAyala": "deAyala_expanded.csv",
    "Science": "Science.csv",
}
GRADED_MIRT_DATASETS = {"Science": 4}
"""Sets with ordered categories (coded 1 … K in the file, 0 … K−1 here) and their K."""


def load_mirt_reference(
    folder: str | Path, dataset: Literal["LSAT7", "LSAT6", "SAT12", "deAyala"] = "LSAT7"
) -> ResponseMatrix:
    """A classic psychometric data set from R ``mirt`` (respondents stand in for LLMs).

    Parameters
    ----------
    folder
        The ``mirt_reference`` folder (holding ``data/`` and ``fits/``).
    dataset
        Which set; all items form one benchmark named after the set.

    """
    if dataset not in MIRT_DATASETS:
        raise ValueError(f"dataset must be one of {sorted(MIRT_DATASETS)}, got {dataset!r}")
    folder = Path(folder)
    table = read_table(_require(folder / "data" / MIRT_DATASETS[dataset]))
    table.index = [f"respondent_{i:04d}" for i in range(len(table))]
    if dataset in GRADED_MIRT_DATASETS:
        categories = GRADED_MIRT_DATASETS[dataset]
        metadata = pd.DataFrame(
            {
                "item": table.columns.astype(str),
                "benchmark": dataset,
                "response_type": GRADED.name,
                "n_categories": categories,
            }
        )
        values, _ = numeric_values(table)
        shifted = pd.DataFrame(values - 1, index=table.index, columns=table.columns)
        return from_wide_frame(shifted, metadata, benchmark=dataset, source=str(folder))
    return from_wide_frame(table, None, benchmark=dataset, source=str(folder))


def load_mirt_coefficients(folder: str | Path, fit: str) -> pd.DataFrame:
    """R ``mirt`` slope–intercept coefficients, e.g. ``fit="SAT12_2F_default"``.

    Returns
    -------
    DataFrame
        Index item name; columns ``a1[, a2, ...], d`` (and ``g, u``).

    """
    path = _require(Path(folder) / "fits" / f"{fit}_coef_slopeint.csv")
    table = pd.read_csv(path, index_col=0)
    return table
