"""pFedLA (Ma et al., 2022): layer-wise personalised aggregation learned by hypernetworks.

The server keeps one parameter copy θ_j per client and, per client i, a small hypernetwork: a
trainable embedding → one MLP per layer unit → softmax over clients, giving aggregation weights
α_i[unit] (they sum to 1). Client i receives, unit by unit, Σ_j α_ij θ_j; trains it; returns
Δ_i = trained − received. The server sets θ_i ← θ_i + Δ_i and trains client i's hypernetwork
through the mixing: Δ_i is the descent direction of the client loss at the mixed parameters, so
−Δ_i stands in for their gradient and the chain rule gives
φ_i ← φ_i − η_hn · (∂ mixed / ∂φ_i)ᵀ(−Δ_i). The authors' comparator (appendix §6.10) took
that gradient through detached tensors, so its hypernetwork never trained.

In round 0 all copies are equal, so the mixture does not depend on α and the hypernetwork
gradient is zero (up to rounding); it starts to learn once the copies differ.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from data_prep.federation import DEFAULT_HYPERNETWORK
from data_prep.registry import federation, is_declared
from playerfl_core.fl.algorithms.base import Algorithm, at_least, integer, optional
from playerfl_core.fl.schema import SERVER
from playerfl_core.fl.seeding import client_seed
from playerfl_core.fl.units import param_names, unit_names


def declared_sizes(dataset: str) -> tuple[int, int]:
    """(embedding dim, hidden dim) of the hypernetworks: the dataset's declaration
    (``Federation.hypernetwork``, appendix §1.2), the default for unregistered data."""
    return federation(dataset).hypernetwork if is_declared(dataset) else DEFAULT_HYPERNETWORK


class HyperNetwork(nn.Module):
    """One client's hypernetwork: embedding → per-unit MLP → softmax over the clients."""

    def __init__(self, units, num_clients: int, embedding_dim: int, hidden_dim: int):
        super().__init__()
        self.embedding = nn.Parameter(torch.randn(embedding_dim))  # N(0, 1), as nn.Embedding
        self.mlps = nn.ModuleDict(
            {
                u: nn.Sequential(
                    nn.Linear(embedding_dim, hidden_dim),
                    nn.ReLU(),
                    nn.Linear(hidden_dim, num_clients),
                )
                for u in units
            }
        )

    def forward(self) -> dict[str, torch.Tensor]:
        return {u: F.softmax(mlp(self.embedding), dim=-1) for u, mlp in self.mlps.items()}


class PFedLA(Algorithm):
    """pFedLA with a dedicated hypernetwork per client, as the paper; hypernetwork lr 0.01.

    ``embedding_dim``/``hidden_dim`` default to the authors' per-dataset sizes. Clients
    deploy the personalised model they have just trained.
    """

    name = "pfedla"
    shares = (
        "its update of every unit; the server mixes the clients' copies with weights learned "
        "per client"
    )
    key_hyperparameter = "hn_lr"
    paper = "Ma et al., 2022"
    deploys = (
        "the client's personalised model: its layer-wise mixture of the clients' copies after "
        "local training"
    )

    @classmethod
    def defaults(cls):
        return {"hn_lr": 0.01, "embedding_dim": None, "hidden_dim": None}

    @classmethod
    def valid(cls):
        return {
            "hn_lr": at_least(0, strict=True),
            "embedding_dim": optional(integer(1)),
            "hidden_dim": optional(integer(1)),
        }

    def setup(self, run):
        emb, hid = declared_sizes(run.data.name)
        emb, hid = self.embedding_dim or emb, self.hidden_dim or hid
        model = run.template
        self.units = unit_names(model)
        self.unit_params = {u: param_names(model, [u]) for u in self.units}
        k = run.n_clients
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(client_seed(run.config.seed, SERVER, "pfedla"))
            self.hypernets = [
                HyperNetwork(self.units, k, emb, hid).to(run.config.device) for _ in range(k)
            ]
        self.copies = [{n: v.clone() for n, v in run.global_params.items()} for _ in range(k)]
        self.pending: dict[int, tuple[dict, dict]] = {}

    def alphas(self, cid: int) -> dict[str, torch.Tensor]:
        """Client ``cid``'s aggregation weights per unit (with their graph)."""
        return self.hypernets[cid]()

    def mix(self, alpha: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Σ_j α_j[unit] θ_j, unit by unit, differentiable in α."""
        mixed = {}
        for u, names in self.unit_params.items():
            for n in names:
                stacked = torch.stack([copy[n] for copy in self.copies])
                mixed[n] = torch.tensordot(alpha[u], stacked, dims=1)
        return mixed

    def before_training(self, run, rnd):
        """Each client receives its personal mixture of the copies (the server keeps its graph)."""
        self.pending = {cid: self.mix(self.alphas(cid)) for cid in run.client_ids}
        run.link.send(
            rnd,
            {cid: {n: v.detach() for n, v in mixed.items()} for cid, mixed in self.pending.items()},
        )

    def receive(self, run, client, rnd, values):
        super().receive(run, client, rnd, values)
        client.state["received"] = values

    def upload(self, run, client, rnd):
        """Δ_i: the change local training made to the received mixture."""
        params = dict(client.model.named_parameters())
        return {n: params[n].detach() - v for n, v in client.state["received"].items()}

    def server_step(self, run, rnd):
        """The server receives Δ_i only: update the copies and train the hypernetworks."""
        deltas = run.link.uploads(rnd)
        for cid, mixed in self.pending.items():
            delta = deltas[cid]
            names = list(mixed)
            hn = self.hypernets[cid]
            grads = torch.autograd.grad(
                [mixed[n] for n in names],
                list(hn.parameters()),
                grad_outputs=[-delta[n] for n in names],
                allow_unused=True,
            )
            with torch.no_grad():
                for p, g in zip(hn.parameters(), grads, strict=True):
                    if g is not None:
                        p -= self.hn_lr * g
                for n in names:
                    self.copies[cid][n] += delta[n]
        self.pending.clear()
        with torch.no_grad():
            run.info["pfedla_alpha"] = {
                cid: {u: a.tolist() for u, a in self.alphas(cid).items()}
                for cid in range(run.n_clients)
            }

    def deployed_model(self, run, client):
        return client.model
