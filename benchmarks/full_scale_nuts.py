"""Fit the full built-in set (100 LLMs × 34,312 items) with NUTS and print time and diagnostics.

``fit_posterior`` runs with its defaults but for the draw budget: 4 chains × (500 tune +
1,000 kept draws). On 3 million cells the defaults take the large-data path (the spectral
start, trees capped at depth 5 and every second of 2,000 draws kept: the gradients of depth 6
without thinning, with squared draws far less correlated; ARCHITECTURE.md, "Sampling
efficiency") and the fused likelihood; the time is in RESULTS.md. ``--init``,
``--max-treedepth`` and ``--thin`` override the automatic choice. On a GPU use
``benchmarks/gpu_nuts.py``. Usage:

    OPENBLAS_NUM_THREADS=1 python benchmarks/full_scale_nuts.py --out runs/full_nuts
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import numpy as np

from benchmirt_bayes import check_convergence, fit_posterior, save_posterior
from benchmirt_bayes.rotations import procrustes
from benchmirt_bayes.simulation.datasets import load_builtin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="runs/full_nuts")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--init", default="auto", choices=["auto", "spectral", "advi", "prior"])
    parser.add_argument("--max-treedepth", default="auto")
    parser.add_argument("--thin", default="auto", help="keep every thin-th of draws × thin iterations")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sampler", default="nutpie")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sim = load_builtin()
    print(sim.responses, flush=True)
    nuts = {"sampler": args.sampler, "chains": args.chains, "tune": args.tune, "draws": args.draws}
    for name in ("init", "max_treedepth", "thin"):
        value = getattr(args, name)
        if value != "auto":
            nuts[name] = value if name == "init" else int(value)
    start = time.perf_counter()
    fit = fit_posterior(sim.responses, 2, seed=args.seed, nuts=nuts)
    seconds = time.perf_counter() - start
    # an automatic depth cap is judged by R-hat and ESS (the share is still reported)
    report = check_convergence(fit)
    chosen = json.loads(fit.attrs["benchmirt_settings"])["nuts"]
    print(report, flush=True)
    stats = fit["sample_stats"]
    truth = sim.truth
    # skipna=False: the NaN-skipping mean fills a copy of the 2.2 GB loading draws first
    mean = fit["posterior"].to_dataset()[["ability", "loading"]].mean(("chain", "draw"), skipna=False)
    rotation = procrustes(mean["loading"].values, truth["loading"].values)
    ability = mean["ability"].values @ rotation
    true_ability = truth["ability"].values
    recovery = [np.corrcoef(ability[:, d], true_ability[:, d])[0, 1] for d in range(2)]
    summary = {
        "seconds": round(seconds, 1),
        "chains": args.chains,
        "tune": args.tune,
        "draws": args.draws,
        "sampler": args.sampler,
        "init": chosen["init"],
        "max_treedepth": chosen["max_treedepth"],
        "thin": chosen["thin"],
        "converged": bool(report.ok),
        "worst": report.table.to_dict(orient="index"),
        "divergences": report.sampler_checks.get("divergences"),
        "treedepth_share": report.sampler_checks.get("treedepth_share"),
        # per kept draw: with thinning, the steps of its whole block
        "mean_tree_steps": float(stats["n_steps"].mean()) if "n_steps" in stats else None,
        "mean_step_size": float(stats["step_size"].mean()) if "step_size" in stats else None,
        "ability_recovery_r": [round(float(r), 4) for r in recovery],
        "peak_memory_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
    }
    print(json.dumps(summary, indent=1), flush=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    save_posterior(fit, out / "fit.nc")


if __name__ == "__main__":
    main()
