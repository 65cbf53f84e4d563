"""`benchmirt demo`: simulate reduced BenchMIRT data, fit it, write a report folder."""

from __future__ import annotations

from pathlib import Path

from benchmirt_bayes.inference.fit import fit_posterior
from benchmirt_bayes.io import save_posterior
from benchmirt_bayes.reports.report import write_report
from benchmirt_bayes.simulation.simulate import simulate_benchmirt


def run_demo(out: Path, *, scale: float = 0.03, method: str = "advi", seed: int = 1) -> Path:
    """Simulate ``scale`` of the built-in set, fit 2 dimensions, write fit and report to ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    sim = simulate_benchmirt(scale=scale, seed=seed)
    print(f"simulated {sim.responses}")
    if method == "nuts":
        settings = {"nuts": {"draws": 500, "tune": 500, "chains": 2}}
    elif method == "map":
        settings = {}
    else:
        settings = {"advi": {"draws": 500}}
    fit = fit_posterior(sim.responses, 2, method=method, seed=seed, **settings)
    save_posterior(fit, out / "fit.nc")
    sim.truth.to_netcdf(out / "truth.nc", engine="h5netcdf")
    return write_report(fit, out).parent
