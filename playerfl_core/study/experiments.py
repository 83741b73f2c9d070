"""Experiment grids (dataset × algorithm × learning rate × seed) with a resumable on-disk store:
the public names in one place.

Four modules do the work:

* :mod:`playerfl_core.study.run_store`: the store of finished runs (:class:`Store`,
  :class:`RunSpec`, damaged-run checks, :func:`code_fingerprint`, :func:`execute` for one run);
* :mod:`playerfl_core.study.tuning`: the tuning protocol (the LR grid, choosing a rate, widening
  at an edge; chapter 05 states it in prose);
* :mod:`playerfl_core.study.grid`: :func:`run_grid` (the plan: :class:`GridPlan`, in
  :mod:`playerfl_core.study.grid_plan`);
* :mod:`playerfl_core.study.grid_runner`: running a plan on worker processes (:func:`run_plan`).
"""

from playerfl_core.study.grid import (
    SPLIT_PREFIX,
    GridPlan,
    GridResult,
    MissingResultsError,
    PairPlan,
    algorithm_names,
    load_grid,
    run_grid,
    split_algorithms,
)
from playerfl_core.study.grid_runner import GridInterrupted, run_plan
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
    "RunSpec",
    "Store",
    "algorithm_names",
    "chosen_lr",
    "code_fingerprint",
    "default_grid",
    "default_store",
    "execute",
    "grid_settings",
    "load_data_cached",
    "load_grid",
    "options_tag",
    "run_grid",
    "run_plan",
    "split_algorithms",
    "tuning_scores",
    "widened_lr",
]
