"""The ``benchmirt`` command line: a thin layer over the Python API.

Every argument and every output location is checked before any data is read or any model
fitted; a bad one is a one-line ``error: ...`` with exit status 2 (``--debug`` shows the
traceback instead).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

EPILOG = """examples:
  benchmirt demo --out demo_output                 simulate, fit, write a report folder
  benchmirt simulate --scale 1.0 --out data/benchmirt_simulated.nc
  benchmirt info results_folder/                   recognise the format and summarise the data
  benchmirt fit data/benchmirt_simulated.nc --dims 2 --method advi --out fit.nc
  benchmirt report fit.nc --out report/
  benchmirt audit fit.nc --out audit/              abilities, item fit, audits, as CSV tables
  benchmirt rank fit.nc --within benchmark --out ranking.csv
  benchmirt select fit.nc --fraction 0.1 --method information --out subset.json
  benchmirt score fit.nc new_llm_results.csv --out scores.csv
  benchmirt cv data/benchmirt_simulated.nc --dims 1 2 3 --folds 10 --out cv.csv
  benchmirt cv data.nc --dims 1 2 --workers 2      folds on a local Dask cluster
  benchmirt specs                                  list the model specs in models/
"""


class UsageError(ValueError):
    """A bad argument or output location, found before any work."""


# ---------------------------------------------------------------- arg types
def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _at_least_two(text: str) -> int:
    value = _positive_int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"must be at least 2, got {value}")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {value}")
    return value


def _auto_or_positive_int(text: str) -> int | str:
    return text if text == "auto" else _positive_int(text)


def _pairs(values: list[str] | None, what: str) -> str | dict[str, str] | None:
    """``["acc"]`` → ``"acc"``; ``["a=acc", "b=em"]`` → ``{"a": "acc", "b": "em"}``."""
    if not values:
        return None
    if len(values) == 1 and "=" not in values[0]:
        return values[0]
    pairs = {}
    for value in values:
        key, sep, name = value.partition("=")
        if not sep or not key or not name:
            raise UsageError(f"{what}: expected one name or KEY=VALUE pairs, got {value!r}")
        pairs[key] = name
    return pairs


# ------------------------------------------------------------ output checks
OUTPUT_MARKER = ".benchmirt-output"
"""A file in every output folder the command line writes: such a folder may be replaced."""
INPUT_ARGS = ("data", "fit", "responses", "item_metadata", "llm_metadata", "full_scores", "items")


def _probe(folder: Path) -> None:
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".benchmirt_probe_"):
            pass
    except OSError as exc:
        raise UsageError(f"cannot write in {folder} ({exc.strerror or exc})") from None


def _not_an_input(path: Path, args: argparse.Namespace | None) -> None:
    if args is None:
        return
    target = path.resolve()
    for name in INPUT_ARGS:
        value = getattr(args, name, None)
        if value is not None and Path(value).resolve() == target:
            raise UsageError(
                f"--out {path} is the input {name.replace('_', ' ')} {value}: it would be replaced; "
                "choose another --out"
            )


def _ours_or_overwrite(path: Path, args: argparse.Namespace | None) -> None:
    """An existing output is replaced only if benchmirt wrote it (a fit, a marked folder) or --overwrite."""
    from benchmirt_bayes.io import is_fit_file

    if args is None or getattr(args, "overwrite", False) or not path.exists():
        return
    if path.suffix in (".nc", ".zarr") and is_fit_file(path):
        return
    if path.is_dir() and ((path / OUTPUT_MARKER).exists() or not any(path.iterdir())):
        return
    if path.is_dir():
        what = "a folder with files benchmirt did not write"
    else:
        what = "a file that is not a fit" if path.suffix in (".nc", ".zarr") else "a file"
    raise UsageError(f"--out {path} exists and is {what}: choose another --out, or pass --overwrite")


def writable_file(
    path: str | Path, suffixes: tuple[str, ...], args: argparse.Namespace | None = None
) -> Path:
    """Check that ``path`` can be written (creating its folder); raise :class:`UsageError` if not.

    With ``args``: ``path`` must not be one of the inputs, and an existing file there must be
    a fit (replaced as such) unless ``args.overwrite``.
    """
    path = Path(path)
    name = path.name.lower()
    if not any(name.endswith(s) for s in suffixes):
        raise UsageError(f"--out {path}: use a file ending in {' or '.join(suffixes)}")
    if path.is_dir() and path.suffix != ".zarr":
        raise UsageError(f"--out {path} is a folder, not a file")
    _not_an_input(path, args)
    _ours_or_overwrite(path, args)
    _writable_folder_path(path.parent)
    return path


def writable_folder(path: str | Path, args: argparse.Namespace | None = None) -> Path:
    """Check that ``path`` is (or can be made) a folder we can write in (``args`` as in writable_file)."""
    path = Path(path)
    _not_an_input(path, args)
    _ours_or_overwrite(path, args)
    _writable_folder_path(path)
    return path


def _writable_folder_path(folder: Path) -> None:
    existing = folder
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(f"{existing} is a file, so {folder} cannot be a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create the folder {folder} ({exc.strerror or exc})") from None
    _probe(folder)


def write_file_atomically(path: str | Path, write: Callable[[Path], Any]) -> Path:
    """``write(partial)`` to a hidden sibling, renamed to ``path`` only when complete.

    A failed or interrupted write (a full disk) leaves no partial file at ``path``.
    """
    path = Path(path)
    partial = path.with_name(f".{path.stem}.partial{path.suffix}")  # the suffix chooses the format
    try:
        write(partial)
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)
    return path


def write_folder_atomically(folder: str | Path, write: Callable[[Path], Any]) -> Any:
    """``write(partial_folder)``, then each complete file moved into ``folder``, marked as benchmirt's.

    Files of ``folder`` that the command does not write stay as they are; a failed write
    leaves ``folder`` untouched.
    """
    import shutil

    from benchmirt_bayes.io import replace_folder

    folder = Path(folder).resolve()  # "." has no name to put a sibling beside
    partial = folder.with_name(f".{folder.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        partial.mkdir(parents=True)
        result = write(partial)
        (partial / OUTPUT_MARKER).write_text("written by the benchmirt command line\n")
        folder.mkdir(parents=True, exist_ok=True)
        for entry in partial.iterdir():
            if entry.is_dir():
                replace_folder(entry, folder / entry.name)
            else:
                entry.replace(folder / entry.name)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return result


def readable(path: str | Path, what: str) -> Path:
    """Check that an input exists."""
    path = Path(path)
    if not path.exists():
        raise UsageError(f"{what} not found: {path}")
    return path


# ------------------------------------------------------------------- parser
def _add_data_args(parser: argparse.ArgumentParser) -> None:
    from benchmirt_bayes.data.loaders import FORMATS

    parser.add_argument(
        "data",
        help="responses: .nc (ResponseMatrix), CSV/TSV/Parquet, .jsonl, or a folder of results "
        "(lm-evaluation-harness, HELM, OpenCompass, Open LLM Leaderboard details)",
    )
    group = parser.add_argument_group("reading the data (as load_responses)")
    group.add_argument("--format", default="auto", choices=FORMATS)
    group.add_argument("--item-metadata", default=None, help="item metadata table (item, benchmark, ...)")
    group.add_argument("--llm-metadata", default=None, help="LLM metadata table (llm, family, ...)")
    group.add_argument("--benchmark", default=None, help="single benchmark name for all items")
    group.add_argument(
        "--binarize", type=float, default=None, help="threshold for continuous scores (score >= T is 1)"
    )
    group.add_argument(
        "--metric", nargs="+", default=None, help="per-sample metric: NAME, or TASK=NAME pairs"
    )
    group.add_argument("--filter", nargs="+", default=None, help="lm-eval filter: NAME, or TASK=NAME pairs")
    group.add_argument("--split", default=None, help="HELM: the split to read (default: the main one)")
    group.add_argument(
        "--run",
        nargs="+",
        default=None,
        help="lm-eval: the rerun to read, by the date in its file names: DATE, or TASK=DATE pairs "
        "(default newest)",
    )
    group.add_argument(
        "--response-type", nargs="+", default=None, help="TYPE for all items, or BENCHMARK=TYPE pairs"
    )
    group.add_argument("--llm-col", default="llm", help="LLM id column")
    group.add_argument("--item-col", default="item", help="item id column")
    group.add_argument("--correct-col", default="correct", help="score column of a long table")
    group.add_argument("--subgroup-col", default=None, help="item metadata column to use as subgroup")


def _add_out(parser: argparse.ArgumentParser, **kwargs: Any) -> None:
    """``--out`` and ``--overwrite``, which lets an existing output that is not benchmirt's be replaced."""
    parser.add_argument("--out", **kwargs)
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing --out that benchmirt did not write (an input is never replaced)",
    )


