"""Name -> dataset module, and the one entry point `load`.

To add a dataset: write `data_prep/<name>.py` with a `PROFILES` dict (profile -> keyword
arguments) and a `load(root, seed, **params) -> FederatedData` function, then add it to
`DATASETS` below.
"""

from __future__ import annotations

import inspect
from pathlib import Path

from . import base, digits, fmnist, heart
from .base import DataError, FederatedData

DATASETS = {"fmnist": fmnist, "heart": heart, "digits": digits}
PROFILES = ("quick", "standard", "paper")
SIZE_OF = {"quick": "quick", "standard": "quick", "paper": "paper"}
"""Data size of each profile: ``standard`` runs more seeds at the quick sizes."""


def available_datasets() -> list[str]:
    return sorted(DATASETS)


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
    if name not in DATASETS:
        raise DataError(
            f"unknown dataset {name!r}; available: {', '.join(available_datasets())}. To add "
            "one, write data_prep/<name>.py with PROFILES and load(root, seed, **params) and "
            "register it in DATASETS in data_prep/registry.py."
        )
    if profile not in PROFILES:
        raise DataError(f"unknown profile {profile!r}; available: {', '.join(PROFILES)}")
    module = DATASETS[name]
    accepted = [p for p in inspect.signature(module.load).parameters if p not in ("root", "seed")]
    unknown = sorted(set(overrides) - set(accepted))
    if unknown:
        raise DataError(f"{name} does not take {unknown}; it accepts {accepted or 'no overrides'}")
    params = {**module.PROFILES[SIZE_OF[profile]], **overrides}
    root = Path(data_root).expanduser().resolve() if data_root is not None else base.data_root()
    fd = module.load(root, int(seed), **params)
    fd.params = {"profile": profile, "seed": int(seed), **fd.params}
    return fd
