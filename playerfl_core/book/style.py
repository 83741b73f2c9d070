"""How the book looks, in one place: one colour and one display name per algorithm, the colours
of the chapters' markers, and datasets' display names.

Every figure and every table that shows an algorithm or a dataset takes its name and colour from
here, so PLayer-FL is the same red and Local the same grey in every chapter. Presentation only:
nothing here changes what a run computes.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.colors import to_hex

from data_prep.base import DataError
from data_prep.registry import federation, is_registered, parse_variant
from playerfl_core.fl.algorithms.prefix import parse_prefix_name
from playerfl_core.fl.names import ALGORITHM_NAMES, algorithm_label  # noqa: F401 (re-exported)

ALGORITHM_COLORS = {
    "local": "#555555",  # the two references: dark grey ...
    "fedavg": "#1f77b4",  # ... and blue
    "fedprox": "#17becf",
    "pfedme": "#9467bd",
    "ditto": "#8c564b",
    "finetune": "#aec7e8",  # a light FedAvg blue: FedAvg's model, then adapted
    "fedbabu": "#e377c2",
    "fedlp": "#bcbd22",
    "fedlama": "#393b79",
    "pfedla": "#7b4173",
    "playerfl": "#d62728",  # the method: red
    "playerfl_random": "#ff7f0e",  # its ablation: orange
}
"""One colour per algorithm, the same in every chapter."""

KEY_ALGORITHMS = ("local", "fedavg", "playerfl", "playerfl_random")
"""The algorithms a crowded figure keeps in colour; the others are drawn in :data:`MUTED`."""

MARKER_COLORS = {
    "rule": ALGORITHM_COLORS["playerfl"],  # the split PLayer-FL's rule picks: PLayer-FL's red
    "oracle": "#2ca02c",  # the split the validation oracle picks
    "paper_transition": "#8c6d31",  # the transition point the paper reports
    "authors_config": "#5254a3",  # the split in the authors' configuration files
    "shared": "#000000",  # one line standing for several algorithms with identical values
}
"""Colours of things that are not algorithms but that chapters mark on figures."""

MARKER_NAMES = {
    "rule": "rule's p",
    "oracle": "oracle p (validation)",
    "paper_transition": "paper's transition",
    "authors_config": "authors' code",
}

RULE_VARIANT_COLORS = {"paper": MARKER_COLORS["rule"], "median": "#e7969c", "geomean": "#843c39"}
"""The split rule's variants (``split_oracle.RULE_VARIANTS``): shades of the rule's red."""

SPLIT_RULE_COLORS = {
    "paper": MARKER_COLORS["rule"],
    "paper_tuned": "#ff9896",
    "paper_median": RULE_VARIANT_COLORS["median"],
    "paper_geomean": RULE_VARIANT_COLORS["geomean"],
    "cost": "#9467bd",
    "disagreement": "#17becf",
    "probe": "#000000",
}
"""The split rules of ``fl.split_rules`` (chapter 04b): the paper's in the rule's reds, the new
rules in colours no algorithm uses, the validation probe in black; the oracle stays green."""

MUTED = "#c7c7c7"
"""The colour of algorithms a figure does not single out ("other baselines")."""

PREFIX_COLORMAP = "viridis"
"""Split-sweep runs ``prefix_p<k>`` are coloured along this map, p = 0 (Local) to p = L."""

FEATURE_SKEW_NAMES = {
    "rotate": "rotated",
    "invert": "inverted",
    "noise": "noisy",
    "quantity": "quantity skew",
}
"""Heterogeneity variants' feature-skew kinds (``data_prep.skew.KINDS``) in words."""


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


def dataset_label(name: str) -> str:
    """Display name of a dataset: the label its declaration gives (``Federation.label``, e.g.
    'Fashion-MNIST'); heterogeneity variants in words, e.g. 'Digits, rotated',
    'Fashion-MNIST, α = 0.1'; an unknown name is returned unchanged."""
    name = str(name)
    try:
        variant = parse_variant(name)
    except DataError:  # a malformed variant name: show it as it is
        variant = None
    base = variant.base if variant is not None else name
    label = federation(base).display_name if is_registered(base) else base
    if variant is None:
        return label
    parts = [label]
    if variant.kind is not None:
        parts.append(FEATURE_SKEW_NAMES.get(variant.kind, variant.kind))
    if variant.alpha is not None:
        parts.append(f"α = {variant.alpha:g}")
    return ", ".join(parts)


def display_names(frame, algorithm: str = "algorithm", dataset: str = "dataset"):
    """A copy of a table with its algorithm and dataset columns (when present) in display names,
    for tables shown to the reader."""
    out = frame.copy()
    if algorithm in out.columns:
        out[algorithm] = out[algorithm].map(algorithm_label)
    if dataset in out.columns:
        out[dataset] = out[dataset].map(dataset_label)
    return out
