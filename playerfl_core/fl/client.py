"""One client of a federated run: its model, optimiser, generators and data, kept between rounds;
it trains, evaluates and logs the rows of the results table.

Cut out of :mod:`playerfl_core.fl.engine`, which re-exports :class:`Client`; part of the
code fingerprint (``study.run_store.RUN_MODULES``) as the engine is.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from playerfl_core.fl.config import RunConfig
from playerfl_core.fl.errors import DivergenceError
from playerfl_core.fl.losses import authors_focal_loss
from playerfl_core.fl.models import UnitModel
from playerfl_core.fl.scoring import score_logits, summarise
from playerfl_core.fl.seeding import client_seed


def adam_implementation(device: str) -> dict:
    """Adam's fastest deterministic path on ``device``: one fused kernel on CUDA, the
    multi-tensor (``foreach``) path elsewhere.

    On CPU ``foreach`` gives bit-identical parameters to the per-tensor loop (so results equal
    the earlier engine's) in less time; CPU ``fused`` would be faster still but changes the
    last bits. On CUDA ``fused`` is deterministic run-to-run, which is all a run needs there.
    """
    return {"fused": True} if torch.device(device).type == "cuda" else {"foreach": True}


_MODE_DEPENDENT = (nn.modules.dropout._DropoutNd, nn.modules.batchnorm._NormBase)


def mode_matters(model: nn.Module) -> bool:
    """Whether train/eval mode changes what ``model`` computes (dropout, batch norm).

    Switching modes walks every submodule; for models without such layers (the model zoo's
    today) it is pure overhead, paid twice per evaluation and once per epoch, so the engine
    skips it. Cached on the model.
    """
    flag = model.__dict__.get("_mode_matters")
    if flag is None:
        flag = any(isinstance(m, _MODE_DEPENDENT) for m in model.modules())
        model.__dict__["_mode_matters"] = flag
    return flag


def has_dropout(model: nn.Module) -> bool:
    """Whether ``model`` draws random numbers in training (dropout). Cached on the model."""
    flag = model.__dict__.get("_has_dropout")
    if flag is None:
        flag = any(isinstance(m, nn.modules.dropout._DropoutNd) for m in model.modules())
        model.__dict__["_has_dropout"] = flag
    return flag


class Client:
    """A silo: its data (preloaded on the device), its model and optimizer, kept across rounds.

    ``state`` holds whatever else an algorithm keeps on the client (a personal model, ...).
    """

    def __init__(
        self,
        cid: int,
        data,
        model: UnitModel,
        config: RunConfig,
        focal_loss: dict | None = None,
        augmentation=None,
    ):
        dev = config.device
        self.id, self.name, self.config = cid, data.name, config
        self.attach(data)
        self.n_train = len(self.y["train"])
        self.model = model.to(dev)
        self.optimizer = self.make_optimizer(self.model.parameters())
        self.generator = torch.Generator().manual_seed(client_seed(config.seed, cid))
        self.focal, self.augmentation = focal_loss, augmentation  # the dataset's (FederatedData)
        if config.loss == "focal" and focal_loss is None:
            raise ValueError(f"Client {self.name!r}: loss='focal' needs focal_loss parameters.")
        if config.augment and augmentation is None:
            raise ValueError(f"Client {self.name!r}: augment=True needs an augmentation.")
        self.state: dict = {}

    def attach(self, data) -> None:
        """Put the silo's splits on the run's device (again, after the client was restored
        without its data: a Flower node keeps only the training state between messages)."""
        dev = self.config.device
        self.x = {s: getattr(data, f"x_{s}").to(dev) for s in ("train", "val", "test")}
        self.y = {s: getattr(data, f"y_{s}").to(dev) for s in ("train", "val", "test")}

    def make_optimizer(self, params, lr: float | None = None) -> torch.optim.Optimizer:
        """Adam with AMSGrad and L2 weight decay, as the authors' evaluation (appendix §4.2)."""
        return torch.optim.Adam(
            params,
            lr=lr or self.config.lr,
            amsgrad=True,
            weight_decay=self.config.weight_decay,
            **adam_implementation(self.config.device),
        )

    def batches(self):
        """Shuffled mini-batches of the training split, drawn from the client's own generator.

        With ``augment=True`` each batch is augmented on the device; the augmentation's random
        numbers come from a device generator seeded, once per epoch, from the client's shuffle
        generator, so a run stays reproducible and a copy of the shuffle stream (Ditto's
        personal model) sees the same augmented batches. Only training batches are augmented.
        """
        n, bs = self.n_train, self.config.batch_size
        x_all, y_all = self.x["train"], self.y["train"]
        order, aug = self.epoch_order()
        for start in range(0, n, bs):
            idx = order[start : start + bs]
            x = x_all[idx]
            yield (self.augmentation(x, aug) if aug is not None else x), y_all[idx]

    def epoch_order(self) -> tuple[torch.Tensor, torch.Generator | None]:
        """One epoch's shuffled order of the training split (on its device), drawn from the
        client's own generator, and the epoch's augmentation generator (None without
        ``augment``). The batched driver draws each run's order here too."""
        x_all = self.x["train"]
        order = torch.randperm(self.n_train, generator=self.generator).to(x_all.device)
        aug = None
        if self.config.augment:
            seed = int(torch.randint(0, 2**62, (1,), generator=self.generator))
            aug = torch.Generator(device=x_all.device).manual_seed(seed)
        return order, aug

    @contextmanager
    def seeded_dropout(self, model: nn.Module):
        """Dropout draws from torch's global generator. For a model with dropout, fork that
        generator and seed it from the client's own batch stream for the block, so a run repeats
        bit for bit and does not depend on what ran before it or in which process (a Flower
        silo). Models without dropout draw nothing, and their batch streams stay as they were.
        """
        if not has_dropout(model):
            yield
            return
        seed = int(torch.randint(0, 2**62, (1,), generator=self.generator))
        dev = torch.device(self.config.device)
        with torch.random.fork_rng(devices=[dev] if dev.type == "cuda" else []):
            torch.manual_seed(seed)
            yield

    def loss(self, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The task loss every local update minimises (``RunConfig.loss``): cross-entropy, or
        the authors' focal loss with the dataset's parameters (:mod:`playerfl_core.fl.losses`)."""
        if self.config.loss == "focal":
            return authors_focal_loss(logits, y, **self.focal)
        return F.cross_entropy(logits, y)

    def train_epoch(self, model=None, optimizer=None, penalty=None, epochs=None) -> float:
        """Train ``model`` (default: the client's) for local epochs; return the mean task loss.

        ``penalty(model)`` adds a regulariser (FedProx, Ditto, pFedMe) to the objective; the
        returned loss is the task loss only. Raises :class:`DivergenceError` on a NaN/inf loss.
        """
        model = model if model is not None else self.model
        optimizer = optimizer if optimizer is not None else self.optimizer
        if mode_matters(model):
            model.train()
        total = torch.zeros((), device=self.x["train"].device)
        seen = 0
        with self.seeded_dropout(model):
            for _ in range(epochs or self.config.local_epochs):
                for x, y in self.batches():
                    optimizer.zero_grad(set_to_none=True)
                    loss = self.loss(model(x), y)
                    objective = loss + penalty(model) if penalty is not None else loss
                    objective.backward()
                    optimizer.step()
                    total += loss.detach() * len(y)
                    seen += len(y)
        mean = (total / max(seen, 1)).item()
        if not np.isfinite(mean):
            raise DivergenceError(
                f"Client {self.name!r}: training loss became {mean}. Lower the learning rate "
                f"(now {optimizer.param_groups[0]['lr']:g}) or check the data for NaN values."
            )
        return mean

    @torch.no_grad()
    def logits(self, model: nn.Module, splits=("val", "test")) -> list[torch.Tensor]:
        """``model``'s logits on each of ``splits`` (eval mode, batches of eval_batch_size)."""
        for split in splits:
            if len(self.y[split]) == 0:
                raise ValueError(f"Client {self.name!r} has an empty {split} split.")
        was_training, toggle = model.training, mode_matters(model)
        if toggle:
            model.eval()
        bs = self.config.eval_batch_size
        out = [
            torch.cat([model(x[i : i + bs]) for i in range(0, len(x), bs)])
            for x in (self.x[s] for s in splits)
        ]
        if toggle:
            model.train(was_training)
        return out

    def evaluate(self, model: nn.Module, split: str) -> dict[str, float]:
        """Loss, accuracy and macro-F1 of ``model`` on one split (one copy to the host).

        See :mod:`playerfl_core.fl.scoring`: one confusion matrix, scikit-learn's macro-F1
        convention (classes present in labels or predictions, ``zero_division=0``).
        """
        (logits,) = self.logits(model, (split,))
        return summarise(score_logits(logits, self.y[split]).cpu().numpy())
