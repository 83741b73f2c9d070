"""Figures for the book, each recomputed from the long results table (never from live models)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from playerfl_core.book.style import (
    ALGORITHM_NAMES,
    algorithm_color,
    algorithm_label,
    dataset_label,
    marker_color,
)

ALGORITHM_LABELS = ALGORITHM_NAMES
"""Kept for old imports; the names live in :mod:`playerfl_core.book.style`."""


def label(algorithm: str) -> str:
    """Display name of an algorithm (:func:`playerfl_core.book.style.algorithm_label`)."""
    return algorithm_label(algorithm)


def plot_sensitivity(sens: pd.DataFrame, split_p: dict[str, int]):
    """Per-unit sensitivity (log scale) and its cumulative form, one column per dataset.

    ``sens`` comes from :func:`playerfl_core.stats.results.sensitivities`; a dashed line marks the
    chosen split (federated units are left of it).
    """
    datasets = list(dict.fromkeys(sens["dataset"]))
    fig, axes = plt.subplots(2, len(datasets), figsize=(4.2 * len(datasets), 6), squeeze=False)
    for j, name in enumerate(datasets):
        d = sens[sens["dataset"] == name]
        units = list(dict.fromkeys(d["unit"]))
        for i, (col, ylabel) in enumerate(
            [("sensitivity", "sensitivity $s_k$"), ("cumulative", "cumulative $F_l$ / $s_1$")]
        ):
            ax = axes[i, j]
            sns.lineplot(data=d, x="unit_index", y=col, marker="o", ax=ax, errorbar=None, color="k")
            ax.set_yscale("log")
            ax.set_xticks(range(1, len(units) + 1), units)
            ax.axvline(split_p[name] + 0.5, ls="--", c=marker_color("rule"))
            ax.set_xlabel("layer unit")
            ax.set_ylabel(ylabel)
            if i == 0:
                ax.set_title(f"{dataset_label(name)}: split p = {split_p[name]}")
    fig.tight_layout()
    return fig


def plot_client_scores(scores: pd.DataFrame, metric_label: str = "test macro-F1"):
    """Grouped bars: each client's score under each algorithm, one panel per dataset."""
    algorithms = list(dict.fromkeys(scores["algorithm"]))
    palette = {algorithm_label(a): algorithm_color(a) for a in algorithms}
    scores = scores.assign(
        algorithm=scores["algorithm"].map(algorithm_label),
        dataset=scores["dataset"].map(dataset_label),
    )
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
        sharex=False,
        height=3.4,
        aspect=1.3,
        errorbar=None,
    )
    grid.set_axis_labels("client", metric_label)
    grid.set_titles("{col_name}")
    for ax in grid.axes.flat:
        ax.tick_params(axis="x", rotation=30)
    return grid.figure
