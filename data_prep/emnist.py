"""EMNIST "byclass" (62 classes: digits, upper- and lower-case letters), training split only,
partitioned with Dirichlet label skew (reference §2.3: 5 clients x 3000, alpha 0.5).

Files, in torchvision's layout (`torchvision.datasets.EMNIST(root, split="byclass")` leaves
them there): `<root>/EMNIST/raw/emnist-byclass-train-images-idx3-ubyte` and
`...-train-labels-idx1-ubyte`. `prepare` also unpacks them from NIST's `gzip.zip` placed in that
folder (MD5 verified against the digest torchvision publishes) or from the two `.gz` members.
"""

from __future__ import annotations

import functools
import gzip
import shutil
import zipfile
from pathlib import Path

import numpy as np
import torch

from .augment import random_affine_perspective
from .base import DataError, FederatedData, check_data_paths, md5sum, missing_files
from .federation import Federation
from .idx import read_idx
from .partition import dirichlet_label_skew, label_skew, split_clients

FILES = ("emnist-byclass-train-images-idx3-ubyte", "emnist-byclass-train-labels-idx1-ubyte")
ARCHIVE, ARCHIVE_MD5 = "gzip.zip", "58c8d27c78d21e728a6bc7b3cc06412e"  # torchvision 0.29's
URL = "https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip"
MEAN, STD = 0.1736, 0.3317  # the authors' normalisation constants (reference §2.3)
CLASSES = sorted("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
HOW = (
    f"Get NIST's EMNIST archive {URL} (public; cite Cohen et al. 2017), put {ARCHIVE} in that "
    "folder and run python -m data_prep.prepare (checks MD5 "
    f"{ARCHIVE_MD5}, unpacks the byclass training files), or let torchvision download it "
    "(torchvision.datasets.EMNIST(<data root>, split='byclass', download=True))."
)

PROFILES = {
    "quick": {"n_clients": 5, "samples_per_client": 600, "alpha": 0.5},
    "paper": {"n_clients": 5, "samples_per_client": 3000, "alpha": 0.5},
}


def raw_dir(root: Path) -> Path:
    return Path(root) / "EMNIST" / "raw"


def prepare(root: Path) -> str:
    """Unpack the byclass training files into `<root>/EMNIST/raw/`; idempotent.

    Sources, in order: the files themselves; their `.gz` versions in that folder; NIST's
    `gzip.zip` there (MD5 checked first). Raises DataError naming the files when none exists.
    """
    dest = raw_dir(root)
    parts = [f"{f}{end}" for f in FILES for end in ("", ".gz", ".part", ".gz.part")]
    check_data_paths("emnist", [dest / f for f in (*parts, ARCHIVE)])
    if all((dest / f).is_file() for f in FILES):
        return f"emnist: present in {dest}"
    archive = dest / ARCHIVE
    if not all((dest / f"{f}.gz").is_file() for f in FILES) and archive.is_file():
        if md5sum(archive) != ARCHIVE_MD5:
            raise DataError(
                f"emnist: {archive} has the wrong MD5 (want {ARCHIVE_MD5}, the digest "
                "torchvision publishes); it is truncated or not NIST's archive. Delete it and "
                f"download {URL} again."
            )
        try:
            with zipfile.ZipFile(archive) as z:
                for f in FILES:
                    with z.open(f"gzip/{f}.gz") as src, open(dest / f"{f}.gz.part", "wb") as out:
                        shutil.copyfileobj(src, out, 1 << 20)
                    (dest / f"{f}.gz.part").replace(dest / f"{f}.gz")
        except (zipfile.BadZipFile, KeyError) as e:
            raise DataError(f"emnist: cannot unpack {archive}: {e}") from None
    if not all((dest / f"{f}.gz").is_file() for f in FILES):
        raise missing_files("emnist", dest, list(FILES), HOW)
    for f in FILES:
        tmp = dest / f"{f}.part"
        try:
            with gzip.open(dest / f"{f}.gz", "rb") as src, open(tmp, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
        except (OSError, EOFError) as e:
            tmp.unlink(missing_ok=True)
            raise DataError(f"emnist: {dest / f}.gz is corrupted ({e}); delete it") from None
        tmp.replace(dest / f)
    return f"emnist: unpacked {', '.join(FILES)} into {dest}"


def read_train(root: Path) -> tuple[np.ndarray, np.ndarray]:
    """Images `[N, 28, 28]` (as stored: transposed, like torchvision) and labels `[N]`."""
    dest = raw_dir(root)
    images, labels = read_idx(dest / FILES[0], 3), read_idx(dest / FILES[1], 1)
    if images.shape[1:] != (28, 28) or len(images) != len(labels):
        raise DataError(
            f"emnist: {dest / FILES[0]} holds {images.shape} images for {len(labels)} labels in "
            f"{dest / FILES[1]}; want [N, 28, 28] and N labels. Unpack the original files again."
        )
    if len(labels) and int(labels.max()) >= len(CLASSES):
        raise DataError(
            f"emnist: labels up to {int(labels.max())} in {dest / FILES[1]}; byclass has "
            f"{len(CLASSES)} classes (0..{len(CLASSES) - 1}). Is it another EMNIST split?"
        )
    return images, labels


def load(
    root: Path,
    seed: int,
    n_clients: int = 5,
    samples_per_client: int = 3000,
    alpha: float = 0.5,
    min_per_client: int = 20,
) -> FederatedData:
    """A seeded random subset of the byclass training images, Dirichlet label skew, 64/16/20."""
    root = Path(root)
    origin = prepare(root)
    images, targets = read_train(root)
    n = n_clients * samples_per_client
    if not 0 < n <= len(targets):
        raise DataError(
            f"n_clients * samples_per_client = {n}; must be between 1 and {len(targets)}"
        )
    rng = np.random.default_rng(seed)
    subset = np.sort(rng.choice(len(targets), size=n, replace=False))
    pixels = torch.from_numpy(np.array(images[subset]))
    x = ((pixels.float() / 255.0 - MEAN) / STD).unsqueeze(1)
    labels = np.array(targets[subset]).astype(np.int64)
    y = torch.from_numpy(labels)
    parts = dirichlet_label_skew(labels, n_clients, alpha, rng, min_per_client)
    skew = label_skew(parts, labels)
    return FederatedData(
        name="emnist",
        clients=split_clients(x, y, parts, rng),
        num_classes=len(CLASSES),
        input_shape=(1, 28, 28),
        class_names=list(CLASSES),
        source=f"EMNIST byclass (Cohen, Afshar, Tapson, van Schaik 2017; NIST), training split; "
        f"{origin}",
        notes=(
            f"{n} of the {len(targets)} byclass training images ({n_clients} clients x "
            f"{samples_per_client} on average), a seeded random subset (the authors take the "
            "first N in stored order); images as stored (transposed, as the authors). Pixels "
            f"scaled to [0,1], normalised with mean {MEAN}, std {STD}. Dirichlet(alpha={alpha}) "
            f"label skew (min {min_per_client} per client, redrawn otherwise), label skew (mean "
            f"TV) {skew:.3f}; per client a shuffled 64/16/20 split. The FMNIST CNN with "
            f"{len(CLASSES)} outputs. Augmentation (rotation ±15°, shift, scale, perspective, "
            "reference §2.3) only with augment=True."
        ),
        augmentation=functools.partial(random_affine_perspective, degrees=15.0, fill=-MEAN / STD),
        params={
            "n_clients": n_clients,
            "samples_per_client": samples_per_client,
            "alpha": alpha,
            "min_per_client": min_per_client,
        },
    )


FEDERATION = Federation(
    name="emnist",
    paper_name="EMNIST",
    load=load,
    model="cnn3",
    label="EMNIST",
    color="#e7298a",
    sizes=PROFILES,
    training={
        "quick": {"rounds": 10, "batch_size": 32, "lr": 3e-3, "width": 0.25},
        "paper": {"rounds": 75, "batch_size": 128, "lr": 1e-3, "width": 1.0},
    },
    lr_grid={"quick": (3e-3, 1e-3), "paper": (5e-3, 1e-3, 5e-4, 1e-4)},
    hypernetwork=(32, 64),
    prepare=prepare,
)
"""Paper sizes, rates and pFedLA sizes: appendix §1.1–1.2. The quick settings are untried
defaults: the files were not on the machine that built the book."""
