"""One silo's own data, for a SuperNode that must hold nothing else.

In a deployment each hospital keeps its own records. On one machine the processes recipe plays
the data steward once: it builds the federation (with its pooled preprocessing, e.g. Heart's
training medians and z-score statistics) and writes each silo's part to that silo's own folder:
its train/validation/test tensors and what a model needs to know (architecture, classes, input
shape, the authors' loss and augmentation). A SuperNode whose node config names that folder
(``data-dir``) reads only this file; the raw files of the other silos never reach it.

Each file has a SHA-256 beside it, checked on every read, like every other input of the book.
The files are pickles this machine wrote for itself; never read one from elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from data_prep.base import ClientData, DataError, sha256sum


@dataclass
class SiloData:
    """Silo ``silo``'s part of federation ``name`` (of ``n_clients`` silos)."""

    name: str
    silo: int
    n_clients: int
    client: ClientData
    num_classes: int
    input_shape: tuple[int, ...]
    class_names: list[str]
    model: str
    model_args: dict
    focal_loss: dict | None
    augmentation: Callable | None

    @property
    def clients(self) -> dict[int, ClientData]:
        """Indexed by silo, as a federation's client list is; this silo's client only."""
        return {self.silo: self.client}

    @classmethod
    def of(cls, data, silo: int) -> SiloData:
        """Silo ``silo``'s part of ``data`` (a ``FederatedData``)."""
        return cls(
            data.name,
            silo,
            len(data.clients),
            data.clients[silo],
            data.num_classes,
            tuple(data.input_shape),
            list(data.class_names),
            data.model,
            dict(getattr(data, "model_args", None) or {}),
            getattr(data, "focal_loss", None),
            getattr(data, "augmentation", None),
        )


def file_name(dataset: str, profile: str, seed: int, silo: int) -> str:
    return f"{dataset}-{profile}-seed{seed}-silo{silo}.pt"


def write(data, profile: str, seed: int, folders: list[Path]) -> list[Path]:
    """Write silo k's part of ``data`` (built at ``profile`` and ``seed``) to ``folders[k]``,
    with its SHA-256; return the files. Nothing else goes into a silo's folder."""
    if len(folders) != len(data.clients):
        raise ValueError(
            f"{len(folders)} folders for the {len(data.clients)} silos of {data.name}."
        )
    paths = []
    for silo, folder in enumerate(folders):
        path = Path(folder) / file_name(data.name, profile, seed, silo)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        torch.save(SiloData.of(data, silo), tmp)
        tmp.replace(path)
        _digest(path).write_text(sha256sum(path) + "\n")
        paths.append(path)
    return paths


def read(folder: Path | str, dataset: str, profile: str, seed: int, silo: int) -> SiloData:
    """Silo ``silo``'s file in ``folder``, checked: a clear DataError says what is wrong."""
    path = Path(folder) / file_name(dataset, profile, seed, silo)
    if not path.is_file():
        have = sorted(p.name for p in Path(folder).glob("*.pt")) if Path(folder).is_dir() else []
        raise DataError(
            f"silo {silo} has no data for {dataset!r} ({profile}, seed {seed}): {path} does not "
            f"exist (its data-dir holds {have or 'nothing'}). Write it with "
            "playerfl_core.flower.silo_data.write, or point the SuperNode's data-dir at its own "
            "folder."
        )
    if not _digest(path).is_file():
        raise DataError(f"{path} has no SHA-256 beside it ({_digest(path).name}): write it again.")
    expected = _digest(path).read_text().strip()
    if sha256sum(path) != expected:
        raise DataError(
            f"{path} does not match its SHA-256 ({expected}): the file is corrupt or was edited; "
            "write the silos' data again."
        )
    part = torch.load(path, weights_only=False)  # written by this machine (module docstring)
    if part.silo != silo:
        raise DataError(f"{path} holds silo {part.silo}'s data, not silo {silo}'s.")
    return part


def _digest(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")
