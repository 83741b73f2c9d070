"""Figures of chapter 04b (the split rules as a family, the pre-registered test).

Every function returns the matplotlib Figure; the chapter ends its cell with ``plt.show()``.
Sizes, fonts and colours come from :mod:`playerfl_core.book.style`.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import MaxNLocator

from playerfl_core.book.style import (
    FIGURE_WIDTH,
    MARKER_COLORS,
    MUTED,
    ORACLE_MARKER,
    SPLIT_RULE_COLORS,
    SPLIT_RULE_LINESTYLES,
    SPLIT_RULE_MARKERS,
    apply_book_style,
    dataset_label,
    panel_grid,
    rule_label,
)
from playerfl_core.study import preregistration as P

apply_book_style()

ORACLE = "oracle (validation)"


def _style_key(label: str) -> str | None:
    """The key of a pre-registered entry in the style's split-rule tables (its rule; the paper
    rule with a tuned threshold ``paper_tuned``); None for the oracle or an unknown label."""
    entry = next((e for e in P.ALL_ENTRIES if e.label == label), None)
    if entry is None:
        return None
    if entry.rule == "paper" and entry.threshold is None:
        return "paper_tuned"
    return entry.rule


def entry_color(label: str) -> str:
    """The colour of a pre-registered entry (by its rule; the tuned paper rule orange)."""
    key = _style_key(label)
    if key is None:
        return MARKER_COLORS["oracle"] if label == ORACLE else MUTED
    return SPLIT_RULE_COLORS[key]


def entry_linestyle(label: str) -> str:
    """The line style of a pre-registered entry (the paper's forms differ in dashes); the
    oracle's and an unknown label's solid."""
    key = _style_key(label)
    return SPLIT_RULE_LINESTYLES[key] if key else "-"


def entry_marker(label: str) -> str:
    """The marker shape of a pre-registered entry; the oracle's and an unknown label's a star
    (the paper's rule has the circle)."""
    key = _style_key(label)
    return SPLIT_RULE_MARKERS[key] if key else ORACLE_MARKER


def tuning_curves(tuning: pd.DataFrame):
    """Mean development regret against each rule's threshold, the tuned value marked; three
    panels a row (a shared y axis, few threshold ticks)."""
    rules = list(dict.fromkeys(tuning["rule"]))
    fig, axes = panel_grid(
        len(rules), max_cols=3, panel_height=2.3, width=FIGURE_WIDTH, sharey=True
    )
    for ax, rule in zip(axes, rules, strict=True):
        t = tuning[tuning["rule"] == rule]
        color = SPLIT_RULE_COLORS[rule]
        ax.plot(t["threshold"], t["regret"], "o-", color=color, ms=4)
        best = t.sort_values(["regret", "threshold"]).iloc[0]
        ax.plot(best["threshold"], best["regret"], "*", color="k", ms=11, label="tuned")
        if rule == "paper":
            ax.set_xscale("log", base=2)
        else:
            ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
        ax.set_title(rule_label(rule))
        ax.set_xlabel("threshold")
        ax.grid(alpha=0.3)
    for ax in axes:
        if ax.get_subplotspec().is_first_col():
            ax.set_ylabel("mean regret (dev.)")
    axes[0].legend()
    return fig


LEGEND_HANDLE = 4.0
"""Legend handles' length (font sizes) in the rule figures: the dash-dot pattern of a 1.6-pt line
repeats every 17 pt, so matplotlib's default 2 (18 pt at 9 pt) showed one dash, read as solid."""


ENTRY_MARKER_PT = 5.0
"""Size of an entry's mean marker in the regret figure (points)."""
ENTRY_PITCH_IN = 0.075
"""Inches between two entries' rows within a kind: more than a marker (5 pt = 0.069 in), so the
paper's four forms, whose intervals nearly coincide, stay four rows (at 0.057 in their 6-pt
markers overlapped into one line)."""


def regret_by_kind(verdicts: pd.DataFrame, tolerance: float):
    """Per kind of heterogeneity (rows) and entry: mean regret with its 95 % interval; the
    dashed vertical line is the tolerance δ. Each entry has its own colour, marker shape and (the
    paper's four forms) dashes, so no entry rests on colour alone (Fig. 28 drew every mean as a
    circle, and its dark-brown and black entries read alike); a filled marker is a decided
    verdict (within δ left of the line, beyond it right of it: the test of the mean decides
    only on that side), an open one undecided. The legend shows each entry's line and marker
    over a handle long enough for its dashes. Each kind is as tall as its entries need
    (:data:`ENTRY_PITCH_IN`), so no two entries' markers overlap."""
    kinds = [k for k in P.KIND_ORDER if k in set(verdicts["kind"])]
    entries = list(dict.fromkeys(verdicts["entry"]))
    rows_in = len(kinds) * len(entries) * ENTRY_PITCH_IN / 0.8  # entries fill 0.8 of a kind
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, rows_in + 2.2), layout="constrained")
    step = 0.8 / len(entries)
    for j, entry in enumerate(entries):
        e = verdicts[verdicts["entry"] == entry].set_index("kind")
        style = {"color": entry_color(entry), "ls": entry_linestyle(entry), "lw": 1.6}
        marker = entry_marker(entry)
        for i, kind in enumerate(kinds):
            if kind not in e.index:
                continue
            r = e.loc[kind]
            y = len(kinds) - 1 - i + 0.4 - (j + 0.5) * step
            ax.plot([r["lo"], r["hi"]], [y, y], **style)
            face = style["color"] if r["verdict"] != "undecided" else "white"
            ax.plot(r["mean"], y, marker, color=style["color"], mfc=face, ms=ENTRY_MARKER_PT)
        ax.plot([], [], **style, marker=marker, ms=ENTRY_MARKER_PT, mfc="white", label=entry)
    ax.axvline(tolerance, color="k", ls="--", lw=1)
    ax.axvline(0, color="grey", lw=0.6)
    ax.set_yticks(range(len(kinds)), kinds[::-1])
    ax.xaxis.set_major_locator(MaxNLocator(nbins=6))  # room for "−0.025" at 10 pt
    ax.set_xlabel("regret: test macro-F1 of the oracle's p − of the rule's p")
    ax.grid(axis="x", alpha=0.3)
    fig.legend(loc="outside lower center", ncol=2, frameon=False, handlelength=LEGEND_HANDLE)
    return fig


