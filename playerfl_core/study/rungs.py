"""The scale ladder: Fashion-MNIST, base and rotated, at sizes other than the book's, declared
(:data:`STUDIES`): the paper-size first epochs, the middle rung and the
evaluation rung (the book's sweep scored on 2,000-image sets). Per seed the rule's split, the
oracle's and the regret (:func:`regrets`)."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pandas as pd

from data_prep import preregistered
from data_prep.registry import federation as declared_federation
from playerfl_core.fl.algorithms import get_algorithm
from playerfl_core.fl.algorithms.prefix import prefix_name
from playerfl_core.fl.divergence import check_table
from playerfl_core.fl.engine import run_federated
from playerfl_core.fl.errors import DivergenceError
from playerfl_core.measure.score_noise import client_score_noise, regret_noise
from playerfl_core.stats.results import COLUMNS
from playerfl_core.study import split_scores as S
from playerfl_core.study.declaration import EVERY_SPLIT, Study, federation, n_splits
from playerfl_core.study.machine import one_thread
from playerfl_core.study.runner import committed, cpu_seconds, named, write_store

DATASETS = preregistered.LADDER
EVAL_PER_CLIENT = 2000
BOOK_TEST_IMAGES = 80  # a client's test images at the book's sizes (400 images, 64/16/20)
NOISE_SEED, NOISE_DRAWS = 0, 2000
MIDDLE_SAMPLES_PER_CLIENT, MIDDLE_WIDTH, MIDDLE_ROUNDS = 1000, 0.5, 20
PAPER = "paper"

EVAL_RUNG = Study(
    name="eval_rung",
    what="The ladder's evaluation rung: the book's sweep scored on 2,000-image sets.",
    federations=tuple(DATASETS),
    seeds=tuple(preregistered.EVAL_SEEDS),
    arms=EVERY_SPLIT,
    rates="the book's one sweep rate and batch (the quick profile's)",
    profile="quick",
    loader=(("eval_per_client", EVAL_PER_CLIENT),),
    training_profile="quick",
    scoring=(("val_per_client", EVAL_PER_CLIENT), ("test_per_client", EVAL_PER_CLIENT),
             ("round_and_oracle", "large validation")),
    claim="R1 at low evaluation noise",
    declared="2026-12-03",
    commit="742bae1",
    why="At the book's sizes a run's score is about δ from its expectation by the draw of "
    "the evaluation images alone (pre-registration, point 14).",
    store="ladder/eval_sweep.parquet",
    computes="playerfl_core.study.rungs",
    work="ladder_eval",
)  # fmt: skip
MIDDLE_RUNG = replace(
    EVAL_RUNG, name="middle_rung",
    what="The ladder's middle rung: 1,000 images per client, width 0.5, 20 rounds.",
    seeds=tuple(preregistered.MIDDLE_SEEDS), profile="paper",
    loader=(("samples_per_client", MIDDLE_SAMPLES_PER_CLIENT),),
    training=(("width", MIDDLE_WIDTH), ("rounds", MIDDLE_ROUNDS)),
    scoring=(("val_per_client", "the paper profile's 16 %"),
             ("test_per_client", "the paper profile's 20 %"), ("round_and_oracle", "validation")),
    claim="descriptive (R1's reading at a larger scale; no test with 5 seeds)",
    declared="2026-12-02", commit="e76b198",
    why="Do the oracle and the regret, not only the rule's choice, hold on a larger "
    "federation (pre-registration, point 13)?",
    store="ladder/middle_sweep.parquet", work="ladder_middle",
)  # fmt: skip
SCALE_LADDER = Study(
    name="scale_ladder",
    what="The paper-size first epochs: the rule's split at the paper's sizes.",
    federations=tuple(DATASETS),
    seeds=tuple(preregistered.LADDER_SEEDS),
    arms="the paper's rule (one local epoch per seed: all the rule reads)",
    rates="the paper profile's rate (1e-3)",
    profile=PAPER,
    scoring=(("val_per_client", "none (first epoch only)"),
             ("test_per_client", "none (first epoch only)"), ("round_and_oracle", "none")),
    claim="descriptive (R2's scope: the rule's choice at the paper's sizes)",
    declared="2026-12-02",
    commit="de09bbb",
    why="Does the paper's rule choose the same split at the paper's sizes as at the "
    "book's? Its choice there costs one epoch per seed.",
    store="ladder/paper_first_epoch.parquet",
    computes="playerfl_core.study.rungs",
    work="ladder_paper_first_epoch",
)  # fmt: skip
STUDIES = (EVAL_RUNG, MIDDLE_RUNG, SCALE_LADDER)


def first_epoch_only(study: Study) -> bool:
    """Whether ``study`` trains first epochs only (it chooses no round and no oracle)."""
    return dict(study.scoring).get("round_and_oracle") == "none"


def load(study: Study | str) -> tuple[pd.DataFrame, dict] | None:
    """The committed store of ``study`` (or of the rung so named) and its record, or None."""
    study = named(STUDIES, study, "rung") if isinstance(study, str) else study
    return committed(study.store_path())


# -- computing: one run -------------------------------------------------------------------------
def study_tasks(rung: Study, datasets=None, seeds=None) -> list[tuple]:
    """Every (federation, seed, split), or (federation, seed) for first epochs only."""
    pairs = [(d, int(s)) for d in datasets or rung.federations for s in seeds or rung.seeds]
    if first_epoch_only(rung):
        return pairs
    return [(d, s, p) for d, s in pairs for p in range(n_splits(rung, d))]


def task_name(task: tuple) -> str:
    dataset, seed, *split = task
    return f"{dataset}_s{seed}" + "".join(f"_p{p}" for p in split)


def run_one(rung: Study, task: tuple, device: str = "cpu"):
    """One split's run, or one seed's first epochs: ``(task, table or None: diverged, record)``."""
    start = time.process_time()
    if first_epoch_only(rung):
        dataset, seed = task
        with one_thread():
            sens = S.first_epoch_sensitivities(
                dataset, [seed], rung.profile, device=device, progress=False
            )
        return task, sens, {"cpu_seconds": round(time.process_time() - start, 2)}
    dataset, seed, p = task
    data = federation(rung, dataset, seed)
    try:
        with one_thread():
            run = run_federated(
                data, get_algorithm(prefix_name(p)), rung.config(dataset, device, seed=seed)
            )
            table, error = check_table(run.table()), None
    except DivergenceError as err:
        table, error = None, str(err)
    return task, table, {"cpu_seconds": round(time.process_time() - start, 2), "error": error}


def sort_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The runs by federation, seed and split; within a run the engine's order (depth's)."""
    return table.sort_values(["dataset", "seed", "algorithm"], ignore_index=True, kind="stable")


