"""Training settings per dataset and profile.

``quick``: a 2-core CPU in minutes (CI, students): fewer rounds and, for FMNIST, a narrower CNN
with the same five layer units. ``standard``: the quick sizes with enough seeds and learning rates
to decide a comparison (its grid lives in :data:`playerfl_core.experiments.GRIDS`; its results are
computed once and committed). ``paper``: the paper's sizes (appendix §1.1), meant for a GPU.
Data sizes per profile live with each dataset in ``data_prep``.
"""

from __future__ import annotations

from playerfl_core.engine import RunConfig, default_device

PROFILE_NAMES = ("quick", "standard", "paper")
SIZE_OF = {"quick": "quick", "standard": "quick", "paper": "paper"}
"""The sizes (rounds, width, data) each profile trains at: ``standard`` differs from ``quick``
only in how many seeds and learning rates its grid runs, not in what one run is."""

PROFILES: dict[str, dict[str, dict]] = {
    "fmnist": {
        "quick": {"rounds": 10, "batch_size": 32, "lr": 3e-3, "width": 0.25},
        "paper": {"rounds": 100, "batch_size": 128, "lr": 1e-3, "width": 1.0},
    },
    "heart": {
        "quick": {"rounds": 20, "batch_size": 32, "lr": 1e-2, "width": 1.0},
        "paper": {"rounds": 20, "batch_size": 32, "lr": 1e-2, "width": 1.0},
    },
    "digits": {
        "quick": {"rounds": 10, "batch_size": 32, "lr": 2e-3, "width": 1.0},
        "paper": {"rounds": 30, "batch_size": 32, "lr": 1e-3, "width": 1.0},
    },
    # The paper's other five federations (reference §1.1: batch, rounds, default LR). Their
    # quick settings are untried defaults: the files are not on the machine that built the book.
    "emnist": {
        "quick": {"rounds": 10, "batch_size": 32, "lr": 3e-3, "width": 0.25},
        "paper": {"rounds": 75, "batch_size": 128, "lr": 1e-3, "width": 1.0},
    },
    "cifar10": {
        "quick": {"rounds": 10, "batch_size": 32, "lr": 1e-3, "width": 0.25},
        "paper": {"rounds": 100, "batch_size": 128, "lr": 1e-3, "width": 1.0},
    },
    "isic2019": {
        "quick": {"rounds": 10, "batch_size": 32, "lr": 1e-3, "width": 0.25},
        "paper": {"rounds": 60, "batch_size": 128, "lr": 1e-3, "width": 1.0},
    },
    "sent140": {
        "quick": {"rounds": 5, "batch_size": 64, "lr": 1e-3, "width": 1.0},
        "paper": {"rounds": 50, "batch_size": 64, "lr": 1e-3, "width": 1.0},
    },
    "mimic3": {
        "quick": {"rounds": 5, "batch_size": 64, "lr": 1e-4, "width": 1.0},
        "paper": {"rounds": 25, "batch_size": 64, "lr": 1e-4, "width": 1.0},
    },
}

LR_GRIDS: dict[str, dict[str, list[float]]] = {
    "fmnist": {"quick": [3e-3, 1e-3], "paper": [5e-3, 1e-3, 5e-4, 1e-4]},
    "heart": {"quick": [3e-2, 1e-2, 3e-3], "paper": [5e-1, 1e-1, 5e-2, 1e-2, 5e-3]},
    "digits": {"quick": [5e-3, 2e-3], "paper": [5e-3, 1e-3, 5e-4, 1e-4]},
    "emnist": {"quick": [3e-3, 1e-3], "paper": [5e-3, 1e-3, 5e-4, 1e-4]},
    "cifar10": {"quick": [3e-3, 1e-3], "paper": [5e-3, 1e-3, 5e-4]},
    "isic2019": {"quick": [3e-3, 1e-3], "paper": [5e-3, 1e-3, 5e-4, 1e-4]},
    "sent140": {"quick": [1e-3, 1e-4], "paper": [1e-3, 5e-4, 1e-4, 8e-5]},
    "mimic3": {"quick": [1e-3, 1e-4], "paper": [1e-3, 5e-4, 1e-4, 8e-5]},
}
"""Learning rates tried when tuning on validation data (paper grids from appendix §1.1)."""


def make_config(dataset: str, profile: str = "quick", **overrides) -> RunConfig:
    """The :class:`RunConfig` of ``dataset`` under ``profile``, with explicit overrides.

    ``device`` defaults to CUDA when present, else CPU. Unknown dataset or profile names raise
    a ValueError that lists the valid ones.
    """
    from data_prep.registry import base_dataset

    if dataset not in PROFILES and base_dataset(dataset) in PROFILES:
        dataset = base_dataset(dataset)  # a heterogeneity variant trains like its base
    if dataset not in PROFILES:
        raise ValueError(
            f"No training profile for dataset {dataset!r}; known: {sorted(PROFILES)}. "
            "Add one to playerfl_core/profiles.py (or pass rounds/lr/batch_size explicitly)."
        )
    if profile not in PROFILE_NAMES:
        raise ValueError(f"Unknown profile {profile!r}; use one of {PROFILE_NAMES}.")
    settings = {"device": default_device(), **PROFILES[dataset][SIZE_OF[profile]]}
    settings.update({k: v for k, v in overrides.items() if v is not None})
    return RunConfig(**settings)
