"""Figures of the federations' data themselves (no training): who holds which labels."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import torch

from playerfl_core.book.style import (
    FIGURE_WIDTH,
    apply_book_style,
    class_color,
    dataset_label,
    panel_grid,
)

apply_book_style()


def label_mix(fd) -> pd.DataFrame:
    """Each client's training-label proportions: one row per (client, class), long format."""
    rows = []
    for c in fd.clients:
        counts = torch.bincount(c.y_train, minlength=fd.num_classes).numpy().astype(float)
        for k, share in enumerate(counts / counts.sum()):
            rows.append((c.name, fd.class_names[k], share, int(counts.sum())))
    return pd.DataFrame(rows, columns=["client", "label", "share", "n_train"])


def label_skew_tv(fd) -> float:
    """Mean total-variation distance between each client's training-label mix and the pooled
    one: 0 when every client has the pooled mix (IID), near 1 for disjoint label sets."""
    counts = np.stack(
        [torch.bincount(c.y_train, minlength=fd.num_classes).numpy() for c in fd.clients]
    ).astype(float)
    pooled = counts.sum(0) / counts.sum()
    mixes = counts / counts.sum(1, keepdims=True)
    return float(np.mean(0.5 * np.abs(mixes - pooled).sum(1)))


def plot_label_mixes(federations: Mapping[str, object], titles: Mapping[str, str] | None = None):
    """One panel per federation, at most three a row, spread evenly over the rows (short client
    numbers, shared axis): a stacked bar per client of its training-label proportions (same
    colour = same class in every panel), the class key below."""
    names = list(federations)
    fig, axes = panel_grid(
        len(names),
        max_cols=3,
        panel_height=2.6,
        width=FIGURE_WIDTH if len(names) > 1 else None,
        sharey=True,
    )
    for ax, name in zip(axes, names, strict=True):
        fd = federations[name]
        mix = label_mix(fd).pivot(index="client", columns="label", values="share")
        mix = mix.loc[[c.name for c in fd.clients], fd.class_names]
        bottom = np.zeros(len(mix))
        for k, cls in enumerate(fd.class_names):
            ax.bar(range(len(mix)), mix[cls], bottom=bottom, color=class_color(k), label=cls)
            bottom += mix[cls].to_numpy()
        ax.set_xticks(range(len(mix)), [str(i + 1) for i in range(len(mix))])
        ax.set_xlabel("client")
        ax.set_title((titles or {}).get(name, dataset_label(name)))
        if len(mix) > 10:
            ax.tick_params(axis="x", labelrotation=90)
    for ax in axes:
        if ax.get_subplotspec().is_first_col():
            ax.set_ylabel("share of training labels")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, title="class", loc="outside lower center",
               ncol=min(len(labels), 5), frameon=False)  # fmt: skip
    return fig
