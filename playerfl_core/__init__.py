"""playerfl_core: the library behind the PLayer-FL book.

Data flows one way: ``data_prep`` → :func:`run_federated` (an algorithm on the engine) → the long
results table → metrics and figures. "Appendix §x.y" in docstrings and messages points to the
book's appendix "The authors' code, read closely", which summarises the authors' repository.

The code lives in wings, bottom to top; a wing imports only from wings below it
(``tests/test_import_graph.py`` checks it):

- ``fl``: the federated engine, the algorithms, models, units, losses, sensitivities;
- ``stats``: the results table, statistics over seeds, metrics, tests and verdicts, published
  numbers;
- ``measure``: layer measurements (similarity, curvature, sensitivity studies, averaging);
- ``study``: the run store, grids, tuning, archives, split sweeps;
- ``flower``: the same runs over Flower (link, deploy, the processes recipe, silos' data);
- ``book``: reports, figures, style, prose and the chapters' stamps.

Above them sit the entry points: :mod:`playerfl_core.cli` (the ``playerfl`` command),
:mod:`playerfl_core.checks` (user input, checked before any training) and
:mod:`playerfl_core.chapter_checks` (the chapters' parameters). ``from playerfl_core import ...``
is the stable face. The modules' former flat paths (``playerfl_core.engine``, ...) still import
for one release, as the same module objects, with a DeprecationWarning naming the new path.
"""

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

MOVED = {
    "algorithms": "fl.algorithms",
    "divergence": "fl.divergence",
    "engine": "fl.engine",
    "errors": "fl.errors",
    "losses": "fl.losses",
    "models": "fl.models",
    "profiles": "fl.profiles",
    "schema": "fl.schema",
    "scoring": "fl.scoring",
    "seeding": "fl.seeding",
    "sensitivity": "fl.sensitivity",
    "units": "fl.units",
    "claims": "stats.claims",
    "metrics": "stats.metrics",
    "published": "stats.published",
    "results": "stats.results",
    "seed_stats": "stats.seed_stats",
    "analytics": "measure.analytics",
    "averaging_check": "measure.averaging_check",
    "layer_measure": "measure.layer_measure",
    "layer_studies": "measure.layer_studies",
    "split_studies": "measure.split_studies",
    "archive": "study.archive",
    "experiments": "study.experiments",
    "grid_plan": "study.grid",  # run_grid; the plan itself: study.grid_plan
    "grid_runner": "study.grid_runner",
    "machine": "study.machine",
    "run_store": "study.run_store",
    "split_oracle": "study.split_oracle",
    "tuning": "study.tuning",
    "verification": "study.verification",
    "workers": "study.workers",
    "flower_checkpoints": "flower.checkpoints",
    "flower_credentials": "flower.credentials",
    "flower_deploy": "flower.deploy",
    "flower_federation": "flower.federation",
    "flower_link": "flower.link",
    "silo_data": "flower.silo_data",
    "analysis_plots": "book.analysis_plots",
    "averaging_plots": "book.averaging_plots",
    "comparison_plots": "book.comparison_plots",
    "data_plots": "book.data_plots",
    "notebook_stamp": "book.notebook_stamp",
    "plots": "book.plots",
    "prose": "book.prose",
    "reports": "book.reports",
    "split_plots": "book.split_plots",
    "style": "book.style",
}
"""Former flat module → its place in a wing (relative to ``playerfl_core``); kept one release."""


def _new_name(fullname: str) -> str | None:
    """``playerfl_core.engine`` → ``playerfl_core.fl.engine`` (and below: ``...reports.tables``)."""
    top, _, rest = fullname.partition(".")
    if top != __name__ or not rest:
        return None
    old, _, below = rest.partition(".")
    if old not in MOVED:
        return None
    return f"{__name__}.{MOVED[old]}" + (f".{below}" if below else "")


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports a former path as the module at its new path: the same object is registered under
    both names, never a second copy. ``python -m`` of a former path runs the new module's code."""

    def find_spec(self, fullname, path=None, target=None):
        new = _new_name(fullname)
        if new is None:
            return None
        real = importlib.util.find_spec(new)
        if real is None:
            return None
        spec = importlib.util.spec_from_loader(
            fullname,
            self,
            origin=real.origin,
            is_package=real.submodule_search_locations is not None,
        )
        spec.loader_state = new
        return spec

    def create_module(self, spec):
        warnings.warn(
            f"{spec.name} moved to {spec.loader_state}; import it from there "
            "(the old path goes in the next release)",
            DeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(spec.loader_state)
        spec.loader_state = module.__spec__  # import machinery sets __spec__: put it back
        return module

    def exec_module(self, module):
        module.__spec__ = module.__spec__.loader_state

    def get_code(self, fullname):
        """For ``python -m playerfl_core.<former path>`` (runpy asks the loader for code)."""
        real = importlib.util.find_spec(_new_name(fullname))
        return real.loader.get_code(real.name)


if not any(isinstance(f, _Alias) for f in sys.meta_path):
    sys.meta_path.insert(0, _Alias())

from playerfl_core.fl.algorithms import ALGORITHMS, get_algorithm  # noqa: E402
from playerfl_core.fl.engine import (  # noqa: E402
    DivergenceError,
    RunConfig,
    default_device,
    run_federated,
)
from playerfl_core.fl.profiles import make_config  # noqa: E402

__all__ = [
    "ALGORITHMS",
    "DivergenceError",
    "RunConfig",
    "default_device",
    "get_algorithm",
    "make_config",
    "run_federated",
]
