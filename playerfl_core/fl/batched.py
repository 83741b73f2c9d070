"""Many runs of one federation in one computation: the batched driver of the engine.

A paper-size run is too small to keep a GPU busy. This driver trains K runs at once (seeds ×
splits, or any algorithms that train and deploy as FedAvg does: the prefix family, PLayer-FL,
PLayer-FL-Random, Local, FedAvg, FedLP): each run is an ordinary
:class:`~playerfl_core.fl.engine.Run` with its own clients, seed, data order, initial model and
algorithm object, driven through the engine's one definition of a round
(:func:`~playerfl_core.fl.engine.round_phases`). Only the two steps that touch every client's
model are done for all K runs at once:

* **training**: one client of each run (the largest with the largest, and so on) has its
  parameters stacked with the others' along a leading dimension, trained with
  ``torch.func.vmap`` over ``functional_call``; each run draws its own batches
  (:meth:`~playerfl_core.fl.client.Client.epoch_order`); a run with fewer batches than another
  (its client holds fewer samples) sits the extra steps out; Adam is :class:`StackedAdam`,
  ``torch.optim.Adam``'s update with one step count per run;
* **evaluation**: every run's client models scored in one vmapped pass per client and split,
  one :func:`~playerfl_core.fl.scoring.score_many` and one host copy per round.

Each client model's parameters and data are views of row k of the stacked tensors, so everything
else (uploads, aggregation, the split rules' sensitivities, receiving) runs the algorithm's own
hooks on the run's own clients, unchanged. Batched runs equal one-by-one runs up to rounding
(sums in another order: vmapped matmuls and convolutions, the masked batch loss): in float64 to
about 1e-14; in float32 Adam can magnify last-bit differences over many steps (26 steps on
Fashion-MNIST: 1e-3 in a loss and one flipped validation sample on an AVX-512 CPU), as it does
between two CPUs. Each is recorded with ``info["driver"] = "batched"``.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch.func import functional_call, vmap

from playerfl_core.fl.algorithms import get_algorithm
from playerfl_core.fl.algorithms.base import Algorithm
from playerfl_core.fl.algorithms.prefix import prefix_name
from playerfl_core.fl.client import Client, has_dropout, mode_matters
from playerfl_core.fl.config import RunConfig
from playerfl_core.fl.determinism import deterministic_kernels
from playerfl_core.fl.engine import (
    EVALUATE,
    TRAIN,
    Run,
    log_scores,
    log_training_loss,
    new_run,
    round_phases,
)
from playerfl_core.fl.errors import DivergenceError
from playerfl_core.fl.scoring import score_many

DRIVER = "batched"
"""``run.info["driver"]`` of a run computed here (one-by-one runs carry no driver)."""
SPLITS = ("train", "val", "test")


class OutOfTime(RuntimeError):
    """A batch would end after its deadline (projected from the rounds done): stopped early,
    nothing of it kept."""


class StackedAdam:
    """``torch.optim.Adam`` (L2 weight decay, optional AMSGrad) over parameters stacked along
    dimension 0, one run per row, each with its own step count: a row steps only when its run
    has a batch. Adam is elementwise, so with every row active this is the same formula as one
    ``torch.optim.Adam`` per run; its settings come from ``Client.make_optimizer``."""

    def __init__(self, params: Sequence[torch.Tensor], settings: dict):
        if settings.get("maximize") or settings.get("decoupled_weight_decay"):
            raise ValueError(
                "StackedAdam implements Adam with L2 weight decay only; the client's optimizer "
                "asks for maximize or decoupled weight decay."
            )
        self.params = list(params)
        self.lr, (self.beta1, self.beta2) = float(settings["lr"]), settings["betas"]
        self.eps, self.weight_decay = settings["eps"], settings["weight_decay"]
        self.amsgrad = settings["amsgrad"]
        self.steps = np.zeros(len(self.params[0]), dtype=np.int64)
        self.exp_avg = [torch.zeros_like(p) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p) for p in self.params]
        self.max_exp_avg_sq = [torch.zeros_like(p) for p in self.params]

    @torch.no_grad()
    def step(self, active: np.ndarray) -> None:
        """One Adam step for the rows where ``active`` (bool, one per run, on the host: no
        device synchronisation) is True."""
        self.steps += active
        steps = np.maximum(self.steps, 1).astype(np.float64)
        like = self.params[0]
        step_size = _per_run(self.lr / (1 - self.beta1**steps), like)
        bias2_sqrt = _per_run(np.sqrt(1 - self.beta2**steps), like)
        keep = None if active.all() else torch.as_tensor(active, device=like.device)
        for i, p in enumerate(self.params):
            shape = (-1,) + (1,) * (p.ndim - 1)
            grad = p.grad.add(p, alpha=self.weight_decay) if self.weight_decay else p.grad
            exp_avg = self.exp_avg[i].lerp(grad, 1 - self.beta1)
            exp_avg_sq = (
                self.exp_avg_sq[i].mul(self.beta2).addcmul_(grad, grad, value=1 - self.beta2)
            )
            second = torch.maximum(self.max_exp_avg_sq[i], exp_avg_sq) if self.amsgrad else None
            denom = (exp_avg_sq if second is None else second).sqrt()
            denom = denom.div_(bias2_sqrt.view(shape)).add_(self.eps)
            moved = p - step_size.view(shape) * (exp_avg / denom)
            if keep is not None:  # rows without a batch keep their values
                row = keep.view(shape)
                exp_avg = torch.where(row, exp_avg, self.exp_avg[i])
                exp_avg_sq = torch.where(row, exp_avg_sq, self.exp_avg_sq[i])
                second = (
                    None if second is None else torch.where(row, second, self.max_exp_avg_sq[i])
                )
                moved = torch.where(row, moved, p)
            self.exp_avg[i], self.exp_avg_sq[i] = exp_avg, exp_avg_sq
            if second is not None:
                self.max_exp_avg_sq[i] = second
            p.copy_(moved)


def _per_run(values: np.ndarray, like: torch.Tensor) -> torch.Tensor:
    """Per-run numbers on ``like``'s device and dtype (one copy per step, not per tensor)."""
    return torch.as_tensor(values, dtype=like.dtype, device=like.device)


