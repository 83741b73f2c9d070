"""pFedMe (Dinh et al., 2020): personalisation through Moreau envelopes.

Each client i keeps a local copy w_i of the global model and a personal model θ_i. For every
mini-batch it first solves, approximately (K steps), the Moreau-envelope subproblem

    θ_i ≈ argmin_θ  f_i(θ; batch) + (λ/2)‖θ − w_i‖²,

then takes a step on the envelope, whose gradient is λ(w_i − θ_i):  w_i ← w_i − η·λ(w_i − θ_i).
The server mixes w ← (1 − β)·w + β·avg_i(w_i). Clients deploy θ_i, the model fitted to their
own data yet tied to the global model by λ. The authors' code (reference §6.4) trains a personal
model with a proximal term instead: no inner loop, no K, no β.

Solvers. As everywhere in this engine the SGD steps of the paper are taken by the engine's
optimiser (Adam with AMSGrad, reference §4.2): the K inner steps by a personal Adam (learning
rate ``personal_lr``, default: the run's), and the envelope step by the client's Adam fed the
envelope gradient λ(w_i − θ_i) (``eta=None``, default). With ``eta`` set, the envelope step is
the paper's literal SGD step w_i ← w_i − η·λ(w_i − θ_i). Following the published code, θ_i
restarts from the received w at the start of each round and is warm-started from its previous
value for the following mini-batches.
"""

from __future__ import annotations

import numpy as np
import torch

from playerfl_core.algorithms.base import Algorithm
from playerfl_core.engine import DivergenceError
from playerfl_core.units import set_params

from .fedprox import all_params


class PFedMe(Algorithm):
    """pFedMe with λ = 15, K = 5, β = 1 (the pFedMe paper's settings).

    λ = 15 rather than the authors' 0.1 (reference §1.2): in the authors' code λ weights a
    proximal term of a different algorithm, whereas in pFedMe λ is the Moreau-envelope parameter,
    for which the pFedMe paper uses 15 on every benchmark. β = 1 is the paper's plain variant
    (β > 1 is its accelerated one). Clients deploy their personal model θ_i.
    """

    name = "pfedme"
    deploys = (
        "the client's personal model θ_i (the approximate Moreau-envelope solution of its last "
        "local step), not the global model"
    )

    @classmethod
    def defaults(cls):
        return {"lam": 15.0, "K": 5, "personal_lr": None, "beta": 1.0, "eta": None}

    def setup(self, run):
        if self.lam < 0 or self.K < 1 or self.beta <= 0:
            raise ValueError(
                f"pfedme: need lam ≥ 0, K ≥ 1, beta > 0; got {self.hyperparameters()}."
            )
        if self.eta is not None and not 0 < self.eta * self.lam < 2:
            raise ValueError(
                f"pfedme: the envelope step needs 0 < eta·lam < 2 (else w overshoots θ and "
                f"diverges); got eta={self.eta}, lam={self.lam}."
            )
        for c in run.clients:
            personal = run.new_model()
            c.state["personal"] = personal
            c.state["personal_optimizer"] = c.make_optimizer(
                personal.parameters(), self.personal_lr
            )

    def local_update(self, run, client, rnd):
        theta, opt = client.state["personal"], client.state["personal_optimizer"]
        w_model = client.model
        set_params(theta, all_params(w_model))  # θ restarts from the received global model
        w_params, t_params = list(w_model.parameters()), list(theta.parameters())
        theta.train()
        total, seen = torch.zeros((), dtype=torch.float64, device=client.y["train"].device), 0
        for _ in range(client.config.local_epochs):
            for x, y in client.batches():
                for _ in range(self.K):
                    opt.zero_grad(set_to_none=True)
                    loss = client.loss(theta(x), y)
                    prox = sum(
                        ((t - w.detach()) ** 2).sum()
                        for t, w in zip(t_params, w_params, strict=True)
                    )
                    (loss + 0.5 * self.lam * prox).backward()
                    opt.step()
                self._envelope_step(client, w_params, t_params)
                total += loss.detach().double() * len(y)
                seen += len(y)
        mean = (total / max(seen, 1)).item()
        if not np.isfinite(mean):
            raise DivergenceError(
                f"pfedme, client {client.name!r}: loss became {mean}; lower the learning rate."
            )
        return mean

    def _envelope_step(self, client, w_params, t_params) -> None:
        """One step on the Moreau envelope: its gradient at w is λ(w − θ)."""
        with torch.no_grad():
            grads = [self.lam * (w - t) for w, t in zip(w_params, t_params, strict=True)]
            if self.eta is not None:
                for w, g in zip(w_params, grads, strict=True):
                    w -= self.eta * g
                return
        client.optimizer.zero_grad(set_to_none=True)
        for w, g in zip(w_params, grads, strict=True):
            w.grad = g
        client.optimizer.step()

    def aggregate(self, run, rnd, uploads):
        previous = {n: v.clone() for n, v in run.global_params.items()} if self.beta != 1 else {}
        updated = super().aggregate(run, rnd, uploads)
        for n in previous:
            if n in updated:
                run.global_params[n] = (1 - self.beta) * previous[
                    n
                ] + self.beta * run.global_params[n]
        return updated

    def deployed_model(self, run, client):
        return client.state["personal"]
