"""How the book looks, in one place: one colour per algorithm, dataset and per-layer measure,
the colours and shapes of the chapters' markers and split rules, and the figure style (sizes,
fonts, dpi).

Every figure and every table that shows an algorithm, a dataset or a measure takes its colour
from here, so PLayer-FL is the same vermillion and Heart the same teal in every chapter. The
colours of algorithms, rules and the oracle come from one colour-blind-safe palette
(:data:`PALETTE`, Okabe–Ito's and shades of it), chosen against each other (tests/test_style.py
checks them together). Every figure module applies :data:`BOOK_RC` on import, so a chapter needs
no style cell. Display names live in :mod:`playerfl_core.book.display_names` and are re-exported
here, so ``style`` stays the one import for how a thing looks and reads. Presentation only:
nothing here changes what a run computes."""

from __future__ import annotations

import math
import zlib

import matplotlib as mpl
import matplotlib.pyplot as plt
from cycler import cycler
from matplotlib.colors import to_hex

from data_prep.base import DataError
from data_prep.registry import (
    available_datasets,
    federation,
    is_registered,
    parse_variant,
)
from playerfl_core.book.display_names import (  # noqa: F401 (re-exported: callers read S.)
    FEATURE_SKEW_NAMES,
    HYPERPARAMETER_LABELS,
    METRIC_LABELS,
    RULE_NAMES,
    RULE_VARIANT_NAMES,
    SCORE_NAMES,
    SET_NAMES,
    client_label,
    dataset_label,
    display_names,
    hyperparameter_label,
    metric_label,
    rule_label,
    rule_variant_label,
    score_label,
    set_label,
)
from playerfl_core.fl.algorithms.prefix import parse_prefix_name
from playerfl_core.fl.names import ALGORITHM_NAMES, algorithm_label  # noqa: F401 (re-exported)

OKABE_ITO = {
    "black": "#000000",
    "orange": "#e69f00",
    "sky blue": "#56b4e9",
    "bluish green": "#009e73",
    "yellow": "#f0e442",
    "blue": "#0072b2",
    "vermillion": "#d55e00",
    "reddish purple": "#cc79a7",
}
"""Okabe & Ito's (2008) eight colours, told apart by readers with any common colour-vision
deficiency."""

PALETTE = {
    **OKABE_ITO,
    # The same hues at another CIELAB lightness (hue angle kept, chroma cut to the sRGB gamut):
    # lightness is what a deuteranope or protanope still sees, so these stay apart from their
    # parent colour and from the others.
    "dark grey": "#555555",
    "light bluish green": "#1bd19b",
    "light vermillion": "#fea36d",
    "dark vermillion": "#652a00",
    "dark orange": "#604102",
    "dark yellow": "#726d06",
    "dark blue": "#003e64",
    "dark reddish purple": "#7f1f5b",
}
"""The book's one palette: every algorithm, the rule, the oracle and every split rule wears one
of these. Within any set a figure shows together (the twelve algorithms; the rule, the oracle
and the published references; the split rules with the oracle; the rule's variants with the
oracle) every pair is at least CIE76 ΔE 15 apart both in normal vision and under a simulated
deuteranopia (Machado et al. 2009); ``tests/test_style.py`` checks it. Split rules and
algorithms never share a figure, so a split rule may wear an algorithm's colour."""

ALGORITHM_COLORS = {
    "local": PALETTE["dark grey"],  # the two references: dark grey ...
    "fedavg": PALETTE["blue"],  # ... and blue
    "fedprox": PALETTE["light bluish green"],
    "pfedme": PALETTE["reddish purple"],
    "ditto": PALETTE["yellow"],
    "finetune": PALETTE["sky blue"],  # a light FedAvg blue: FedAvg's model, then adapted
    "fedbabu": PALETTE["light vermillion"],
    "fedlp": PALETTE["dark yellow"],
    "fedlama": PALETTE["dark blue"],
    "pfedla": PALETTE["orange"],
    "playerfl": PALETTE["vermillion"],  # the method: vermillion (a red-orange)
    "playerfl_random": PALETTE["dark vermillion"],  # its ablation: a dark brown
}
"""One colour per algorithm, the same in every chapter. The four :data:`KEY_ALGORITHMS`, which
chapter 05 compares dot by dot, are at least ΔE 30 apart (PLayer-FL's vermillion and
Random's former orange, 18 apart, read as one colour in small dots)."""

KEY_ALGORITHMS = ("local", "fedavg", "playerfl", "playerfl_random")
"""The algorithms a crowded figure keeps in colour; the others are drawn in :data:`MUTED`."""

