"""Speed harness: this package's NUTS and ADVI against a straightforward PyMC model, same data, same run.

Each configuration runs in its own subprocess (so peak memory is its own; ``--smoke``
runs them all in one process, as a check that each runs) on a fixed
90/10 cell split of the simulated data at size S (100 × 1k), M (100 × 5k) or L (the
built-in 100 × 34k set). Reported per configuration: wall time, leapfrog steps per
second (kept draws only: a lower bound on gradient evaluations per second) and per draw,
minimum bulk ESS, ESS per second and ESS per 1,000 leapfrog steps (a measure of the
posterior's geometry, independent of code speed) over identified abilities and intercepts,
maximum R-hat over the same, divergences, peak RSS, held-out accuracy; ratios against the reference model.
A separate row times one log-density + gradient of the package model against a
hand-written vectorised NumPy implementation (dense, masked) on the same data.
The package rows call ``fit_posterior`` with no speed arguments (only the draw budget that
every row shares), so they measure what a user gets by default; the alternatives
``package_nuts_advi_init`` (``nuts={"init": "advi"}``) and ``package_nuts_depth5_thin2``
(the large-data path forced at every size), ``package_nuts_low_rank`` (nutpie's low-rank mass
matrix) and ``package_mclmc`` (nutpie's microcanonical Langevin kernel, issue #44) check that the
default is the fastest choice:
``default_vs_best_wall`` is the default row's wall time over the fastest NUTS row's.
``package_nuts_float64`` is the default with ``likelihood="fused64"`` (every cell in float64,
where the default fused kernel computes cells in float32): ``ess_per_s_vs_float64`` is the
default's min ESS per second over it, and with ``--save-fits`` the two posteriors are compared
(``max_z_vs_default``, ``share_z_over_3``: posterior means of the identified abilities and
intercepts, differences in units of their combined Monte Carlo SE; the same posterior gives
about N(0, 1), 0.27 % beyond 3).
``planted_2pl`` and ``planted_4pl`` fit the same data with chance floors and capped items
planted in the five multiple-choice benchmarks, as a 2PL and with those benchmarks 4PL (default
NUTS otherwise); ``cost_vs_2pl`` is the 4PL's time per effective draw over the 2PL's (the ratio
of their min ESS per second).

    python benchmarks/harness.py --sizes S --out benchmarks/results            # minutes
    python benchmarks/harness.py --smoke --out /tmp/harness                     # seconds (CI)

py-irt (the original study's engine) needs its own Python 3.11 environment; pass
``--pyirt-python PATH`` to include it (see benchmarks/README.md); without it the row says
"not run".
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
from bench_tables import markdown_table, posterior_agreement

SIZES = {"S": 1000, "M": 5000, "L": None}
CONFIGS = (
    "reference_pymc",
    "package_nuts",
    "package_nuts_float64",
    "package_nuts_advi_init",
    "package_nuts_depth5_thin2",
    "package_nuts_low_rank",
    "package_mclmc",
    "planted_2pl",
    "planted_4pl",
    "package_advi",
    "minibatch_advi",
    "logp_grad",
    "pyirt",
)


NUTS_VARIANTS = {
    "package_nuts": {},  # the defaults: nothing but the shared draw budget
    "package_nuts_float64": {},  # the defaults with the likelihood in float64 (LIKELIHOODS)
    "package_nuts_advi_init": {"init": "advi"},
    "package_nuts_depth5_thin2": {"init": "advi", "max_treedepth": 5, "thin": 2},
    "package_nuts_low_rank": {"adaptation": "low_rank"},
    "package_mclmc": {"kernel": "mclmc"},
}

LIKELIHOODS = {"package_nuts_float64": "fused64"}
"""Rows that differ from the default in the likelihood form alone (the default is ``"auto"``)."""


MULTIPLE_CHOICE = {"MMLU-Pro": 10, "GPQA": 4, "WMDP": 4, "BBQ": 3, "MuSR": 2}
"""The built-in simulator's multiple-choice benchmarks and their numbers of options."""

PLANTED_SPECS = {
    "planted_2pl": None,
    "planted_4pl": {
        "binary": {"benchmarks": dict.fromkeys(MULTIPLE_CHOICE, "4pl"), "n_options": MULTIPLE_CHOICE}
    },
}
"""The same data with chance floors and capped items planted in the multiple-choice benchmarks,
fitted (default NUTS) as a 2PL and with those benchmarks 4PL: the cost of the 4PL (issue #42)."""


