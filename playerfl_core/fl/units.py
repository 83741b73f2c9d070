"""Layer units: the vocabulary in which algorithms say what they share.

A unit's parameters are exactly those whose name starts with ``"<unit>."`` (an exact module
prefix, so ``fc1`` never matches ``fc10``).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn


def unit_names(model: nn.Module) -> tuple[str, ...]:
    """Ordered layer units of ``model`` (forward order)."""
    units = getattr(model, "units", ())
    if not units:
        raise ValueError(f"{type(model).__name__} declares no layer units (set `units`).")
    return tuple(units)


def unit_of(param_name: str) -> str:
    """The unit a parameter belongs to: the first component of its name."""
    return param_name.split(".", 1)[0]


def unit_params(model: nn.Module, unit: str) -> dict[str, nn.Parameter]:
    """Parameters of one unit, keyed by their full names."""
    if unit not in unit_names(model):
        raise ValueError(f"Unknown unit {unit!r}; the model's units are {unit_names(model)}.")
    return {n: p for n, p in model.named_parameters() if unit_of(n) == unit}


def param_names(model: nn.Module, units: Iterable[str]) -> list[str]:
    """Names of all parameters belonging to ``units``, in the model's order."""
    wanted = set(units)
    unknown = wanted - set(unit_names(model))
    if unknown:
        raise ValueError(f"Unknown units {sorted(unknown)}; the model has {unit_names(model)}.")
    return [n for n, _ in model.named_parameters() if unit_of(n) in wanted]


def prefix(model: nn.Module, p: int) -> tuple[str, ...]:
    """The first ``p`` units (0 ≤ p ≤ number of units)."""
    units = unit_names(model)
    if not 0 <= p <= len(units):
        raise ValueError(f"Prefix length {p} is outside 0..{len(units)} for units {units}.")
    return units[:p]


def unit_sizes(model: nn.Module) -> dict[str, int]:
    """Number of scalar parameters per unit."""
    return {u: sum(p.numel() for p in unit_params(model, u).values()) for u in unit_names(model)}


@torch.no_grad()
def get_params(model: nn.Module, names: Iterable[str]) -> dict[str, torch.Tensor]:
    """Detached copies of the named parameters (what a client uploads)."""
    params = dict(model.named_parameters())
    return {n: params[n].detach().clone() for n in names}


@torch.no_grad()
def set_params(model: nn.Module, values: dict[str, torch.Tensor]) -> None:
    """Copy ``values`` into the model's parameters in place (no new tensors, no deep copies)."""
    params = dict(model.named_parameters())
    for n, v in values.items():
        params[n].copy_(v)
