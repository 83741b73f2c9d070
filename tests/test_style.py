"""One style: every algorithm has one name and one colour, and every figure uses them."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402

from playerfl_core.book import analysis_plots, comparison_plots, plots, style  # noqa: E402
from playerfl_core.fl.algorithms import ALGORITHMS  # noqa: E402


def test_every_algorithm_has_a_name_and_a_distinct_colour():
    assert set(style.ALGORITHM_NAMES) == set(ALGORITHMS)
    assert set(style.ALGORITHM_COLORS) == set(ALGORITHMS)
    colours = [to_hex(style.algorithm_color(a)) for a in ALGORITHMS]
    assert len(set(colours)) == len(colours), "two algorithms share a colour"
    names = [style.algorithm_label(a) for a in ALGORITHMS]
    assert len(set(names)) == len(names), "two algorithms share a display name"


def test_markers_and_muted_do_not_look_like_another_algorithm():
    """Only the rule wears an algorithm's colour (PLayer-FL's: the rule is PLayer-FL's)."""
    algorithm_colours = {to_hex(c) for c in style.ALGORITHM_COLORS.values()}
    assert to_hex(style.marker_color("rule")) == to_hex(style.algorithm_color("playerfl"))
    for kind, colour in style.MARKER_COLORS.items():
        if kind != "rule":
            assert to_hex(colour) not in algorithm_colours, kind
    assert to_hex(style.MUTED) not in algorithm_colours
    variants = [to_hex(c) for c in style.RULE_VARIANT_COLORS.values()]
    assert len(set(variants)) == len(variants)
    assert not set(variants[1:]) & algorithm_colours  # the paper's rule is the rule's red


def test_split_sweep_runs_have_names_and_ordered_colours():
    assert style.algorithm_label("prefix_p3") == "prefix p = 3"
    sweep = [style.algorithm_color(f"prefix_p{p}", n_units=4) for p in range(5)]
    assert len(set(sweep)) == 5
    with pytest.raises(ValueError, match="no colour for algorithm 'nope'"):
        style.algorithm_color("nope")


@pytest.mark.parametrize(
    "name, label",
    [
        ("fmnist", "Fashion-MNIST"),
        ("heart", "Heart"),
        ("digits_rotate", "Digits, rotated"),
        ("fmnist_alpha0.1", "Fashion-MNIST, α = 0.1"),
        ("digits_noise_alpha0.5", "Digits, noisy, α = 0.5"),
        ("fmnist_alpha-1", "fmnist_alpha-1"),  # malformed variant: shown as it is
        ("unregistered", "unregistered"),
    ],
)
def test_dataset_labels(name, label):
    assert style.dataset_label(name) == label


def test_display_names_maps_only_the_name_columns():
    frame = pd.DataFrame({"algorithm": ["finetune"], "dataset": ["digits_invert"], "x": [1]})
    shown = style.display_names(frame)
    assert shown.iloc[0].tolist() == ["Fine-tuning after FedAvg", "Digits, inverted", 1]
    assert frame.iloc[0, 0] == "finetune"  # the input is left alone


def _profile_summary():
    rows = []
    for algorithm, offset in (("local", 0.0), ("fedavg", 1.0)):
        for depth in (1, 2, 3):
            m = depth + offset
            rows.append(("heart", algorithm, "final", "sensitivity", depth, f"u{depth}", m))
    frame = pd.DataFrame(
        rows, columns=["dataset", "algorithm", "stage", "metric", "depth", "unit", "mean"]
    )
    return frame.assign(lo=frame["mean"] - 0.1, hi=frame["mean"] + 0.1)


def _line_colours(fig) -> dict[str, str]:
    """Legend label → colour of every labelled line or point collection of a figure."""
    out = {}
    for ax in fig.axes:
        for line in ax.get_lines():
            if not line.get_label().startswith("_"):
                out[line.get_label()] = to_hex(line.get_color())
        for coll in ax.collections:
            if not coll.get_label().startswith("_") and len(coll.get_facecolors()):
                out[coll.get_label()] = to_hex(coll.get_facecolors()[0])
    return out


def test_the_same_algorithm_has_the_same_colour_in_every_chapter_figure():
    """Chapter 02's profile lines, chapter 05's summary and client medians, chapter 01's bars."""
    profiles = _line_colours(analysis_plots.unit_profiles(_profile_summary(), ["sensitivity"]))
    summary = pd.DataFrame(
        {
            "dataset": "heart",
            "algorithm": ["local", "fedavg", "playerfl"],
            "median": [0.5, 0.6, 0.7],
            "ci_low": [0.4, 0.5, 0.6],
            "ci_high": [0.6, 0.7, 0.8],
        }
    )
    fig = comparison_plots.plot_summary(summary, "macro-F1")
    ax = fig.axes[0]
    rows = [t.get_text() for t in ax.get_yticklabels()]
    by_row = {}
    for line in ax.get_lines():  # errorbar: the marker line's y is the row
        y = line.get_ydata()
        if len(y) == 1:
            by_row[rows[int(round(y[0]))]] = to_hex(line.get_color())
    assert by_row
    medians = pd.DataFrame(
        {
            "dataset": "heart",
            "client": np.repeat([0, 1], 3),
            "algorithm": ["local", "fedavg", "playerfl"] * 2,
            "median": np.linspace(0.4, 0.9, 6),
        }
    )
    client = _line_colours(comparison_plots.plot_client_medians(medians, "macro-F1"))
    scores = pd.DataFrame(
        {
            "dataset": "heart",
            "client_name": np.repeat(["a", "b"], 3),
            "algorithm": ["local", "fedavg", "playerfl"] * 2,
            "value": np.linspace(0.4, 0.9, 6),
        }
    )
    bars_fig = plots.plot_client_scores(scores)
    legend = bars_fig.legends[0] if bars_fig.legends else bars_fig.axes[0].get_legend()
    bar_colours = {
        t.get_text(): to_hex(h.get_facecolor())
        for t, h in zip(legend.get_texts(), legend.legend_handles, strict=True)
    }
    for algorithm in ("local", "fedavg"):
        name, colour = style.algorithm_label(algorithm), style.algorithm_color(algorithm)
        assert profiles[f"{name}, final"] == colour
        assert by_row[name] == colour
        assert client[name] == colour
        assert bar_colours[name] == colour
    name = style.algorithm_label("playerfl")
    assert by_row[name] == client[name] == bar_colours[name] == style.algorithm_color("playerfl")
    plt.close("all")


def test_claim_reasons_name_algorithms_by_display_name():
    from playerfl_core.stats import claims as C

    rng = np.random.default_rng(0)
    wide = pd.DataFrame(rng.normal(size=(3, 12)), index=["playerfl", "fedavg", "local"])
    wide.loc["fedavg"] += 5  # FedAvg ranks first in every block
    ev, _ = C.best_rank_evidence(wide, "playerfl")
    assert ev.verdict == "contradicted"
    assert "Nemenyi: FedAvg rank" in ev.reason and "PLayer-FL at position" in ev.reason
    assert "playerfl" not in ev.reason and "fedavg" not in ev.reason
