"""The ``benchmirt`` command line: a thin layer over the Python API."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

EPILOG = """examples:
  benchmirt demo --out demo_output                 simulate, fit (ADVI), write a report folder
  benchmirt simulate --scale 1.0 --out data/benchmirt_simulated.nc
  benchmirt info responses.csv --item-metadata items.csv
  benchmirt fit data/benchmirt_simulated.nc --dims 2 --method advi --out fit.nc
  benchmirt report fit.nc --out report/
  benchmirt specs                                  list the model specs in models/
  benchmirt cv data/benchmirt_simulated.nc --dims 1 2 3 --folds 10 --out cv.csv
  benchmirt select fit.nc --fraction 0.1 --method information --out items.csv
  benchmirt cv data.nc --dims 1 2 --workers 2      folds on a local Dask cluster
  benchmirt cv data.nc --scheduler tcp://host:8786 folds on an existing Dask scheduler
"""


def _add_data_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "data",
        help="responses: .nc (ResponseMatrix), CSV/Parquet, .jsonl, or a "
        "folder of lm-evaluation-harness logs",
    )
    parser.add_argument(
        "--format", default="auto", choices=["auto", "long", "wide", "wide_items", "pyirt", "lm_eval"]
    )
    parser.add_argument("--item-metadata", default=None, help="item metadata table")
    parser.add_argument("--benchmark", default=None, help="single benchmark name for all items")
    parser.add_argument(
        "--binarize", type=float, default=None, help="threshold for continuous scores (score >= T is 1)"
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests)."""
    parser = argparse.ArgumentParser(
        prog="benchmirt",
        description="Bayesian multidimensional IRT audits of LLM benchmarks, item by item.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser("demo", help="simulate reduced BenchMIRT data, fit it, write a report")
    demo.add_argument("--out", default="demo_output", help="output folder")
    demo.add_argument("--scale", type=float, default=0.03, help="share of the 34k items to simulate")
    demo.add_argument("--method", default="advi", choices=["nuts", "advi", "map"])
    demo.add_argument("--seed", type=int, default=1)

    sim = sub.add_parser("simulate", help="write the built-in simulated data set")
    sim.add_argument("--scale", type=float, default=1.0)
    sim.add_argument("--llms", type=int, default=100)
    sim.add_argument("--seed", type=int, default=20260301)
    sim.add_argument("--out", required=True, help="output .nc file")

    info = sub.add_parser("info", help="summarise a response data set")
    _add_data_args(info)

    fit = sub.add_parser("fit", help="fit the hierarchical MIRT model")
    _add_data_args(fit)
    fit.add_argument("--dims", type=int, default=2)
    _add_fit_settings_args(fit, draws=1000)
    fit.add_argument("--restarts", type=int, default=1)
    fit.add_argument("--seed", type=int, default=None)
    fit.add_argument("--out", required=True, help="output .nc or .zarr")

    report = sub.add_parser("report", help="write an HTML trace report for a fit")
    report.add_argument("fit", help="a fit written by 'benchmirt fit'")
    report.add_argument("--out", required=True, help="output folder")

    sub.add_parser("specs", help="list the model specs shipped in models/")

    select = sub.add_parser("select", help="choose a small informative item subset from a fit")
    select.add_argument("fit", help="a fit written by 'benchmirt fit'")
    size = select.add_mutually_exclusive_group(required=True)
    size.add_argument("--fraction", type=float, help="share of items to keep")
    size.add_argument("--n-items", type=int, help="number of items to keep")
    select.add_argument("--method", default="information", choices=["published", "information", "random"])
    select.add_argument("--dimension", default=None, help="select for one dimension only")
    select.add_argument("--seed", type=int, default=0)
    select.add_argument("--out", required=True, help="output CSV: the kept items with their rankings")

    cv = sub.add_parser("cv", help="cross-validate MIRT models against baselines")
    _add_data_args(cv)
    cv.add_argument("--dims", type=int, nargs="+", default=[1, 2, 3])
    cv.add_argument("--folds", type=int, default=10)
    cv.add_argument("--scheme", default="cells", choices=["cells", "llms", "items"])
    _add_fit_settings_args(cv, draws=100)
    cv.add_argument("--category", default=None, help="item coordinate for the LLM x category baseline")
    cv.add_argument("--seed", type=int, default=42)
    cv.add_argument("--results-dir", default=None, help="save each fold fit here; reruns resume")
    _add_executor_args(cv)
    cv.add_argument("--out", required=True, help="output CSV (tidy table); a _summary.csv is written too")
    return parser


def _add_fit_settings_args(parser: argparse.ArgumentParser, *, draws: int) -> None:
    """The settings of :func:`fit_posterior`, one flag each, shared by every command that fits."""
    group = parser.add_argument_group(
        "fit settings (as fit_posterior's method, nuts=, advi=, spec, likelihood)"
    )
    group.add_argument("--method", default="advi", choices=["nuts", "advi", "fullrank_advi", "map"])
    group.add_argument("--draws", type=int, default=draws, help="NUTS draws per chain, or ADVI draws from q")
    group.add_argument("--spec", default=None, help="model spec name or .toml path")
    group.add_argument("--likelihood", default="cells", choices=["auto", "fused", "dense", "cells"])
    group.add_argument(
        "--sampler", default="nutpie", choices=["nutpie", "numpyro", "pymc"], help="NUTS back end"
    )
    group.add_argument("--tune", type=int, default=1000, help="NUTS tuning iterations per chain")
    group.add_argument("--chains", type=int, default=4, help="NUTS chains per restart")
    group.add_argument("--target-accept", type=float, default=0.8, help="NUTS target acceptance")
    group.add_argument(
        "--init", default="prior", choices=["prior", "advi"], help="NUTS start: sampler default or ADVI mean"
    )
    group.add_argument("--max-treedepth", type=int, default=10, help="NUTS tree-depth cap")
    group.add_argument("--thin", type=int, default=1, help="NUTS: keep every THIN-th of DRAWS × THIN")
    group.add_argument("--advi-max-steps", type=int, default=20000, help="ADVI step budget")
    group.add_argument("--advi-tolerance", type=float, default=1e-3, help="ADVI relative-ELBO stopping rule")
    group.add_argument("--advi-learning-rate", type=float, default=0.02, help="ADVI Adam step size")


def _fit_settings(args: argparse.Namespace) -> dict:
    """``method``, ``nuts``, ``advi``, ``spec`` and ``likelihood`` for fit_posterior / cross_validate."""
    from benchmirt_bayes.inference.settings import AdviSettings, NutsSettings

    nuts = advi = None
    if args.method == "nuts":
        nuts = NutsSettings(
            sampler=args.sampler,
            draws=args.draws,
            tune=args.tune,
            chains=args.chains,
            target_accept=args.target_accept,
            max_treedepth=args.max_treedepth,
            thin=args.thin,
            init=args.init,
        )
    if args.method in ("advi", "fullrank_advi") or (nuts is not None and nuts.init == "advi"):
        advi = AdviSettings(
            draws=args.draws if nuts is None else AdviSettings.draws,
            max_steps=args.advi_max_steps,
            tolerance=args.advi_tolerance,
            learning_rate=args.advi_learning_rate,
        )
    return {
        "method": args.method,
        "nuts": nuts,
        "advi": advi,
        "spec": args.spec,
        "likelihood": args.likelihood,
    }


def _add_executor_args(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, default=None, help="start a local Dask cluster with N workers")
    where.add_argument("--scheduler", default=None, help="address of a running Dask scheduler")
    where.add_argument("--serial", action="store_true", help="run every fit in this process")


def _executor_context(args: argparse.Namespace):
    import contextlib

    from benchmirt_bayes.batch import DaskExecutor

    if args.workers is not None or args.scheduler is not None:
        return DaskExecutor(workers=args.workers, scheduler=args.scheduler)
    return contextlib.nullcontext("serial" if args.serial else "auto")


def _load_data(args: argparse.Namespace):
    from benchmirt_bayes.data.loaders import load_responses
    from benchmirt_bayes.simulation.datasets import read_response_netcdf

    path = Path(args.data)
    if path.suffix == ".nc":
        return read_response_netcdf(path)
    return load_responses(
        path,
        format=args.format,
        item_metadata=args.item_metadata,
        benchmark=args.benchmark,
        binarize=args.binarize,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``benchmirt`` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    from benchmirt_bayes.errors import PosteriorFileError, ResponseDataError

    try:
        return _COMMANDS[args.command](args)
    except (ResponseDataError, PosteriorFileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _demo(args: argparse.Namespace) -> int:
    from benchmirt_bayes.demo import run_demo

    folder = run_demo(Path(args.out), scale=args.scale, method=args.method, seed=args.seed)
    print(f"report written to {folder / 'index.html'}")
    return 0


def _simulate(args: argparse.Namespace) -> int:
    from benchmirt_bayes.simulation.datasets import write_simulated

    path = write_simulated(Path(args.out), scale=args.scale, n_llms=args.llms, seed=args.seed)
    print(f"wrote {path}")
    return 0


def _info(args: argparse.Namespace) -> int:
    responses = _load_data(args)
    print(responses)
    print(responses.summary().to_string())
    return 0


def _fit(args: argparse.Namespace) -> int:
    from benchmirt_bayes.inference.fit import fit_posterior
    from benchmirt_bayes.io import save_posterior

    responses = _load_data(args)
    print(f"fitting {responses} with {args.dims} dimension(s), method={args.method}")
    start = time.perf_counter()
    fit = fit_posterior(
        responses, args.dims, restarts=args.restarts, random_seed=args.seed, **_fit_settings(args)
    )
    save_posterior(fit, args.out)
    print(f"done in {time.perf_counter() - start:.1f} s; posterior written to {args.out}")
    return 0


def _report(args: argparse.Namespace) -> int:
    from benchmirt_bayes.io import load_posterior
    from benchmirt_bayes.reports.report import write_report

    fit = load_posterior(args.fit)
    page = write_report(fit, Path(args.out))
    print(f"report written to {page}")
    return 0


def _specs(args: argparse.Namespace) -> int:
    from benchmirt_bayes.model.spec import available_specs, load_spec

    for name in available_specs():
        print(f"{name:32s} {load_spec(name).description}")
    return 0


def _select(args: argparse.Namespace) -> int:
    from benchmirt_bayes.analyses.items import rank_items
    from benchmirt_bayes.analyses.selection import select_items
    from benchmirt_bayes.io import load_posterior

    fit = load_posterior(args.fit)
    kept = select_items(
        fit, args.fraction, args.n_items, method=args.method, dimension=args.dimension, seed=args.seed
    )
    table = rank_items(fit, dimension=args.dimension).loc[kept]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out)
    counts = table["benchmark"].value_counts().to_string()
    total = fit["posterior"].sizes["item"]
    print(f"kept {len(kept)} of {total} items ({args.method}); per benchmark:\n{counts}")
    print(f"wrote {out}")
    return 0


def _cv(args: argparse.Namespace) -> int:
    from benchmirt_bayes.workflows.crossval import choose_n_dims, cross_validate

    responses = _load_data(args)
    print(f"cross-validating {responses}: scheme={args.scheme}, dims={args.dims}, folds={args.folds}")
    start = time.perf_counter()
    with _executor_context(args) as executor:
        result = cross_validate(
            responses,
            n_dims=args.dims,
            folds=args.folds,
            scheme=args.scheme,
            seed=args.seed,
            category=args.category,
            **_fit_settings(args),
            executor=executor,
            results_dir=args.results_dir,
        )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    result.table.to_csv(out, index=False)
    summary_path = out.with_name(out.stem + "_summary.csv")
    result.summary().to_csv(summary_path)
    result.calibration.to_csv(out.with_name(out.stem + "_calibration.csv"), index=False)
    print(result.wide().round(4).to_string())
    print(choose_n_dims(result))
    print(f"done in {time.perf_counter() - start:.1f} s; wrote {out} and {summary_path}")
    return 0


_COMMANDS = {
    "cv": _cv,
    "select": _select,
    "demo": _demo,
    "simulate": _simulate,
    "info": _info,
    "fit": _fit,
    "report": _report,
    "specs": _specs,
}


if __name__ == "__main__":
    raise SystemExit(main())
