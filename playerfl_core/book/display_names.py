"""What the page calls a thing: display names of algorithms, datasets, clients, split rules and
their poolings, hyper-parameters, scores, per-layer measures and the pre-registered study's sets.

No table or figure shows a code name: each maps its names through these. Apart from the colours
(:mod:`playerfl_core.book.style`, which re-exports every name here) because a name needs no
plotting library; presentation only, nothing here changes what a run computes.
"""

from __future__ import annotations

from data_prep.base import DataError
from data_prep.registry import declarations, federation, is_registered, parse_variant
from playerfl_core.fl.names import algorithm_label

RULE_NAMES = {
    "paper": "paper",
    "paper_median": "paper, median pooling",
    "paper_geomean": "paper, geometric-mean pooling",
    "cost": "averaging cost",
    "cost2": "averaging cost, second order",
    "disagreement": "update disagreement",
    "probe": "validation probe",
}
"""Display names of the split rules of ``fl.split_rules`` (as the pre-registered entries name
them, without their thresholds)."""


RULE_VARIANT_NAMES = {"paper": "mean (paper)", "median": "median", "geomean": "geometric mean"}
"""Display names of the split rule's poolings (``split_oracle.RULE_VARIANTS``)."""


SCORE_NAMES = {
    "accuracy": "accuracy",
    "macro_f1": "macro-F1",
    "loss": "loss",
    "fairness_accuracy": "fairness (accuracy)",
    "fairness_f1": "fairness (macro-F1)",
    "fairness_loss": "fairness (loss)",
    "ipr_accuracy": "IPR (accuracy)",
    "ipr_f1": "IPR (macro-F1)",
    "ipr_loss": "IPR (loss)",
}
"""Display names of the scores and of the paper's tables of them (fairness: variance over
clients; IPR: share of clients PLayer-FL improves)."""


def rule_label(name) -> str:
    """Display name of a split rule; anything else (an entry's label, a reader's rule) as it
    is."""
    return RULE_NAMES.get(name, name)


HYPERPARAMETER_LABELS = {
    "mu": "μ (proximal weight)",
    "lam": "λ (pull towards the global model)",
    "finetune_epochs": "fine-tuning epochs",
    "p": "layer-preserving rate p",
    "tau_base": "base aggregation interval τ",
    "hn_lr": "hypernetwork learning rate",
    "threshold": "rise threshold t",
}
"""Display names of the algorithms' key hyper-parameters (their code names are keyword
arguments: ``mu``, ``lam``)."""


def hyperparameter_label(name) -> str:
    """Display name of a hyper-parameter; an unknown one as it is."""
    return HYPERPARAMETER_LABELS.get(name, name)


def client_label(name):
    """Display name of a client: the one a declaration gives (``Federation.client_labels``:
    Heart's ``va`` reads "Long Beach VA"), else underscores read as spaces (a generated
    ``client_3`` reads ``client 3``: no code names on the page); a client number as it
    is."""
    if not isinstance(name, str):
        return name
    for fed in declarations():
        if name in fed.client_labels:
            return fed.client_labels[name]
    return name.replace("_", " ")


def rule_variant_label(name) -> str:
    """Display name of a pooling variant of the split rule; anything else as it is."""
    return RULE_VARIANT_NAMES.get(name, name)


def score_label(name) -> str:
    """Display name of a score or a published table of one; anything else as it is."""
    return SCORE_NAMES.get(name, name)


SET_NAMES = {
    "follow-up": "quantity-skew follow-up",
    "second follow-up": "concept-shift follow-up",
}
"""Display names of the pre-registered split-rule study's sets that its declarations name by
their order (``study.preregistration.role_of``): by their kind of heterogeneity, which is what a
reader needs to tell them apart. The stored names stay; development, evaluation and
confirmation read as they are."""


def set_label(name):
    """Display name of a set of the pre-registered study, or of one of its declared families
    (``preregistration.FAMILIES``: "follow-up, second-order rule" reads "quantity-skew follow-up,
    second-order rule"); anything else as it is."""
    if not isinstance(name, str):
        return name
    role, sep, rest = name.partition(", ")
    return f"{SET_NAMES.get(role, role)}{sep}{rest}"


FEATURE_SKEW_NAMES = {
    "rotate": "rotated",
    "invert": "inverted",
    "noise": "noisy",
    "quantity": "quantity skew",
}
"""Heterogeneity variants' feature-skew kinds (``data_prep.skew.KINDS``) in words."""


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


METRIC_LABELS = {
    "sensitivity": "federation sensitivity sₖ",
    "cum_sensitivity": "cumulative Fₖ = (s₁ + … + sₖ)/s₁",
    "grad_variance": "gradient variance (full data)",
    "grad_noise": "gradient noise (across batches)",
    "hessian_trace": "Hessian block trace",
    "hessian_trace_per_param": "Hessian trace / parameters",
    "hessian_top_eig": "Hessian block top eigenvalue",
    "cka_dissimilarity": "1 − CKA (mean over other clients)",
    "cka": "linear CKA",
}
"""Display names of the per-layer measures, in Unicode: the same text in a figure, a table
and a sentence (TeX would show as raw ``$...$`` in an HTML table)."""


def metric_label(metric: str) -> str:
    """Display name of a per-layer measure; an unknown one is returned unchanged."""
    return METRIC_LABELS.get(metric, metric)
