"""Experiment grids (dataset × algorithm × learning rate × seed) with a resumable on-disk store:
the public names of :mod:`~playerfl_core.study.run_store`, :mod:`~playerfl_core.study.tuning`,
:mod:`~playerfl_core.study.grid` and :mod:`~playerfl_core.study.grid_runner` that chapters, the
command line and the tests use, in one place."""

from playerfl_core.study.grid import dry_run, load_grid, run_grid  # noqa: F401
from playerfl_core.study.grid_plan import split_algorithms  # noqa: F401
from playerfl_core.study.grid_result import GridResult, MissingResultsError  # noqa: F401
from playerfl_core.study.grid_runner import GridInterrupted  # noqa: F401
from playerfl_core.study.ray_cluster import ClusterError, RayBackend  # noqa: F401
from playerfl_core.study.run_store import (  # noqa: F401 (re-exported: the public names in one place)
    DIVERGED,
    OK,
    DamagedRunError,
    RunSpec,
    Store,
    default_store,
    execute,
)
from playerfl_core.study.tuning import default_grid, widened_lr  # noqa: F401