def _add_fit_settings_args(parser: argparse.ArgumentParser) -> None:
    """The settings of :func:`fit_posterior`, one flag each, shared by every command that fits."""
    from benchmirt_bayes.inference.settings import AUTO_NUTS_CELLS

    group = parser.add_argument_group(
        "fit settings (as fit_posterior's method, nuts=, advi=, spec, likelihood)"
    )
    group.add_argument(
        "--method",
        default="auto",
        choices=["auto", "nuts", "advi", "fullrank_advi", "map"],
        help=f"default auto: NUTS on small data (at most {AUTO_NUTS_CELLS:,} observed cells), else ADVI",
    )
    group.add_argument(
        "--draws",
        type=_positive_int,
        default=None,
        help="NUTS draws per chain, or ADVI draws from q (default: fit_posterior's; in cv, "
        "ADVI fold fits take 100)",
    )
    group.add_argument("--spec", default=None, help="model spec name or .toml path")
    group.add_argument(
        "--asymptotes",
        nargs="+",
        default=None,
        help="binary items' model, overriding the spec's [binary] section: 2pl, 3pl (a floor), 4pl "
        "(a floor and a ceiling) or auto (fit fits each and keeps what PSIS-LOO prefers per "
        "benchmark), for every benchmark or as BENCHMARK=MODEL pairs",
    )
    group.add_argument(
        "--n-options",
        nargs="+",
        default=None,
        help="answer options per benchmark (BENCHMARK=N pairs): the floors' chance rate 1/N",
    )
    group.add_argument(
        "--likelihood",
        default="auto",
        choices=["auto", "fused", "fused64", "dense", "cells"],
        help="likelihood form (default auto: chosen from the matrix's density)",
    )
    group.add_argument(
        "--sampler", default="nutpie", choices=["nutpie", "numpyro", "pymc"], help="NUTS back end"
    )
    group.add_argument(
        "--tune", type=_non_negative_int, default=1000, help="NUTS tuning iterations per chain"
    )
    group.add_argument("--chains", type=_positive_int, default=4, help="NUTS chains per restart")
    group.add_argument("--target-accept", type=_fraction, default=0.8, help="NUTS target acceptance")
    group.add_argument(
        "--init",
        default="auto",
        choices=["auto", "prior", "advi"],
        help="NUTS start: sampler default or ADVI mean (default auto: from the data's size)",
    )
    group.add_argument(
        "--max-treedepth",
        type=_auto_or_positive_int,
        default="auto",
        help="NUTS tree-depth cap (default auto)",
    )
    group.add_argument(
        "--thin",
        type=_auto_or_positive_int,
        default="auto",
        help="NUTS: keep every THIN-th of DRAWS × THIN (default auto)",
    )
    group.add_argument("--advi-max-steps", type=_positive_int, default=20000, help="ADVI step budget")
    group.add_argument(
        "--advi-stopping",
        choices=["noise", "relative"],
        default="noise",
        help="ADVI stopping rule: the loss trend against its noise (default) or the relative change",
    )
    group.add_argument(
        "--advi-tolerance",
        type=_positive_float,
        default=None,
        help="threshold of the ADVI stopping rule (default: 1.0 noise SD, or 1e-3 relative)",
    )
    group.add_argument(
        "--advi-polish-steps",
        type=_non_negative_int,
        default=1000,
        help="ADVI steps at a tenth of the learning rate after the search (default 1000)",
    )
    group.add_argument("--advi-learning-rate", type=_positive_float, default=0.02, help="ADVI Adam step size")


