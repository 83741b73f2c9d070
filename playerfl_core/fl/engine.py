"""The federated engine: clients with persistent state, rounds, evaluation, the results table.

One round (every algorithm):
1. each client trains locally (``algorithm.local_update``);
2. each client uploads only the units ``algorithm.shared_units`` names; the server combines them
   (``algorithm.aggregate``) and sends the result back (``algorithm.distribute``);
3. each client evaluates the model it would deploy (``algorithm.deployed_model``) on its own
   validation and test data (``eval_timing="after_aggregation"``, the default).

``eval_timing="before_aggregation"`` moves step 3 before step 2, so FedAvg-style methods are
scored on "received global model + one local epoch". That reproduces one choice of the authors'
code: *when* models are scored (appendix §5.2, §10.1 item 1). It does not reproduce their other
choices: their loss (a modified focal loss on Heart, §4.1: ``loss="focal"`` gives it, but the
logged val/test loss stays cross-entropy), their Fashion-MNIST augmentation (§2.2:
``augment=True`` gives a close device-side version), and their model selection (§5.3: they keep
a per-client snapshot at the lowest *validation loss of their training loss* and test only that;
here every round is scored and best-validation selection happens afterwards, on cross-entropy),
nor their test loss as a mean of per-batch losses (§5.4) or their shared, advancing RNG (§5.6).

Best-validation selection happens afterwards, from the table (:mod:`playerfl_core.stats.results`).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from playerfl_core.fl.errors import DivergenceError
from playerfl_core.fl.losses import LOSSES, authors_focal_loss
from playerfl_core.fl.models import UnitModel, model_for
from playerfl_core.fl.schema import COLUMNS
from playerfl_core.fl.scoring import METRICS, score_logits, score_many, summarise
from playerfl_core.fl.seeding import client_seed

__all__ = [
    "EVAL_TIMINGS",
    "LR_MAX",
    "Client",
    "Observer",
    "DivergenceError",
    "LocalLink",
    "Run",
    "RunConfig",
    "client_seed",
    "default_device",
    "drive",
    "make_client",
    "run_federated",
]

EVAL_TIMINGS = ("after_aggregation", "before_aggregation")


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
    weight_decay: float = 1e-4
    local_epochs: int = 1
    eval_batch_size: int = 1024
    progress: bool = True

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

    def check_data(self, data) -> None:
        """Raise a ValueError when an option needs something ``data`` does not define."""
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
        order = torch.randperm(n, generator=self.generator).to(x_all.device)
        aug = None
        if self.config.augment:
            seed = int(torch.randint(0, 2**62, (1,), generator=self.generator))
            aug = torch.Generator(device=x_all.device).manual_seed(seed)
        for start in range(0, n, bs):
            idx = order[start : start + bs]
            x = x_all[idx]
            yield (self.augmentation(x, aug) if aug is not None else x), y_all[idx]

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


@dataclass
class Run:
    """The state of one federated run, handed to every algorithm hook.

    In-process the run holds the clients; a server elsewhere (Flower) holds a run without
    clients and reaches them through :attr:`link`. Server hooks use ``sizes``, ``weights``,
    ``template`` and ``link`` only, so they run unchanged on either.
    """

    data: object
    config: RunConfig
    clients: list[Client]
    global_params: dict[str, torch.Tensor]
    algorithm_name: str
    rows: list = field(default_factory=list)
    info: dict = field(default_factory=dict)
    sizes: dict[int, int] = field(default_factory=dict)
    """Training-set size per client id (what the server knows of each client)."""
    link: object = None
    """How server hooks reach the clients (:class:`LocalLink` in-process)."""

    def __post_init__(self):
        if not self.sizes:
            self.sizes = {c.id: c.n_train for c in self.clients}
        self._template = None

    @property
    def client_ids(self) -> list[int]:
        return list(self.sizes)

    @property
    def n_clients(self) -> int:
        return len(self.sizes)

    @property
    def weights(self) -> dict[int, float]:
        """Aggregation weights: training-set shares (as the paper)."""
        total = sum(self.sizes.values())
        return {cid: n / total for cid, n in self.sizes.items()}

    @property
    def template(self) -> UnitModel:
        """A model of the run's architecture, for its unit and parameter names (server side)."""
        if self._template is None:
            self._template = self.new_model()
        return self._template

    def new_model(self) -> UnitModel:
        """A fresh model with the run's common initial weights."""
        d, c = self.data, self.config
        return model_for(d, c.width, c.seed).to(c.device)

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


