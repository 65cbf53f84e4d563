"""Fit the full built-in set (100 LLMs × 34,312 items) with ADVI and build its trace report.

Prints wall times, peak memory and the report's size. Usage:

    python benchmarks/full_scale_advi_report.py --out runs/full_advi
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

from benchmirt_bayes import check_convergence, fit_posterior, save_posterior, write_report
from benchmirt_bayes.simulation.datasets import load_builtin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="runs/full_advi")
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    out = Path(args.out)
    sim = load_builtin()
    print(sim.responses)
    start = time.perf_counter()
    fit = fit_posterior(sim.responses, 2, method="advi", seed=args.seed, advi={"draws": args.draws})
    fit_seconds = time.perf_counter() - start
    elbo = fit["elbo"]
    print(
        f"ADVI: {fit_seconds:.0f} s, {elbo.attrs['steps']} steps, "
        f"stopping rule fired: {bool(elbo.attrs['stopping_rule_fired'])}"
    )
    print(check_convergence(fit))
    save_posterior(fit, out / "fit.nc")
    start = time.perf_counter()
    page = write_report(fit, out / "report")
    report_seconds = time.perf_counter() - start
    size = sum(p.stat().st_size for p in page.parent.iterdir())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(
        f"report: {report_seconds:.0f} s, {size / 2**20:.1f} MiB in {page.parent}; "
        f"peak memory {peak:.1f} GiB; fit file {(out / 'fit.nc').stat().st_size / 2**20:.0f} MiB"
    )


if __name__ == "__main__":
    main()