def _add_executor_args(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--workers", type=_positive_int, default=None, help="start a local Dask cluster with N workers"
    )
    where.add_argument("--scheduler", default=None, help="address of a running Dask scheduler")
    where.add_argument("--serial", action="store_true", help="run every fit in this process")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests)."""
    from benchmirt_bayes import __version__

    parser = argparse.ArgumentParser(
        prog="benchmirt",
        description="Bayesian multidimensional IRT audits of LLM benchmarks, item by item.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"benchmirt_bayes {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser("demo", help="simulate reduced BenchMIRT data, fit it, write a report")
    _add_out(demo, default="demo_output", help="output folder")
    demo.add_argument("--scale", type=_fraction, default=0.03, help="share of the 34k items to simulate")
    demo.add_argument("--method", default="advi", choices=["nuts", "advi", "map"])
    demo.add_argument("--seed", type=_non_negative_int, default=1)

    sim = sub.add_parser("simulate", help="write the built-in simulated data set")
    sim.add_argument("--scale", type=_fraction, default=1.0)
    sim.add_argument("--llms", type=_at_least_two, default=100)
    sim.add_argument("--seed", type=_non_negative_int, default=20260301)
    _add_out(sim, required=True, help="output .nc file")

    info = sub.add_parser("info", help="recognise a data set's format and summarise it")
    _add_data_args(info)

    fit = sub.add_parser("fit", help="fit the hierarchical MIRT model")
    _add_data_args(fit)
    fit.add_argument("--dims", type=_positive_int, default=2)
    _add_fit_settings_args(fit)
    fit.add_argument("--restarts", type=_positive_int, default=1)
    fit.add_argument("--seed", type=_non_negative_int, default=None)
    _add_out(fit, required=True, help="output .nc or .zarr")

    report = sub.add_parser("report", help="write an HTML trace report for a fit")
    report.add_argument("fit", help="a fit written by 'benchmirt fit'")
    _add_out(report, required=True, help="output folder")

    audit = sub.add_parser("audit", help="abilities, benchmark correlations, item fit and audits as CSV")
    audit.add_argument("fit", help="a fit written by 'benchmirt fit'")
    _add_out(audit, required=True, help="output folder")
    audit.add_argument("--llm-metadata", default=None, help="LLM metadata table (llm, family, ...)")
    audit.add_argument("--llm-col", default="llm", help="LLM id column of the metadata")
    audit.add_argument(
        "--group-by", default=None, help="LLM metadata column for differential item functioning"
    )
    audit.add_argument("--pairs", nargs="+", default=None, help="LLM pairs to compare: A:B ...")
    audit.add_argument("--draws", type=_positive_int, default=200, help="posterior draws used")
    audit.add_argument("--seed", type=_non_negative_int, default=0)

    rank = sub.add_parser("rank", help="rank items by information, discrimination or difficulty")
    rank.add_argument("fit", help="a fit written by 'benchmirt fit'")
    rank.add_argument("--by", default="information", choices=["information", "discrimination", "difficulty"])
    rank.add_argument("--within", default=None, choices=["benchmark"])
    rank.add_argument("--dimension", default=None, help="rank along one dimension only")
    rank.add_argument("--top-k", type=_positive_int, default=10)
    _add_out(rank, required=True, help="output CSV")

    select = sub.add_parser("select", help="choose a small informative item subset from a fit")
    select.add_argument("fit", help="a fit written by 'benchmirt fit'")
    size = select.add_mutually_exclusive_group(required=True)
    size.add_argument("--fraction", type=_fraction, help="share of items to keep")
    size.add_argument("--n-items", type=_positive_int, help="number of items to keep in all")
    size.add_argument(
        "--per-benchmark", type=_positive_int, help="stepwise: number of items to keep in each benchmark"
    )
    select.add_argument(
        "--method",
        default="information",
        choices=["published", "information", "random", "stepwise"],
        help="stepwise: the items that best predict full-benchmark scores (needs --full-scores; "
        "its size is --per-benchmark or --fraction of each benchmark)",
    )
    select.add_argument(
        "--full-scores", default=None, help="stepwise: CSV with an llm column and one column per benchmark"
    )
    select.add_argument("--llm-col", default="llm", help="the LLM column of --full-scores")
    select.add_argument("--dimension", default=None, help="select for one dimension only")
    select.add_argument("--seed", type=_non_negative_int, default=0)
    _add_out(
        select,
        required=True,
        help="output: .json (item ids per benchmark, for an evaluation harness), .txt (one id per "
        "line) or .csv (the kept items with their rankings)",
    )

    score = sub.add_parser("score", help="place new LLMs from their responses on the fitted items")
    score.add_argument("fit", help="a fit written by 'benchmirt fit'")
    score.add_argument("responses", help="the new LLMs' responses: long (llm, item, correct) or wide table")
    score.add_argument("--llm-col", default="llm")
    score.add_argument("--item-col", default="item")
    score.add_argument("--correct-col", default="correct")
    score.add_argument("--draws", type=_positive_int, default=200, help="posterior draws of the items used")
    score.add_argument("--seed", type=_non_negative_int, default=0)
    _add_out(score, required=True, help="output CSV")

    link = sub.add_parser("link", help="learn the link from a kept item subset to full-benchmark scores")
    link.add_argument("fit", help="a fit written by 'benchmirt fit'")
    link.add_argument("--full-scores", required=True, help="CSV: an llm column and one column per benchmark")
    chosen = link.add_mutually_exclusive_group()
    chosen.add_argument(
        "--items", default=None, help="the kept subset: .json or .txt from 'benchmirt select'"
    )
    chosen.add_argument(
        "--per-benchmark",
        type=_positive_int,
        default=None,
        help="let the link choose this many items per benchmark (chosen again in each fold of its "
        "cross-fitting where the rule is stepwise, so the interval counts the choice)",
    )
    link.add_argument(
        "--method",
        choices=["auto", "stepwise", "random", "stratified"],
        default="auto",
        help="with --per-benchmark: how the items are chosen (auto: stepwise with 1,000 known scores)",
    )
    link.add_argument(
        "--subset-out", default=None, help="with --per-benchmark: write the chosen items (.json, .txt)"
    )
    link.add_argument("--llm-col", default="llm")
    link.add_argument("--draws", type=_positive_int, default=20, help="posterior draws of the items used")
    link.add_argument("--seed", type=_non_negative_int, default=0)
    _add_out(link, required=True, help="output .nc: the fit carrying the link")

    sub.add_parser("specs", help="list the model specs shipped in models/")

    cv = sub.add_parser("cv", help="cross-validate MIRT models against baselines")
    _add_data_args(cv)
    cv.add_argument("--dims", type=_positive_int, nargs="+", default=[1, 2, 3])
    cv.add_argument("--folds", type=_at_least_two, default=10)
    cv.add_argument("--scheme", default="cells", choices=["cells", "llms", "items"])
    _add_fit_settings_args(cv)
    cv.add_argument("--category", default=None, help="item coordinate for the LLM x category baseline")
    cv.add_argument("--seed", type=_non_negative_int, default=42)
    cv.add_argument("--results-dir", default=None, help="save each fold fit here; reruns resume")
    _add_executor_args(cv)
    _add_out(cv, required=True, help="output CSV (tidy table); a _summary.csv is written too")
    return parser


def _fit_settings(args: argparse.Namespace, advi_draws: int | None = None) -> dict[str, Any]:
    """``method``, ``nuts``, ``advi``, ``spec`` and ``likelihood`` for fit_posterior / cross_validate.

    ``advi_draws``: ADVI's draws where ``--draws`` is not given (default: AdviSettings').
    """
    from benchmirt_bayes.inference.settings import AdviSettings, NutsSettings

    default_advi_draws = AdviSettings.draws if advi_draws is None else advi_draws

    nuts = advi = None
    if args.method in ("auto", "nuts"):
        nuts = NutsSettings(
            sampler=args.sampler,
            draws="auto" if args.draws is None else args.draws,
            tune=args.tune,
            chains=args.chains,
            target_accept=args.target_accept,
            max_treedepth=args.max_treedepth,
            thin=args.thin,
            init=args.init,
        )
    if args.method in ("auto", "advi", "fullrank_advi") or (nuts is not None and nuts.init != "prior"):
        advi = AdviSettings(
            draws=default_advi_draws if args.method == "nuts" or args.draws is None else args.draws,
            max_steps=args.advi_max_steps,
            stopping=args.advi_stopping,
            tolerance=args.advi_tolerance,
            polish_steps=args.advi_polish_steps,
            learning_rate=args.advi_learning_rate,
        )
    return {
        "method": args.method,
        "nuts": nuts,
        "advi": advi,
        "spec": _spec(args),
        "likelihood": args.likelihood,
    }


def _spec(args: argparse.Namespace) -> Any:
    """``--spec`` with the ``[binary]`` fields of ``--asymptotes`` and ``--n-options`` over it."""
    from benchmirt_bayes.model.spec import load_spec
    from benchmirt_bayes.response_types import DEFAULT_TYPE

    asymptotes = _pairs(args.asymptotes, "--asymptotes")
    options = _pairs(args.n_options, "--n-options")
    if asymptotes is None and options is None:
        return args.spec
    binary: dict[str, Any] = {}
    if isinstance(asymptotes, str):
        binary["asymptotes"] = asymptotes
    elif asymptotes is not None:
        binary["benchmarks"] = asymptotes
    if isinstance(options, str):
        raise UsageError(f"--n-options: expected BENCHMARK=N pairs, got {options!r}")
    if options is not None:
        try:
            binary["n_options"] = {bench: int(n) for bench, n in options.items()}
        except ValueError:
            raise UsageError(f"--n-options: expected whole numbers, got {options}") from None
    try:
        spec = load_spec(args.spec)
        section = spec.settings.get(DEFAULT_TYPE, {})
        if "benchmarks" in binary:
            binary["benchmarks"] = {**section.get("benchmarks", {}), **binary["benchmarks"]}
        if "n_options" in binary:
            binary["n_options"] = {**section.get("n_options", {}), **binary["n_options"]}
        return spec.with_overrides({DEFAULT_TYPE: binary})
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _has_auto_asymptotes(spec: Any) -> bool:
    """Whether a spec (name, path or object) leaves some benchmark's binary model to the data."""
    from benchmirt_bayes.model.spec import load_spec
    from benchmirt_bayes.response_types import DEFAULT_TYPE
    from benchmirt_bayes.response_types.asymptotes import leaves_choice_to_data

    return leaves_choice_to_data(load_spec(spec).settings.get(DEFAULT_TYPE, {}))


