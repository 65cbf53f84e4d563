"""Matplotlib figures; every function returns its Figure.

Figures never draw one line per item: at 34k items they sample or aggregate.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg", force=False)

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from benchmirt_bayes.stability import restart_means


def diagnostic_quantities(
    posterior: xr.DataTree, *, n_abilities: int = 4, seed: int = 0
) -> list[tuple[str, np.ndarray]]:
    """``(label, (chain, draw) array)`` for hyperparameters and a seeded sample of abilities."""
    post = posterior["posterior"]
    quantities = []
    for name in ("benchmark_loading_spread", "benchmark_intercept_spread"):
        if name in post:
            var = post[name]
            spread = var.std(("chain", "draw"))
            bench = var["benchmark"].values[int(np.argmax(spread.values))]
            quantities.append((f"{name}[{bench}]", var.sel(benchmark=bench).values))
    if "benchmark_loading_mean" in post:
        var = post["benchmark_loading_mean"]
        for dim in var["dimension"].values:
            bench = var["benchmark"].values[0]
            quantities.append((f"benchmark_loading_mean[{bench}, {dim}]",
                               var.sel(benchmark=bench, dimension=dim).values))
    rng = np.random.default_rng(seed)
    llms = post["llm"].values
    chosen = rng.choice(llms.size, size=min(n_abilities, llms.size), replace=False)
    dims = post["dimension"].values
    for position, j in enumerate(chosen):
        dim = dims[position % dims.size]
        quantities.append((f"ability[{llms[j]}, {dim}]",
                           post["ability"].sel(llm=llms[j], dimension=dim).values))
    return quantities


def plot_trace_rank(posterior: xr.DataTree, *, n_abilities: int = 4, seed: int = 0) -> Figure:
    """Trace (left) and rank histogram per chain (right) for key quantities."""
    quantities = diagnostic_quantities(posterior, n_abilities=n_abilities, seed=seed)
    fig, axes = plt.subplots(len(quantities), 2, figsize=(11, 1.8 * len(quantities)),
                             squeeze=False, gridspec_kw={"width_ratios": [3, 1.4]})
    for row, (label, values) in enumerate(quantities):
        trace_ax, rank_ax = axes[row]
        n_chain, n_draw = values.shape
        for c in range(n_chain):
            trace_ax.plot(values[c], lw=0.5, alpha=0.8)
        trace_ax.set_title(label, fontsize=9, loc="left")
        ranks = values.ravel().argsort().argsort().reshape(values.shape)
        bins = np.linspace(0, values.size, 21)
        for c in range(n_chain):
            hist, _ = np.histogram(ranks[c], bins=bins)
            rank_ax.step(bins[:-1], hist, where="post", lw=0.8)
        rank_ax.axhline(n_draw / 20, color="k", ls="--", lw=0.6)
        rank_ax.set_yticks([])
        if row == len(quantities) - 1:
            trace_ax.set_xlabel("draw")
            rank_ax.set_xlabel("rank (uniform when chains agree)")
    fig.tight_layout()
    return fig


def plot_energy(posterior: xr.DataTree) -> Figure:
    """Marginal energy vs energy transition distributions (NUTS), with E-BFMI per chain."""
    stats = posterior["sample_stats"]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    if "energy" not in stats:
        ax.text(0.5, 0.5, "no energy statistics in this fit", ha="center", va="center")
        ax.set_axis_off()
        return fig
    energy = stats["energy"].transpose("chain", "draw").values
    centred = energy - energy.mean(axis=1, keepdims=True)
    transition = np.diff(energy, axis=1)
    bins = np.linspace(min(centred.min(), transition.min()), max(centred.max(), transition.max()), 50)
    ax.hist(centred.ravel(), bins=bins, alpha=0.5, density=True, label="marginal energy")
    ax.hist(transition.ravel(), bins=bins, alpha=0.5, density=True, label="energy transition")
    bfmi = np.square(transition).mean(axis=1) / energy.var(axis=1)
    ax.set_title("E-BFMI per chain: " + ", ".join(f"{b:.2f}" for b in bfmi), fontsize=9)
    ax.legend(fontsize=8)
    ax.set_yticks([])
    fig.tight_layout()
    return fig


def plot_ppc(scores: xr.Dataset, *, ci_prob: float = 0.94) -> Figure:
    """Observed vs predicted mean score per (LLM, group), one colour per group, with intervals."""
    predicted = scores["predicted"]
    low, high = (predicted.quantile(q, dim="sample_index").values
                 for q in ((1 - ci_prob) / 2, (1 + ci_prob) / 2))
    mean = predicted.mean("sample_index").values
    observed = scores["observed"].values
    groups = scores["group"].values
    fig, ax = plt.subplots(figsize=(7.5, 6.5))
    cmap = plt.get_cmap("tab20", max(len(groups), 1))
    for g, name in enumerate(groups):
        ax.errorbar(mean[:, g], observed[:, g], xerr=[mean[:, g] - low[:, g], high[:, g] - mean[:, g]],
                    fmt="o", ms=2.5, lw=0.4, alpha=0.7, color=cmap(g), label=str(name))
    ax.plot([0, 1], [0, 1], color="k", lw=0.8)
    ax.set_xlabel(f"predicted mean score (posterior mean, {ci_prob:.0%} interval)")
    ax.set_ylabel("observed mean score")
    ax.set_title(f"Posterior predictive check per LLM × {scores.attrs.get('by', 'group')}")
    ax.legend(fontsize=7, ncol=2, loc="upper left", markerscale=2)
    fig.tight_layout()
    return fig


def plot_elbo(posterior: xr.DataTree) -> Figure:
    """ELBO per step for each restart (ADVI), smoothed over 50 steps."""
    elbo = posterior["elbo"]["elbo"]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for restart in elbo["restart"].values:
        record = elbo.sel(restart=restart).dropna("step").values
        window = min(50, max(record.size // 10, 1))
        smooth = np.convolve(record, np.ones(window) / window, mode="valid")
        ax.plot(np.arange(smooth.size) + window, smooth, lw=1, label=f"restart {restart}")
    ax.set_xlabel("step")
    ax.set_ylabel("ELBO (smoothed)")
    ax.set_yscale("symlog")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_restart_loadings(posterior: xr.DataTree, *, max_items: int = 2000, seed: int = 0) -> Figure:
    """Aligned mean loadings of every restart against restart 0, one panel per dimension."""
    loadings = restart_means(posterior, "loading")
    dims = posterior["posterior"]["dimension"].values
    rng = np.random.default_rng(seed)
    n_items = loadings[0].shape[0]
    chosen = rng.choice(n_items, size=min(max_items, n_items), replace=False)
    fig, axes = plt.subplots(1, len(dims), figsize=(4 * len(dims), 3.8), squeeze=False)
    for k, dim in enumerate(dims):
        ax = axes[0, k]
        for r in range(1, len(loadings)):
            ax.scatter(loadings[0][chosen, k], loadings[r][chosen, k], s=3, alpha=0.4,
                       label=f"restart {r}")
        lim = np.abs(loadings[0][chosen, k]).max() * 1.1
        ax.plot([-lim, lim], [-lim, lim], color="k", lw=0.7)
        ax.set_xlabel(f"restart 0 loading, {dim}")
        ax.set_ylabel("other restarts")
        ax.set_title(f"{dim} ({chosen.size} of {n_items} items)", fontsize=9)
    axes[0, 0].legend(fontsize=7, markerscale=3)
    fig.tight_layout()
    return fig