def make_data(size: str, smoke: bool, planted: bool = False, n_llms: int = 100):
    """The harness's data set of ``size`` (``n_llms`` LLMs; the smoke set has 30)."""
    from benchmirt_bayes import AsymptotePlan, simulate_benchmirt
    from benchmirt_bayes.simulation.datasets import load_builtin

    plan = None
    if planted:
        plan = AsymptotePlan(n_options=MULTIPLE_CHOICE, capped_share=dict.fromkeys(MULTIPLE_CHOICE, 0.25))
    if smoke:
        return simulate_benchmirt(scale=0.003, n_llms=30, seed=1, asymptotes=plan).responses
    if SIZES[size] is None:
        if planted:
            raise ValueError("the planted rows are simulated at S and M only")
        return load_builtin().responses
    return simulate_benchmirt(scale=SIZES[size] / 34312, n_llms=n_llms, seed=1, asymptotes=plan).responses


def reference_model(train):
    """The straightforward model: long format, independent normal priors, no identification."""
    import pymc as pm

    rows, cols = np.nonzero(train.observed)
    coords = {"llm": train.llms, "item": train.items, "dimension": ["d1", "d2"], "cell": np.arange(rows.size)}
    with pm.Model(coords=coords) as model:
        ability = pm.Normal("ability", 0, 1, dims=("llm", "dimension"))
        loading = pm.Normal("loading", 0, 1, dims=("item", "dimension"))
        intercept = pm.Normal("intercept", 0, 2, dims="item")
        logit = (ability[rows] * loading[cols]).sum(axis=1) + intercept[cols]
        pm.Bernoulli("correct", logit_p=logit, observed=train.values[rows, cols], dims="cell")
    return model


def identified_metrics(posterior, wall: float) -> dict:
    import arviz as az

    post = posterior["posterior"]
    ess = [float(az.ess(post[name]).min()) for name in ("ability", "intercept")]
    rhat = [float(az.rhat(post[name]).max()) for name in ("ability", "intercept")]
    return {"min_bulk_ess": min(ess), "min_ess_per_s": min(ess) / wall, "max_rhat": max(rhat)}


def step_metrics(steps, min_ess: float, wall: float) -> dict:
    """Leapfrog steps per second and per draw, and min ESS per 1,000 steps (the geometry)."""
    total = float(steps.sum())
    return {
        "steps_per_s": total / wall,
        "steps_per_draw": float(steps.mean()),
        "ess_per_1k_steps": 1000 * min_ess / total,
    }


def held_out_accuracy(posterior, responses, test) -> float:
    from benchmirt_bayes.analyses.heldout import FoldSplit, mirt_predictions

    split = FoldSplit(responses, ~test & responses.observed, test, np.array([], dtype=np.int64))
    prob = mirt_predictions(posterior, responses, split, "cells")
    return float(np.mean((prob >= 0.5) == (responses.values[test] == 1)))


def run_pyirt(train, responses, test, python: str | None, epochs: int) -> dict:
    """py-irt multidim_2pl in its own environment (subprocess); held-out accuracy from its means."""
    import tempfile

    if python is None:
        return {"note": "not run: pass --pyirt-python (see benchmarks/README.md)"}
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "train.jsonlines"
        with data.open("w") as handle:
            for j, llm in enumerate(train.llms):
                row = train.values[j]
                answers = {
                    str(item): int(row[i]) for i, item in enumerate(train.items) if not np.isnan(row[i])
                }
                handle.write(json.dumps({"subject_id": str(llm), "responses": answers}) + "\n")
        out = Path(folder) / "params.json"
        script = Path(__file__).with_name("pyirt_run.py")
        command = [python, str(script), str(data), str(out), "--epochs", str(epochs)]
        start = time.perf_counter()
        result = subprocess.run(command, check=False, capture_output=True, text=True)
        wall = time.perf_counter() - start
        if result.returncode != 0:  # e.g. py-irt's loss went to NaN: report it, keep the table
            lines = result.stderr.strip().splitlines() or ["no output"]
            errors = [line for line in lines if "Error" in line] or lines
            reason = errors[-1].replace("|", "/")[:160]
            return {"note": f"py-irt failed after {wall:.0f} s: {reason}"}
        params = json.loads(out.read_text())
    ability = np.asarray(params["ability"])
    diff, disc = np.asarray(params["diff"]), np.asarray(params["disc"])
    subject = {v: int(k) for k, v in params["subject_ids"].items()}
    item = {v: int(k) for k, v in params["item_ids"].items()}
    rows, cols = np.nonzero(test)
    j = np.array([subject[str(x)] for x in responses.llms[rows]])
    i = np.array([item[str(x)] for x in responses.items[cols]])
    logit = np.sum(disc[i] * (ability[j] - diff[i]), axis=1)
    accuracy = float(np.mean((logit >= 0) == (responses.values[rows, cols] == 1)))
    return {
        "wall_s": wall,
        "held_out_accuracy": accuracy,
        "note": f"py-irt multidim_2pl, {epochs} epochs, lr 0.2",
    }


