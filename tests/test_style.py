"""One style: every algorithm has one name and one colour, and every figure uses them."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex, to_rgb  # noqa: E402

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
    assert to_hex(style.rule_variant_color("paper")) == to_hex(style.marker_color("rule"))
    rules = [to_hex(c) for c in style.SPLIT_RULE_COLORS.values()]
    assert len(set(rules)) == len(rules)
    assert to_hex(style.marker_color("oracle")) not in rules
    # every colour is one of the palette's (split rules and variants never share a figure with
    # algorithms, so they may wear an algorithm's colour)
    palette = {to_hex(c) for c in style.PALETTE.values()}
    for colours in (style.ALGORITHM_COLORS, style.MARKER_COLORS, style.SPLIT_RULE_COLORS):
        assert {to_hex(c) for c in colours.values()} <= palette


def test_split_sweep_runs_have_names_and_ordered_colours():
    assert style.algorithm_label("prefix_p3") == "prefix p = 3"


def test_algorithms_sharing_a_place_are_all_named():
    from playerfl_core.fl.names import tied_text

    assert tied_text(["ditto"]) == "Ditto"
    assert tied_text(["ditto", "playerfl_random"]) == "Ditto and PLayer-FL-Random (tied)"
    assert tied_text(["local", "fedavg", "ditto"]) == "Local, FedAvg and Ditto (tied)"
    sweep = [style.algorithm_color(f"prefix_p{p}", n_units=4) for p in range(5)]
    assert len(set(sweep)) == 5
    with pytest.raises(ValueError, match="no colour for algorithm 'nope'"):
        style.algorithm_color("nope")


# --- colour-blind safety: every colour set a figure shows together stays distinct -------------

MACHADO_DEUTERANOPIA = np.array(
    [
        [0.367322, 0.860646, -0.227968],
        [0.280085, 0.672501, 0.047413],
        [-0.011820, 0.042940, 0.968881],
    ]
)
"""Machado, Oliveira & Fernandes (2009), deuteranopia at severity 1.0, on linear RGB."""

MIN_DELTA_E = 15.0
"""Least CIE76 ΔE (CIELAB, D65) between two colours of one set, seen normally and through the
deuteranopia simulation. The Okabe–Ito palette's own closest pair under the simulation (orange
and yellow) is 17.0 apart, so 15 admits the reference colour-blind-safe set with a margin while
asking well above the ~2.3 of a just-noticeable difference between large patches: the colours
here mark thin lines and 5-pt dots, which need several times that to be told apart at a glance.
The old palette's rule and oracle (red and green) were 7.3 apart."""


def _linear(colour) -> np.ndarray:
    c = np.asarray(to_rgb(colour), dtype=float)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _lab(linear: np.ndarray) -> np.ndarray:
    """CIELAB (D65 white) of a linear sRGB colour."""
    xyz = np.array(
        [
            [0.4124564, 0.3575761, 0.1804375],
            [0.2126729, 0.7151522, 0.0721750],
            [0.0193339, 0.1191920, 0.9503041],
        ]
    ) @ np.clip(linear, 0, 1)
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def _delta_e(a, b, deuteranope: bool = False) -> float:
    """CIE76 ΔE between two colours, as a deuteranope sees them when ``deuteranope``."""
    simulate = MACHADO_DEUTERANOPIA if deuteranope else np.eye(3)
    return float(np.linalg.norm(_lab(simulate @ _linear(a)) - _lab(simulate @ _linear(b))))


def test_the_deuteranopia_simulation():
    """Greys and white stay put; red and green, far apart in normal vision, nearly meet."""
    for grey in ("#ffffff", "#777777", "#000000"):
        assert _delta_e(grey, grey, deuteranope=True) == 0
        sim = _lab(MACHADO_DEUTERANOPIA @ _linear(grey))
        assert np.allclose(sim, _lab(_linear(grey)), atol=0.5)
    assert _delta_e("#d62728", "#2ca02c") > 100
    assert _delta_e("#d62728", "#2ca02c", deuteranope=True) < 10
    assert _delta_e("#0072B2", "#E69F00", deuteranope=True) > 80  # blue/orange: the safe axis


