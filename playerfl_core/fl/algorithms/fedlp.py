"""FedLP (Zhu et al., 2023): layer-wise pruning of what clients upload.

After local training each client keeps each layer unit with probability p and uploads only the
kept units. The server averages every unit over the clients that sent it (weights renormalised
over those clients); a unit nobody sent keeps its previous server value. The full global model
is then sent to every client, as FedAvg. Fewer uploads cut communication; p = 1 is FedAvg.
"""

import numpy as np

from playerfl_core.fl.algorithms.base import Algorithm, between
from playerfl_core.fl.seeding import client_seed
from playerfl_core.fl.units import unit_names


class FedLP(Algorithm):
    """Layer-preserving rate p = 0.7 (appendix §1.2).

    The coins come from a generator seeded by (run seed, client, round), so a run is
    reproducible and independent of any global random state. Clients deploy the global model.
    """

    name = "fedlp"
    shares = "each unit with probability p, drawn per client and round"
    key_hyperparameter = "p"
    paper = "Zhu et al., 2023"
    deploys = "the full global model (each unit averaged over the clients that uploaded it)"

    @classmethod
    def defaults(cls):
        return {"p": 0.7}

    @classmethod
    def valid(cls):
        return {"p": between(0, 1)}

    def setup(self, run):
        if not 0 <= self.p <= 1:
            raise ValueError(f"fedlp: p must be in [0, 1], got {self.p}.")

    def shared_units(self, run, client, rnd):
        units = unit_names(client.model)
        rng = np.random.default_rng(client_seed(run.config.seed, client.id, f"fedlp/{rnd}"))
        keep = rng.random(len(units)) < self.p
        return tuple(u for u, k in zip(units, keep, strict=True) if k)

    def upload(self, run, client, rnd):
        kept = len(self.shared_units(run, client, rnd))
        run.log(client.id, rnd, "train", "kept_units", kept, client.n_train)
        return super().upload(run, client, rnd)

    def server_step(self, run, rnd):
        uploads = run.link.uploads(rnd)
        if uploads:
            self.aggregate(run, rnd, uploads)
        self.distribute(run, rnd, set(run.global_params))