class StackedClient:
    """One client of each of K runs: their parameters and splits stacked along dimension 0
    (zero-padded to the longest split), one Adam; each client sees its own row as views."""

    def __init__(self, clients: Sequence[Client], template):
        self.clients, self.template = list(clients), template
        first = self.clients[0]
        self.config = first.config
        self.n = {s: [len(c.y[s]) for c in self.clients] for s in SPLITS}
        for s in SPLITS:
            if min(self.n[s]) == 0:
                raise ValueError(f"Client {first.name!r} has an empty {s} split in some run.")
        self.x = {s: _stack_padded([c.x[s] for c in self.clients]) for s in SPLITS}
        self.y = {s: _stack_padded([c.y[s] for c in self.clients]) for s in SPLITS}
        for k, c in enumerate(self.clients):
            c.x = {s: self.x[s][k, : self.n[s][k]] for s in SPLITS}
            c.y = {s: self.y[s][k, : self.n[s][k]] for s in SPLITS}
        names = [n for n, _ in first.model.named_parameters()]
        self.params = {
            n: torch.stack([c.model.get_parameter(n).detach() for c in self.clients])
            .clone()
            .requires_grad_()
            for n in names
        }
        for k, c in enumerate(self.clients):
            for n in names:
                c.model.get_parameter(n).data = self.params[n].data[k]
        dummy = torch.zeros(1, device=self.config.device)
        settings = first.make_optimizer([dummy]).param_groups[0]
        self.adam = StackedAdam(list(self.params.values()), settings)
        self.forward = vmap(lambda p, x: functional_call(template, p, (x,)))

    def train_epochs(self) -> torch.Tensor:
        """Every run's local epochs; returns each run's mean task loss (on the host)."""
        k_runs, bs = len(self.clients), self.config.batch_size
        n = torch.tensor(self.n["train"], device=self.x["train"].device)
        total = torch.zeros(k_runs, device=n.device)
        for _ in range(self.config.local_epochs):
            index, valid = self._epoch_order()
            for start in range(0, index.shape[1], bs):
                active = np.array([start < size for size in self.n["train"]])
                batch = slice(start, start + bs)
                total += self._step(index[:, batch], valid[:, batch], active)
        return (total / (n * self.config.local_epochs)).cpu()

    def _epoch_order(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Each run's shuffled order (its client's own generator), padded to whole batches of
        the longest run; ``valid`` marks the real positions."""
        bs, dev = self.config.batch_size, self.x["train"].device
        length = math.ceil(max(self.n["train"]) / bs) * bs
        index = torch.zeros(len(self.clients), length, dtype=torch.long, device=dev)
        valid = torch.zeros(len(self.clients), length, dtype=torch.bool, device=dev)
        for k, c in enumerate(self.clients):
            order, _ = c.epoch_order()
            index[k, : len(order)], valid[k, : len(order)] = order, True
        return index, valid

    def _step(self, index: torch.Tensor, valid: torch.Tensor, active: np.ndarray) -> torch.Tensor:
        """One optimizer step of every ``active`` run (one that has a batch here); returns each
        run's summed batch loss (0 for a run without one)."""
        rows = torch.arange(len(index), device=index.device)[:, None]
        x, y = self.x["train"][rows, index], self.y["train"][rows, index]
        logits = self.forward(self.params, x)
        per_sample = F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="none")
        weight = valid.to(per_sample.dtype)
        summed = (per_sample.view_as(weight) * weight).sum(1)
        loss = summed / weight.sum(1).clamp(min=1)
        for p in self.params.values():
            p.grad = None
        loss.sum().backward()
        self.adam.step(active)
        return summed.detach()

    @torch.no_grad()
    def logits(self, split: str) -> list[torch.Tensor]:
        """Every run's logits on its own ``split`` (batches of ``eval_batch_size`` per run)."""
        x, bs = self.x[split], self.config.eval_batch_size
        out = torch.cat(
            [self.forward(self.params, x[:, i : i + bs]) for i in range(0, x.shape[1], bs)], 1
        )
        return [out[k, :n] for k, n in enumerate(self.n[split])]