KEY_MARKERS = {"local": "s", "fedavg": "D", "playerfl": "o", "playerfl_random": "^"}
"""Marker shapes of the key algorithms where a figure draws them as dots: Local's dark grey and
Random's dark brown are alike in lightness, so a reader tells them apart by shape too (as in
chapter 05's client dots); the muted others are circles."""

MARKER_COLORS = {
    "rule": ALGORITHM_COLORS["playerfl"],  # the split PLayer-FL's rule picks: PLayer-FL's colour
    "oracle": PALETTE["bluish green"],  # the split the validation oracle picks
    "paper_transition": PALETTE["dark orange"],  # the transition point the paper reports: brown
    "authors_config": PALETTE["dark reddish purple"],  # the split in the authors' files: purple
    "shared": PALETTE["black"],  # one line standing for several algorithms with identical values
}
"""Colours of things that are not algorithms but that chapters mark on figures: apart from the
rule (PLayer-FL's own), none is an algorithm's."""

MARKER_LINESTYLES = {
    "rule": "-",
    "oracle": "--",
    "paper_transition": ":",
    "authors_config": "-.",
}
"""Dashes of the reference lines a figure draws across its panels: the oracle's bluish green and
the authors' purple are only ΔE 29 apart, so they differ in dashes too."""

MARKER_NAMES = {
    "rule": "rule's p",
    "oracle": "oracle p (validation)",
    "paper_transition": "paper's transition",
    "authors_config": "authors' code",
}

RULE_VARIANT_COLORS = {
    "paper": MARKER_COLORS["rule"],
    "median": PALETTE["dark vermillion"],
    "geomean": PALETTE["light vermillion"],
}
"""The split rule's variants (``split_oracle.RULE_VARIANTS``): the rule's vermillion, darker for
the median pooling, lighter for the geometric mean."""

RULE_VARIANT_HATCHES = {"paper": "", "median": "////", "geomean": "...."}
"""Bar hatches of the rule's variants: the mean's vermillion and the geometric mean's lighter
shade are ΔE 27 apart, so their bars differ in pattern too."""

SPLIT_RULE_COLORS = {
    "paper": MARKER_COLORS["rule"],
    "paper_tuned": PALETTE["orange"],
    "paper_median": RULE_VARIANT_COLORS["median"],
    "paper_geomean": RULE_VARIANT_COLORS["geomean"],
    "cost": PALETTE["blue"],
    "cost2": PALETTE["sky blue"],
    "disagreement": PALETTE["reddish purple"],
    "probe": PALETTE["black"],
}
"""The split rules of ``fl.split_rules`` (chapter 04b): the paper's in warm colours (vermillion,
the tuned threshold orange, its poolings as in :data:`RULE_VARIANT_COLORS`), the averaging costs
in blues (the second order the lighter), the update disagreement reddish purple, the validation
probe black; the oracle stays bluish green. Nine colours leave little room under deuteranopia
(the median's dark brown and the probe's black, ΔE 45, still read alike as thin lines), so every
rule also has its own marker shape (:data:`SPLIT_RULE_MARKERS`)."""

SPLIT_RULE_LINESTYLES = {
    "paper": "-",
    "paper_tuned": "--",
    "paper_median": ":",
    "paper_geomean": "-.",
    "cost": "-",
    "cost2": "--",
    "disagreement": "-",
    "probe": "-",
}
"""Line styles of the split rules: the paper's four forms, whose warm colours are only ΔE 18–30
apart, and the two averaging costs also differ in their dashes (a reader could not
tell the paper's forms apart by colour alone)."""

SPLIT_RULE_MARKERS = {
    "paper": "o",
    "paper_tuned": "s",
    "paper_median": "D",
    "paper_geomean": "^",
    "cost": "v",
    "cost2": "P",
    "disagreement": "X",
    "probe": ">",
}
"""Marker shapes of the split rules in every figure that marks a rule's points or means (the
oracle's a star, :data:`ORACLE_MARKER`): every rule its own shape, a second channel besides
colour; none a hexagon or pentagon, which read as circles at the figures' marker sizes."""

ORACLE_MARKER = "*"


MUTED = "#c7c7c7"
"""The colour of algorithms a figure does not single out ("other baselines")."""

PREFIX_COLORMAP = "viridis"
"""Split-sweep runs ``prefix_p<k>`` are coloured along this map, p = 0 (Local) to p = L."""


