"""The ladder's evaluation rung: the book's split sweep of Fashion-MNIST, base and rotated,
trained exactly as the book trains it, but each client scored on :data:`EVAL_PER_CLIENT`
validation and as many test images drawn from its own distribution (``data_prep.eval_sets``)
instead of 64 and 80, so that a run's score is no longer about δ away from its expectation by
the draw of the evaluation images alone.

Every split p = 0 … L on the seeds ``preregistered.EVAL_SEEDS``; declared in
``study.registry``, computed by ``playerfl study run eval_rung`` (one run as ``study.rungs``
computes it; the noise measurements follow once the rung is committed) and committed to
``stores/ladder/eval_sweep.parquet`` with its record.
"""

from __future__ import annotations

from data_prep import preregistered
from playerfl_core.study import rungs
from playerfl_core.study.rungs import gather, record_extra, run_one, study_tasks, task_name

__all__ = ["gather", "record_extra", "run_one", "study_tasks", "task_name"]

DATASETS, SEEDS = preregistered.LADDER, preregistered.EVAL_SEEDS
EVAL_PER_CLIENT = 2000
BOOK_TEST_IMAGES = 80
"""A client's test images at the book's sizes (400 images, 64/16/20): the first size at which
:func:`measure_noise` states a client's error."""
NOISE_SEED, NOISE_DRAWS = 0, 2000


def rung():
    """The rung's declaration, from the constants above (read at each call)."""
    from playerfl_core.study.declaration import EVERY_SPLIT, Study

    return Study(
        name="eval_rung",
        what="The ladder's evaluation rung: the book's sweep scored on 2,000-image sets.",
        federations=tuple(DATASETS),
        seeds=tuple(SEEDS),
        arms=EVERY_SPLIT,
        rates="the book's one sweep rate and batch (the quick profile's)",
        profile="quick",
        loader=(("eval_per_client", EVAL_PER_CLIENT),),
        training_profile="quick",
        scoring=(
            ("val_per_client", EVAL_PER_CLIENT),
            ("test_per_client", EVAL_PER_CLIENT),
            ("round_and_oracle", "large validation"),
        ),  # fmt: skip
        claim="R1 at low evaluation noise",
        declared="2026-12-03",
        commit="742bae1",
        why="At the book's sizes a run's score is about δ from its expectation by the draw of "
        "the evaluation images alone (pre-registration §14).",
        store="ladder/eval_sweep.parquet",
        computes="playerfl_core.study.eval_rung",
        work="ladder_eval",
    )


def load():
    """The committed evaluation rung and its record; None when not computed."""
    return rungs.load(rung())


def noise_path():
    return rung().store_path().with_name("eval_noise.parquet")


def rule_split(table, dataset: str, seed: int) -> int:
    """The paper's rule's split on one seed of the rung (every run records the same one)."""
    row = table[(table["dataset"] == dataset) & (table["seed"] == seed)
                & (table["metric"] == "rule_split_p")]  # fmt: skip
    return int(row["value"].iloc[0])


def measure_noise(table) -> tuple:
    """The declared noise measurement, per federation on seed :data:`NOISE_SEED` with the paper's
    rule's split: a client's and a run's standard error at :data:`BOOK_TEST_IMAGES` and at
    :data:`EVAL_PER_CLIENT` test images (``measure.score_noise``). Returns (table, CPU-s)."""
    import time

    import pandas as pd

    from playerfl_core.measure.score_noise import client_score_noise

    start, frames = time.process_time(), []
    for d in DATASETS:
        p = rule_split(table, d, NOISE_SEED)
        noise = client_score_noise(
            d, NOISE_SEED, p, EVAL_PER_CLIENT, (BOOK_TEST_IMAGES, EVAL_PER_CLIENT), NOISE_DRAWS
        )
        frames.append(noise.assign(dataset=d, seed=NOISE_SEED, p=p))
    return pd.concat(frames, ignore_index=True), round(time.process_time() - start, 1)


def regret_noise_path():
    return rung().store_path().with_name("eval_regret_noise.parquet")


def measure_regret_noise(table) -> tuple:
    """How noisy one seed's regret is from its test images alone (measured after the rung's
    results were read, not declared): per federation on seed :data:`NOISE_SEED`, the regret
    between the paper's rule's split and the oracle's most frequent split over the rung's seeds
    (the smaller on ties), both models scored on the same resampled images
    (``measure.score_noise.regret_noise``), at :data:`BOOK_TEST_IMAGES` and
    :data:`EVAL_PER_CLIENT` test images. Returns (table, CPU-s)."""
    import time

    import pandas as pd

    from playerfl_core.measure.score_noise import regret_noise

    start, frames = time.process_time(), []
    oracle = rungs.regrets(table)
    for d in DATASETS:
        p_rule = rule_split(table, d, NOISE_SEED)
        p_oracle = int(oracle.loc[oracle["dataset"] == d, "p_oracle"].mode().min())
        noise = regret_noise(
            d, NOISE_SEED, p_rule, p_oracle, EVAL_PER_CLIENT,
            (BOOK_TEST_IMAGES, EVAL_PER_CLIENT), NOISE_DRAWS,
        )  # fmt: skip
        frames.append(noise.assign(dataset=d, seed=NOISE_SEED, p_rule=p_rule, p_oracle=p_oracle))
    return pd.concat(frames, ignore_index=True), round(time.process_time() - start, 1)


def load_regret_noise():
    """The committed measurement of a regret's noise and its record; None when not computed."""
    from playerfl_core.study.split_rules_table import load_rules_table

    path = regret_noise_path()
    return load_rules_table(path) if path.exists() else None


def load_noise():
    """The committed noise measurement and its record; None when not computed."""
    from playerfl_core.study.split_rules_table import load_rules_table

    return load_rules_table(noise_path()) if noise_path().exists() else None


def after_commit(study, say=print) -> None:
    """Measure the score's and the regret's noise on the committed rung, once each (delete a
    file to measure it again)."""
    from playerfl_core.study.split_rules_table import save_with_record

    for what, path, measure in (
        ("score noise", noise_path(), measure_noise),
        ("regret noise", regret_noise_path(), measure_regret_noise),
    ):
        if path.exists():
            continue
        noise, cpu = measure(load()[0])
        extra = {"eval_per_client": EVAL_PER_CLIENT, "draws": NOISE_DRAWS, "cpu_seconds": cpu}
        say(f"{what} to {save_with_record(noise, path, extra)} ({cpu:.0f} CPU-s)")
