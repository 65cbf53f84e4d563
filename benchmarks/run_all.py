"""Run every benchmark script and write ``benchmarks/RESULTS.md``: every measured figure, one command.

Each script runs in its own process and becomes one section
of RESULTS.md, stamped with the date, the machine (host, cores, memory, load when it started:
a load well above 0 means the cores were shared), the commit (``+changes`` when the tree was
not clean) and the exact command. ``--quick`` runs every script at its minutes-scale size
(each section's stamp gives its time); without it the scripts run at full size (hours).
``--only NAME ...`` reruns some sections and keeps the others as they are, each with its own
stamp. Its stdout logs are under ``--work``.

    python benchmarks/run_all.py --quick          # minutes-scale sizes, every section
    python benchmarks/run_all.py                  # full sizes (hours)
    python benchmarks/run_all.py --only harness   # one section again
    python benchmarks/run_all.py --metabench PATH # with metabench's reduced fits (score_estimation)
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "RESULTS.md"
SECTION = re.compile(r"^<!-- section: (?P<name>[\w-]+) -->$", re.MULTILINE)


@dataclass(frozen=True)
class Benchmark:
    """One script: what it measures, its quick and full arguments, and where its tables are."""

    name: str
    title: str
    script: str
    quick: tuple[str, ...] | None
    full: tuple[str, ...] | None
    """``None``: not run at that size by this command (the section says so)."""
    table_file: str | None = None
    """A Markdown file the script writes under ``{out}`` (else its stdout is the section)."""
    fenced: bool = False
    """Whether the script's stdout is plain text (shown as a code block) rather than Markdown."""
    note: str = ""
    metabench: bool = False
    """Whether the script compares with metabench's published fits (``--metabench PATH``)."""


SUBSET_FILES = (
    "--fit",
    "{out}/fit.nc",
    "--results-dir",
    "{out}/subsets",
    "--out",
    "{out}/subset_fidelity.csv",
)

