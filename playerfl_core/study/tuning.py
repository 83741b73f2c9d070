"""The tuning protocol: which learning rates a grid tries, and which one it keeps.

Each algorithm's rate per dataset is the grid's value with the lowest mean
:func:`playerfl_core.stats.metrics.best_val_loss` over the tuning seeds (a rate with a failed
tuning run is ineligible); where ``widen`` allows, a rate at an edge makes tuning try the next value
beyond it (:func:`widened_lr`). :mod:`playerfl_core.study.grid_plan` schedules the runs.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from data_prep.registry import federation
from playerfl_core.stats.metrics import best_val_loss, choose_lr
from playerfl_core.study.run_store import OK, RunSpec, Store


def default_grid(dataset: str, profile: str) -> dict:
    """LR grid, tuning seeds, evaluation seeds and ``widen`` of ``dataset`` under ``profile``, from
    its declaration (``data_prep.federation.Federation.grid``)."""
    return federation(dataset).grid(profile)


def grid_settings(dataset: str, profile: str, seeds=None, lrs=None, tune_seeds=None) -> dict:
    """The LR grid, tuning and evaluation seeds of a dataset (explicit values win)."""
    base = default_grid(dataset, profile)
    lrs = tuple(float(x) for x in (lrs if lrs is not None else base["lrs"]))
    seeds = tuple(int(s) for s in (seeds if seeds is not None else base["seeds"]))
    tune = tuple(
        int(s)
        for s in (tune_seeds if tune_seeds is not None else base.get("tune_seeds", seeds[:1]))
    )
    for given, values in (("lrs", lrs), ("seeds", seeds)):
        if not values:
            raise ValueError(
                f"{given} is empty; a grid needs at least one value (None: the profile's default)."
            )
    if tune_seeds is not None and not tune and len(lrs) > 1:
        raise ValueError(
            f"tune_seeds is empty, so none of the {len(lrs)} learning rates could be chosen; give "
            "at least one seed (None: the profile's default), or a single learning rate."
        )
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"Evaluation seeds must be distinct, got {list(seeds)}.")
    if len(lrs) == 1:
        tune = ()  # nothing to choose
    widen = int(base.get("widen", 0)) if len(lrs) > 1 else 0
    return {"lrs": lrs, "seeds": seeds, "tune_seeds": tune, "widen": widen}


def widened_lr(chosen: float, lrs: Iterable[float]) -> float | None:
    """The next rate beyond the edge ``chosen`` sits on (the edge's ratio), or None inside."""
    lrs = sorted(set(lrs))
    if len(lrs) < 2 or chosen is None or not np.isfinite(chosen):
        return None
    for edge, inner in ((lrs[-1], lrs[-2]), (lrs[0], lrs[1])):
        if chosen == edge:
            return float(f"{edge * edge / inner:.3g}")
    return None


def chosen_lr(tune_specs: list[RunSpec], records: dict, store: Store) -> float:
    """The tuned learning rate of one (dataset, algorithm) pair (NaN when every rate failed)."""
    tables = [store.table(sp) for sp in tune_specs if records[sp]["status"] == OK]
    scores = tuning_scores(tune_specs, records, tables)
    chosen = choose_lr(scores)
    return float(chosen["lr"].iloc[0]) if len(chosen) else float("nan")


def tuning_scores(tune_specs: list[RunSpec], records: dict, tables: list) -> pd.DataFrame:
    """Mean tuning score per LR; inf when any tuning run of that LR failed."""
    per_run = best_val_loss(pd.concat(tables, ignore_index=True)) if tables else None
    rows = []
    by_lr: dict[float, list[RunSpec]] = {}
    for sp in tune_specs:
        by_lr.setdefault(sp.lr, []).append(sp)
    for lr, specs in by_lr.items():
        sp0 = specs[0]
        n_ok = sum(records[sp]["status"] == OK for sp in specs)
        score = float("inf")
        if n_ok == len(specs) and per_run is not None:
            sel = per_run[
                (per_run["lr"] == lr)
                & per_run["seed"].isin([s.seed for s in specs])
                & (per_run["algorithm"] == sp0.algorithm)
            ]
            score = float(sel["value"].mean())
        rows.append(
            {
                "dataset": sp0.dataset,
                "algorithm": sp0.algorithm,
                "lr": lr,
                "n_runs": len(specs),
                "n_ok": n_ok,
                "score": score,
            }
        )
    return pd.DataFrame(rows)
