"""FedProx (Li et al., 2020): FedAvg whose local objective adds (μ/2)‖w − w_global‖².

The proximal term keeps each client's local training near the model it received at the start of
the round, which limits client drift on heterogeneous data. Aggregation is FedAvg's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch
from torch import nn

from playerfl_core.fl.algorithms.base import Algorithm, at_least
from playerfl_core.fl.units import get_params


def proximal_penalty(
    anchor: Mapping[str, torch.Tensor], coef: float
) -> Callable[[nn.Module], torch.Tensor]:
    """``penalty(model) = (coef/2) · Σ ‖θ − anchor‖²`` over the anchored parameters.

    Also used by Ditto and pFedMe, whose personal objectives carry the same term.
    """

    def penalty(model: nn.Module) -> torch.Tensor:
        params = dict(model.named_parameters())
        sq = sum(((params[n] - a) ** 2).sum() for n, a in anchor.items())
        return 0.5 * coef * sq

    return penalty


def all_params(model: nn.Module) -> dict[str, torch.Tensor]:
    """Detached copies of every parameter of ``model``."""
    return get_params(model, [n for n, _ in model.named_parameters()])


class FedProx(Algorithm):
    """FedAvg with a proximal local objective (μ = 0.1, appendix §1.2).

    The anchor w_global is the model the client holds when the round starts, i.e. the global
    model it received (or the common initialisation in round 0). With μ = 0 it is FedAvg.
    Clients deploy the aggregated global model.
    """

    name = "fedprox"
    shares = "every unit, every round (as FedAvg)"
    key_hyperparameter = "mu"
    paper = "Li et al., 2020"
    deploys = "the aggregated global model received at the end of the round (as FedAvg)"

    @classmethod
    def defaults(cls):
        return {"mu": 0.1}

    @classmethod
    def valid(cls):
        return {"mu": at_least(0)}

    def local_update(self, run, client, rnd):
        anchor = all_params(client.model)
        return client.train_epoch(penalty=proximal_penalty(anchor, self.mu))