def tolerance_plot(curve: pd.DataFrame):
    """Per entry: how many kinds of heterogeneity are within δ as δ grows. Entries with the
    same count are drawn a little apart (up to ±0.25 of a kind), so no line hides another; each
    entry has its own colour, dashes and marker."""
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, 3.8), layout="constrained")
    n_kinds = curve["kind"].nunique()
    entries = list(dict.fromkeys(curve["entry"]))
    step = min(0.07, 0.5 / max(len(entries) - 1, 1))
    for j, (entry, g) in enumerate(curve.groupby("entry", sort=False)):
        within = g.groupby("tolerance")["verdict"].apply(lambda v: (v == P.WITHIN).sum())
        dodge = (j - (len(entries) - 1) / 2) * step
        ax.plot(within.index, within.to_numpy() + dodge, color=entry_color(entry),
                ls=entry_linestyle(entry), marker=entry_marker(entry), ms=4.5, lw=1.5,
                label=entry)  # fmt: skip
    ax.axvline(P.TOLERANCE, color="k", ls="--", lw=1)
    ax.set_ylim(-0.3, n_kinds + 0.3)
    ax.set_xlabel("tolerance δ (macro-F1)")
    ax.set_ylabel(f"kinds within δ (of {n_kinds})")
    ax.grid(alpha=0.3)
    fig.legend(loc="outside lower center", ncol=2, frameon=False, handlelength=LEGEND_HANDLE)
    return fig


def split_dots(dist: pd.DataFrame, sources: Sequence[str]):
    """Per federation (rows, by kind): the split each source picks on each seed, dot area ∝
    number of seeds; each source its own colour and shape, the oracle's bluish-green stars."""
    feds = list(dict.fromkeys(dist.sort_values("kind", key=_kind_rank, kind="stable")["dataset"]))
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, 0.36 * len(feds) + 1.2), layout="constrained")
    step = 0.8 / len(sources)
    for j, source in enumerate(sources):
        s = dist[dist["source"] == source]
        for i, ds in enumerate(feds):
            d = s[s["dataset"] == ds]
            y = len(feds) - 1 - i + 0.4 - (j + 0.5) * step
            ax.scatter(d["p"], [y] * len(d), s=14 * d["seeds"], color=entry_color(source),
                       marker=entry_marker(source), alpha=0.85, lw=0)  # fmt: skip
        ax.scatter([], [], s=40, color=entry_color(source), marker=entry_marker(source),
                   label=source)  # fmt: skip
    ax.set_yticks(range(len(feds)), [dataset_label(f) for f in feds][::-1])
    top = int(dist["p"].max())
    ax.set_xticks(range(top + 1))
    ax.set_xlabel("federated units p (0 = Local, L = FedAvg)")
    ax.grid(axis="x", alpha=0.3)
    fig.legend(loc="outside lower center", ncol=2, frameon=False)
    return fig


def _kind_rank(kinds: pd.Series) -> pd.Series:
    order = {k: i for i, k in enumerate(P.KIND_ORDER)}
    return kinds.map(lambda k: order.get(k, len(order)))
