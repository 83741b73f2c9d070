"""Experiment grids (dataset × algorithm × learning rate × seed) with a resumable on-disk store:
the public names of :mod:`~playerfl_core.study.run_store`, :mod:`~playerfl_core.study.tuning`,
:mod:`~playerfl_core.study.grid` and :mod:`~playerfl_core.study.grid_runner` in one place."""

from playerfl_core.study.grid import dry_run, load_grid, plan_grid, run_grid  # noqa: F401
from playerfl_core.study.grid_plan import (  # noqa: F401 (re-exported: the public names in one place)
    SPLIT_PREFIX,
    GridPlan,
    PairPlan,
    algorithm_names,
    split_algorithms,
)
from playerfl_core.study.grid_result import GridResult, MissingResultsError  # noqa: F401
from playerfl_core.study.grid_runner import GridInterrupted, run_plan  # noqa: F401
from playerfl_core.study.ray_cluster import ClusterError, RayBackend  # noqa: F401
from playerfl_core.study.run_store import (  # noqa: F401 (re-exported: the public names in one place)
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
from playerfl_core.study.tuning import (  # noqa: F401 (re-exported: the public names in one place)
    chosen_lr,
    default_grid,
    grid_settings,
    tuning_scores,
    widened_lr,
)
