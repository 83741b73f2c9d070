"""The scale ladder's middle rung (issue 34, item 6; item 13 of ``study.preregistration``): the
full split sweep of Fashion-MNIST, base and rotated, at sizes between the book's and the
paper's, so that the oracle and the regret, not only the rule's choice, are seen at a larger
scale.

The rung: :data:`SAMPLES_PER_CLIENT` images per client drawn as the paper profile draws them
(its loader, its 64/16/20 splits: 160 validation and 200 test images per client), the CNN at
width :data:`WIDTH`, :data:`ROUNDS` rounds, and the book's one sweep rate and batch (the quick
profile's). Every split p = 0 … L on the seeds ``preregistered.MIDDLE_SEEDS``, one thread per
run, computed by ``python -m playerfl_core.study.middle_rung`` and committed to
``stores/ladder/middle_sweep.parquet`` with its record (machine, code, CPU-seconds, SHA-256).

Resumable: each finished run is kept in ``results/ladder_middle/`` (``PLAYERFL_RESULTS``
replaces ``results``) as it finishes, and a later call computes only the missing ones.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import pandas as pd

from data_prep import preregistered

DATASETS, SEEDS = preregistered.LADDER, preregistered.MIDDLE_SEEDS
SAMPLES_PER_CLIENT = 1000
WIDTH = 0.5
ROUNDS = 20


def rung_sizes() -> dict[str, str]:
    """The book's rung and the middle one as the chapter names them, read from Fashion-MNIST's
    declaration (the book's sizes) and from :func:`config` (the rung's)."""
    from data_prep.registry import federation

    fed, cfg = federation(DATASETS[0]), config(DATASETS[0], SEEDS[0])
    book, train = fed.loader_sizes("quick"), fed.training_settings("quick")
    return {
        "book": f"book: {book['samples_per_client']:,} images per client, width "
        f"{train['width']:g}, {train['rounds']} rounds",
        "middle": f"middle rung: {SAMPLES_PER_CLIENT:,} images per client, width {cfg.width:g}, "
        f"{cfg.rounds} rounds",
    }


def middle_path() -> Path:
    from playerfl_core.study.archive import stores_dir

    return stores_dir() / "ladder" / "middle_sweep.parquet"


def work_dir() -> Path:
    """Where finished runs wait until the rung is complete (one parquet and one JSON per run)."""
    from playerfl_core.study.run_store import default_store

    return default_store("ladder_middle")


def config(dataset: str, seed: int, device: str | None = "cpu"):
    """The rung's :class:`~playerfl_core.fl.engine.RunConfig`: the quick profile's rate and
    batch at the rung's width and rounds."""
    from playerfl_core.fl.profiles import make_config

    return make_config(
        dataset, "quick", seed=seed, width=WIDTH, rounds=ROUNDS, device=device, progress=False
    )


@lru_cache(maxsize=2)
def federation(dataset: str, seed: int):
    """The rung's federation of one seed (the paper profile's loader at the rung's size)."""
    from data_prep import load

    return load(dataset, "paper", seed=seed, samples_per_client=SAMPLES_PER_CLIENT)


def n_splits(dataset: str) -> int:
    """How many splits the rung's sweep has (L + 1 for a model of L units)."""
    from playerfl_core.study.split_sweeps import model_units

    return len(model_units(federation(dataset, SEEDS[0]), WIDTH)) + 1


def run_name(dataset: str, seed: int, p: int) -> str:
    return f"{dataset}_s{seed}_p{p}"


def _one(task: tuple[str, int, int]) -> tuple[tuple[str, int, int], pd.DataFrame | None, dict]:
    """One split's run: its table (None when it diverged) and its record."""
    import torch

    from playerfl_core.fl.algorithms import get_algorithm
    from playerfl_core.fl.algorithms.prefix import prefix_name
    from playerfl_core.fl.divergence import check_table
    from playerfl_core.fl.engine import run_federated
    from playerfl_core.fl.errors import DivergenceError

    dataset, seed, p = task
    start = time.process_time()
    data = federation(dataset, seed)
    previous = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread per run, in a worker or not: the same last bits
    try:
        run = run_federated(data, get_algorithm(prefix_name(p)), config(dataset, seed))
        table, error = check_table(run.table()), None
    except DivergenceError as err:
        table, error = None, str(err)
    finally:
        torch.set_num_threads(previous)
    return task, table, {"cpu_seconds": round(time.process_time() - start, 2), "error": error}