BENCHMARKS = (
    Benchmark(
        "harness",
        "Speed: the package's NUTS and ADVI against a plain PyMC model",
        "harness.py",
        ("--sizes", "S", "--draws", "500", "--tune", "500", "--out", "{out}"),
        ("--sizes", "S", "M", "--draws", "1500", "--tune", "500", "--out", "{out}"),
        table_file="harness.md",
        note="S = 100 LLMs × 1,003 items, M = 100 × 5,001 (87k / 436k training cells). The "
        "`package_nuts` row calls `fit_posterior` with no speed arguments; `default_vs_best_wall` "
        "is its wall time over the fastest NUTS row's. py-irt rows need `--pyirt-python` "
        "(benchmarks/README.md) and are not part of this command.",
    ),
    Benchmark(
        "default_convergence",
        "fit_posterior with its defaults: converged, and how long",
        "default_convergence.py",
        ("--sets", "quickstart"),
        ("--seeds", "2"),
    ),
    Benchmark(
        "kernel_precision",
        "The fused kernel in float32 against float64: the same posterior, and how much faster",
        "kernel_precision.py",
        ("--sizes", "S"),
        ("--sizes", "S", "M"),
    ),
    Benchmark(
        "default_speedup",
        "The default call against the default of issue #44's starting commit",
        "default_speedup.py",
        ("--sizes", "S", "--out", "{out}"),
        ("--sizes", "S", "M", "--long-draws", "5000", "--out", "{out}"),
        table_file="default_speedup.md",
    ),
    Benchmark(
        "kernel_pass",
        "One pass of the fused binary kernel alone, float32 and float64",
        "kernel_pass.py",
        ("--sizes", "S", "M"),
        (),
    ),
    Benchmark(
        "typed_logp_grad",
        "One log density + gradient per response type against hand-written NumPy",
        "typed_logp_grad.py",
        ("--repeats", "20"),
        (),
    ),
    Benchmark(
        "read_speed",
        "Reading result tables: load_responses against pandas.read_csv",
        "read_speed.py",
        ("--sizes", "316", "--repeats", "1"),
        (),
    ),
    Benchmark(
        "continuous_vs_rounded",
        "StrongREJECT kept continuous vs rounded to 0/1",
        "continuous_vs_rounded.py",
        ("--smoke",),
        (),
    ),
    Benchmark(
        "audit_calibration",
        "Audits on planted simulations: recovery and false-positive rates",
        "audit_calibration.py",
        ("--scale", "0.1"),
        (),
    ),
    Benchmark(
        "dimension_choice",
        "choose_n_dims on simulations with one and two true dimensions, 20 to 150 LLMs",
        "dimension_choice.py",
        ("--llms", "20", "--truths", "one", "--out", "{out}"),
        ("--out", "{out}"),
    ),
    Benchmark(
        "advi_optima",
        "Do ADVI fits reach their optimum? Seeds, collapsed dimensions, choose_n_dims",
        "advi_optima.py",
        ("--quick",),
        (),
    ),
    Benchmark(
        "score_estimation",
        "Full-benchmark scores from few items (Open LLM Leaderboard), against metabench",
        "score_estimation.py",
        ("--quick", "--out", "{out}"),
        ("--out", "{out}"),
        table_file="results.md",
        metabench=True,
    ),
    Benchmark(
        "no_link_intervals",
        "Scores without a link at 20, 50 and 150 LLMs: are the intervals honest?",
        "no_link_intervals.py",
        ("--folds", "1", "--items", "10"),
        ("--folds", "2"),
    ),
    Benchmark(
        "small_population_scores",
        "The score route at 20, 50 and 140 LLMs",
        "small_population_scores.py",
        ("--sets", "gsm8k", "--sizes", "50", "--run-folds", "2", "--out", "{out}"),
        ("--out", "{out}"),
        table_file="results.md",
    ),
    Benchmark(
        "selection_optimism",
        "Stepwise items chosen on the link's own LLMs, or on others",
        "selection_optimism.py",
        ("--llms", "100", "--pool", "100", "--items", "10", "--run-folds", "1", "--out", "{out}"),
        ("--out", "{out}"),
        table_file="results.md",
    ),
    Benchmark(
        "sbc",
        "Simulation-based calibration of NUTS and ADVI at small sizes",
        "sbc.py",
        ("--settings", "binary-1d", "binary-2d", "--out", "{out}"),
        ("--out", "{out}"),
        table_file="results.md",
        note="The rank ECDF figures go to `benchmarks/figures/`.",
    ),
    Benchmark(
        "asymptote_recovery",
        "Floors and ceilings (3PL / 4PL) on simulations at 20, 50 and 150 LLMs",
        "asymptote_recovery.py",
        (
            "--llms",
            "30",
            "--scale",
            "0.01",
            "--tune",
            "200",
            "--draws",
            "200",
            "--out",
            "{out}/asymptote_recovery.md",
        ),
        ("--null", "--out", "{out}/asymptote_recovery.md"),
        table_file="asymptote_recovery.md",
    ),
    Benchmark(
        "auto_asymptotes",
        "The built-in pipeline with 'auto' asymptotes: choice, findings, cost",
        "auto_asymptotes.py",
        ("--smoke", "--tune", "100", "--draws", "100", "--out", "{out}/auto_asymptotes.md"),
        ("--out", "{out}/auto_asymptotes.md"),
        table_file="auto_asymptotes.md",
    ),
    Benchmark(
        "asymptote_real",
        "2PL, 3PL or 4PL on the Open LLM Leaderboard v1 benchmarks",
        "asymptote_real.py",
        (
            "--benchmarks",
            "winogrande",
            "--sizes",
            "20",
            "--heldout",
            "40",
            "--reference-size",
            "0",
            "--tune",
            "200",
            "--draws",
            "200",
            "--out",
            "{out}/asymptote_real.md",
        ),
        ("--out", "{out}/asymptote_real.md"),
        table_file="asymptote_real.md",
    ),
    Benchmark(
        "asymptote_opencompass",
        "Floors and ceilings on OpenCompass (12 LLMs) against PSN-IRT",
        "asymptote_opencompass.py",
        ("--items", "30", "--tune", "200", "--draws", "200"),
        (),
    ),
    Benchmark(
        "subset_fidelity",
        "How few items keep the picture: subset fidelity on the built-in set",
        "subset_fidelity.py",
        ("--scale", "0.1", "--repeats", "2", *SUBSET_FILES),
        ("--repeats", "3", *SUBSET_FILES),
        fenced=True,
    ),
    Benchmark(
        "adaptive_testing",
        "A new LLM after a few items: adaptive vs random item order",
        "adaptive_testing.py",
        (
            "--scale",
            "0.1",
            "--llms",
            "5",
            "--budget",
            "40",
            "--fit",
            "{out}/fit.nc",
            "--out",
            "{out}/adaptive_testing.csv",
        ),
        ("--llms", "10", "--budget", "40", "--fit", "{out}/fit.nc", "--out", "{out}/adaptive_testing.csv"),
        fenced=True,
    ),
    Benchmark(
        "cluster_sweep",
        "Many fits: a cross-validation sweep serial vs on a local Dask cluster",
        "cluster_sweep.py",
        ("--scale", "0.005", "--llms", "40", "--folds", "4"),
        ("--scale", "0.005", "--llms", "40", "--folds", "10"),
        fenced=True,
    ),
    Benchmark(
        "minibatch_scale",
        "Minibatch ADVI beyond memory: 10,000 LLMs × 100,000 items",
        "minibatch_scale.py",
        ("--smoke",),
        (),
        fenced=True,
    ),
    Benchmark(
        "full_scale_advi_report",
        "ADVI and the HTML report on the full built-in set (100 × 34,312)",
        "full_scale_advi_report.py",
        None,
        ("--out", "{out}"),
        fenced=True,
    ),
    Benchmark(
        "full_scale_nuts",
        "NUTS on the full built-in set (100 × 34,312) on CPU",
        "full_scale_nuts.py",
        ("--tune", "20", "--draws", "20", "--init", "prior", "--max-treedepth", "1", "--out", "{out}"),
        ("--out", "{out}"),
        fenced=True,
        note="The quick run checks only that the full-size path runs (trees capped at depth 1: "
        "its R-hat means nothing); the full run is the figure.",
    ),
)


