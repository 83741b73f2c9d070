"""Algorithm registry: name -> class. Every algorithm runs on the same engine and interface."""

from playerfl_core.fl.algorithms.base import Algorithm
from playerfl_core.fl.algorithms.ditto import Ditto
from playerfl_core.fl.algorithms.fedavg import FedAvg
from playerfl_core.fl.algorithms.fedbabu import FedBABU
from playerfl_core.fl.algorithms.fedlama import FedLAMA
from playerfl_core.fl.algorithms.fedlp import FedLP
from playerfl_core.fl.algorithms.fedprox import FedProx
from playerfl_core.fl.algorithms.finetune import FineTune
from playerfl_core.fl.algorithms.local import Local
from playerfl_core.fl.algorithms.pfedla import PFedLA
from playerfl_core.fl.algorithms.pfedme import PFedMe
from playerfl_core.fl.algorithms.playerfl import PLayerFL, parse_rule_variant
from playerfl_core.fl.algorithms.playerfl_random import PLayerFLRandom
from playerfl_core.fl.algorithms.prefix import Prefix, parse_prefix_name
from playerfl_core.fl.split_rules import RULES

ALGORITHMS: dict[str, type[Algorithm]] = {
    cls.name: cls
    for cls in (
        Local,
        FedAvg,
        FedProx,
        PFedMe,
        Ditto,
        FineTune,
        FedBABU,
        FedLP,
        FedLAMA,
        PFedLA,
        PLayerFL,
        PLayerFLRandom,
    )
}
"""In the authors' order (appendix §1.2); ``finetune`` is the authors' "LocalAdaptation"."""

FAMILIES: dict[str, type[Algorithm]] = {Prefix.name: Prefix}
"""Algorithms that need a hyper-parameter to exist (not part of 'all'): ``prefix`` with its
split p, named ``prefix_p{p}`` in results tables and grids."""


def describe_algorithms(names=None) -> list[dict]:
    """One row per algorithm (default: every registered one, in order): what each client shares,
    which model it deploys, the key hyper-parameter with its default, and the paper. Read from
    the classes' declarative attributes, so the book's table cannot drift from the code."""
    rows = []
    for name in names if names is not None else ALGORITHMS:
        if name not in ALGORITHMS:
            raise ValueError(f"Unknown algorithm {name!r}. Available: {', '.join(ALGORITHMS)}.")
        cls = ALGORITHMS[name]
        key = cls.key_hyperparameter
        if key is not None and key not in cls.defaults():
            raise ValueError(
                f"{name}: key_hyperparameter {key!r} is not one of its hyper-parameters "
                f"{sorted(cls.defaults())}."
            )
        rows.append(
            {
                "algorithm": name,
                "shares": cls.shares,
                "deploys": cls.deploys,
                "key_hyperparameter": key,
                "default": getattr(cls, "key_default_text", None)
                or (cls.defaults()[key] if key is not None else None),
                "paper": cls.paper,
            }
        )
    return rows


def is_algorithm(name: str) -> bool:
    """True for a name :func:`get_algorithm` accepts without extra hyper-parameters."""
    return (
        name in ALGORITHMS
        or parse_prefix_name(name) is not None
        or parse_rule_variant(name) is not None
    )


def get_algorithm(name: str, **hyperparameters) -> Algorithm:
    """Instantiate an algorithm by name, with hyper-parameter overrides.

    ``prefix_p{p}`` (e.g. ``prefix_p2``) names the prefix federation at split p, so a grid can
    refer to every run of a split sweep by a plain string; ``prefix`` needs ``p=...``.
    ``playerfl-<rule>`` (e.g. ``playerfl-disagreement``) is PLayer-FL with another split rule
    (:mod:`playerfl_core.fl.split_rules`).
    """
    if not isinstance(name, str):
        raise TypeError(
            f"get_algorithm takes an algorithm's name (a str, e.g. 'fedavg'), got "
            f"{type(name).__name__} {name!r}."
        )
    if parse_prefix_name(name) is not None:
        return Prefix(p=parse_prefix_name(name), **hyperparameters)
    if parse_rule_variant(name) is not None:
        return PLayerFL(rule=parse_rule_variant(name), **hyperparameters)
    if name in FAMILIES:
        return FAMILIES[name](**hyperparameters)
    if name not in ALGORITHMS:
        raise ValueError(
            f"Unknown algorithm {name!r}. Available: {', '.join(ALGORITHMS)}, prefix_p<p>, "
            f"playerfl-<rule> (rules: {', '.join(r for r in RULES if r != 'paper')}) (or 'all' "
            "on the command line)."
        )
    return ALGORITHMS[name](**hyperparameters)


__all__ = [
    "ALGORITHMS",
    "FAMILIES",
    "Algorithm",
    "describe_algorithms",
    "get_algorithm",
    "is_algorithm",
]
