"""Figures for the layer-analytics chapters, drawn from the long analytics table of
:func:`playerfl_core.measure.layer_studies.layer_analytics` (or summaries of it), never from
live models.

Every function returns the matplotlib Figure; the chapter ends its cell with ``plt.show()``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from playerfl_core.book.style import (  # noqa: F401 (METRIC_LABELS, metric_label re-exported)
    FIGURE_WIDTH,
    MARKER_COLORS,
    MARKER_LINESTYLES,
    MARKER_NAMES,
    METRIC_LABELS,
    algorithm_color,
    algorithm_label,
    apply_book_style,
    category_color,
    dataset_color,
    dataset_label,
    marker_color,
    measure_color,
    metric_label,
    panel_grid,
    thin_ticks,
)

apply_book_style()

STAGE_STYLES = {"first": "--", "final": "-"}


def _line_color(name: str) -> str:
    """An algorithm's colour; a combined label (e.g. 'Local = FedAvg') gets the shared colour."""
    try:
        return algorithm_color(name)
    except ValueError:
        return marker_color("shared")


def _units(frame: pd.DataFrame) -> list[str]:
    return list(frame.sort_values("depth").drop_duplicates("depth")["unit"])


def _band(ax, x, mean, lo, hi, log: bool, **style):
    """A line with its CI band; on a log axis non-positive bounds are dropped from the band."""
    (line,) = ax.plot(x, mean, **{"marker": "o", "ms": 4, **style})
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    ok = np.isfinite(lo) & np.isfinite(hi)
    if log:
        ok &= lo > 0
    if ok.any():
        ax.fill_between(np.asarray(x)[ok], lo[ok], hi[ok], color=line.get_color(), alpha=0.15)
    return line


def _distinct_lines(d: pd.DataFrame):
    """(algorithms, stage, rows) per line to draw; algorithms whose profiles are identical at a
    stage (Local and FedAvg after the first epoch) share one line instead of hiding each other."""
    lines = []
    for stage, gs in d.groupby("stage", sort=False):
        drawn: list[tuple[list[str], pd.DataFrame]] = []
        for algo, g in gs.groupby("algorithm", sort=False):
            g = g.sort_values("depth")
            for algos, h in drawn:
                if np.array_equal(h["mean"].to_numpy(), g["mean"].to_numpy()):
                    algos.append(algo)
                    break
            else:
                drawn.append(([algo], g))
        lines.extend((algos, stage, g) for algos, g in drawn)
    return lines


def unit_profiles(
    summary: pd.DataFrame,
    metrics: Sequence[str],
    log_metrics: Sequence[str] = (),
    panel_height: float = 2.2,
):
    """Grid of per-unit profiles: one row per metric, one column per dataset (three columns
    at most: short unit names, rotated when many); a line per (algorithm, stage) with its
    confidence band over seeds, one legend above.

    ``summary``: :func:`~playerfl_core.measure.layer_studies.seed_summary` by dataset, algorithm,
    stage, metric, depth, unit.
    """
    datasets = list(dict.fromkeys(summary["dataset"]))
    ncols = min(len(datasets), 3)
    per_metric = -(-len(datasets) // ncols)
    fig, flat = panel_grid(
        ncols * per_metric * len(metrics), max_cols=ncols, panel_height=panel_height
    )
    for i, metric in enumerate(metrics):
        for j, name in enumerate(datasets):
            ax = flat[i * ncols * per_metric + j]
            d = summary[(summary["dataset"] == name) & (summary["metric"] == metric)]
            log = metric in log_metrics
            for algos, stage, g in _distinct_lines(d):
                shared = len(algos) > 1
                _band(
                    ax,
                    g["depth"],
                    g["mean"],
                    g["lo"],
                    g["hi"],
                    log,
                    color=marker_color("shared") if shared else _line_color(algos[0]),
                    ls=STAGE_STYLES.get(stage, ":"),
                    # hollow squares: the shared black line is told from Local's dark grey by
                    # shape, not by two near-black shades
                    **({"marker": "s", "mfc": "white"} if shared else {}),
                    label=f"{' = '.join(algorithm_label(a) for a in algos)}, {stage}",
                )
            if log:
                ax.set_yscale("log")
            units = _units(d)
            ax.set_xticks(range(1, len(units) + 1), units)
            thin_ticks(ax, max_labels=4 if ncols > 2 else 6)
            if i == 0 or per_metric > 1:
                ax.set_title(dataset_label(name))
            if j % ncols == 0:
                ax.set_ylabel(textwrap.fill(metric_label(metric), 22))
            ax.grid(alpha=0.3)
    for j in range(len(datasets), ncols * per_metric):  # cells left empty by wrapping
        for i in range(len(metrics)):
            flat[i * ncols * per_metric + j].set_visible(False)
    handles, labels = flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncol=min(len(labels), 3) or 1,
               frameon=False)  # fmt: skip
    return fig


