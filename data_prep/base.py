"""Containers and file helpers shared by every dataset module.

Every loader returns a :class:`FederatedData`: a list of clients, each holding ready-made
train/val/test tensors on the CPU. Keeping the contract this plain lets the engine stay
dataset-agnostic and lets a reader add a dataset by writing one function.
"""

from __future__ import annotations

import hashlib
import os
import urllib.error
import urllib.request
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import torch

SPLITS = ("train", "val", "test")
REPO_ROOT = Path(__file__).resolve().parent.parent


class DataError(RuntimeError):
    """Bad or missing data; the message says what is wrong and how to fix it."""


def data_root() -> Path:
    """Directory holding the raw data files.

    `PLAYERFL_DATA` wins; otherwise `<repo root>/data`, so notebooks executed from
    `chapters/` find the same files as scripts run from the repository root.
    """
    env = os.environ.get("PLAYERFL_DATA")
    if not env:
        return REPO_ROOT / "data"
    path = Path(env).expanduser().resolve()
    if path.exists() and not path.is_dir():
        raise DataError(
            f"PLAYERFL_DATA={env!r} is a file, not a folder; set PLAYERFL_DATA to the data "
            "folder, or unset it to use <repo>/data."
        )
    return path


@dataclass
class ClientData:
    """One silo's data, already split, so every algorithm sees identical splits."""

    name: str
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_val: torch.Tensor
    y_val: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor

    def split(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        """`(x, y)` of split `name` ("train", "val" or "test")."""
        if name not in SPLITS:
            raise ValueError(f"unknown split {name!r}; expected one of {SPLITS}")
        return getattr(self, f"x_{name}"), getattr(self, f"y_{name}")

    @property
    def n_train(self) -> int:
        """Number of training samples (the FedAvg aggregation weight)."""
        return int(self.y_train.shape[0])

    def sizes(self) -> dict[str, int]:
        """Samples per split, e.g. `{"train": 256, "val": 64, "test": 80}`."""
        return {s: int(self.split(s)[1].shape[0]) for s in SPLITS}


@dataclass
class FederatedData:
    """A federation: clients plus what a model and a reader need to know about them.

    Construction validates the tensors (dtypes, shapes, label range, non-empty splits), so
    downstream code can trust any instance it receives.
    """

    name: str
    clients: list[ClientData]
    num_classes: int
    input_shape: tuple[int, ...]
    class_names: list[str]
    model: str = ""
    """The model-zoo architecture; "" until ``registry.load`` fills in the declaration's."""
    source: str = ""
    notes: str = ""
    params: dict = field(default_factory=dict)
    focal_loss: dict | None = None
    """The authors' focal-loss parameters for this dataset (``{"gamma", "alpha"}``, reference
    §4.1), used when a run asks for ``loss="focal"``; None: the authors trained with plain
    cross-entropy."""
    augmentation: Callable[[torch.Tensor, torch.Generator], torch.Tensor] | None = None
    """The authors' training-time augmentation (``augment(x_batch, generator)``, on the batch's
    device), used when a run asks for ``augment=True``; None: they had none."""
    model_args: dict = field(default_factory=dict)
    """What the model needs from the data beyond shapes (the model zoo's ``model_for`` passes
    it on): a text federation's word embeddings and position-table size. Empty for the image
    and tabular federations."""

    def __post_init__(self) -> None:
        self.input_shape = tuple(int(d) for d in self.input_shape)
        check_clients(self.clients, self.num_classes, self.input_shape)
        if len(self.class_names) != self.num_classes:
            raise DataError(
                f"{self.name}: {len(self.class_names)} class names for {self.num_classes} classes"
            )
        check_classes(self.name, self.clients, self.class_names)

    @property
    def n_clients(self) -> int:
        return len(self.clients)

    def summary(self):
        """Per-client table (sizes and training label counts) for the book."""
        rows = []
        for c in self.clients:
            counts = torch.bincount(c.y_train, minlength=self.num_classes).tolist()
            rows.append(
                {"client": c.name, **c.sizes(), **dict(zip(self.class_names, counts, strict=True))}
            )
        return pd.DataFrame(rows).set_index("client")


INPUT_SCALE_WARNING = 1e6
"""Inputs larger than this in absolute value draw a warning: no loader of the book produces
them, and they make any learning rate diverge."""


def check_clients(
    clients: list[ClientData], num_classes: int, input_shape: tuple[int, ...]
) -> None:
    """Raise DataError for unusable clients; warn for merely awkward ones.

    An empty split breaks training or evaluation outright, so it is an error. A training
    split with a single class is legal (the engine must cope; it happens under strong label
    skew) but usually worth knowing about, so it only warns.
    """
    if not clients:
        raise DataError("a federation needs at least one client")
    if num_classes < 2:
        raise DataError(
            f"a federation needs at least 2 classes, got num_classes = {num_classes}: with one "
            "class every prediction is right and macro-F1 is 1.0 whatever the model learns"
        )
    if len(clients) == 1:
        warnings.warn(
            f"the federation has one client ({clients[0].name!r}): nothing is shared, so every "
            "algorithm trains Local; use at least two clients to compare federated methods",
            stacklevel=3,
        )
    names = [c.name for c in clients]
    if len(set(names)) != len(names):
        raise DataError(f"client names must be unique, got {names}")
    for c in clients:
        for s in SPLITS:
            x, y = c.split(s)
            where = f"client {c.name!r}, split {s!r}"
            if y.numel() == 0:
                raise DataError(
                    f"{where} is empty; use fewer clients, more samples per client, or a larger "
                    "Dirichlet alpha"
                )
            if x.dtype != torch.float32 or y.dtype != torch.int64:
                raise DataError(f"{where}: need float32 x and int64 y, got {x.dtype}, {y.dtype}")
            if tuple(x.shape[1:]) != input_shape or x.shape[0] != y.shape[0] or y.ndim != 1:
                raise DataError(
                    f"{where}: x {tuple(x.shape)} / y {tuple(y.shape)} do not match the "
                    f"per-sample shape {input_shape}"
                )
            if int(y.min()) < 0 or int(y.max()) >= num_classes:
                raise DataError(f"{where}: labels outside 0..{num_classes - 1}")
            finite = torch.isfinite(x)
            if not bool(finite.all()):
                bad = int((~finite).flatten(1).any(1).sum())
                raise DataError(
                    f"{where}: {bad} of {len(x)} samples have NaN or infinite inputs; clean or "
                    "impute them in the loader (training would report a non-finite loss)"
                )
            largest = float(x.abs().max())
            if largest > INPUT_SCALE_WARNING:
                warnings.warn(
                    f"{where}: inputs reach {largest:.3g} in absolute value; standardise them in "
                    "the loader (a diverging run would otherwise be blamed on the learning rate)",
                    stacklevel=3,
                )
        if torch.unique(c.y_train).numel() == 1:
            warnings.warn(
                f"client {c.name!r} has a single class in its training split",
                stacklevel=3,
            )


def check_classes(name: str, clients: list[ClientData], class_names: list[str]) -> None:
    """Raise DataError when every label of the federation, over all clients and splits, is one
    class: every prediction would be right, so macro-F1 and accuracy read 1.0 for every client
    and algorithm whatever is learnt. One class on one client stays legal (label skew)."""
    labels = torch.cat([c.split(s)[1] for c in clients for s in SPLITS]).unique()
    if labels.numel() == 1:
        k = int(labels[0])
        raise DataError(
            f"federation {name!r}: every label of every client and split is class {k} "
            f"({class_names[k]!r}), so every score would be 1.0 whatever the model learns; check "
            "the loader's labels (a constant label column?) or give data with at least two classes."
        )


def sha256sum(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verify_sha256(path: Path | str, expected: str) -> None:
    """Raise DataError unless `path` has SHA-256 `expected` (guards against silent corruption)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path} does not exist")
    actual = sha256sum(path)
    if actual != expected.lower():
        raise DataError(
            f"checksum mismatch for {path.name} ({path}): expected sha256 {expected}, got "
            f"{actual}. Delete the file and fetch it again (python -m data_prep.prepare)."
        )


def download(url: str, dest: Path | str, sha256: str, timeout: float = 30.0) -> Path:
    """Fetch `url` to `dest`, verified; a partial or corrupt file never lands at `dest`.

    Writes to a temporary name in the same directory, checks the hash, then renames
    atomically.
    """
    dest = Path(dest)
    tmp = dest.with_name(dest.name + ".part")
    check_data_paths(dest.name, [dest, tmp])
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r, open(tmp, "wb") as f:
            while chunk := r.read(1 << 20):
                f.write(chunk)
    except (urllib.error.URLError, OSError, TimeoutError) as e:
        tmp.unlink(missing_ok=True)
        raise DataError(
            f"could not download {url} ({e}). Without network access, place the file at {dest}."
        ) from e
    try:
        verify_sha256(tmp, sha256)
    except DataError as e:
        tmp.unlink(missing_ok=True)
        raise DataError(f"downloaded {url}: {e}") from None
    os.replace(tmp, dest)
    return dest


def check_data_paths(dataset: str, paths) -> None:
    """Raise DataError when something other than a file (a folder, a device, a pipe) stands
    where a data file goes: reading, copying or renaming onto it would fail half-way (and leave
    a ``.part`` file behind) or read the wrong thing."""
    for path in map(Path, paths):
        if path.exists() and not path.is_file():
            kind = "a folder" if path.is_dir() else "not a regular file"
            fix = f"rm -r {path}" if path.is_dir() else f"rm {path}"
            raise DataError(
                f"{dataset}: {path} is {kind}, but the data file goes there; remove it ({fix}) "
                "and put the file there, or run python -m data_prep.prepare to fetch it."
            )


def md5sum(path: Path) -> str:
    """MD5 of a file: the digest torchvision publishes for the EMNIST and CIFAR archives."""
    h = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def missing_files(name: str, folder: Path, files: list[str], how: str) -> DataError:
    """The error a loader raises when raw files are absent: which, where, how to get them."""
    try:
        check_data_paths(name, [Path(folder) / f for f in files])
    except DataError as err:
        return err
    absent = [f for f in files if not (Path(folder) / f).exists()]
    return DataError(
        f"{name}: missing {', '.join(absent) or ', '.join(files)} in {folder} "
        f"(set $PLAYERFL_DATA or pass data_root to change the data folder). {how}"
    )


def check_complete(path: Path, dataset: str) -> None:
    """Raise DataError when a plain-text file does not end with a newline: a download or copy
    that stopped early leaves a cut last line that a CSV parser would silently accept."""
    path = Path(path)
    if path.suffix == ".gz":
        return  # gzip's own end-of-stream check catches truncation when reading
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        if f.tell() == 0:
            raise DataError(f"{dataset}: {path} is empty; copy it again")
        f.seek(-1, os.SEEK_END)
        if f.read(1) != b"\n":
            raise DataError(
                f"{dataset}: {path} does not end with a newline: it is truncated; copy it again"
            )
