"""The authors'-mode comparison: every algorithm at the published learning rates, run under the
authors' protocol and under the book's, on the same seeds, stored as one long table.

Why: the reproduction report sets the published table beside the book's; this study shows how
much of the gap is protocol (data pipeline, loss, scoring time, round selection) and how much
is the algorithms, by running this engine the authors' way too. Runs go through the grid
machinery (:func:`~playerfl_core.study.grid.run_grid`, one worker, ``fixed_lr``); the combined
table is written to ``stores/authors_mode/comparison.parquet`` with a JSON record beside it.
"""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from data_prep import preregistered
from data_prep.registry import federation
from playerfl_core.fl.algorithms import ALGORITHMS
from playerfl_core.fl.config import PROTOCOLS
from playerfl_core.stats.published import AUTHORS_DEFAULT_LR, published
from playerfl_core.stats.results import atomic_write
from playerfl_core.study import machine
from playerfl_core.study.archive import stores_dir
from playerfl_core.study.declaration import Study
from playerfl_core.study.run_store import RESULTS_DIR, code_fingerprint

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


def compute(seeds: dict[str, tuple[int, ...]], store: Path | None = None) -> Path:
    """Run (or load) every (dataset, algorithm, seed) under both protocols; write the long
    table with a ``protocol`` column and its record (runs that diverged or failed are listed
    there, never averaged in); return the table's path.

    ``seeds`` maps each dataset to its run seeds. Safe to kill and call again: finished runs
    are kept in the run store (``results/authors_mode`` unless ``store``).
    """
    from playerfl_core.study.grid import run_grid  # the grid pulls in the whole study wing

    store = Path(store) if store is not None else RESULTS_DIR / "authors_mode"
    tables, failed, run_ids = [], [], []
    for dataset, run_seeds in seeds.items():
        rates = published_rates(dataset)
        for protocol in PROTOCOLS:
            result = run_grid(
                [dataset],
                list(ALGORITHMS),
                PROFILE,
                seeds=list(run_seeds),
                fixed_lr={(dataset, a): lr for a, lr in rates.items()},
                protocol=protocol,
                store=store,
                workers=1,
                name=f"authors-mode-{dataset}-{protocol}",
                progress=False,
            )
            failed += [
                f"{dataset}/{protocol}: {r.algorithm} seed {r.seed}: {r.status}"
                for r in result.failures.itertuples()
            ]
            tables.append(result.table.assign(protocol=protocol))
            run_ids += list(result.status["run_id"])
    table = pd.concat(tables, ignore_index=True)
    path = store_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda p: table.to_parquet(p, index=False, compression="zstd"))
    record = {
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": _commit(),
        "code": code_fingerprint(),
        "profile": PROFILE,
        "seeds": {d: list(s) for d, s in seeds.items()},
        "learning_rates": {d: published_rates(d) for d in seeds},
        "runs": len(run_ids),
        "cpu_seconds": round(_cpu_seconds(store, run_ids), 1),
        "machines": sorted(_machines(store, run_ids)),
        "machine": machine.fingerprint(threads=1),
        "rows": len(table),
        "failed_runs": failed,
    }
    record_path = path.with_name(f"{TABLE_FILE}.json")
    atomic_write(record_path, lambda p: p.write_text(json.dumps(record, indent=1) + "\n"))
    return path


def load_comparison(path: Path | None = None) -> pd.DataFrame:
    """The stored comparison table (``protocol`` column: ``authors`` or ``book``)."""
    path = Path(path) if path is not None else store_path()
    if not path.exists():
        raise FileNotFoundError(
            f"No authors'-mode comparison at {path}; compute it with "
            "`playerfl study run authors_mode` (about 30 CPU-minutes)."
        )
    return pd.read_parquet(path)


def _records(store: Path, run_ids: list[str]) -> list[dict]:
    return [json.loads((Path(store) / "runs" / f"{r}.json").read_text()) for r in run_ids]


def _cpu_seconds(store: Path, run_ids: list[str]) -> float:
    """CPU seconds the study's runs took, each as its own record kept them."""
    return sum(rec.get("cpu_seconds", 0.0) for rec in _records(store, run_ids))


def _machines(store: Path, run_ids: list[str]) -> set[str]:
    """Keys of the machines that computed the study's runs."""
    return {rec.get("machine", {}).get("key", "unknown") for rec in _records(store, run_ids)}


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parent,
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run_study(study: Study, options, say=print) -> int:
    """``playerfl study run authors_mode``: the declared seeds, resumable in the run store
    (``--out`` in place of ``results/authors_mode``)."""
    say(f"{compute(SEEDS, options.out)}")
    return 0
