"""scikit-learn's 8x8 handwritten digits: a tiny image set that ships with scikit-learn.

It needs no download, so it is the dataset every chapter and test can always run on.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from .base import FederatedData
from .federation import Federation
from .partition import dirichlet_label_skew, label_skew, split_clients

PROFILES = {
    "quick": {"n_clients": 5, "alpha": 0.5},
    "paper": {"n_clients": 5, "alpha": 0.5},
}


def load(
    root: Path | None,
    seed: int,
    n_clients: int = 5,
    alpha: float = 0.5,
    min_per_client: int = 20,
) -> FederatedData:
    """All 1797 images, pixel values scaled to [0, 1], Dirichlet(alpha) label skew.

    `root` is unused (the data ship with scikit-learn); it is accepted for a uniform API.
    """
    from sklearn.datasets import load_digits  # deferred: seconds to import, one caller

    bunch = load_digits()
    x = torch.from_numpy((bunch.data / 16.0).astype(np.float32)).reshape(-1, 1, 8, 8)
    labels = bunch.target.astype(np.int64)
    y = torch.from_numpy(labels)
    rng = np.random.default_rng(seed)
    parts = dirichlet_label_skew(labels, n_clients, alpha, rng, min_per_client)
    skew = label_skew(parts, labels)
    return FederatedData(
        name="digits",
        clients=split_clients(x, y, parts, rng),
        num_classes=10,
        input_shape=(1, 8, 8),
        class_names=[str(d) for d in range(10)],
        source="scikit-learn sklearn.datasets.load_digits (UCI Optical Recognition of "
        "Handwritten Digits, test part; 1797 images)",
        notes=(
            f"All 1797 images; pixels 0..16 divided by 16 (no mean/std normalisation). "
            f"Dirichlet(alpha={alpha}) label skew over {n_clients} clients (min "
            f"{min_per_client} samples each, redrawn otherwise), label skew (mean TV) "
            f"{skew:.3f}; per client a shuffled 64/16/20 train/val/test split. Not used in the "
            "paper: a small always-available stand-in for image experiments."
        ),
        params={"n_clients": n_clients, "alpha": alpha, "min_per_client": min_per_client},
    )


FEDERATION = Federation(
    name="digits",
    load=load,
    run_by_default=True,
    model="small_cnn",
    label="Digits",
    color="#7570b3",
    sizes=PROFILES,
    training={
        "quick": {"rounds": 10, "batch_size": 32, "lr": 2e-3, "width": 1.0},
        "paper": {"rounds": 30, "batch_size": 32, "lr": 1e-3, "width": 1.0},
    },
    lr_grid={"quick": (5e-3, 2e-3), "paper": (5e-3, 1e-3, 5e-4, 1e-4)},
    grids={"standard": {"lrs": (1e-2, 5e-3, 2e-3, 1e-3)}},
    analytics={
        "quick": {
            "seeds": 3,
            "rounds": 5,
            "settings": {"hutchinson_probes": 8, "eig_iters": 8, "hessian_samples": 64},
        },
        "paper": {"seeds": 3},
    },
    seconds_per_run=2.0,
    skew_variants=True,
)
"""Not in the paper (no published split): the always-available stand-in for image federations."""