def gather(rung: Study, todo, work: Path, records: dict) -> tuple[pd.DataFrame, dict]:
    """The long table (sorted) and its totals: runs, CPU-seconds and the runs that diverged."""
    names = [task_name(t) for t in todo]
    kept = [n for n in names if not records[n].get("error")]
    table = pd.concat([pd.read_parquet(work / f"{n}.parquet") for n in kept], ignore_index=True)
    totals = {"runs": len(names), "cpu_seconds": cpu_seconds(records[n] for n in names)}
    if first_epoch_only(rung):
        return table.sort_values(["dataset", "seed", "client", "depth"], ignore_index=True), totals
    diverged = {n: records[n]["error"] for n in names if records[n]["error"]}
    return sort_rows(table[COLUMNS]), {**totals, "diverged": diverged}


def record_extra(rung: Study, totals: dict, wall: float) -> dict:
    """The committed record's fields: where, the declared sizes, the wall time and the totals."""
    where = {"datasets": list(rung.federations), "seeds": list(rung.seeds)}
    if first_epoch_only(rung):
        return {**where, "profile": rung.profile, "wall_seconds": round(wall, 1), **totals}
    cfg = rung.config(rung.federations[0], seed=rung.seeds[0])
    return {**where, **dict(rung.loader), **dict(rung.training), "lr": cfg.lr,
            "batch_size": cfg.batch_size, "wall_seconds_last_call": round(wall, 1),
            **totals}  # fmt: skip