def machine() -> str:
    """Host, processor, cores and memory of this machine, in one line."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        memory = float("nan")
    return f"{platform.node()} ({platform.machine()}, {os.cpu_count()} cores, {memory:.0f} GiB)"


def commit() -> str:
    """Short commit of the working tree, ``+changes`` when it differs from that commit.

    RESULTS.md itself does not count: this command rewrites it as it goes.
    """
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!benchmarks/RESULTS.md"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def run(bench: Benchmark, quick: bool, work: Path, logs: Path, metabench: str | None = None) -> str:
    """Run one script and return its RESULTS.md section.

    ``metabench`` (a checkout of adkipnis/metabench) is passed on to the scripts that compare
    with metabench's published fits; the stamp shows it as ``METABENCH``.
    """
    arguments = bench.quick if quick else bench.full
    out = work / bench.name
    out.mkdir(parents=True, exist_ok=True)
    header = f"<!-- section: {bench.name} -->\n## {bench.title}\n\n"
    if arguments is None:
        return header + "Not run by this command at this size.\n"
    argv = [a.replace("{out}", str(out)) for a in arguments]
    shown = [a.replace("{out}", f"OUT/{bench.name}") for a in arguments]
    note = bench.note
    if bench.metabench and metabench:
        argv += ["--metabench", str(Path(metabench).resolve())]
        shown += ["--metabench", "METABENCH"]
    elif bench.metabench:
        note = (
            "metabench's predictions from the same reduced items need a checkout of adkipnis/metabench "
            "(`benchmarks/metabench_reference.py`): `python benchmarks/run_all.py --metabench PATH`."
        )
    command = " ".join(["python", f"benchmarks/{bench.script}", *map(shlex.quote, shown)])
    load, version = os.getloadavg()[0], commit()
    started = datetime.now(UTC)
    begin = time.perf_counter()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "OPENBLAS_NUM_THREADS": "1"}
    result = subprocess.run(
        [sys.executable, str(HERE / bench.script), *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=False,
    )
    seconds = time.perf_counter() - begin
    (logs / f"{bench.name}.log").write_text(result.stdout + "\n--- stderr ---\n" + result.stderr)
    stamp = (
        f"*{started:%Y-%m-%d %H:%M} UTC · {machine()} · load {load:.1f} at start · commit {version} · "
        f"{seconds / 60:.1f} min · `{command}`*\n\n"
    )
    if result.returncode != 0:
        tail = result.stderr.strip().splitlines()[-15:]
        body = f"**Failed** (exit {result.returncode}); the end of its error output:\n\n```\n"
        return header + stamp + body + "\n".join(tail) + "\n```\n"
    table = out / bench.table_file if bench.table_file else None
    body = table.read_text() if table is not None and table.exists() else result.stdout
    if bench.fenced:
        body = f"```text\n{body.strip()}\n```"
    else:
        # the scripts' own headings nest two levels below the section's
        body = re.sub(r"^(#{1,4}) ", r"##\1 ", body.strip(), flags=re.MULTILINE)
    note = f"{note}\n\n" if note else ""
    return header + stamp + note + body + "\n"


def existing_sections(results: Path) -> dict[str, str]:
    """The sections of an existing RESULTS.md, by name."""
    if not results.exists():
        return {}
    text = results.read_text()
    marks = list(SECTION.finditer(text))
    return {
        m.group("name"): text[m.start() : marks[i + 1].start() if i + 1 < len(marks) else len(text)].strip()
        + "\n"
        for i, m in enumerate(marks)
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="minutes-scale sizes")
    parser.add_argument("--only", nargs="+", choices=[b.name for b in BENCHMARKS], default=None)
    parser.add_argument("--work", default="benchmark_results/run_all", help="scripts' output folders")
    parser.add_argument("--results", default=str(RESULTS), help="the Markdown file to write")
    parser.add_argument(
        "--metabench",
        default=None,
        help="a checkout of adkipnis/metabench: score_estimation then compares with its reduced fits",
    )
    args = parser.parse_args()
    work = Path(args.work).resolve()
    results = Path(args.results)
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    sections = existing_sections(results) if args.only else {}
    for bench in BENCHMARKS:
        if args.only and bench.name not in args.only:
            continue
        print(f"running {bench.name} ...", flush=True)
        sections[bench.name] = run(bench, args.quick, work, logs, metabench=args.metabench)
        write(sections, results)
        print(sections[bench.name].splitlines()[3], flush=True)
    write(sections, results)


def write(sections: dict[str, str], results: Path) -> None:
    """RESULTS.md with the sections in the order of ``BENCHMARKS`` (any others after them)."""
    intro = (
        "# Measured results\n\n"
        "Every figure the README quotes, as the scripts in `benchmarks/` printed it. Written by\n"
        "`python benchmarks/run_all.py` (`--quick`: minutes-scale sizes); each section says when,\n"
        "on which machine and commit, and with which command it ran. `OUT` is the command's work\n"
        "folder (`--work`, default `benchmark_results/run_all`, where each script's logs are kept).\n\n"
    )
    known = [b.name for b in BENCHMARKS]
    ordered = [sections[name] for name in known if name in sections]
    ordered += [text for name, text in sections.items() if name not in known]
    results.write_text(intro + "\n".join(ordered))


if __name__ == "__main__":
    main()
