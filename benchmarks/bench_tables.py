"""What the benchmark scripts share: Markdown tables for RESULTS.md (no ``tabulate`` needed)
and a progress log stamped with the seconds since the run started."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd


def elapsed_logger() -> Callable[[str], None]:
    """A ``log(text)`` that prints each line after the seconds since this call."""
    start = time.perf_counter()

    def log(text: str) -> None:
        print(f"[{time.perf_counter() - start:6.0f} s] {text}", flush=True)

    return log


def markdown_table(table: pd.DataFrame, digits: int | None = None) -> str:
    """A GitHub Markdown table of ``table`` (empty cells for missing values), rounded to ``digits``."""
    if digits is not None:
        table = table.round(digits)
    cells = [[str(c) for c in table.columns]] + [
        ["" if pd.isna(v) else str(v) for v in row] for row in table.to_numpy()
    ]
    lines = ["| " + " | ".join(row) + " |" for row in cells]
    lines.insert(1, "|" + "---|" * len(table.columns))
    return "\n".join(lines)


def run_header(title: str) -> str:
    """``# title, <UTC time>, <machine>, commit <sha>, `command` `` for a results file.

    The command is the running script's, as run from the repository root.
    """
    command = " ".join(["python", f"benchmarks/{Path(sys.argv[0]).name}", *sys.argv[1:]])
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    return (
        f"# {title}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()} ({platform.machine()}, "
        f"{os.cpu_count()} CPUs), commit {commit}, `{command}`"
    )


def write_results(path: str, lines: list[str], *, quiet: bool = False) -> None:
    """Write ``lines`` to ``path`` (creating its folder) and print them unless ``quiet``."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    if not quiet:
        print("\n".join(lines))


def posterior_agreement(first, second, names: tuple[str, ...] = ("ability", "intercept")) -> dict:
    """Posterior means of two fits' ``names`` compared in units of their combined Monte Carlo SE.

    ``first`` and ``second`` are posterior datasets (``chain``, ``draw`` first). Returns the
    number of quantities, the largest ``|z|`` and the shares beyond 2 and 3; draws of one
    posterior give about a standard normal ``z`` (0.27 % beyond 3).
    """
    import arviz as az
    import numpy as np

    z = []
    for name in names:
        means = [post[name].mean(("chain", "draw")) for post in (first, second)]
        mcse = [az.mcse(post[name], method="mean") for post in (first, second)]
        z.append(np.ravel(((means[0] - means[1]) / np.sqrt(mcse[0] ** 2 + mcse[1] ** 2)).values))
    z = np.abs(np.concatenate(z))
    return {
        "quantities": z.size,
        "max_abs_z": round(float(z.max()), 2),
        "share_over_2": round(float(np.mean(z > 2)), 4),
        "share_over_3": round(float(np.mean(z > 3)), 4),
    }
