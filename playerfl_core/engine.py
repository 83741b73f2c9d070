"""The federated engine: clients with persistent state, rounds, evaluation, the results table.

One round (every algorithm):
1. each client trains locally (``algorithm.local_update``);
2. each client uploads only the units ``algorithm.shared_units`` names; the server combines them
   (``algorithm.aggregate``) and sends the result back (``algorithm.distribute``);
3. each client evaluates the model it would deploy (``algorithm.deployed_model``) on its own
   validation and test data. With ``eval_protocol="authors"`` step 3 happens *before* step 2,
   i.e. FedAvg-style methods are scored on "global model + one local epoch", as the authors'
   code does (reference §5.2); the default scores the model a client would actually deploy.

Best-validation selection happens afterwards, from the table (:mod:`playerfl_core.results`).
"""

from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from playerfl_core.models import UnitModel, build_model
from playerfl_core.results import COLUMNS
from playerfl_core.scoring import METRICS, score_logits, score_many, summarise

EVAL_PROTOCOLS = ("deployed", "authors")


class DivergenceError(RuntimeError):
    """Training produced a non-finite loss (NaN/inf): the run is unusable."""


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
    eval_protocol: str = "deployed"
    weight_decay: float = 1e-4
    local_epochs: int = 1
    eval_batch_size: int = 1024
    progress: bool = True

    def __post_init__(self):
        if self.rounds < 1:
            raise ValueError(f"rounds must be ≥ 1, got {self.rounds}.")
        if not (self.lr > 0 and np.isfinite(self.lr)):
            raise ValueError(f"lr must be a positive number, got {self.lr}.")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be ≥ 1, got {self.batch_size}.")
        if self.eval_protocol not in EVAL_PROTOCOLS:
            raise ValueError(
                f"eval_protocol must be one of {EVAL_PROTOCOLS}, got {self.eval_protocol!r}."
            )


def adam_implementation(device: str) -> dict:
    """Adam's fastest deterministic path on ``device``: one fused kernel on CUDA, the
    multi-tensor (``foreach``) path elsewhere.

    On CPU ``foreach`` gives bit-identical parameters to the per-tensor loop (so results equal
    the earlier engine's) in less time; CPU ``fused`` would be faster still but changes the
    last bits. On CUDA ``fused`` is deterministic run-to-run, which is all a run needs there.
    """
    return {"fused": True} if torch.device(device).type == "cuda" else {"foreach": True}


def client_seed(seed: int, client_id: int, stream: str = "shuffle") -> int:
    """A stable per-client seed, identical for every algorithm of a run."""
    return zlib.crc32(f"{seed}/{client_id}/{stream}".encode())


class Client:
    """A silo: its data (preloaded on the device), its model and optimizer, kept across rounds.

    ``state`` holds whatever else an algorithm keeps on the client (a personal model, ...).
    """

    def __init__(self, cid: int, data, model: UnitModel, config: RunConfig):
        dev = config.device
        self.id, self.name, self.config = cid, data.name, config
        self.x = {s: getattr(data, f"x_{s}").to(dev) for s in ("train", "val", "test")}
        self.y = {s: getattr(data, f"y_{s}").to(dev) for s in ("train", "val", "test")}
        self.n_train = len(self.y["train"])
        self.model = model.to(dev)
        self.optimizer = self.make_optimizer(self.model.parameters())
        self.generator = torch.Generator().manual_seed(client_seed(config.seed, cid))
        self.state: dict = {}

    def make_optimizer(self, params, lr: float | None = None) -> torch.optim.Optimizer:
        """Adam with AMSGrad and L2 weight decay, as the reference evaluation code (§4.2)."""
        return torch.optim.Adam(
            params,
            lr=lr or self.config.lr,
            amsgrad=True,
            weight_decay=self.config.weight_decay,
            **adam_implementation(self.config.device),
        )

    def batches(self):
        """Shuffled mini-batches of the training split, drawn from the client's own generator."""
        n, bs = self.n_train, self.config.batch_size
        order = torch.randperm(n, generator=self.generator).to(self.x["train"].device)
        for start in range(0, n, bs):
            idx = order[start : start + bs]
            yield self.x["train"][idx], self.y["train"][idx]

    def train_epoch(self, model=None, optimizer=None, penalty=None, epochs=None) -> float:
        """Train ``model`` (default: the client's) for local epochs; return the mean task loss.

        ``penalty(model)`` adds a regulariser (FedProx, Ditto, pFedMe) to the objective; the
        returned loss is the task loss only. Raises :class:`DivergenceError` on a NaN/inf loss.
        """
        model = model if model is not None else self.model
        optimizer = optimizer if optimizer is not None else self.optimizer
        model.train()
        total = torch.zeros((), device=self.x["train"].device)
        seen = 0
        for _ in range(epochs or self.config.local_epochs):
            for x, y in self.batches():
                optimizer.zero_grad(set_to_none=True)
                loss = F.cross_entropy(model(x), y)
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
        was_training = model.training
        model.eval()
        bs = self.config.eval_batch_size
        out = [
            torch.cat([model(x[i : i + bs]) for i in range(0, len(x), bs)])
            for x in (self.x[s] for s in splits)
        ]
        model.train(was_training)
        return out

    def evaluate(self, model: nn.Module, split: str) -> dict[str, float]:
        """Loss, accuracy and macro-F1 of ``model`` on one split (one copy to the host).

        See :mod:`playerfl_core.scoring`: one confusion matrix, scikit-learn's macro-F1
        convention (classes present in labels or predictions, ``zero_division=0``).
        """
        (logits,) = self.logits(model, (split,))
        return summarise(score_logits(logits, self.y[split]).cpu().numpy())


