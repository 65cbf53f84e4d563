"""nutpie's normalizing-flow adaptation against the default NUTS, on one simulated set.

Issue #44 asks whether samplers that need fewer gradients per effective draw beat the
package's default. nutpie's flow adaptation (``adaptation="flow"``) learns a normalizing flow
during tuning and samples in its coordinates; it needs the model compiled for JAX (the
package's per-cell likelihood, not the fused numba kernel) and ``flowjax``
(``pip install flowjax``; not a dependency of the package). Three runs on the same data, one
process, the same chains, tuning and draws:

* ``package default``: ``fit_posterior(responses, 2, nuts=...)`` (numba, fused kernel, diagonal
  mass matrix, the package's start);
* ``jax diag``: the package's model with the per-cell likelihood, nutpie's JAX back end, the
  diagonal mass matrix (what the flow run costs without the flow);
* ``jax flow``: the same compiled model with ``adaptation="flow"``.

Reported per run: wall seconds (compilation included), mean leapfrog steps per draw, the
smallest bulk ESS over the item intercepts (invariant under the abilities' rotations and sign
flips, so comparable between the package's identified fit and a raw run) and per second, and
that rate over the package default's.

    python benchmarks/flow_adaptation.py                                 # 40 LLMs x 201 items
    python benchmarks/flow_adaptation.py --llms 100 --scale 0.03        # closer to the harness's S
"""

from __future__ import annotations

import argparse
import time

import arviz as az
import numpy as np
import pandas as pd
from bench_tables import elapsed_logger, markdown_table, run_header, write_results

from benchmirt_bayes import build_model, fit_posterior, simulate_benchmirt


def min_intercept_ess(posterior) -> float:
    """Smallest bulk ESS over the item intercepts of a posterior group."""
    ess = az.ess(posterior["intercept"].to_dataset(), method="bulk")
    return float(np.nanmin(ess["intercept"].values))


def package_default(responses, args) -> dict:
    start = time.perf_counter()
    tree = fit_posterior(
        responses,
        2,
        method="nuts",
        nuts={"chains": args.chains, "tune": args.tune, "draws": args.draws},
        seed=args.seed,
        progressbar=False,
    )
    seconds = time.perf_counter() - start
    stats = tree["sample_stats"]
    return {
        "run": "package default",
        "seconds": seconds,
        "steps_per_draw": float(stats["n_steps"].mean()),
        "divergences": int(stats["diverging"].sum()),
        "min_intercept_ess": min_intercept_ess(tree["posterior"]),
    }


def jax_runs(responses, args, log) -> list[dict]:
    import jax
    import nutpie

    jax.config.update("jax_enable_x64", True)
    model = build_model(responses, 2, likelihood="cells")
    start = time.perf_counter()
    compiled = nutpie.compile_pymc_model(model, backend="jax", gradient_backend="jax")
    compile_seconds = time.perf_counter() - start
    rows = []
    for adaptation in ("diag", "flow"):
        start = time.perf_counter()
        trace = nutpie.sample(
            compiled,
            draws=args.draws,
            tune=args.tune,
            chains=args.chains,
            cores=args.chains,
            seed=args.seed,
            adaptation=adaptation,
            progress_bar=False,
        )
        seconds = time.perf_counter() - start + compile_seconds
        stats = trace["sample_stats"]
        rows.append(
            {
                "run": f"jax {adaptation}",
                "seconds": seconds,
                "steps_per_draw": float(stats["n_steps"].mean()),
                "divergences": int(stats["diverging"].sum()),
                "min_intercept_ess": min_intercept_ess(trace["posterior"]),
            }
        )
        log(f"{rows[-1]}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--llms", type=int, default=40)
    parser.add_argument("--scale", type=float, default=0.005, help="share of the built-in items")
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="benchmark_results/flow_adaptation.md")
    args = parser.parse_args()
    try:
        import flowjax  # noqa: F401
    except ImportError as error:
        raise SystemExit("flow adaptation needs flowjax: pip install flowjax") from error
    log = elapsed_logger()
    responses = simulate_benchmirt(scale=args.scale, n_llms=args.llms, seed=args.seed).responses
    log(f"{responses}")
    rows = [package_default(responses, args)]
    log(f"{rows[0]}")
    rows += jax_runs(responses, args, log)
    table = pd.DataFrame(rows)
    table["min_ess_per_s"] = table["min_intercept_ess"] / table["seconds"]
    table["vs_package_default"] = table["min_ess_per_s"] / table["min_ess_per_s"].iloc[0]
    header = run_header("nutpie's flow adaptation against the default NUTS")
    setting = (
        f"{responses.n_llms} LLMs × {responses.n_items} items, 2 dimensions, "
        f"{args.chains} chains × ({args.tune} + {args.draws}), seed {args.seed}"
    )
    write_results(args.out, [header, "", setting, "", markdown_table(table, 3)])


if __name__ == "__main__":
    main()
