"""playerfl_core: the library behind the PLayer-FL book.

Data flows one way: ``data_prep`` → :func:`run_federated` (an algorithm on the engine) → the long
results table → metrics and figures. "Appendix §x.y" in docstrings and messages points to the
book's appendix "The authors' code, read closely", which summarises the authors' repository.
"""

from playerfl_core.algorithms import ALGORITHMS, get_algorithm
from playerfl_core.engine import DivergenceError, RunConfig, default_device, run_federated
from playerfl_core.profiles import make_config

__all__ = [
    "ALGORITHMS",
    "DivergenceError",
    "RunConfig",
    "default_device",
    "get_algorithm",
    "make_config",
    "run_federated",
]