@dataclass
class Run:
    """The state of one federated run, handed to every algorithm hook."""

    data: object
    config: RunConfig
    clients: list[Client]
    global_params: dict[str, torch.Tensor]
    algorithm_name: str
    rows: list = field(default_factory=list)
    info: dict = field(default_factory=dict)

    @property
    def weights(self) -> dict[int, float]:
        """Aggregation weights: training-set shares (as the paper)."""
        total = sum(c.n_train for c in self.clients)
        return {c.id: c.n_train / total for c in self.clients}

    def new_model(self) -> UnitModel:
        """A fresh model with the run's common initial weights."""
        d, c = self.data, self.config
        return build_model(d.model, d.num_classes, d.input_shape, c.width, c.seed).to(c.device)

    def log(self, client: int, rnd: int, split: str, metric: str, value: float, n: int = 0):
        """Append one fact to the long results table."""
        c = self.config
        self.rows.append(
            (
                self.data.name,
                self.algorithm_name,
                c.lr,
                c.seed,
                client,
                rnd,
                split,
                metric,
                float(value),
                n,
            )
        )

    def table(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=COLUMNS)


def _evaluate_all(run: Run, algorithm, rnd: int) -> None:
    """Score every client's deployed model on val and test: one confusion-matrix pass and one
    copy to the host per round (:mod:`playerfl_core.scoring`)."""
    splits = ("val", "test")
    keys, logits, labels = [], [], []
    for c in run.clients:
        logits += c.logits(algorithm.deployed_model(run, c), splits)
        labels += [c.y[s] for s in splits]
        keys += [(c, s) for s in splits]
    rows = score_many(logits, labels).cpu().numpy()
    for (c, split), row in zip(keys, rows, strict=True):
        scores = summarise(row)
        for metric in METRICS:
            run.log(c.id, rnd, split, metric, scores[metric], len(c.y[split]))


def run_federated(data, algorithm, config: RunConfig) -> Run:
    """Run ``algorithm`` on ``data``; return the :class:`Run` (``run.table()`` has the results).

    Every client starts from the same seeded weights, identical for every algorithm of a seed,
    and draws its mini-batches from its own seeded generator.
    """
    from playerfl_core.algorithms import get_algorithm

    algorithm = get_algorithm(algorithm) if isinstance(algorithm, str) else algorithm
    if not data.clients:
        raise ValueError(f"Dataset {data.name!r} has no clients.")
    clients = [Client(i, cd, _fresh(data, config), config) for i, cd in enumerate(data.clients)]
    init = {n: p.detach().clone() for n, p in clients[0].model.named_parameters()}
    run = Run(data, config, clients, init, algorithm.name)
    run.info.update(
        algorithm=algorithm.name,
        hyperparameters=algorithm.hyperparameters(),
        deploys=algorithm.deploys,
        config=asdict(config),
    )
    algorithm.setup(run)
    weights = run.weights
    for c in clients:
        run.log(c.id, 0, "train", "n_samples", c.n_train, c.n_train)
        run.log(c.id, 0, "train", "weight", weights[c.id], c.n_train)
    bar = tqdm(
        range(config.rounds),
        desc=f"{data.name}/{algorithm.name}",
        disable=not config.progress,
        leave=False,
    )
    for rnd in bar:
        for c in clients:
            loss = algorithm.local_update(run, c, rnd)
            run.log(c.id, rnd, "train", "loss", loss, c.n_train)
        if config.eval_protocol == "authors":
            _evaluate_all(run, algorithm, rnd)
        algorithm.server_step(run, rnd)
        if config.eval_protocol == "deployed":
            _evaluate_all(run, algorithm, rnd)
    if algorithm.finish(run):
        _evaluate_all(run, algorithm, config.rounds)
    return run


def _fresh(data, config: RunConfig) -> UnitModel:
    return build_model(data.model, data.num_classes, data.input_shape, config.width, config.seed)
