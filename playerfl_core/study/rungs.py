"""A rung of the scale ladder: the full split sweep (every p = 0 … L, the book's one sweep rate)
of some federations on some seeds, at sizes that differ from the book's in a declared way
(``study.middle_rung``: larger clients and model; ``study.eval_rung``: larger evaluation sets).

A :class:`Rung` names what differs; this module computes it (one thread per run, so the result
does not depend on the number of workers), keeps every finished run in a work folder as it ends
(a later call computes only the missing ones), collects the rung's long table, commits it to
``stores/ladder/`` with its record (machine, code, CPU-seconds, SHA-256), and reads it: per
federation and seed the paper's rule's split, the validation oracle's and the regret, and per
federation how they move against the book's sweeps on the same seeds.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd


@dataclass(frozen=True)
class Rung:
    """One rung: its name (``middle``), its federations and seeds, the loader's profile and
    keyword arguments, the training settings that replace that profile's, and where its runs
    wait (``results/<work>/``) and its table is committed (``stores/ladder/<store>``)."""

    name: str
    datasets: tuple[str, ...]
    seeds: tuple[int, ...]
    loader_profile: str
    loader: tuple[tuple[str, object], ...]
    training: tuple[tuple[str, object], ...]
    store: str
    work: str

    def store_path(self) -> Path:
        from playerfl_core.study.archive import stores_dir

        return stores_dir() / "ladder" / self.store

    def work_dir(self) -> Path:
        """Where finished runs wait until the rung is complete (a parquet and a JSON per run)."""
        from playerfl_core.study.run_store import default_store

        return default_store(self.work)

    def command(self) -> str:
        return f"python -m playerfl_core.study.{self.name}_rung"


def config(rung: Rung, dataset: str, seed: int, device: str | None = "cpu"):
    """The rung's :class:`~playerfl_core.fl.engine.RunConfig`: the quick profile's rate and
    batch with the rung's training settings."""
    from playerfl_core.fl.profiles import make_config

    return make_config(
        dataset, "quick", seed=seed, device=device, progress=False, **dict(rung.training)
    )


@lru_cache(maxsize=2)
def federation(rung: Rung, dataset: str, seed: int):
    """The rung's federation of one seed."""
    from data_prep import load

    return load(dataset, rung.loader_profile, seed=seed, **dict(rung.loader))


def n_splits(rung: Rung, dataset: str) -> int:
    """How many splits the rung's sweep has (L + 1 for a model of L units)."""
    from playerfl_core.study.split_sweeps import model_units

    width = config(rung, dataset, rung.seeds[0]).width
    return len(model_units(federation(rung, dataset, rung.seeds[0]), width)) + 1


def run_name(dataset: str, seed: int, p: int) -> str:
    return f"{dataset}_s{seed}_p{p}"


def tasks(rung: Rung, datasets=None, seeds=None) -> list[tuple[str, int, int]]:
    """Every (federation, seed, split) of the rung (or of the given federations and seeds)."""
    return [
        (d, int(s), p) for d in datasets or rung.datasets for s in seeds or rung.seeds
        for p in range(n_splits(rung, d))
    ]  # fmt: skip


def run_one(rung: Rung, task: tuple[str, int, int]):
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
        run = run_federated(data, get_algorithm(prefix_name(p)), config(rung, dataset, seed))
        table, error = check_table(run.table()), None
    except DivergenceError as err:
        table, error = None, str(err)
    finally:
        torch.set_num_threads(previous)
    return task, table, {"cpu_seconds": round(time.process_time() - start, 2), "error": error}