def _keep(work: Path, task: tuple[str, int, int], table: pd.DataFrame | None, record: dict):
    """Write one finished run atomically: its table first, its record last (the record marks
    the run as done)."""
    name = run_name(*task)
    if table is not None:
        tmp = work / f".{name}.parquet"
        table.to_parquet(tmp, index=False)
        tmp.replace(work / f"{name}.parquet")
    tmp = work / f".{name}.json"
    tmp.write_text(json.dumps(record, sort_keys=True) + "\n")
    tmp.replace(work / f"{name}.json")


def done_runs(work: Path) -> dict[str, dict]:
    """The records of the runs already finished in ``work``, by run name."""
    return {p.stem: json.loads(p.read_text()) for p in sorted(work.glob("*.json"))}


def compute(
    datasets: Sequence[str] = DATASETS,
    seeds: Sequence[int] = SEEDS,
    workers: int = 2,
    work: Path | None = None,
    progress: bool = True,
) -> None:
    """Every split of every (federation, seed) not yet in ``work``, in ``workers`` processes of
    one thread each (the result does not depend on ``workers``), each run kept as it ends."""
    import multiprocessing as mp
    import os
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from tqdm.auto import tqdm

    from playerfl_core.study.workers import init_worker

    work = work or work_dir()
    work.mkdir(parents=True, exist_ok=True)
    done = done_runs(work)
    tasks = [
        (d, int(s), p) for d in datasets for s in seeds for p in range(n_splits(d))
        if run_name(d, int(s), p) not in done
    ]  # fmt: skip
    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(workers, ctx, init_worker, (1, os.getpid())) as pool:
        futures = [pool.submit(_one, t) for t in tasks]
        for fut in tqdm(as_completed(futures), total=len(tasks), desc="middle rung", unit="run",
                        disable=not progress):  # fmt: skip
            _keep(work, *fut.result())


def sort_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rung's row order (by run, round, client, split, metric), whatever order runs ended in."""
    keys = ["dataset", "seed", "algorithm", "round", "client", "split", "metric"]
    return table.sort_values(keys, ignore_index=True, kind="stable")


def collect(
    work: Path, datasets: Sequence[str] = DATASETS, seeds: Sequence[int] = SEEDS
) -> tuple[pd.DataFrame, dict]:
    """The rung's long table from ``work`` (sorted) and its totals: runs, CPU-seconds and the
    runs that diverged. Raises when a run is missing, naming the command that computes it."""
    from playerfl_core.stats.results import COLUMNS

    records = done_runs(work)
    names = [run_name(d, int(s), p) for d in datasets for s in seeds for p in range(n_splits(d))]
    missing = [n for n in names if n not in records]
    if missing:
        raise ValueError(
            f"{len(missing)} of the middle rung's {len(names)} runs are not computed yet "
            f"({', '.join(missing[:3])}, …); run `python -m playerfl_core.study.middle_rung`."
        )
    tables = [pd.read_parquet(work / f"{n}.parquet") for n in names if not records[n]["error"]]
    table = sort_rows(pd.concat(tables, ignore_index=True)[COLUMNS])
    totals = {
        "runs": len(names),
        "cpu_seconds": round(sum(records[n]["cpu_seconds"] for n in names), 1),
        "diverged": {n: records[n]["error"] for n in names if records[n]["error"]},
    }
    return table, totals


def load() -> tuple[pd.DataFrame, dict] | None:
    """The committed middle rung and its record; None when not computed."""
    from playerfl_core.study.split_rules_table import load_rules_table

    path = middle_path()
    return load_rules_table(path) if path.exists() else None


