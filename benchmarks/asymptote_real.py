"""2PL, 3PL or 4PL on the real Open LLM Leaderboard v1 benchmarks, at 20, 50 and 150 LLMs.

For each benchmark's own file in ``../shared/data/open_llm_leaderboard_v1`` (by default the
multiple-choice ones with a known option count: MMLU, WinoGrande, ARC) and each number of
training LLMs (``--sizes``), a seeded sample of LLMs is fitted unidimensionally by NUTS
(2 chains × (``--tune`` + ``--draws``)) as a 2PL, a 3PL and a 4PL (floors centred on
1 / answer options: MMLU and ARC 4, WinoGrande 2; TruthfulQA and GSM8K at the spec's
``unknown_options_floor``). The models are compared two ways:

* PSIS-LOO of the training cells (``compare_asymptote_models``: the recommended model is the
  simplest within two SEs of the best, the cells' paired SE and the fits' Monte Carlo errors
  ``mcse`` counted);
* held-out LLMs (``--heldout`` others, disjoint from the training sample): half of each
  one's cells revealed, the other half predicted; the mean log loss per held-out LLM and its
  paired difference from the 2PL's with its SE over LLMs.

Beside them, metabench's own choice for the benchmark (its fitted R ``mirt`` model) and every
fit's largest R-hat, and a row ``metabench params``: the same held-out cells predicted from
metabench's published item parameters (its ``a1``, ``d``, ``g``, ``u``), each held-out LLM's
ability integrated over a grid under a standard normal prior (mirt's EAP) given its revealed
cells. metabench fitted those parameters on every LLM of the file (its ``theta_train_*``
lists), the held-out ones included, so the row is a reference with an advantage, not a
held-out fit. With ``--reference-size``, our floors (and ceilings) against metabench's
``g`` (and ``u``) on its 3PL and 4PL benchmarks (MMLU, WinoGrande), fitted on that many LLMs
with metabench's model: means, correlations, our 90 % interval widths, how often they hold
metabench's value, and each estimate's correlation with the item's accuracy.

    python benchmarks/asymptote_real.py                                  # about 1.5 h on 2 cores
    python benchmarks/asymptote_real.py --benchmarks mmlu --sizes 50 --tune 300 --draws 300
    python benchmarks/asymptote_real.py --benchmarks mmlu winogrande --sizes   # metabench's g, u only
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import arviz as az
import numpy as np
import pandas as pd
from asymptote_agreement import agreement_columns
from bench_tables import elapsed_logger, markdown_table, run_header, write_results

from benchmirt_bayes import asymptote_flags, compare_asymptote_models, fit_posterior, load_responses
from benchmirt_bayes.analyses.heldout import FoldSplit, mirt_predictions
from benchmirt_bayes.data.real_data import OPEN_LLM_BENCHMARKS
from benchmirt_bayes.model.spec import load_spec
from benchmirt_bayes.response_types import response_model

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "open_llm_leaderboard_v1"
OPTIONS = {"mmlu": 4, "arc": 4, "winogrande": 2}
METABENCH = {"arc": "2pl", "gsm8k": "2pl", "mmlu": "3pl", "truthfulqa": "2pl", "winogrande": "4pl"}
MODELS = ("2pl", "3pl", "4pl")


def spec_for(bench: str, model: str):
    """The unidimensional 2PL spec with ``bench``'s binary items given ``model``."""
    section = {"asymptotes": model, "n_options": {bench: OPTIONS[bench]} if bench in OPTIONS else {}}
    return load_spec("2pl").with_overrides({"name": f"2pl-{model}", "binary": section})


def fit(responses, bench: str, model: str, args, seed: int):
    return fit_posterior(
        responses,
        1,
        method="nuts",
        nuts={"chains": 2, "tune": args.tune, "draws": args.draws},
        spec=spec_for(bench, model),
        seed=seed,
        progressbar=False,
    )


def largest_rhat(fit_tree) -> float:
    """The largest R-hat over the fit's item and ability variables."""
    post = fit_tree["posterior"].to_dataset()
    names = [n for n in ("ability", "loading", "intercept", "floor", "capped_ceiling") if n in post]
    rhat = az.rhat(post[names])
    return round(max(float(np.nanmax(rhat[n].values)) for n in names), 3)