def cka_heatmaps(matrices: Mapping[str, np.ndarray], client_names: Sequence[str], title: str = ""):
    """One client × client heatmap of linear CKA per unit (``{unit: K×K}``), three a row
    (square panels with short client labels stay legible), one colour bar."""
    units = list(matrices)
    ncols = min(len(units), 3)
    fig, axes = panel_grid(
        len(units), max_cols=ncols, panel_height=2.0, width=FIGURE_WIDTH if ncols > 1 else 3.4
    )
    for ax, unit in zip(axes, units, strict=True):
        im = ax.imshow(matrices[unit], vmin=0, vmax=1, cmap="viridis")
        ax.set_title(unit)
        ticks = range(len(client_names))
        ax.set_xticks(ticks, client_names, rotation=90)
        ax.set_yticks(ticks, client_names if ax.get_subplotspec().is_first_col() else [])
    fig.colorbar(im, ax=axes, shrink=0.8, label="linear CKA")
    if title:
        fig.suptitle(title)
    return fig


def forest(
    summary: pd.DataFrame,
    row_label: Sequence[str],
    xlabel: str = "Spearman ρ",
    ref: float = 0.0,
    color_by: str | None = None,
):
    """Point estimates with confidence intervals, one row per line of ``summary`` (columns
    mean, lo, hi), labelled by the columns ``row_label``; a vertical reference line at ``ref``.
    ``color_by`` ('dataset', 'metric'/'measure', 'algorithm') takes the style's colours, so a
    measure or a dataset is the same colour in every chapter."""
    n = len(summary)
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, 0.26 * n + 1.0))
    y = np.arange(n)[::-1]
    colors = None
    if color_by is not None:
        colors = [category_color(color_by, k) for k in summary[color_by]]
    lo = summary["lo"].fillna(summary["mean"]).to_numpy()
    hi = summary["hi"].fillna(summary["mean"]).to_numpy()
    mean = summary["mean"].to_numpy()
    for k in range(n):
        c = colors[k] if colors else "k"
        ax.plot([lo[k], hi[k]], [y[k], y[k]], color=c, lw=1.5)
        ax.plot(mean[k], y[k], "o", color=c, ms=5)
    labels = [" · ".join(str(r[c]) for c in row_label) for _, r in summary.iterrows()]
    ax.set_yticks(y, labels)
    ax.axvline(ref, color="grey", ls=":")
    ax.set_xlabel(xlabel)
    if xlabel.startswith("Spearman"):
        ax.set_xlim(-1.05, 1.05)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def split_lines(
    table: pd.DataFrame,
    x: str,
    xlabel: str,
    references: Mapping[str, Mapping[str, int]] | None = None,
    logx: bool = False,
    hue: str | None = None,
):
    """The chosen split p against ``x`` (threshold, epoch, batches), one panel per dataset
    (two a row): mean over seeds with the range of seeds as a band; dashed or dotted lines at
    reference splits (:data:`~playerfl_core.book.style.MARKER_LINESTYLES`); one legend below
    the panels."""
    datasets = list(dict.fromkeys(table["dataset"]))
    fig, axes = panel_grid(len(datasets), panel_height=2.5)
    for ax, name in zip(axes, datasets, strict=True):
        d = table[table["dataset"] == name]
        groups = list(d.groupby(hue, sort=False)) if hue else [(None, d)]
        aggs = [g.groupby(x)["p"].agg(["mean", "min", "max"]).reset_index() for _, g in groups]
        labels = [algorithm_label(key) if key else "mean over seeds" for key, _ in groups]
        refs = (references or {}).get(name, {})
        named = {MARKER_NAMES.get(ref, ref): value for ref, value in refs.items()}
        means = [(n, a["mean"].to_numpy()) for n, a in zip(labels, aggs, strict=True)]
        note = coinciding_note(means, named)
        # lines that coincide are drawn a little apart, each with a marker of its own; lines
        # that do not coincide stay where their values are
        step = SPLIT_LINE_OFFSET if note else 0.0
        for i, ((key, _), agg, label) in enumerate(zip(groups, aggs, labels, strict=True)):
            (line,) = ax.plot(
                agg[x],
                agg["mean"] + (i - (len(groups) - 1) / 2) * step,
                marker=SPLIT_LINE_MARKERS[i % len(SPLIT_LINE_MARKERS)],
                ms=4,
                label=label,
                color=_line_color(key) if key else "k",
            )
            ax.fill_between(agg[x], agg["min"], agg["max"], color=line.get_color(), alpha=0.15)
        for ref, value in refs.items():
            color = marker_color(ref) if ref in MARKER_COLORS else "grey"
            ax.axhline(
                value + (step or 0.04) * (1 if ref == "authors_config" else -1),
                color=color,
                ls=MARKER_LINESTYLES.get(ref, ":"),
                label=MARKER_NAMES.get(ref, ref),
            )
        if note:
            ax.text(0.02, 0.97, textwrap.fill(note, 44), transform=ax.transAxes, va="top",
                    fontsize=7, bbox={"facecolor": "white", "alpha": 0.8, "lw": 0})  # fmt: skip
        if logx:
            ax.set_xscale("log", base=2)
        elif pd.api.types.is_integer_dtype(d[x]):
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        n_units = int(d["n_units"].iloc[0]) if "n_units" in d else int(d["p"].max()) + 1
        ax.set_ylim(0.5, n_units - 0.5)
        ax.set_yticks(range(1, n_units))
        ax.set_title(dataset_label(name))
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    for k, ax in enumerate(axes):
        if k % 2 == 0:
            ax.set_ylabel("split p (federated)")
    _figure_legend(fig, axes)
    return fig


