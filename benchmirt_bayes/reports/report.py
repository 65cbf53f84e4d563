"""`write_report`: a self-contained HTML trace report with PNG figures, readable offline."""

from __future__ import annotations

import html
import json
from pathlib import Path

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.analyses.predictive import predicted_group_scores
from benchmirt_bayes.diagnostics.convergence import check_convergence
from benchmirt_bayes.diagnostics.stability import check_stability
from benchmirt_bayes.posterior import responses_from_tree
from benchmirt_bayes.reports.plots import (
    plot_elbo,
    plot_energy,
    plot_ppc,
    plot_restart_loadings,
    plot_trace_rank,
)

SECTION_IDS = ("data", "convergence", "summary", "traces", "energy", "ppc", "elbo", "stability")
_STYLE = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 7px}
th{background:#f3f3f3}img{max-width:100%;border:1px solid #eee}h2{border-bottom:1px solid #ddd}
.ok{color:#1a7f37}.bad{color:#b42318}code{background:#f5f5f5;padding:1px 3px}
"""


def _table(frame: pd.DataFrame) -> str:
    return frame.to_html(float_format=lambda v: f"{v:.3g}", border=0)


def _save(fig: plt.Figure, folder: Path, name: str) -> str:
    fig.savefig(folder / name, dpi=110)
    plt.close(fig)
    return f"<img src='{name}' alt='{name}'>"


def key_summary(
    posterior: xr.DataTree, *, n_abilities: int = 8, n_items: int = 8, seed: int = 0
) -> pd.DataFrame:
    """ArviZ summary of hyperparameters plus a seeded sample of abilities and intercepts."""
    post = posterior["posterior"]
    rng = np.random.default_rng(seed)
    llms = rng.choice(post["llm"].values, size=min(n_abilities, post.sizes["llm"]), replace=False)
    items = rng.choice(post["item"].values, size=min(n_items, post.sizes["item"]), replace=False)
    hyper = [
        v
        for v in (
            "benchmark_loading_mean",
            "benchmark_loading_spread",
            "benchmark_intercept_mean",
            "benchmark_intercept_spread",
            "ability_correlation",
        )
        if v in post
    ]
    parts = [az.summary(posterior, var_names=hyper)]
    parts.append(az.summary(posterior, var_names=["ability"], coords={"llm": list(llms)}))
    parts.append(az.summary(posterior, var_names=["intercept", "mdisc"], coords={"item": list(items)}))
    return pd.concat(parts)


def write_report(posterior: xr.DataTree, out: str | Path, *, seed: int = 0, ppc_draws: int = 100) -> Path:
    """Write ``index.html`` and its PNG figures into folder ``out``.

    Sections: data summary, convergence checks, ArviZ summary of key
    quantities, trace and rank plots, energy plot (NUTS), posterior predictive
    check per LLM × benchmark, ELBO curve (ADVI), and restart stability (when
    the fit has restarts). Large fits are sampled and aggregated, never drawn
    item by item.

    Returns
    -------
    Path
        The ``index.html`` written.

    """
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    method = posterior.attrs.get("benchmirt_method", "?")
    responses = responses_from_tree(posterior)
    sections: dict[str, str] = {}

    data_table = responses.summary()
    sections["data"] = (
        f"<p>{responses.n_llms} LLMs × {responses.n_items} items, "
        f"{len(responses.benchmark_names)} benchmarks, {responses.missing_share:.1%} of cells "
        f"missing, {responses.n_observed:,} observed cells.</p>{_table(data_table)}"
    )

    convergence = check_convergence(posterior)
    sections["convergence"] = convergence._repr_html_()

    if method == "map":
        sections["summary"] = "<p>MAP fit: one point, no posterior summary.</p>"
    else:
        sections["summary"] = _table(key_summary(posterior, seed=seed))

    if method == "nuts":
        sections["traces"] = _save(plot_trace_rank(posterior, seed=seed), folder, "traces.png")
    if method == "nuts":
        sections["energy"] = _save(plot_energy(posterior), folder, "energy.png")
    scores = predicted_group_scores(posterior, by="benchmark", n_draws=ppc_draws, seed=seed)
    sections["ppc"] = _save(plot_ppc(scores), folder, "ppc.png")
    if "elbo" in posterior.children:
        sections["elbo"] = _save(plot_elbo(posterior), folder, "elbo.png")
    if int(posterior.attrs.get("benchmirt_restarts", 1)) > 1:
        stability = check_stability(posterior)
        sections["stability"] = stability._repr_html_() + _save(
            plot_restart_loadings(posterior, seed=seed), folder, "restart_loadings.png"
        )

    titles = {
        "data": "Data",
        "convergence": "Convergence",
        "summary": "Summary of key quantities",
        "traces": "Trace and rank plots",
        "energy": "Energy",
        "ppc": "Posterior predictive check",
        "elbo": "ELBO",
        "stability": "Stability across restarts",
    }
    provenance = {
        k.removeprefix("benchmirt_"): v
        for k, v in posterior.attrs.items()
        if k.startswith("benchmirt_") and k != "benchmirt_spec"
    }
    body = "".join(
        f"<section id='{key}'><h2>{titles[key]}</h2>{sections[key]}</section>"
        for key in SECTION_IDS
        if key in sections
    )
    page = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>benchmirt_bayes report ({html.escape(method)})</title><style>{_STYLE}</style>"
        f"</head><body><h1>benchmirt_bayes trace report</h1>"
        f"<p>Method <code>{html.escape(method)}</code>, "
        f"{posterior.attrs.get('benchmirt_n_dims')} dimension(s).</p>{body}"
        f"<section id='provenance'><h2>Provenance</h2><pre>"
        f"{html.escape(json.dumps(provenance, indent=1, default=str))}</pre></section>"
        "</body></html>"
    )
    path = folder / "index.html"
    path.write_text(page, encoding="utf-8")
    return path