def _stack_padded(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """Tensors of equal trailing shape stacked along a new dimension 0, zero-padded on dim 0."""
    longest = max(len(t) for t in tensors)
    out = tensors[0].new_zeros((len(tensors), longest, *tensors[0].shape[1:]))
    for k, t in enumerate(tensors):
        out[k, : len(t)] = t
    return out


def check_batchable(runs: Sequence[Run], algorithms: Sequence[Algorithm]) -> None:
    """Refuse, before any training, what the batched driver does not compute as the engine
    does: another federation or settings in one batch, the authors' protocol, a loss other than
    cross-entropy, augmentation, dropout or batch norm, or an algorithm with its own client
    setup, local update, receiving, deployed model or final step (the stacked rows are the
    clients' models only while the algorithm trains and installs them as FedAvg does)."""
    first = runs[0]
    for run in runs[1:]:
        if run.data.name != first.data.name or len(run.clients) != len(first.clients):
            raise ValueError(
                f"run_batch: one batch holds runs of one federation; got {first.data.name!r} "
                f"and {run.data.name!r}. Batch each federation on its own."
            )
        if dataclasses.replace(run.config, seed=first.config.seed) != first.config:
            raise ValueError(
                "run_batch: the runs of one batch share their settings except the seed; give "
                "one RunConfig."
            )
    config = first.config
    if config.protocol != "book":
        raise ValueError(
            f"run_batch computes the book's protocol only; run protocol={config.protocol!r} "
            "one by one (run_federated)."
        )
    if config.loss != "cross_entropy" or config.augment:
        raise ValueError(
            "run_batch computes loss='cross_entropy' without augmentation only; run runs with "
            f"loss={config.loss!r}, augment={config.augment} one by one (run_federated)."
        )
    model = first.clients[0].model
    if has_dropout(model) or mode_matters(model):
        raise ValueError(
            f"run_batch: {type(model).__name__} has dropout or batch norm, which the batched "
            "driver does not reproduce; run it one by one (run_federated)."
        )
    for alg in algorithms:
        kind = type(alg)
        own = [
            hook
            for hook in ("setup_client", "local_update", "receive", "deployed_model")
            if getattr(kind, hook) is not getattr(Algorithm, hook)
        ]
        if own or alg.final_step:
            raise ValueError(
                f"run_batch: {alg.name} has its own {', '.join(own) or 'final step'}; the "
                "batched driver computes algorithms that train one plain local epoch, install "
                "what they receive in place and deploy the client's model (the prefix family, "
                "PLayer-FL, Local, FedAvg, FedLP). Run it one by one (run_federated)."
            )


def run_batch(
    jobs: Sequence[tuple[object, Algorithm, int]],
    config: RunConfig,
    deadline: float | None = None,
) -> list[Run]:
    """Run every ``(data, algorithm, seed)`` of ``jobs`` with ``config`` (its seed replaced by
    the job's) as one computation; returns the runs in the order given (``run.table()``).

    ``data`` is the job's federation as loaded for its seed (a partition may depend on it); all
    jobs are of one federation. A run whose loss becomes NaN/inf stops the batch with a
    :class:`DivergenceError` naming it. ``deadline`` (a ``time.monotonic()`` value): after
    every round but the last, the batch's end is projected from the rounds done, and
    :class:`OutOfTime` is raised as soon as it falls after the deadline.
    """
    if not jobs:
        raise ValueError("run_batch: no runs given.")
    runs = [
        new_run(data, alg, dataclasses.replace(config, seed=int(seed), progress=False))
        for data, alg, seed in jobs
    ]
    algorithms = [alg for _, alg, _ in jobs]
    check_batchable(runs, algorithms)
    for run in runs:
        run.info.update(driver=DRIVER, batch_runs=len(runs))
    clock = _Deadline(deadline, config.rounds)
    with deterministic_kernels(config.device):
        template = runs[0].template
        stacks = [StackedClient(clients, template) for clients in _slots(runs)]
        phases = [round_phases(run, alg) for run, alg in zip(runs, algorithms, strict=True)]
        while (steps := {next(p, None) for p in phases}) != {None}:
            if len(steps) != 1:
                raise RuntimeError(f"run_batch: runs out of step {sorted(map(str, steps))}.")
            phase, rnd = steps.pop()
            if phase == TRAIN:
                _train(runs, stacks, rnd)
            elif phase == EVALUATE:
                _evaluate(runs, stacks, rnd)
                clock.after_round(rnd)
            else:
                raise RuntimeError(f"run_batch: unexpected step {phase!r}.")
    return runs


class _Deadline:
    """Projects a batch's end after every round: from the rounds after the first (which pays
    for warming up kernels and the allocator), and at once when the deadline has passed."""

    def __init__(self, deadline: float | None, rounds: int):
        self.deadline, self.rounds, self.first_done = deadline, rounds, None

    def after_round(self, rnd: int) -> None:
        if self.deadline is None or rnd >= self.rounds - 1:  # none, or the batch is done
            return
        now = time.monotonic()
        if rnd == 0:
            self.first_done = now
        end = now
        if rnd > 0:
            end += (now - self.first_done) / rnd * (self.rounds - 1 - rnd)
        if end > self.deadline:
            raise OutOfTime(
                f"the batch would end {end - self.deadline:.0f} s after its deadline "
                f"(projected after {rnd + 1} of {self.rounds} rounds)."
            )


def _slots(runs: Sequence[Run]) -> list[list[Client]]:
    """The clients stacked together: each run's largest client with the other runs' largest,
    and so on. Clients train independently, so any pairing gives the same numbers; pairing by
    size pads the fewest batches where a partition depends on the seed."""
    by_size = [sorted(run.clients, key=lambda c: -c.n_train) for run in runs]
    return [list(slot) for slot in zip(*by_size, strict=True)]


def _train(runs: Sequence[Run], stacks: Sequence[StackedClient], rnd: int) -> None:
    """Every run's local epochs, logged per run in client order (as the one-run engine)."""
    losses = {}
    for stack in stacks:
        for k, (client, loss) in enumerate(
            zip(stack.clients, stack.train_epochs().tolist(), strict=True)
        ):
            losses[k, client.id] = loss
    for k, run in enumerate(runs):
        for client in run.clients:
            loss = losses[k, client.id]
            if not math.isfinite(loss):
                raise DivergenceError(
                    f"Client {client.name!r} of {run.algorithm_name} (seed {run.config.seed}): "
                    f"training loss became {loss}. Lower the learning rate (now "
                    f"{run.config.lr:g}) or check the data for NaN values."
                )
            log_training_loss(run, client, rnd, loss)


def _evaluate(runs: Sequence[Run], stacks: Sequence[StackedClient], rnd: int) -> None:
    """Every run's clients on val and test: one :func:`score_many` and one host copy."""
    splits = ("val", "test")
    found = {}
    for stack in stacks:
        for s in splits:
            for k, (client, z) in enumerate(zip(stack.clients, stack.logits(s), strict=True)):
                found[k, client.id, s] = z
    keys, logits, labels = [], [], []
    for k, run in enumerate(runs):
        for c in run.clients:
            for s in splits:
                keys.append((c, s))
                logits.append(found[k, c.id, s])
                labels.append(c.y[s])
    rows = score_many(logits, labels).cpu().numpy()
    per_run = len(keys) // len(runs)
    for k, run in enumerate(runs):
        part = slice(k * per_run, (k + 1) * per_run)
        log_scores(run, rnd, keys[part], rows[part])


def run_prefix_batch(
    tasks: Sequence[tuple[object, int, int]], config: RunConfig, deadline: float | None = None
) -> pd.DataFrame:
    """The split sweep's runs ``(data, seed, p)`` (``prefix_p{p}``) as one computation: the
    long results table of every run, in the order given, rows as the one-run engine logs them."""
    jobs = [(data, get_algorithm(prefix_name(p)), seed) for data, seed, p in tasks]
    runs = run_batch(jobs, config, deadline)
    return pd.concat([run.table() for run in runs], ignore_index=True)
