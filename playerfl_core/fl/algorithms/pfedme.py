"""pFedMe (Dinh et al., 2020): personalisation through Moreau envelopes.

Each client i keeps a local copy w_i of the global model and a personal model θ_i. For every
mini-batch it first solves, approximately (K steps), the Moreau-envelope subproblem

    θ_i ≈ argmin_θ  f_i(θ; batch) + (λ/2)‖θ − w_i‖²,

then takes a step on the envelope, whose gradient is λ(w_i − θ_i):  w_i ← w_i − η·λ(w_i − θ_i).
The server mixes w ← (1 − β)·w + β·avg_i(w_i). Clients deploy θ_i, the model fitted to their
own data yet tied to the global model by λ. The authors' code (appendix §6.4) trains a personal
model with a proximal term instead: no inner loop, no K, no β.

Steps. The outer (envelope) step is the published one by default (``outer="sgd"``):
w_i ← w_i − η·λ(w_i − θ_i), η defaulting to the run's learning rate. It is gradient descent on
the λ-smooth envelope, stable only for 0 < ηλ < 2, which is checked before round 0: a run whose
η·λ falls outside raises :class:`UnstableEnvelopeStepError`, a :class:`DivergenceError`, so a
learning-rate grid records that learning rate as diverged (with the values in the message)
and tunes over the others. ``outer="adam"`` instead feeds the envelope gradient λ(w_i − θ_i)
to the client's Adam (the engine's optimiser), which rescales it per parameter: a documented
variant, not pFedMe.

The inner problem only has to be solved approximately (the paper's δ-approximate θ̂), by any
solver; the paper takes K gradient steps with a separate personal learning rate. By default
(``inner="adam"``) the K steps are taken by a personal Adam with AMSGrad, the optimiser every
other local objective in this engine uses (appendix §4.2), with learning rate ``personal_lr``
(default: the run's), so the learning-rate grids tuned for Adam stay meaningful for θ;
``inner="sgd"`` takes the paper's plain gradient steps θ ← θ − personal_lr·∇h. Following the
published code, θ_i restarts from the received w at the start of each round and is
warm-started from its previous value for the following mini-batches.
"""

from __future__ import annotations

import numpy as np
import torch

from playerfl_core.fl.algorithms.base import Algorithm, at_least, integer, one_of, optional
from playerfl_core.fl.errors import DivergenceError
from playerfl_core.fl.units import set_params

from .fedprox import all_params


class UnstableEnvelopeStepError(DivergenceError, ValueError):
    """η·λ outside (0, 2): the envelope step would overshoot and diverge; known before round 0."""


class PFedMe(Algorithm):
    """pFedMe with λ = 15, K = 5, β = 1 (the pFedMe paper's settings).

    λ = 15 rather than the authors' 0.1 (appendix §1.2): in the authors' code λ weights a
    proximal term of a different algorithm, whereas in pFedMe λ is the Moreau-envelope parameter,
    for which the pFedMe paper uses 15 on every benchmark. β = 1 is the paper's plain variant
    (β > 1 is its accelerated one). ``eta`` is the outer learning rate η and ``personal_lr``
    the inner one; the paper keeps them separate, and both default to the run's learning rate
    (the one the grid tunes). Clients deploy their personal model θ_i.
    """

    name = "pfedme"
    shares = "every unit of its own copy of the global model (never its personal model)"
    key_hyperparameter = "lam"
    paper = "Dinh et al., 2020"
    deploys = (
        "the client's personal model (the approximate Moreau-envelope solution of its last "
        "local step), not the global model"
    )

    @classmethod
    def defaults(cls):
        return {
            "lam": 15.0,
            "K": 5,
            "personal_lr": None,
            "beta": 1.0,
            "eta": None,
            "outer": "sgd",
            "inner": "adam",
        }

    @classmethod
    def valid(cls):
        return {
            "lam": at_least(0),
            "K": integer(1),
            "personal_lr": optional(at_least(0, strict=True)),
            "beta": at_least(0, strict=True),
            "eta": optional(at_least(0, strict=True)),
            "outer": one_of("sgd", "adam"),
            "inner": one_of("sgd", "adam"),
        }

    def setup(self, run):
        if self.lam < 0 or self.K < 1 or self.beta <= 0:
            raise ValueError(
                f"pfedme: need lam ≥ 0, K ≥ 1, beta > 0; got {self.hyperparameters()}."
            )
        for option, value in (("outer", self.outer), ("inner", self.inner)):
            if value not in ("sgd", "adam"):
                raise ValueError(f"pfedme: {option} must be 'sgd' or 'adam', got {value!r}.")
        if self.outer == "adam" and self.eta is not None:
            raise ValueError(
                f"pfedme: eta={self.eta} is the step of outer='sgd'; outer='adam' uses the "
                "run's learning rate. Drop eta or use outer='sgd'."
            )
        outer_lr = self.eta if self.eta is not None else run.config.lr
        if self.outer == "sgd" and not 0 < outer_lr * self.lam < 2:
            raise UnstableEnvelopeStepError(
                f"pfedme: the envelope step w ← w − eta·lam·(w − θ) needs 0 < eta·lam < 2, "
                f"else w overshoots θ and diverges; got eta={outer_lr:g}"
                f"{'' if self.eta is not None else ' (the run lr)'}, lam={self.lam:g}, "
                f"eta·lam={outer_lr * self.lam:g}. "
                + (
                    f"Use eta < {2 / self.lam:g} (or a smaller lr), a smaller lam, or outer='adam'."
                    if self.lam > 0
                    else "With lam = 0 the envelope step never moves w: use lam > 0, or "
                    "outer='adam'."
                )
            )

    def setup_client(self, run, client):
        personal = run.new_model()
        client.state["personal"] = personal
        if self.inner == "sgd":
            opt = torch.optim.SGD(personal.parameters(), lr=self.personal_lr or run.config.lr)
        else:
            opt = client.make_optimizer(personal.parameters(), self.personal_lr)
        client.state["personal_optimizer"] = opt

    def local_update(self, run, client, rnd):
        theta, opt = client.state["personal"], client.state["personal_optimizer"]
        w_model = client.model
        set_params(theta, all_params(w_model))  # θ restarts from the received global model
        w_params, t_params = list(w_model.parameters()), list(theta.parameters())
        theta.train()
        total, seen = torch.zeros((), dtype=torch.float64, device=client.y["train"].device), 0
        with client.seeded_dropout(theta):
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
            if self.outer == "sgd":
                outer_lr = self.eta if self.eta is not None else client.config.lr
                for w, g in zip(w_params, grads, strict=True):
                    w -= outer_lr * g
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