def held_out_split(combined, heldout: list[str], seed: int) -> FoldSplit:
    """Held-out LLMs with half their cells revealed, the other half to predict."""
    llms = combined.llms.astype(str)
    in_held = np.isin(llms, heldout)[:, None] & np.ones(combined.n_items, dtype=bool)
    revealed = np.random.default_rng(seed).random(in_held.shape) < 0.5
    observed = combined.observed
    train = combined.subset(llms=[llm for llm in llms if llm not in set(heldout)])
    return FoldSplit(
        train, observed & (~in_held | revealed), observed & in_held & ~revealed, np.flatnonzero(in_held[:, 0])
    )


def held_out_loss(fit_tree, combined, split: FoldSplit, seed: int) -> pd.Series:
    """Mean log loss of each held-out LLM's hidden cells."""
    prob = np.clip(mirt_predictions(fit_tree, combined, split, "llms", seed=seed), 1e-9, 1 - 1e-9)
    y = combined.values[split.test]
    loss = -(y * np.log(prob) + (1 - y) * np.log1p(-prob))
    llm = np.broadcast_to(combined.llms.astype(str)[:, None], split.test.shape)[split.test]
    return pd.Series(loss).groupby(llm).mean()


def authors_parameters(bench: str) -> pd.DataFrame:
    """metabench's fitted item parameters for ``bench`` (``a1``, ``d``, ``g``, ``u``), by item."""
    path = SHARED / f"items_{bench}_authors_mirt_{METABENCH[bench].upper()}.csv"
    return pd.read_csv(path, dtype={"item": str}).set_index("item")


def metabench_held_out_loss(bench: str, combined, split: FoldSplit) -> pd.Series:
    """Mean log loss of each held-out LLM's hidden cells under metabench's item parameters.

    Each held-out LLM's ability is integrated over a grid under a standard normal prior given
    its revealed cells (mirt's EAP); a hidden cell's prediction is its probability averaged
    over that posterior.
    """
    authors = authors_parameters(bench).reindex(combined.items.astype(str))
    binary = response_model("binary")
    params = {"floor": authors["g"].to_numpy(), "ceiling": authors["u"].to_numpy()}
    grid = np.linspace(-6.0, 6.0, 241)
    log_prior = -0.5 * grid**2
    eta = grid[:, None] * authors["a1"].to_numpy()[None, :] + authors["d"].to_numpy()[None, :]
    log_yes = binary.log_likelihood(1.0, eta, **params)
    log_no = binary.log_likelihood(0.0, eta, **params)
    prob = binary.probability(eta, **params)
    losses = {}
    for row in split.held_out:
        y, known, hidden = combined.values[row], split.known[row], split.test[row]
        log_post = log_prior + np.where(y[known] == 1, log_yes[:, known], log_no[:, known]).sum(axis=1)
        weight = np.exp(log_post - log_post.max())
        predicted = np.clip(weight @ prob[:, hidden] / weight.sum(), 1e-9, 1 - 1e-9)
        observed = y[hidden]
        loss = -(observed * np.log(predicted) + (1 - observed) * np.log1p(-predicted))
        losses[str(combined.llms[row])] = float(loss.mean())
    return pd.Series(losses)


