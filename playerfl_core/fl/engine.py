"""The federated engine: clients with persistent state, rounds, evaluation, the results table.

One round (every algorithm):
1. each client trains locally (``algorithm.local_update``);
2. each client uploads only the units ``algorithm.shared_units`` names; the server combines them
   (``algorithm.aggregate``) and sends the result back (``algorithm.distribute``);
3. each client evaluates the model it would deploy (``algorithm.deployed_model``) on its own
   validation and test data (``eval_timing="after_aggregation"``, the default).

``eval_timing="before_aggregation"`` moves step 3 before step 2, so FedAvg-style methods are
scored on "received global model + one local epoch", as the authors' code (appendix §5.2; §10.1,
defect 1). ``protocol="authors"`` (``make_config(..., protocol="authors")`` with data from
``data_prep.load(..., protocol="authors")``) sets everything else of theirs the book can
reproduce: their data pipeline (Heart: 10 raw features, hard-coded scaler, one seed-42 split;
Fashion-MNIST: first N images, their Dirichlet partition and split), their loss (focal on Heart,
§4.1), their scoring time, their augmentation (§2.2, a close device-side version), and their
round selection: each split's value of the training loss is logged as ``training_loss`` and
:func:`~playerfl_core.stats.results.select_rounds` picks by it (§5.3). Not reproduced: their
val/test losses as means of per-batch losses (§5.4), their shared, advancing global RNG (§5.6), and
the algorithms the book implements differently on purpose (pFedMe, Ditto, FedLAMA, pFedLA,
PLayer-FL-Random; appendix "The authors' code, read closely").

Best-validation selection happens afterwards, from the table (:mod:`playerfl_core.stats.results`).

A run's settings and their checks are in :mod:`~playerfl_core.fl.config`, one client in
:mod:`~playerfl_core.fl.client`; this module holds the run and its round loop, and re-exports
both (:data:`__all__`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import pandas as pd
import torch
from tqdm import tqdm

from playerfl_core.fl.client import Client, adam_implementation, has_dropout, mode_matters
from playerfl_core.fl.config import EVAL_TIMINGS, LR_MAX, RunConfig, default_device
from playerfl_core.fl.determinism import deterministic_kernels
from playerfl_core.fl.errors import DivergenceError
from playerfl_core.fl.models import UnitModel, model_for
from playerfl_core.fl.schema import COLUMNS, TRAINING_LOSS
from playerfl_core.fl.scoring import METRICS, score_many, summarise
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
    "new_run",
    "round_phases",
    "run_federated",
    "adam_implementation",
    "has_dropout",
    "mode_matters",
]


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
            log_training_loss(self.run, c, rnd, self.algorithm.local_update(self.run, c, rnd))

    def evaluate(self, rnd: int) -> None:
        """Score every client's deployed model on val and test: one confusion-matrix pass and
        one copy to the host (:mod:`playerfl_core.fl.scoring`)."""
        run, splits = self.run, ("val", "test")
        keys, logits, labels = [], [], []
        for c in run.clients:
            logits += c.logits(self.algorithm.deployed_model(run, c), splits)
            labels += [c.y[s] for s in splits]
            keys += [(c, s) for s in splits]
        log_scores(run, rnd, keys, score_many(logits, labels).cpu().numpy())
        if run.config.protocol == "authors":  # their rounds are selected by this (§5.3)
            with torch.no_grad():
                for (c, split), z, y in zip(keys, logits, labels, strict=True):
                    run.log(c.id, rnd, split, TRAINING_LOSS, c.loss(z, y).item(), len(y))

    def finish(self) -> None:
        for c in self.run.clients:
            self.algorithm.finish_client(self.run, c)


def log_training_loss(run: Run, client: Client, rnd: int, loss: float) -> None:
    """The row of one client's local epoch: its mean task loss."""
    run.log(client.id, rnd, "train", "loss", loss, client.n_train)


def log_scores(run: Run, rnd: int, keys, rows) -> None:
    """The rows of one evaluation: per ``(client, split)`` of ``keys``, the metrics of its
    host copy of a :func:`~playerfl_core.fl.scoring.score_many` row."""
    for (c, split), row in zip(keys, rows, strict=True):
        scores = summarise(row)
        for metric in METRICS:
            run.log(c.id, rnd, split, metric, scores[metric], len(c.y[split]))


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
    check_arguments(data, algorithm, config)
    if not data.clients:
        raise ValueError(f"Dataset {data.name!r} has no clients.")
    return drive(new_run(data, algorithm, config), algorithm, observers)