def keep(work: Path, name: str, table: pd.DataFrame | None, record: dict):
    """Write one finished run ``name`` atomically: its table first, its record last (the record
    marks the run as done)."""
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
    rung: Rung,
    datasets: Sequence[str] | None = None,
    seeds: Sequence[int] | None = None,
    workers: int = 2,
    work: Path | None = None,
    progress: bool = True,
    one: Callable = run_one,
) -> None:
    """Every run of the rung not yet in ``work``, in ``workers`` processes of one thread each,
    each run kept as it ends."""
    import multiprocessing as mp
    import os
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from tqdm.auto import tqdm

    from playerfl_core.study.workers import init_worker

    work = work or rung.work_dir()
    work.mkdir(parents=True, exist_ok=True)
    done = done_runs(work)
    todo = [t for t in tasks(rung, datasets, seeds) if run_name(*t) not in done]
    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(workers, ctx, init_worker, (1, os.getpid())) as pool:
        futures = [pool.submit(one, rung, t) for t in todo]
        for fut in tqdm(as_completed(futures), total=len(todo), desc=f"{rung.name} rung",
                        unit="run", disable=not progress):  # fmt: skip
            task, table, record = fut.result()
            keep(work, run_name(*task), table, record)


def sort_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rung's runs in one order (by federation, seed and split), whatever order they ended
    in. Within a run the rows keep the order the engine logged them: a run's sensitivity rows
    follow the model's units, which is how ``split_scores.table_sensitivities`` reads depth."""
    return table.sort_values(["dataset", "seed", "algorithm"], ignore_index=True, kind="stable")


def collect(rung: Rung, work: Path, datasets=None, seeds=None) -> tuple[pd.DataFrame, dict]:
    """The rung's long table from ``work`` (sorted) and its totals: runs, CPU-seconds and the
    runs that diverged. Raises when a run is missing, naming the command that computes it."""
    from playerfl_core.stats.results import COLUMNS

    records = done_runs(work)
    names = [run_name(*t) for t in tasks(rung, datasets, seeds)]
    missing = [n for n in names if n not in records]
    if missing:
        raise ValueError(
            f"{len(missing)} of the {rung.name} rung's {len(names)} runs are not computed yet "
            f"({', '.join(missing[:3])}, …); run `{rung.command()}`."
        )
    tables = [pd.read_parquet(work / f"{n}.parquet") for n in names if not records[n]["error"]]
    table = sort_rows(pd.concat(tables, ignore_index=True)[COLUMNS])
    totals = {
        "runs": len(names),
        "cpu_seconds": round(sum(records[n]["cpu_seconds"] for n in names), 1),
        "diverged": {n: records[n]["error"] for n in names if records[n]["error"]},
    }
    return table, totals


def load(rung: Rung) -> tuple[pd.DataFrame, dict] | None:
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
    """The reading of :func:`rung_summary` that items 13 and 14 declare, per federation: the
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


def main(rung: Rung, describe: dict, argv: Sequence[str] | None = None, doc: str = "") -> None:
    """Compute the rung (resumably) and commit it with its record: ``describe`` (its declared
    sizes), the rate and batch, the wall time of this call and the totals."""
    import argparse

    from playerfl_core.study.split_rules_table import save_with_record

    parser = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else rung.name)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=None, help=f"default: stores/ladder/{rung.store}")
    args = parser.parse_args(argv)
    start = time.time()
    compute(rung, workers=args.workers)
    table, totals = collect(rung, rung.work_dir())
    committed = load(rung)
    if committed is not None and committed[0].equals(table):
        print(f"{rung.store_path()} already holds these {totals['runs']} runs: left as it is")
        return
    cfg = config(rung, rung.datasets[0], rung.seeds[0])
    extra = {"datasets": list(rung.datasets), "seeds": list(rung.seeds), **describe,
             "lr": cfg.lr, "batch_size": cfg.batch_size,
             "wall_seconds_last_call": round(time.time() - start, 1), **totals}  # fmt: skip
    path = save_with_record(table, args.out or rung.store_path(), extra)
    print(f"{len(table)} rows to {path}: {totals['cpu_seconds']:.0f} CPU-s over {totals['runs']} "
          f"runs, {len(totals['diverged'])} diverged")  # fmt: skip
