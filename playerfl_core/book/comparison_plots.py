"""Figures comparing algorithms, drawn from metric tables (themselves from the results table)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator
from scipy.stats import spearmanr

from playerfl_core.book.style import (
    FIGURE_WIDTH,
    KEY_ALGORITHMS,
    KEY_MARKERS,
    MIN_FONT_PT,
    MUTED,
    algorithm_color,
    apply_book_style,
    client_label,
    dataset_label,
    panel_grid,
)
from playerfl_core.book.style import algorithm_label as label
from playerfl_core.fl.algorithms import ALGORITHMS

apply_book_style()

HIGHLIGHT = KEY_ALGORITHMS
"""The algorithms drawn in their own colour; the other baselines are muted."""


def _color(algorithm: str) -> str:
    return algorithm_color(algorithm) if algorithm in HIGHLIGHT else MUTED


def _marker(algorithm: str) -> str:
    return KEY_MARKERS.get(algorithm, "o")


def _order(algorithms) -> list[str]:
    """Registry order (Local, FedAvg, ..., PLayer-FL, PLayer-FL-Random), unknown names last."""
    present = list(dict.fromkeys(algorithms))
    return [a for a in ALGORITHMS if a in present] + [a for a in present if a not in ALGORITHMS]


def plot_summary(summary: pd.DataFrame, metric_label: str):
    """Median over seeds with its bootstrap CI, one panel per dataset, algorithms as rows.
    Three panels a row: they share the algorithm names, so each panel is only a short axis."""
    datasets = list(dict.fromkeys(summary["dataset"]))
    algorithms = _order(summary["algorithm"])
    fig, axes = panel_grid(
        len(datasets),
        max_cols=3,
        panel_height=0.26 * len(algorithms) + 0.8,
        width=FIGURE_WIDTH if len(datasets) > 1 else None,
        sharey=True,
    )
    for ax, ds in zip(axes, datasets, strict=True):
        d = summary[summary["dataset"] == ds].set_index("algorithm").reindex(algorithms)
        y = np.arange(len(algorithms))
        for i, alg in enumerate(algorithms):
            row = d.loc[alg]
            if pd.isna(row["median"]):
                continue
            ax.errorbar(
                row["median"],
                i,
                xerr=[[row["median"] - row["ci_low"]], [row["ci_high"] - row["median"]]],
                fmt=_marker(alg),
                color=_color(alg),
                capsize=3,
            )
        ax.set_yticks(y, [label(a) for a in algorithms])
        if not ax.yaxis_inverted():  # shared y: inverting each panel would toggle it back
            ax.invert_yaxis()
        ax.set_title(dataset_label(ds))
        ax.set_xlabel(metric_label)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
        ax.grid(axis="x", alpha=0.3)
    return fig


def plot_client_medians(medians: pd.DataFrame, metric_label: str, client_names=None):
    """Each client's median score per algorithm (dots), one panel per dataset.

    The reference models (Local, FedAvg), PLayer-FL and PLayer-FL-Random are coloured, each
    with its own marker shape; a client "gains" from PLayer-FL when the vermillion circle is
    above both the grey square and the blue diamond. Two panels a row.
    """
    datasets = list(dict.fromkeys(medians["dataset"]))
    algorithms = _order(medians["algorithm"])
    fig, axes = panel_grid(len(datasets), panel_height=2.8)
    offsets = np.linspace(-0.3, 0.3, len(algorithms))
    for ax, ds in zip(axes, datasets, strict=True):
        d = medians[medians["dataset"] == ds]
        clients = sorted(d["client"].unique())
        for off, alg in zip(offsets, algorithms, strict=True):
            a = d[d["algorithm"] == alg].set_index("client").reindex(clients)
            strong = alg in HIGHLIGHT
            ax.scatter(
                np.arange(len(clients)) + off,
                a["median"],
                s=28 if strong else 12,
                color=_color(alg),
                marker=_marker(alg),
                zorder=3 if strong else 2,
                label=label(alg) if strong else None,
            )
        names = [client_label(client_names.get((ds, c), c) if client_names else c) for c in clients]
        ax.set_xticks(range(len(clients)), names, rotation=30, ha="right", rotation_mode="anchor")
        ax.set_title(dataset_label(ds))
        ax.set_ylabel(metric_label)
        ax.grid(axis="y", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    handles.append(plt.Line2D([], [], marker="o", ls="", color=MUTED, markersize=4))
    labels.append("other baselines")
    fig.legend(handles, labels, loc="outside upper center", ncol=min(len(labels), 3), frameon=False)
    return fig


def plot_cd_diagram(mean_ranks: pd.Series, cd: float, title: str = ""):
    """Critical-difference diagram (Demšar 2006): mean ranks on an axis, best on the left.

    A bar of length ``cd`` is drawn at the top; algorithms whose mean ranks differ by less
    than ``cd`` are joined by a thick line (not significantly different by Nemenyi).
    """
    r = mean_ranks.dropna().sort_values()
    k = len(r)
    lo, hi = 1, max(k, int(np.ceil(r.max())))
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, 1.2 + 0.24 * k))
    ax.set_xlim(lo - 0.3, hi + 0.3)
    ax.set_ylim(0, 1.1)
    ax.axis("off")
    top = 0.82
    ax.plot([lo, hi], [top, top], color="k", lw=1)
    for t in range(lo, hi + 1):
        ax.plot([t, t], [top, top + 0.03], color="k", lw=1)
    if np.isfinite(cd):
        ax.plot([lo, lo + cd], [0.98, 0.98], color="k", lw=2)
        ax.text(lo + cd / 2, 0.99, f"CD = {cd:.2f}", ha="center", va="bottom", fontsize=MIN_FONT_PT)
    half = (k + 1) // 2
    step = 0.62 / max(half, 1)
    names = []
    for i, (alg, rank) in enumerate(r.items()):
        left = i < half
        y = top - 0.08 - step * (i if left else k - 1 - i)
        x_text = lo - 0.2 if left else hi + 0.2
        ax.plot([rank, rank, x_text], [top, y, y], color=_color(alg), lw=1)
        names.append(
            ax.text(
                x_text,
                y,
                f"{label(alg)} ({rank:.2f})",
                ha="right" if left else "left",
                va="center",
                fontsize=MIN_FONT_PT,
                color=_color(alg) if alg in HIGHLIGHT else "k",
            )
        )
    # cliques: maximal runs of consecutive algorithms within cd of each other
    vals = r.to_numpy()
    cliques = []
    for i in range(k):
        j = i
        while j + 1 < k and vals[j + 1] - vals[i] < cd:
            j += 1
        if j > i and not any(a <= i and j <= b for a, b in cliques):
            cliques.append((i, j))
    for n, (i, j) in enumerate(cliques):
        y = top - 0.03 - 0.035 * n
        ax.plot([vals[i] - 0.03, vals[j] + 0.03], [y, y], color="k", lw=3, alpha=0.6)
    if title:
        ax.set_title(title)
    _margins_for(fig, ax, names)
    for t in range(lo, hi + 1, rank_label_step(fig, ax, hi - lo + 0.6)):
        ax.text(t, top + 0.05, str(t), ha="center", va="bottom", fontsize=MIN_FONT_PT)
    return fig


RANK_LABEL_SPACING = 0.3
"""Inches a rank label of the critical-difference diagram needs: closer, "9 10 11 12" ran
together into "9 101112"."""


def rank_label_step(fig, ax, span: float) -> int:
    """Every how many ranks the diagram labels its axis, so that labels keep
    :data:`RANK_LABEL_SPACING` apart once the names' margins have narrowed the axis."""
    inches = ax.get_position().width * fig.get_figwidth() / span
    return max(1, int(np.ceil(RANK_LABEL_SPACING / inches)))


