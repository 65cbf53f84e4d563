"""Do ADVI fits reach their optimum? Final ELBOs across seeds, collapsed dimensions, and choose_n_dims.

Three parts, each a Markdown table on stdout (with date, machine and commit):

1. A simulated stall: 22 LLMs × 2,854 items whose second dimension is carried by a third
   of the items (the shape of a real 22-LLM chemistry set on which 2-dimension fits ended
   at the 1-dimension optimum). ADVI from a prior draw against the default spectral start,
   over seeds: final ELBO, its gap to the best seed, and the smallest dimension's share.
2. The real sets in ``../shared/data`` (Open LLM Leaderboard v1, 2,461 × 693; OpenCompass,
   12 × 41,871): 2- and 3-dimension fits over seeds with the default settings. A fit "ends
   worse" when its final ELBO (mean of the last window) is below the best seed's by more
   than the ELBO noise (the standard deviation of the per-step loss over the last window
   of the best fit).
3. ``choose_n_dims`` on held-out LLMs (5 folds) for each real set, next to the paired fold
   comparisons it rests on: the number of folds in which each model beats the one with
   one dimension fewer.

    python benchmarks/advi_optima.py                 # many hours on 2 cores
    python benchmarks/advi_optima.py --quick         # minutes: fewer seeds, subsets, no CV

Parts and sets can run in separate processes (``--parts``, ``--sets``), and ``--rows FILE``
appends every finished fit as a JSON line (with the commit it ran on), so a long run can
be followed, or summarised later with ``--summarise FILE``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr
from bench_tables import markdown_table

from benchmirt_bayes import (
    ResponseMatrix,
    check_convergence,
    choose_n_dims,
    cross_validate,
    fit_posterior,
    load_open_llm_leaderboard,
    load_opencompass,
)
from benchmirt_bayes.posterior import final_elbo
from benchmirt_bayes.response_types.base import sigmoid

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def stall_case(seed: int = 0) -> ResponseMatrix:
    """22 LLMs × 2,854 items; every item loads on dimension 1, a third also on dimension 2."""
    rng = np.random.default_rng(seed)
    n_llms, n_items = 22, 2854
    ability = rng.normal(size=(n_llms, 2))
    loading = np.zeros((n_items, 2))
    loading[:, 0] = rng.normal(1.2, 0.4, n_items)
    second = rng.random(n_items) < 0.35
    loading[second, 1] = rng.normal(0.0, 1.0, second.sum())
    intercept = rng.normal(0.3, 1.5, n_items)
    values = (rng.random((n_llms, n_items)) < sigmoid(ability @ loading.T + intercept)).astype(float)
    return ResponseMatrix(
        xr.DataArray(
            values,
            dims=("llm", "item"),
            coords={
                "llm": [f"run_{j:02d}" for j in range(n_llms)],
                "item": [f"chem_{i:04d}" for i in range(n_items)],
                "benchmark": ("item", ["chemistry"] * n_items),
                "subgroup": ("item", ["chemistry"] * n_items),
            },
        )
    )


def one_fit(responses: ResponseMatrix, n_dims: int, seed: int, advi: dict) -> dict:
    """Final ELBO, its noise, the smallest dimension's share, steps and seconds of one ADVI fit."""
    start = time.perf_counter()
    fit = fit_posterior(responses, n_dims, method="advi", seed=seed, progressbar=False, advi=advi)
    elbo = fit["elbo"].to_dataset().isel(restart=0).dropna("step")
    window = int(elbo.attrs.get("window", 200))
    shares = check_convergence(fit).sampler_checks
    return {
        "seed": seed,
        "final_elbo": final_elbo(elbo, window),
        "noise": float(np.std(elbo["elbo"].values[-window:])),
        "min_dimension_share": min(v for k, v in shares.items() if k.startswith("dimension_share")),
        "steps": int(elbo.sizes["step"]),
        "seconds": time.perf_counter() - start,
    }


def run_seeds(responses: ResponseMatrix, n_dims: int, seeds: list[int], advi: dict) -> pd.DataFrame:
    return pd.DataFrame([one_fit(responses, n_dims, seed, advi) for seed in seeds])


def summarise(label: str, table: pd.DataFrame) -> dict:
    best = table.loc[table["final_elbo"].idxmax()]
    gap = best["final_elbo"] - table["final_elbo"]
    return {
        "set": label,
        "fits": len(table),
        "best final ELBO": round(best["final_elbo"], 1),
        "ELBO noise (best fit)": round(best["noise"], 1),
        "largest gap to best": round(gap.max(), 1),
        "largest gap in the fit's own noise SDs": round((gap / table["noise"]).max(), 2),
        "fits worse than best by more than the noise": int((gap > best["noise"]).sum()),
        "fits with a collapsed dimension (< 1 %)": int((table["min_dimension_share"] < 0.01).sum()),
        "smallest dimension share": round(table["min_dimension_share"].min(), 3),
        "median seconds": round(table["seconds"].median(), 1),
    }


