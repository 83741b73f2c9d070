"""PLayer-FL: federate the units before the first sharp rise of federation sensitivity.

All clients start identical. After the first local epoch each client computes its per-unit
sensitivities s_k on its training data and reports them (only L numbers leave the client);
the server averages them (training-size weights) and picks the split p with
:func:`~playerfl_core.fl.sensitivity.choose_split`. From then on, round 0 included, units 1..p are
averaged every round and units p+1..L stay local. The authors' code hard-codes p per dataset
(appendix §6.11); here it is computed online, as the paper describes.
"""

import math

from playerfl_core.fl.algorithms.base import Algorithm, at_least
from playerfl_core.fl.errors import DivergenceError
from playerfl_core.fl.schema import SERVER
from playerfl_core.fl.sensitivity import (
    DEFAULT_THRESHOLD,
    federation_sensitivity,
    pooled_sensitivities,
    server_split,
)
from playerfl_core.fl.units import prefix


class PrefixFederation(Algorithm):
    """Shared machinery: average the first ``p`` units, keep the rest local."""

    deploys = "the client's own model: the federated prefix (units 1..p) plus its local units"
    client_attributes = ("p",)

    def setup(self, run):
        self.p = None

    def shared_units(self, run, client, rnd):
        return prefix(client.model, self.p)

    def report(self, run, client, rnd):
        """Until the split is chosen: the client's per-unit sensitivities (L numbers)."""
        if self.p is not None:
            return {}
        return federation_sensitivity(client.model, client.x["train"], client.y["train"])

    def record_split(self, run, p: int) -> None:
        self.p = p
        run.info["split_p"] = p
        run.info["federated_units"] = list(prefix(run.template, p))
        run.log(SERVER, 0, "server", "split_p", p)


class PLayerFL(PrefixFederation):
    name = "playerfl"
    shares = (
        "units 1..p, with p chosen after the first epoch from the clients' sensitivities "
        "(L numbers each, once)"
    )
    key_hyperparameter = "threshold"
    paper = "Elhussein & Gürsoy, 2025"

    @classmethod
    def defaults(cls):
        return {"threshold": DEFAULT_THRESHOLD}

    @classmethod
    def valid(cls):
        return {"threshold": at_least(0)}

    def server_step(self, run, rnd):
        if self.p is None:
            self.record_split(run, self.choose(run, self.threshold))
        super().server_step(run, rnd)

    @staticmethod
    def choose(run, threshold: float = DEFAULT_THRESHOLD) -> int:
        """The rule's split from the sensitivities the clients report after their first epoch
        (the running algorithm's :meth:`PrefixFederation.report`)."""
        per_client = run.link.reports(0)
        for cid, s in per_client.items():
            for unit, value in s.items():
                run.log(cid, 0, "train", f"sensitivity/{unit}", value, run.sizes[cid])
        avg = pooled_sensitivities(per_client, run.weights)
        if not all(math.isfinite(v) for v in avg.values()):
            raise DivergenceError(
                f"non-finite federation sensitivities after the first epoch {avg}: training "
                f"blew up; lower the learning rate (now {run.config.lr:g})"
            )
        for unit, value in avg.items():
            run.log(SERVER, 0, "server", f"sensitivity/{unit}", value)
        run.info["sensitivity"] = avg
        return server_split(per_client, run.weights, threshold)