def algorithm_color(name: str, n_units: int | None = None) -> str:
    """Hex colour of an algorithm; ``prefix_p<k>`` along :data:`PREFIX_COLORMAP` (k / n_units,
    n_units defaulting to 8). Unknown names raise: a figure should not invent a colour."""
    p = parse_prefix_name(name)
    if p is not None:
        top = max(n_units or 8, 1)
        return to_hex(plt.get_cmap(PREFIX_COLORMAP)(min(p, top) / top))
    if name not in ALGORITHM_COLORS:
        raise ValueError(
            f"style: no colour for algorithm {name!r}; known: {', '.join(ALGORITHM_COLORS)} "
            "and prefix_p<k> (add new algorithms to playerfl_core.book.style.ALGORITHM_COLORS)"
        )
    return ALGORITHM_COLORS[name]


def emphasis_color(name: str) -> str:
    """The algorithm's colour when it is one of :data:`KEY_ALGORITHMS`, else :data:`MUTED`."""
    return algorithm_color(name) if name in KEY_ALGORITHMS else MUTED


def marker_color(kind: str) -> str:
    """Colour of a marked reference (``rule``, ``oracle``, ``paper_transition``, ...)."""
    if kind not in MARKER_COLORS:
        raise ValueError(f"style: no colour for marker {kind!r}; known: {', '.join(MARKER_COLORS)}")
    return MARKER_COLORS[kind]


def rule_variant_color(variant: str) -> str:
    """Colour of a split-rule variant; an unknown variant gets the muted grey."""
    return RULE_VARIANT_COLORS.get(variant, MUTED)


# --- datasets and per-layer measures ---------------------------------------------------------

DATASET_PALETTE = (
    "#1b9e77",  # teal
    "#7570b3",  # slate violet
    "#66a61e",  # leaf green
    "#e7298a",
    "#a6761d",
    "#01665e",
    "#b2abd2",
    "#8dd3c7",
)
"""The colours datasets wear (each declaration names its own, ``Federation.color``: dataset
names live in data_prep). None is an algorithm's or a marker's colour, and none is near FedAvg's
blue, Random's orange or PLayer-FL's vermillion, so a dataset line is never read as an
algorithm."""

QUALITATIVE = (*DATASET_PALETTE, "#5e3c99", "#b8e186")
"""Unnamed categories (clients, a reader's own federations) and the default colour cycle: the
same non-algorithm colours, so an uncoloured line never wears FedAvg's blue."""

UNIT_COLORMAP = "viridis"
"""Layer units when a figure colours by unit (ordered from input to output)."""

UNIT_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
"""Layer units' marker shapes, in the same order: neighbouring units of the colour map (viridis'
purple and dark blue) also differ in shape."""

CLASS_COLORMAP = "Set3"
"""Class labels in stacked bars (pastels: many classes, none an algorithm's colour)."""

MEASURE_COLORS = {
    "sensitivity": "#252525",  # the paper's measure: near-black
    "cum_sensitivity": "#969696",
    "grad_variance": "#006d2c",  # gradients: greens
    "grad_noise": "#74c476",
    "hessian_trace": "#8c510a",  # curvature: browns
    "hessian_trace_per_param": "#dfc27d",
    "hessian_top_eig": "#bf812d",
    "cka_dissimilarity": "#c51b7d",  # representations: magentas
    "cka": "#8e0152",
}
"""One colour per per-layer measure, by family (sensitivity, gradients, curvature, CKA), the
same in chapters 01, 02 and 03."""


def _fallback_color(key: str) -> str:
    """A stable colour for a name the style does not know (a reader's own federation)."""
    return QUALITATIVE[zlib.crc32(str(key).encode()) % len(QUALITATIVE)]


def dataset_color(name: str) -> str:
    """Colour of a dataset, of a heterogeneity variant (its base's) or of a display label
    ('Digits, rotated'): the one its declaration names (``Federation.color``); a federation that
    names none gets a stable colour of :data:`QUALITATIVE`."""
    name = str(name)
    try:
        variant = parse_variant(name)
    except DataError:
        variant = None
    base = variant.base if variant is not None else name
    if not is_registered(base):  # a display label: its first part names the base
        labels = {federation(d).display_name: d for d in available_datasets()}
        base = labels.get(name.split(", ")[0], base)
    if is_registered(base) and federation(base).color:
        return federation(base).color
    return _fallback_color(base)


def measure_color(metric: str) -> str:
    """Colour of a per-layer measure, by name or display name; an unknown one raises."""
    by_label = {label: key for key, label in METRIC_LABELS.items()}
    key = by_label.get(metric, metric)
    if key not in MEASURE_COLORS:
        raise ValueError(
            f"style: no colour for measure {metric!r}; known: {', '.join(MEASURE_COLORS)} "
            "(add new measures to playerfl_core.book.style.MEASURE_COLORS)"
        )
    return MEASURE_COLORS[key]


