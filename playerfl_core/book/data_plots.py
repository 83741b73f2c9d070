"""Figures of the federations' data themselves (no training): who holds which labels."""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from playerfl_core.book.style import dataset_label


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
    """One panel per federation: a stacked bar per client of its training-label proportions
    (same colour = same class in every panel)."""
    names = list(federations)
    fig, axes = plt.subplots(
        1, len(names), figsize=(3.0 * len(names) + 1.2, 3.4), sharey=True, squeeze=False
    )
    cmap = plt.get_cmap("tab10")
    for ax, name in zip(axes[0], names, strict=True):
        fd = federations[name]
        mix = label_mix(fd).pivot(index="client", columns="label", values="share")
        mix = mix.loc[[c.name for c in fd.clients], fd.class_names]
        bottom = np.zeros(len(mix))
        for k, cls in enumerate(fd.class_names):
            ax.bar(range(len(mix)), mix[cls], bottom=bottom, color=cmap(k % 10), label=cls)
            bottom += mix[cls].to_numpy()
        ax.set_xticks(range(len(mix)), [str(i + 1) for i in range(len(mix))])
        ax.set_xlabel("client")
        ax.set_title((titles or {}).get(name, dataset_label(name)), fontsize=10)
    axes[0, 0].set_ylabel("share of training labels")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, title="class", loc="center right", fontsize=8)
    fig.tight_layout(rect=(0, 0, 1 - 1.0 / (3.0 * len(names) + 1.2), 1))
    return fig
