"""CIFAR-10, training split (all 50 000 images at the paper's size), Dirichlet label skew
(reference §2.4: 5 clients x 10 000, alpha 0.5).

Files, in torchvision's layout: `<root>/cifar-10-batches-py/data_batch_1` ... `data_batch_5`
(the python pickles), or the official archive `<root>/cifar-10-python.tar.gz`, which `prepare`
checks (MD5) and unpacks. What is trusted: each batch file must match the per-file MD5 that
torchvision publishes before it is unpickled; with `verify=False` (for files you made or
edited) that check is skipped and you vouch for the files, but the unpickler still refuses
anything besides plain containers and numpy arrays, so a batch file cannot run code.
"""

from __future__ import annotations

import codecs
import io
import pickle
import tarfile
from pathlib import Path

import numpy as np
import numpy._core.multiarray as multiarray
import torch

from .augment import (
    random_affine_perspective,
    random_colour_jitter,
    random_hflip,
    random_reflect_crop,
)
from .base import DataError, FederatedData, check_data_paths, md5sum, missing_files
from .federation import Federation
from .partition import dirichlet_label_skew, label_skew, split_clients

FOLDER = "cifar-10-batches-py"
BATCH_MD5 = {  # torchvision 0.29's published digests (torchvision/datasets/cifar.py)
    "data_batch_1": "c99cafc152244af753f735de768cd75f",
    "data_batch_2": "d4bba439e000b95fd0a9bffe97cbabec",
    "data_batch_3": "54ebc095f3ab1f0389bbae665268c751",
    "data_batch_4": "634d18415352ddfa80567beed471001a",
    "data_batch_5": "482c414d41f54cd18b22e5b47cb7c3cb",
}
ARCHIVE, ARCHIVE_MD5 = "cifar-10-python.tar.gz", "c58f30108f718f92721af3b95e74349a"
URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
MEAN = (0.4914, 0.4822, 0.4465)  # CIFAR-10's own statistics; the authors used CIFAR-100's
STD = (0.2470, 0.2435, 0.2616)
AUTHORS_MEAN, AUTHORS_STD = (0.5071, 0.4867, 0.4408), (0.2675, 0.2565, 0.2761)
CLASSES = [
    "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck",
]  # fmt: skip
HOW = (
    f"Download {URL} (Krizhevsky 2009; free for research) into the data folder and run "
    f"python -m data_prep.prepare (checks MD5 {ARCHIVE_MD5}, unpacks {FOLDER}/), or let "
    "torchvision download it (torchvision.datasets.CIFAR10(<data root>, download=True))."
)

PROFILES = {
    "quick": {"n_clients": 5, "samples_per_client": 400, "alpha": 0.5},
    "paper": {"n_clients": 5, "samples_per_client": 10000, "alpha": 0.5},
}


class _ArraysOnly(pickle.Unpickler):
    """Unpickles dicts, lists, strings, numbers and numpy arrays; refuses every other global."""

    def find_class(self, module: str, name: str):
        allowed = {
            ("numpy.core.multiarray", "_reconstruct"): multiarray._reconstruct,
            ("numpy._core.multiarray", "_reconstruct"): multiarray._reconstruct,
            ("numpy.core.multiarray", "scalar"): multiarray.scalar,
            ("numpy._core.multiarray", "scalar"): multiarray.scalar,
            ("numpy", "ndarray"): np.ndarray,
            ("numpy", "dtype"): np.dtype,
            ("_codecs", "encode"): codecs.encode,
        }
        if (module, name) not in allowed:
            raise pickle.UnpicklingError(f"refusing global {module}.{name}")
        return allowed[(module, name)]


def prepare(root: Path) -> str:
    """Unpack the training batches from the official archive (MD5 checked); idempotent."""
    root = Path(root)
    dest = root / FOLDER
    check_data_paths("cifar10", [*(dest / f for f in BATCH_MD5), root / ARCHIVE])
    if all((dest / f).is_file() for f in BATCH_MD5):
        return f"cifar10: present in {dest}"
    archive = root / ARCHIVE
    if not archive.is_file():
        raise missing_files("cifar10", dest, list(BATCH_MD5), HOW)
    if md5sum(archive) != ARCHIVE_MD5:
        raise DataError(
            f"cifar10: {archive} has the wrong MD5 (want {ARCHIVE_MD5}, the digest torchvision "
            f"publishes); it is truncated or not the official archive. Delete it and download "
            f"{URL} again."
        )
    try:
        with tarfile.open(archive, "r:gz") as tar:
            members = [tar.getmember(f"{FOLDER}/{f}") for f in BATCH_MD5]
            tar.extractall(root, members=members, filter="data")
    except (tarfile.TarError, KeyError, OSError) as e:
        raise DataError(f"cifar10: cannot unpack {archive}: {e}") from None
    return f"cifar10: unpacked {len(BATCH_MD5)} training batches from {archive} into {dest}"


def read_batch(path: Path, verify: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Images `[N, 3, 32, 32]` uint8 and labels `[N]` of one python batch file."""
    path = Path(path)
    if verify and md5sum(path) != BATCH_MD5[path.name]:
        raise DataError(
            f"cifar10: {path} does not match the official MD5 {BATCH_MD5[path.name]} "
            "(torchvision's); it is corrupted or not the official file. Delete the folder and "
            f"unpack {ARCHIVE} again, or pass verify=False to vouch for files you made."
        )
    try:
        batch = _ArraysOnly(io.BytesIO(path.read_bytes()), encoding="bytes").load()
        batch = {k.decode() if isinstance(k, bytes) else k: v for k, v in batch.items()}
        data = np.asarray(batch["data"], dtype=np.uint8)
        labels = np.asarray(batch["labels"], dtype=np.int64)
        images = data.reshape(len(data), 3, 32, 32)
    except Exception as e:  # any malformed pickle: many exception types
        raise DataError(
            f"cifar10: {path} is not a readable CIFAR python batch ({type(e).__name__}: {e}); "
            f"delete it and unpack {ARCHIVE} again"
        ) from None
    if len(labels) != len(images) or (len(labels) and not 0 <= labels.min() <= labels.max() < 10):
        raise DataError(f"cifar10: {path} has {len(labels)} labels for {len(images)} images or "
                        "labels outside 0..9")  # fmt: skip
    return images, labels


def read_train(root: Path, verify: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """All training batches in order (50 000 images for the official files)."""
    dest = Path(root) / FOLDER
    batches = [read_batch(dest / f, verify) for f in BATCH_MD5]
    return np.concatenate([b[0] for b in batches]), np.concatenate([b[1] for b in batches])


def load(
    root: Path,
    seed: int,
    n_clients: int = 5,
    samples_per_client: int = 10000,
    alpha: float = 0.5,
    min_per_client: int = 20,
    verify: bool = True,
) -> FederatedData:
    """A seeded random subset of the training images (all of them at the paper's size),
    Dirichlet label skew, 64/16/20 splits, CIFAR-10 normalisation."""
    root = Path(root)
    origin = prepare(root)
    images, targets = read_train(root, verify)
    n = n_clients * samples_per_client
    if not 0 < n <= len(targets):
        raise DataError(
            f"n_clients * samples_per_client = {n}; must be between 1 and {len(targets)}"
        )
    rng = np.random.default_rng(seed)
    subset = np.sort(rng.choice(len(targets), size=n, replace=False))
    mean, std = (torch.tensor(v).view(1, 3, 1, 1) for v in (MEAN, STD))
    x = (torch.from_numpy(images[subset]).float() / 255.0 - mean) / std
    labels = targets[subset]
    parts = dirichlet_label_skew(labels, n_clients, alpha, rng, min_per_client)
    skew = label_skew(parts, labels)
    return FederatedData(
        name="cifar10",
        clients=split_clients(x, torch.from_numpy(labels), parts, rng),
        num_classes=10,
        input_shape=(3, 32, 32),
        class_names=list(CLASSES),
        source=f"CIFAR-10 (Krizhevsky 2009), training batches 1-5; {origin}"
        + ("" if verify else "; MD5 check skipped (verify=False): files vouched for by the user"),
        notes=(
            f"{n} of the {len(targets)} training images ({n_clients} clients x "
            f"{samples_per_client} on average), a seeded random subset (all of them when n "
            f"equals the pool; the authors take the first N in stored order). Normalised with "
            f"CIFAR-10's mean {MEAN} and std {STD} (the authors used CIFAR-100's {AUTHORS_MEAN} "
            f"/ {AUTHORS_STD}, reference §2.4, §10 defect 18). Dirichlet(alpha={alpha}) label "
            f"skew (min {min_per_client} per client), label skew (mean TV) {skew:.3f}; per client "
            "a shuffled 64/16/20 split. The paper's CIFAR CNN (§3.2). augment=True: the authors' "
            "training augmentation (§2.4) on the device: random 32 x 32 crop with 4-pixel "
            "reflect padding, horizontal flip (p 0.5), rotation ±15° with shift up to 10 % and "
            "scale 0.9-1.1 (black fill), colour jitter (brightness, contrast, saturation each "
            "0.2, in a random order per image, as torchvision's ColorJitter). Deliberate "
            "differences from their PIL pipeline: rotation and affine are one bilinear "
            "resampling with continuous shifts (theirs: two nearest-neighbour resamplings, "
            "whole-pixel shifts); the jitter uses torchvision's tensor formulas on float "
            "pixels, without rounding to 8 bits; the images are the normalised ones, mapped "
            "back to pixels with the statistics above and renormalised."
        ),
        augmentation=_augment,
        params={
            "n_clients": n_clients,
            "samples_per_client": samples_per_client,
            "alpha": alpha,
            "min_per_client": min_per_client,
            "verify": verify,
        },
    )


def _augment(x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """The CIFAR-10 training augmentation (see the notes of `load`), in the authors' order, on
    the batch's device. It works on pixels in [0, 1], where the affine step's fill 0 is black
    (the normalised black of the stored images) and the jitter's clamping to [0, 1] holds."""
    mean, std = (
        torch.tensor(v, device=x.device, dtype=x.dtype).view(1, 3, 1, 1) for v in (MEAN, STD)
    )
    p = random_reflect_crop(x * std + mean, generator, padding=4)
    p = random_hflip(p, generator)
    p = random_affine_perspective(
        p, generator, degrees=15.0, translate=0.1, scale=(0.9, 1.1), p_perspective=0.0, fill=0.0
    )
    return (random_colour_jitter(p, generator, (0.2, 0.2, 0.2)) - mean) / std


FEDERATION = Federation(
    name="cifar10",
    paper_name="CIFAR",
    load=load,
    model="cnn5_pad2",
    label="CIFAR-10",
    color="#a6761d",
    sizes=PROFILES,
    training={
        "quick": {"rounds": 10, "batch_size": 32, "lr": 1e-3, "width": 0.25},
        "paper": {"rounds": 100, "batch_size": 128, "lr": 1e-3, "width": 1.0},
    },
    lr_grid={"quick": (3e-3, 1e-3), "paper": (5e-3, 1e-3, 5e-4)},
    hypernetwork=(64, 128),
    prepare=prepare,
)
"""Paper sizes, rates and pFedLA sizes: appendix §1.1–1.2. The quick settings are untried
defaults: the files were not on the machine that built the book."""
