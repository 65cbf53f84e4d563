"""Floors and ceilings on simulations: does the 4PL recover them, and what does the 2PL lose?

For each number of LLMs (``--llms``) and seed, the built-in simulator plants chance floors in
the multiple-choice benchmarks (MMLU-Pro 10 options, GPQA and WMDP 4, BBQ 3, MuSR 2; floors
around the chance rate, SD 0.3 on the logit scale) and ceilings between 0.55 and 0.85 in a
share of their items (``--capped-share``, default 0.25); by default only these benchmarks are
kept (``--design all`` keeps the other eleven too). The same responses are fitted by
NUTS (2 chains × (``--tune`` + ``--draws``)) as a 2PL and with those benchmarks 4PL (their
option counts in the spec). Reported per fit:

* recovery: 90 % interval coverage of the floors ``g`` (every floored item) and of the
  ceilings ``u`` (every 4PL item, an uncapped item's true ceiling being 1, which the posterior
  holds with the probability that the item is uncapped; and the capped items alone, a
  conditional coverage that weak data need not reach even under a calibrated prior); the mean
  posterior probability of being capped among capped and uncapped items and its AUC;
* abilities: RMSE of posterior-mean abilities against the truth (the truth's whitened frame,
  rotated onto the fit), over all LLMs and over the quarter of LLMs with the lowest true
  success on the multiple-choice benchmarks (the LLMs near chance);
* flags (``asymptote_flags`` at its defaults): the share of uncapped items flagged with a low
  ceiling (false flags) and of capped items flagged (power), the share of items whose true
  floor is at or below chance flagged with a high floor (false flags) by the probability rule
  alone (``min_llms=1``) and by the default (no floor flags below ``MIN_FLOOR_LLMS`` LLMs), and
  per benchmark the floors' planted and estimated means, coverage and flags by the rule alone;
* ``miskeyed_items``: capped items among the flagged, and flags on uncapped items;
* cost: seconds, the smallest bulk ESS per second, divergences and the largest R-hat.

With ``--null``, a set with nothing planted is fitted both ways too: the agreement of the
4PL's abilities and item rankings with the 2PL's (correlations of posterior means in the
aligned frame; Spearman of the within-benchmark information ranks).

    python benchmarks/asymptote_recovery.py --null                  # about 1 h on 2 cores
    python benchmarks/asymptote_recovery.py --llms 30 --scale 0.01 --tune 200 --draws 200   # minutes
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from bench_tables import elapsed_logger, markdown_table, run_header, write_results
from scipy.stats import spearmanr

from benchmirt_bayes import (
    AsymptotePlan,
    asymptote_flags,
    check_convergence,
    fit_posterior,
    miskeyed_items,
    rank_items,
    simulate_benchmirt,
)
from benchmirt_bayes.analyses.asymptote_flags import MIN_FLOOR_LLMS
from benchmirt_bayes.analyses.metrics import auc
from benchmirt_bayes.response_types.base import sigmoid
from benchmirt_bayes.rotations import procrustes, whitened_frame

OPTIONS = {"MMLU-Pro": 10, "GPQA": 4, "WMDP": 4, "BBQ": 3, "MuSR": 2}
FOUR_PL = {"binary": {"benchmarks": dict.fromkeys(OPTIONS, "4pl"), "n_options": OPTIONS}}
CI_LEVEL = 0.9


def fit(responses, spec, args, seed: int):
    start = time.perf_counter()
    tree = fit_posterior(
        responses,
        2,
        method="nuts",
        nuts={"chains": 2, "tune": args.tune, "draws": args.draws},
        spec=spec,
        seed=seed,
        progressbar=False,
    )
    seconds = time.perf_counter() - start
    report = check_convergence(tree)
    cost = {
        "seconds": round(seconds, 1),
        "min_ess_bulk_per_s": round(float(report.table["min_ess_bulk"].min()) / seconds, 2),
        "divergences": int(tree["sample_stats"]["diverging"].sum()),
        "max_rhat": round(float(report.table["max_rhat"].max()), 3),
    }
    return tree, cost


def aligned_abilities(tree, truth) -> tuple[np.ndarray, np.ndarray]:
    """Posterior-mean abilities rotated onto the truth's whitened frame, and that frame's abilities."""
    true_ability, true_loading = whitened_frame(truth["ability"].values, truth["loading"].values)
    post = tree["posterior"]
    loading = post["loading"].mean(("chain", "draw")).sel(item=truth["item"].values).values
    ability = post["ability"].mean(("chain", "draw")).sel(llm=truth["llm"].values).values
    return ability @ procrustes(loading, true_loading), true_ability


def near_chance(truth, responses) -> np.ndarray:
    """The quarter of LLMs with the lowest true 2PL success on the multiple-choice benchmarks."""
    chosen = np.isin(np.asarray(responses.benchmarks), list(OPTIONS))
    eta = truth["ability"].values @ truth["loading"].values[chosen].T + truth["intercept"].values[chosen]
    success = sigmoid(eta).mean(axis=1)
    return success <= np.quantile(success, 0.25)


def ability_errors(tree, truth, low: np.ndarray) -> dict[str, float]:
    ability, true_ability = aligned_abilities(tree, truth)
    squared = ((ability - true_ability) ** 2).sum(axis=1)
    return {
        "ability_rmse": round(float(np.sqrt(squared.mean())), 3),
        "ability_rmse_near_chance": round(float(np.sqrt(squared[low].mean())), 3),
    }


def recovery(tree, truth) -> tuple[dict[str, float], list[dict]]:
    """Coverage of the floors and ceilings, and the flags against the planted truth.

    Returns the fit's row and one row per benchmark for its floors (where a false floor flag
    comes from: the flags of one benchmark share its benchmark-level floor).
    """
    # the probability rule alone (min_llms=1); the default also withholds floor flags in
    # benchmarks with fewer than MIN_FLOOR_LLMS LLMs
    flags = asymptote_flags(tree, ci_prob=CI_LEVEL, min_llms=1).set_index("item")
    default_floor_flags = flags["floor_flagged"] & (flags["benchmark_llms"] >= MIN_FLOOR_LLMS)
    true_floor = truth["floor"].to_series().reindex(flags.index)
    true_ceiling = truth["ceiling"].to_series().reindex(flags.index)
    capped = true_ceiling < 1
    covers_floor = (flags["floor_lower"] <= true_floor) & (true_floor <= flags["floor_upper"])
    covers_ceiling = (flags["ceiling_lower"] <= true_ceiling) & (true_ceiling <= flags["ceiling_upper"])
    keyed = miskeyed_items(tree).set_index("item")
    flagged = keyed.index[keyed["flagged"]]
    capped_items = set(true_ceiling.index[capped])
    p_capped = flags["p_capped"]
    null_floor = true_floor <= flags["chance"]
    per_benchmark = [
        {
            "benchmark": bench,
            "items": len(group),
            "chance": round(float(group["chance"].iloc[0]), 3),
            "true_floor_mean": round(float(true_floor[group.index].mean()), 3),
            "floor_mean": round(float(group["floor_mean"].mean()), 3),
            "floor_coverage_90": round(float(covers_floor[group.index].mean()), 3),
            "items_at_or_below_chance": int(null_floor[group.index].sum()),
            "high_floor_false_flags": int((group["floor_flagged"] & null_floor[group.index]).sum()),
            "floor_flags": int(group["floor_flagged"].sum()),
        }
        for bench, group in flags.groupby("benchmark")
    ]
    row = {
        "floored_items": len(flags),
        "capped_items": int(capped.sum()),
        "floor_coverage_90": round(float(covers_floor.mean()), 3),
        "ceiling_coverage_90": round(float(covers_ceiling.mean()), 3),
        "ceiling_coverage_90_capped": round(float(covers_ceiling[capped].mean()), 3),
        "p_capped_capped": round(float(p_capped[capped].mean()), 3),
        "p_capped_uncapped": round(float(p_capped[~capped].mean()), 3),
        "p_capped_auc": round(auc(capped.to_numpy(), p_capped.to_numpy()), 3),
        "low_ceiling_power": round(float(flags.loc[capped, "ceiling_flagged"].mean()), 3),
        "low_ceiling_false_flags": round(float(flags.loc[~capped, "ceiling_flagged"].mean()), 4),
        "high_floor_false_flags": round(float(flags.loc[null_floor, "floor_flagged"].mean()), 4),
        "high_floor_false_flags_default": round(float(default_floor_flags[null_floor].mean()), 4),
        "miskeyed_flagged": len(flagged),
        "miskeyed_flagged_capped": int(sum(item in capped_items for item in flagged)),
    }
    return row, per_benchmark


def simulated(n_llms: int, seed: int, args, plan: AsymptotePlan | None):
    """Responses and truth of one simulated set (the multiple-choice benchmarks only, by default)."""
    sim = simulate_benchmirt(scale=args.scale, n_llms=n_llms, seed=seed, asymptotes=plan)
    responses, truth = sim.responses, sim.truth
    if args.design == "multiple-choice":
        columns = np.flatnonzero(np.isin(np.asarray(responses.benchmarks), list(OPTIONS)))
        responses = responses.take_items(columns)
        truth = truth.sel(item=responses.items)
    return responses, truth


def planted_rows(n_llms: int, seed: int, args, log) -> tuple[list[dict], list[dict]]:
    plan = AsymptotePlan(n_options=OPTIONS, capped_share=dict.fromkeys(OPTIONS, args.capped_share))
    responses, truth = simulated(n_llms, seed, args, plan)
    low = near_chance(truth, responses)
    rows, floors = [], []
    for label, spec in (("2pl", None), ("4pl", FOUR_PL)):
        tree, cost = fit(responses, spec, args, seed)
        row = {"llms": n_llms, "items": responses.n_items, "seed": seed, "model": label}
        row |= ability_errors(tree, truth, low) | cost
        if label == "4pl":
            recovered, per_benchmark = recovery(tree, truth)
            row |= recovered
            floors = [{"llms": n_llms, "seed": seed} | entry for entry in per_benchmark]
        rows.append(row)
        log(f"{n_llms} LLMs, seed {seed}, {label}: {row}")
    return rows, floors


def null_rows(args, log) -> list[dict]:
    """Nothing planted: how far the 4PL's answers move from the 2PL's."""
    responses, truth = simulated(args.null_llms, 0, args, None)
    fits = {label: fit(responses, spec, args, 0)[0] for label, spec in (("2pl", None), ("4pl", FOUR_PL))}
    plain, _ = aligned_abilities(fits["2pl"], truth)
    four, _ = aligned_abilities(fits["4pl"], truth)
    ranks = {label: rank_items(tree, within="benchmark")["rank_mean"] for label, tree in fits.items()}
    chosen = np.isin(np.asarray(responses.benchmarks), list(OPTIONS))
    items = responses.items.astype(str)
    rows = [
        {
            "llms": args.null_llms,
            "items": responses.n_items,
            "ability_r_dim1": round(float(np.corrcoef(plain[:, 0], four[:, 0])[0, 1]), 4),
            "ability_r_dim2": round(float(np.corrcoef(plain[:, 1], four[:, 1])[0, 1]), 4),
            "llm_order_spearman_dim1": round(float(spearmanr(plain[:, 0], four[:, 0]).statistic), 4),
            "item_rank_spearman_all": round(
                float(spearmanr(ranks["2pl"][items], ranks["4pl"][items]).statistic), 4
            ),
            "item_rank_spearman_4pl_benchmarks": round(
                float(spearmanr(ranks["2pl"][items[chosen]], ranks["4pl"][items[chosen]]).statistic), 4
            ),
        }
    ]
    log(f"nothing planted: {rows[0]}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--llms", type=int, nargs="+", default=[20, 50, 150])
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument(
        "--scale",
        type=float,
        default=0.02,
        help="share of the built-in items (0.02: 373 multiple-choice items)",
    )
    parser.add_argument(
        "--design",
        choices=["multiple-choice", "all"],
        default="multiple-choice",
        help="fit the five multiple-choice benchmarks only (default) or every simulated benchmark",
    )
    parser.add_argument("--capped-share", type=float, default=0.25)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--null", action="store_true", help="also fit a set with nothing planted")
    parser.add_argument("--null-llms", type=int, default=100)
    parser.add_argument("--out", default="benchmark_results/asymptote_recovery.md")
    args = parser.parse_args()
    log = elapsed_logger()
    header = run_header("Floors and ceilings on simulations")
    rows, floors = [], []
    for n_llms in args.llms:
        for seed in range(args.seeds):
            fits, per_benchmark = planted_rows(n_llms, seed, args, log)
            rows.extend(fits)
            floors.extend(per_benchmark)
            write_results(
                args.out, tables(header, rows, floors, None), quiet=True
            )  # a stopped run keeps its rows
    null = null_rows(args, log) if args.null else None
    write_results(args.out, tables(header, rows, floors, null))


def tables(header: str, rows: list[dict], floors: list[dict], null: list[dict] | None) -> list[str]:
    """The results file: every fit, the 4PL's floors per benchmark, the 4PL against the 2PL per
    size, the set with nothing planted."""
    table = pd.DataFrame(rows)
    text = [header, "", "## Planted floors and ceilings, 2PL and 4PL fits", "", markdown_table(table)]
    if floors:
        text += ["", "## The 4PL's floors per benchmark", "", markdown_table(pd.DataFrame(floors))]
    by_size = table.pivot_table(index=["llms", "seed"], columns="model", values="ability_rmse_near_chance")
    if {"2pl", "4pl"} <= set(by_size.columns):
        by_size["reduction"] = 1 - by_size["4pl"] / by_size["2pl"]
        cost = table.pivot_table(index=["llms", "seed"], columns="model", values="min_ess_bulk_per_s")
        by_size["ess_per_s_2pl_over_4pl"] = cost["2pl"] / cost["4pl"]
        text += ["", "## Near-chance ability RMSE and cost, 4PL against 2PL", ""]
        text.append(markdown_table(by_size.reset_index(), 3))
    if null is not None:
        text += ["", "## Nothing planted: 4PL against 2PL", "", markdown_table(pd.DataFrame(null))]
    return text


if __name__ == "__main__":
    main()
