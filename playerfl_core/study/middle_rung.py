"""The scale ladder's middle rung (issue 34, item 6; item 13 of ``study.preregistration``): the
full split sweep of Fashion-MNIST, base and rotated, at sizes between the book's and the
paper's, so that the oracle and the regret, not only the rule's choice, are seen at a larger
scale.

The rung: :data:`SAMPLES_PER_CLIENT` images per client drawn as the paper profile draws them
(its loader, its 64/16/20 splits: 160 validation and 200 test images per client), the CNN at
width :data:`WIDTH`, :data:`ROUNDS` rounds, and the book's one sweep rate and batch (the quick
profile's). Every split p = 0 … L on the seeds ``preregistered.MIDDLE_SEEDS``, one thread per
run, computed by ``python -m playerfl_core.study.middle_rung`` and committed to
``stores/ladder/middle_sweep.parquet`` with its record (``study.rungs``). Resumable: each
finished run is kept in ``results/ladder_middle/`` (``PLAYERFL_RESULTS`` replaces ``results``).
"""

from __future__ import annotations

from collections.abc import Sequence

from data_prep import preregistered
from playerfl_core.study import rungs

DATASETS, SEEDS = preregistered.LADDER, preregistered.MIDDLE_SEEDS
SAMPLES_PER_CLIENT = 1000
WIDTH = 0.5
ROUNDS = 20


def rung() -> rungs.Rung:
    """The rung as the constants above declare it (read at each call)."""
    return rungs.Rung(
        name="middle", datasets=tuple(DATASETS), seeds=tuple(SEEDS), loader_profile="paper",
        loader=(("samples_per_client", SAMPLES_PER_CLIENT),),
        training=(("width", WIDTH), ("rounds", ROUNDS)),
        store="middle_sweep.parquet", work="ladder_middle",
    )  # fmt: skip


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


def main(argv: Sequence[str] | None = None) -> None:
    rungs.main(
        rung(),
        {"samples_per_client": SAMPLES_PER_CLIENT, "width": WIDTH, "rounds": ROUNDS},
        argv,
        __doc__,
    )


if __name__ == "__main__":
    main()
