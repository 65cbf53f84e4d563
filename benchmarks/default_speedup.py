"""The default call against the default of the commit issue #44 started from, in one run.

Issue #44 asks that at S and M the default call's min bulk ESS per second be at least twice
the default's when the issue was filed, measured in one run with both. This script runs both
packages on the same data, one fit per subprocess, one after the other:

- ``reference``: ``fit_posterior(train, 2, seed=1)`` with the package as of ``--reference``
  (default ``45f402f``, the last commit before the issue's first change), exported with
  ``git archive`` into a temporary folder and imported from there (its defaults: 4 chains ×
  (1,000 + 1,000), every cell in float64, chains from the sampler's jittered start);
- ``current``: the same call with this checkout's package (its defaults, chosen from the data);
- ``current_same_budget``: the current package with the reference's 1,000 kept draws per chain,
  so that a longer default run, which spreads compilation over more draws, does not make the
  ratio by itself.

The data are the speed harness's S and M sets and its 90/10 cell split; each fit records a
checksum of its training matrix, and the table says whether both packages fitted the same
data. Each side fits a small set once before its timed fits, so that both find their compiled
kernels in the disk caches. Reported per fit: wall time of ``fit_posterior``; min bulk ESS
over the identified abilities and intercepts (the harness's measure) and over every quantity
``check_convergence`` checks, each per second; the largest R-hat; divergences; whether
``check_convergence`` passes. ``ess_per_s_vs_reference`` is a row's min ESS per second over the
reference's.

Agreement: posterior means of the identified abilities and intercepts in units of their
combined Monte Carlo SE (one posterior gives about N(0, 1): 0.27 % beyond 3), current against
reference and, with ``--long-draws N``, each against a long NUTS reference (this checkout's
defaults but 4 chains × (1,000 + N) and another seed), fitted after the timed fits (its time
is not a figure).

    python benchmarks/default_speedup.py --sizes S M --long-draws 5000 --out OUT   # about 50 min
    python benchmarks/default_speedup.py --smoke --out /tmp/speedup                # about 2 min
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import pandas as pd
from bench_tables import elapsed_logger, markdown_table, posterior_agreement, run_header

REFERENCE = "45f402f"
"""The last commit before issue #44's first change (2a38b80): the default the issue measured."""

ROOT = Path(__file__).resolve().parent.parent
SIDES = {
    "reference": {"package": "reference", "nuts": {}, "likelihood": "auto"},
    "current": {"package": "current", "nuts": {}, "likelihood": "auto"},
    "current_same_budget": {"package": "current", "nuts": {"draws": 1000}, "likelihood": "auto"},
}
SMOKE_NUTS = {"chains": 2, "draws": 20, "tune": 20}
WARM_UP_NUTS = {"chains": 2, "draws": 10, "tune": 10}


