"""Algorithm registry: name -> class. Every algorithm runs on the same engine and interface."""

from playerfl_core.algorithms.base import Algorithm
from playerfl_core.algorithms.ditto import Ditto
from playerfl_core.algorithms.fedavg import FedAvg
from playerfl_core.algorithms.fedbabu import FedBABU
from playerfl_core.algorithms.fedlama import FedLAMA
from playerfl_core.algorithms.fedlp import FedLP
from playerfl_core.algorithms.fedprox import FedProx
from playerfl_core.algorithms.finetune import FineTune
from playerfl_core.algorithms.local import Local
from playerfl_core.algorithms.pfedla import PFedLA
from playerfl_core.algorithms.pfedme import PFedMe
from playerfl_core.algorithms.playerfl import PLayerFL
from playerfl_core.algorithms.playerfl_random import PLayerFLRandom

ALGORITHMS: dict[str, type[Algorithm]] = {
    cls.name: cls
    for cls in (
        Local,
        FedAvg,
        FedProx,
        PFedMe,
        Ditto,
        FineTune,
        FedBABU,
        FedLP,
        FedLAMA,
        PFedLA,
        PLayerFL,
        PLayerFLRandom,
    )
}
"""In the reference's order (§1.2); ``finetune`` is the authors' "LocalAdaptation"."""


def get_algorithm(name: str, **hyperparameters) -> Algorithm:
    """Instantiate an algorithm by name, with hyper-parameter overrides."""
    if name not in ALGORITHMS:
        raise ValueError(
            f"Unknown algorithm {name!r}. Available: {', '.join(ALGORITHMS)} "
            "(or 'all' on the command line)."
        )
    return ALGORITHMS[name](**hyperparameters)


__all__ = ["ALGORITHMS", "Algorithm", "get_algorithm"]
