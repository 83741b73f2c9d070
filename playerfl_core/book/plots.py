"""Figures for the book, each recomputed from the long results table (never from live models)."""

from __future__ import annotations

import pandas as pd
import seaborn as sns

from playerfl_core.book.style import (
    ALGORITHM_NAMES,
    FIGURE_WIDTH,
    SINGLE_WIDTH,
    algorithm_color,
    algorithm_label,
    apply_book_style,
    client_label,
    dataset_label,
    marker_color,
    measure_color,
    panel_grid,
    thin_ticks,
)

apply_book_style()

ALGORITHM_LABELS = ALGORITHM_NAMES
"""Kept for old imports; the names live in :mod:`playerfl_core.book.style`."""


def label(algorithm: str) -> str:
    """Display name of an algorithm (:func:`playerfl_core.book.style.algorithm_label`)."""
    return algorithm_label(algorithm)


def plot_sensitivity(sens: pd.DataFrame, split_p: dict[str, int]):
    """Per-unit sensitivity (log scale, left) and its cumulative form (right), one row per
    dataset, so the figure stays two panels wide.

    ``sens`` comes from :func:`playerfl_core.stats.results.sensitivities`; a dashed line marks the
    chosen split (federated units are left of it).
    """
    datasets = list(dict.fromkeys(sens["dataset"]))
    fig, axes = panel_grid(2 * len(datasets), max_cols=2, panel_height=2.3)
    for j, name in enumerate(datasets):
        d = sens[sens["dataset"] == name]
        units = list(dict.fromkeys(d["unit"]))
        for i, (col, ylabel) in enumerate(
            [("sensitivity", "sensitivity $s_k$"), ("cumulative", "cumulative $F_l$ / $s_1$")]
        ):
            ax = axes[2 * j + i]
            colour = measure_color("sensitivity" if i == 0 else "cum_sensitivity")
            sns.lineplot(
                data=d, x="unit_index", y=col, marker="o", ax=ax, errorbar=None, color=colour
            )
            ax.set_yscale("log")
            ax.set_xticks(range(1, len(units) + 1), units)
            thin_ticks(ax)
            ax.axvline(split_p[name] + 0.5, ls="--", c=marker_color("rule"))
            ax.set_xlabel("layer unit" if j == len(datasets) - 1 else "")
            ax.set_ylabel(ylabel)
            ax.set_title(f"{dataset_label(name)}: split p = {split_p[name]}" if i == 0 else "")
    return fig


def plot_client_scores(scores: pd.DataFrame, metric_label: str = "test macro-F1"):
    """Grouped bars: each client's score under each algorithm, one panel per dataset, two
    panels a row, the legend above the panels (not beside them, which would widen the figure)."""
    algorithms = list(dict.fromkeys(scores["algorithm"]))
    palette = {algorithm_label(a): algorithm_color(a) for a in algorithms}
    scores = scores.assign(
        algorithm=scores["algorithm"].map(algorithm_label),
        dataset=scores["dataset"].map(dataset_label),
        client_name=scores["client_name"].map(client_label),
    )
    n = scores["dataset"].nunique()
    ncols = min(n, 2)
    width = FIGURE_WIDTH / ncols if ncols > 1 else SINGLE_WIDTH
    grid = sns.catplot(
        data=scores,
        kind="bar",
        x="client_name",
        y="value",
        hue="algorithm",
        hue_order=list(palette),
        palette=palette,
        saturation=1,  # the style's colours as they are (seaborn desaturates bars by default)
        col="dataset",
        col_wrap=ncols if n > 1 else None,
        sharex=False,
        height=2.8,
        aspect=width / 2.8,
        errorbar=None,
        legend_out=False,
    )
    grid.set_axis_labels("client", metric_label)
    grid.set_titles("{col_name}")
    for ax in grid.axes.flat:
        ax.tick_params(axis="x", rotation=30)
        for t in ax.get_xticklabels():
            t.set_horizontalalignment("right")
            t.set_rotation_mode("anchor")
    sns.move_legend(
        grid,
        "lower center",
        bbox_to_anchor=(0.5, 1.0),
        ncol=min(len(palette), 4),
        title=None,
        frameon=False,
    )
    grid.tight_layout()
    return grid.figure
