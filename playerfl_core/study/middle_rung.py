"""The scale ladder's middle rung: the full split sweep of Fashion-MNIST, base and rotated, at
sizes between the book's and the paper's, so that the oracle and the regret, not only the rule's
choice, are seen at a larger scale.

The rung: :data:`SAMPLES_PER_CLIENT` images per client drawn as the paper profile draws them
(its loader, its 64/16/20 splits: 160 validation and 200 test images per client), the CNN at
width :data:`WIDTH`, :data:`ROUNDS` rounds, and the book's one sweep rate and batch (the quick
profile's). Every split p = 0 … L on the seeds ``preregistered.MIDDLE_SEEDS``; declared in
``study.registry``, computed by ``playerfl study run middle_rung`` (``study.rungs`` says what one
run is) and committed to ``stores/ladder/middle_sweep.parquet`` with its record.
"""

from __future__ import annotations

from data_prep import preregistered
from playerfl_core.study import rungs

DATASETS, SEEDS = preregistered.LADDER, preregistered.MIDDLE_SEEDS
SAMPLES_PER_CLIENT = 1000
WIDTH = 0.5
ROUNDS = 20


def rung():
    """The rung's declaration, from the constants above (read at each call)."""
    from playerfl_core.study.declaration import EVERY_SPLIT, Study

    return Study(
        name="middle_rung",
        what="The ladder's middle rung: 1,000 images per client, width 0.5, 20 rounds.",
        federations=tuple(DATASETS),
        seeds=tuple(SEEDS),
        arms=EVERY_SPLIT,
        rates="the book's one sweep rate and batch (the quick profile's)",
        profile="paper",
        loader=(("samples_per_client", SAMPLES_PER_CLIENT),),
        training=(("width", WIDTH), ("rounds", ROUNDS)),
        training_profile="quick",
        scoring=(
            ("val_per_client", "the paper profile's 16 %"),
            ("test_per_client", "the paper profile's 20 %"),
            ("round_and_oracle", "validation"),
        ),  # fmt: skip
        claim="descriptive (R1's reading at a larger scale; no test with 5 seeds)",
        declared="2026-12-02",
        commit="e76b198",
        why="Do the oracle and the regret, not only the rule's choice, hold on a larger "
        "federation (pre-registration §13)?",
        store="ladder/middle_sweep.parquet",
        computes="playerfl_core.study.rungs",
        work="ladder_middle",
    )


def rung_sizes() -> dict[str, str]:
    """The book's rung and the middle one as the chapter names them, read from Fashion-MNIST's
    declaration (the book's sizes) and from the rung's configuration."""
    from data_prep.registry import federation

    fed, cfg = federation(DATASETS[0]), rungs.config(rung(), DATASETS[0], SEEDS[0])
    book, train = fed.loader_sizes("quick"), fed.training_settings("quick")
    return {
        "book": f"book: {book['samples_per_client']:,} images per client, width "
        f"{train['width']:g}, {train['rounds']} rounds",
        "middle": f"middle rung: {SAMPLES_PER_CLIENT:,} images per client, width {cfg.width:g}, "
        f"{cfg.rounds} rounds",
    }


def load():
    """The committed middle rung and its record; None when not computed."""
    return rungs.load(rung())
