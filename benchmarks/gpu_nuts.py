"""NUTS on the full built-in set through JAX (numpyro, chains vectorised): one run, timings + diagnostics.

On a GPU machine (``pip install -e ".[fast]"`` plus a CUDA build of jax):

    python benchmarks/gpu_nuts.py --out gpu_result.json                 # full 100 × 34k, 4 × (1000 + 1000)

On CPU at reduced size (what CI runs, seconds):

    python benchmarks/gpu_nuts.py --scale 0.003 --llms 30 --draws 30 --tune 30 --chains 2 --out /tmp/gpu.json
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--scale", type=float, default=None, help="simulate at this scale (default: built-in set)"
    )
    parser.add_argument("--llms", type=int, default=100)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--init", default="prior", choices=["prior", "advi"], help="advi: PyMC ADVI on the CPU first"
    )
    parser.add_argument("--max-treedepth", type=int, default=10)
    parser.add_argument("--out", default="gpu_result.json")
    args = parser.parse_args()

    import jax

    from benchmirt_bayes import check_convergence, fit_posterior, simulate_benchmirt
    from benchmirt_bayes.simulation.datasets import load_builtin

    if args.scale is None:
        responses = load_builtin().responses
    else:
        responses = simulate_benchmirt(scale=args.scale, n_llms=args.llms, seed=1).responses
    devices = [str(d) for d in jax.devices()]
    print(f"{responses} on {devices}")
    start = time.perf_counter()
    fit = fit_posterior(
        responses,
        2,
        method="nuts",
        seed=args.seed,
        nuts={
            "sampler": "numpyro",
            "chains": args.chains,
            "draws": args.draws,
            "tune": args.tune,
            "init": args.init,
            "max_treedepth": args.max_treedepth,
        },
    )
    wall = time.perf_counter() - start
    report = check_convergence(fit)
    stats = fit["sample_stats"]
    result = {
        "data": str(responses),
        "devices": devices,
        "chains": args.chains,
        "draws": args.draws,
        "tune": args.tune,
        "init": args.init,
        "max_treedepth": args.max_treedepth,
        "wall_s": wall,
        "divergences": int(stats["diverging"].sum()) if "diverging" in stats else None,
        "convergence_ok": bool(report.ok),
        "convergence": str(report),
        "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    }
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k != "convergence"}, indent=2))


if __name__ == "__main__":
    main()
