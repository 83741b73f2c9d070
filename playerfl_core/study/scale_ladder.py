"""The scale ladder (issue 34, item 6): does the paper's rule choose the same split at the
paper's sizes as at the book's?

Two rungs of Fashion-MNIST, base and rotated (the federation that decides claim R2):

* **book** (the standard profile's sizes: 400 images per client, the CNN at width 0.25, batch
  32, the sweep's learning rate): the rule's split read from the committed split sweeps'
  recorded first epochs, every stored seed;
* **paper** (the paper profile: 2,000 images per client, width 1.0, batch 128, its learning
  rate 1e-3): one local epoch per seed, computed by ``python -m playerfl_core.study.scale_ladder``
  and committed to ``stores/ladder/paper_first_epoch.parquet`` with its record (machine, code,
  CPU-seconds, SHA-256).

Only the first epoch: the rule reads nothing else, so its choice at the paper's size costs one
epoch. The validation oracle and the regret at that size need every split trained to the end
(the full sweep), which this module does not compute; the chapter says so.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from data_prep import preregistered

DATASETS, SEEDS = preregistered.LADDER, preregistered.LADDER_SEEDS
"""The ladder's federations and seeds, named in ``data_prep`` (where dataset names live)."""
PAPER = "paper"
RUNGS = {
    "book": "standard profile: 400 images per client, width 0.25, batch 32, lr 0.003",
    "paper": "paper profile: 2,000 images per client, width 1.0, batch 128, lr 0.001",
}
"""Each rung's sizes as the chapter names them (from the federations' declarations)."""


def ladder_path() -> Path:
    from playerfl_core.study.archive import stores_dir

    return stores_dir() / "ladder" / "paper_first_epoch.parquet"


def _one(task: tuple[str, int, str, str | None]) -> tuple[pd.DataFrame, float]:
    from playerfl_core.study.split_scores import first_epoch_sensitivities

    dataset, seed, profile, device = task
    start = time.process_time()
    sens = first_epoch_sensitivities(dataset, [seed], profile, device=device, progress=False)
    return sens, time.process_time() - start


def compute(
    datasets: Sequence[str] = DATASETS,
    seeds: Sequence[int] = SEEDS,
    profile: str = PAPER,
    workers: int = 2,
    device: str | None = None,
    progress: bool = True,
) -> tuple[pd.DataFrame, float]:
    """The clients' first-epoch sensitivities at ``profile``'s sizes, one task per (federation,
    seed) in ``workers`` processes of one thread each (the result does not depend on
    ``workers``). Returns the table (``split_scores.first_epoch_sensitivities``' columns, sorted)
    and the CPU-seconds the tasks took."""
    import multiprocessing as mp
    import os
    from concurrent.futures import ProcessPoolExecutor

    from tqdm.auto import tqdm

    from playerfl_core.study.workers import init_worker

    tasks = [(d, int(s), profile, device) for d in datasets for s in seeds]
    ctx = mp.get_context("spawn")
    parts, cpu = [], 0.0
    with ProcessPoolExecutor(workers, ctx, init_worker, (1, os.getpid())) as pool:
        for sens, seconds in tqdm(
            pool.map(_one, tasks), total=len(tasks), desc="first epochs", disable=not progress
        ):
            parts.append(sens)
            cpu += seconds
    table = pd.concat(parts, ignore_index=True)
    return table.sort_values(["dataset", "seed", "client", "depth"], ignore_index=True), cpu


def rule_at_rungs(book_sens: pd.DataFrame, paper_sens: pd.DataFrame) -> pd.DataFrame:
    """Per federation, rung and seed: the paper's rule's split (``rule_splits``, variant
    ``paper``) from each rung's first-epoch sensitivities. Columns: dataset, rung, seed, p_rule."""
    from playerfl_core.study.split_scores import rule_splits

    parts = []
    for rung, sens in (("book", book_sens), ("paper", paper_sens)):
        sens = sens[sens["dataset"].isin(DATASETS)]
        splits = rule_splits(sens)
        splits = splits[splits["variant"] == "paper"]
        parts.append(splits.assign(rung=rung)[["dataset", "rung", "seed", "p_rule"]])
    return pd.concat(parts, ignore_index=True)


def ladder_summary(at_rungs: pd.DataFrame) -> pd.DataFrame:
    """Per federation and rung: seeds, the modal split and its share, and every split with its
    number of seeds ("3×8, 2×2"). Columns: dataset, rung, n_seeds, modal_p, modal_share,
    splits."""
    rows = []
    for (ds, rung), g in at_rungs.groupby(["dataset", "rung"], sort=False):
        counts = g["p_rule"].value_counts().sort_index()
        modal = int(counts.idxmax())
        rows.append(
            (ds, rung, len(g), modal, float(counts.max() / len(g)),
             ", ".join(f"{int(p)}×{int(n)}" for p, n in counts.items()))
        )  # fmt: skip
    return pd.DataFrame(
        rows, columns=["dataset", "rung", "n_seeds", "modal_p", "modal_share", "splits"]
    )


def load() -> tuple[pd.DataFrame, dict] | None:
    """The committed paper-size first epochs and their record; None when not computed."""
    from playerfl_core.study.split_rules_table import load_rules_table

    path = ladder_path()
    return load_rules_table(path) if path.exists() else None


def main(argv: Sequence[str] | None = None) -> None:
    import argparse

    from playerfl_core.study.split_rules_table import save_with_record

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default=",".join(map(str, SEEDS)))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=None, help="default: stores/ladder/…parquet")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    start = time.time()
    table, cpu = compute(DATASETS, seeds, PAPER, args.workers)
    wall = round(time.time() - start, 1)
    extra = {"datasets": list(DATASETS), "seeds": seeds, "profile": PAPER,
             "cpu_seconds": round(cpu, 1), "wall_seconds": wall}  # fmt: skip
    path = save_with_record(table, args.out or ladder_path(), extra)
    print(f"{len(table)} rows to {path}: {cpu:.0f} CPU-s, {wall:.0f} s wall")


if __name__ == "__main__":
    main()
