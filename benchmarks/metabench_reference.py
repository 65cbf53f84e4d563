"""metabench's own full-score predictions, read from the fits it published.

The ``p`` column of ``../shared/data/open_llm_leaderboard_v1/scores_<bench>_all_models.csv``
is *not* metabench's prediction from its reduced items. It is the ``df.score.base`` table
of metabench's ``analysis/reduce.R`` ("evaluate full score prediction (upper bound)"): a
GAM of the full score on abilities estimated from the model fitted to the ~350 items that
metabench's preprocessing kept, before the reduction; its ``test`` rows are reduce.R's
validation split. The prediction from the reduced items, the ones in the shared response
files, is the ``df.score.sub`` table of the same fit: ``train`` rows are the LLMs whose
responses we have (in-sample for metabench: its item choice and GAM were trained on
them), ``test`` rows are 464 LLMs held out by metabench (we do not have their responses).

This script reads both tables from the R files of a metabench checkout (the commit in
``SOURCE_COMMIT``), checks that each fit's items are the shared set's and that its
``df.score.base`` predictions are the shared ``p`` column, and prints the RMSEs. It needs
the ``reference`` extra (``rdata``, a pure-Python reader of R data files).

    git clone https://github.com/adkipnis/metabench && git -C metabench checkout fe74e29
    python benchmarks/metabench_reference.py --metabench metabench
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "open_llm_leaderboard_v1"
REDUCED_FITS = {
    "arc": "arc-2PL-MAP-0.005-seed=1.rds",
    "gsm8k": "gsm8k-2PL-EAPsum-0.001-seed=1.rds",
    "mmlu": "mmlu-3PL-MAP-0.01-seed=1.rds",
    "truthfulqa": "truthfulqa-2PL-EAPsum-0.01-seed=1.rds",
    "winogrande": "winogrande-4PL-MAP-0.005-seed=1.rds",
}
"""The fit in metabench's ``analysis/reduced/`` whose items are the shared set's, per benchmark."""


def read_fit(checkout: Path, benchmark: str) -> dict[str, pd.DataFrame]:
    """``base`` (upper bound) and ``sub`` (reduced items) score tables and the ``items`` of one fit.

    Raises ``ValueError`` when the fit's items or upper-bound predictions are not the shared
    files' (then this is not the fit behind them).
    """
    import rdata  # the ``reference`` extra

    path = Path(checkout) / "analysis" / "reduced" / REDUCED_FITS[benchmark]
    parsed = rdata.parser.parse_file(path)
    names = [entry.value.decode() for entry in parsed.object.attributes.value[0].value]
    converter = rdata.conversion.SimpleConverter()
    wanted = {"items": "items", "df.score.base": "base", "df.score.sub": "sub"}
    # the list also holds the fitted mirt S4 object, which rdata cannot convert: take only these
    tables = {
        wanted[name]: converter.convert(element)
        for name, element in zip(names, parsed.object.value, strict=True)
        if name in wanted
    }
    shared_items = pd.read_csv(next(SHARED.glob(f"items_{benchmark}_authors_mirt_*.csv")))["item"].astype(str)
    if set(tables["items"]["item"].astype(str)) != set(shared_items):
        raise ValueError(f"{path.name}: its items are not those of the shared {benchmark} files")
    shared = pd.read_csv(SHARED / f"scores_{benchmark}_all_models.csv").set_index("model")
    base = tables["base"]
    if not np.allclose(base["p"].to_numpy(), shared.loc[base.index, "p"].to_numpy()):
        raise ValueError(f"{path.name}: its upper-bound predictions are not the shared p column")
    return tables


def reduced_predictions(checkout: Path, benchmarks=tuple(REDUCED_FITS)) -> pd.DataFrame:
    """metabench's predictions from its reduced items: ``benchmark, llm, score, p, set``."""
    frames = []
    for bench in benchmarks:
        sub = read_fit(checkout, bench)["sub"]
        frames.append(
            pd.DataFrame(
                {
                    "benchmark": bench,
                    "llm": sub.index.astype(str),
                    "score": sub["score"].to_numpy(),
                    "p": sub["p"].to_numpy(),
                    "set": sub["set"].astype(str).to_numpy(),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def _rmse(error: pd.Series) -> float:
    return float(np.sqrt(np.mean(np.square(error))))


def table(checkout: Path) -> pd.DataFrame:
    """RMSE (points) of both predictions, per benchmark and split."""
    rows = []
    for bench in REDUCED_FITS:
        fit = read_fit(checkout, bench)
        base, sub = fit["base"], fit["sub"]
        rows.append(
            {
                "benchmark": bench,
                "reduced items": len(fit["items"]),
                "upper bound (350 items), train": _rmse(base.query("set == 'train'")["error"]),
                "upper bound, validation": _rmse(base.query("set == 'test'")["error"]),
                "reduced items, train (in-sample)": _rmse(sub.query("set == 'train'")["error"]),
                "reduced items, held out": _rmse(sub.query("set == 'test'")["error"]),
                "held-out LLMs": int((sub["set"] == "test").sum()),
            }
        )
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--metabench", required=True, help="a checkout of adkipnis/metabench")
    args = parser.parse_args()
    frame = table(Path(args.metabench)).round(2)
    print("| " + " | ".join(frame.columns) + " |")
    print("|" + "---|" * len(frame.columns))
    for row in frame.itertuples(index=False):
        print("| " + " | ".join(str(v) for v in row) + " |")


if __name__ == "__main__":
    main()