def category_color(kind: str, key: str) -> str:
    """Colour of ``key`` when figures colour by the column ``kind``: a dataset, a measure
    ('metric' or 'measure'), an algorithm, else a stable qualitative colour."""
    if kind == "dataset":
        return dataset_color(key)
    if kind in ("metric", "measure"):
        return measure_color(key)
    if kind == "algorithm":
        return algorithm_color(key)
    return _fallback_color(key)


def class_color(index: int) -> str:
    """Colour of the ``index``-th class label (same class, same colour in every panel)."""
    cmap = plt.get_cmap(CLASS_COLORMAP)
    return to_hex(cmap(index % cmap.N))


# --- figure style --------------------------------------------------------------------------------

FIGURE_WIDTH = 6.8
"""Inches: the widest figure; the column (672 px at a 1280 px window) shows its 1020 px (at
:data:`FIGURE_DPI`) at 0.66 of their size, which the fonts below are sized for."""

SINGLE_WIDTH = 4.8
"""Inches: a figure with one panel."""

MAX_COLS = 2
"""Panels per row; three only where each panel keeps short tick labels (heatmaps, shared axes)."""

MIN_FONT_PT = 10
"""The smallest text any figure draws (ticks, legends, annotations): shown at 0.66, a 10-pt
digit (0.73 em) is 10 / 72 × 150 × 0.66 × 0.73 = 10 px high at a 1280 px window (9 pt: 8.9)."""

FIGURE_DPI = 150
"""Pixels per inch of figures. The inline backend renders PNGs at ``figure.dpi`` and
``savefig`` writes it into the PNG's pHYs chunk, which the browser test reads back."""

BOOK_RC = {
    "figure.dpi": FIGURE_DPI,
    "savefig.dpi": "figure",
    "figure.figsize": (SINGLE_WIDTH, 3.2),
    "font.size": MIN_FONT_PT,
    "axes.titlesize": MIN_FONT_PT + 1,
    "axes.labelsize": MIN_FONT_PT,
    "xtick.labelsize": MIN_FONT_PT,
    "ytick.labelsize": MIN_FONT_PT,
    "legend.fontsize": MIN_FONT_PT,
    "legend.title_fontsize": MIN_FONT_PT,
    "figure.titlesize": MIN_FONT_PT + 1,
    "axes.prop_cycle": cycler(color=list(QUALITATIVE)),
}
"""The rcParams every figure module applies on import (:func:`apply_book_style`)."""


def apply_book_style() -> None:
    """Set :data:`BOOK_RC`: figures created after this are sized, lettered and coloured alike.
    Called on import by every figure module, so chapters need no style cell."""
    mpl.rcParams.update(BOOK_RC)


def figure_size(ncols: int = 1, nrows: int = 1, panel_height: float = 2.6) -> tuple[float, float]:
    """(width, height) in inches of ``nrows`` × ``ncols`` panels: one panel
    :data:`SINGLE_WIDTH` wide, more share :data:`FIGURE_WIDTH`."""
    width = SINGLE_WIDTH if ncols <= 1 else FIGURE_WIDTH
    return width, panel_height * nrows + 0.4


def panel_grid(
    n: int,
    max_cols: int = MAX_COLS,
    panel_height: float = 2.6,
    width: float | None = None,
    **subplots,
):
    """A figure of ``n`` panels wrapped into rows of at most ``max_cols``, as few rows as that
    allows and the panels spread evenly over them (4 panels at most 3 a row: 2 × 2, not a row of
    3 over one panel beside two empty cells); returns (figure, the n axes in reading order).
    Cells left over are hidden. ``layout='constrained'`` by default, so figure-level legends
    placed ``'outside ...'`` get room."""
    nrows = max(1, math.ceil(n / max(1, max_cols)))
    ncols = max(1, math.ceil(n / nrows))
    size = figure_size(ncols, nrows, panel_height)
    subplots.setdefault("layout", "constrained")
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(width or size[0], size[1]), squeeze=False, **subplots
    )
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def thin_ticks(ax, axis: str = "x", max_labels: int = 5, rotation: float = 45) -> None:
    """Rotate an axis's tick labels when there are more than ``max_labels``, so they do not
    overlap in a narrow panel."""
    labels = (ax.get_xticklabels if axis == "x" else ax.get_yticklabels)()
    if len(labels) > max_labels:
        ax.tick_params(axis=axis, labelrotation=rotation)
        if axis == "x":
            for t in labels:
                t.set_horizontalalignment("right")
                t.set_rotation_mode("anchor")
