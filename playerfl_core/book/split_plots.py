"""Figures of the split-sweep chapter, drawn from :mod:`playerfl_core.study.split_oracle` summaries.

Every function returns the matplotlib Figure; the chapter ends its cell with ``plt.show()``.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from playerfl_core.book.style import (
    FIGURE_WIDTH,
    MIN_FONT_PT,
    QUALITATIVE,
    RULE_VARIANT_HATCHES,
    apply_book_style,
    client_label,
    dataset_label,
    marker_color,
    panel_grid,
    rule_variant_color,
    rule_variant_label,
)

apply_book_style()

RULE_COLOR, ORACLE_COLOR = marker_color("rule"), marker_color("oracle")


def _panels(n: int, panel_height: float = 2.6):
    """One panel per dataset, two a row (:func:`~playerfl_core.book.style.panel_grid`)."""
    return panel_grid(n, panel_height=panel_height)


def _legend_below(fig, ax) -> None:
    """The legend of ``ax`` once, below all panels (every panel has the same entries)."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 4),
               frameon=False)  # fmt: skip


def sweep_curves(summary: pd.DataFrame, reg: pd.DataFrame):
    """Test score against p per dataset (mean over seeds, bootstrap CI band), the mean
    validation score dashed; ticks below the axis count the seeds whose rule (vermillion) and
    validation oracle (bluish green) picked each p."""
    datasets = list(dict.fromkeys(summary["dataset"]))
    fig, axes = _panels(len(datasets))
    for ax, ds in zip(axes, datasets, strict=True):
        s = summary[summary["dataset"] == ds].sort_values("p")
        ax.plot(s["p"], s["mean"], "o-", color="k", ms=4, label="test (mean)")
        ax.fill_between(s["p"], s["lo"], s["hi"], color="k", alpha=0.12)
        ax.plot(s["p"], s["val"], "s--", color="0.3", ms=3, label="validation (mean)")
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
        ax.set_ylim(bottom=ymin - 0.24 * span)  # room for the lowest row's largest marker
        ax.set_title(dataset_label(ds))
        ax.set_xlabel("federated units p")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    for k, ax in enumerate(axes):
        if k % 2 == 0:
            ax.set_ylabel("macro-F1")
    _legend_below(fig, axes[0])
    return fig


def regret_strip(reg: pd.DataFrame, summary: pd.DataFrame, by: str = "dataset"):
    """Per group: every seed's regret (dots) and the mean with its bootstrap CI (bar)."""
    groups = list(dict.fromkeys(summary[by]))
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, 0.4 * len(groups) + 1.2))
    for i, g in enumerate(groups):
        y = len(groups) - 1 - i
        vals = reg.loc[reg[by] == g, "regret"].to_numpy()
        jitter = np.linspace(-0.15, 0.15, len(vals)) if len(vals) > 1 else [0.0]
        ax.scatter(vals, y + np.asarray(jitter), s=14, color="grey", alpha=0.7)
        row = summary[summary[by] == g].iloc[0]
        ax.plot([row["lo"], row["hi"]], [y, y], color="k", lw=2)
        ax.plot(row["mean"], y, "o", color="k")
    ax.set_yticks(range(len(groups))[::-1], [dataset_label(str(g)) for g in groups])
    ax.axvline(0, color="grey", ls=":")
    ax.set_xlabel("regret = test macro-F1(oracle p) − test macro-F1(rule's p)")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def client_gain_lines(curves: pd.DataFrame, client_names: Mapping[str, list] | None = None):
    """Per dataset: each client's mean gain in test macro-F1 over Local against p (clients in
    the style's qualitative colours, solid then dashed past ten). One panel a row, its legend
    beside it: side by side, two panels' legends ran together into one row, and each panel's
    clients reuse the colours, so a panel's own marker shape and legend tell them apart."""
    datasets = list(dict.fromkeys(curves["dataset"]))
    fig, axes = panel_grid(len(datasets), max_cols=1, panel_height=2.4, width=FIGURE_WIDTH)
    for i, (ax, ds) in enumerate(zip(axes, datasets, strict=True)):
        d = curves[curves["dataset"] == ds]
        marker = CLIENT_PANEL_MARKERS[i % len(CLIENT_PANEL_MARKERS)]
        for k, (c, g) in enumerate(d.groupby("client")):
            g = g.sort_values("p")
            name = (client_names or {}).get(ds, [])
            ax.plot(
                g["p"],
                g["gain"],
                marker + ("-" if k < len(QUALITATIVE) else "--"),
                ms=3.5,
                color=QUALITATIVE[k % len(QUALITATIVE)],
                label=client_label(name[c]) if c < len(name) else f"client {c + 1}",
            )
        ax.axhline(0, color="grey", ls=":")
        ax.set_title(dataset_label(ds))
        ax.set_xlabel("federated units p")
        ax.set_ylabel("gain over Local\n(macro-F1)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.legend(title=dataset_label(ds), frameon=False, loc="center left",
                  bbox_to_anchor=(1.01, 0.5), handlelength=1.8)  # fmt: skip
    return fig


CLIENT_PANEL_MARKERS = ("o", "s", "^", "D")
"""One marker shape per panel of :func:`client_gain_lines`, so equal colours in two panels
(different clients) do not read as one client."""