def _margins_for(fig, ax, texts) -> None:
    """Side margins wide enough for the names written beside the rank axis, so the figure
    keeps its width instead of the names spilling past it."""
    fig.canvas.draw()
    widest = max((t.get_window_extent().width for t in texts), default=0) / fig.dpi
    side = min((widest + 0.3) / fig.get_figwidth(), 0.45)
    fig.subplots_adjust(left=side, right=1 - side, top=0.9 if ax.get_title() else 0.98, bottom=0.02)


def plot_paired(
    diffs: pd.DataFrame,
    metric_label: str,
    title: str = "",
    pair: tuple[str, str] = ("playerfl", "playerfl_random"),
):
    """Per-seed paired differences ``pair[0] − pair[1]``, one column per dataset; a seed is
    drawn in the colour of the algorithm it favours."""
    positive, negative = (algorithm_color(a) for a in pair)
    datasets = list(dict.fromkeys(diffs["dataset"]))
    fig, ax = plt.subplots(figsize=(min(1.8 + 1.4 * len(datasets), FIGURE_WIDTH), 3.0))
    for i, ds in enumerate(datasets):
        d = diffs[diffs["dataset"] == ds]["diff"].to_numpy()
        jitter = np.linspace(-0.12, 0.12, len(d)) if len(d) > 1 else np.zeros(1)
        ax.scatter(i + jitter, d, color=np.where(d > 0, positive, negative), zorder=3)
        ax.plot([i - 0.25, i + 0.25], [np.median(d)] * 2, color="k", lw=2)
    ax.axhline(0, color="0.5", lw=1, ls="--")
    ax.set_xticks(range(len(datasets)), [dataset_label(d) for d in datasets])
    if len(datasets) > 4:
        ax.tick_params(axis="x", labelrotation=30)
    ax.set_ylabel(metric_label)
    if title:
        ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def plot_ours_vs_published(ours: pd.DataFrame, theirs: pd.DataFrame, metric_label: str):
    """Scatter of our medians against the published ones, one panel per dataset.

    Both frames are algorithms × datasets. Absolute values differ (smaller data and models
    here), so the panel to read is the *ordering*: the Spearman correlation is in each title.
    Coloured points and the extremes are labelled, each name placed where it covers no point
    and no other name (:func:`place_labels`); grey points are the other baselines.
    """
    datasets = [d for d in ours.columns if d in theirs.columns]
    if not datasets:  # e.g. a user's own federation: nothing published to compare with
        fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, 1.2))
        ax.axis("off")
        ax.text(0.5, 0.5, "None of these federations is in the paper's tables.", ha="center")
        return fig
    fig, axes = panel_grid(len(datasets), panel_height=3.0)
    named = []
    for ax, ds in zip(axes, datasets, strict=True):
        both = pd.concat([ours[ds].rename("ours"), theirs[ds].rename("theirs")], axis=1).dropna()
        extremes = {both[c].idxmin() for c in both} | {both[c].idxmax() for c in both}
        for alg, row in both.iterrows():
            ax.scatter(row["theirs"], row["ours"], color=_color(alg), zorder=3)
        # the rest stay unlabelled: they crowd
        shown = [a for a in both.index if a in HIGHLIGHT or a in extremes]
        named.append((ax, both.loc[shown, "theirs"], both.loc[shown, "ours"], shown))
        rho = spearmanr(both["theirs"], both["ours"]).statistic if len(both) > 2 else np.nan
        ax.set_title(f"{dataset_label(ds)}: Spearman ρ = {rho:.2f}")
        ax.set_xlabel(f"published {metric_label}")
        ax.set_ylabel(f"ours {metric_label}")
        ax.margins(0.12)  # room inside the frame for the names of points at the edges
        ax.grid(alpha=0.3)
    fig.canvas.draw()  # the final layout, so the names are placed in the axes' final size
    for ax, x, y, algorithms in named:
        place_labels(ax, x.to_numpy(), y.to_numpy(), [label(a) for a in algorithms])
    return fig


