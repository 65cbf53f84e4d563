"""Matplotlib figures; every function returns its Figure.

Figures never draw one line per item: at 34k items they sample or aggregate. Importing this
module never touches matplotlib's backend: in Jupyter the figures show inline, in scripts
they go wherever the user's backend sends them (``MPLBACKEND=Agg`` for none).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import FixedFormatter, FuncFormatter

from benchmirt_bayes.diagnostics.calibration import SBC_BAND_PROB, SBC_GROUP, rank_ecdf
from benchmirt_bayes.diagnostics.stability import restart_means
from benchmirt_bayes.draws import PosteriorDraws
from benchmirt_bayes.response_types.base import linear_predictor
from benchmirt_bayes.summaries import CI_PROB, interval_quantiles


def _literal(text: str) -> str:
    """``$`` as a literal dollar sign (matplotlib reads ``$…$`` as mathtext)."""
    return re.sub(r"(?<!\\)\$", r"\\$", text)


def _literal_label(label: Callable[[float, int | None], str], x: float, pos: int | None = None) -> str:
    return _literal(str(label(x, pos)))


def literal_text[**P](plot: Callable[P, Figure]) -> Callable[P, Figure]:
    """Show every text of the figure as written: names such as ``cost_$5_and_$10`` are not markup.

    The figure is built with mathtext off (its layout measures the texts), then every text
    and fixed tick label has its ``$`` escaped, so that later draws (Jupyter, ``savefig``) under
    the user's own settings show them literally too.
    """

    @functools.wraps(plot)
    def wrapped(*args: P.args, **kwargs: P.kwargs) -> Figure:
        # one setting set and restored by hand: rc_context would restore every setting, also
        # those the first figure's backend switch sets (Jupyter's inline display then stops)
        parse_math = mpl.rcParams["text.parse_math"]
        mpl.rcParams["text.parse_math"] = False
        try:
            fig = plot(*args, **kwargs)
        finally:
            mpl.rcParams["text.parse_math"] = parse_math
        for text in fig.findobj(Text):
            text.set_parse_math(True)
            text.set_text(_literal(text.get_text()))
        for ax in fig.axes:
            for axis in (ax.xaxis, ax.yaxis):
                formatter = axis.get_major_formatter()
                if isinstance(formatter, FixedFormatter):
                    formatter.seq = [_literal(str(label)) for label in formatter.seq]
                elif isinstance(formatter, FuncFormatter):  # labels given with the ticks
                    formatter.func = functools.partial(_literal_label, formatter.func)
        return fig

    return wrapped


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
            quantities.append(
                (f"benchmark_loading_mean[{bench}, {dim}]", var.sel(benchmark=bench, dimension=dim).values)
            )
    rng = np.random.default_rng(seed)
    llms = post["llm"].values
    chosen = rng.choice(llms.size, size=min(n_abilities, llms.size), replace=False)
    dims = post["dimension"].values
    for position, j in enumerate(chosen):
        dim = dims[position % dims.size]
        quantities.append(
            (f"ability[{llms[j]}, {dim}]", post["ability"].sel(llm=llms[j], dimension=dim).values)
        )
    return quantities


@literal_text
def plot_trace_rank(posterior: xr.DataTree, *, n_abilities: int = 4, seed: int = 0) -> Figure:
    """Trace (left) and rank histogram per chain (right) for key quantities."""
    quantities = diagnostic_quantities(posterior, n_abilities=n_abilities, seed=seed)
    fig, axes = plt.subplots(
        len(quantities),
        2,
        figsize=(11, 1.8 * len(quantities)),
        squeeze=False,
        gridspec_kw={"width_ratios": [3, 1.4]},
    )
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


@literal_text
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


@literal_text
def plot_ppc(scores: xr.Dataset, *, ci_prob: float = CI_PROB) -> Figure:
    """Observed vs predicted mean score per (LLM, group), one colour per group, with intervals."""
    predicted = scores["predicted"]
    low, high = (predicted.quantile(q, dim="sample_index").values for q in interval_quantiles(ci_prob))
    mean = predicted.mean("sample_index").values
    observed = scores["observed"].values
    groups = scores["group"].values
    fig, ax = plt.subplots(figsize=(7.5, 6.5))
    cmap = plt.get_cmap("tab20", max(len(groups), 1))
    for g, name in enumerate(groups):
        ax.errorbar(
            mean[:, g],
            observed[:, g],
            xerr=[mean[:, g] - low[:, g], high[:, g] - mean[:, g]],
            fmt="o",
            ms=2.5,
            lw=0.4,
            alpha=0.7,
            color=cmap(g),
            label=str(name),
        )
    ax.plot([0, 1], [0, 1], color="k", lw=0.8)
    ax.set_xlabel(f"predicted mean score (posterior mean, {ci_prob:.0%} interval)")
    ax.set_ylabel("observed mean score")
    ax.set_title(f"Posterior predictive check per LLM × {scores.attrs.get('by', 'group')}")
    ax.legend(fontsize=7, ncol=2, loc="upper left", markerscale=2)
    fig.tight_layout()
    return fig


@literal_text
def plot_elbo(posterior: xr.DataTree) -> Figure:
    """ELBO per step for each restart (ADVI), smoothed over 50 steps."""
    elbo = posterior["elbo"]["elbo"]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for restart in elbo["restart"].values:
        record = elbo.sel(restart=restart).dropna("step").values
        window = min(50, max(record.size // 10, 1))
        smooth = np.convolve(record, np.ones(window) / window, mode="valid")
        ax.plot(np.arange(smooth.size) + window, smooth, lw=1, label=f"restart {restart}")
        tail = smooth[smooth.size // 10 :]
        if tail.size:
            span = tail.max() - tail.min()
            ax.set_ylim(tail.min() - 0.05 * span, tail.max() + 0.05 * span)
    ax.set_xlabel("step")
    ax.set_ylabel("ELBO (smoothed; y-axis zoomed past the first 10% of steps)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


@literal_text
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
            ax.scatter(loadings[0][chosen, k], loadings[r][chosen, k], s=3, alpha=0.4, label=f"restart {r}")
        lim = np.abs(loadings[0][chosen, k]).max() * 1.1
        ax.plot([-lim, lim], [-lim, lim], color="k", lw=0.7)
        ax.set_xlabel(f"restart 0 loading, {dim}")
        ax.set_ylabel("other restarts")
        ax.set_title(f"{dim} ({chosen.size} of {n_items} items)", fontsize=9)
    axes[0, 0].legend(fontsize=7, markerscale=3)
    fig.tight_layout()
    return fig


@literal_text
def plot_benchmark_heatmap(audit_table, *, title: str | None = None) -> Figure:
    """What each benchmark (or subgroup) measures: correlation heatmap with intervals in each cell.

    Parameters
    ----------
    audit_table
        ``BenchmarkAudit.table`` from :func:`benchmirt_bayes.audit.benchmark_correlations`.
    title
        Figure title (default: a description of what is shown).

    """
    groups = list(dict.fromkeys(audit_table["group"]))
    dims = list(dict.fromkeys(audit_table["dimension"]))
    indexed = audit_table.set_index(["group", "dimension"])
    mean = np.array([[indexed.loc[(g, d), "r_mean"] for d in dims] for g in groups])
    fig, ax = plt.subplots(figsize=(max(5.5, 2.2 + 2.0 * len(dims)), max(2.6, 1.2 + 0.38 * len(groups))))
    image = ax.imshow(mean, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")
    for i, g in enumerate(groups):
        for j, d in enumerate(dims):
            row = indexed.loc[(g, d)]
            colour = "white" if abs(row["r_mean"]) > 0.6 else "black"
            ax.text(
                j,
                i,
                f"{row['r_mean']:.2f}\n[{row['r_lower']:.2f}, {row['r_upper']:.2f}]",
                ha="center",
                va="center",
                fontsize=7,
                color=colour,
            )
    ax.set_xticks(range(len(dims)), dims)
    ax.set_yticks(range(len(groups)), groups, fontsize=8)
    ax.xaxis.tick_top()
    fig.colorbar(image, ax=ax, label="r (ability, mean score)", shrink=0.8)
    ci_prob = audit_table.attrs.get("ci_prob", CI_PROB)
    ax.set_title(title or f"What each group measures (posterior mean, {ci_prob:.0%} interval)", fontsize=10)
    fig.tight_layout()
    return fig


@literal_text
def plot_item_loadings(
    posterior: xr.DataTree,
    benchmark: str,
    *,
    color_by: str = "subgroup",
    dims: tuple[int, int] = (0, 1),
    ci_prob: float = CI_PROB,
) -> Figure:
    """One benchmark's item loadings (posterior means, ``ci_prob`` intervals), coloured by group."""
    post = posterior["posterior"]
    observed = posterior["observed_data"]
    items = observed["item"].values[observed["benchmark"].values == benchmark]
    if items.size == 0:
        raise KeyError(f"no items of benchmark {benchmark!r}")
    loading = post["loading"].sel(item=items)
    mean = loading.mean(("chain", "draw")).values
    low, high = (loading.quantile(q, dim=("chain", "draw")).values for q in interval_quantiles(ci_prob))
    labels = observed[color_by].sel(item=items).values
    names = post["dimension"].values
    fig, ax = plt.subplots(figsize=(6.5, 5.5))
    x, y = dims
    for label in dict.fromkeys(labels):
        sel = labels == label
        ax.errorbar(
            mean[sel, x],
            mean[sel, y],
            xerr=[mean[sel, x] - low[sel, x], high[sel, x] - mean[sel, x]],
            yerr=[mean[sel, y] - low[sel, y], high[sel, y] - mean[sel, y]],
            fmt="o",
            ms=3,
            lw=0.3,
            alpha=0.6,
            label=f"{label} ({sel.sum()})",
        )
    ax.axhline(0, color="k", lw=0.6)
    ax.axvline(0, color="k", lw=0.6)
    ax.set_xlabel(f"loading on {names[x]}")
    ax.set_ylabel(f"loading on {names[y]}")
    ax.set_title(f"{benchmark}: item loadings by {color_by}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


@literal_text
def plot_ability_map(
    posterior: xr.DataTree, *, dims: tuple[int, int] = (0, 1), label_top: int = 8, ci_prob: float = CI_PROB
) -> Figure:
    """LLMs in ability space: posterior means with ``ci_prob`` intervals on both axes."""
    ability = posterior["posterior"]["ability"]
    mean = ability.mean(("chain", "draw")).values
    low, high = (ability.quantile(q, dim=("chain", "draw")).values for q in interval_quantiles(ci_prob))
    names = ability["dimension"].values
    llms = ability["llm"].values
    x, y = dims
    fig, ax = plt.subplots(figsize=(6.5, 6))
    ax.errorbar(
        mean[:, x],
        mean[:, y],
        xerr=[mean[:, x] - low[:, x], high[:, x] - mean[:, x]],
        yerr=[mean[:, y] - low[:, y], high[:, y] - mean[:, y]],
        fmt="o",
        ms=3,
        lw=0.4,
        alpha=0.7,
    )
    extreme = np.argsort(-np.abs(mean).sum(axis=1))[:label_top]
    for j in extreme:
        ax.annotate(
            str(llms[j]), (mean[j, x], mean[j, y]), fontsize=7, xytext=(3, 3), textcoords="offset points"
        )
    ax.set_xlabel(f"ability: {names[x]}")
    ax.set_ylabel(f"ability: {names[y]}")
    ax.set_title(f"{len(llms)} LLMs in ability space (90% intervals)")
    fig.tight_layout()
    return fig


@literal_text
def plot_group_forest(audit_table, *, dimension: str | None = None) -> Figure:
    """Forest plot of group (e.g. subgroup) correlations with one dimension, with intervals."""
    dims = list(dict.fromkeys(audit_table["dimension"]))
    chosen = dims if dimension is None else [dimension]
    groups = list(dict.fromkeys(audit_table["group"]))
    fig, axes = plt.subplots(
        1, len(chosen), figsize=(4.2 * len(chosen), 0.8 + 0.3 * len(groups)), squeeze=False, sharey=True
    )
    for ax, dim in zip(axes[0], chosen, strict=True):
        rows = audit_table[audit_table["dimension"] == dim].set_index("group").loc[groups]
        positions = np.arange(len(groups))[::-1]
        ax.errorbar(
            rows["r_mean"],
            positions,
            xerr=[rows["r_mean"] - rows["r_lower"], rows["r_upper"] - rows["r_mean"]],
            fmt="o",
            ms=4,
            capsize=2,
        )
        ax.axvline(0, color="k", lw=0.6)
        ax.set_xlim(-1, 1)
        ax.set_title(f"correlation with {dim}", fontsize=9)
        ax.set_yticks(positions, groups, fontsize=8)
    fig.tight_layout()
    return fig


@literal_text
def plot_fidelity(table, *, target: str = "full_ability", metric: str = "spearman") -> Figure:
    """Fidelity versus kept fraction per selection method (from :func:`evaluate_subset`).

    Lines are means over repeats (and dimensions or benchmarks); bands are the
    central 90 % interval over the repeats.
    """
    from benchmirt_bayes.analyses.selection import fidelity_summary

    summary = fidelity_summary(table).loc[target]
    fig, ax = plt.subplots(figsize=(6, 4))
    for method in summary.index.get_level_values("method").unique():
        part = summary.loc[method]
        fractions = part.index.to_numpy() * 100
        ax.plot(fractions, part[f"{metric}_mean"], marker="o", label=method)
        ax.fill_between(fractions, part[f"{metric}_lower"], part[f"{metric}_upper"], alpha=0.2)
    ax.set_xscale("log")
    ax.set_xlabel("items kept (%)")
    ax.set_ylabel(f"{metric} correlation")
    ax.set_title(f"Subset fidelity against {target.replace('_', ' ')}")
    ax.legend()
    fig.tight_layout()
    return fig


@literal_text
def plot_calibration(calibration, *, models: list[str] | None = None) -> Figure:
    """Reliability curves (from ``CrossValidation.calibration``); dot area ∝ number of cells."""
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.plot([0, 1], [0, 1], color="grey", lw=1, ls="--", label="perfect")
    names = models or list(calibration["model"].unique())
    for model in names:
        part = calibration[calibration["model"] == model]
        ax.plot(part["predicted_mean"], part["observed_rate"], marker="o", ms=3, label=model)
    ax.set_xlabel("predicted probability")
    ax.set_ylabel("observed share correct")
    ax.set_title("Calibration of held-out predictions")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


@literal_text
def plot_cv_by_dims(summary, *, metric: str = "log_loss") -> Figure:
    """Held-out ``metric`` versus n_dims with t-intervals, baselines as horizontal lines."""
    frame = summary.reset_index()
    frame = frame[frame["metric"] == metric]
    mirt = frame[frame["model"].str.match(r"mirt_\d+d$")].copy()
    mirt["n_dims"] = mirt["model"].str.extract(r"mirt_(\d+)d")[0].astype(int)
    mirt = mirt.sort_values("n_dims")
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.errorbar(
        mirt["n_dims"],
        mirt["mean"],
        yerr=[mirt["mean"] - mirt["lower"], mirt["upper"] - mirt["mean"]],
        marker="o",
        capsize=4,
        label="MIRT",
    )
    for _, row in frame[~frame["model"].str.match(r"mirt_\d+d$")].iterrows():
        ax.axhline(row["mean"], ls=":", lw=1, color="grey")
        ax.annotate(row["model"], (mirt["n_dims"].max(), row["mean"]), fontsize="x-small", va="bottom")
    ax.set_xticks(mirt["n_dims"])
    ax.set_xlabel("number of dimensions")
    ax.set_ylabel(f"held-out {metric.replace('_', ' ')}")
    ax.set_title(f"Held-out {metric.replace('_', ' ')} by number of dimensions")
    fig.tight_layout()
    return fig


@literal_text
def plot_adaptive_error(errors) -> Figure:
    """Ability error versus items asked, adaptive vs random order.

    ``errors``: DataFrame with columns ``order``, ``step``, ``error`` (one row per
    simulated LLM and step); lines are means, bands 25–75 % quantiles.
    """
    fig, ax = plt.subplots(figsize=(6, 4))
    for order, part in errors.groupby("order"):
        grouped = part.groupby("step")["error"]
        steps = grouped.mean().index
        ax.plot(steps, grouped.mean(), label=order)
        ax.fill_between(steps, grouped.quantile(0.25), grouped.quantile(0.75), alpha=0.2)
    ax.set_xlabel("items asked")
    ax.set_ylabel("ability error (Euclidean)")
    ax.set_title("Adaptive testing: error of the ability estimate")
    ax.legend()
    fig.tight_layout()
    return fig


@literal_text
def plot_item_curves(
    posterior: xr.DataTree,
    items: list[str] | np.ndarray,
    *,
    dimension: str | None = None,
    n_draws: int = 100,
    ci_prob: float = CI_PROB,
    seed: int = 0,
) -> Figure:
    """Item characteristic curves (left) and item information curves (right), with intervals.

    Along one ability dimension with the others held at 0 (the fitted LLMs' mean): the
    expected score on ``[0, 1]`` (the probability of a correct answer for binary items) and
    the Fisher information about that dimension, each as the posterior median over draws
    with an equal-tailed band of mass ``ci_prob`` (R ``mirt``'s ``itemplot`` types ``trace`` and
    ``info``, with uncertainty).

    Parameters
    ----------
    posterior
        A fit.
    items
        Item ids (a handful: one curve each).
    dimension
        Dimension along which ability varies (default: the one the first item loads on most).
    n_draws, ci_prob, seed
        Posterior draws used, the band's probability mass, seed of the draw subsample.

    """
    items = np.asarray(items, dtype=str)
    draws = PosteriorDraws.from_posterior(posterior, n_draws, seed=seed)
    unknown = sorted(set(items) - set(draws.items))
    if unknown or items.size == 0:
        raise KeyError(f"unknown item(s): {unknown[:10]}" if unknown else "no items given")
    chosen = draws.take_items(draws.columns(items))
    loading, intercept, dims = chosen.loading, chosen.intercept, chosen.dimensions
    if dimension is not None and dimension not in dims:
        raise KeyError(f"unknown dimension {dimension!r}; available: {dims}")
    k = dims.index(dimension) if dimension is not None else int(np.argmax(np.abs(loading[:, 0].mean(0))))
    sub_layout, params = chosen.layout, chosen.params
    grid = np.linspace(-3.5, 3.5, 141)
    theta = np.zeros((grid.size, len(dims)))
    theta[:, k] = grid
    eta = linear_predictor(theta, loading, intercept)  # (draw, grid, item)
    score = sub_layout.expected_score(eta, params)
    information = sub_layout.information_weight(eta, params) * loading[:, None, :, k] ** 2
    low, high = interval_quantiles(ci_prob)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for j, item in enumerate(items):
        for ax, values in zip(axes, (score[..., j], information[..., j]), strict=True):
            median = np.median(values, axis=0)
            (line,) = ax.plot(grid, median, lw=1.6, label=item)
            ax.fill_between(
                grid,
                np.quantile(values, low, axis=0),
                np.quantile(values, high, axis=0),
                color=line.get_color(),
                alpha=0.18,
            )
    axes[0].set_ylim(0, 1)
    axes[0].set_ylabel("expected score (share of the item's maximum)")
    axes[1].set_ylabel(f"information about {dims[k]}")
    for ax in axes:
        ax.set_xlabel(f"ability on {dims[k]} (other dimensions at 0)")
        ax.grid(alpha=0.3)
    axes[0].set_title(f"Item characteristic curves (median, {ci_prob:.0%} interval)", fontsize=10)
    axes[1].set_title("Item information curves", fontsize=10)
    axes[1].legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


@literal_text
def plot_sbc(tree: xr.DataTree, *, prob: float = SBC_BAND_PROB, seed: int = 0) -> Figure:
    """Rank ECDFs of a simulation-based calibration run, one panel per kind of quantity.

    Each line is one monitored quantity's ``ECDF(u) − u`` over its normalised ranks ``u``;
    the grey band holds such a line over its whole length with probability ``prob`` when the
    fits are calibrated. Lines above the band at the left mean truths sit low among the
    draws too often (the posterior too high); a hump in the middle means intervals too wide,
    a dip too narrow.
    """
    sbc = tree[SBC_GROUP].to_dataset()
    names = list(sbc.data_vars)
    cols = min(4, len(names))
    rows = int(np.ceil(len(names) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.6 * rows), squeeze=False, sharey=True)
    for ax, name in zip(axes.ravel(), names, strict=False):
        pits = sbc[name].values.reshape(-1, sbc[name].shape[-1])
        for k in range(pits.shape[1]):
            points, ecdf, lower, upper = rank_ecdf(pits[:, k], prob=prob, seed=seed)
            if k == 0:
                ax.fill_between(points, lower - points, upper - points, color="0.85", step="post")
            ax.step(points, ecdf - points, where="post", lw=1.2)
        ax.axhline(0.0, color="0.4", lw=0.6)
        ax.set_title(name.replace("_", " "), fontsize=9)
        ax.set_xlabel("normalised rank")
    for ax in axes[:, 0]:
        ax.set_ylabel("ECDF − uniform")
    for ax in axes.ravel()[len(names) :]:
        ax.set_visible(False)
    label = tree.attrs.get("setting_label", "")
    fig.suptitle(f"SBC, {tree.attrs.get('method', '')}: {label} ({prob:.0%} simultaneous band)", fontsize=10)
    fig.tight_layout()
    return fig
