"""Ditto (Li et al., 2021): a global model trained by FedAvg plus a regularised personal model.

Each round every client (1) trains the received global model w for one local epoch on its plain
loss, which the server averages (FedAvg), and (2) trains its persistent personal model v on
task loss + (λ/2)‖v − w‖², w being the global model it received this round. Clients deploy v.
The authors' code averaged the personal models instead (appendix §6.5; §10.2, defect 9).
"""

from __future__ import annotations

from contextlib import contextmanager

import torch

from playerfl_core.fl.algorithms.base import Algorithm, at_least
from playerfl_core.fl.seeding import client_seed

from .fedprox import all_params, proximal_penalty


@contextmanager
def batch_stream(client, generator: torch.Generator):
    """Let ``client.batches()`` draw from ``generator`` for the duration of the block."""
    own = client.generator
    client.generator = generator
    try:
        yield
    finally:
        client.generator = own


class Ditto(Algorithm):
    """Ditto with λ = 0.1 (appendix §1.2).

    The personal model draws its mini-batches from its own copy of the client's shuffle stream,
    so within a round it sees the same batches as the global model, and with λ = 0 it is exactly
    Local training while the averaged model is exactly FedAvg's. Clients deploy v.
    """

    name = "ditto"
    shares = "every unit of the global model w (never the personal model v)"
    key_hyperparameter = "lam"
    paper = "Li et al., 2021"
    deploys = "the client's personal model (trained with a pull towards the global model)"

    @classmethod
    def defaults(cls):
        return {"lam": 0.1}

    @classmethod
    def valid(cls):
        return {"lam": at_least(0)}

    def setup_client(self, run, client):
        personal = run.new_model()
        client.state["personal"] = personal
        client.state["personal_optimizer"] = client.make_optimizer(personal.parameters())
        client.state["personal_generator"] = torch.Generator().manual_seed(
            client_seed(run.config.seed, client.id)
        )

    def local_update(self, run, client, rnd):
        received = all_params(client.model)
        global_loss = client.train_epoch()
        run.log(client.id, rnd, "train", "loss_global", global_loss, client.n_train)
        with batch_stream(client, client.state["personal_generator"]):
            return client.train_epoch(
                model=client.state["personal"],
                optimizer=client.state["personal_optimizer"],
                penalty=proximal_penalty(received, self.lam),
            )

    def deployed_model(self, run, client):
        return client.state["personal"]
