"""The authors'-mode comparison: every algorithm at the published learning rates, run under the
authors' protocol and under the book's, on the same seeds, stored as one long table.

It shows how much of the gap to the published table is protocol and how much the algorithms.
``playerfl study run authors_mode`` commits it to ``stores/authors_mode/comparison.parquet``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from data_prep import preregistered
from data_prep.registry import federation
from playerfl_core.fl.algorithms import ALGORITHMS
from playerfl_core.fl.config import PROTOCOLS
from playerfl_core.stats.published import AUTHORS_DEFAULT_LR, published
from playerfl_core.study.archive import stores_dir
from playerfl_core.study.declaration import Study
from playerfl_core.study.grid import dry_run as grid_dry_run
from playerfl_core.study.grid import run_grid
from playerfl_core.study.run_store import RESULTS_DIR
from playerfl_core.study.runner import cpu_seconds

TABLE_FILE = "comparison.parquet"
PROFILE = "quick"
SEEDS = preregistered.AUTHORS_MODE_SEEDS
"""The committed comparison's seeds per federation (about 30 CPU-minutes)."""

DECLARED = Study(
    name="authors_mode",
    what="Every algorithm at the published rates, under the authors' protocol and the book's.",
    federations=tuple(SEEDS),
    seeds=max(SEEDS.values(), key=len),
    arms=f"every algorithm of the book under both protocols ({', '.join(PROTOCOLS)}); "
    f"seeds per federation: {', '.join(f'{d} {len(s)}' for d, s in SEEDS.items())}",
    rates="each algorithm's published rate (reference §9.1), else the authors' default",
    profile=PROFILE,
    scoring=(
        ("val_per_client", "the profile's"),
        ("test_per_client", "the profile's"),
        ("round_and_oracle", "each protocol's own (the authors': the last round)"),
    ),
    claim="the reproduction report (how much of the gap to the paper is protocol)",
    declared="2026-12-05",
    commit="f5c977f",
    why="The reproduction report sets the published table beside the book's; running this "
    "engine the authors' way too separates protocol from algorithm.",
    store=f"authors_mode/{TABLE_FILE}",
    computes="playerfl_core.study.authors_mode",
)


def store_path() -> Path:
    """``stores/authors_mode/comparison.parquet`` (under ``PLAYERFL_STORES`` when set)."""
    return stores_dir() / "authors_mode" / TABLE_FILE


def published_rates(dataset: str) -> dict[str, float]:
    """Each algorithm's published learning rate on ``dataset`` (reference §9.1); an algorithm
    without one gets the authors' default rate for the dataset (§1.1), their own fallback."""
    paper_name = federation(dataset).paper_name
    if paper_name not in AUTHORS_DEFAULT_LR:
        raise ValueError(
            f"{dataset}: the paper publishes no learning rates for it; the study runs "
            f"{', '.join(sorted(AUTHORS_DEFAULT_LR))} federations only."
        )
    rates = published("learning_rate")
    given = dict(rates.loc[rates["dataset"] == dataset, ["algorithm", "value"]].values)
    return {a: float(given.get(a, AUTHORS_DEFAULT_LR[paper_name])) for a in ALGORITHMS}


def _grids(study: Study, options):
    """Each (dataset, protocol) grid's run arguments: the published rates, fixed, no tuning."""
    store = RESULTS_DIR / "authors_mode" if options.out is None else Path(options.out) / study.name
    for dataset in study.federations:
        rates = published_rates(dataset)
        for protocol in PROTOCOLS:
            yield dataset, protocol, dict(
                datasets=[dataset], algorithms=list(ALGORITHMS), profile=PROFILE,
                seeds=list(SEEDS[dataset]), fixed_lr={(dataset, a): lr for a, lr in rates.items()},
                protocol=protocol, store=store,
            )  # fmt: skip


def compute_table(study: Study, options, say=print) -> tuple[pd.DataFrame, dict]:
    """Run (or load, resumably) every (dataset, algorithm, seed) under both protocols: the long
    table with a ``protocol`` column, and its record's fields (failed runs listed, never averaged
    in)."""
    local = options.local()
    tables, failed, run_ids, store = [], [], [], None
    for dataset, protocol, grid in _grids(study, options):
        result = run_grid(
            **grid, backend=options.backend, workers=(options.workers or 1) if local else None,
            device=options.device, name=f"authors-mode-{dataset}-{protocol}",
            progress=options.progress,
        )  # fmt: skip
        failed += [
            f"{dataset}/{protocol}: {r.algorithm} seed {r.seed}: {r.status}"
            for r in result.failures.itertuples()
        ]
        tables.append(result.table.assign(protocol=protocol))
        run_ids += list(result.status["run_id"])
        store = grid["store"]
    seconds, machines = _cost(store, run_ids)
    return pd.concat(tables, ignore_index=True), {
        "profile": PROFILE,
        "seeds": {d: list(SEEDS[d]) for d in study.federations},
        "learning_rates": {d: published_rates(d) for d in study.federations},
        "runs": len(run_ids),
        "cpu_seconds": seconds,
        "machines": machines,
        "failed_runs": failed,
    }


def dry_run(study: Study, options) -> str:
    """What each (dataset, protocol) grid would compute and cost; computes nothing."""
    return "\n".join(f"{dataset}, {protocol} protocol:\n{grid_dry_run(**grid)}"
                     for dataset, protocol, grid in _grids(study, options))  # fmt: skip


def load_comparison(path: Path | None = None) -> pd.DataFrame:
    """The stored comparison table (``protocol`` column: ``authors`` or ``book``)."""
    path = Path(path) if path is not None else store_path()
    if not path.exists():
        raise FileNotFoundError(
            f"No authors'-mode comparison at {path}; compute it with "
            "`playerfl study run authors_mode` (about 30 CPU-minutes)."
        )
    return pd.read_parquet(path)


def _cost(store: Path, run_ids: list[str]) -> tuple[float, list[str]]:
    """The CPU-seconds the study's runs took and the keys of the machines that ran them."""
    records = [json.loads((Path(store) / "runs" / f"{r}.json").read_text()) for r in run_ids]
    machines = {rec.get("machine", {}).get("key", "unknown") for rec in records}
    return cpu_seconds(records), sorted(machines)
