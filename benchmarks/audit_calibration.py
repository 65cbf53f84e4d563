"""The audits on planted simulations: recovery of planted effects and false-positive rates on clean data.

Two simulated sets at the built-in scale (100 LLMs × 34,312 items; ``--scale`` and
``--llms`` for others): one with planted findings (at 100 LLMs: 10 base/modified pairs whose
safety drops by 0–1.5 SD, 40 contaminated LLM × benchmark cells, 60 DIF items for one LLM
family, 40 flipped keys; pairs and contaminated cells in proportion to the LLMs), and one
clean (the same design, nothing planted). Both are fitted with ``fit_posterior``'s defaults
for ``--method`` (ADVI by default: minutes at this scale). Printed, with date, machine and
commit:

* pairs: the planted safety shift against the posterior difference (90 % interval), in the
  truth's whitened frame aligned to the fit (rotations change no prediction);
* person fit: recall on contaminated cells and false-positive rate on clean cells, at the
  default threshold;
* DIF and miskeyed items: precision of the top k (k = number planted), precision of the
  flagged set, and flags on the clean set (every one a false discovery).

    python benchmarks/audit_calibration.py               # about 10 minutes on 2 cores
    python benchmarks/audit_calibration.py --scale 0.1   # minutes
    python benchmarks/audit_calibration.py --scale 0.05 --llms 20 --method nuts
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import time
from datetime import UTC, datetime

import numpy as np
import pandas as pd
from bench_tables import markdown_table

from benchmirt_bayes import (
    differential_item_functioning,
    fit_posterior,
    miskeyed_items,
    person_fit,
    simulate_benchmirt,
)
from benchmirt_bayes.rotations import procrustes, whitened_frame
from benchmirt_bayes.simulation.audit_plants import FOCAL_FAMILY, AuditPlan


def plan_for(n_llms: int) -> AuditPlan:
    """The planted findings: at 100 LLMs 10 pairs and 40 contaminated cells, in proportion elsewhere."""
    return AuditPlan(
        n_pairs=max(2, n_llms // 10), n_contaminated=max(4, round(0.4 * n_llms)), n_dif_items=60, n_flipped=40
    )


def fit(responses, method: str):
    settings = {"advi": {"draws": 300}} if method == "advi" else {"nuts": {"draws": 500, "tune": 500}}
    return fit_posterior(responses, 2, method=method, seed=1, progressbar=False, **settings)


def pair_table(fit_tree, truth) -> pd.DataFrame:
    """Planted vs recovered ability shifts, in the truth's whitened frame aligned to the fit."""
    true_ability, true_loading = whitened_frame(truth["ability"].values, truth["loading"].values)
    post = fit_tree["posterior"]
    mean_loading = post["loading"].mean(("chain", "draw")).sel(item=truth["item"].values).values
    rotation = procrustes(mean_loading, true_loading)
    llms = list(truth["llm"].values)
    rows = []
    draws = post["ability"].stack(sample=("chain", "draw")).transpose("sample", "llm", "dimension")
    for p, (base, modified) in enumerate(
        zip(truth["pair_base"].values, truth["pair_modified"].values, strict=True)
    ):
        difference = (draws.sel(llm=modified).values - draws.sel(llm=base).values) @ rotation
        planted = true_ability[llms.index(modified)] - true_ability[llms.index(base)]
        for k, dim in enumerate(truth["dimension"].values):
            low, high = np.quantile(difference[:, k], [0.05, 0.95])
            rows.append(
                {
                    "pair": f"{base} → {modified}",
                    "dimension": dim,
                    "planted shift (original SD)": float(truth["pair_shift"].values[p, k]),
                    "planted (whitened frame)": round(float(planted[k]), 3),
                    "posterior mean": round(float(difference[:, k].mean()), 3),
                    "90% interval": f"[{low:.2f}, {high:.2f}]",
                    "covers": bool(low <= planted[k] <= high),
                    "excludes 0": bool(high < 0 or low > 0),
                }
            )
    return pd.DataFrame(rows)


