"""The federations of the pre-registered split-rule test (the library's ``study.preregistration``
holds the procedure and the analysis; dataset names live here, in data_prep, as everywhere).

Declared at commit a025bfc, before any evaluation federation was computed or read, and moved
here unchanged; the pre-registration appendix's record says what each declaration added. At the
end, not a declaration: the federations of the scale ladder (``study.rungs``), a
descriptive study that no run reads either.
"""

SEEDS = {"heart": tuple(range(50))}
"""Seeds per federation where not :data:`DEFAULT_SEEDS`."""
DEFAULT_SEEDS = tuple(range(10))
LEARNING_RATES = {"heart": 0.03, "digits": 0.005, "fmnist": 0.003}
"""The sweep's learning rate per base: PLayer-FL's tuned rate on the base (standard profile)."""

HET_SUFFIXES = ("alpha0.05", "alpha0.1", "alpha0.3", "alpha1", "alpha10", "rotate", "invert")
DEVELOPMENT = (
    "heart",
    "digits",
    *(f"digits_{h}" for h in HET_SUFFIXES),
    "digits_rotate_alpha0.1",
)
EVALUATION = (
    "fmnist",
    *(f"fmnist_{h}" for h in HET_SUFFIXES),
    "fmnist_rotate_alpha0.1",
    "digits_noise",
    "fmnist_noise",
    "digits_noise_alpha0.1",
    "fmnist_noise_alpha0.1",
)

FOLLOW_UP = ("digits_quantity", "fmnist_quantity")
"""The follow-up test's federations: **quantity skew** (labels IID, the clients' shares of the
samples drawn from Dirichlet(0.5)), a kind neither set above contains. Declared, with the seeds
below, in the commit that added quantity skew to ``data_prep.skew``, before any quantity-skew
federation was computed or read."""
FOLLOW_UP_SEEDS = tuple(range(20))
"""Twice the seeds of the first test: the first test's power note showed that 10 seeds per
kind cannot reach α under Holm over 63 tests; here each entry has 40 seeds and Holm runs over
the 7 entries alone."""
SEEDS.update({name: FOLLOW_UP_SEEDS for name in FOLLOW_UP})

# -- added at the third declaration (more development seeds; concept shift) ----------------------
TUNING_SEEDS = {name: SEEDS.get(name, DEFAULT_SEEDS) for name in DEVELOPMENT}
"""The seeds thresholds are tuned on, as the first declaration fixed them: the development
seeds added below describe the development federations better but never move a threshold."""
DEVELOPMENT_ADDED_SEEDS = tuple(range(20))
"""The Digits heterogeneity federations of the development set get seeds 10–19 (descriptive,
for chapter 04's per-federation verdicts; quick to compute). The evaluation federations keep
their declared seeds: adding seeds to a set whose outcome is known would be optional stopping."""
DEVELOPMENT_ADDED = tuple(name for name in DEVELOPMENT if name.startswith("digits_"))
"""The federations that get :data:`DEVELOPMENT_ADDED_SEEDS`: the development set's Digits ones."""
SEEDS.update({name: DEVELOPMENT_ADDED_SEEDS for name in DEVELOPMENT_ADDED})

FOLLOW_UP_2 = ("digits_swap", "fmnist_swap")
"""The second follow-up's federations: **concept shift** (labels IID, inputs untouched, every
odd-numbered client swaps its classes in pairs; ``data_prep.skew``), a kind no earlier set
contains. Declared, with the seeds below, in the commit that added concept shift to
``data_prep.skew``, before any concept-shift federation was computed or read."""
FOLLOW_UP_2_SEEDS = tuple(range(20))
SEEDS.update({name: FOLLOW_UP_2_SEEDS for name in FOLLOW_UP_2})

# -- added at the fourth declaration (the confirmation on fresh seeds) ---------------------------
CONFIRMATION = ("fmnist_rotate", "fmnist_rotate_alpha0.1")
"""The confirmation test's federations: for every entry, the evaluation federation of the kind
on which its mean evaluation regret was largest (rotation for the paper's rule in all its forms
and for update disagreement; rotation mixed with α = 0.1 label skew for both averaging-cost
rules), as ``study.preregistration.worst_kinds`` computes it from the first test's seeds.
Declared, with the seeds below, before any of these seeds was computed: the committed store
held seeds 0–9 of both federations and no other."""
CONFIRMATION_SEEDS = tuple(range(10, 30))
"""Fresh seeds (a new partition of the clients, a new initialisation): 20 of them, so that the
smallest attainable Holm-adjusted p over the test's 16 (entry, kind) pairs is 16 · 2/2^20 ≈ 3e-5;
never pooled with the first test's seeds 0–9 of the same federations."""


# -- not a declaration: the scale ladder (study.rungs), descriptive -------------------------
LADDER = ("fmnist", "fmnist_rotate")
"""Fashion-MNIST and its rotated federation (the one that decides claim R2), at the book's sizes
and at the paper's."""
LADDER_SEEDS = tuple(range(10))


# -- added at the seventh declaration (the scale ladder's middle rung) ----------------------------
MIDDLE_SEEDS = tuple(range(5))
"""The seeds of the ladder's middle rung (``study.rungs``): the full split sweep of both
``LADDER`` federations at 1,000 images per client, width 0.5, 20 rounds."""


# -- added at the sixth declaration (each split at its own learning rate) -------------------------
FAIR_SWEEP = ("heart", "digits", "fmnist", "fmnist_rotate", "fmnist_alpha0.1")
"""The federations whose sweep is also run with every split at its own tuned learning rate, on
the one-rate sweep's seeds (``study.preregistration.seeds_of``)."""


# -- added at the eighth declaration (the scale ladder's evaluation rung) -------------------------
EVAL_SEEDS = tuple(range(10))
"""The seeds of the ladder's evaluation rung (``study.rungs``): the book's sweep of both
``LADDER`` federations, scored on 2,000 validation and 2,000 test images per client; the seeds
of the book's one-rate sweeps of both federations."""


# -- the paper-scale study (study.paper_scale): declared before any of its runs was computed ----
PAPER_SCALE = ("fmnist", "fmnist_rotate")
"""Fashion-MNIST and its rotated federation, swept at the paper's sizes (``study.paper_scale``)."""
PAPER_SCALE_SEEDS = tuple(range(10))
"""Ten seeds per federation and learning rate: the ladder's seeds, so each paper-scale sweep
pairs with the book's sweep and the evaluation rung on the same partitions' seeds."""

AUTHORS_MODE_SEEDS = {"heart": tuple(range(20)), "fmnist": tuple(range(5))}
"""The authors'-mode comparison's seeds per federation (``study.authors_mode``)."""


TINY_SWEEP = "digits_noise"
"""The federation of the split-rule test's CPU stand-in (``playerfl study run split_rule_test
--tiny``): an evaluation federation, so no development seeds join it, and small."""
