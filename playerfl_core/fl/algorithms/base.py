"""The algorithm interface: four questions, each with FedAvg's answer as the default.

1. How does a client train locally?          ``local_update``
2. Which units does a client share?          ``shared_units``
3. How does the server combine and return?   ``aggregate`` / ``distribute``
4. Which model does a client deploy?         ``deployed_model`` (and the class text ``deploys``)

Most algorithms are FedAvg plus a different answer to one question.

Every hook runs on one side. *Client hooks* take ``(run, client, ...)`` and touch only that
client. *Server hooks* take ``(run, rnd)`` and never touch a client: they reach the clients only
through ``run.link``, which carries exactly what a hook names (an upload, a report, values to
install) in one process (:class:`~playerfl_core.fl.engine.LocalLink`) or between machines
(:class:`~playerfl_core.flower.server_link.FlowerLink`). Attributes
listed in ``client_attributes`` are the server's decisions a client needs (PLayer-FL's split);
they travel with every message.
"""

from __future__ import annotations

import math
import numbers

import torch

from playerfl_core.fl.units import get_params, param_names, set_params, unit_names


class Algorithm:
    """FedAvg: every client trains one local epoch, all units are averaged and sent back."""

    name = "fedavg"
    deploys = "the aggregated global model (all units averaged) received at the end of the round"
    # What a reader needs to place the algorithm (the book's table of algorithms); descriptive
    # only, nothing reads them during a run.
    shares = "every unit, every round"
    """What each client uploads to the server."""
    key_hyperparameter: str | None = None
    """The hyper-parameter that sets the method apart (a key of :meth:`defaults`), or None."""
    paper = "McMahan et al., 2017"
    """The method's paper, as author-year."""

    def __init__(self, **hyperparameters):
        unknown = set(hyperparameters) - set(self.defaults())
        if unknown:
            raise ValueError(
                f"{self.name}: unknown hyper-parameters {sorted(unknown)}; "
                f"valid ones are {sorted(self.defaults()) or 'none'}."
            )
        for key, value in {**self.defaults(), **hyperparameters}.items():
            setattr(self, key, value)
        for key, (accepts, valid) in self.valid().items():
            value = getattr(self, key)
            if not accepts(value):
                raise ValueError(
                    f"{self.name}: hyper-parameter {key}={value!r} is outside the valid range "
                    f"({valid})."
                )

    @classmethod
    def defaults(cls) -> dict:
        """Hyper-parameters with their defaults (appendix §1.2)."""
        return {}

    @classmethod
    def valid(cls) -> dict:
        """Per hyper-parameter: ``(accepts(value) -> bool, the valid range in words)``, checked
        when the algorithm is built, so a bad value fails before any training."""
        return {}

    def hyperparameters(self) -> dict:
        return {k: getattr(self, k) for k in self.defaults()}

    client_attributes: tuple[str, ...] = ()
    """Attributes the server decides and each client's copy of the algorithm must see."""
    final_step = False
    """True: after the last round every client runs :meth:`finish_client` and the result is
    evaluated as one more round (index ``rounds``)."""

    def client_state(self) -> dict:
        """The values of :attr:`client_attributes` (what a message carries to a client)."""
        return {k: getattr(self, k) for k in self.client_attributes}

    def load_client_state(self, state: dict) -> None:
        """Install the server's decisions in a client's copy of the algorithm."""
        for key, value in state.items():
            setattr(self, key, value)

    # -- server hooks ------------------------------------------------------------------------
    def setup(self, run) -> None:
        """Server, once, before round 0 (``run.template`` shows the model's units)."""

    def before_training(self, run, rnd: int) -> None:
        """Server, before the clients train in round ``rnd`` (pFedLA sends personal mixes)."""

    def aggregate(self, run, rnd: int, uploads: dict[int, dict[str, torch.Tensor]]) -> set[str]:
        """Weighted average (training-set sizes) of each parameter over the clients that sent it.

        Parameters nobody sent keep their previous server value. Returns the names updated.
        """
        weights = run.weights
        names = {n for up in uploads.values() for n in up}
        for name in names:
            senders = [cid for cid, up in uploads.items() if name in up]
            total = sum(weights[cid] for cid in senders)
            run.global_params[name] = sum(
                uploads[cid][name] * (weights[cid] / total) for cid in senders
            )
        return names

    def distribute(self, run, rnd: int, updated: set[str]) -> None:
        """Send the updated server parameters back to every client."""
        values = {n: run.global_params[n] for n in sorted(updated)}
        run.link.send(rnd, dict.fromkeys(run.client_ids, values))

    def server_step(self, run, rnd: int) -> None:
        """Collect uploads, aggregate, distribute. The server sees only the uploads."""
        uploads = run.link.uploads(rnd)
        if uploads:
            self.distribute(run, rnd, self.aggregate(run, rnd, uploads))

    def prepare_deployment(self, run, rnd: int) -> None:
        """Server, before every evaluation: what clients need to build the deployed model
        (FedLAMA's global average). Default: nothing, each client deploys from its own state."""

    # -- client hooks ------------------------------------------------------------------------
    def setup_client(self, run, client) -> None:
        """Client, once, before round 0 (personal models, frozen parts)."""

    def local_update(self, run, client, rnd: int) -> float:
        """Train the client locally; return its mean training loss."""
        return client.train_epoch()

    def report(self, run, client, rnd: int) -> dict[str, float]:
        """Numbers (not parameters) the server asks for this round; PLayer-FL's sensitivities."""
        return {}

    def shared_units(self, run, client, rnd: int) -> tuple[str, ...]:
        """Units this client uploads this round."""
        return unit_names(client.model)

    def upload(self, run, client, rnd: int) -> dict[str, torch.Tensor]:
        """What leaves the client: copies of the parameters of its shared units, nothing else."""
        return get_params(
            client.model, param_names(client.model, self.shared_units(run, client, rnd))
        )

    def deployment_upload(self, run, client, rnd: int) -> dict[str, torch.Tensor]:
        """What :meth:`prepare_deployment` collects from the client (nothing by default)."""
        return {}

    def receive(self, run, client, rnd: int, values: dict[str, torch.Tensor]) -> None:
        """Install what the server sent (parameters by name) in the client's model."""
        set_params(client.model, values)

    def receive_deployment(self, run, client, values: dict[str, torch.Tensor]) -> None:
        """Install what :meth:`prepare_deployment` sent (nothing to do by default)."""

    def deployed_model(self, run, client):
        """The model the client would deploy, evaluated every round."""
        return client.model

    def finish_client(self, run, client) -> None:
        """Client, after the final round, when :attr:`final_step` is True."""


# -- hyper-parameter ranges (for ``valid``) --------------------------------------------------


def _number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def at_least(low: float, strict: bool = False):
    """A finite number ≥ ``low`` (> ``low`` when ``strict``)."""
    return (
        (lambda v: _number(v) and (v > low if strict else v >= low)),
        f"a finite number {'>' if strict else '≥'} {low:g}",
    )


def between(low: float, high: float):
    """A finite number in [low, high]."""
    return (lambda v: _number(v) and low <= v <= high), f"a number in [{low:g}, {high:g}]"


def integer(low: int):
    """An integer ≥ ``low``."""
    return (lambda v: _number(v) and int(v) == v and v >= low), f"an integer ≥ {low}"


def one_of(*values):
    return (lambda v: v in values), f"one of {values}"


def optional(rule):
    """``rule``, or None (the algorithm's documented fallback)."""
    accepts, valid = rule
    return (lambda v: v is None or accepts(v)), f"None or {valid}"
