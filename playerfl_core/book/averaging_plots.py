"""The figure of the averaging check (:mod:`playerfl_core.measure.averaging_check`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from playerfl_core.book.style import (
    FIGURE_WIDTH,
    UNIT_COLORMAP,
    UNIT_MARKERS,
    apply_book_style,
    dataset_label,
)

apply_book_style()


def _symlog(ax, axis: str, values, per_side: int = 4) -> None:
    """A symmetric-log ``axis`` ("x" or "y") for signed values spanning decades: linear within
    the decade of the 5th percentile of |values|, labelled ticks at decades beyond it (every
    decade, or every second, third, ... so a side has at most ``per_side``), limits padded so
    no point sits on the frame. The edges of the linear part get no tick: so near 0, their
    labels ran into 0's."""
    v = np.asarray(values, dtype=float)
    mags = np.abs(v[v != 0])
    floor = 10.0 ** np.floor(np.log10(np.percentile(mags, 5))) if len(mags) else 1e-6
    top = 10.0 ** np.ceil(np.log10(max(float(np.abs(v).max()), floor)))
    decades = [floor * 10.0**i for i in range(1, int(round(np.log10(top / floor))) + 1)]
    step = -(-len(decades) // per_side)  # every step-th decade, down from the top one
    decades = decades[::-step][::-1]
    bottom = 10.0 ** np.ceil(np.log10(-float(v.min()))) if v.min() < -floor else floor
    ticks = [-d for d in decades[::-1] if d <= bottom] + [0.0, *decades]
    getattr(ax, f"set_{axis}scale")("symlog", linthresh=floor, linscale=1.0)
    getattr(ax, f"set_{axis}ticks")(ticks)
    getattr(ax, f"set_{axis}lim")(-1.5 * bottom, 1.5 * top)


def plot_averaging_check(effects: pd.DataFrame, profiles: pd.DataFrame, titles=None):
    """Per dataset (rows): left, the measured loss change of every (seed, client, unit) against
    its first-order prediction g·(θ̄ − θ), with the diagonal; right, the client-averaged
    measured change of every (seed, unit) against the paper's s_k. Colour and shape = layer
    unit (a sequential map: units are ordered), its key beside each row's right panel."""
    datasets = list(dict.fromkeys(effects["dataset"]))
    fig, axes = plt.subplots(
        len(datasets),
        2,
        figsize=(FIGURE_WIDTH, 3.4 * len(datasets)),
        squeeze=False,
        layout="constrained",
    )
    cmap = plt.get_cmap(UNIT_COLORMAP)
    for row, name in zip(axes, datasets, strict=True):
        e, p = effects[effects["dataset"] == name], profiles[profiles["dataset"] == name]
        units = list(dict.fromkeys(e["unit"]))
        colours = {u: cmap(i / max(len(units) - 1, 1)) for i, u in enumerate(units)}
        left, right = row
        for k, u in enumerate(units):
            eu, pu = e[e["unit"] == u], p[p["unit"] == u]
            look = {"color": colours[u], "marker": UNIT_MARKERS[k % len(UNIT_MARKERS)], "label": u}
            left.scatter(eu["first_order"], eu["actual"], s=14, **look)
            right.scatter(pu["sensitivity"], pu["actual"], s=22, **look)
        both = np.concatenate([e["first_order"], e["actual"]])
        lo, hi = float(both.min()), float(both.max())
        left.plot([lo, hi], [lo, hi], ls="--", c="grey", lw=1)
        _symlog(left, "x", both, per_side=2)  # slanted labels: fewer
        _symlog(left, "y", both)
        left.tick_params(axis="x", labelrotation=45)
        left.set_xlabel("first-order prediction g·(θ̄ − θ)")
        left.set_ylabel("measured loss change")
        right.set_xscale("log")
        _symlog(right, "y", p["actual"])
        right.set_xlabel("federation sensitivity $s_k$ (client mean)")
        right.set_ylabel("measured loss change (client mean)")
        title = (titles or {}).get(name, dataset_label(name))
        left.set_title(f"{title}:\nevery client and unit")
        right.set_title(f"{title}:\nclient means per seed")
        right.legend(title="unit", loc="center left", bbox_to_anchor=(1.0, 0.5), handletextpad=0.2)
    return fig