SPLIT_LINE_OFFSET = 0.1
"""How far apart (in units of p) :func:`split_lines` draws lines that would lie on one another."""
SPLIT_LINE_MARKERS = ("o", "s", "^", "D")


def coinciding_note(means: list[tuple[str, np.ndarray]], references: dict[str, float]) -> str:
    """What a panel of :func:`split_lines` says when lines coincide, which the offsets alone
    barely show: the lines (mean lines by label, reference lines by name) that sit at one constant
    split ("Local and FedAvg: both at p = 3"), or mean lines equal where they move ("Local and
    FedAvg coincide"); "" when no two lines coincide."""
    flat: dict[float, list[str]] = {}
    for name, m in means:
        if len(m) and np.allclose(m, m[0]):
            flat.setdefault(float(m[0]), []).append(name)
    for name, value in references.items():
        flat.setdefault(float(value), []).append(name)
    notes = []
    for value, names in flat.items():
        if len(names) > 1:
            who = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
            notes.append(f"{who}: {'both' if len(names) == 2 else 'all'} at p = {value:g}")
    moving = [(n, m) for n, m in means if not (len(m) and np.allclose(m, m[0]))]
    if len(moving) > 1 and all(
        len(m) == len(moving[0][1]) and np.allclose(m, moving[0][1]) for _, m in moving
    ):
        notes.append(f"{' and '.join(n for n, _ in moving)} coincide")
    return "; ".join(notes)


def _figure_legend(fig, axes, ncol: int = 3) -> None:
    """One legend below all panels, each label once (panels show different references)."""
    seen: dict[str, object] = {}
    for ax in axes:
        for handle, text in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(text, handle)
    if seen:
        fig.legend(list(seen.values()), list(seen), loc="outside lower center",
                   ncol=min(ncol, len(seen)), frameon=False)  # fmt: skip


def pruning_scatter(check: pd.DataFrame, title: str = ""):
    """Actual loss change from zeroing each parameter against its first-order prediction −θ·g
    (from :func:`~playerfl_core.measure.layer_studies.pruning_check`), with the identity line."""
    fig, ax = plt.subplots(figsize=(4.6, 3.8))
    ax.scatter(
        check["predicted"], check["actual"], s=12, alpha=0.7, color=measure_color("sensitivity")
    )
    both = np.concatenate([check["predicted"], check["actual"]])
    lim = (both.min() * 1.1, both.max() * 1.1)
    ax.plot(lim, lim, "k:", lw=1, label="actual = −θ·g")
    ax.set_xlabel("first-order prediction −θ·∂L/∂θ")
    ax.set_ylabel("actual loss change when θ := 0")
    ax.legend()
    if title:
        ax.set_title(textwrap.fill(title, 50))
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def agreement_lines(table: pd.DataFrame, x: str, y: str, xlabel: str, ylabel: str):
    """``y`` against ``x``, one line per dataset (e.g. how often the split from m batches equals
    the full-data split)."""
    fig, ax = plt.subplots(figsize=(4.8, 3.2))
    for name, g in table.groupby("dataset", sort=False):
        g = g.sort_values(x)
        ax.plot(g[x], g[y], marker="o", label=dataset_label(name), color=dataset_color(name))
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(table[x].unique()), [str(v) for v in sorted(table[x].unique())])
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
