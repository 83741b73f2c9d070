"""A run's settings (:class:`RunConfig`) and their checks, made before any training.

Cut out of :mod:`playerfl_core.fl.engine`, which re-exports its names; part of the code
fingerprint (``study.run_store.RUN_MODULES``) as the engine is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from data_prep.registry import federation, is_declared
from playerfl_core.fl.losses import LOSSES

EVAL_TIMINGS = ("after_aggregation", "before_aggregation")
PROTOCOLS = ("book", "authors")
"""``RunConfig.protocol``: the book's, or the authors' (their data pipeline, loss, scoring time,
augmentation and round selection by the validation value of the loss they train with)."""


def default_device() -> str:
    """CUDA when present, CPU otherwise."""
    return "cuda" if torch.cuda.is_available() else "cpu"


@dataclass
class RunConfig:
    """Everything that fixes one run besides the data and the algorithm."""

    rounds: int
    lr: float
    batch_size: int
    width: float = 1.0
    seed: int = 0
    device: str = "cpu"
    eval_timing: str = "after_aggregation"
    loss: str = "cross_entropy"
    augment: bool = False
    protocol: str = "book"
    """``"authors"``: run as the authors' code does where the book can reproduce it; set it with
    ``make_config(..., protocol="authors")``, which also sets their loss, scoring time and
    augmentation; the data must come from ``data_prep.load(..., protocol="authors")``. The
    engine then logs each split's ``training_loss``, by which rounds are selected."""
    weight_decay: float = 1e-4
    local_epochs: int = 1
    eval_batch_size: int = 1024
    progress: bool = True
    dataset: str | None = None
    """The federation these settings were made for (``make_config`` records it), so they are not
    applied to another one without a word; None: not checked."""

    def __post_init__(self):
        for name in ("rounds", "batch_size", "local_epochs", "eval_batch_size"):
            _check(self, name, _is_int(getattr(self, name), 1), "an integer ≥ 1")
        _check(
            self, "seed", _is_int(self.seed, 0) and self.seed < 2**63, "an integer in 0 … 2^63 − 1"
        )
        _check(
            self,
            "lr",
            _is_real(self.lr) and 0 < self.lr <= LR_MAX,
            f"a number in (0, {LR_MAX:.3g}]",
        )
        _check(self, "width", _is_real(self.width) and self.width > 0, "a finite number > 0")
        _check(
            self,
            "weight_decay",
            _is_real(self.weight_decay) and self.weight_decay >= 0,
            "a finite number ≥ 0",
        )
        _check(self, "progress", isinstance(self.progress, bool), "True or False")
        _check_device(self.device)
        if self.eval_timing not in EVAL_TIMINGS:
            raise ValueError(
                f"eval_timing must be one of {EVAL_TIMINGS}, got {self.eval_timing!r}."
            )
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {self.loss!r}.")
        if not isinstance(self.augment, bool):
            raise ValueError(f"augment must be True or False, got {self.augment!r}.")
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {PROTOCOLS}, got {self.protocol!r}.")
        if self.protocol == "authors" and self.eval_timing != "before_aggregation":
            raise ValueError(
                "protocol='authors' scores clients before aggregation, as their code; drop "
                f"eval_timing={self.eval_timing!r} (make_config sets it)."
            )

    def check_data(self, data) -> None:
        """Raise a ValueError when an option needs something ``data`` does not define, or when
        the settings were made for another federation (a heterogeneity variant trains like its
        base, so a base's settings fit its variants)."""
        if self.dataset is not None and _base(self.dataset) != _base(data.name):
            raise ValueError(
                f"this RunConfig was made for {self.dataset!r} (its rounds, batch size and "
                f"learning rate), but the data are {data.name!r}: use "
                f"make_config({data.name!r}, ...), or "
                "RunConfig(dataset=None, ...) to use these settings on purpose."
            )
        data_protocol = getattr(data, "params", {}).get("protocol", "book")
        if data_protocol != self.protocol:
            raise ValueError(
                f"this RunConfig has protocol={self.protocol!r} but the data {data.name!r} were "
                f"built with protocol={data_protocol!r}: load them with "
                f"data_prep.load({data.name!r}, ..., protocol={self.protocol!r})."
            )
        if self.protocol == "authors" and (self.loss == "focal") != (data.focal_loss is not None):
            raise ValueError(
                f"protocol='authors' trains {data.name!r} with their loss "
                f"({'focal' if data.focal_loss is not None else 'cross_entropy'}), not "
                f"loss={self.loss!r}; build the settings with make_config(..., "
                "protocol='authors')."
            )
        if self.loss == "focal" and getattr(data, "focal_loss", None) is None:
            raise ValueError(
                f"loss='focal' needs the dataset's focal-loss parameters; {data.name!r} defines "
                "none (the authors used cross-entropy there). Use loss='cross_entropy'."
            )
        if self.augment and getattr(data, "augmentation", None) is None:
            raise ValueError(
                f"augment=True needs a training augmentation; {data.name!r} defines none (the "
                "authors augmented their image federations only). Use augment=False."
            )


def _base(name: str) -> str:
    """The declared federation a name trains like (itself when it is not declared)."""
    return federation(name).name if is_declared(name) else name


LR_MAX = float(np.finfo(np.float32).max)
"""Largest learning rate a float32 optimizer can hold (a larger one crashes inside Adam)."""


def _is_int(value, minimum: int) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool) and value >= minimum


def _is_real(value) -> bool:
    return (
        isinstance(value, int | float | np.number)
        and not isinstance(value, bool)
        and bool(np.isfinite(value))
    )


def _check(config, name: str, ok: bool, valid: str) -> None:
    if not ok:
        raise ValueError(f"RunConfig: {name} must be {valid}, got {getattr(config, name)!r}.")


def _check_device(device) -> None:
    """The device must exist on this machine: checked before any data is moved or trained."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(
            f"RunConfig.device: {device!r} is not a device ({err}); use cpu or cuda."
        ) from None
    if dev.type == "cuda" and (
        not torch.cuda.is_available() or (dev.index or 0) >= torch.cuda.device_count()
    ):
        raise ValueError(
            f"RunConfig.device: {device!r}, but this machine has "
            f"{torch.cuda.device_count() if torch.cuda.is_available() else 'no'} CUDA devices; "
            "use cpu."
        )
