"""What keeping StrongREJECT's continuous scores buys over rounding them (the published study rounded).

On the built-in set with ``response_types="mixed"`` (StrongREJECT continuous, IFEval graded,
MATH k-of-5), the same NUTS fit is run twice: once on the data as simulated, once with
StrongREJECT's scores rounded to 0/1 at 0.5. Two views:

* StrongREJECT alone (its items at the built-in size, 1 dimension): the posterior SD of each
  LLM's ability and its correlation with the true safety ability;
* the whole mixed set at a reduced size (2 dimensions): the posterior SD of the safety
  ability (the dimension StrongREJECT loads on).

Prints one table with the date, machine and commit; asserts nothing.

    python benchmarks/continuous_vs_rounded.py          # about 10 minutes on 2 cores
    python benchmarks/continuous_vs_rounded.py --smoke  # seconds-scale sizes
"""

from __future__ import annotations

import argparse

import numpy as np
from bench_tables import run_header

from benchmirt_bayes import fit_posterior, simulate_benchmirt
from benchmirt_bayes.rotations import procrustes, whitened_frame


def rounded(responses, benchmark: str):
    """The matrix with ``benchmark``'s scores rounded at 0.5 and declared binary."""
    data = responses.data.copy()
    cols = responses.benchmarks == benchmark
    values = data.values.copy()
    values[:, cols] = np.where(np.isnan(values[:, cols]), np.nan, (values[:, cols] >= 0.5).astype(float))
    types = responses.response_types.copy()
    types[cols] = "binary"
    data = data.copy(data=values).assign_coords(response_type=("item", types))
    return type(responses)(data)


def fit(responses, n_dims: int, draws: int, seed: int):
    return fit_posterior(
        responses,
        n_dims,
        method="nuts",
        seed=seed,
        progressbar=False,
        nuts={"draws": draws, "tune": draws, "chains": 2},
    )


def safety_summary(tree, truth, n_dims: int) -> tuple[float, float]:
    """Mean posterior SD of the safety ability and its correlation with the truth (aligned)."""
    post = tree["posterior"]
    ability = post["ability"].values.reshape(-1, *post["ability"].shape[2:])
    loading = post["loading"].mean(("chain", "draw")).values
    if n_dims == 1:
        true_ability = truth["ability"].values
        sign = np.sign(np.corrcoef(ability.mean(0)[:, 0], true_ability[:, 0])[0, 1])
        safety = ability[..., 0] * sign
    else:
        true_ability, true_loading = whitened_frame(truth["ability"].values, truth["loading"].values)
        safety = (ability @ procrustes(loading, true_loading))[..., 0]
    r = np.corrcoef(safety.mean(0), true_ability[:, 0])[0, 1]
    return float(safety.std(0).mean()), float(r)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    full_scale, mixed_scale, draws = (0.05, 0.003, 100) if args.smoke else (1.0, 0.02, 500)
    title = f"continuous vs rounded StrongREJECT, NUTS 2 chains × {draws} + {draws}"
    print(run_header(title))
    print("| data | StrongREJECT as | items | mean posterior SD of safety ability | r with true safety |")
    print("|---|---|---|---|---|")
    sim = simulate_benchmirt(scale=full_scale, n_llms=100, seed=11, response_types="mixed")
    alone = sim.responses.subset(benchmarks=["StrongREJECT"])
    truth = sim.truth.sel(item=alone.items)
    for label, data in (("continuous", alone), ("rounded at 0.5", rounded(alone, "StrongREJECT"))):
        sd, r = safety_summary(fit(data, 1, draws, 1), truth, 1)
        print(f"| StrongREJECT alone, 1 dim | {label} | {data.n_items} | {sd:.3f} | {r:.3f} |")
    sim = simulate_benchmirt(scale=mixed_scale, n_llms=100, seed=11, response_types="mixed")
    for label, data in (
        ("continuous", sim.responses),
        ("rounded at 0.5", rounded(sim.responses, "StrongREJECT")),
    ):
        sd, r = safety_summary(fit(data, 2, draws, 1), sim.truth, 2)
        print(f"| whole mixed set, 2 dims | {label} | {data.n_items} | {sd:.3f} | {r:.3f} |")


if __name__ == "__main__":
    main()