def _colour_sets() -> dict[str, dict[str, str]]:
    """The colours each kind of figure shows side by side."""
    oracle = {"oracle": style.marker_color("oracle")}
    key = {a: style.algorithm_color(a) for a in style.KEY_ALGORITHMS}
    return {
        # chapter 07's traffic bars and any table of runs: all twelve, and the line standing
        # for several algorithms
        "algorithms": {**style.ALGORITHM_COLORS, "shared": style.marker_color("shared")},
        # chapter 05: the key algorithms in colour, the others muted
        "key algorithms": {**key, "muted": style.MUTED, "shared": style.marker_color("shared")},
        # chapters 03 and 04: the rule's and the oracle's splits, the published references, the
        # black mean line
        "rule vs oracle markers": dict(style.MARKER_COLORS),
        # chapter 04b: every split rule of the pre-registered test and the oracle
        "split rules with the oracle": {**style.SPLIT_RULE_COLORS, **oracle},
        # chapter 04: the rule's pooling variants and the oracle's split
        "rule variants with the oracle": {**style.RULE_VARIANT_COLORS, **oracle},
        # chapters 01 and 02: one colour per dataset (its declaration's)
        "datasets": {d: style.dataset_color(d) for d in ("heart", "digits", "fmnist")},
    }


KEY_MIN_DELTA_E = 30.0
"""Least ΔE between the key algorithms chapter 05 draws as small dots and thin intervals side
by side (PLayer-FL against PLayer-FL-Random above all): twice :data:`MIN_DELTA_E`, because
reviewers could not tell PLayer-FL's vermillion from Random's former orange (ΔE 18.3 under the
deuteranopia simulation) at a glance (issue 35)."""

SHAPE_DELTA_E = 30.0
"""Two entries of a rule figure closer than this in colour must also differ in line style or
marker shape: colour then is not the only channel that tells them apart."""


@pytest.mark.parametrize("deuteranope", [False, True], ids=["normal vision", "deuteranopia"])
def test_the_key_algorithms_are_far_apart(deuteranope):
    key = {a: style.algorithm_color(a) for a in style.KEY_ALGORITHMS}
    items = list(key.items())
    gaps = {
        (a, b): _delta_e(ca, cb, deuteranope)
        for i, (a, ca) in enumerate(items)
        for b, cb in items[i + 1 :]
    }
    too_close = {pair: round(g, 1) for pair, g in gaps.items() if g < KEY_MIN_DELTA_E}
    assert not too_close, f"key algorithms under ΔE {KEY_MIN_DELTA_E}: {too_close}"


@pytest.mark.parametrize("deuteranope", [False, True], ids=["normal vision", "deuteranopia"])
def test_every_colour_set_is_distinct_for_colour_blind_readers(deuteranope):
    too_close = []
    for name, colours in _colour_sets().items():
        items = list(colours.items())
        for i, (a, ca) in enumerate(items):
            for b, cb in items[i + 1 :]:
                gap = _delta_e(ca, cb, deuteranope)
                if gap < MIN_DELTA_E:
                    too_close.append(f"{name}: {a} {ca} / {b} {cb}: ΔE {gap:.1f}")
    assert not too_close, f"under ΔE {MIN_DELTA_E}:\n" + "\n".join(too_close)


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


def test_a_line_shared_by_several_algorithms_differs_from_locals_in_shape():
    """Chapter 02's black "Local = FedAvg, first" line and Local's dark grey one had the same
    filled circles: readers could not tell black from dark grey."""
    shared = _profile_summary()
    first = shared[shared["algorithm"] == "local"].assign(stage="first")
    both = pd.concat([shared, first, first.assign(algorithm="fedavg")], ignore_index=True)
    fig = analysis_plots.unit_profiles(both, ["sensitivity"])
    lines = {ln.get_label(): ln for ln in fig.axes[0].get_lines()}
    one, local = lines["Local = FedAvg, first"], lines["Local, final"]
    assert one.get_marker() != local.get_marker()


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


# --- the figure style: every figure fits the book's column and its text stays legible ---------


def _inline_png(fig):
    """The PNG the notebook's inline backend would embed (IPython's print_figure, as
    matplotlib_inline calls it: the figure's dpi, bbox_inches='tight'): (width px, dpi)."""
    from io import BytesIO

    from IPython.core.pylabtools import print_figure
    from PIL import Image

    image = Image.open(BytesIO(print_figure(fig, "png")))
    return image.size[0], image.info["dpi"][0]


def _texts(fig):
    return [t for t in fig.findobj(plt.Text) if t.get_visible() and t.get_text().strip()]


MIN_TICK_GAP_PX = 3
"""Least room between two neighbouring tick labels along their text (pixels at the book's
150 dpi): labels that touch read as one word ("quantityconcept")."""