def _loader_options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "format": args.format,
        "item_metadata": args.item_metadata,
        "llm_metadata": args.llm_metadata,
        "benchmark": args.benchmark,
        "binarize": args.binarize,
        "llm_col": args.llm_col,
        "item_col": args.item_col,
        "correct_col": args.correct_col,
        "subgroup_col": args.subgroup_col,
        "metric": _pairs(args.metric, "--metric"),
        "filter": _pairs(args.filter, "--filter"),
        "split": args.split,
        "run": _pairs(args.run, "--run"),
        "response_type": _pairs(args.response_type, "--response-type"),
    }


def _check_data_args(args: argparse.Namespace) -> None:
    readable(args.data, "data")
    for name in ("item_metadata", "llm_metadata"):
        if getattr(args, name, None) is not None:
            readable(getattr(args, name), name.replace("_", " "))
    options = _loader_options(args)  # malformed pairs
    if Path(args.data).suffix == ".nc":
        defaults = {"format": "auto", "llm_col": "llm", "item_col": "item", "correct_col": "correct"}
        ignored = [
            "--" + name.replace("_", "-")
            for name, value in options.items()
            if name != "llm_metadata" and value is not None and value != defaults.get(name)
        ]
        if ignored:
            raise UsageError(
                f"{', '.join(ignored)} read tables and result folders; {args.data} is a ResponseMatrix "
                "(.nc) that carries its own items, types and metadata (only --llm-metadata applies)"
            )


