"""Split sweeps, run or loaded: the prefix federation at every split p = 0 … L on the same
seeds and learning rate (:func:`run_sweeps`), the controlled-heterogeneity federations
(:func:`heterogeneity_federations`), and stored or computed sweep tables (:func:`load_sweeps`,
:func:`sweeps`). :mod:`playerfl_core.study.split_oracle` re-exports its names."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import pandas as pd
from tqdm import tqdm

from data_prep.registry import skew_bases
from data_prep.skew import QUANTITY, SWAP, variant_name
from playerfl_core.fl.algorithms import get_algorithm
from playerfl_core.fl.algorithms.prefix import parse_prefix_name, prefix_name
from playerfl_core.fl.divergence import check_table
from playerfl_core.fl.engine import run_federated
from playerfl_core.fl.errors import DivergenceError
from playerfl_core.fl.models import model_for
from playerfl_core.fl.profiles import make_config
from playerfl_core.fl.units import unit_names
from playerfl_core.stats.results import COLUMNS, SERVER, load_table
from playerfl_core.study.archive import MANIFEST_FILE, load_archive
from playerfl_core.study.backends import backend_for, execute
from playerfl_core.study.run_store import OK, Store, load_data_cached

RUN = ["dataset", "lr", "seed"]
"""A sweep's run keys besides the split: every p of one (dataset, lr, seed) shares its data,
initial weights and first epoch."""


# -- running a sweep ------------------------------------------------------------------------
def model_units(data, width: float = 1.0) -> tuple[str, ...]:
    """The layer units of the model ``data`` trains (no training, no data needed)."""
    return unit_names(model_for(data, width, 0))


def check_sweepable(units: Sequence[str], dataset: str) -> None:
    """A sweep needs an interior split for the rule to choose: at least two units."""
    if len(units) < 2:
        raise ValueError(
            f"A split sweep of {dataset!r} needs a model with at least 2 layer units (valid "
            f"splits p = 0..L with the rule choosing in 1..L−1); its model has {len(units)} "
            f"({', '.join(units) or 'none'}), so p = 0 (Local) and p = {len(units)} (FedAvg) "
            "are the only splits and there is no split rule to test."
        )


def run_sweep(dataset: str, *args, **kwargs) -> pd.DataFrame:
    """:func:`run_sweeps` of one dataset: every split (or ``splits``) on every seed at one rate (the
    profile's unless ``lr``), seed s's data ``data_loader(s)``. Same arguments, same machine:
    same table."""
    return run_sweeps([dataset], *args, **kwargs)


def run_sweeps(
    datasets: Iterable[str],
    seeds: Iterable[int],
    profile: str = "quick",
    lr: float | None = None,
    rounds: int | None = None,
    device: str | None = None,
    data_loader: Callable | None = None,
    splits: Iterable[int] | None = None,
    progress: bool = True,
    workers: int = 1,
    diverged: list | None = None,
    finished: list | None = None,
    backend="local",
    planned: list | None = None,
) -> pd.DataFrame:
    """:func:`run_sweep` for several datasets, on ``workers`` processes or a Ray cluster, one thread
    per run. ``diverged`` (a list) collects diverging runs instead of raising; ``finished`` receives
    each run's table as it ends, ``planned`` every ``(dataset, seed, p)`` first."""
    datasets, seeds = list(datasets), [int(s) for s in seeds]
    local = backend in ("local", None)
    if data_loader is not None and (len(datasets) != 1 or workers > 1 or not local):
        raise ValueError("data_loader needs exactly one dataset, workers=1 and the local backend.")
    backend = backend_for(backend, workers if local else None)
    if not local:
        device = device or backend.default_device()
    jobs = []
    for ds in datasets:
        for seed in seeds:
            data = data_loader(seed) if data_loader else load_data_cached(ds, profile, seed)
            width = make_config(ds, profile, seed=seed, lr=lr, rounds=rounds).width
            units = model_units(data, width)
            check_sweepable(units, ds)
            ps = range(len(units) + 1) if splits is None else [int(p) for p in splits]
            bad = [p for p in ps if not 0 <= p <= len(units)]
            if bad:
                raise ValueError(
                    f"splits {bad} are outside the valid range 0..{len(units)} for {ds!r} "
                    f"(units {', '.join(units)})."
                )
            mine = data if data_loader else None  # else each worker loads its own
            jobs += [(ds, profile, seed, p, lr, rounds, device, mine) for p in ps]
    if planned is not None:
        planned += [(ds, seed, p) for ds, _, seed, p, *_ in jobs]
    bar = tqdm(total=len(jobs), desc="sweep", unit="run", disable=not progress)
    tables: list = [None] * len(jobs)
    finished = [] if finished is None else finished

    def done(i: int, result) -> None:
        try:
            tables[i] = result()
            finished.append(tables[i])
        except DivergenceError as err:
            ds, _, seed, p, *_ = jobs[i]
            if diverged is None:
                raise DivergenceError(f"{ds} seed {seed}, split p = {p}: {err}") from None
            diverged.append((ds, seed, p, str(err)))
        bar.update()

    with bar:  # closed however the sweep ends, so a message after it starts on its own line
        execute(_sweep_run, jobs, backend, device or "cpu", done)
    kept = [t for t in tables if t is not None]
    if not kept:
        return pd.DataFrame(columns=COLUMNS)
    return pd.concat(kept, ignore_index=True)


def _sweep_run(dataset, profile, seed, p, lr, rounds, device, data=None) -> pd.DataFrame:
    """One prefix run of a sweep (module-level for worker processes); raises on divergence."""
    data = data if data is not None else load_data_cached(dataset, profile, seed)
    config = make_config(
        dataset, profile, seed=seed, lr=lr, rounds=rounds, device=device, progress=False
    )
    return check_table(run_federated(data, get_algorithm(prefix_name(p)), config).table())


# -- heterogeneity --------------------------------------------------------------------------
ALPHAS = (0.05, 0.1, 0.3, 1.0, 10.0)
FEATURE_KINDS = ("rotate", "invert")
MIXED = (("rotate", 0.1),)


def heterogeneity_federations(
    bases: Sequence[str] | None = None,
    alphas: Sequence[float] = ALPHAS,
    kinds: Sequence[str] = FEATURE_KINDS,
    mixed: Sequence[tuple[str, float]] = MIXED,
) -> pd.DataFrame:
    """The controlled-heterogeneity federations of ``bases`` in figure order.
    Columns: dataset, base, family, level, order."""
    bases = skew_bases() if bases is None else bases
    families = {QUANTITY: "quantity skew", SWAP: "concept shift"}
    rows = []
    for base in bases:
        mine = [(variant_name(base, None, a), "label skew", f"α={a:g}") for a in alphas]
        mine += [(variant_name(base, k, None), families.get(k, "feature skew"), k) for k in kinds]
        mine += [(variant_name(base, k, a), "mixed", f"{k}+α={a:g}") for k, a in mixed]
        rows += [(name, base, family, level, i) for i, (name, family, level) in enumerate(mine)]
    return pd.DataFrame(rows, columns=["dataset", "base", "family", "level", "order"])


# -- stored or computed ---------------------------------------------------------------------
def load_sweeps(path) -> pd.DataFrame | None:
    """A stored sweep table (a file, a committed archive folder or a grid's store folder), or None
    when absent; a table whose sweeps are incomplete is refused (:func:`check_sweeps_complete`)."""
    if path is None or not Path(path).exists():
        return None
    if Path(path).is_dir() and (Path(path) / MANIFEST_FILE).exists():
        table = load_archive(path)[0]
    elif Path(path).is_dir() and (Path(path) / "runs").is_dir():
        table = _store_sweeps(Path(path))
    elif Path(path).is_dir():
        raise ValueError(
            f"{path} is a folder that is neither an archive ({MANIFEST_FILE}) nor a grid store "
            "(runs/); give a sweep table (.csv or .parquet), an archive folder or a store folder."
        )
    else:
        table = load_table(path)
    return check_sweeps_complete(table, str(path))


def sweep_gaps(table: pd.DataFrame) -> list[str]:
    """What the split sweeps of ``table`` lack, one line per dataset and gap; empty: complete."""
    splits = {a: parse_prefix_name(a) for a in table["algorithm"].unique()}
    prefix = {a: p for a, p in splits.items() if p is not None}
    rows = table[table["algorithm"].isin(list(prefix)) & (table["split"] == "val")]
    rows = rows.assign(p=rows["algorithm"].astype(str).map(prefix))
    gaps = []
    for ds, g in rows.groupby("dataset", sort=True):
        every = set(g["p"].astype(int))
        absent = {int(s): sorted(every - set(h["p"].astype(int))) for s, h in g.groupby("seed")}
        lacking = {s: ps for s, ps in absent.items() if ps}
        if lacking:
            seeds = ", ".join(f"{s} (p = {', '.join(map(str, ps))})" for s, ps in lacking.items())
            gaps.append(f"dataset {ds}: seeds {seeds} lack splits that other seeds have")
        runs = g[g["client"] != SERVER].groupby(["algorithm", "lr", "seed"], sort=True)
        last, clients = runs["round"].max(), runs["client"].nunique()
        for what, sizes, full in (
            ("end before round", last, last.max()),
            ("score fewer clients than", clients, clients.max()),
        ):
            short = sizes[sizes < full]
            if len(short):
                seeds = sorted({int(k[2]) for k in short.index})
                gaps.append(
                    f"dataset {ds}: {len(short)} runs of seeds {', '.join(map(str, seeds))} "
                    f"{what} {full} (e.g. {short.index[0][0]} seed {short.index[0][2]}: "
                    f"{short.iloc[0]})"
                )
    return gaps


def check_sweeps_complete(table: pd.DataFrame, source="the sweep table") -> pd.DataFrame:
    """``table`` when its split sweeps are complete (:func:`sweep_gaps`), else a ValueError naming
    what is missing: an oracle picked from a partial sweep would be silently wrong."""
    gaps = sweep_gaps(table)
    if gaps:
        raise ValueError(
            f"{source} is incomplete: {'; '.join(gaps)}. Re-run the sweep for those seeds "
            "(playerfl sweep --dataset ... --seeds ...), or leave them out of the table."
        )
    return table


def _store_sweeps(root) -> pd.DataFrame:
    store = Store(root)
    records, _ = store.scan()
    ids = [
        r["run_id"]
        for r in records
        if r["status"] == OK and parse_prefix_name(r["algorithm"]) is not None
    ]
    if not ids:
        raise ValueError(f"The store {root} holds no finished split-sweep runs (prefix_p<p>).")
    return pd.concat([store.rows(i) for i in ids], ignore_index=True)


def sweeps(
    datasets: Iterable[str],
    seeds: Iterable[int],
    profile: str = "quick",
    stored: pd.DataFrame | None = None,
    **run_options,
) -> pd.DataFrame:
    """The sweeps of ``datasets`` from ``stored`` where it has them, the others computed."""
    datasets = list(datasets)
    if stored is not None:
        stored = stored[stored["algorithm"].map(parse_prefix_name).notna()]
    held = set() if stored is None else set(stored["dataset"])
    parts = [stored[stored["dataset"] == ds] for ds in datasets if ds in held]
    missing = [ds for ds in datasets if ds not in held]
    if missing:
        parts.append(run_sweeps(missing, seeds, profile, **run_options))
    return pd.concat(parts, ignore_index=True)