def _overlapping_ticks(fig) -> list[str]:
    """Tick labels of one axis (x or y) whose boxes overlap. A rotated label is the rotated
    rectangle of its upright text, so two slanted neighbours overlap only where their text
    does (their upright window boxes always do)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for axis, labels in (("x", ax.get_xticklabels()), ("y", ax.get_yticklabels())):
            boxes = []
            for t in labels:
                if not (t.get_visible() and t.get_text().strip()):
                    continue
                box, rotation = t.get_window_extent(renderer), t.get_rotation()
                t.set_rotation(0)
                upright = t.get_window_extent(renderer)
                t.set_rotation(rotation)
                centre = np.array([(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2])
                boxes.append((centre, upright.width, upright.height, np.deg2rad(rotation), t))
            for i, (c1, w1, h1, angle, t1) in enumerate(boxes):
                along = np.array([np.cos(angle), np.sin(angle)])
                across = np.array([-np.sin(angle), np.cos(angle)])
                for c2, w2, h2, _, t2 in boxes[i + 1 :]:
                    d = c2 - c1
                    gap = MIN_TICK_GAP_PX
                    if (
                        abs(d @ along) < (w1 + w2) / 2 + gap
                        and abs(d @ across) < (h1 + h2) / 2 + gap
                    ):
                        found.append(f"{axis}: {t1.get_text()!r} / {t2.get_text()!r}")
    return found


_DS = ["fmnist", "heart", "digits"]
_ALGS = list(style.ALGORITHM_COLORS)


def _figures():
    """Every figure function of the book on small synthetic tables shaped like the chapters'."""
    from types import SimpleNamespace

    import torch

    from playerfl_core.book import averaging_plots, data_plots, rule_plots, split_plots
    from playerfl_core.book.reports import silos
    from playerfl_core.study import preregistration as P
    from playerfl_core.study import split_sweeps

    rng = np.random.default_rng(0)
    units = ["layer1", "layer2", "layer3", "fc1", "fc2"]
    sens = pd.DataFrame(
        [
            (d, u, k + 1, 10.0 ** -rng.uniform(1, 6), 1.0 + k)
            for d in _DS
            for k, u in enumerate(units)
        ],
        columns=["dataset", "unit", "unit_index", "sensitivity", "cumulative"],
    )
    yield "plot_sensitivity", plots.plot_sensitivity(sens, dict.fromkeys(_DS, 3))
    scores = pd.DataFrame(
        [
            (d, f"client {c}", a, rng.uniform(0.4, 0.9))
            for d in _DS
            for c in range(5)
            for a in ("local", "fedavg", "playerfl", "playerfl_random")
        ],
        columns=["dataset", "client_name", "algorithm", "value"],
    )
    yield "plot_client_scores", plots.plot_client_scores(scores)
    metrics = ["sensitivity", "grad_variance", "hessian_trace"]
    summary = pd.DataFrame(
        [
            (d, a, st, m, k + 1, u, rng.uniform(1, 5))
            for d in _DS
            for a in ("local", "fedavg")
            for st in ("first", "final")
            for m in metrics
            for k, u in enumerate(units)
        ],
        columns=["dataset", "algorithm", "stage", "metric", "depth", "unit", "mean"],
    ).assign(lo=lambda f: f["mean"] - 0.5, hi=lambda f: f["mean"] + 0.5)
    yield "unit_profiles", analysis_plots.unit_profiles(summary, metrics, log_metrics=metrics)
    mats = {u: rng.uniform(0, 1, (5, 5)) for u in units}
    yield "cka_heatmaps", analysis_plots.cka_heatmaps(mats, [f"c{i}" for i in range(1, 6)], "t")
    rho = pd.DataFrame(
        [(style.dataset_label(d), style.metric_label(m)) for d in _DS for m in metrics],
        columns=["dataset", "measure"],
    ).assign(mean=0.3, lo=0.1, hi=0.5)
    yield "forest", analysis_plots.forest(rho, ["dataset", "measure"], color_by="measure")
    table = pd.DataFrame(
        [(d, s, t, int(rng.integers(1, 5)), 5) for d in _DS for s in range(3) for t in range(6)],
        columns=["dataset", "seed", "threshold", "p", "n_units"],
    )
    refs = {d: {"paper_transition": 2, "authors_config": 3, "oracle": 1} for d in _DS}
    yield "split_lines", analysis_plots.split_lines(table, "threshold", "threshold t", refs)
    check = pd.DataFrame({"predicted": rng.normal(size=30), "actual": rng.normal(size=30)})
    yield "pruning_scatter", analysis_plots.pruning_scatter(check, "Heart, fc1, epoch 1")
    agree = pd.DataFrame(
        [(d, m, rng.uniform()) for d in _DS for m in (1, 2, 4, 8, 16, 32)],
        columns=["dataset", "batches", "agree"],
    )
    yield "agreement_lines", analysis_plots.agreement_lines(agree, "batches", "agree", "m", "share")

    def signed(low):  # a signed value of magnitude 10^low ... 1, like chapter 03a's
        return rng.choice([-1, 1]) * 10.0 ** rng.uniform(low, 0)

    effects = pd.DataFrame(
        [(d, u, signed(lo), signed(lo)) for d, lo in (("heart", -3), ("digits", -7))
         for u in units * 12],
        columns=["dataset", "unit", "first_order", "actual"],
    )  # fmt: skip
    profiles = pd.DataFrame(
        [
            (d, u, 10.0 ** -rng.uniform(1, 5), signed(-4))
            for d in ("heart", "digits")
            for u in units
        ],
        columns=["dataset", "unit", "sensitivity", "actual"],
    )
    yield "plot_averaging_check", averaging_plots.plot_averaging_check(effects, profiles)
    summ = pd.DataFrame(
        [(d, a, 0.6, 0.55, 0.65) for d in _DS for a in _ALGS],
        columns=["dataset", "algorithm", "median", "ci_low", "ci_high"],
    )
    yield "plot_summary", comparison_plots.plot_summary(summ, "test macro-F1")
    med = pd.DataFrame(
        [(d, c, a, rng.uniform()) for d in _DS for c in range(5) for a in _ALGS],
        columns=["dataset", "client", "algorithm", "median"],
    )
    yield "plot_client_medians", comparison_plots.plot_client_medians(med, "macro-F1 (median)")
    ranks = pd.Series(np.linspace(2, 10, len(_ALGS)), index=_ALGS)
    yield "plot_cd_diagram", comparison_plots.plot_cd_diagram(ranks, 2.5, "macro-F1")
    diffs = pd.DataFrame(
        [(d, rng.normal()) for d in _DS for _ in range(5)], columns=["dataset", "diff"]
    )
    yield "plot_paired", comparison_plots.plot_paired(diffs, "PLayer-FL − Random", "paired")
    wide = pd.DataFrame(rng.uniform(50, 90, (len(_ALGS), 3)), index=_ALGS, columns=_DS)
    yield "plot_ours_vs_published", comparison_plots.plot_ours_vs_published(wide, wide + 1, "acc.")

    def fed(k):
        clients = [
            SimpleNamespace(name=f"c{i}", y_train=torch.tensor(rng.integers(0, 10, 50)))
            for i in range(k)
        ]
        classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat"]
        classes += ["Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
        return SimpleNamespace(clients=clients, num_classes=10, class_names=classes)

    feds = {f"α = {a}": fed(6) for a in (0.1, 1, 100)}
    yield "plot_label_mixes", data_plots.plot_label_mixes(feds)
    tuning = pd.DataFrame(
        [
            (r, t, rng.uniform())
            for r in ("paper", "cost", "disagreement")
            for t in (0.25, 0.5, 1, 2)
        ],
        columns=["rule", "threshold", "regret"],
    )
    yield "tuning_curves", rule_plots.tuning_curves(tuning)
    entries = [e.label for e in P.ENTRIES]
    verdicts = pd.DataFrame(
        [(e, k, 0.0, 0.02, 0.01, P.WITHIN) for e in entries for k in P.KIND_ORDER],
        columns=["entry", "kind", "lo", "hi", "mean", "verdict"],
    )
    yield "regret_by_kind", rule_plots.regret_by_kind(verdicts, P.TOLERANCE)
    curve = pd.DataFrame(
        [(e, k, t, P.WITHIN) for e in entries for k in P.KIND_ORDER for t in (0.01, 0.02)],
        columns=["entry", "kind", "tolerance", "verdict"],
    )
    yield "tolerance_plot", rule_plots.tolerance_plot(curve)
    sources = [entries[0], entries[5], rule_plots.ORACLE]
    feds2 = zip(["digits_rotate", "fmnist_alpha0.1"], P.KIND_ORDER[4:6], strict=True)
    dist = pd.DataFrame(
        [(d, k, s, p, 2) for d, k in feds2 for s in sources for p in (1, 3)],
        columns=["dataset", "kind", "source", "p", "seeds"],
    )
    yield "split_dots", rule_plots.split_dots(dist, sources)
    sweep = pd.DataFrame(
        [(d, p, 0.6, 0.55, 0.65, 0.62) for d in _DS for p in range(6)],
        columns=["dataset", "p", "mean", "lo", "hi", "val"],
    )
    reg = pd.DataFrame(
        [(d, 3, int(rng.integers(0, 6)), rng.uniform(0, 0.05)) for d in _DS for _ in range(5)],
        columns=["dataset", "p_rule", "p_oracle", "regret"],
    )
    yield "sweep_curves", split_plots.sweep_curves(sweep, reg)
    reg_sum = pd.DataFrame({"dataset": _DS, "mean": 0.02, "lo": 0.0, "hi": 0.04})
    yield "regret_strip", split_plots.regret_strip(reg, reg_sum)
    gains = pd.DataFrame(
        [(d, c, p, rng.normal()) for d in _DS for c in range(5) for p in range(6)],
        columns=["dataset", "client", "p", "gain"],
    )
    names = {d: [f"client_{c + 1}" for c in range(5)] for d in _DS}  # generated client names
    yield "client_gain_lines", split_plots.client_gain_lines(gains, names)
    het = split_sweeps.heterogeneity_federations(
        ["digits", "fmnist"],
        kinds=("rotate", "invert", "noise", "quantity", "swap"),
        mixed=(("rotate", 0.1), ("noise", 0.1)),
    )  # chapter 04's twelve federations a base: quantity skew and concept shift side by side
    het["rule_ps"] = [[3, 3]] * len(het)
    het["oracle_ps"] = [[1, 4]] * len(het)
    yield "heterogeneity_splits", split_plots.heterogeneity_splits(het, {"digits": 4, "fmnist": 5})
    stab = pd.DataFrame(
        [(d, v, s, int(rng.integers(1, 5))) for d in _DS for v in ("paper", "median", "geomean")
         for s in range(5)],
        columns=["dataset", "variant", "seed", "p_rule"],
    )  # fmt: skip
    yield "stability_bars", split_plots.stability_bars(stab, dict.fromkeys(_DS, 2))
    traffic = pd.DataFrame(
        {"up kB/round": 10.0, "down kB/round": 12.0, "scoring kB/round": 1.0}, index=_ALGS
    )
    yield "plot_traffic", silos.plot_traffic(traffic)


def test_no_figure_shows_a_code_name():
    """Legends, ticks, titles and labels read as words: no ``client_1`` or ``prefix_p3``
    (issue 35: a legend showed the generated client names)."""
    import re

    from matplotlib.text import Text

    code = re.compile(r"\b[a-z][a-z0-9]*_[a-z0-9_]+\b")
    found = []
    for name, fig in _figures():
        texts = {re.sub(r"\$[^$]*\$", "", t.get_text()) for t in fig.findobj(Text)}  # not math
        found += [f"{name}: {t!r}" for t in sorted(texts) if code.search(t)]
        plt.close(fig)
    assert not found, "\n".join(found)


def test_every_figure_fits_the_column_with_legible_text():
    """Inline PNGs at most 7 in wide (width px / pHYs dpi), no text under the style's minimum,
    no overlapping x tick labels: what readers complained about on a phone or a projector."""
    problems = []
    for name, fig in _figures():
        px, dpi = _inline_png(fig)
        if round(dpi) != style.FIGURE_DPI:
            problems.append(f"{name}: saved at {dpi} dpi")
        if px / dpi > 7.05:
            problems.append(f"{name}: {px / dpi:.2f} in wide")
        small = {t.get_text()[:20] for t in _texts(fig) if t.get_fontsize() < style.MIN_FONT_PT}
        if small:
            problems.append(f"{name}: text under {style.MIN_FONT_PT} pt: {sorted(small)[:3]}")
        if overlaps := _overlapping_ticks(fig):
            problems.append(f"{name}: overlapping tick labels {overlaps[:2]}")
        plt.close(fig)
    assert not problems, "\n".join(problems)


def test_datasets_and_measures_have_their_own_colours():
    algorithm_colours = {to_hex(c) for c in style.ALGORITHM_COLORS.values()}
    algorithm_colours |= {to_hex(c) for c in style.MARKER_COLORS.values()}
    from data_prep.registry import declarations

    # The package's own federations (a test before this one in the same process may have
    # registered a user's file, which need not name a colour)
    declared = {f.name: f.color for f in declarations() if not f.source}
    assert len(declared) >= 8 and all(declared.values()), declared  # each names its colour
    for palette in (declared, style.MEASURE_COLORS):
        colours = [to_hex(c) for c in palette.values()]
        assert len(set(colours)) == len(colours)
        assert not set(colours) & algorithm_colours
    for colour in declared.values():  # not read as FedAvg, Random or PLayer-FL
        for key in ("fedavg", "playerfl_random", "playerfl"):
            gap = np.linalg.norm(np.subtract(to_rgb(colour), to_rgb(style.algorithm_color(key))))
            assert gap * 255 > 60, (colour, key)
    assert not {to_hex(c) for c in style.QUALITATIVE} & algorithm_colours
    assert style.dataset_color("digits") == declared["digits"]
    assert style.dataset_color("digits_rotate") == declared["digits"]
    assert style.dataset_color("fmnist_alpha0.1") == declared["fmnist"]
    assert style.dataset_color("Digits, rotated") == declared["digits"]
    assert style.dataset_color("mine") == style.dataset_color("mine")  # a reader's own: stable
    assert (
        style.measure_color(style.metric_label("grad_noise")) == style.MEASURE_COLORS["grad_noise"]
    )
    with pytest.raises(ValueError, match="no colour for measure"):
        style.measure_color("nope")


def test_forest_colours_a_measure_alike_in_every_chapter():
    """Chapter 02 colours its trends by measure, chapter 03 its correlations: a measure keeps
    its colour whatever else the figure shows (the default cycle depended on the order)."""
    one = pd.DataFrame(
        {"measure": ["gradient noise (across batches)"], "mean": 0.1, "lo": 0, "hi": 0.2}
    )
    two = pd.DataFrame(
        {
            "measure": ["Hessian block trace", "gradient noise (across batches)"],
            "mean": 0.1,
            "lo": 0,
            "hi": 0.2,
        }
    )
    colours = []
    for frame in (one, two):
        fig = analysis_plots.forest(frame, ["measure"], color_by="measure")
        lines = [ln for ln in fig.axes[0].get_lines() if ln.get_marker() == "o"]
        colours.append(to_hex(lines[-1].get_color()))
        plt.close(fig)
    assert colours == [style.MEASURE_COLORS["grad_noise"]] * 2


def _legend_entries(fig) -> dict[str, tuple[str, str]]:
    """Legend entry → (the colour its handle shows: a line's, a marker's or a bar's face; its
    shape: a line's dashes and marker, a scatter's marker path, a bar's hatch)."""
    from matplotlib.collections import Collection, PathCollection
    from matplotlib.patches import Patch

    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    out = {}
    for legend in legends:
        for text, handle in zip(legend.get_texts(), legend.legend_handles, strict=True):
            if isinstance(handle, Collection):
                colour = handle.get_facecolor()[0]
                paths = handle.get_paths() if isinstance(handle, PathCollection) else []
                shape = repr(paths[0].vertices.round(3).tolist()) if paths else ""
            elif isinstance(handle, Patch):
                colour, shape = handle.get_facecolor(), str(handle.get_hatch())
            else:
                colour = handle.get_color()
                shape = f"{handle.get_linestyle()} {handle.get_marker()}"
            out[text.get_text()] = (to_hex(colour), shape)
    return out


def _legend_colours(fig) -> dict[str, str]:
    """Legend entry → the colour its handle shows."""
    return {text: colour for text, (colour, _) in _legend_entries(fig).items()}


RULE_FIGURES = (
    "sweep_curves",
    "heterogeneity_splits",
    "stability_bars",
    "split_lines",
    "regret_by_kind",
    "tolerance_plot",
    "split_dots",
)
"""The figures of chapters 03, 04 and 04b whose legends tell rules, variants and the oracle."""


def test_rule_and_oracle_legends_are_distinct_for_colour_blind_readers():
    too_close = []
    for name, fig in _figures():
        if name in RULE_FIGURES:
            items = list(_legend_colours(fig).items())
            assert len(items) >= 2, name
            for i, (a, ca) in enumerate(items):
                for b, cb in items[i + 1 :]:
                    gap = min(_delta_e(ca, cb), _delta_e(ca, cb, deuteranope=True))
                    if gap < MIN_DELTA_E:
                        too_close.append(f"{name}: {a!r} / {b!r}: ΔE {gap:.1f}")
        plt.close(fig)
    assert not too_close, "\n".join(too_close)


def test_close_colours_in_a_rule_figure_differ_in_shape_too():
    """Figs 28 and 33 of the book drew the paper rule's four forms in four warm colours only
    (ΔE 18–30): two entries that close must also differ in dashes or marker shape."""
    same = []
    for name, fig in _figures():
        if name in RULE_FIGURES:
            items = list(_legend_entries(fig).items())
            for i, (a, (ca, sa)) in enumerate(items):
                for b, (cb, sb) in items[i + 1 :]:
                    gap = min(_delta_e(ca, cb), _delta_e(ca, cb, deuteranope=True))
                    if gap < SHAPE_DELTA_E and sa == sb:
                        same.append(f"{name}: {a!r} / {b!r}: ΔE {gap:.1f}, both {sa!r}")
        plt.close(fig)
    assert not same, "\n".join(same)


def test_every_entry_of_the_regret_figure_has_its_own_marker_and_visible_dashes():
    """Fig. 28 drew every rule's mean as a circle (markers told only verdicts) over legend
    handles shorter than a dash-dot period: "paper, median pooling" (dark brown, dotted) read as
    the black probe and the geometric-mean pooling as solid. Each entry has its own marker, in
    the legend and at every mean whatever its verdict; the paper's four forms have their own
    dashes, each shown at least twice over its legend handle; colours are distinct under the
    deuteranopia simulation."""
    from playerfl_core.book import rule_plots
    from playerfl_core.study import preregistration as P

    entries = [e.label for e in P.ENTRIES]
    marks = (P.WITHIN, P.BEYOND, "undecided")
    verdicts = pd.DataFrame(
        [
            (e, k, 0.0, 0.04, 0.02, v)
            for e in entries
            for k, v in zip(P.KIND_ORDER[:3], marks, strict=True)
        ],
        columns=["entry", "kind", "lo", "hi", "mean", "verdict"],
    )
    fig = rule_plots.regret_by_kind(verdicts, P.TOLERANCE)
    legend = fig.legends[0]
    handle_pt = legend.handlelength * legend.prop.get_size_in_points()
    shown = {
        t.get_text(): h for t, h in zip(legend.get_texts(), legend.legend_handles, strict=True)
    }
    assert list(shown) == entries
    markers = [shown[e].get_marker() for e in entries]
    assert "None" not in markers and len(set(markers)) == len(entries), markers
    paper = [e.label for e in P.ENTRIES if e.rule.startswith("paper")]
    dashes = [shown[e].get_linestyle() for e in paper]
    assert len(set(dashes)) == len(paper), dashes
    short = [e for e in paper if 2 * sum(shown[e]._dash_pattern[1] or [0]) > handle_pt]
    assert not short, f"dashes longer than half the legend handle ({handle_pt:.0f} pt): {short}"
    for entry in entries:  # every mean wears its entry's marker, filled or open by verdict
        means = [ln for ln in fig.axes[0].get_lines() if ln.get_color() == shown[entry].get_color()
                 and ln.get_marker() not in ("None", "")]  # fmt: skip
        assert {ln.get_marker() for ln in means} == {shown[entry].get_marker()}, entry
    colours = [to_hex(shown[e].get_color()) for e in entries]
    close = [(a, b) for i, a in enumerate(colours) for b in colours[i + 1 :]
             if _delta_e(a, b, deuteranope=True) < MIN_DELTA_E]  # fmt: skip
    plt.close(fig)
    assert not close, close


def test_the_key_algorithms_differ_in_shape_in_chapter_05s_client_dots():
    """Local's dark grey and Random's dark brown dots read alike in Fig. 23 (issue 35): every
    key algorithm's legend entry has its own marker shape."""
    fig = dict(_figures())["plot_client_medians"]
    entries = _legend_entries(fig)
    shapes = [entries[style.algorithm_label(a)][1] for a in style.KEY_ALGORITHMS]
    plt.close(fig)
    assert len(set(shapes)) == len(shapes)


def test_names_beside_points_cover_no_point_and_no_other_name():
    """Chapter 06's ours-vs-published panels: a cluster of algorithms near the top right (as
    on Fashion-MNIST), whose names used to run over each other's points, then to touch them
    ("Local" against its own dot): a name keeps clear of every point."""
    algorithms = list(style.ALGORITHM_COLORS)
    theirs = pd.DataFrame(
        {"fmnist": [88.7, 89.1, 89.2, 88.2, 89.2, 89.1, 89.3, 89.2, 89.1, 70.8, 89.8, 89.3]},
        index=algorithms,
    )
    ours = pd.DataFrame(
        {"fmnist": [74.4, 65.8, 69.1, 41.6, 68.0, 59.2, 60.3, 74.6, 76.3, 71.3, 76.2, 78.5]},
        index=algorithms,
    )
    fig = comparison_plots.plot_ours_vs_published(ours, theirs, "accuracy (%)")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    frame = ax.get_window_extent(renderer)
    names = [t for t in ax.texts if t.get_text()]
    assert {t.get_text() for t in names} >= {"PLayer-FL", "PLayer-FL-Random", "Local", "FedAvg"}
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in names]
    points = (
        ax.collections[0]
        .get_offset_transform()
        .transform(np.vstack([c.get_offsets() for c in ax.collections]))
    )
    radius = (3 + 1.5) * fig.dpi / 72  # the markers' 36 pt² area, and 1.5 pt of clear space
    problems = []
    for i, (name, box) in enumerate(boxes):
        if not (
            frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 <= box.y1 <= frame.y1
        ):
            problems.append(f"{name} leaves the frame")
        for other, second in boxes[i + 1 :]:
            if box.overlaps(second):
                problems.append(f"{name} / {other}")
        for x, y in points:
            dx = max(box.x0 - x, 0, x - box.x1)
            dy = max(box.y0 - y, 0, y - box.y1)
            if np.hypot(dx, dy) < radius:
                problems.append(f"{name} covers the point at {x:.0f}, {y:.0f}")
    plt.close(fig)
    assert not problems, problems


