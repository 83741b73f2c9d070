"""The long, tidy results table's schema: one row per fact, the contract between engine and
analysis.

Columns: dataset, algorithm, lr, seed, client, round, split, metric, value, n_samples.
``client == SERVER`` (-1) marks server-level facts (e.g. PLayer-FL's chosen split).
Every table and figure of the book is a groupby over this table. Below the engine and the
algorithms, which write rows of it; :mod:`playerfl_core.stats.results` reads it.
"""

COLUMNS = [
    "dataset",
    "algorithm",
    "lr",
    "seed",
    "client",
    "round",
    "split",
    "metric",
    "value",
    "n_samples",
]
RUN_KEYS = ["dataset", "algorithm", "lr", "seed"]
SERVER = -1
TRAINING_LOSS = "training_loss"
"""Metric of a split's value of the loss the run trains with (logged under the authors'
protocol, whose rounds are selected by it; ``loss`` stays cross-entropy)."""
