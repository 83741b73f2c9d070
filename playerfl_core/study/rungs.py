"""A rung of the scale ladder: the full split sweep (every p = 0 … L, the book's one sweep rate)
of some federations on some seeds, at sizes that differ from the book's in a declared way
(``study.middle_rung``: larger clients and model; ``study.eval_rung``: larger evaluation sets).

A rung is a :class:`~playerfl_core.study.declaration.Study`; this module says what one of its
runs is (for ``study.runner``) and reads the committed rung: per federation and seed the paper's
rule's split, the validation oracle's and the regret, and per federation how they move against
the book's sweeps on the same seeds.
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

from playerfl_core.study.declaration import Study, federation, n_splits

__all__ = ["federation", "n_splits"]


def config(rung: Study, dataset: str, seed: int, device: str | None = "cpu"):
    """The rung's :class:`~playerfl_core.fl.engine.RunConfig`: the quick profile's rate and
    batch with the rung's training settings."""
    return rung.config(dataset, device, seed=seed)


def tasks(rung: Study, datasets=None, seeds=None) -> list[tuple[str, int, int]]:
    """Every (federation, seed, split) of the rung (or of the given federations and seeds)."""
    return [
        (d, int(s), p) for d in datasets or rung.federations for s in seeds or rung.seeds
        for p in range(n_splits(rung, d))
    ]  # fmt: skip


def study_tasks(rung: Study) -> list[tuple[str, int, int]]:
    return tasks(rung)


def task_name(task: tuple[str, int, int]) -> str:
    dataset, seed, p = task
    return f"{dataset}_s{seed}_p{p}"


def run_one(rung: Study, task: tuple[str, int, int], device: str = "cpu"):
    """One split's run: ``(task, table or None when it diverged, record)``."""
    import torch

    from playerfl_core.fl.algorithms import get_algorithm
    from playerfl_core.fl.algorithms.prefix import prefix_name
    from playerfl_core.fl.divergence import check_table
    from playerfl_core.fl.engine import run_federated
    from playerfl_core.fl.errors import DivergenceError

    dataset, seed, p = task
    start = time.process_time()
    data = federation(rung, dataset, seed)
    previous = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread per run, in a worker or not: the same last bits
    try:
        cfg = config(rung, dataset, seed, device)
        run = run_federated(data, get_algorithm(prefix_name(p)), cfg)
        table, error = check_table(run.table()), None
    except DivergenceError as err:
        table, error = None, str(err)
    finally:
        torch.set_num_threads(previous)
    return task, table, {"cpu_seconds": round(time.process_time() - start, 2), "error": error}


def sort_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rung's runs in one order (by federation, seed and split), whatever order they ended
    in. Within a run the rows keep the order the engine logged them: a run's sensitivity rows
    follow the model's units, which is how ``split_scores.table_sensitivities`` reads depth."""
    return table.sort_values(["dataset", "seed", "algorithm"], ignore_index=True, kind="stable")


def gather(rung: Study, todo, work: Path, records: dict) -> tuple[pd.DataFrame, dict]:
    """The rung's long table (sorted) and its totals: runs, CPU-seconds and the runs that
    diverged."""
    from playerfl_core.stats.results import COLUMNS
    from playerfl_core.study.runner import cpu_seconds

    names = [task_name(t) for t in todo]
    tables = [pd.read_parquet(work / f"{n}.parquet") for n in names if not records[n]["error"]]
    table = sort_rows(pd.concat(tables, ignore_index=True)[COLUMNS])
    totals = {
        "runs": len(names),
        "cpu_seconds": cpu_seconds(records, names),
        "diverged": {n: records[n]["error"] for n in names if records[n]["error"]},
    }
    return table, totals


def record_extra(rung: Study, totals: dict, wall: float) -> dict:
    """The committed record's fields: the rung's federations, seeds and declared sizes, the
    rate and batch, the wall time of the last call and the totals."""
    cfg = config(rung, rung.federations[0], rung.seeds[0])
    return {"datasets": list(rung.federations), "seeds": list(rung.seeds),
            **dict(rung.loader), **dict(rung.training), "lr": cfg.lr,
            "batch_size": cfg.batch_size, "wall_seconds_last_call": round(wall, 1),
            **totals}  # fmt: skip


def load(rung: Study) -> tuple[pd.DataFrame, dict] | None:
    """The committed rung and its record; None when not computed."""
    from playerfl_core.study.split_rules_table import load_rules_table

    path = rung.store_path()
    return load_rules_table(path) if path.exists() else None


def regrets(table: pd.DataFrame) -> pd.DataFrame:
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


def rung_summary(
    book: pd.DataFrame, other: pd.DataFrame, name: str = "middle", seed: int = 0
) -> pd.DataFrame:
    """Per federation and rung (``book``, ``other``: :func:`regrets`' columns, the book's on the
    rung's seeds; ``other`` is called ``name``): the rule's and the oracle's splits, their most
    frequent ones, and the mean regret with its seeded 95 % bootstrap interval. Columns:
    dataset, rung, n_seeds, rule_splits, rule_modal, oracle_splits, oracle_modal, mean, lo, hi."""
    from playerfl_core.study.split_scores import interval

    rows = []
    for rung, reg in (("book", book), (name, other)):
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
    """The declared reading of :func:`rung_summary` (the middle and evaluation rungs'), per
    federation: the
    rule's p moves when the rungs' sets of most frequent splits share none (the oracle's the
    same); the regret moves when the book's mean lies outside the other rung's interval; and
    whether the other rung's mean regret is above δ. Columns: dataset, rule_moves,
    oracle_moves, regret_moves, above_delta."""
    from playerfl_core.stats.split_verdicts import TOLERANCE

    rows = []
    for ds, g in summary.groupby("dataset", sort=False):
        book, other = g[g["rung"] == "book"].iloc[0], g[g["rung"] != "book"].iloc[0]
        rows.append(
            (ds, not set(book.rule_modal) & set(other.rule_modal),
             not set(book.oracle_modal) & set(other.oracle_modal),
             not other.lo <= book["mean"] <= other.hi, bool(other["mean"] > TOLERANCE))
        )  # fmt: skip
    return pd.DataFrame(
        rows, columns=["dataset", "rule_moves", "oracle_moves", "regret_moves", "above_delta"]
    )
