"""Experiment grids (dataset × algorithm × learning rate × seed) with a resumable on-disk store:
the public names of :mod:`~playerfl_core.study.run_store`, :mod:`~playerfl_core.study.tuning`,
:mod:`~playerfl_core.study.grid` and :mod:`~playerfl_core.study.grid_runner` in one place.
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