def new_run(data, algorithm, config: RunConfig) -> Run:
    """A :class:`Run` of ``algorithm`` on ``data`` before round 0: its settings checked against
    the data, its clients built from the common initial model, reached through a
    :class:`LocalLink`. The one-run engine and the batched driver
    (:mod:`playerfl_core.fl.batched`) both start here."""
    config.check_data(data)
    clients = [make_client(data, i, config) for i in range(len(data.clients))]
    init = {n: p.detach().clone() for n, p in clients[0].model.named_parameters()}
    run = Run(data, config, clients, init, algorithm.name)
    run.link = LocalLink(run, algorithm)
    return run


ALGORITHM_METHODS = ("setup", "local_update", "aggregate", "shared_units", "deployed_model")
"""What the engine calls on an algorithm (every :class:`Algorithm` has them)."""


def check_arguments(data, algorithm, config) -> None:
    """A TypeError saying what :func:`run_federated` expected and how to make it, instead of an
    AttributeError from deep inside a round."""
    if not (hasattr(data, "clients") and hasattr(data, "num_classes")):
        raise TypeError(
            f"run_federated takes a federation as data, got {type(data).__name__}; load one with "
            "data_prep.load(<dataset>, seed=0) (a data_prep.FederatedData)."
        )
    if isinstance(algorithm, str):
        raise TypeError(
            f"run_federated takes an algorithm object, got the name {algorithm!r}; resolve it "
            f"first: run_federated(data, get_algorithm({algorithm!r}), config) "
            "(get_algorithm is in playerfl_core.fl.algorithms)."
        )
    if not all(callable(getattr(algorithm, m, None)) for m in ALGORITHM_METHODS):
        raise TypeError(
            f"run_federated takes an algorithm object, got {type(algorithm).__name__}; make one "
            "with get_algorithm('fedavg') (from playerfl_core import get_algorithm)."
        )
    if not isinstance(config, RunConfig):
        raise TypeError(
            f"run_federated takes a RunConfig as config, got {type(config).__name__}; make one "
            f"with make_config({getattr(data, 'name', '<dataset>')!r}, 'quick', seed=0) (from "
            "playerfl_core import make_config), which fills in the dataset's settings."
        )


def make_client(data, cid: int, config: RunConfig) -> Client:
    """Client ``cid`` of ``data`` with the run's common initial model."""
    extras = {k: getattr(data, k, None) for k in ("focal_loss", "augmentation")}
    return Client(cid, data.clients[cid], _fresh(data, config), config, **extras)


def drive(run: Run, algorithm, observers: Sequence[Observer] = (), start: int = 0) -> Run:
    """The round loop, the same wherever the clients are: ``run.link`` reaches them.

    ``start`` > 0 resumes a run restored as it was after round ``start - 1`` (the server's
    rows, global parameters and algorithm; the clients' state, restored by whoever holds it):
    the one-off setup and the round-0 rows are then not repeated. On CUDA the run uses
    deterministic kernels (:mod:`playerfl_core.fl.determinism`).
    """
    with deterministic_kernels(run.config.device):
        return _round_loop(run, algorithm, observers, start)


def _round_loop(run: Run, algorithm, observers: Sequence[Observer], start: int) -> Run:
    for phase, rnd in round_phases(run, algorithm, observers, start):
        if phase == TRAIN:
            run.link.train(rnd)
        elif phase == EVALUATE:
            run.link.evaluate(rnd)
        else:
            run.link.finish()
    return run


TRAIN, EVALUATE, FINISH = "train", "evaluate", "finish"
"""The steps of a round that touch every client's model; :func:`round_phases` yields them."""


def round_phases(run: Run, algorithm, observers: Sequence[Observer] = (), start: int = 0):
    """The round loop's server side, pausing at each step that touches every client's model:
    yields ``(TRAIN, rnd)`` (every client trains), ``(EVALUATE, rnd)`` (every client scores
    its deployed model) and ``(FINISH, None)`` (the final step). Whoever drives it does the
    step and resumes it: :func:`drive` one run through its link, the batched driver
    (:mod:`playerfl_core.fl.batched`) many runs at once, so both run one definition of a round.
    """
    config = run.config
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
        run.link.setup()
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
        yield TRAIN, rnd
        if config.eval_timing == "before_aggregation":
            algorithm.prepare_deployment(run, rnd)
            yield EVALUATE, rnd
        for obs in observers:
            obs.after_local_updates(run, rnd)
        algorithm.server_step(run, rnd)
        if config.eval_timing == "after_aggregation":
            algorithm.prepare_deployment(run, rnd)
            yield EVALUATE, rnd
        for obs in observers:
            obs.on_round_end(run, rnd)
    if algorithm.final_step:
        yield FINISH, None
        algorithm.prepare_deployment(run, config.rounds)
        yield EVALUATE, config.rounds


def _fresh(data, config: RunConfig) -> UnitModel:
    return model_for(data, config.width, config.seed)
