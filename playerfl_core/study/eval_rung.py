"""The ladder's evaluation rung (issue 34, item 5; item 14 of ``study.preregistration``): the
book's split sweep of Fashion-MNIST, base and rotated, trained exactly as the book trains it,
but each client scored on :data:`EVAL_PER_CLIENT` validation and as many test images drawn from
its own distribution (``data_prep.eval_sets``) instead of 64 and 80, so that a run's score is no
longer about δ away from its expectation by the draw of the evaluation images alone.

Every split p = 0 … L on the seeds ``preregistered.EVAL_SEEDS``, one thread per run, computed
by ``python -m playerfl_core.study.eval_rung`` and committed to
``stores/ladder/eval_sweep.parquet`` with its record (``study.rungs``). Resumable: each finished
run is kept in ``results/ladder_eval/`` (``PLAYERFL_RESULTS`` replaces ``results``).
"""

from __future__ import annotations

from collections.abc import Sequence

from data_prep import preregistered
from playerfl_core.study import rungs

DATASETS, SEEDS = preregistered.LADDER, preregistered.EVAL_SEEDS
EVAL_PER_CLIENT = 2000


def rung() -> rungs.Rung:
    """The rung as the constants above declare it (read at each call)."""
    return rungs.Rung(
        name="eval", datasets=tuple(DATASETS), seeds=tuple(SEEDS), loader_profile="quick",
        loader=(("eval_per_client", EVAL_PER_CLIENT),), training=(),
        store="eval_sweep.parquet", work="ladder_eval",
    )  # fmt: skip


def load():
    """The committed evaluation rung and its record; None when not computed."""
    return rungs.load(rung())


def main(argv: Sequence[str] | None = None) -> None:
    rungs.main(rung(), {"eval_per_client": EVAL_PER_CLIENT}, argv, __doc__)


if __name__ == "__main__":
    main()