def run_one(config: str, size: str, smoke: bool, chains: int, draws: int, tune: int, **extra) -> dict:
    from benchmirt_bayes import fit_posterior

    responses = make_data(size, smoke, planted=config in PLANTED_SPECS)
    train, test = responses.split_cells(0.1, seed=0)
    row = {"size": size, "config": config, "llms": responses.n_llms, "items": responses.n_items}
    row["cells"] = int(train.observed.sum())
    start = time.perf_counter()
    if config in NUTS_VARIANTS or config in PLANTED_SPECS:
        nuts = {"chains": chains, "draws": draws, "tune": tune, **NUTS_VARIANTS.get(config, {})}
        try:
            fit = fit_posterior(
                train,
                2,
                seed=1,
                nuts=nuts,
                spec=PLANTED_SPECS.get(config),
                likelihood=LIKELIHOODS.get(config, "auto"),
            )
        except FloatingPointError as error:  # a kernel whose chains never settled: a row that says so
            return row | {"wall_s": time.perf_counter() - start, "note": f"failed: {error}"[:300]}
        wall = time.perf_counter() - start
        stats = fit["sample_stats"]
        row.update(identified_metrics(fit, wall))
        row["divergences"] = int(stats["diverging"].sum())
        row.update(step_metrics(stats["n_steps"], row["min_bulk_ess"], wall))
        row["held_out_accuracy"] = held_out_accuracy(fit, responses, test)
        row["settings"] = fit.attrs["benchmirt_settings"]
        save_fit(fit, extra.get("save_to"))
    elif config == "package_advi":
        fit = fit_posterior(train, 2, method="advi", seed=1, advi={"draws": 200})
        wall = time.perf_counter() - start
        row["advi_steps"] = int(fit["elbo"].sizes["step"])
        row["held_out_accuracy"] = held_out_accuracy(fit, responses, test)
    elif config == "minibatch_advi":
        import xarray as xr

        from benchmirt_bayes import fit_minibatch_advi

        item_batch = max(train.n_items // 8, 1)
        mb = fit_minibatch_advi(
            train, 2, item_batch=item_batch, seed=1, progressbar=False, advi={"draws": 200}
        )
        wall = time.perf_counter() - start
        row["advi_steps"] = int(mb["elbo"].sizes["step"])
        row["held_out_accuracy"] = held_out_accuracy(mb, responses, test)
        row["note"] = "minibatch ADVI (the same model), blocks of every LLM x 1/8 of items"
    elif config == "reference_pymc":
        import pymc as pm
        import xarray as xr

        from benchmirt_bayes.inference.identification import identify_posterior

        with reference_model(train):
            trace = pm.sample(draws=draws, tune=tune, chains=chains, random_seed=1, progressbar=False)
        wall = time.perf_counter() - start
        raw = trace["posterior"].to_dataset()[["ability", "loading", "intercept"]]
        identified = identify_posterior(raw, rotate=True)  # judge mixing, not label switching
        tree = xr.DataTree.from_dict({"posterior": identified})
        row.update(identified_metrics(tree, wall))
        stats = trace["sample_stats"]
        row["divergences"] = int(stats["diverging"].sum())
        steps = "n_steps" if "n_steps" in stats else "tree_size"
        row.update(step_metrics(stats[steps], row["min_bulk_ess"], wall))
        row["held_out_accuracy"] = held_out_accuracy(tree, responses, test)
        if extra.get("save_to") is not None:
            kept = xr.DataTree.from_dict({"posterior": identified, "sample_stats": stats.to_dataset()})
            save_fit(kept, extra["save_to"])
    elif config == "pyirt":
        row.update(
            run_pyirt(train, responses, test, extra.get("pyirt_python"), extra.get("pyirt_epochs", 5000))
        )
        wall = row.pop("wall_s", float("nan"))
    elif config == "logp_grad":
        row.update(time_logp_grad(train))
        wall = row["package_ms"] / 1000
    else:
        raise ValueError(config)
    row["wall_s"] = wall
    row["peak_rss_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return row


def save_fit(fit, path: Path | None) -> None:
    """Keep a NUTS fit for later diagnosis (``--save-fits``); the harness itself needs only its row."""
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fit.to_netcdf(path, engine="h5netcdf")  # the reference fit has no provenance for save_posterior


def time_logp_grad(train, repeats: int = 50) -> dict:
    """One log density + gradient: the package's compiled model vs hand-written NumPy (dense, masked)."""
    from benchmirt_bayes import build_model

    model = build_model(train, 2, likelihood="auto")
    point = model.initial_point(random_seed=0)
    fn = model.logp_dlogp_function(ravel_inputs=True)
    fn.set_extra_values({})
    x = np.concatenate([np.ravel(point[v.name]) for v in fn._grad_vars])
    fn(x)
    start = time.perf_counter()
    for _ in range(repeats):
        fn(x)
    package_ms = (time.perf_counter() - start) / repeats * 1000
    rng = np.random.default_rng(0)
    n_llm, n_item = train.observed.shape
    ability = rng.normal(size=(n_llm, 2))
    loading = rng.normal(size=(n_item, 2))
    intercept = rng.normal(size=n_item)
    y = np.nan_to_num(train.values)
    mask = train.observed.astype(float)

    def numpy_logp_grad():
        eta = ability @ loading.T + intercept
        p = 1 / (1 + np.exp(-eta))
        logp = np.sum(mask * (y * eta - np.logaddexp(0, eta)))
        resid = mask * (y - p)
        return logp, resid @ loading, resid.T @ ability, resid.sum(axis=0)

    numpy_logp_grad()
    start = time.perf_counter()
    for _ in range(repeats):
        numpy_logp_grad()
    numpy_ms = (time.perf_counter() - start) / repeats * 1000
    return {
        "package_ms": package_ms,
        "numpy_dense_ms": numpy_ms,
        "logp_ratio_to_numpy": package_ms / numpy_ms,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", nargs="+", default=["S"], choices=list(SIZES))
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--smoke", action="store_true", help="tiny data and few draws: seconds")
    parser.add_argument("--pyirt-python", default=None, help="Python of an environment with py-irt 0.7.0")
    parser.add_argument("--pyirt-epochs", type=int, default=5000)
    parser.add_argument("--out", default="benchmarks/results")
    parser.add_argument(
        "--save-fits", action="store_true", help="also write each NUTS fit to OUT/fits/SIZE_CONFIG.nc"
    )
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.smoke:
        args.sizes, args.draws, args.tune = ["S"], 20, 20
    if args.one is not None:  # child process: one configuration, JSON on stdout
        config, size = args.one.split(":")
        extra = {"pyirt_python": args.pyirt_python, "pyirt_epochs": args.pyirt_epochs}
        if args.save_fits:
            extra["save_to"] = Path(args.out) / "fits" / f"{size}_{config}.nc"
        row = run_one(config, size, args.smoke, args.chains, args.draws, args.tune, **extra)
        print("HARNESS_ROW " + json.dumps(row))
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for size in args.sizes:
        for config in args.configs:
            if args.smoke:  # a check that every configuration runs: in this process, no isolation
                rows.append(run_in_process(config, size, args))
                continue
            command = [sys.executable, __file__, "--one", f"{config}:{size}", "--chains", str(args.chains)]
            command += ["--draws", str(args.draws), "--tune", str(args.tune)] + (
                ["--smoke"] if args.smoke else []
            )
            command += ["--out", str(out)] + (["--save-fits"] if args.save_fits else [])
            if args.pyirt_python:
                command += ["--pyirt-python", args.pyirt_python, "--pyirt-epochs", str(args.pyirt_epochs)]
            env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
            result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
            lines = [line for line in result.stdout.splitlines() if line.startswith("HARNESS_ROW ")]
            if result.returncode != 0 or not lines:
                print(result.stderr[-3000:], file=sys.stderr)
                rows.append({"size": size, "config": config, "error": f"exit {result.returncode}"})
                continue
            rows.append(json.loads(lines[-1].removeprefix("HARNESS_ROW ")))
            print(f"{size} {config}: {rows[-1].get('wall_s', float('nan')):.1f} s", flush=True)
    table = add_ratios(pd.DataFrame(rows))
    if args.save_fits:
        table = add_agreement(table, out / "fits")
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    table.to_csv(out / "harness.csv", index=False)
    settings = f"chains={args.chains}, draws={args.draws}, tune={args.tune}"
    header = f"Measured {stamp} on {os.cpu_count()} CPU cores; {settings}\n\n"
    (out / "harness.md").write_text(header + markdown_table(table.round(4)) + "\n")
    print(header + table.round(3).to_string(index=False))


def add_agreement(table: pd.DataFrame, fits: Path) -> pd.DataFrame:
    """Posterior means of the float64 row against the default's, in combined Monte Carlo SEs."""
    import xarray as xr

    for size in table["size"].unique():
        paths = [fits / f"{size}_{config}.nc" for config in ("package_nuts", "package_nuts_float64")]
        if not all(path.exists() for path in paths):
            continue
        posteriors = [xr.open_datatree(path, engine="h5netcdf")["posterior"].to_dataset() for path in paths]
        agreement = posterior_agreement(*posteriors)
        row = table.index[(table["size"] == size) & (table["config"] == "package_nuts_float64")]
        table.loc[row, "max_z_vs_default"] = agreement["max_abs_z"]
        table.loc[row, "share_z_over_3"] = agreement["share_over_3"]
    return table


def run_in_process(config: str, size: str, args: argparse.Namespace) -> dict:
    """One configuration in this process (``--smoke``): its error, if any, becomes the row's."""
    extra = {"pyirt_python": args.pyirt_python, "pyirt_epochs": args.pyirt_epochs}
    if args.save_fits:
        extra["save_to"] = Path(args.out) / "fits" / f"{size}_{config}.nc"
    try:
        row = run_one(config, size, args.smoke, args.chains, args.draws, args.tune, **extra)
    except Exception as error:  # the table records it, as for a failed subprocess
        print(f"{size} {config}: {error!r}", file=sys.stderr)
        return {"size": size, "config": config, "error": type(error).__name__}
    print(f"{size} {config}: {row.get('wall_s', float('nan')):.1f} s", flush=True)
    return row


def add_ratios(table: pd.DataFrame) -> pd.DataFrame:
    """ESS/s and wall-time ratios against the reference model of the same size."""
    if "min_ess_per_s" not in table:
        return table
    for _, part in table.groupby("size"):
        reference = part[part["config"] == "reference_pymc"]
        if reference.empty or "min_ess_per_s" not in reference:
            continue
        ref = reference.iloc[0]
        index = part.index
        table.loc[index, "ess_per_s_ratio"] = part["min_ess_per_s"] / ref["min_ess_per_s"]
        table.loc[index, "wall_ratio"] = part["wall_s"] / ref["wall_s"]
    for _, part in table.groupby("size"):
        nuts = part[part["config"].isin(list(NUTS_VARIANTS))]
        nuts = nuts[nuts["wall_s"].notna()] if "wall_s" in nuts else nuts.iloc[:0]
        if "min_bulk_ess" in nuts:  # a failed row is no choice
            nuts = nuts[nuts["min_bulk_ess"].notna()]
        default = nuts[nuts["config"] == "package_nuts"]
        if len(default) and len(nuts) > 1:
            ratio = default["wall_s"].iloc[0] / nuts["wall_s"].min()
            table.loc[default.index, "default_vs_best_wall"] = ratio
        float64 = nuts[nuts["config"] == "package_nuts_float64"]
        if len(default) and len(float64):
            ratio = default["min_ess_per_s"].iloc[0] / float64["min_ess_per_s"].iloc[0]
            table.loc[default.index, "ess_per_s_vs_float64"] = ratio
        planted = part.set_index("config").reindex(list(PLANTED_SPECS))
        if "min_ess_per_s" in planted and planted["min_ess_per_s"].notna().all():
            ratio = planted.loc["planted_2pl", "min_ess_per_s"] / planted.loc["planted_4pl", "min_ess_per_s"]
            table.loc[part.index[part["config"] == "planted_4pl"], "cost_vs_2pl"] = ratio
    return table


if __name__ == "__main__":
    main()
