"""Figures of the split-sweep chapter, drawn from :mod:`playerfl_core.study.split_oracle` summaries.

Every function returns the matplotlib Figure; the chapter ends its cell with ``plt.show()``.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from playerfl_core.book.style import dataset_label, marker_color, rule_variant_color

RULE_COLOR, ORACLE_COLOR = marker_color("rule"), marker_color("oracle")


def _panels(n: int, size=(3.6, 2.8), ncols: int = 3):
    ncols = min(ncols, n)
    nrows = int(np.ceil(n / ncols))
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(size[0] * ncols, size[1] * nrows), squeeze=False
    )
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def sweep_curves(summary: pd.DataFrame, reg: pd.DataFrame):
    """Test score against p per dataset (mean over seeds, bootstrap CI band), the mean
    validation score dashed; ticks below the axis count the seeds whose rule (red) and
    validation oracle (green) picked each p."""
    datasets = list(dict.fromkeys(summary["dataset"]))
    fig, axes = _panels(len(datasets))
    for ax, ds in zip(axes, datasets, strict=True):
        s = summary[summary["dataset"] == ds].sort_values("p")
        ax.plot(s["p"], s["mean"], "o-", color="k", ms=4, label="test (mean)")
        ax.fill_between(s["p"], s["lo"], s["hi"], color="k", alpha=0.12)
        ax.plot(s["p"], s["val"], "s--", color="grey", ms=3, label="validation (mean)")
        r = reg[reg["dataset"] == ds]
        ymin = float(np.nanmin(np.r_[s["lo"], s["val"]]))
        span = float(np.nanmax(np.r_[s["hi"], s["val"]])) - ymin or 1.0
        for col, color, dy, name in (
            ("p_rule", RULE_COLOR, 0.08, "rule's p"),
            ("p_oracle", ORACLE_COLOR, 0.16, "oracle p (val)"),
        ):
            counts = r[col].value_counts()
            ax.scatter(
                counts.index + (0.08 if col == "p_oracle" else -0.08),
                [ymin - dy * span] * len(counts),
                s=20 + 25 * counts.to_numpy(),
                color=color,
                marker="^",
                label=name,
                zorder=3,
            )
        ax.set_title(dataset_label(ds), fontsize=10)
        ax.set_xlabel("federated units p (0 = Local, L = FedAvg)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("macro-F1")
    axes[0].legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    return fig


def regret_strip(reg: pd.DataFrame, summary: pd.DataFrame, by: str = "dataset"):
    """Per group: every seed's regret (dots) and the mean with its bootstrap CI (bar)."""
    groups = list(dict.fromkeys(summary[by]))
    fig, ax = plt.subplots(figsize=(6.4, 0.45 * len(groups) + 1.2))
    for i, g in enumerate(groups):
        y = len(groups) - 1 - i
        vals = reg.loc[reg[by] == g, "regret"].to_numpy()
        jitter = np.linspace(-0.15, 0.15, len(vals)) if len(vals) > 1 else [0.0]
        ax.scatter(vals, y + np.asarray(jitter), s=14, color="grey", alpha=0.7)
        row = summary[summary[by] == g].iloc[0]
        ax.plot([row["lo"], row["hi"]], [y, y], color="k", lw=2)
        ax.plot(row["mean"], y, "o", color="k")
    ax.set_yticks(range(len(groups))[::-1], [dataset_label(str(g)) for g in groups], fontsize=8)
    ax.axvline(0, color="grey", ls=":")
    ax.set_xlabel("regret = test macro-F1(oracle p) − test macro-F1(rule's p)")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def client_gain_lines(curves: pd.DataFrame, client_names: Mapping[str, list] | None = None):
    """Per dataset: each client's mean gain in test macro-F1 over Local against p."""
    datasets = list(dict.fromkeys(curves["dataset"]))
    fig, axes = _panels(len(datasets))
    for ax, ds in zip(axes, datasets, strict=True):
        d = curves[curves["dataset"] == ds]
        for c, g in d.groupby("client"):
            g = g.sort_values("p")
            name = (client_names or {}).get(ds, [])
            ax.plot(
                g["p"], g["gain"], "o-", ms=3, label=name[c] if c < len(name) else f"client {c}"
            )
        ax.axhline(0, color="grey", ls=":")
        ax.set_title(dataset_label(ds), fontsize=10)
        ax.set_xlabel("federated units p")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    axes[0].set_ylabel("gain over Local (macro-F1)")
    fig.tight_layout()
    return fig


def heterogeneity_splits(summary: pd.DataFrame, n_units: Mapping[str, int] | None = None):
    """The chosen and the oracle p against heterogeneity, one panel per base: every seed's rule
    p (red dots, left) and validation-oracle p (green, right), federations ordered from strong
    label skew to nearly IID, then feature skew, then mixed."""
    bases = list(dict.fromkeys(summary["base"]))
    fig, axes = _panels(len(bases), size=(6.0, 3.0), ncols=2)
    for ax, base in zip(axes, bases, strict=True):
        s = summary[summary["base"] == base].sort_values("order")
        x = np.arange(len(s))
        for i, row in enumerate(s.itertuples()):
            for ps, dx, color in (
                (row.rule_ps, -0.12, RULE_COLOR),
                (row.oracle_ps, 0.12, ORACLE_COLOR),
            ):
                vals, counts = np.unique(ps, return_counts=True)
                ax.scatter(i + dx + 0 * vals, vals, s=18 * counts, color=color, alpha=0.8)
        ax.scatter([], [], color=RULE_COLOR, label="rule's p (per seed)")
        ax.scatter([], [], color=ORACLE_COLOR, label="oracle p by validation (per seed)")
        ax.set_xticks(
            x,
            [f"{f.split()[0]}\n{lv}" for f, lv in zip(s["family"], s["level"], strict=True)],
            fontsize=7,
        )
        top = (n_units or {}).get(base)
        if top is not None:
            ax.set_ylim(-0.5, top + 0.5)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("federated units p")
        ax.set_title(dataset_label(base), fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def stability_bars(splits: pd.DataFrame, oracle: Mapping[str, int] | None = None):
    """Per dataset: the share of seeds on which each rule variant picks each p, the dataset's
    oracle split marked."""
    datasets = list(dict.fromkeys(splits["dataset"]))
    variants = list(dict.fromkeys(splits["variant"]))
    fig, axes = _panels(len(datasets))
    width = 0.8 / len(variants)
    for ax, ds in zip(axes, datasets, strict=True):
        d = splits[splits["dataset"] == ds]
        top = max(int(d["p_rule"].max()), int((oracle or {}).get(ds, 0)))
        ps = range(0, top + 1)
        for k, v in enumerate(variants):
            share = d[d["variant"] == v]["p_rule"].value_counts(normalize=True)
            ax.bar(
                np.array(ps) + (k - (len(variants) - 1) / 2) * width,
                [share.get(p, 0.0) for p in ps],
                width,
                label=v,
                color=rule_variant_color(v),
            )
        if oracle and ds in oracle:
            ax.axvline(oracle[ds], color=ORACLE_COLOR, ls="--", label="oracle p (val)")
        ax.set_title(f"{dataset_label(ds)} ({d['seed'].nunique()} seeds)", fontsize=10)
        ax.set_xlabel("rule's p")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(0, 1.05)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("share of seeds")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig
