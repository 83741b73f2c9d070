"""Fashion-MNIST (Zalando), training split only, partitioned with Dirichlet label skew.

Sources, in order: decompressed idx files under `<root>/FashionMNIST/raw/` (torchvision's
layout); the Debian package `dataset-fashion-mnist`, decompressed into that folder; a
torchvision download. torchvision 0.29 only reads decompressed files, hence `prepare`.
"""

from __future__ import annotations

import functools
import gzip
import shutil
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from .augment import random_affine_perspective
from .base import DataError, FederatedData
from .partition import dirichlet_label_skew, label_skew, split_clients

DEBIAN_DIR = Path("/usr/share/datasets/fashion-mnist")
FILES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)
MEAN, STD = 0.2860, 0.3530  # the authors' normalisation constants
CLASSES = [
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
]  # fmt: skip

PROFILES = {
    "quick": {"n_clients": 5, "samples_per_client": 400, "alpha": 0.5},
    "paper": {"n_clients": 5, "samples_per_client": 2000, "alpha": 0.5},
}


def raw_dir(root: Path) -> Path:
    return Path(root) / "FashionMNIST" / "raw"


def _have_raw(root: Path) -> bool:
    return all((raw_dir(root) / f).is_file() for f in FILES)


def prepare(root: Path, debian_dir: Path = DEBIAN_DIR) -> str:
    """Decompress the Debian files into `<root>/FashionMNIST/raw/`; idempotent.

    Returns a one-line account of what happened. Raises DataError if neither the raw
    files nor the Debian files exist.
    """
    dest = raw_dir(root)
    if _have_raw(root):
        return f"fmnist: already present in {dest}"
    if not all((debian_dir / f"{f}.gz").is_file() for f in FILES):
        raise DataError(
            f"Fashion-MNIST not found in {dest} nor in {debian_dir}. Install it with "
            f"`apt-get install dataset-fashion-mnist`, or put the four decompressed idx files "
            f"({', '.join(FILES)}) in {dest}, or call load() with network access (torchvision "
            "downloads them)."
        )
    dest.mkdir(parents=True, exist_ok=True)
    for f in FILES:
        if (dest / f).is_file():
            continue
        tmp = dest / f"{f}.part"
        with gzip.open(debian_dir / f"{f}.gz", "rb") as src, open(tmp, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
        tmp.replace(dest / f)
    return f"fmnist: decompressed {len(FILES)} files from {debian_dir} into {dest}"


def _acquire(root: Path) -> str:
    """Make sure the raw files exist; return where they came from (provenance)."""
    if _have_raw(root):
        return f"idx files in {raw_dir(root)}"
    try:
        prepare(root)
        return f"Debian package dataset-fashion-mnist ({DEBIAN_DIR}), unpacked to {raw_dir(root)}"
    except DataError as no_local:
        from torchvision.datasets import FashionMNIST

        try:
            FashionMNIST(str(root), train=True, download=True)
        except Exception as e:  # network errors surface as many exception types
            raise DataError(f"{no_local} (download attempt failed: {e})") from e
        return f"torchvision download into {raw_dir(root)}"


@lru_cache(maxsize=2)
def _read_train(root: str) -> tuple[torch.Tensor, torch.Tensor]:
    from torchvision.datasets import FashionMNIST

    ds = FashionMNIST(root, train=True, download=False)
    data, targets = ds.data, ds.targets
    counts = torch.bincount(targets, minlength=10)
    if data.shape != (60000, 28, 28) or not bool((counts == 6000).all()):
        raise DataError(
            f"unexpected Fashion-MNIST training files in {raw_dir(Path(root))}: images "
            f"{tuple(data.shape)}, class counts {counts.tolist()} (want 60000 images, 6000 per "
            "class). Delete the folder and run python -m data_prep.prepare."
        )
    return data, targets


def load(
    root: Path,
    seed: int,
    n_clients: int = 5,
    samples_per_client: int = 2000,
    alpha: float = 0.5,
    min_per_client: int = 20,
) -> FederatedData:
    """A seeded random subset of the training images, Dirichlet label skew, 64/16/20 splits."""
    root = Path(root)
    origin = _acquire(root)
    data, targets = _read_train(str(root))
    n = n_clients * samples_per_client
    if not 0 < n <= len(targets):
        raise DataError(
            f"n_clients * samples_per_client = {n}; must be between 1 and {len(targets)}"
        )
    rng = np.random.default_rng(seed)
    subset = torch.from_numpy(np.sort(rng.choice(len(targets), size=n, replace=False)))
    x = ((data[subset].float() / 255.0 - MEAN) / STD).unsqueeze(1)
    y = targets[subset].long()
    labels = y.numpy()
    parts = dirichlet_label_skew(labels, n_clients, alpha, rng, min_per_client)
    skew = label_skew(parts, labels)
    return FederatedData(
        name="fmnist",
        clients=split_clients(x, y, parts, rng),
        num_classes=10,
        input_shape=(1, 28, 28),
        model="fmnist_cnn",
        class_names=list(CLASSES),
        source=f"Fashion-MNIST (Xiao, Rasul, Vollgraf 2017; MIT licence), training split; {origin}",
        notes=(
            f"{n} of the 60000 training images ({n_clients} clients x {samples_per_client} on "
            "average), drawn as a seeded random subset (the authors take the first N in stored "
            "order); the official test split is never used, as in the paper. Pixels scaled to "
            f"[0,1] then normalised with mean {MEAN}, std {STD}. Dirichlet(alpha={alpha}) label "
            f"skew (client sizes vary; min {min_per_client} per client, redrawn otherwise), "
            f"label skew (mean TV) {skew:.3f}; per client a shuffled 64/16/20 split. Training "
            "augmentation (the authors' rotation, shift, scale and perspective warp, appendix "
            "§2.2) only when a run sets augment=True; none by default."
        ),
        augmentation=functools.partial(random_affine_perspective, fill=-MEAN / STD),
        params={
            "n_clients": n_clients,
            "samples_per_client": samples_per_client,
            "alpha": alpha,
            "min_per_client": min_per_client,
        },
    )