def rates(planted_fit, planted, clean_fit, plan: AuditPlan) -> list[dict]:
    truth = planted.truth
    rows = []
    cont = truth["contaminated"].to_series()
    cells = {(llm, bench) for (llm, bench), value in cont.items() if value}
    pf = person_fit(planted_fit)
    is_planted = [(llm, group) in cells for llm, group in zip(pf["llm"], pf["group"], strict=True)]
    pf["planted"] = is_planted
    clean_pf = person_fit(clean_fit)
    rows.append(
        {
            "audit": "person fit (aberrant LLM × benchmark cells)",
            "planted": len(cells),
            "recall / top-k precision": round(float(pf.loc[pf["planted"], "aberrant"].mean()), 3),
            "false-positive rate (planted set, clean cells)": round(
                float(pf.loc[~pf["planted"], "aberrant"].mean()), 4
            ),
            "flags on the clean set": f"{int(clean_pf['aberrant'].sum())} of {len(clean_pf)} cells "
            f"({clean_pf['aberrant'].mean():.2%})",
        }
    )
    dif_items = set(truth["item"].values[truth["dif_shift"].values != 0])
    dif = differential_item_functioning(planted_fit, "family", focal=FOCAL_FAMILY)
    clean_dif = differential_item_functioning(clean_fit, "family", focal=FOCAL_FAMILY)
    flagged = dif[dif["flagged"]]
    rows.append(
        {
            "audit": f"DIF (family {FOCAL_FAMILY!r}, shift ±{plan.dif_shift})",
            "planted": len(dif_items),
            "recall / top-k precision": round(
                float(dif.head(len(dif_items))["item"].isin(dif_items).mean()), 3
            ),
            "false-positive rate (planted set, clean cells)": f"flagged {len(flagged)}, precision "
            f"{flagged['item'].isin(dif_items).mean():.3f}"
            if len(flagged)
            else "flagged 0",
            "flags on the clean set": int(clean_dif["flagged"].sum()),
        }
    )
    flipped = set(truth["item"].values[truth["flipped"].values])
    keyed = miskeyed_items(planted_fit)
    clean_keyed = miskeyed_items(clean_fit)
    flagged = keyed[keyed["flagged"]]
    rows.append(
        {
            "audit": "miskeyed items (flipped keys)",
            "planted": len(flipped),
            "recall / top-k precision": round(
                float(keyed.head(len(flipped))["item"].isin(flipped).mean()), 3
            ),
            "false-positive rate (planted set, clean cells)": f"flagged {len(flagged)}, precision "
            f"{flagged['item'].isin(flipped).mean():.3f}"
            if len(flagged)
            else "flagged 0",
            "flags on the clean set": int(clean_keyed["flagged"].sum()),
        }
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--method", default="advi", choices=["advi", "nuts"])
    parser.add_argument("--llms", type=int, default=100)
    parser.add_argument("--seed", type=int, default=20260301)
    args = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout
    command = "python benchmarks/audit_calibration.py" + (f" --scale {args.scale}" if args.scale != 1 else "")
    command += (f" --llms {args.llms}" if args.llms != 100 else "") + (
        f" --method {args.method}" if args.method != "advi" else ""
    )
    print(
        f"# Audits on planted simulations, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()} "
        f"({platform.machine()}), commit {commit.strip()}, method {args.method}, `{command}`\n"
    )
    start = time.perf_counter()
    plan = plan_for(args.llms)
    planted = simulate_benchmirt(scale=args.scale, n_llms=args.llms, seed=args.seed, audits=plan)
    clean = simulate_benchmirt(scale=args.scale, n_llms=args.llms, seed=args.seed + 1, audits=AuditPlan())
    planted_fit, clean_fit = fit(planted.responses, args.method), fit(clean.responses, args.method)
    print(
        f"{planted.responses} and {clean.responses} fitted in {time.perf_counter() - start:.0f} s\n",
        flush=True,
    )
    pairs = pair_table(planted_fit, planted.truth)
    safety = pairs[pairs["dimension"] == "safety"]
    big = safety[safety["planted shift (original SD)"].abs() >= 0.5]
    print("## Base vs modified pairs\n\n" + markdown_table(pairs) + "\n")
    print(
        f"Safety shifts: 90% intervals cover the planted shift in {safety['covers'].sum()} of {len(safety)} "
        f"pairs; of the {len(big)} pairs with a shift of at least 0.5 SD, {big['excludes 0'].sum()} "
        "exclude 0.\n"
    )
    print("## Flags\n\n" + markdown_table(pd.DataFrame(rates(planted_fit, planted, clean_fit, plan))) + "\n")
    print(f"total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