def test_every_key_hyperparameter_has_a_readers_name():
    """Chapter 00's table of algorithms shows "μ (proximal weight) = 0.1", not "mu = 0.1"."""
    from playerfl_core.book.reports.foundations import algorithm_table
    from playerfl_core.fl.algorithms import describe_algorithms

    keys = {d["key_hyperparameter"] for d in describe_algorithms(None)} - {None}
    keys = {k for k in keys if isinstance(k, str)}
    assert keys <= set(style.HYPERPARAMETER_LABELS), keys - set(style.HYPERPARAMETER_LABELS)
    shown = algorithm_table()["key hyper-parameter (default)"]
    assert shown["FedProx"] == "μ (proximal weight) = 0.1", shown["FedProx"]


def test_every_split_rule_and_the_oracle_have_a_shape_no_other_has():
    """Chapter 04b's Fig. 28 drew the probe as a hexagon beside the paper's circle, and the
    oracle shared the paper's circle in the appendix's Fig. 33: at the figures' marker sizes a
    hexagon or a pentagon reads as a circle (issue 35's second review)."""
    from playerfl_core.book.style import ORACLE_MARKER, SPLIT_RULE_MARKERS

    shapes = [*SPLIT_RULE_MARKERS.values(), ORACLE_MARKER]
    assert len(set(shapes)) == len(shapes)
    round_looking = {"o", "h", "H", "p", "8"}
    assert len(round_looking & set(shapes)) <= 1, shapes