def _load_data(args: argparse.Namespace):
    from benchmirt_bayes.data.loaders import load_responses, with_llm_metadata
    from benchmirt_bayes.data.tables import read_table
    from benchmirt_bayes.simulation.datasets import read_response_netcdf

    path = Path(args.data)
    if path.suffix == ".nc":
        responses = read_response_netcdf(path)
        if args.llm_metadata is not None:
            responses = with_llm_metadata(responses, read_table(args.llm_metadata), llm_col=args.llm_col)
        return responses
    return load_responses(path, **_loader_options(args))


# ------------------------------------------------------------------ commands
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``benchmirt`` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    from benchmirt_bayes.batch import BatchError
    from benchmirt_bayes.errors import MissingExtraError, PosteriorFileError, ResponseDataError

    command, check = _COMMANDS[args.command]
    try:
        check(args)
        return command(args)
    except (UsageError, ResponseDataError, PosteriorFileError, MissingExtraError, BatchError) as exc:
        if args.debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, KeyError, FileNotFoundError, NotADirectoryError) as exc:
        if args.debug:
            raise
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"error: {message}", file=sys.stderr)
        return 2


def _no_check(args: argparse.Namespace) -> None:
    return None


def _demo(args: argparse.Namespace) -> int:
    from benchmirt_bayes.demo import run_demo

    write_folder_atomically(
        args.out, lambda folder: run_demo(folder, scale=args.scale, method=args.method, seed=args.seed)
    )
    print(f"report written to {Path(args.out) / 'index.html'}")
    return 0


def _simulate(args: argparse.Namespace) -> int:
    from benchmirt_bayes.simulation.datasets import write_simulated

    path = write_file_atomically(
        args.out, lambda partial: write_simulated(partial, scale=args.scale, n_llms=args.llms, seed=args.seed)
    )
    print(f"wrote {path}")
    return 0


