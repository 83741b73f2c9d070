"""Name -> dataset module, and the one entry point `load`.

To add a dataset: write `data_prep/<name>.py` with a `PROFILES` dict (profile -> keyword
arguments) and a `load(root, seed, **params) -> FederatedData` function, then add it to
`DATASETS` below.
"""

from __future__ import annotations

import inspect
import numbers
from pathlib import Path

from . import base, cifar10, digits, emnist, fmnist, heart, isic2019, mimic3, sent140, skew
from .base import DataError, FederatedData

DATASETS = {
    "fmnist": fmnist,
    "heart": heart,
    "digits": digits,
    "emnist": emnist,
    "cifar10": cifar10,
    "isic2019": isic2019,
    "sent140": sent140,
    "mimic3": mimic3,
}
PROFILES = ("quick", "standard", "paper")
SIZE_OF = {"quick": "quick", "standard": "quick", "paper": "paper"}
"""Data size of each profile: ``standard`` runs more seeds at the quick sizes."""


def available_datasets() -> list[str]:
    return sorted(DATASETS)


def base_dataset(name: str) -> str:
    """The registered dataset a name builds on: itself, or a heterogeneity variant's base
    (``data_prep.skew``: ``fmnist_alpha0.1``, ``digits_rotate``, ``digits_invert_alpha0.1``).
    Training settings and learning-rate grids are the base's."""
    variant = skew.parse_variant(name)
    return variant.base if variant is not None else name


def load(
    name: str,
    profile: str = "quick",
    seed: int = 0,
    data_root: Path | str | None = None,
    **overrides,
) -> FederatedData:
    """Build the federation `name` at size `profile`; same arguments give identical tensors.

    `overrides` (e.g. `n_clients`, `samples_per_client`, `alpha`) replace the profile's
    values; the accepted keys are the keyword arguments of the dataset module's `load`.
    """
    variant = skew.parse_variant(name)
    if name not in DATASETS and variant is None:
        raise DataError(
            f"unknown dataset {name!r}; available: {', '.join(available_datasets())}, and "
            f"their heterogeneity variants <base>_alpha<a>, <base>_<kind>, <base>_<kind>_alpha<a> "
            f"for base in {skew.IMAGE_BASES}, kind in {tuple(skew.KINDS)}. To add "
            "one, write data_prep/<name>.py with PROFILES and load(root, seed, **params) and "
            "register it in DATASETS in data_prep/registry.py."
        )
    if profile not in PROFILES:
        raise DataError(f"unknown profile {profile!r}; available: {', '.join(PROFILES)}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise DataError(f"seed must be an integer ≥ 0, got {seed!r}")
    module = DATASETS[variant.base if variant is not None else name]
    accepted = [p for p in inspect.signature(module.load).parameters if p not in ("root", "seed")]
    unknown = sorted(set(overrides) - set(accepted))
    if unknown:
        raise DataError(f"{name} does not take {unknown}; it accepts {accepted or 'no overrides'}")
    if variant is not None and variant.alpha is not None and "alpha" in overrides:
        raise DataError(
            f"{name} fixes alpha={variant.alpha:g} in its name; drop the alpha override"
        )
    params = {**module.PROFILES[SIZE_OF[profile]], **overrides}
    root = Path(data_root).expanduser().resolve() if data_root is not None else base.data_root()
    if variant is not None:
        fd = skew.build(variant, module, root, int(seed), params)
    else:
        fd = module.load(root, int(seed), **params)
    fd.params = {"profile": profile, "seed": int(seed), **fd.params}
    return fd
