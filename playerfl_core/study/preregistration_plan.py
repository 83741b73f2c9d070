"""What the pre-registered test of the split rules declares: its sets of federations and seeds,
its entries (a rule at a threshold), and how a federation's kind and set are named.

Data and small lookups only, re-exported by :mod:`playerfl_core.study.preregistration`; the
federations and seeds themselves live in ``data_prep/preregistered.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from data_prep import preregistered

PROBE_ROUNDS = 2
"""The validation probe trains every split for this many rounds."""

# The declared federations, seeds and learning rates live in ``data_prep/preregistered.py``,
# where the library's dataset names live; here under the names the analysis reads.
SEEDS, DEFAULT_SEEDS = preregistered.SEEDS, preregistered.DEFAULT_SEEDS
"""Seeds per federation (Heart: 50; the follow-ups and the added development seeds: 20), and the
10 seeds of every other federation."""
LEARNING_RATES = preregistered.LEARNING_RATES
"""The sweeps' learning rate per base: PLayer-FL's tuned rate on the base."""
DEVELOPMENT, EVALUATION = preregistered.DEVELOPMENT, preregistered.EVALUATION
"""The federations thresholds may be tuned on (Heart, Digits and its heterogeneity federations),
and those that judge the rules (Fashion-MNIST, its heterogeneity federations, noise skew on both
bases)."""
FOLLOW_UP = preregistered.FOLLOW_UP
"""The follow-up's federations: quantity skew on both image bases, 20 seeds."""
FOLLOW_UP_2 = preregistered.FOLLOW_UP_2
"""The second follow-up's federations: concept shift on both image bases, 20 seeds."""
CONFIRMATION = preregistered.CONFIRMATION
"""The confirmation's federations: where the first-epoch rules' mean evaluation regret was
largest (rotated Fashion-MNIST, alone and with α = 0.1 label skew)."""
CONFIRMATION_SEEDS = preregistered.CONFIRMATION_SEEDS
"""The confirmation's fresh seeds 10–29, never pooled with the first test's 0–9."""
TUNING_SEEDS = preregistered.TUNING_SEEDS
"""The seeds thresholds are tuned on: the first declaration's, per development federation."""
DEVELOPMENT_ADDED_SEEDS = preregistered.DEVELOPMENT_ADDED_SEEDS
"""Seeds 0–19 of the Digits development federations: descriptive, they move no threshold."""


@dataclass(frozen=True)
class Entry:
    """One rule at one threshold, as evaluated."""

    label: str
    rule: str
    threshold: float | None
    """None: the value :data:`~playerfl_core.study.preregistration.TUNED` holds for the rule."""


ENTRIES = (
    Entry("paper (t = 1)", "paper", 1.0),
    Entry("paper (tuned t)", "paper", None),
    Entry("paper, median pooling", "paper_median", 1.0),
    Entry("paper, geometric-mean pooling", "paper_geomean", 1.0),
    Entry("averaging cost (tuned τ)", "cost", None),
    Entry("update disagreement (tuned τ)", "disagreement", None),
    Entry("validation probe (2 rounds)", "probe", float(PROBE_ROUNDS)),
)
"""The first test's entries: the paper's rule at t = 1 and tuned, its median and geometric-mean
poolings, the averaging-cost and update-disagreement rules at their tuned τ, and the validation
probe as the practical upper reference."""
ADDED_ENTRIES = (Entry("averaging cost, second order (tuned τ)", "cost2", None),)
"""The second-order averaging-cost rule, declared after the first test and the follow-up were
known: tested in families of its own on their sets, with every entry on the second follow-up."""
ALL_ENTRIES = ENTRIES + ADDED_ENTRIES
"""Every declared entry: the first test's seven and the second-order rule."""


def seeds_of(dataset: str) -> tuple[int, ...]:
    """The declared seeds of a federation."""
    return SEEDS.get(dataset, DEFAULT_SEEDS)


def base_of(dataset: str) -> str:
    """The base dataset of a federation (``fmnist_rotate`` → ``fmnist``)."""
    return dataset.split("_", 1)[0]


def kind_of(dataset: str) -> str:
    """The kind of heterogeneity a federation of the test represents."""
    _, _, rest = dataset.partition("_")
    if not rest:
        return "base federation"
    if rest.startswith("alpha"):
        alpha = float(rest.removeprefix("alpha"))
        if alpha <= 0.1:
            return "strong label skew (α ≤ 0.1)"
        return "near IID (α = 10)" if alpha >= 10 else "moderate label skew (α 0.3–1)"
    if rest == "quantity":
        return "quantity skew"
    if rest == "swap":
        return "concept shift"
    kind, _, alpha = rest.partition("_alpha")
    return f"mixed ({kind} + α = {alpha})" if alpha else f"feature skew ({kind})"


KIND_ORDER = (
    "base federation",
    "strong label skew (α ≤ 0.1)",
    "moderate label skew (α 0.3–1)",
    "near IID (α = 10)",
    "feature skew (rotate)",
    "feature skew (invert)",
    "feature skew (noise)",
    "mixed (rotate + α = 0.1)",
    "mixed (noise + α = 0.1)",
    "quantity skew",  # the follow-up's kind
    "concept shift",  # the second follow-up's kind
)
"""The order in which tables list the kinds of heterogeneity."""


CONFIRMING = "confirmation"
"""The set of the confirmation's fresh seeds (:func:`role_of`)."""
SECOND_FOLLOW_UP = "second follow-up"
"""The set of the concept-shift federations (:func:`role_of`)."""


def role_of(dataset: str, seed: int | None = None) -> str:
    """The set a federation (with ``seed``: a seed of it) belongs to."""
    if seed is not None and dataset in CONFIRMATION and seed in CONFIRMATION_SEEDS:
        return CONFIRMING
    if dataset in DEVELOPMENT:
        return "development"
    if dataset in EVALUATION:
        return "evaluation"
    if dataset in FOLLOW_UP:
        return "follow-up"
    if dataset in FOLLOW_UP_2:
        return SECOND_FOLLOW_UP
    raise ValueError(
        f"{dataset!r} is in no set of the pre-registration (development: "
        f"{', '.join(DEVELOPMENT)}; evaluation: {', '.join(EVALUATION)}; follow-up: "
        f"{', '.join(FOLLOW_UP)}; second follow-up: {', '.join(FOLLOW_UP_2)})."
    )
