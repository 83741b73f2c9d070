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
from .base import ClientData, DataError, FederatedData, check_data_paths, sha256sum
from .federation import Federation
from .partition import (
    authors_dirichlet,
    authors_split,
    check_protocol,
    dirichlet_label_skew,
    label_skew,
    split_clients,
)

DEBIAN_DIR = Path("/usr/share/datasets/fashion-mnist")
FILES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)
GZ_MD5 = {
    "train-images-idx3-ubyte": "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
    "train-labels-idx1-ubyte": "25c81989df183df01b3e8a0aad5dffbe",
    "t10k-images-idx3-ubyte": "bef4ecab320f06d8554ea6380940ec79",
    "t10k-labels-idx1-ubyte": "bb300cfdad3c16e7a12a480ee83cd310",
}
"""MD5 of the four ``.gz`` files as published by Zalando (github.com/zalandoresearch/
fashion-mnist, "Get the Data"); torchvision checks them when it downloads. Debian's
``dataset-fashion-mnist`` recompresses the files, so its ``.gz`` bytes (not their contents)
differ; what is read is checked by :data:`RAW_SHA256`."""
RAW_SHA256 = {
    "train-images-idx3-ubyte": "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",
    "train-labels-idx1-ubyte": "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",
    "t10k-images-idx3-ubyte": "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
    "t10k-labels-idx1-ubyte": "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
}
"""SHA-256 of the decompressed idx files, the bytes actually read: the contents of the
published archives (the same values are recorded independently by other public projects
for the archives matching Zalando's MD5s; Debian's package decompresses to exactly these)."""
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
    check_data_paths("fmnist", [dest / f for f in FILES] + [dest / f"{f}.part" for f in FILES])
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
        try:
            with gzip.open(debian_dir / f"{f}.gz", "rb") as src, open(tmp, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
        except (OSError, EOFError) as err:
            tmp.unlink(missing_ok=True)
            raise DataError(
                f"cannot decompress {debian_dir / f'{f}.gz'} ({err}); reinstall it with "
                "`apt-get install --reinstall dataset-fashion-mnist`"
            ) from err
        try:
            check_file(tmp, f)
        except DataError:
            tmp.unlink(missing_ok=True)
            raise
        tmp.replace(dest / f)
    return f"fmnist: decompressed {len(FILES)} files from {debian_dir} into {dest}"


def _acquire(root: Path) -> str:
    """Make sure the raw files exist; return where they came from (provenance)."""
    check_data_paths("fmnist", [raw_dir(root) / f for f in FILES])
    if _have_raw(root):
        return f"idx files in {raw_dir(root)}"
    try:
        prepare(root)
        return f"Debian package dataset-fashion-mnist ({DEBIAN_DIR}), unpacked to {raw_dir(root)}"
    except DataError as no_local:
        from torchvision.datasets import FashionMNIST  # deferred: seconds to import, files only

        try:
            FashionMNIST(str(root), train=True, download=True)
        except Exception as e:  # network errors surface as many exception types
            raise DataError(f"{no_local} (download attempt failed: {e})") from e
        return f"torchvision download into {raw_dir(root)}"


def check_file(path: Path, name: str) -> None:
    """DataError unless ``path`` holds the published contents of idx file ``name``."""
    path = Path(path)
    actual = sha256sum(path)
    if actual != RAW_SHA256[name]:
        raise DataError(
            f"Fashion-MNIST file {path} is corrupt or truncated ({path.stat().st_size} bytes; "
            f"sha256 {actual}, expected {RAW_SHA256[name]}). Delete it and run "
            "`python -m data_prep.prepare` (or let torchvision download it again)."
        )


def check_raw(root: Path) -> None:
    """Verify the four decompressed idx files (each once per process while unchanged)."""
    for f in FILES:
        path = raw_dir(root) / f
        stat = path.stat()
        _check_cached(str(path), f, stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=16)
def _check_cached(path: str, name: str, size: int, mtime_ns: int) -> None:
    check_file(Path(path), name)


@lru_cache(maxsize=2)
def _read_train(root: str) -> tuple[torch.Tensor, torch.Tensor]:
    from torchvision.datasets import FashionMNIST  # deferred: seconds to import, files only

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


@lru_cache(maxsize=2)
def _read_test(root: str) -> tuple[torch.Tensor, torch.Tensor]:
    from torchvision.datasets import FashionMNIST  # deferred: seconds to import, files only

    ds = FashionMNIST(root, train=False, download=False)
    if ds.data.shape != (10000, 28, 28):
        raise DataError(
            f"unexpected Fashion-MNIST test files in {raw_dir(Path(root))}: images "
            f"{tuple(ds.data.shape)} (want 10000). Delete the folder and run "
            "python -m data_prep.prepare."
        )
    return ds.data, ds.targets


def _subset(rng: np.random.Generator, total: int, n: int) -> np.ndarray:
    """The federation's training images: ``n`` of ``total``, the first draw of ``rng``."""
    return np.sort(rng.choice(total, size=n, replace=False))


def _normalised(images: torch.Tensor) -> torch.Tensor:
    return ((images.float() / 255.0 - MEAN) / STD).unsqueeze(1)


def held_out(
    root: Path, seed: int, n_clients: int = 5, samples_per_client: int = 2000, **_
) -> tuple[torch.Tensor, torch.Tensor]:
    """The images no client of ``load(root, seed, n_clients, samples_per_client)`` holds: the
    rest of the training split and the whole official test split (``data_prep.eval_sets``)."""
    root = Path(root)
    _acquire(root)
    check_raw(root)
    data, targets = _read_train(str(root))
    used = _subset(np.random.default_rng(seed), len(targets), n_clients * samples_per_client)
    rest = torch.from_numpy(np.setdiff1d(np.arange(len(targets)), used))
    test_x, test_y = _read_test(str(root))
    return _normalised(torch.cat([data[rest], test_x])), torch.cat([targets[rest], test_y]).long()


def load(
    root: Path,
    seed: int,
    n_clients: int = 5,
    samples_per_client: int = 2000,
    alpha: float = 0.5,
    min_per_client: int = 20,
    protocol: str = "book",
) -> FederatedData:
    """A seeded random subset of the training images, Dirichlet label skew, 64/16/20 splits.

    ``protocol="authors"``: the authors' pipeline instead (:func:`load_authors`)."""
    check_protocol(protocol)
    root = Path(root)
    origin = _acquire(root)
    check_raw(root)
    data, targets = _read_train(str(root))
    n = n_clients * samples_per_client
    if not 0 < n <= len(targets):
        raise DataError(
            f"n_clients * samples_per_client = {n}; must be between 1 and {len(targets)}"
        )
    if protocol == "authors":
        return load_authors(data[:n], targets[:n], seed, n_clients, alpha, origin)
    rng = np.random.default_rng(seed)
    subset = torch.from_numpy(_subset(rng, len(targets), n))
    x = _normalised(data[subset])
    y = targets[subset].long()
    labels = y.numpy()
    parts = dirichlet_label_skew(labels, n_clients, alpha, rng, min_per_client)
    skew = label_skew(parts, labels)
    return FederatedData(
        name="fmnist",
        clients=split_clients(x, y, parts, rng),
        num_classes=10,
        input_shape=(1, 28, 28),
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


AUTHORS_MIN_CLIENT = 5
"""Fewest samples an authors'-protocol client may hold: their 20 %/20 % split needs five to give
every split a sample (their code sets no minimum and would crash or train on nothing)."""


def load_authors(images, targets, seed: int, n_clients: int, alpha: float, origin: str):
    """The authors' Fashion-MNIST pipeline (reference §2.1-2.2), so their numbers can be
    reproduced: the first N training images in stored order (not a random subset), their
    per-class Dirichlet partition (remainder to the last client, no minimum size;
    :func:`~data_prep.partition.authors_dirichlet` drawn from ``seed``) and their seed-42 split
    of each client. A draw leaving a client with fewer than five images is refused."""
    labels = targets.numpy()
    parts = authors_dirichlet(labels, n_clients, alpha, np.random.default_rng(seed))
    small = [(k + 1, len(p)) for k, p in enumerate(parts) if len(p) < AUTHORS_MIN_CLIENT]
    if small:
        raise DataError(
            f"fmnist (protocol='authors', seed {seed}): the Dirichlet draw leaves clients "
            f"{small} (client, images) with fewer than {AUTHORS_MIN_CLIENT} images, too few for "
            "a train/val/test split; use another seed or protocol='book'."
        )
    x, y = _normalised(images), targets.long()
    clients = []
    for k, part in enumerate(parts):
        tr, va, te = (torch.from_numpy(part[s]) for s in authors_split(len(part)))
        clients.append(ClientData(f"client_{k + 1}", x[tr], y[tr], x[va], y[va], x[te], y[te]))
    n = len(labels)
    return FederatedData(
        name="fmnist",
        clients=clients,
        num_classes=10,
        input_shape=(1, 28, 28),
        class_names=list(CLASSES),
        source=f"Fashion-MNIST (Xiao, Rasul, Vollgraf 2017; MIT licence), training split; {origin}",
        notes=(
            f"The authors' pipeline (reference §2.1-2.2): the first {n} training images in "
            f"stored order; per class a Dirichlet(alpha={alpha}) draw, floor(share x count) "
            "images per client in stored order, the remainder to the last client; per client "
            "one shuffled 64/16/20 split with seed 42. Normalised with mean "
            f"{MEAN}, std {STD}; their augmentation with augment=True."
        ),
        augmentation=functools.partial(random_affine_perspective, fill=-MEAN / STD),
        params={"protocol": "authors", "n_clients": n_clients, "alpha": alpha},
    )


FEDERATION = Federation(
    name="fmnist",
    paper_name="FMNIST",
    load=load,
    run_by_default=True,
    model="cnn3",
    label="Fashion-MNIST",
    color="#ae017e",
    sizes=PROFILES,
    training={
        "quick": {"rounds": 10, "batch_size": 32, "lr": 3e-3, "width": 0.25},
        "paper": {"rounds": 100, "batch_size": 128, "lr": 1e-3, "width": 1.0},
    },
    lr_grid={"quick": (3e-3, 1e-3), "paper": (5e-3, 1e-3, 5e-4, 1e-4)},
    grids={
        "standard": {"lrs": (1e-2, 3e-3, 1e-3, 3e-4)},
        "paper": {"seeds": tuple(range(20))},
    },
    analytics={
        "quick": {
            "seeds": 3,
            "rounds": 3,
            "settings": {"hutchinson_probes": 4, "eig_iters": 4, "hessian_samples": 32},
        },
        "paper": {"seeds": 3},
    },
    reference_splits={"paper_transition": 3, "authors_config": 3},
    hypernetwork=(32, 64),
    authors_training={"augment": True},
    seconds_per_run=8.0,
    skew_variants=True,
    prepare=prepare,
    held_out=held_out,
)
"""Quick: a narrower CNN with the same five units (2-core CPU). Paper: appendix §1.1. Analytics:
the authors' 3 runs (appendix §8.1); quick Hessians on fewer samples and probes. Reference splits:
the authors' hard-coded layer1–3 (§6.11) and the paper's transition layer Conv3 (§8.6)."""