_DIRECTIONS = ((1, 0), (-1, 0), (1, 1), (-1, 1), (1, -1), (-1, -1), (0, 1), (0, -1))


CLEAR_PT = 2
"""Space (points) a name keeps from every marker's edge, so that it never touches a dot."""

LEADER_FROM = 14
"""A name placed this far from its point (points) or farther is joined to it by a thin line."""


def place_labels(ax, x, y, texts, distances=(4, 9, 16, 26, 38)) -> list:
    """Write ``texts[i]`` beside the point (x[i], y[i]) of ``ax`` where it covers no marker of
    the axes' scatter plots (nor comes within :data:`CLEAR_PT` of one), no name already placed
    and stays inside the frame, nearer its own point than any other (or joined to it by a line,
    from :data:`LEADER_FROM` points away): the first such place among eight directions at
    growing distances (points), else the one covering least. Plain matplotlib (no adjustText);
    call it after the figure's layout is final."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    if len(texts):
        _room_beside(ax, np.asarray(x, float), texts, renderer)
    frame = ax.get_window_extent(renderer)
    markers = []  # (centre, radius) of every marker on the axes, in pixels
    for coll in ax.collections:
        offsets = coll.get_offset_transform().transform(coll.get_offsets())
        sizes = coll.get_sizes() if len(coll.get_sizes()) else [36.0]
        for k, centre in enumerate(offsets):
            area = sizes[k % len(sizes)]
            markers.append((centre, (np.sqrt(area) / 2 + CLEAR_PT) * fig.dpi / 72))
    placed, out = [], []
    for xi, yi, text in zip(x, y, texts, strict=True):
        note = ax.annotate(text, (xi, yi), xytext=(0, 0), textcoords="offset points",
                           fontsize=MIN_FONT_PT)  # fmt: skip
        best = None
        for r in distances:
            for dx, dy in _DIRECTIONS:
                note.xyann = (dx * r, dy * r)
                note.set_horizontalalignment({1: "left", -1: "right", 0: "center"}[dx])
                note.set_verticalalignment({1: "bottom", -1: "top", 0: "center"}[dy])
                box = note.get_window_extent(renderer)
                own = ax.transData.transform((xi, yi))
                cost = _covered(box, own, markers, placed, frame, r < LEADER_FROM)
                if best is None or cost < best[0]:
                    best = (cost, note.xyann, note.get_ha(), note.get_va())
                if cost == 0:
                    break
            if best[0] == 0:
                break
        note.remove()
        leader = max(abs(v) for v in best[1]) >= LEADER_FROM
        note = ax.annotate(text, (xi, yi), xytext=best[1], textcoords="offset points",
                           ha=best[2], va=best[3], fontsize=MIN_FONT_PT,
                           arrowprops=_LEADER if leader else None)  # fmt: skip
        placed.append(note.get_window_extent(renderer))
        out.append(note)
    return out


def _room_beside(ax, x, texts, renderer) -> None:
    """Widen the x limits so the rightmost point's name fits to its right and the leftmost
    point's to its left, inside the frame."""
    probe = ax.text(0, 0, "", fontsize=MIN_FONT_PT)
    widths = []
    for text in texts:
        probe.set_text(text)
        widths.append(probe.get_window_extent(renderer).width + 20)  # and the 4-pt offset
    probe.remove()
    lo, hi = ax.get_xlim()
    span = ax.get_window_extent(renderer).width
    right, left = int(np.argmax(x)), int(np.argmin(x))
    k_right, k_left = (min(widths[i] / span, 0.4) for i in (right, left))
    for _ in range(8):  # widening one side narrows the other's room: a few rounds settle both
        hi = max(hi, (x[right] - k_right * lo) / (1 - k_right))
        lo = min(lo, (x[left] - k_left * hi) / (1 - k_left))
    ax.set_xlim(lo, hi)