def test_split_lines_say_which_lines_coincide():
    """Fig. 14's Fashion-MNIST panel drew the mean, the paper's transition and the authors' code
    at p = 3 on one another; Fig. 12's Local lay under FedAvg: the panel says so in words."""
    flat = np.array([3.0, 3.0, 3.0])
    note = analysis_plots.coinciding_note(
        [("mean over seeds", flat)], {"paper's transition": 3, "authors' code": 3}
    )
    assert note == "mean over seeds, paper's transition and authors' code: all at p = 3"
    assert analysis_plots.coinciding_note([("Local", flat), ("FedAvg", flat)], {}) == (
        "Local and FedAvg: both at p = 3"
    )
    moving = np.array([1.0, 2.0, 3.0])
    assert analysis_plots.coinciding_note([("Local", moving), ("FedAvg", moving)], {}) == (
        "Local and FedAvg coincide"
    )
    assert analysis_plots.coinciding_note([("Local", moving), ("FedAvg", flat)], {}) == ""
    assert analysis_plots.coinciding_note([("mean over seeds", moving)], {"paper's": 2}) == ""
    table = pd.DataFrame(
        [(d, s, e, 3, 5, a) for d in ("digits",) for s in range(2) for e in (1, 2)
         for a in ("local", "fedavg")],
        columns=["dataset", "seed", "epoch", "p", "n_units", "algorithm"],
    )  # fmt: skip
    fig = analysis_plots.split_lines(table, "epoch", "epoch", hue="algorithm")
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts == ["Local and FedAvg: both at p = 3"], texts
    heights = {tuple(line.get_ydata()) for line in fig.axes[0].get_lines()}
    assert len(heights) == 2  # drawn apart, not one on the other
    plt.close(fig)
    apart = table.assign(p=np.where(table["algorithm"] == "local", 1, 3))
    fig = analysis_plots.split_lines(apart, "epoch", "epoch", hue="algorithm")
    assert not fig.axes[0].texts  # nothing coincides: no note, and each line at its values
    assert {tuple(line.get_ydata()) for line in fig.axes[0].get_lines()} == {(1, 1), (3, 3)}
    plt.close(fig)


def test_the_critical_difference_axis_labels_do_not_run_together():
    """Fig. 26 printed "9 101112": the names' margins narrow the axis, so labels thin out."""
    algs = list(ALGORITHMS)[:12]
    ranks = pd.Series(np.linspace(3.67, 9.5, len(algs)), index=algs)
    fig = comparison_plots.plot_cd_diagram(ranks, 9.62, "macro-F1, datasets as blocks")
    fig.canvas.draw()
    labels = [t for t in fig.axes[0].texts if t.get_text().isdigit()]
    assert [t.get_text() for t in labels][0] == "1" and len(labels) >= 4
    boxes = [t.get_window_extent() for t in labels]
    gaps = [b.x0 - a.x1 for a, b in zip(boxes[:-1], boxes[1:], strict=True)]
    assert min(gaps) > 0.12 * fig.dpi, gaps  # clear space between neighbours
    plt.close(fig)