def export_reference(commit: str, folder: Path) -> Path:
    """The package and model specs of ``commit``, unpacked under ``folder`` (its import root)."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", commit, "benchmirt_bayes", "models"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return folder


def child(size: str, smoke: bool, nuts: dict, likelihood: str, seed: int, save: str | None) -> dict:
    """One fit with whichever ``benchmirt_bayes`` is first on the path; a JSON row."""
    import numpy as np
    from harness import identified_metrics, make_data

    import benchmirt_bayes
    from benchmirt_bayes import check_convergence, fit_posterior

    train, _ = make_data(size, smoke).split_cells(0.1, seed=0)
    checksum = hashlib.sha256(np.nan_to_num(train.values, nan=-1.0).tobytes()).hexdigest()[:12]
    start = time.perf_counter()
    fit = fit_posterior(train, 2, seed=seed, nuts=nuts or None, likelihood=likelihood, progressbar=False)
    wall = time.perf_counter() - start
    report = check_convergence(fit)
    settings = json.loads(fit.attrs["benchmirt_settings"])
    row = {
        "package": str(Path(benchmirt_bayes.__file__).parent.parent),
        "llms": train.n_llms,
        "items": train.n_items,
        "cells": int(train.observed.sum()),
        "data_sha": checksum,
        "chains_x_draws": f"{fit['posterior'].sizes['chain']} x {fit['posterior'].sizes['draw']}",
        "likelihood": settings.get("likelihood"),
        "init": settings["nuts"].get("init"),
        "wall_s": round(wall, 1),
        **identified_metrics(fit, wall),
        "min_ess_all": float(report.table["min_ess_bulk"].min()),
        "max_rhat_all": float(report.table["max_rhat"].max()),
        "divergences": int(fit["sample_stats"]["diverging"].sum()),
        "converged": bool(report.ok),
    }
    row["min_ess_all_per_s"] = row["min_ess_all"] / wall
    if save is not None:
        fit["posterior"].to_dataset()[["ability", "intercept"]].to_netcdf(save, engine="h5netcdf")
    return row


def run_child(python_path: Path, size: str, args, nuts: dict, likelihood: str, seed: int, save=None):
    """``child`` in a subprocess importing the package under ``python_path``; its row."""
    command = [sys.executable, __file__, "--child", size, "--nuts", json.dumps(nuts)]
    command += ["--likelihood", likelihood, "--seed", str(seed)] + (["--smoke"] if args.smoke else [])
    command += ["--save", str(save)] if save is not None else []
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(python_path)}
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    lines = [line for line in result.stdout.splitlines() if line.startswith("SPEEDUP_ROW ")]
    if result.returncode != 0 or not lines:
        print(result.stderr[-3000:], file=sys.stderr)
        raise RuntimeError(f"the fit at {size} with the package under {python_path} failed")
    row = json.loads(lines[-1].removeprefix("SPEEDUP_ROW "))
    if Path(row["package"]) != python_path.resolve():
        raise RuntimeError(f"imported the package from {row['package']}, not from {python_path}")
    return row


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", nargs="+", default=["S", "M"], choices=["S", "M"])
    parser.add_argument("--reference", default=REFERENCE)
    parser.add_argument("--long-draws", type=int, default=0, help="long reference: kept draws per chain")
    parser.add_argument("--smoke", action="store_true", help="tiny data, 2 × (20 + 20) draws: seconds")
    parser.add_argument("--out", default="benchmark_results/default_speedup")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--nuts", default="{}", help=argparse.SUPPRESS)
    parser.add_argument("--likelihood", default="auto", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--save", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        row = child(args.child, args.smoke, json.loads(args.nuts), args.likelihood, args.seed, args.save)
        print("SPEEDUP_ROW " + json.dumps(row))
        return
    if args.smoke:
        args.sizes = ["S"]
    out = Path(args.out)
    (out / "fits").mkdir(parents=True, exist_ok=True)
    log = elapsed_logger()
    rows, agreements = [], []
    with tempfile.TemporaryDirectory() as folder:
        paths = {"reference": export_reference(args.reference, Path(folder)), "current": ROOT}
        for package, path in paths.items():  # fill each package's kernel caches before timing
            run_child(path, "S", argparse.Namespace(smoke=True), WARM_UP_NUTS, "auto", 1)
            log(f"{package}: warmed up")
        for size in args.sizes:
            for side, setup in SIDES.items():
                nuts = {**setup["nuts"], **(SMOKE_NUTS if args.smoke else {})}
                save = out / "fits" / f"{size}_{side}.nc"
                row = run_child(paths[setup["package"]], size, args, nuts, setup["likelihood"], 1, save)
                rows.append({"size": size, "side": side, **row})
                log(f"{size} {side}: {row['wall_s']} s, min ESS/s {row['min_ess_per_s']:.2f}")
        for size in args.sizes if args.long_draws else []:
            nuts = SMOKE_NUTS if args.smoke else {"chains": 4, "draws": args.long_draws}
            save = out / "fits" / f"{size}_long.nc"
            row = run_child(ROOT, size, args, nuts, "auto", 7, save)
            rows.append({"size": size, "side": "long_reference", **row})
            log(f"{size} long reference: {row['wall_s']} s")
    table = pd.DataFrame(rows)
    for size, part in table.groupby("size"):
        reference = part.loc[part["side"] == "reference"].iloc[0]
        for column in ("min_ess_per_s", "min_ess_all_per_s"):
            ratio = part[column] / reference[column]
            table.loc[part.index, column.replace("min_", "").replace("per_s", "per_s_vs_reference")] = ratio
        table.loc[part.index, "same_data"] = part["data_sha"].nunique() == 1
        agreements += agreement_rows(size, out / "fits", args.long_draws > 0)
    untimed = table["side"] == "long_reference"  # fitted after the timed fits, beside other work: no figure
    timing = [c for c in table.columns if c == "wall_s" or "per_s" in c]
    table.loc[untimed, timing] = float("nan")
    table = table.drop(columns=["package", "data_sha"])
    table.to_csv(out / "default_speedup.csv", index=False)
    lines = [run_header("The default call against the default of #44's starting commit"), ""]
    lines += [f"Reference: the package as of commit {args.reference}, imported from `git archive`.", ""]
    lines += [markdown_table(table, 4), "", markdown_table(pd.DataFrame(agreements)), ""]
    for size, part in table.groupby("size"):
        ratios = part.set_index("side")
        lines.append(
            f"{size}: the default call's min ESS per second over the reference's: "
            f"{ratios.loc['current', 'ess_per_s_vs_reference']:.2f}× (identified abilities and "
            f"intercepts), {ratios.loc['current', 'ess_all_per_s_vs_reference']:.2f}× (every checked "
            "quantity); at the reference's budget "
            f"{ratios.loc['current_same_budget', 'ess_per_s_vs_reference']:.2f}×"
        )
    (out / "default_speedup.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def agreement_rows(size: str, fits: Path, long: bool) -> list[dict]:
    """Posterior-mean agreement of the saved fits of ``size``: current vs reference (and vs long)."""
    import xarray as xr

    def load(side: str):
        return xr.open_dataset(fits / f"{size}_{side}.nc", engine="h5netcdf")

    pairs = [("current", "reference")] + ([("current", "long"), ("reference", "long")] if long else [])
    return [
        {"size": size, "pair": f"{first} vs {second}", **posterior_agreement(load(first), load(second))}
        for first, second in pairs
    ]


if __name__ == "__main__":
    main()
