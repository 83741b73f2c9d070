"""Run a grid: :func:`run_grid` plans it (:mod:`~playerfl_core.study.grid_plan`), runs what is
missing (:mod:`~playerfl_core.study.grid_runner`) and collects it
(:mod:`~playerfl_core.study.grid_result`); :func:`load_grid` only loads; :func:`dry_run` says
what it would compute and cost."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from playerfl_core.fl.algorithms import ALGORITHMS
from playerfl_core.fl.profiles import PROFILE_NAMES
from playerfl_core.stats.results import atomic_write, save_table
from playerfl_core.study.archive import (
    MANIFEST_FILE,
    archive_dir,
    archive_view,
    read_manifest,
    unpack,
)
from playerfl_core.study.backends import backend_for
from playerfl_core.study.grid_cost import cost_report, grid_cost, widening_runs
from playerfl_core.study.grid_plan import SPLIT_PREFIX, GridPlan, algorithm_names
from playerfl_core.study.grid_result import GridResult, MissingResultsError
from playerfl_core.study.grid_runner import run_plan
from playerfl_core.study.run_store import (
    Store,
    code_fingerprint,
    default_store,
    options_tag,
    protocol_tag,
)
from playerfl_core.study.tuning import grid_settings


def run_grid(
    datasets: Iterable[str] | str,
    algorithms="all",
    profile: str = "quick",
    *,
    device: str | None = None,
    workers: int | None = None,
    threads: int = 1,
    backend="local",
    compute: bool = True,
    progress: bool = True,
    name: str | None = None,
    **plan_options,
) -> GridResult:
    """Run (or load) the grid; return its tables. Safe to kill and call again at any time.

    ``plan_options`` as :func:`plan_grid` (``seeds``/``lrs``/``tune_seeds`` override
    :func:`default_grid`; ``fixed_lr`` maps ``(dataset, algorithm)`` to a rate and skips tuning;
    ``splits`` adds the split sweep at PLayer-FL's tuned rate). ``compute=False`` only loads and
    raises :class:`MissingResultsError` naming the command that computes what is missing.
    ``recompute_stale`` recomputes runs flagged ``stale_code``; ``fresh`` recomputes everything.
    ``workers`` CPU processes run in parallel (default 2 on a CPU with ≥ 2 cores, else 1);
    ``backend``: ``"local"``, ``"ray"`` or a :class:`~playerfl_core.study.ray_cluster.RayBackend`.
    The combined tables are also written to ``<store>/<name>.csv`` and ``<name>-status.csv``.
    """
    backend = backend_for(backend, workers)
    plan, stale = plan_grid(datasets, algorithms, profile, compute=compute, **plan_options)
    store = plan.store
    device = device or backend.default_device()
    ready, n_left = plan.todo()
    if not compute and n_left:
        missing = list(dict.fromkeys(ready + plan.undecided_tuning()))
        names = list(dict.fromkeys(ds for ds, _ in plan.pairs))
        algs = [
            a for a in dict.fromkeys(a for _, a in plan.pairs) if not a.startswith(SPLIT_PREFIX)
        ]
        raise MissingResultsError(_missing_message(missing, store, profile, names, algs))
    computed = 0
    if ready:
        with store.computing(say=progress):  # a chapter's quiet grid waits quietly
            plan.resolve()  # another grid may have computed some of them while this one waited
            computed = run_plan(plan, device, backend, threads, progress)

    result = plan.collect(computed)
    result.notes += [
        f"DAMAGED, recomputed: {problem}"
        for run_id, problem in store.damaged.items()
        if any(sp.run_id == run_id for sp in plan.records)
    ]
    if stale:
        result.notes.append(
            f"Removed {len(stale)} temporary files of writes interrupted earlier (their "
            f"processes are gone): {', '.join(stale)}."
        )
    eval_timing, _, loss, augment, protocol = plan.options
    tag = (options_tag(loss, augment) + protocol_tag(protocol)).replace("_", "-")
    name = name or f"grid-{eval_timing}{tag}"
    if computed or not (store.root / f"{name}.csv").exists():
        save_table(result.table, store.root / f"{name}.csv")
        atomic_write(
            store.root / f"{name}-status.csv", lambda p: result.status.to_csv(p, index=False)
        )
    return result


def plan_grid(
    datasets: Iterable[str] | str,
    algorithms="all",
    profile: str = "quick",
    *,
    seeds=None,
    lrs=None,
    tune_seeds=None,
    fixed_lr: dict | None = None,
    store: str | Path | None = None,
    eval_timing: str = "after_aggregation",
    rounds: int | None = None,
    loss: str = "cross_entropy",
    augment: bool = False,
    protocol: str = "book",
    fresh: bool = False,
    retry_errors: bool = True,
    recompute_stale: bool = False,
    splits: bool = False,
    compute: bool = True,
    dry: bool = False,
) -> tuple[GridPlan, list[str]]:
    """The grid's plan, resolved against its store (arguments as :func:`run_grid`), and the stale
    temporary files it removed (only when ``compute``). ``dry``: write nothing, read the archive."""
    datasets = (
        [d.strip() for d in datasets.split(",")] if isinstance(datasets, str) else list(datasets)
    )
    if not datasets or not all(isinstance(d, str) and d for d in datasets):
        raise ValueError(
            f"run_grid needs at least one dataset name, got {datasets!r}; e.g. "
            "run_grid(['heart'], ...), or data_prep.registry.default_datasets() for the book's."
        )
    algorithms = algorithm_names(algorithms)
    if profile not in PROFILE_NAMES:
        raise ValueError(f"Unknown profile {profile!r}; use one of {PROFILE_NAMES}.")
    store = Store(store if store is not None else default_store(profile))
    if compute:
        store.check_writable()
    stale = store.remove_stale_temporaries() if compute else []
    if dry:
        store = archive_view(store, profile)
    else:
        _start_from_archive(store, profile)
    fixed_lr = dict(fixed_lr or {})
    if splits and "playerfl" not in algorithms:
        algorithms.append("playerfl")

    plan = GridPlan(
        store,
        profile,
        eval_timing=eval_timing,
        rounds=rounds,
        loss=loss,
        augment=augment,
        protocol=protocol,
        code=code_fingerprint(),
        fresh=fresh,
        retry_errors=retry_errors,
        recompute_stale=recompute_stale,
    )
    for ds in datasets:
        settings = grid_settings(ds, profile, seeds, lrs, tune_seeds)
        plan.add_dataset(ds, algorithms, settings, fixed_lr, splits)
    plan.resolve()
    return plan, stale


def dry_run(*args, list_runs: bool = False, **kwargs) -> str:
    """What :func:`run_grid` with these arguments would compute and its estimated CPU-hours, as
    text; ``list_runs`` adds every run's id. Computes and writes nothing."""
    plan, _ = plan_grid(*args, compute=False, dry=True, **kwargs)
    cost = grid_cost(plan)
    text = cost_report(cost, plan.profile, widening_runs(plan))
    if list_runs:
        ready, _ = plan.todo()
        text += "\n" + "\n".join(sp.run_id for sp in [*ready, *plan.unscheduled()])
    return text


def _start_from_archive(store: Store, profile: str) -> None:
    """Unpack into the store the runs of its profile's committed archive that it lacks."""
    if not (archive_dir(profile) / MANIFEST_FILE).exists():
        return
    ids = [entry["run_id"] for entry in read_manifest(archive_dir(profile))["runs"]]
    if all((store.runs / f"{run_id}.json").exists() for run_id in ids):
        return
    unpack(archive_dir(profile), store)


def load_grid(*args, **kwargs) -> GridResult:
    """:func:`run_grid` with ``compute=False``: stored results only."""
    return run_grid(*args, compute=False, **kwargs)


def _missing_message(missing, store, profile, datasets, algorithms) -> str:
    shown = ", ".join(sp.run_id for sp in missing[:3])
    more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
    algs = "all" if algorithms == list(ALGORITHMS) else ",".join(algorithms)
    damaged = [store.damaged[sp.run_id] for sp in missing if sp.run_id in store.damaged]
    damaged_text = (
        f"{len(damaged)} of them are damaged:\n  " + "\n  ".join(damaged[:5]) + "\n"
        if damaged
        else ""
    )
    return (
        f"{len(missing)} runs are not in {store.root} ({shown}{more}). {damaged_text}"
        "Compute them with:\n"
        f"  playerfl grid --datasets {','.join(datasets)} --algorithms {algs} "
        f"--profile {profile} --store {store.root}\n"
        "(the paper profile is meant for a GPU)."
    )