def middle_regrets(table: pd.DataFrame) -> pd.DataFrame:
    """Per federation and seed: the paper's rule's split (from the runs' recorded first
    epochs), the validation oracle's and the regret (``split_scores.regrets``)."""
    from playerfl_core.study import split_scores as S

    rules = S.rule_splits(S.table_sensitivities(table))
    return S.regrets(S.sweep_scores(table), rules, "paper")


def _most_frequent(values: pd.Series) -> list[int]:
    counts = values.value_counts()
    return sorted(int(p) for p in counts[counts == counts.max()].index)


def _splits(values: pd.Series) -> str:
    """ "3×4, 4×1": every split with its number of seeds."""
    return ", ".join(f"{int(p)}×{int(n)}" for p, n in values.value_counts().sort_index().items())


def rung_summary(book: pd.DataFrame, middle: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Per federation and rung (``book``, ``middle``: :func:`middle_regrets`' columns, the
    book's on the rung's seeds): the rule's and the oracle's splits, their most frequent ones,
    and the mean regret with its seeded 95 % bootstrap interval. Columns: dataset, rung,
    n_seeds, rule_splits, rule_modal, oracle_splits, oracle_modal, mean, lo, hi."""
    from playerfl_core.study.split_scores import interval

    rows = []
    for rung, reg in (("book", book), ("middle", middle)):
        for ds, g in reg.groupby("dataset", sort=False):
            m, lo, hi = interval(g["regret"], seed=seed)
            rule, oracle = g["p_rule"], g["p_oracle"]
            rows.append(
                (ds, rung, len(g), _splits(rule), _most_frequent(rule), _splits(oracle),
                 _most_frequent(oracle), m, lo, hi)
            )  # fmt: skip
    cols = ["dataset", "rung", "n_seeds", "rule_splits", "rule_modal", "oracle_splits",
            "oracle_modal", "mean", "lo", "hi"]  # fmt: skip
    return pd.DataFrame(rows, columns=cols)


def what_moves(summary: pd.DataFrame) -> pd.DataFrame:
    """Item 13's reading of :func:`rung_summary`, per federation: the rule's p moves when the
    rungs' sets of most frequent splits share none (the oracle's the same); the regret moves
    when the book's mean lies outside the middle rung's interval; and whether the middle rung's
    mean regret is above δ. Columns: dataset, rule_moves, oracle_moves, regret_moves,
    middle_above_delta."""
    from playerfl_core.stats.split_verdicts import TOLERANCE

    rows = []
    for ds, g in summary.groupby("dataset", sort=False):
        book, mid = (g[g["rung"] == r].iloc[0] for r in ("book", "middle"))
        rows.append(
            (ds, not set(book.rule_modal) & set(mid.rule_modal),
             not set(book.oracle_modal) & set(mid.oracle_modal),
             not mid.lo <= book["mean"] <= mid.hi, bool(mid["mean"] > TOLERANCE))
        )  # fmt: skip
    return pd.DataFrame(
        rows,
        columns=["dataset", "rule_moves", "oracle_moves", "regret_moves", "middle_above_delta"],
    )


def main(argv: Sequence[str] | None = None) -> None:
    import argparse

    from playerfl_core.study.split_rules_table import save_with_record

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=None, help="default: stores/ladder/middle_sweep.parquet")
    args = parser.parse_args(argv)
    start = time.time()
    compute(workers=args.workers)
    table, totals = collect(work_dir())
    cfg = config(DATASETS[0], SEEDS[0])
    extra = {"datasets": list(DATASETS), "seeds": list(SEEDS),
             "samples_per_client": SAMPLES_PER_CLIENT, "width": WIDTH, "rounds": ROUNDS,
             "lr": cfg.lr, "batch_size": cfg.batch_size,
             "wall_seconds_last_call": round(time.time() - start, 1), **totals}  # fmt: skip
    path = save_with_record(table, args.out or middle_path(), extra)
    print(f"{len(table)} rows to {path}: {totals['cpu_seconds']:.0f} CPU-s over {totals['runs']} "
          f"runs, {len(totals['diverged'])} diverged")  # fmt: skip


if __name__ == "__main__":
    main()
