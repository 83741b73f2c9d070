"""FedLAMA (Lee et al., 2023): layer-wise adaptive aggregation intervals.

Units whose client copies drift apart little relative to their size are synchronised less
often. Each unit l has an interval τ_l ∈ {τ', φτ'}; unit l is averaged (and sent back) after
rounds r with (r + 1) mod τ_l = 0, otherwise every client keeps training its own copy. At every
synchronisation the server measures the unit's discrepancy d_l = Σ_i w_i‖u_l − x_l^i‖² (u_l the
new average), normalised by the interval and the unit's size. Every φτ' rounds the intervals are
reset as in the paper: sort units by normalised discrepancy (ascending), grow the prefix until
its share of the total discrepancy δ exceeds 1 − λ, λ being its share of the parameters; those
units get φτ', the rest τ'. This follows the paper's code, at the granularity of layer units.
The authors' comparator (appendix §6.9) redistributed the full stale model every round,
discarding the local progress of unsynchronised layers; here it is kept.

FedLAMA is a communication-saving FedAvg, not a personalised method: what it deploys, and what
is scored every round, is the global model, the training-size-weighted average of the clients'
current models over all units (synchronised units are already equal, so they contribute their
common value). Between synchronisations the server could form it at any time; the intervals
only decide what is sent back to the clients to continue training from. Since this average is
the same before and after the synchronisation step, the evaluation timing does not change
FedLAMA's scores.
"""

import torch

from playerfl_core.fl.algorithms.base import Algorithm, integer
from playerfl_core.fl.schema import SERVER
from playerfl_core.fl.units import param_names, set_params, unit_names, unit_sizes

from .fedprox import all_params


class FedLAMA(Algorithm):
    """Base interval τ' = 2 and multiplier φ = 2 (appendix §1.2); τ' = φ = 1 is FedAvg.

    Intervals count rounds (one local epoch each). Clients train on their own copies between
    synchronisations, but every client deploys the global model: the weighted average (training
    sizes) of all clients' current models, all units, every round.
    """

    name = "fedlama"
    client_attributes = ("units", "intervals")
    shares = "every unit, each at its own interval of rounds (set from how far its copies diverge)"
    key_hyperparameter = "tau_base"
    paper = "Lee et al., 2023"
    deploys = (
        "the global model: the training-size-weighted average of all clients' current models "
        "(all units), every round"
    )

    @classmethod
    def defaults(cls):
        return {"tau_base": 2, "phi": 2}

    @classmethod
    def valid(cls):
        return {"tau_base": integer(1), "phi": integer(1)}

    def setup(self, run):
        if (
            int(self.tau_base) != self.tau_base
            or self.tau_base < 1
            or int(self.phi) != self.phi
            or self.phi < 1
        ):
            raise ValueError(
                f"fedlama: tau_base and phi must be integers ≥ 1, got {self.tau_base}, {self.phi}."
            )
        model = run.template
        self.units = unit_names(model)
        self.sizes = unit_sizes(model)
        self.intervals = dict.fromkeys(self.units, int(self.tau_base))
        self.discrepancy = dict.fromkeys(self.units, 0.0)
        self._log_intervals(run, 0)

    def prepare_deployment(self, run, rnd):
        """Every client sends its current model; every client receives their average."""
        current = run.link.uploads(rnd, for_deployment=True)
        run.link.deploy(dict.fromkeys(current, global_average(current, run.weights)))

    def deployment_upload(self, run, client, rnd):
        return all_params(client.model)

    def receive_deployment(self, run, client, values):
        if "global" not in client.state:
            client.state["global"] = run.new_model()
        set_params(client.state["global"], values)

    def deployed_model(self, run, client):
        return client.state["global"]

    def due(self, rnd: int) -> tuple[str, ...]:
        """Units synchronised after round ``rnd``."""
        return tuple(u for u in self.units if (rnd + 1) % self.intervals[u] == 0)

    def shared_units(self, run, client, rnd):
        return self.due(rnd)

    def aggregate(self, run, rnd, uploads):
        updated = super().aggregate(run, rnd, uploads)
        weights = run.weights
        total = sum(weights[cid] for cid in uploads)
        model = run.template
        for u in self.due(rnd):
            names = param_names(model, [u])
            d = (
                sum(
                    weights[cid]
                    * sum(float(((run.global_params[n] - up[n]) ** 2).sum()) for n in names)
                    for cid, up in uploads.items()
                )
                / total
            )
            self.discrepancy[u] = d / (self.intervals[u] * self.sizes[u])
        return updated

    def server_step(self, run, rnd):
        super().server_step(run, rnd)
        if (rnd + 1) % (int(self.phi) * int(self.tau_base)) == 0:
            self.adjust_intervals()
            self._log_intervals(run, rnd + 1)

    def adjust_intervals(self) -> None:
        """The paper's rule: the least-discrepant units covering δ > 1 − λ get φτ'."""
        d, n = self.discrepancy, self.sizes
        total_d = sum(d[u] * n[u] for u in self.units)
        if total_d <= 0:
            return
        total_n = sum(n.values())
        relaxed, acc_d, acc_n = [], 0.0, 0
        for u in sorted(self.units, key=lambda u: d[u]):
            acc_d += d[u] * n[u]
            acc_n += n[u]
            relaxed.append(u)
            if acc_d / total_d > 1 - acc_n / total_n:
                break
        long = int(self.phi) * int(self.tau_base)
        self.intervals = {u: long if u in relaxed else int(self.tau_base) for u in self.units}

    def _log_intervals(self, run, rnd: int) -> None:
        """Intervals in force from round ``rnd`` on."""
        for u, tau in self.intervals.items():
            run.log(SERVER, rnd, "server", f"interval/{u}", tau)


def global_average(models: dict[int, dict[str, torch.Tensor]], weights: dict[int, float]):
    """The weighted average of the clients' models, all parameters. A parameter every client
    holds identically (a unit just synchronised) is copied, so τ' = φ = 1 reproduces FedAvg bit
    for bit."""
    ids = list(models)
    average = {}
    with torch.no_grad():
        for name in models[ids[0]]:
            values = [models[cid][name] for cid in ids]
            if all(torch.equal(v, values[0]) for v in values[1:]):
                average[name] = values[0]
            else:
                average[name] = sum(v * weights[cid] for v, cid in zip(values, ids, strict=True))
    return average
