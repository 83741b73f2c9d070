"""Fair sweeps (:mod:`~playerfl_core.study.preregistration` §12): every split at its own
tuned learning rate.

The one-rate sweep trains every split at PLayer-FL's rate, which may understate the oracle. Here
each split ``prefix_p<p>`` is tuned with the grid's rule (:mod:`~playerfl_core.study.tuning`) and
run at its own rate on the sweep's seeds (``playerfl study run fair_sweeps``, committed to
``stores/fair``). :func:`own_rates` re-derives the rates; :func:`own_rate_scores` gives the scores
keyed by the one-rate sweep's rate, so :mod:`~playerfl_core.study.split_scores` applies unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from data_prep import preregistered
from playerfl_core.fl.algorithms.prefix import parse_prefix_name
from playerfl_core.stats.metrics import best_val_loss, choose_lr
from playerfl_core.study import runner
from playerfl_core.study.archive import packed
from playerfl_core.study.archive_manifest import stores_dir
from playerfl_core.study.grid import dry_run as grid_dry_run
from playerfl_core.study.grid import run_grid
from playerfl_core.study.grid_plan import split_algorithms
from playerfl_core.study.preregistration import seeds_of
from playerfl_core.study.run_store import Store, default_store
from playerfl_core.study.split_scores import sweep_rows, sweep_scores
from playerfl_core.study.tuning import default_grid

DATASETS = preregistered.FAIR_SWEEP
PROFILE = "standard"
"""The profile of the one-rate sweep they are paired with (its sizes, grid and seeds)."""


def sweep_lr(dataset: str) -> float:
    """The one-rate sweep's learning rate of ``dataset``: its base's (PLayer-FL's tuned rate)."""
    return preregistered.LEARNING_RATES[dataset.split("_")[0]]


def _tune_seeds(dataset: str) -> tuple[int, ...]:
    return tuple(default_grid(dataset, PROFILE)["tune_seeds"])


def entries(record: dict) -> list[dict]:
    """Each run's entry (run_id, spec, status, CPU-seconds) of a record or a manifest."""
    return record.get("entries", record.get("runs", []))


def own_rates(table: pd.DataFrame, manifest: dict | None = None) -> pd.DataFrame:
    """Per (dataset, p): the rate the grid's tuning rule chose from ``table``'s tuning seeds.
    Columns: dataset, p, lr, rates, at_edge."""
    rows = sweep_rows(table)
    tune = rows[[s in _tune_seeds(d) for d, s in zip(rows["dataset"], rows["seed"], strict=True)]]
    per_run = best_val_loss(tune.drop(columns="p"))
    scores = per_run.groupby(["dataset", "algorithm", "lr"], as_index=False)["value"].mean()
    scores = scores.rename(columns={"value": "score"})
    failed = {
        (e["dataset"], e["algorithm"], float(e["lr"]))
        for e in entries(manifest or {})
        if e["status"] != "ok" and e["seed"] in _tune_seeds(e["dataset"])
    }
    keys = scores[["dataset", "algorithm", "lr"]].itertuples(index=False)
    scores.loc[[tuple(k) in failed for k in keys], "score"] = np.inf
    chosen = choose_lr(scores).drop(columns="score")
    tried = scores.groupby(["dataset", "algorithm"])["lr"].agg(lambda x: tuple(sorted(x)))
    chosen["rates"] = [
        tried[key] for key in zip(chosen["dataset"], chosen["algorithm"], strict=True)
    ]
    chosen["at_edge"] = [
        lr in (r[0], r[-1]) for lr, r in zip(chosen["lr"], chosen["rates"], strict=True)
    ]
    chosen["p"] = chosen["algorithm"].map(parse_prefix_name).astype(int)
    return chosen[["dataset", "p", "lr", "rates", "at_edge"]].sort_values(
        ["dataset", "p"], ignore_index=True
    )


def own_rate_scores(
    table: pd.DataFrame, rates: pd.DataFrame, seeds: Mapping[str, Sequence[int]] | None = None
) -> pd.DataFrame:
    """:func:`~playerfl_core.study.split_scores.sweep_scores` of every split at its own rate on
    ``seeds``, ``lr`` the one-rate sweep's and ``lr_own`` the split's."""
    rows = sweep_rows(table)
    parts = []
    for ds, p, lr in rates[["dataset", "p", "lr"]].itertuples(index=False):
        wanted = seeds[ds] if seeds is not None else seeds_of(ds)
        part = rows[(rows["dataset"] == ds) & (rows["p"] == p) & (rows["lr"] == lr)
                    & rows["seed"].isin(wanted)]  # fmt: skip
        if part["seed"].nunique() != len(wanted):
            raise ValueError(
                f"{ds}, p = {p} at its own rate {lr:g}: {part['seed'].nunique()} of "
                f"{len(wanted)} seeds stored; run `playerfl study run fair_sweeps`."
            )
        parts.append(part.drop(columns="p"))
    scores = sweep_scores(pd.concat(parts, ignore_index=True))
    scores = scores.rename(columns={"lr": "lr_own"})
    scores.insert(1, "lr", scores["dataset"].map(sweep_lr))
    return scores.sort_values(["dataset", "seed", "p"], ignore_index=True)


def load() -> tuple[pd.DataFrame, dict] | None:
    """The committed fair store (verified) and its record; None when not computed."""
    path = stores_dir() / "fair" / runner.TABLE_FILE
    return runner.load_store(path) if runner.store_record(path) is not None else None


def _grid(dataset: str, options) -> dict:
    """The fair grid of one federation: every split tuned like an algorithm of the standard grid."""
    return dict(datasets=dataset, algorithms=split_algorithms(dataset, PROFILE), profile=PROFILE,
                seeds=seeds_of(dataset), store=store_path(options))  # fmt: skip


def compute_table(study, options, say=print) -> tuple[pd.DataFrame, dict]:
    """The fair grids (resumable), then the rows of the runs they used and each run's entry."""
    used = set()
    for ds in study.federations:
        result = run_grid(**_grid(ds, options), backend=options.backend, device=options.device,
                          workers=options.workers if options.local() else None,
                          progress=options.progress)  # fmt: skip
        if len(result.failures):
            say(result.note())
        used |= set(result.status["run_id"])
    store = Store(store_path(options))
    table, runs, machines = packed(store, [r for r in store.scan()[0] if r["run_id"] in used])
    cost = runner.cpu_seconds(runs)
    extra = {"profile": PROFILE, "runs": len(runs), "cpu_seconds": cost, "entries": runs}
    return table, {**extra, "machines": machines}


def dry_run(study, options) -> str:
    """What each federation's fair grid would compute and cost; computes nothing."""
    return "\n".join(f"{ds}:\n{grid_dry_run(**_grid(ds, options))}" for ds in study.federations)


def store_path(options=None) -> Path:
    """``results/fair``, where the fair grids compute (under ``options.out`` when given)."""
    if options is not None and options.out is not None:
        return Path(options.out) / "fair_sweeps"
    return default_store(PROFILE).parent / "fair"


def cost(fair_manifest: dict, standard_manifest: dict) -> tuple[int, float]:
    """(runs, CPU-seconds) the fair sweeps added to the committed standard archive."""
    known = {e["run_id"] for e in entries(standard_manifest)}
    new = [e for e in entries(fair_manifest) if e["run_id"] not in known]
    return len(new), float(sum(e.get("cpu_seconds") or 0.0 for e in new))