def _info(args: argparse.Namespace) -> int:
    from benchmirt_bayes.data.loaders import FORMAT_ATTR, FORMAT_TITLES, READ_ATTR
    from benchmirt_bayes.errors import limit_listing

    responses = _load_data(args)
    attrs = responses.data.attrs
    name = FORMAT_TITLES["netcdf" if Path(args.data).suffix == ".nc" else attrs[FORMAT_ATTR]]
    read = attrs.get(READ_ATTR, "").splitlines()
    print(f"format: {name}")
    if read:
        print("read (per task: what is read, and what the files offer):")
        print("\n".join(f"  {line}" for line in read))
    print(responses)
    print(f"LLMs: {limit_listing(responses.llms, 10)}")
    if responses.llm_coords:
        print(f"LLM metadata: {', '.join(responses.llm_coords)}")
    print(responses.summary().to_string())
    return 0


def _fit(args: argparse.Namespace) -> int:
    from benchmirt_bayes.inference.fit import fit_posterior
    from benchmirt_bayes.io import save_posterior

    responses = _load_data(args)
    settings = _fit_settings(args)
    start = time.perf_counter()
    if _has_auto_asymptotes(settings["spec"]):
        from benchmirt_bayes.workflows.asymptote_fits import choose_asymptotes

        print(f"choosing the binary models of {responses} with {args.dims} dimension(s) by PSIS-LOO (NUTS)")
        choice = choose_asymptotes(
            responses, args.dims, spec=settings["spec"], nuts=settings["nuts"], seed=args.seed or 0
        )
        columns = ["elpd", "elpd_diff", "se_diff", "mcse", "rhat", "recommended"]
        print("screen (every 'auto' benchmark given each candidate):")
        print(choice.comparison.set_index(["benchmark", "model"])[columns].round(2).to_string())
        if len(choice.confirmation):
            print("confirmation (the screen's choices fitted, against the first candidate):")
            print(choice.confirmation.set_index(["benchmark", "model"])[columns].round(2).to_string())
        print(f"chosen: {choice.chosen}")
        fit = choice.fit
    else:
        print(f"fitting {responses} with {args.dims} dimension(s), method={args.method}")
        fit = fit_posterior(responses, args.dims, restarts=args.restarts, seed=args.seed, **settings)
    save_posterior(fit, args.out, overwrite=args.overwrite)
    print(f"done in {time.perf_counter() - start:.1f} s; posterior written to {args.out}")
    return 0


def _check_fit(args: argparse.Namespace) -> None:
    _check_data_args(args)
    writable_file(args.out, (".nc", ".zarr"), args)
    settings = _fit_settings(args)  # settings objects check their values
    if _has_auto_asymptotes(settings["spec"]) and (args.method not in ("auto", "nuts") or args.restarts != 1):
        raise UsageError(
            "'auto' asymptotes are chosen from NUTS fits: use --method nuts (or auto) and one restart"
        )


def _report(args: argparse.Namespace) -> int:
    from benchmirt_bayes.io import load_posterior
    from benchmirt_bayes.reports.report import write_report

    fit = load_posterior(args.fit)
    page = write_folder_atomically(args.out, lambda folder: write_report(fit, folder).relative_to(folder))
    print(f"report written to {Path(args.out) / page}")
    return 0


def _check_fit_and_folder(args: argparse.Namespace) -> None:
    readable(args.fit, "fit")
    writable_folder(args.out, args)


def _audit(args: argparse.Namespace) -> int:
    from benchmirt_bayes.io import load_posterior
    from benchmirt_bayes.workflows.audit_tables import write_audit_tables

    fit = load_posterior(args.fit)

    def write(folder: Path) -> list[Path]:
        written = write_audit_tables(
            fit,
            folder,
            llm_metadata=args.llm_metadata,
            llm_col=args.llm_col,
            group_by=args.group_by,
            pairs=[_pair(p) for p in args.pairs] if args.pairs else None,
            n_draws=args.draws,
            seed=args.seed,
        )
        return [Path(path).relative_to(folder) for path in written]

    for name in write_folder_atomically(args.out, write):
        print(f"wrote {Path(args.out) / name}")
    return 0


def _pair(text: str) -> tuple[str, str]:
    first, sep, second = text.partition(":")
    if not sep or not first or not second:
        raise UsageError(f"--pairs: expected A:B, got {text!r}")
    return first, second


def _check_audit(args: argparse.Namespace) -> None:
    _check_fit_and_folder(args)
    if args.llm_metadata is not None:
        readable(args.llm_metadata, "LLM metadata")
    if args.group_by is not None and args.llm_metadata is None:
        raise UsageError("--group-by needs --llm-metadata (the table that holds the column)")
    for pair in args.pairs or ():
        _pair(pair)


def _rank(args: argparse.Namespace) -> int:
    from benchmirt_bayes.analyses.items import rank_items
    from benchmirt_bayes.io import load_posterior

    fit = load_posterior(args.fit)
    table = rank_items(fit, by=args.by, within=args.within, dimension=args.dimension, top_k=args.top_k)
    write_file_atomically(args.out, table.to_csv)
    print(table.head(15).round(3).to_string())
    print(f"wrote {args.out}")
    return 0


def _check_fit_and_file(args: argparse.Namespace, suffixes: tuple[str, ...] = (".csv",)) -> None:
    readable(args.fit, "fit")
    writable_file(args.out, suffixes, args)


