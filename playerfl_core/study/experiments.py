"""Experiment grids (dataset × algorithm × learning rate × seed) with a resumable on-disk store:
the public names in one place.

These modules do the work:

* :mod:`playerfl_core.study.run_store`: the store of finished runs (:class:`Store`,
  :class:`RunSpec`, damaged-run checks, :func:`code_fingerprint`, :func:`execute` for one run,
  :func:`compute` for one run computed elsewhere and written by the store's owner);
* :mod:`playerfl_core.study.tuning`: the tuning protocol (the LR grid, choosing a rate, widening
  at an edge; chapter 05 states it in prose);
* :mod:`playerfl_core.study.grid`: :func:`run_grid` (the plan: :class:`GridPlan`, in
  :mod:`playerfl_core.study.grid_plan`), :func:`dry_run` (what it would compute and cost:
  :mod:`playerfl_core.study.grid_cost`);
* :mod:`playerfl_core.study.grid_runner`: running a plan on a backend (:func:`run_plan`):
  this machine's worker processes or a Ray cluster (:mod:`playerfl_core.study.backends`,
  :class:`RayBackend`).
"""

from playerfl_core.study.grid import dry_run, load_grid, plan_grid, run_grid
from playerfl_core.study.grid_plan import (
    SPLIT_PREFIX,
    GridPlan,
    PairPlan,
    algorithm_names,
    split_algorithms,
)
from playerfl_core.study.grid_result import GridResult, MissingResultsError
from playerfl_core.study.grid_runner import GridInterrupted, run_plan
from playerfl_core.study.ray_cluster import ClusterError, RayBackend
from playerfl_core.study.run_store import (
    DIVERGED,
    ERROR,
    OK,
    RESULTS_DIR,
    RUN_MODULES,
    STATUSES,
    DamagedRunError,
    RunSpec,
    Store,
    code_fingerprint,
    compute,
    default_store,
    execute,
    load_data_cached,
    options_tag,
)
from playerfl_core.study.tuning import (
    chosen_lr,
    default_grid,
    grid_settings,
    tuning_scores,
    widened_lr,
)

__all__ = [
    "ClusterError",
    "DIVERGED",
    "ERROR",
    "OK",
    "RESULTS_DIR",
    "RUN_MODULES",
    "SPLIT_PREFIX",
    "STATUSES",
    "DamagedRunError",
    "GridInterrupted",
    "GridPlan",
    "GridResult",
    "MissingResultsError",
    "PairPlan",
    "RayBackend",
    "RunSpec",
    "Store",
    "algorithm_names",
    "chosen_lr",
    "code_fingerprint",
    "compute",
    "default_grid",
    "default_store",
    "dry_run",
    "execute",
    "grid_settings",
    "load_data_cached",
    "load_grid",
    "options_tag",
    "plan_grid",
    "run_grid",
    "run_plan",
    "split_algorithms",
    "tuning_scores",
    "widened_lr",
]
