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

from benchmirt_bayes.analyses.abilities import ability_table
from benchmirt_bayes.analyses.asymptote_flags import asymptote_flags
from benchmirt_bayes.analyses.audit import benchmark_correlations, name_dimensions
from benchmirt_bayes.analyses.dif import differential_item_functioning
from benchmirt_bayes.analyses.item_fit import item_fit
from benchmirt_bayes.analyses.items import rank_items
from benchmirt_bayes.analyses.miskeyed import miskeyed_items
from benchmirt_bayes.analyses.person_fit import person_fit
from benchmirt_bayes.analyses.predictive import predicted_group_scores
from benchmirt_bayes.diagnostics.convergence import check_convergence
from benchmirt_bayes.diagnostics.stability import check_stability
from benchmirt_bayes.posterior import OPTIMISATION_METHODS, responses_from_tree
from benchmirt_bayes.reports.plots import (
    plot_ability_map,
    plot_benchmark_heatmap,
    plot_elbo,
    plot_energy,
    plot_group_forest,
    plot_item_curves,
    plot_ppc,
    plot_restart_loadings,
    plot_trace_rank,
)

SECTION_IDS = (
    "measures",
    "abilities",
    "items",
    "audits",
    "data",
    "convergence",
    "summary",
    "traces",
    "energy",
    "ppc",
    "elbo",
    "stability",
)
SECTION_TITLES = {
    "measures": "What each benchmark measures",
    "abilities": "The LLMs' abilities",
    "items": "The most and the least informative items",
    "audits": "Audits of LLMs and items",
    "data": "Data",
    "convergence": "Convergence",
    "summary": "Summary of key quantities",
    "traces": "Trace and rank plots",
    "energy": "Energy",
    "ppc": "Posterior predictive check",
    "elbo": "ELBO",
    "stability": "Stability across restarts",
}
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
    # draws from an approximation (ADVI) have no chains to compare: no R-hat or ESS columns
    kind = "stats" if posterior.attrs.get("benchmirt_method") in OPTIMISATION_METHODS else "all"
    parts = [az.summary(posterior, var_names=hyper, kind=kind)]
    parts.append(az.summary(posterior, var_names=["ability"], coords={"llm": list(llms)}, kind=kind))
    parts.append(
        az.summary(posterior, var_names=["intercept", "mdisc"], coords={"item": list(items)}, kind=kind)
    )
    return pd.concat(parts)