def _specs(args: argparse.Namespace) -> int:
    from benchmirt_bayes.model.spec import available_specs, load_spec

    for name in available_specs():
        print(f"{name:32s} {load_spec(name).description}")
    return 0


def _select(args: argparse.Namespace) -> int:
    from benchmirt_bayes.analyses.items import rank_items
    from benchmirt_bayes.analyses.selection import select_items, write_subset
    from benchmirt_bayes.io import load_posterior

    fit = load_posterior(args.fit)
    if args.method == "stepwise":
        from benchmirt_bayes.analyses.score_selection import select_for_scores

        scores = _read_full_scores(args.full_scores, args.llm_col)
        kept = select_for_scores(
            fit, scores, per_benchmark=args.per_benchmark, fraction=args.fraction, method="stepwise"
        )
    else:
        kept = select_items(
            fit,
            n_items=args.n_items,
            fraction=args.fraction,
            method=args.method,
            dimension=args.dimension,
            seed=args.seed,
        )
    out = Path(args.out)
    if out.suffix.lower() == ".csv":
        table = rank_items(fit, dimension=args.dimension).loc[kept]
        write_file_atomically(out, table.to_csv)
    else:
        write_file_atomically(out, lambda partial: write_subset(fit, kept, partial))
    counts = fit["observed_data"]["benchmark"].to_series().loc[kept].value_counts().to_string()
    total = fit["posterior"].sizes["item"]
    print(f"kept {len(kept)} of {total} items ({args.method}); per benchmark:\n{counts}")
    print(f"wrote {out}")
    return 0


def _score(args: argparse.Namespace) -> int:
    import pandas as pd

    from benchmirt_bayes.analyses.score_estimation import estimate_scores
    from benchmirt_bayes.analyses.score_link import LINK_ATTR
    from benchmirt_bayes.analyses.scoring import score_table, table_answers
    from benchmirt_bayes.data.tables import read_table
    from benchmirt_bayes.io import load_posterior

    fit = load_posterior(args.fit)
    results = read_table(args.responses)
    columns = {"llm_col": args.llm_col, "item_col": args.item_col, "correct_col": args.correct_col}
    table = score_table(fit, results, **columns, n_draws=args.draws, seed=args.seed)
    if LINK_ATTR in fit.attrs:  # the fit carries a link to full-benchmark scores ('benchmirt link')
        answers = table_answers(results, args.llm_col, args.item_col, args.correct_col)
        full = estimate_scores(fit, answers, n_draws=args.draws, seed=args.seed)
        full = full.rename(columns={"benchmark": "name", "kept_mean": "observed"})
        full["quantity"] = "full_benchmark_score"
        keep = ["llm", "quantity", "name", "mean", "lower", "upper", "observed", "n_answered", "estimator"]
        table = pd.concat([table, full[keep]], ignore_index=True)
    write_file_atomically(args.out, lambda partial: table.to_csv(partial, index=False))
    print(table.round(3).to_string(index=False, max_rows=40))
    print(f"wrote {args.out}")
    return 0


def _link(args: argparse.Namespace) -> int:
    from benchmirt_bayes.analyses.score_estimation import fit_score_link, with_score_link
    from benchmirt_bayes.io import load_posterior, save_posterior

    fit = load_posterior(args.fit)
    scores = _read_full_scores(args.full_scores, args.llm_col)
    items = _read_subset(args.items) if args.items else None
    if args.subset_out is not None and args.per_benchmark is None:
        raise UsageError("--subset-out writes the items the link chooses: give --per-benchmark")
    link = fit_score_link(
        fit,
        scores,
        items=items,
        per_benchmark=args.per_benchmark,
        method=args.method,
        n_draws=args.draws,
        seed=args.seed,
    )
    if args.subset_out is not None:
        from benchmirt_bayes.analyses.selection import write_subset

        if not str(args.subset_out).lower().endswith((".json", ".txt")):
            raise UsageError(f"--subset-out {args.subset_out}: use a file ending in .json or .txt")
        write_file_atomically(args.subset_out, lambda partial: write_subset(fit, link.items, partial))
        print(f"wrote {args.subset_out} ({len(link.items)} items)")
    for name, bench in link.benchmarks.items():
        rmse = bench.training["out_of_fold_rmse_package"]
        n_llms = int(bench.training["n_llms"])
        print(f"{name}: {len(bench.items)} kept items, out-of-fold RMSE {rmse:.2f} on {n_llms} LLMs")
    save_posterior(with_score_link(fit, link), args.out, overwrite=args.overwrite)
    print(f"wrote {args.out}")
    return 0


def _read_full_scores(path: str, llm_col: str):
    """The ``--full-scores`` table: indexed by LLM id (as text), one numeric column per benchmark."""
    from benchmirt_bayes.data.tables import numeric_values, read_table

    table = read_table(path)
    if llm_col not in table.columns:
        raise UsageError(f"--full-scores: no column {llm_col!r} (set --llm-col)")
    scores = table.set_index(llm_col)
    values, bad = numeric_values(scores)
    if bad:
        cells = [f"{scores.index[r]!r} / {scores.columns[c]!r}: {scores.iat[r, c]!r}" for r, c in bad[:5]]
        raise UsageError(
            f"--full-scores {path}: {len(bad)} score(s) are not numbers ({', '.join(cells)}"
            + (", …)" if len(bad) > 5 else ")")
        )
    return type(scores)(values, index=scores.index.astype(str), columns=scores.columns)


