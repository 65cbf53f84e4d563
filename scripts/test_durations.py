"""Per-test durations of pytest runs, from their JUnit XML files, as a Markdown table.

Usage: ``python scripts/test_durations.py .ci/durations-fast.xml .ci/durations-slow.xml
[--top N]``. Each file is one tier; the table gives each tier's test count and summed test
time, then the slowest tests of each (setup, call and teardown together, as pytest reports),
so the next cut of the suite is measured, not guessed.
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from pathlib import Path


def durations(path: Path) -> list[tuple[float, str]]:
    """``(seconds, test id)`` of every test case in one JUnit XML file, slowest first."""
    cases = []
    for case in ET.parse(path).iter("testcase"):
        module = case.get("classname", "").replace(".", "/")
        cases.append((float(case.get("time", 0.0)), f"{module}.py::{case.get('name')}"))
    return sorted(cases, reverse=True)


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=20, help="slowest tests listed per tier")
    args = parser.parse_args()
    print("| tier | tests | summed test time (min) |\n|---|---|---|")
    tiers = {path: durations(path) for path in args.files if path.exists()}
    for path, cases in tiers.items():
        print(f"| {path.stem} | {len(cases)} | {sum(s for s, _ in cases) / 60:.1f} |")
    for path, cases in tiers.items():
        print(f"\n{path.stem}, slowest {args.top}:\n\n| s | test |\n|---|---|")
        for seconds, name in cases[: args.top]:
            print(f"| {seconds:.1f} | `{name}` |")


if __name__ == "__main__":
    main()