_LEADER = {"arrowstyle": "-", "lw": 0.6, "color": "0.35", "shrinkA": 1, "shrinkB": 4}


def _gap(box, point) -> float:
    """Distance in pixels from a box to a point (0 inside)."""
    dx = max(box.x0 - point[0], 0, point[0] - box.x1)
    dy = max(box.y0 - point[1], 0, point[1] - box.y1)
    return float(np.hypot(dx, dy))


def _covered(box, own, markers, placed, frame, near: bool = True) -> float:
    """How bad a label's place is: the area (pixels²) it covers of markers, of other labels and
    outside the frame, and, when ``near`` (no line joins it to its point), how much nearer it
    is to another point than to its own (a name must be read as its own point's); 0 when the
    place is free."""
    cost = 0.0
    mine = _gap(box, own)
    for centre, radius in markers:
        gap = _gap(box, centre)
        if gap < radius:
            cost += radius * radius
        if near and np.hypot(*(centre - own)) > 1 and gap < mine:
            cost += 50 * (mine - gap)
    for other in placed:
        w = min(box.x1, other.x1) - max(box.x0, other.x0)
        h = min(box.y1, other.y1) - max(box.y0, other.y0)
        if w > 0 and h > 0:
            cost += w * h
    outside = box.width * box.height
    w = min(box.x1, frame.x1) - max(box.x0, frame.x0)
    h = min(box.y1, frame.y1) - max(box.y0, frame.y0)
    if w > 0 and h > 0:
        outside -= w * h
    return cost + 4 * outside