def paired_wins(cv, dims: list[int]) -> str:
    table = cv.table[(cv.table["metric"] == "log_loss") & (cv.table["benchmark"] == "all")]
    wide = table.pivot_table(index="fold", columns="model", values="value")
    parts = []
    for low, high in itertools.pairwise(dims):
        wins = int((wide[f"mirt_{high}d"] < wide[f"mirt_{low}d"]).sum())
        parts.append(f"{high} beats {low} in {wins}/{len(wide)} folds")
    return "; ".join(parts)


REAL_LABELS = {
    "oll": "Open LLM Leaderboard v1 (2,461 × 693)",
    "opencompass": "OpenCompass (12 × 41,871)",
}
QUICK_LABELS = {
    "oll": "Open LLM Leaderboard v1, first 400 LLMs",
    "opencompass": "OpenCompass, every 10th item",
}


def real_set(name: str, quick: bool) -> ResponseMatrix:
    """A real set in ``../shared/data``; with ``quick`` its subset (first 400 LLMs, every 10th item)."""
    if name == "oll":
        responses = load_open_llm_leaderboard(SHARED / "open_llm_leaderboard_v1")
        return responses.subset(llms=list(responses.llms[:400])) if quick else responses
    responses = load_opencompass(SHARED / "opencompass_12llm")
    return responses.take_items(np.arange(0, responses.n_items, 10)) if quick else responses


def append_row(path: Path | None, row: dict) -> None:
    print(json.dumps(row), flush=True)
    if path is not None:
        with path.open("a") as handle:
            handle.write(json.dumps(row) + "\n")


def seed_tables(rows: list[dict]) -> str:
    """The part-2 table from fit rows (one line per set and number of dimensions)."""
    frame = pd.DataFrame(rows)
    commits = ", ".join(sorted(frame["commit"].unique()))
    lines = []
    for (label, n_dims), table in frame.groupby(["set", "dims"], sort=False):
        lines.append(summarise(f"{label}, {n_dims} dims", table.reset_index(drop=True)))
    return f"fits ran on commit {commits}\n\n" + markdown_table(pd.DataFrame(lines))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--sets", nargs="+", choices=sorted(REAL_LABELS), default=sorted(REAL_LABELS))
    parser.add_argument("--parts", nargs="+", type=int, choices=(1, 2, 3), default=(1, 2, 3))
    parser.add_argument("--rows", type=Path, default=None, help="append each finished fit here (JSON lines)")
    parser.add_argument("--summarise", type=Path, nargs="+", default=None, help="print part 2 from row files")
    args = parser.parse_args()
    if args.summarise:
        rows = [json.loads(line) for path in args.summarise for line in path.read_text().splitlines() if line]
        print("## 2. Real sets, default settings (spectral start)\n\n" + seed_tables(rows) + "\n")
        return
    n_seeds = args.seeds or (3 if args.quick else 10)
    seeds = list(range(n_seeds))
    git = ["git", "rev-parse", "--short", "HEAD"]
    commit = subprocess.run(git, capture_output=True, text=True).stdout.strip()
    print(
        f"# ADVI optima, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()} "
        f"({platform.machine()}), commit {commit}, "
        f"`python benchmarks/advi_optima.py{' --quick' if args.quick else ''}`\n"
    )
    if 1 in args.parts:
        stall = stall_case()
        rows = []
        for init in ("prior", "spectral"):
            table = run_seeds(stall, 2, seeds, {"init": init, "draws": 20})
            rows.append(summarise(f"simulated stall (22 × 2,854), 2 dims, start: {init}", table))
        print("## 1. A simulated stall\n\n" + markdown_table(pd.DataFrame(rows)) + "\n", flush=True)

    labels = QUICK_LABELS if args.quick else REAL_LABELS
    needed = args.sets if {2, 3} & set(args.parts) else []
    real = {labels[name]: real_set(name, args.quick) for name in needed}
    if 2 in args.parts:
        rows = []
        for label, responses in real.items():
            for seed in seeds:  # seeds outermost, so that a stopped run has every dimension count
                for n_dims in (2, 3):
                    row = {"set": label, "dims": n_dims, "commit": commit}
                    row.update(one_fit(responses, n_dims, seed, {"draws": 20}))
                    append_row(args.rows, row)
                    rows.append(row)
        print("## 2. Real sets, default settings (spectral start)\n\n" + seed_tables(rows) + "\n", flush=True)
    if args.quick or 3 not in args.parts:
        return
    rows = []
    for label, responses in real.items():
        dims = [1, 2, 3]
        cv = cross_validate(
            responses, n_dims=dims, folds=5, scheme="llms", method="advi", seed=42, progressbar=False
        )
        choice = choose_n_dims(cv)
        rows.append(
            {"set": label, "choose_n_dims": choice.n_dims, "paired fold comparisons": paired_wins(cv, dims)}
        )
    print(
        "## 3. choose_n_dims on held-out LLMs (5 folds)\n\n" + markdown_table(pd.DataFrame(rows)) + "\n",
        flush=True,
    )


if __name__ == "__main__":
    main()
