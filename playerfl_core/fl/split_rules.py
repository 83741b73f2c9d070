"""Split rules as a family: what the clients can compute after their first local epoch → p.

A **split rule** reads the federation's state after the first local epoch (:class:`FirstEpoch`)
and returns the number p of leading layer units to federate, with the per-unit quantity it
used (:class:`RuleResult`). PLayer-FL runs any of them (``get_algorithm("playerfl",
rule=...)``); the split study recomputes them from a sweep's first epoch, so each rule's regret
is known without training again.

The rules (:data:`RULES`; ``playerfl rules`` lists them with their cost):

* ``paper``: the paper's rule. s_k pooled over clients (training-size weighted mean), then the
  first relative rise of the cumulative curve above t (default 1); p ∈ 1..L−1.
  ``paper_median`` and ``paper_geomean`` pool by the median or the geometric mean.
* ``cost``: the **first-order cost of averaging**. Replacing client c's units 1..p by the
  clients' weighted mean θ̄ changes its training loss by Σ_{k≤p} g_{c,k}·(θ̄_k − θ_{c,k}) to first
  order (chapter 03a measures how well this tracks the real change). The rule divides the
  clients' weighted mean of that sum by the first-order loss the first epoch gained,
  Σ_c w_c g_c·(θ_0 − θ_c) over all units, and federates units while this share stays ≤ τ;
  p ∈ 0..L.
* ``cost2``: the **second-order cost of averaging**: the same share with the curvature term
  ½ Σ_i F_{c,i} (θ̄_i − θ_{c,i})² added to each client's cost, F_c the diagonal empirical
  Fisher at θ_c (:func:`~playerfl_core.fl.sensitivity.diagonal_fisher`). The term is ≥ 0, so at
  the same τ it federates no more units than ``cost``.
* ``disagreement``: how much the clients' first-epoch updates disagree, per unit:
  D_k = Σ_c w_c ‖θ_{c,k} − θ̄_k‖² / Σ_c w_c ‖θ_{c,k} − θ_{0,k}‖², the share of the update that is
  client-specific (0: every client moved the same way; near 1 − 1/K: unrelated moves). Units are
  federated while D_k ≤ τ; p ∈ 0..L.

Each rule's default threshold is the one its pre-registration fixed on the development
federations (:mod:`playerfl_core.study.preregistration` holds the procedure and a test
recomputes the values). Quantities are computed in float64.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import torch

from playerfl_core.fl.sensitivity import (
    DEFAULT_THRESHOLD,
    choose_split,
    pooled_sensitivities,
)
from playerfl_core.fl.units import unit_of


@dataclass(frozen=True)
class FirstEpoch:
    """The federation after every client's first local epoch from the common start θ_0.

    ``sensitivities``: per client, s_k per unit (the paper's report, L numbers each);
    ``params`` / ``grads``: per client, every parameter θ_c and the gradient of its mean
    training loss at θ_c; ``fisher``: the diagonal empirical Fisher at θ_c (only rules that
    need them ask the clients for them); ``init``: θ_0, which the server knows; ``weights``:
    training shares.
    """

    units: tuple[str, ...]
    weights: Mapping[int, float]
    sensitivities: Mapping[int, Mapping[str, float]]
    init: Mapping[str, torch.Tensor] | None = None
    params: Mapping[int, Mapping[str, torch.Tensor]] | None = None
    grads: Mapping[int, Mapping[str, torch.Tensor]] | None = None
    fisher: Mapping[int, Mapping[str, torch.Tensor]] | None = None

    def need(self, what: str, rule: str) -> None:
        if getattr(self, what) is None:
            raise ValueError(
                f"The split rule {rule!r} needs the clients' {what} after the first epoch; this "
                "FirstEpoch has none (build it with playerfl_core.study.split_rules_table."
                "first_epoch_state, or run PLayer-FL, which asks the clients for them)."
            )


@dataclass(frozen=True)
class RuleResult:
    """A rule's split and the per-unit quantity it read (named by ``quantity``)."""

    p: int
    quantity: str
    values: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class SplitRule:
    """One rule of the family: the per-unit quantity it measures, how it turns the quantity
    into p at a threshold, what it needs from the clients and what that costs."""

    name: str
    summary: str
    quantity: str
    needs: tuple[str, ...]
    """Client inputs beyond the paper's sensitivities: ``"params"``, ``"grads"``,
    ``"fisher"``."""
    default_threshold: float
    measure: Callable[[FirstEpoch], dict[str, float]]
    split: Callable[[list[float], float], int]
    """p from the quantity's values in unit order and the threshold (re-thresholding a stored
    table needs only this)."""
    range: str
    """The splits the rule can pick."""

    def cost(self) -> str:
        """What the rule costs on top of the first local epoch, in words."""
        uploads = {
            (): "L numbers per client (its sₖ), once",
            ("params",): "one full model per client, once (the size of FedAvg's round-0 upload)",
            ("params", "grads"): "two full models per client (parameters and training-loss "
            "gradient), once, plus one pass over the client's training data",
            ("params", "grads", "fisher"): "three full models per client (parameters, "
            "training-loss gradient and diagonal Fisher), once, plus one pass over the client's "
            "training data with per-sample gradients",
        }[self.needs]
        return f"the first local epoch only; uploads {uploads}"

    def check_threshold(self, threshold: float | None) -> float:
        t = self.default_threshold if threshold is None else float(threshold)
        if not (np.isfinite(t) and t >= 0):
            raise ValueError(f"The threshold of split rule {self.name!r} must be ≥ 0, got {t}.")
        return t

    def __call__(self, state: FirstEpoch, threshold: float | None = None) -> RuleResult:
        t = self.check_threshold(threshold)
        for what in self.needs:
            state.need(what, self.name)
        values = self.measure(state)
        return RuleResult(self.split(list(values.values()), t), self.quantity, values)


# -- the paper's rule and its pooling variants ------------------------------------------------
def _pooled(aggregate: str) -> Callable[[FirstEpoch], dict[str, float]]:
    def measure(state: FirstEpoch) -> dict[str, float]:
        pooled = pooled_sensitivities(state.sensitivities, state.weights, aggregate)
        return {u: float(v) for u, v in pooled.items()}

    return measure


# -- rules from the clients' parameters ---------------------------------------------------------
def _unit_sum(values: Mapping[str, float], units) -> dict[str, float]:
    out = dict.fromkeys(units, 0.0)
    for name, v in values.items():
        out[unit_of(name)] += float(v)
    return out


def averaged_params(state: FirstEpoch) -> dict[str, torch.Tensor]:
    """θ̄: the clients' training-share weighted mean of every parameter, in float64."""
    state.need("params", "averaging")
    total = sum(state.weights[c] for c in state.params)
    names = next(iter(state.params.values())).keys()
    return {
        n: sum(state.params[c][n].double() * (state.weights[c] / total) for c in state.params)
        for n in names
    }


def averaging_costs(
    state: FirstEpoch, second_order: bool = False
) -> tuple[dict[str, float], float]:
    """Per unit: Σ_c w_c g_{c,k}·(θ̄_k − θ_{c,k}) (first-order loss change of averaging unit k;
    with ``second_order`` plus ½ Σ_c w_c Σ_{i∈k} F_{c,i} (θ̄_i − θ_{c,i})²), and the first
    epoch's first-order gain Σ_c w_c g_c·(θ_0 − θ_c) over every unit."""
    mean = averaged_params(state)
    total = sum(state.weights[c] for c in state.params)
    cost: dict[str, float] = {}
    gain = 0.0
    for c, theta in state.params.items():
        w, g = state.weights[c] / total, state.grads[c]
        for n, v in theta.items():
            gd, vd = g[n].double(), v.double()
            step = mean[n] - vd
            change = (gd * step).sum()
            if second_order:
                change = change + 0.5 * (state.fisher[c][n].double() * step**2).sum()
            cost[n] = cost.get(n, 0.0) + w * float(change)
            gain += w * float((gd * (state.init[n].double() - vd)).sum())
    return _unit_sum(cost, state.units), gain


def cumulative_cost_share(state: FirstEpoch, second_order: bool = False) -> dict[str, float]:
    """Per unit k: the cost of averaging units 1..k (first order, or with the curvature term)
    as a share of the first epoch's first-order gain (0 everywhere when the epoch gained
    nothing to first order)."""
    costs, gain = averaging_costs(state, second_order)
    share = np.cumsum([costs[u] for u in state.units]) / (gain if gain > 0 else np.inf)
    return dict(zip(state.units, share.tolist(), strict=True))


def cumulative_cost_share_second_order(state: FirstEpoch) -> dict[str, float]:
    return cumulative_cost_share(state, second_order=True)


def update_disagreement(state: FirstEpoch) -> dict[str, float]:
    """D_k = Σ_c w_c ‖θ_{c,k} − θ̄_k‖² / Σ_c w_c ‖θ_{c,k} − θ_{0,k}‖² per unit (0 where nobody
    moved)."""
    mean = averaged_params(state)
    spread: dict[str, float] = {}
    moved: dict[str, float] = {}
    for c, theta in state.params.items():
        w = state.weights[c]
        for n, v in theta.items():
            vd = v.double()
            spread[n] = spread.get(n, 0.0) + w * float(((vd - mean[n]) ** 2).sum())
            moved[n] = moved.get(n, 0.0) + w * float(((vd - state.init[n].double()) ** 2).sum())
    s, m = _unit_sum(spread, state.units), _unit_sum(moved, state.units)
    return {u: s[u] / m[u] if m[u] > 0 else 0.0 for u in state.units}


def leading_at_most(values: list[float], t: float) -> int:
    """The number of leading values ≤ t (0 … len): federate units while the quantity stays
    within the threshold."""
    above = np.flatnonzero(np.asarray(values, dtype=float) > t)
    return int(above[0]) if len(above) else len(values)


# -- the family -----------------------------------------------------------------------------------
def _paper_rule(name: str, summary: str, aggregate: str) -> SplitRule:
    quantity = "sensitivity" if aggregate == "mean" else f"sensitivity_{aggregate}"
    return SplitRule(
        name,
        summary,
        quantity,
        (),
        DEFAULT_THRESHOLD,
        _pooled(aggregate),
        choose_split,
        "1..L−1",
    )


RULES: dict[str, SplitRule] = {
    r.name: r
    for r in (
        _paper_rule(
            "paper",
            "first sharp rise (> t) of the clients' mean cumulative sensitivity (the paper)",
            "mean",
        ),
        _paper_rule("paper_median", "the paper's rule on the per-unit median of the sₖ", "median"),
        _paper_rule(
            "paper_geomean",
            "the paper's rule on the weighted geometric mean of the sₖ",
            "geomean",
        ),
        SplitRule(
            "cost",
            "federate while the first-order cost of averaging units 1..p stays ≤ τ of the "
            "first epoch's first-order gain",
            "cumulative_cost_share",
            ("params", "grads"),
            0.1,
            cumulative_cost_share,
            leading_at_most,
            "0..L",
        ),
        SplitRule(
            "cost2",
            "federate while the second-order cost of averaging units 1..p (diagonal Fisher) "
            "stays ≤ τ of the first epoch's first-order gain",
            "cumulative_cost_share_2nd",
            ("params", "grads", "fisher"),
            0.1,
            cumulative_cost_share_second_order,
            leading_at_most,
            "0..L",
        ),
        SplitRule(
            "disagreement",
            "federate while the client-specific share of each unit's first-epoch update stays ≤ τ",
            "disagreement",
            ("params",),
            0.3,
            update_disagreement,
            leading_at_most,
            "0..L",
        ),
    )
}
"""Every split rule by name; ``paper`` is PLayer-FL's default."""


NEEDS = ((), ("params",), ("params", "grads"), ("params", "grads", "fisher"))
"""What a rule may ask the clients for beyond their sₖ (each priced by :meth:`SplitRule.cost`)."""


def register_rule(rule: SplitRule) -> SplitRule:
    """Add a split rule: PLayer-FL then runs it (``playerfl-<name>``), the rules table scores it
    on a sweep's first epochs without training again, and ``playerfl rules`` lists it.
    Registering the same rule twice is harmless; another rule under a taken name is refused."""
    if not isinstance(rule, SplitRule):
        raise ValueError(
            "register_rule(...): give a playerfl_core.fl.split_rules.SplitRule (name, summary, "
            "quantity, needs, default_threshold, measure, split, range)."
        )
    if rule.needs not in NEEDS:
        raise ValueError(f"split rule {rule.name!r}: needs={rule.needs!r}; choose one of {NEEDS}.")
    if RULES.get(rule.name, rule) is not rule:
        raise ValueError(f"split rule name {rule.name!r} is taken; pick another.")
    RULES[rule.name] = rule
    return rule


def get_rule(name: str) -> SplitRule:
    if name not in RULES:
        raise ValueError(f"Unknown split rule {name!r}. Available: {', '.join(RULES)}.")
    return RULES[name]


def describe_rules() -> list[dict]:
    """One row per rule: name, what it does, the splits it can pick, its default threshold and
    its cost (``playerfl rules``)."""
    return [
        {
            "rule": r.name,
            "decides": r.summary,
            "range": r.range,
            "threshold": r.default_threshold,
            "cost": r.cost(),
        }
        for r in RULES.values()
    ]