# -- reading ----------------------------------------------------------------------------------
def regrets(table: pd.DataFrame) -> pd.DataFrame:
    """Per federation and seed: the paper's rule's split (recorded), the oracle's, the regret."""
    rules = S.rule_splits(S.table_sensitivities(table))
    return S.regrets(S.sweep_scores(table), rules, "paper")


def rung_sizes() -> dict[str, str]:
    """The book's sizes and the middle rung's as the chapter names them."""
    fed = declared_federation(DATASETS[0])
    cfg = MIDDLE_RUNG.config(DATASETS[0], seed=MIDDLE_RUNG.seeds[0])
    book, train = fed.loader_sizes("quick"), fed.training_settings("quick")
    return {
        "book": f"book: {book['samples_per_client']:,} images per client, width "
        f"{train['width']:g}, {train['rounds']} rounds",
        "middle": f"middle rung: {MIDDLE_SAMPLES_PER_CLIENT:,} images per client, width "
        f"{cfg.width:g}, {cfg.rounds} rounds",
    }


# -- the evaluation rung's noise measurements -------------------------------------------------
def noise_path() -> Path:
    return EVAL_RUNG.store_path().with_name("eval_noise.parquet")


def regret_noise_path() -> Path:
    return EVAL_RUNG.store_path().with_name("eval_regret_noise.parquet")


def rule_split(table: pd.DataFrame, dataset: str, seed: int) -> int:
    """The paper's rule's split on one seed (every run records it)."""
    row = table[(table["dataset"] == dataset) & (table["seed"] == seed)
                & (table["metric"] == "rule_split_p")]  # fmt: skip
    return int(row["value"].iloc[0])


def measure_noise(table: pd.DataFrame) -> tuple[pd.DataFrame, float]:
    """The declared measurement: per federation (seed :data:`NOISE_SEED`, the rule's split) a
    client's and a run's standard error at the book's and the rung's test sizes; (table, CPU-s)."""
    start, frames = time.process_time(), []
    for d in DATASETS:
        p = rule_split(table, d, NOISE_SEED)
        noise = client_score_noise(
            d, NOISE_SEED, p, EVAL_PER_CLIENT, (BOOK_TEST_IMAGES, EVAL_PER_CLIENT), NOISE_DRAWS
        )
        frames.append(noise.assign(dataset=d, seed=NOISE_SEED, p=p))
    return pd.concat(frames, ignore_index=True), round(time.process_time() - start, 1)


def measure_regret_noise(table: pd.DataFrame) -> tuple[pd.DataFrame, float]:
    """How noisy one seed's regret is from its test images alone (measured, not declared), per
    federation by resampling the test images; returns (table, CPU-seconds)."""
    start, frames = time.process_time(), []
    oracle = regrets(table)
    for d in DATASETS:
        p_rule = rule_split(table, d, NOISE_SEED)
        p_oracle = int(oracle.loc[oracle["dataset"] == d, "p_oracle"].mode().min())
        noise = regret_noise(
            d, NOISE_SEED, p_rule, p_oracle, EVAL_PER_CLIENT,
            (BOOK_TEST_IMAGES, EVAL_PER_CLIENT), NOISE_DRAWS,
        )  # fmt: skip
        frames.append(noise.assign(dataset=d, seed=NOISE_SEED, p_rule=p_rule, p_oracle=p_oracle))
    return pd.concat(frames, ignore_index=True), round(time.process_time() - start, 1)


def after_commit(study: Study, say=print) -> None:
    """The evaluation rung, once committed: its score's and regret's noise, measured once each."""
    if study.name != EVAL_RUNG.name:
        return
    for what, path, measure in (
        ("score noise", noise_path(), measure_noise),
        ("regret noise", regret_noise_path(), measure_regret_noise),
    ):
        if path.exists():
            continue
        noise, cpu = measure(load(EVAL_RUNG)[0])
        extra = {"eval_per_client": EVAL_PER_CLIENT, "draws": NOISE_DRAWS, "cpu_seconds": cpu}
        say(f"{what} to {write_store(noise, path, extra)} ({cpu:.0f} CPU-s)")