FAMILY_GAP = 0.35
"""Extra room between two families of heterogeneity on the x axis (in federations)."""


def _family_positions(families) -> tuple[np.ndarray, list[list]]:
    """x of each federation (families apart by :data:`FAMILY_GAP`) and the families as
    [family, first index, last index], in the figure's order."""
    groups: list[list] = []
    for i, family in enumerate(families):
        if groups and groups[-1][0] == family:
            groups[-1][2] = i
        else:
            groups.append([family, i, i])
    x = np.arange(len(families), dtype=float)
    for k, (_, first, _) in enumerate(groups):
        x[first:] += FAMILY_GAP * (k > 0)
    return x, groups


def _family_ticks(ax, x, groups, levels) -> None:
    """x tick labels in two tiers: each federation's level on its tick (α=0.05, rotate, ...) and
    each family of heterogeneity written once below its federations, a thin line between
    families. A family of one federation (quantity skew, concept shift) is named on its tick
    instead, on two short lines, and a family whose levels share a label skew (mixed: rotate+α=0.1,
    noise+α=0.1) names it below, as a family of label skews names its "α" below its values, so
    neighbouring names never run into each other."""
    ticks, names = [], []
    for family, first, last in groups:
        own = [str(level) for level in levels[first : last + 1]]
        shared = {level.partition("+")[2] for level in own}
        if first == last:
            ticks.append(family.replace(" ", "\n", 1))
        elif len(shared) == 1 and "" not in shared:  # mixed: the α they share goes below
            ticks += [level.partition("+")[0] for level in own]
            family = f"{family}, {shared.pop()}"
        elif all(level.startswith("α=") for level in own):  # label skew: "α" once, below
            ticks += [level.removeprefix("α=") for level in own]
            family = f"{family}, α"
        else:
            ticks += [level.replace("+", "\n+") for level in own]
        names.append(family)
    ax.set_xticks(x, ticks)
    lines = max(t.count("\n") + 1 for t in ticks)
    below = 3.5 + 3.5 + lines * 1.25 * MIN_FONT_PT + 3  # tick, pad, the labels' lines, a gap
    for family, (_, first, last) in zip(names, groups, strict=True):
        if last > first:
            ax.annotate(family, xy=((x[first] + x[last]) / 2, 0),
                        xycoords=ax.get_xaxis_transform(), xytext=(0, -below),
                        textcoords="offset points", ha="center", va="top", fontsize=MIN_FONT_PT,
                        fontstyle="italic", annotation_clip=False)  # fmt: skip
    for _, first, _ in groups[1:]:
        ax.axvline((x[first - 1] + x[first]) / 2, color="0.6", lw=0.8)
    ax.set_xlim(x[0] - 0.6, x[-1] + 0.6)


def heterogeneity_splits(summary: pd.DataFrame, n_units: Mapping[str, int] | None = None):
    """The chosen and the oracle p against heterogeneity, one panel per base: every seed's rule
    p (vermillion dots, left) and validation-oracle p (bluish green, right), federations ordered
    from strong label skew to nearly IID, then feature skew, then mixed; each federation's level
    on its tick, its family of heterogeneity once below (:func:`_family_ticks`)."""
    bases = list(dict.fromkeys(summary["base"]))
    fig, axes = panel_grid(len(bases), max_cols=1, panel_height=2.8, width=FIGURE_WIDTH)
    for ax, base in zip(axes, bases, strict=True):
        s = summary[summary["base"] == base].sort_values("order")
        x, groups = _family_positions(list(s["family"]))
        for xi, row in zip(x, s.itertuples(), strict=True):
            for ps, dx, color in (
                (row.rule_ps, -0.12, RULE_COLOR),
                (row.oracle_ps, 0.12, ORACLE_COLOR),
            ):
                vals, counts = np.unique(ps, return_counts=True)
                ax.scatter(xi + dx + 0 * vals, vals, s=18 * counts, color=color, alpha=0.8)
        ax.scatter([], [], color=RULE_COLOR, label="rule's p (per seed)")
        ax.scatter([], [], color=ORACLE_COLOR, label="oracle p by validation (per seed)")
        _family_ticks(ax, x, groups, list(s["level"]))
        top = (n_units or {}).get(base)
        if top is not None:
            ax.set_ylim(-0.5, top + 0.5)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("federated units p")
        ax.set_title(dataset_label(base))
        ax.grid(axis="y", alpha=0.3)
    _legend_below(fig, axes[0])
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
                label=rule_variant_label(v),
                color=rule_variant_color(v),
                hatch=RULE_VARIANT_HATCHES.get(v, ""),
                edgecolor="white",
                linewidth=0,
            )
        if oracle and ds in oracle:
            ax.axvline(oracle[ds], color=ORACLE_COLOR, ls="--", label="oracle p (val)")
        ax.set_title(f"{dataset_label(ds)} ({d['seed'].nunique()} seeds)")
        ax.set_xlabel("rule's p")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(0, 1.05)
        ax.grid(axis="y", alpha=0.3)
    for k, ax in enumerate(axes):
        if k % 2 == 0:
            ax.set_ylabel("share of seeds")
    _legend_below(fig, axes[0])
    return fig