def _check_select(args: argparse.Namespace) -> None:
    readable(args.fit, "fit")
    if args.method == "stepwise":
        if args.full_scores is None:
            raise UsageError(
                "--method stepwise needs --full-scores (the training LLMs' full-benchmark scores)"
            )
        readable(args.full_scores, "full scores")
        _read_full_scores(args.full_scores, args.llm_col)
        if args.dimension is not None:
            raise UsageError("--dimension does not apply to --method stepwise (it selects per benchmark)")
        if args.n_items is not None:
            raise UsageError(
                "--method stepwise keeps items in each benchmark: give --per-benchmark or --fraction"
            )
    elif args.full_scores is not None:
        raise UsageError("--full-scores is used only by --method stepwise")
    elif args.per_benchmark is not None:
        raise UsageError("--per-benchmark is used only by --method stepwise (else --n-items is the total)")
    writable_file(args.out, (".json", ".txt", ".csv"), args)


def _read_subset(path: str | Path) -> list[str]:
    import json

    text = Path(path).read_text()
    if str(path).lower().endswith(".json"):
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(f"--items {path}: invalid JSON ({exc.msg}, line {exc.lineno})") from None
        groups = document.get("benchmarks") if isinstance(document, dict) else None
        if not isinstance(groups, dict) or not all(isinstance(v, list) for v in groups.values()):
            raise UsageError(
                f"--items {path}: expected a subset as 'benchmirt select' writes it, "
                '{"benchmarks": {"NAME": [item ids]}, ...}'
            )
        return [str(i) for items in groups.values() for i in items]
    return [line.strip() for line in text.splitlines() if line.strip()]


def _check_link(args: argparse.Namespace) -> None:
    readable(args.fit, "fit")
    readable(args.full_scores, "full scores")
    if args.items is not None:
        _read_subset(readable(args.items, "items"))
    _read_full_scores(args.full_scores, args.llm_col)
    writable_file(args.out, (".nc", ".zarr"), args)


def _check_score(args: argparse.Namespace) -> None:
    _check_fit_and_file(args)
    readable(args.responses, "responses")


def _cv(args: argparse.Namespace) -> int:
    from benchmirt_bayes.batch import DaskExecutor
    from benchmirt_bayes.workflows.crossval import FOLD_ADVI_DRAWS, choose_n_dims, cross_validate

    responses = _load_data(args)
    print(f"cross-validating {responses}: scheme={args.scheme}, dims={args.dims}, folds={args.folds}")
    start = time.perf_counter()
    if args.workers is not None or args.scheduler is not None:
        context = DaskExecutor(workers=args.workers, scheduler=args.scheduler)
    else:
        import contextlib

        context = contextlib.nullcontext("serial" if args.serial else "auto")
    with context as executor:
        result = cross_validate(
            responses,
            n_dims=args.dims,
            folds=args.folds,
            scheme=args.scheme,
            seed=args.seed,
            category=args.category,
            **_fit_settings(args, advi_draws=FOLD_ADVI_DRAWS),
            executor=executor,
            results_dir=args.results_dir,
        )
    out, summary_path, calibration_path = _cv_outputs(args.out)
    write_file_atomically(out, lambda partial: result.table.to_csv(partial, index=False))
    write_file_atomically(summary_path, result.summary().to_csv)
    write_file_atomically(calibration_path, lambda partial: result.calibration.to_csv(partial, index=False))
    print(result.wide().round(4).to_string())
    print(choose_n_dims(result))
    print(f"done in {time.perf_counter() - start:.1f} s; wrote {out} and {summary_path}")
    return 0


def _cv_outputs(out: str) -> tuple[Path, Path, Path]:
    """The tidy table, its summary and its calibration table."""
    path = Path(out)
    return path, path.with_name(path.stem + "_summary.csv"), path.with_name(path.stem + "_calibration.csv")


def _check_cv(args: argparse.Namespace) -> None:
    _check_data_args(args)
    for path in _cv_outputs(args.out):
        writable_file(path, (".csv",), args)
    if args.results_dir is not None:
        _not_an_input(Path(args.results_dir), args)
        writable_folder(args.results_dir)  # earlier fold fits there are resumed, not replaced
    if _has_auto_asymptotes(_fit_settings(args)["spec"]):
        raise UsageError(
            "'auto' asymptotes are chosen by `benchmirt fit`; name 2pl, 3pl or 4pl to cross-validate"
        )


_COMMANDS: dict[str, tuple[Callable[[argparse.Namespace], int], Callable[[argparse.Namespace], None]]] = {
    "demo": (_demo, lambda a: writable_folder(a.out, a)),
    "simulate": (_simulate, lambda a: writable_file(a.out, (".nc",), a)),
    "info": (_info, _check_data_args),
    "fit": (_fit, _check_fit),
    "report": (_report, _check_fit_and_folder),
    "audit": (_audit, _check_audit),
    "rank": (_rank, _check_fit_and_file),
    "select": (_select, _check_select),
    "score": (_score, _check_score),
    "link": (_link, _check_link),
    "specs": (_specs, _no_check),
    "cv": (_cv, _check_cv),
}


if __name__ == "__main__":
    raise SystemExit(main())