def size_rows(bench: str, responses, size: int, args, log) -> list[dict]:
    rng = np.random.default_rng([args.seed, size])
    order = rng.permutation(responses.llms.astype(str))
    train, heldout = list(order[:size]), list(order[size : size + args.heldout])
    combined = responses.subset(llms=train + heldout)
    split = held_out_split(combined, heldout, args.seed)
    fits, losses, seconds = {}, {}, {}
    for model in MODELS:
        start = time.perf_counter()
        fits[model] = fit(split.train, bench, model, args, args.seed)
        seconds[model] = time.perf_counter() - start
        losses[model] = held_out_loss(fits[model], combined, split, args.seed)
        log(f"{bench} N={size} {model}: {seconds[model]:.0f} s, held-out log loss {losses[model].mean():.4f}")
    loo = compare_asymptote_models(fits).set_index("model")
    best_heldout = min(MODELS, key=lambda m: losses[m].mean())
    reference = metabench_held_out_loss(bench, combined, split).reindex(losses["2pl"].index)
    rows = []
    for model in MODELS:
        difference = losses[model] - losses["2pl"]
        divergences = int(fits[model]["sample_stats"]["diverging"].sum())
        rhat = largest_rhat(fits[model])
        rows.append(
            {
                "benchmark": bench,
                "llms": size,
                "items": responses.n_items,
                "model": model,
                "elpd_loo_diff_to_best": round(float(loo.loc[model, "elpd_diff"]), 1),
                "se": round(float(loo.loc[model, "se_diff"]), 1),
                "mcse": round(float(loo.loc[model, "mcse"]), 1),
                "loo_recommends": loo["recommended"].iloc[0],
                "heldout_log_loss": round(float(losses[model].mean()), 4),
                "minus_2pl": round(float(difference.mean()), 4),
                "se_minus_2pl": round(float(difference.std(ddof=1) / np.sqrt(difference.size)), 4),
                "heldout_best": best_heldout,
                "metabench": METABENCH[bench],
                "seconds": round(seconds[model]),
                "divergences": divergences,
                "max_rhat": rhat,
            }
        )
    difference = reference - losses["2pl"]
    rows.append(
        {
            "benchmark": bench,
            "llms": size,
            "items": responses.n_items,
            "model": "metabench params",
            "loo_recommends": loo["recommended"].iloc[0],
            "heldout_log_loss": round(float(reference.mean()), 4),
            "minus_2pl": round(float(difference.mean()), 4),
            "se_minus_2pl": round(float(difference.std(ddof=1) / np.sqrt(difference.size)), 4),
            "heldout_best": best_heldout,
            "metabench": METABENCH[bench],
        }
    )
    return rows


def reference_rows(bench: str, responses, args, log) -> list[dict]:
    """Our floors (and ceilings) against metabench's on ``args.reference_size`` LLMs."""
    model = METABENCH[bench]
    authors = authors_parameters(bench)
    llms = np.random.default_rng([args.seed, 0]).permutation(responses.llms.astype(str))[
        : args.reference_size
    ]
    training = responses.subset(llms=list(llms))
    tree = fit(training, bench, model, args, args.seed)
    flags = asymptote_flags(tree, ci_prob=0.9).set_index("item")
    flags = flags.loc[[i for i in flags.index if i in authors.index]]
    accuracy = pd.Series(np.nanmean(training.values, axis=0), index=training.items.astype(str))
    row = {"benchmark": bench, "model": model, "llms": len(llms), "items": len(flags)}
    row["max_rhat"] = largest_rhat(tree)
    pairs = {"floor": "g", "ceiling": "u"} if model == "4pl" else {"floor": "g"}
    row |= agreement_columns(flags, authors, accuracy, pairs, "metabench")
    log(f"{bench} reference: {row}")
    return [row]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--benchmarks", nargs="+", choices=list(OPEN_LLM_BENCHMARKS), default=["mmlu", "winogrande", "arc"]
    )
    parser.add_argument(
        "--sizes", type=int, nargs="*", default=[20, 50, 150], help="none: only the metabench comparison"
    )
    parser.add_argument("--heldout", type=int, default=300)
    parser.add_argument(
        "--reference-size", type=int, default=1000, help="0: no comparison with metabench's g, u"
    )
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="benchmark_results/asymptote_real.md")
    args = parser.parse_args()
    log = elapsed_logger()
    header = run_header("2PL, 3PL and 4PL on the Open LLM Leaderboard v1")
    rows, references = [], []
    for bench in args.benchmarks:
        responses = load_responses(
            SHARED / f"responses_{bench}.csv.gz", format="wide", llm_col="model", benchmark=bench
        )
        for size in args.sizes:
            rows.extend(size_rows(bench, responses, size, args, log))
            write_results(
                args.out, tables(header, rows, references), quiet=True
            )  # a stopped run keeps its rows
        if args.reference_size and METABENCH[bench] != "2pl":
            references.extend(reference_rows(bench, responses, args, log))
    write_results(args.out, tables(header, rows, references))


def tables(header: str, rows: list[dict], references: list[dict]) -> list[str]:
    """The results file: the comparison per benchmark and size, then the metabench references."""
    text = [header]
    if rows:
        text += ["", "## PSIS-LOO and held-out LLMs per benchmark and training size", ""]
        text.append(markdown_table(pd.DataFrame(rows)))
    if references:
        text += ["", "## Floors and ceilings against metabench's R mirt estimates", ""]
        text.append(markdown_table(pd.DataFrame(references)))
    return text


if __name__ == "__main__":
    main()
