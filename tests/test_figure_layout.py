"""Figures as the book shows them: panels that fill their rows, entries of the regret figure
that stay apart, and tick labels that stay legible once the column shrinks a figure."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from playerfl_core.book import style  # noqa: E402

COLUMN_PX = 672
"""Width in CSS px at which the book's column shows a figure at a 1280 px window (measured in
Chromium on the built book; tests/test_browser.py measures the shown tick labels themselves)."""


@pytest.mark.parametrize("max_cols", [1, 2, 3, 4])
def test_panels_spread_evenly_over_as_few_rows_as_allowed(max_cols):
    for n in range(1, 11):
        fig, axes = style.panel_grid(n, max_cols=max_cols)
        grid = fig.axes[0].get_subplotspec().get_gridspec()
        rows, cols = grid.get_geometry()
        hidden = [ax for ax in fig.axes if not ax.get_visible()]
        plt.close(fig)
        assert len(axes) == n and cols <= max_cols
        assert rows == math.ceil(n / max_cols), (n, max_cols, rows)
        assert len(hidden) < rows, f"{n} panels, {max_cols} a row: {len(hidden)} empty cells"


def test_chapter_00s_label_mixes_leave_no_empty_panel():
    """Chapter 00's four federations drew three panels over one and two empty cells."""
    from data_prep import load
    from playerfl_core.book.data_plots import plot_label_mixes

    feds = {f"α = {a:g}": load(f"digits_alpha{a:g}", profile="quick", seed=0)
            for a in (0.05, 0.5, 5, 100)}  # fmt: skip
    fig = plot_label_mixes(feds)
    shown = [ax for ax in fig.axes if ax.get_visible()]
    labelled = [ax.get_title() for ax in shown if ax.get_ylabel()]
    plt.close(fig)
    assert len(fig.axes) == len(shown) == 4, [ax.get_visible() for ax in fig.axes]
    assert labelled == ["α = 0.05", "α = 5"], labelled  # the first panel of each row


def test_the_regret_figure_keeps_every_entry_apart():
    """04b's Fig. 28: the paper's four forms, whose intervals nearly coincide, overlapped into
    one line. With every entry at the same mean, adjacent entries' markers of a kind are at
    least a marker apart."""
    from playerfl_core.book import rule_plots
    from playerfl_core.study import preregistration as P

    entries = [e.label for e in P.ENTRIES]
    verdicts = pd.DataFrame(
        [(e, k, 0.0, 0.04, 0.02, "undecided") for e in entries for k in P.KIND_ORDER],
        columns=["entry", "kind", "lo", "hi", "mean", "verdict"],
    )
    fig = rule_plots.regret_by_kind(verdicts, P.TOLERANCE)
    fig.canvas.draw()
    ax = fig.axes[0]
    means = [
        ln for ln in ax.get_lines() if ln.get_marker() not in ("None", "") and len(ln.get_xdata())
    ]
    y_pt = sorted(ax.transData.transform((0, ln.get_ydata()[0]))[1] * 72 / fig.dpi for ln in means)
    sizes = {ln.get_markersize() for ln in means}
    plt.close(fig)
    assert len(means) == len(entries) * len(P.KIND_ORDER)
    gaps = np.diff(y_pt)
    assert gaps.min() >= max(sizes), f"markers {max(sizes)} pt, {gaps.min():.1f} pt apart"


def test_tick_digits_of_a_full_width_figure_are_9_px_in_the_column():
    """A full-width figure, saved as the inline backend saves it (tight box, FIGURE_DPI), is
    shown COLUMN_PX wide at a 1280 px window; its tick labels (MIN_FONT_PT, digits 0.73 em high
    in DejaVu Sans) must be 9 px high there."""
    import io

    from matplotlib.font_manager import FontProperties
    from matplotlib.image import imread
    from matplotlib.textpath import TextPath

    style.apply_book_style()  # as every figure module does on import
    fig, axes = style.panel_grid(2)
    for ax in axes:
        ax.plot([0, 1], [0, 1])
    png = io.BytesIO()
    fig.savefig(png, format="png", bbox_inches="tight")
    plt.close(fig)
    natural = imread(io.BytesIO(png.getvalue())).shape[1]
    digit_em = TextPath((0, 0), "147", prop=FontProperties(size=100)).get_extents().height / 100
    px = style.MIN_FONT_PT / 72 * style.FIGURE_DPI * min(1.0, COLUMN_PX / natural) * digit_em
    assert px >= 9.0, f"tick digits {px:.1f} px high at a 1280 px window ({natural} px drawn)"
    assert style.BOOK_RC["xtick.labelsize"] == style.BOOK_RC["ytick.labelsize"] == style.MIN_FONT_PT
