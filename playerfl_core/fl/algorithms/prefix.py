"""Prefix federation at a fixed split p: the split sweep's algorithm.

Units 1..p are averaged every round and units p+1..L stay local, from round 0 on. p = 0 is
Local, p = L is FedAvg, and p = the rule's split is PLayer-FL (identical results). Every run also
records the clients' first-epoch sensitivities and the rule's split, as PLayer-FL does, without
acting on them. Sweeping p over
0..L at one learning rate therefore shows what every possible split would have given, which is
the only way to ask whether the rule picked the right one. Each run's ``algorithm`` value in
the results table is ``prefix_p{p}``, so one table holds a whole sweep.
"""

from __future__ import annotations

import re

from playerfl_core.fl.algorithms.playerfl import PLayerFL, PrefixFederation
from playerfl_core.fl.schema import SERVER
from playerfl_core.fl.units import unit_names

NAME_PATTERN = re.compile(r"^prefix_p(\d+)$")
RULE_METRIC = "rule_split_p"
"""Server row of every prefix run: the split PLayer-FL's rule (default t) picks on that seed."""


def prefix_name(p: int) -> str:
    """The results-table ``algorithm`` value of the prefix run at split ``p``."""
    return f"prefix_p{int(p)}"


def parse_prefix_name(name: str) -> int | None:
    """p of a ``prefix_p{p}`` name, else None (so grids can name a sweep run by a string)."""
    match = NAME_PATTERN.match(str(name))
    return int(match.group(1)) if match else None


class Prefix(PrefixFederation):
    """Federate exactly the first ``p`` units; p ∈ 0..L is checked against the model."""

    name = "prefix"
    shares = "units 1..p, for a fixed p"
    key_hyperparameter = "p"
    paper = "none (this book's split sweep)"

    @classmethod
    def defaults(cls):
        return {"p": None}

    def __init__(self, **hyperparameters):
        super().__init__(**hyperparameters)
        if self.p is None:
            raise ValueError(
                "prefix needs the split p (number of federated units, 0..L), e.g. "
                "get_algorithm('prefix', p=2) or the name 'prefix_p2'."
            )
        if isinstance(self.p, bool) or int(self.p) != self.p or self.p < 0:
            raise ValueError(
                f"prefix: p must be an integer in 0..L (L = the model's number of layer "
                f"units), got {self.p!r}."
            )
        self.p = int(self.p)
        self.split = self.p
        self.name = prefix_name(self.p)

    def setup(self, run):
        units = unit_names(run.template)
        if self.split > len(units):
            raise ValueError(
                f"prefix: p = {self.split} is outside the valid range 0..{len(units)} for "
                f"{run.data.name!r}, whose model has {len(units)} layer units {units}."
            )
        self.p = None  # recorded at the first server step, where PLayer-FL records its own

    def server_step(self, run, rnd):
        if self.p is None:
            # What the rule would have chosen, measured exactly as PLayer-FL does on the same
            # first-epoch models (identical for every p): each sweep run carries its seed's
            # rule split and the clients' sensitivities, so a stored sweep needs nothing else.
            if len(unit_names(run.template)) >= 2:  # the rule needs two units
                rule_p = PLayerFL().choose(run)
                run.info["rule_split_p"] = rule_p
                run.log(SERVER, 0, "server", RULE_METRIC, rule_p)
            self.record_split(run, self.split)
        super().server_step(run, rnd)

    def hyperparameters(self) -> dict:
        return {"p": self.split}
