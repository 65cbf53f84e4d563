"""Simulation-based calibration of NUTS and ADVI fits at small sizes.

For each setting (response type, LLMs × items, dimensions) and method, ``--replications``
data sets are drawn from the model's prior and fitted as ``fit_posterior`` would
(``benchmirt_bayes.workflows.sbc``); each monitored rotation-invariant quantity's normalised
ranks are checked against the 99 % simultaneous ECDF band (ArviZ's ``ecdf_pit``). Writes
``results.md`` (the tables) and per run the csv of every quantity under ``--out``, and the
rank ECDF figures under ``--figures``.

    python benchmarks/sbc.py                                   # every setting, both methods
    python benchmarks/sbc.py --settings binary-2d --methods nuts --replications 20   # minutes
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
from bench_tables import markdown_table

from benchmirt_bayes.diagnostics.calibration import SBC_BAND_PROB, sbc_uniformity
from benchmirt_bayes.reports.plots import plot_sbc
from benchmirt_bayes.workflows.sbc import SbcSetting, simulation_based_calibration

SETTINGS = {
    "binary-1d": SbcSetting(n_llms=20, items_per_benchmark=20, n_benchmarks=2, n_dims=1),
    "binary-2d": SbcSetting(n_llms=30, items_per_benchmark=20, n_benchmarks=3, n_dims=2),
    "binary-3d": SbcSetting(n_llms=40, items_per_benchmark=30, n_benchmarks=3, n_dims=3),
    "binary-3pl-2d": SbcSetting(
        n_llms=30, items_per_benchmark=20, n_benchmarks=3, n_dims=2, asymptotes="3pl"
    ),
    "binary-4pl-2d": SbcSetting(
        n_llms=30, items_per_benchmark=20, n_benchmarks=3, n_dims=2, asymptotes="4pl"
    ),
    "count-2d": SbcSetting(
        n_llms=30, items_per_benchmark=20, n_benchmarks=2, n_dims=2, response_type="count"
    ),
    "graded-2d": SbcSetting(
        n_llms=30, items_per_benchmark=20, n_benchmarks=2, n_dims=2, response_type="graded"
    ),
    "continuous-2d": SbcSetting(
        n_llms=30, items_per_benchmark=20, n_benchmarks=2, n_dims=2, response_type="continuous"
    ),
}
HERE = Path(__file__).resolve().parent


def summarise(tree, name: str, method: str, seconds: float) -> tuple[dict, pd.DataFrame]:
    """One row of the summary table and the per-quantity table of one run."""
    table = sbc_uniformity(tree)
    reps = tree["replications"].to_dataset().to_dataframe()
    row = {
        "setting": name,
        "what": tree.attrs["setting_label"],
        "method": method,
        "replications": len(reps),
        "inside_99_band": f"{int(table['inside'].sum())}/{len(table)}",
        "all_inside_if_calibrated": round(SBC_BAND_PROB ** len(table), 2),
        "coverage_90_median": round(float(table["coverage_90"].median()), 3),
        "coverage_90_range": f"{table['coverage_90'].min():.2f}–{table['coverage_90'].max():.2f}",
        "outside": ", ".join(
            f"{q}[{i}]" for q, i in table.loc[~table["inside"], ["quantity", "index"]].values
        )
        or "none",
        "seconds_per_fit": round(float(reps["seconds"].median()), 1),
        "minutes": round(seconds / 60, 1),
        "fits_failed": int(reps["failed"].sum()),
    }
    if method == "nuts":
        row["fits_with_divergences"] = int((reps["divergences"] > 0).sum())
        row["fits_rhat_over_1.01"] = int((reps["max_rhat"] > 1.01).sum())
    else:
        threshold = float(tree.attrs["pareto_k_threshold"])
        row["pareto_k_median"] = round(float(reps["pareto_k"].median()), 2)
        row["fits_k_over_threshold"] = f"{int((reps['pareto_k'] > threshold).sum())} (k̂ > {threshold:.2f})"
    return row, table


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=list(SETTINGS))
    parser.add_argument("--methods", nargs="+", choices=["nuts", "advi"], default=["nuts", "advi"])
    parser.add_argument("--replications", type=int, default=100)
    parser.add_argument("--nuts-chains", type=int, default=2, help="NUTS chains per fit")
    parser.add_argument("--nuts-tune", type=int, default=1000, help="NUTS tuning steps per chain")
    parser.add_argument("--nuts-draws", type=int, default=1000, help="NUTS draws per chain")
    parser.add_argument("--seed", type=int, default=20261204)
    parser.add_argument("--out", default="benchmark_results/sbc")
    parser.add_argument("--figures", default=str(HERE / "figures"), help="where the rank ECDF figures go")
    args = parser.parse_args()
    out, figures = Path(args.out), Path(args.figures)
    out.mkdir(parents=True, exist_ok=True)
    figures.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.settings:
        for method in args.methods:
            start = time.perf_counter()
            tree = simulation_based_calibration(
                SETTINGS[name],
                method=method,
                n_replications=args.replications,
                seed=args.seed,
                nuts=(
                    {"chains": args.nuts_chains, "tune": args.nuts_tune, "draws": args.nuts_draws}
                    if method == "nuts"
                    else None
                ),
                progressbar=False,
            )
            row, table = summarise(tree, name, method, time.perf_counter() - start)
            rows.append(row)
            table.to_csv(out / f"sbc_{name}_{method}.csv", index=False)
            tree.to_netcdf(out / f"sbc_{name}_{method}.nc")  # every rank and per-fit record
            plot_sbc(tree).savefig(figures / f"sbc_{name}_{method}.png", dpi=80)
            print(pd.DataFrame([row]).to_string(index=False), flush=True)
    summary = pd.DataFrame(rows)
    nuts = summary[summary["method"] == "nuts"].dropna(axis=1, how="all").convert_dtypes()
    advi = summary[summary["method"] == "advi"].dropna(axis=1, how="all").convert_dtypes()
    lines = [
        f"{args.replications} replications per run; seed {args.seed}; {os.cpu_count()} cores; "
        f"NUTS: {args.nuts_chains} chains × ({args.nuts_tune} + {args.nuts_draws}). "
        "Each run monitors the linear predictor η of 3 cells, mdisc and difficulty of 3 items, "
        "3 LLM-pair ability distances, every benchmark's intercept mean and spreads and (2+ "
        "dimensions) the cosine of two benchmarks' mean loadings. "
        f"`inside_99_band`: quantities whose rank ECDF stays inside the {SBC_BAND_PROB:.0%} "
        "simultaneous band; `all_inside_if_calibrated`: the chance that every one does for calibrated "
        "fits (0.99 to the number of quantities). `coverage_90`: share of truths inside the central 90 % "
        "posterior interval, per quantity (the binomial SE at 100 replications is 0.03).",
        "",
    ]
    for title, part in (("NUTS", nuts), ("ADVI (mean-field)", advi)):
        if len(part):
            lines += [f"### {title}", "", markdown_table(part.drop(columns="method")), ""]
            for _, r in part.iterrows():
                lines.append(
                    f"![SBC {r['setting']} {r['method']}](figures/sbc_{r['setting']}_{r['method']}.png)"
                )
            lines.append("")
    (out / "results.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
