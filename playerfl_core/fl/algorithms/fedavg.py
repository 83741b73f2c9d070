"""FedAvg (McMahan et al., 2017): average every unit, weighted by training-set size."""

from playerfl_core.fl.algorithms.base import Algorithm


class FedAvg(Algorithm):
    """Deploys the aggregated global model. The base class already is FedAvg."""

    name = "fedavg"
