"""The federations of the pre-registered split-rule test (the library's ``study.preregistration``
holds the procedure and the analysis; dataset names live here, in data_prep, as everywhere).

Declared at commit a025bfc, before any evaluation federation was computed or read, and moved
here unchanged.
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