class LocalLink:
    """Server and clients in one process: each call runs the algorithm's client hooks on the
    run's clients, in client order. A link elsewhere (:mod:`playerfl_core.flower.link`) runs
    the same calls on remote clients and must give the same answers.

    The first four methods serve the algorithm's server hooks; the rest drive the round loop.
    """

    def __init__(self, run: Run, algorithm):
        self.run, self.algorithm = run, algorithm

    def uploads(self, rnd: int, for_deployment: bool = False) -> dict[int, dict]:
        """Each client's upload (or its deployment upload); clients that send nothing omitted."""
        hook = self.algorithm.deployment_upload if for_deployment else self.algorithm.upload
        sent = {c.id: hook(self.run, c, rnd) for c in self.run.clients}
        return {cid: up for cid, up in sent.items() if up}

    def reports(self, rnd: int) -> dict[int, dict[str, float]]:
        return {c.id: self.algorithm.report(self.run, c, rnd) for c in self.run.clients}

    def send(self, rnd: int, values: dict[int, dict[str, torch.Tensor]]) -> None:
        for c in self.run.clients:
            if c.id in values:
                self.algorithm.receive(self.run, c, rnd, values[c.id])

    def deploy(self, values: dict[int, dict[str, torch.Tensor]]) -> None:
        for c in self.run.clients:
            if c.id in values:
                self.algorithm.receive_deployment(self.run, c, values[c.id])

    def setup(self) -> None:
        for c in self.run.clients:
            self.algorithm.setup_client(self.run, c)

    def train(self, rnd: int) -> None:
        for c in self.run.clients:
            loss = self.algorithm.local_update(self.run, c, rnd)
            self.run.log(c.id, rnd, "train", "loss", loss, c.n_train)

    def evaluate(self, rnd: int) -> None:
        """Score every client's deployed model on val and test: one confusion-matrix pass and
        one copy to the host (:mod:`playerfl_core.fl.scoring`)."""
        run, splits = self.run, ("val", "test")
        keys, logits, labels = [], [], []
        for c in run.clients:
            logits += c.logits(self.algorithm.deployed_model(run, c), splits)
            labels += [c.y[s] for s in splits]
            keys += [(c, s) for s in splits]
        rows = score_many(logits, labels).cpu().numpy()
        for (c, split), row in zip(keys, rows, strict=True):
            scores = summarise(row)
            for metric in METRICS:
                run.log(c.id, rnd, split, metric, scores[metric], len(c.y[split]))

    def finish(self) -> None:
        for c in self.run.clients:
            self.algorithm.finish_client(self.run, c)


class Observer:
    """Watches a run without changing it: studies measure models through this hook instead of
    subclassing algorithms. Override either method; both are no-ops here.

    An observer must leave the clients' models, optimizers and generators as it found them, or
    the run's numbers change.
    """

    def after_local_updates(self, run: Run, rnd: int) -> None:
        """Every client has trained in round ``rnd``; the server has not combined anything yet
        (the authors' measurement point, appendix §8.2)."""

    def on_round_end(self, run: Run, rnd: int) -> None:
        """Round ``rnd`` is over: server step and evaluation done."""


def run_federated(data, algorithm, config: RunConfig, observers: Sequence[Observer] = ()) -> Run:
    """Run ``algorithm`` (an object: resolve names with
    :func:`playerfl_core.fl.algorithms.get_algorithm`) on ``data``; return the :class:`Run`
    (``run.table()`` has the results).

    Every client starts from the same seeded weights, identical for every algorithm of a seed,
    and draws its mini-batches from its own seeded generator. ``observers`` (:class:`Observer`)
    are called at fixed points of every round and must not change the run.
    """
    if isinstance(algorithm, str):
        raise TypeError(
            f"run_federated takes an algorithm object, got the name {algorithm!r}; resolve it "
            f"first: run_federated(data, get_algorithm({algorithm!r}), config) "
            "(get_algorithm is in playerfl_core.fl.algorithms)."
        )
    if not data.clients:
        raise ValueError(f"Dataset {data.name!r} has no clients.")
    config.check_data(data)
    clients = [make_client(data, i, config) for i in range(len(data.clients))]
    init = {n: p.detach().clone() for n, p in clients[0].model.named_parameters()}
    run = Run(data, config, clients, init, algorithm.name)
    run.link = LocalLink(run, algorithm)
    return drive(run, algorithm, observers)


def make_client(data, cid: int, config: RunConfig) -> Client:
    """Client ``cid`` of ``data`` with the run's common initial model."""
    extras = {k: getattr(data, k, None) for k in ("focal_loss", "augmentation")}
    return Client(cid, data.clients[cid], _fresh(data, config), config, **extras)


def drive(run: Run, algorithm, observers: Sequence[Observer] = (), start: int = 0) -> Run:
    """The round loop, the same wherever the clients are: ``run.link`` reaches them.

    ``start`` > 0 resumes a run restored as it was after round ``start - 1`` (the server's
    rows, global parameters and algorithm; the clients' state, restored by whoever holds it):
    the one-off setup and the round-0 rows are then not repeated.
    """
    config, link = run.config, run.link
    if not (isinstance(start, int) and 0 <= start <= config.rounds):
        raise ValueError(f"drive: start must be a round in 0 … {config.rounds}, got {start!r}.")
    run.info.update(
        algorithm=algorithm.name,
        hyperparameters=algorithm.hyperparameters(),
        deploys=algorithm.deploys,
        config=asdict(config),
    )
    if start == 0:
        algorithm.setup(run)
        link.setup()
        weights = run.weights
        for cid, n in run.sizes.items():
            run.log(cid, 0, "train", "n_samples", n, n)
            run.log(cid, 0, "train", "weight", weights[cid], n)
    bar = tqdm(
        range(start, config.rounds),
        desc=f"{run.data.name}/{algorithm.name}",
        disable=not config.progress,
        leave=False,
    )
    for rnd in bar:
        algorithm.before_training(run, rnd)
        link.train(rnd)
        if config.eval_timing == "before_aggregation":
            _evaluate(run, algorithm, rnd)
        for obs in observers:
            obs.after_local_updates(run, rnd)
        algorithm.server_step(run, rnd)
        if config.eval_timing == "after_aggregation":
            _evaluate(run, algorithm, rnd)
        for obs in observers:
            obs.on_round_end(run, rnd)
    if algorithm.final_step:
        link.finish()
        _evaluate(run, algorithm, config.rounds)
    return run


def _evaluate(run: Run, algorithm, rnd: int) -> None:
    algorithm.prepare_deployment(run, rnd)
    run.link.evaluate(rnd)


def _fresh(data, config: RunConfig) -> UnitModel:
    return model_for(data, config.width, config.seed)
