"""The scale ladder: does the paper's rule choose the same split at the paper's sizes as at the
book's?

Two rungs of Fashion-MNIST, base and rotated (the federation that decides claim R2):

* **book** (the standard profile's sizes: 400 images per client, the CNN at width 0.25, batch
  32, the sweep's learning rate): the rule's split read from the committed split sweeps'
  recorded first epochs, every stored seed;
* **paper** (the paper profile: 2,000 images per client, width 1.0, batch 128, its learning
  rate 1e-3): one local epoch per seed, computed by ``playerfl study run scale_ladder`` and
  committed to ``stores/ladder/paper_first_epoch.parquet`` with its record (machine, code,
  CPU-seconds, SHA-256).

Only the first epoch: the rule reads nothing else, so its choice at the paper's size costs one
epoch. The validation oracle and the regret at that size need every split trained to the end
(the full sweep), which this module does not compute; the chapter says so.
"""

from __future__ import annotations

import time
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


def study_tasks(study) -> list[tuple[str, int]]:
    """One task per (federation, seed): its clients' first epoch."""
    return [(d, int(s)) for d in study.federations for s in study.seeds]


def task_name(task: tuple[str, int]) -> str:
    dataset, seed = task
    return f"{dataset}_s{seed}"


def run_one(study, task: tuple[str, int], device: str = "cpu"):
    """The clients' first-epoch sensitivities of one seed at the study's profile, one thread."""
    import torch

    from playerfl_core.study.split_scores import first_epoch_sensitivities

    dataset, seed = task
    start, previous = time.process_time(), torch.get_num_threads()
    torch.set_num_threads(1)  # one thread per run, in a worker or not: the same last bits
    try:
        sens = first_epoch_sensitivities(
            dataset, [seed], study.profile, device=device, progress=False
        )
    finally:
        torch.set_num_threads(previous)
    return task, sens, {"cpu_seconds": round(time.process_time() - start, 2)}


def gather(study, todo, work: Path, records: dict) -> tuple[pd.DataFrame, dict]:
    """The first epochs (``split_scores.first_epoch_sensitivities``' columns, sorted) and the
    totals: runs and CPU-seconds."""
    from playerfl_core.study.runner import cpu_seconds

    names = [task_name(t) for t in todo]
    table = pd.concat([pd.read_parquet(work / f"{n}.parquet") for n in names], ignore_index=True)
    table = table.sort_values(["dataset", "seed", "client", "depth"], ignore_index=True)
    return table, {"runs": len(names), "cpu_seconds": cpu_seconds(records, names)}


def record_extra(study, totals: dict, wall: float) -> dict:
    return {"datasets": list(study.federations), "seeds": list(study.seeds),
            "profile": study.profile, "wall_seconds": round(wall, 1), **totals}  # fmt: skip


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