def write_report(
    posterior: xr.DataTree,
    out: str | Path,
    *,
    seed: int = 0,
    ppc_draws: int = 100,
    dif_group: str | None = None,
) -> Path:
    """Write ``index.html`` and its PNG figures into folder ``out``: the answers first, then the checks.

    Sections, in order: what each benchmark (and subgroup) measures, with named dimensions
    and intervals; the LLMs' abilities with intervals; the most and the least informative
    items, with their item curves; the audits (aberrant LLM × benchmark cells, probably
    miskeyed items, misfitting items, and differential item functioning by ``dif_group``,
    an LLM metadata column, when given); then the data, the convergence checks (trace,
    rank and energy plots for NUTS; the ELBO for ADVI, without R-hat columns that mean
    nothing for draws from an approximation), the posterior predictive check, restart
    stability, and provenance. Large fits are sampled and aggregated, never drawn item by
    item.

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
    named = (
        name_dimensions(posterior).posterior
        if "benchmark_loading_mean" in posterior["posterior"]
        else posterior
    )

    audit = benchmark_correlations(named, seed=seed)
    heatmap = _save(plot_benchmark_heatmap(audit.table), folder, "benchmarks.png")
    subgroups = benchmark_correlations(named, by="subgroup", seed=seed)
    sections["measures"] = (
        "<p>Correlation across LLMs between each ability and each benchmark's mean score, per "
        "posterior draw (posterior mean and 90% interval in each cell). Dimension names list the "
        "benchmarks that load mainly on them.</p>"
        + heatmap
        + _save(plot_group_forest(subgroups.table), folder, "subgroups.png")
    )

    abilities = ability_table(named)
    order = abilities.index.get_level_values("llm").unique()
    shown_llms = list(order[:10]) + [llm for llm in order[-5:] if llm not in set(order[:10])]
    shown = abilities.loc[shown_llms, ["mean", "sd", "lower", "upper"]].unstack("dimension")
    shown = shown.reindex(shown_llms).swaplevel(axis=1).sort_index(axis=1, level=0, sort_remaining=False)
    shown.columns = [f"{dim} {stat}" for dim, stat in shown.columns]
    sections["abilities"] = (
        f"<p>Posterior mean, SD and 90% interval of each LLM's abilities (the 10 highest and 5 lowest on "
        f"the first dimension of {len(order)}; every LLM in <code>benchmirt audit</code>'s "
        "abilities.csv).</p>"
        + _table(shown)
        + (
            _save(plot_ability_map(named), folder, "abilities.png")
            if named["posterior"].sizes["dimension"] > 1
            else ""
        )
    )

    ranking = rank_items(named, seed=seed)
    columns = [
        "benchmark",
        "subgroup",
        "information_mean",
        "information_lower",
        "information_upper",
        "rank_mean",
    ]
    top, bottom = ranking.head(10)[columns], ranking.tail(10)[columns]
    sections["items"] = (
        "<p>Items ranked by Fisher information over the fitted LLMs, per posterior draw (90% "
        "intervals). Most informative:</p>"
        + _table(top)
        + "<p>Least informative:</p>"
        + _table(bottom)
        + _save(plot_item_curves(named, list(top.index[:4]), seed=seed), folder, "item_curves.png")
    )

    sections["audits"] = _audits(named, dif_group, seed)

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

    provenance = {
        k.removeprefix("benchmirt_"): v
        for k, v in posterior.attrs.items()
        if k.startswith("benchmirt_") and k != "benchmirt_spec"
    }
    body = "".join(
        f"<section id='{key}'><h2>{SECTION_TITLES[key]}</h2>{sections[key]}</section>"
        for key in SECTION_IDS
        if key in sections
    )
    page = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>benchmirt_bayes report ({html.escape(method)})</title><style>{_STYLE}</style>"
        f"</head><body><h1>benchmirt_bayes report</h1>"
        f"<p>Method <code>{html.escape(method)}</code>, "
        f"{posterior.attrs.get('benchmirt_n_dims')} dimension(s). The answers come first; the "
        f"checks that say how far to trust them follow.</p>{body}"
        f"<section id='provenance'><h2>Provenance</h2><pre>"
        f"{html.escape(json.dumps(provenance, indent=1, default=str))}</pre></section>"
        "</body></html>"
    )
    path = folder / "index.html"
    path.write_text(page, encoding="utf-8")
    return path


def _audits(posterior: xr.DataTree, dif_group: str | None, seed: int) -> str:
    """The audit tables of the report: flagged cells and items only."""
    parts = []
    fit = person_fit(posterior, n_draws=50, seed=seed)
    flagged = fit[fit["aberrant"]]
    parts.append(
        f"<h3>Aberrant LLM × benchmark cells</h3><p>{len(flagged)} of {len(fit)} cells have a person-fit "
        f"p-value below {fit.attrs['alpha']} (answers unlike what the model expects at the LLM's "
        "ability, e.g. a contaminated benchmark).</p>"
        + _table(
            flagged.head(15).set_index(["llm", "group"])[
                ["n_items", "lz_mean", "level_z", "p_value", "observed_mean", "expected_mean"]
            ]
        )
    )
    keyed = miskeyed_items(posterior, seed=seed)
    flagged = keyed[keyed["flagged"]]
    parts.append(
        f"<h3>Probably mis-keyed items</h3><p>{len(flagged)} items point against their subgroup while "
        "strong LLMs fail them, or have a ceiling credibly below "
        f"{keyed.attrs['ceiling_below']} (Bayesian FDR 10%).</p>"
        + _table(
            flagged.head(15).set_index("item")[
                ["benchmark", "slope_mean", "p_against", "strong_minus_weak", "p_ceiling_below", "p_miskeyed"]
            ]
        )
    )
    if "floor" in posterior["posterior"]:
        asymptotes = asymptote_flags(posterior)
        flagged = asymptotes[asymptotes["ceiling_flagged"] | asymptotes["floor_flagged"]]
        parts.append(
            f"<h3>Floors and ceilings</h3><p>Of {len(asymptotes)} items with a floor, "
            f"{int(asymptotes['ceiling_flagged'].sum())} have a ceiling credibly below "
            f"{asymptotes.attrs['ceiling_below']} (a wrong key, an ambiguous item) and "
            f"{int(asymptotes['floor_flagged'].sum())} a floor credibly above chance (leaked answers, "
            f"options that give the key away), each at posterior probability above "
            f"{asymptotes.attrs['probability']}; floors are flagged only in benchmarks that at least "
            f"{asymptotes.attrs['min_llms']} LLMs answered.</p>"
            + _table(
                flagged.head(15).set_index("item")[
                    [
                        "benchmark",
                        "model",
                        "chance",
                        "floor_mean",
                        "p_floor_above_chance",
                        "ceiling_mean",
                        "p_capped",
                        "p_ceiling_below",
                    ]
                ]
            )
        )
    misfit = item_fit(posterior, n_draws=50, seed=seed)
    flagged = misfit[misfit["misfit"]]
    parts.append(
        f"<h3>Misfitting items</h3><p>{len(flagged)} of {len(misfit)} items have an outfit posterior "
        "predictive p-value below 0.05 (about 5% are expected by chance).</p>"
        + _table(flagged.head(10)[["benchmark", "outfit", "infit", "outfit_rep", "p_value"]])
    )
    if dif_group is not None:
        dif = differential_item_functioning(posterior, dif_group, seed=seed)
        flagged = dif[dif["flagged"]]
        parts.append(
            f"<h3>Differential item functioning by {html.escape(dif_group)}</h3><p>{len(flagged)} items "
            "behave differently for one group at equal ability (false-discovery rate 10%).</p>"
            + _table(
                flagged.head(15).set_index(["focal", "item"])[
                    ["benchmark", "delta_mean", "delta_sd", "p_dif"]
                ]
            )
        )
    return "".join(parts)
