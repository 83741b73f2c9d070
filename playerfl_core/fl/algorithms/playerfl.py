"""PLayer-FL: federate the units before the first sharp rise of federation sensitivity.

All clients start identical. After the first local epoch each client computes its per-unit
sensitivities s_k on its training data and reports them (only L numbers leave the client);
the server averages them (training-size weights) and picks the split p with
:func:`~playerfl_core.fl.sensitivity.choose_split`. From then on, round 0 included, units 1..p are
averaged every round and units p+1..L stay local. The authors' code hard-codes p per dataset
(appendix §6.11); here it is computed online, as the paper describes.

``rule`` swaps the paper's rule for another of :mod:`playerfl_core.fl.split_rules` (named
``playerfl-<rule>`` in results tables and grids, e.g. ``playerfl-disagreement``). A rule that
needs the clients' parameters, gradients or diagonal Fisher asks for them once, in round 0, with
one extra upload; everything else is unchanged.
"""

import math
import re

from playerfl_core.fl.algorithms.base import Algorithm, at_least, one_of, optional
from playerfl_core.fl.errors import DivergenceError
from playerfl_core.fl.schema import SERVER
from playerfl_core.fl.sensitivity import (
    diagonal_fisher,
    federation_sensitivity,
    full_gradient,
    pooled_sensitivities,
)
from playerfl_core.fl.split_rules import RULES, FirstEpoch, get_rule
from playerfl_core.fl.units import get_params, param_names, prefix, unit_names

RULE_NAME = re.compile(r"^playerfl-(\w+)$")
GRAD = "grad/"
"""Prefix of the gradient tensors a client uploads for a rule that needs them."""
FISHER = "fisher/"
"""Prefix of the diagonal-Fisher tensors a client uploads for a rule that needs them."""


def rule_variant_name(rule: str) -> str:
    """The results-table name of PLayer-FL with split rule ``rule`` (``playerfl`` for the
    paper's)."""
    return "playerfl" if rule == "paper" else f"playerfl-{rule}"


def parse_rule_variant(name: str) -> str | None:
    """The rule of a ``playerfl-<rule>`` name, else None."""
    match = RULE_NAME.match(str(name))
    return match.group(1) if match and match.group(1) in RULES else None


class PrefixFederation(Algorithm):
    """Shared machinery: average the first ``p`` units, keep the rest local."""

    deploys = "the client's own model: the federated prefix (units 1..p) plus its local units"
    client_attributes = ("p", "rule_inputs")
    rule_inputs: tuple[str, ...] = ()
    """What the split rule asks the clients to upload once, in round 0 (empty otherwise)."""

    def setup(self, run):
        self.p = None
        self.rule_inputs = ()

    def shared_units(self, run, client, rnd):
        return prefix(client.model, self.p)

    def report(self, run, client, rnd):
        """Until the split is chosen: the client's per-unit sensitivities (L numbers)."""
        if self.p is not None:
            return {}
        return federation_sensitivity(client.model, client.x["train"], client.y["train"])

    def upload(self, run, client, rnd):
        """The rule's one extra upload when it asks (:attr:`rule_inputs`): every parameter,
        the gradient of the mean training loss (``grad/<name>``) and the diagonal empirical
        Fisher (``fisher/<name>``) if the rule needs them."""
        if self.p is not None or not getattr(self, "rule_inputs", ()):
            return super().upload(run, client, rnd)
        model = client.model
        out = get_params(model, param_names(model, unit_names(model)))
        if "grads" in self.rule_inputs:
            grads = full_gradient(model, client.x["train"], client.y["train"])
            out.update({GRAD + n: g.detach().clone() for n, g in grads.items()})
        if "fisher" in self.rule_inputs:
            fisher = diagonal_fisher(model, client.x["train"], client.y["train"])
            out.update({FISHER + n: f.clone() for n, f in fisher.items()})
        return out

    def record_split(self, run, p: int) -> None:
        self.p = p
        run.info["split_p"] = p
        run.info["federated_units"] = list(prefix(run.template, p))
        run.log(SERVER, 0, "server", "split_p", p)


class PLayerFL(PrefixFederation):
    name = "playerfl"
    shares = (
        "units 1..p, with p chosen after the first epoch from the clients' sensitivities "
        "(one number per layer unit, once)"
    )
    key_hyperparameter = "threshold"
    key_default_text = "1 (the paper's rule; another rule has its own)"
    """The default as the book's table of algorithms shows it (``threshold=None``: the rule's)."""
    paper = "Elhussein & Gürsoy, 2025"

    @classmethod
    def defaults(cls):
        return {"threshold": None, "rule": "paper"}

    @classmethod
    def valid(cls):
        return {"threshold": optional(at_least(0)), "rule": one_of(*RULES)}

    def __init__(self, **hyperparameters):
        super().__init__(**hyperparameters)
        self.name = rule_variant_name(self.rule)

    def server_step(self, run, rnd):
        if self.p is None:
            self.record_split(run, self.choose(run, self.threshold, self.rule))
        super().server_step(run, rnd)

    def choose(self, run, threshold: float | None = None, rule: str = "paper") -> int:
        """The split of ``rule`` (threshold: the rule's default when None) from what the clients
        report after their first epoch: their sensitivities (logged, as the paper's rule reads
        them) and, for rules that need them, one upload of parameters and gradients."""
        per_client = self.sensitivity_reports(run)
        split_rule = get_rule(rule)
        params = grads = fisher = None
        if split_rule.needs:
            self.rule_inputs = split_rule.needs
            try:
                uploads = run.link.uploads(0)
            finally:
                self.rule_inputs = ()

            def part(prefix):
                return {
                    c: {n.removeprefix(prefix): v for n, v in up.items() if n.startswith(prefix)}
                    for c, up in uploads.items()
                }

            params = {
                c: {n: v for n, v in up.items() if not n.startswith((GRAD, FISHER))}
                for c, up in uploads.items()
            }
            grads = part(GRAD) if "grads" in split_rule.needs else None
            fisher = part(FISHER) if "fisher" in split_rule.needs else None
        state = FirstEpoch(
            units=tuple(unit_names(run.template)),
            weights=run.weights,
            sensitivities=per_client,
            init={n: v.detach() for n, v in run.template.named_parameters()} if params else None,
            params=params,
            grads=grads,
            fisher=fisher,
        )
        result = split_rule(state, threshold)
        if rule != "paper":
            run.info["split_rule"] = {"rule": rule, result.quantity: result.values}
            for unit, value in result.values.items():
                run.log(SERVER, 0, "server", f"{result.quantity}/{unit}", value)
        return result.p

    @staticmethod
    def sensitivity_reports(run) -> dict:
        """The clients' first-epoch sensitivities (logged per client and pooled on the server);
        a non-finite pooled value stops the run as diverged."""
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
        return per_client
