"""What the server and the silos agree on: the protocol, the calls a message may carry, a job
(one run to carry out), the errors a silo's answer can raise, and tensors in Flower records.

Cut out of :mod:`playerfl_core.flower.link` so that the silo side
(:mod:`~playerfl_core.flower.client`) and the server side (:mod:`~playerfl_core.flower.link`)
share it without importing each other.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

import torch
from flwr.app import ArrayRecord, ConfigRecord

from playerfl_core.study.run_store import code_fingerprint

PROTOCOL = 2
"""Bumped whenever the messages change meaning; server and clients must agree."""

CALLS = (
    "setup",
    "train",
    "evaluate",
    "finish",
    "uploads",
    "reports",
    "send",
    "deploy",
    "checkpoint",
)
"""The link calls a message may carry (:class:`~playerfl_core.fl.engine.LocalLink`'s methods)."""


PULL_EVERY_S = 0.25
"""Seconds between the server's pulls for replies (a pull is one small request)."""


class FlowerRunError(RuntimeError):
    """A silo failed, answered late, or disagrees with the server (protocol, code, data)."""


class SiloFailed(FlowerRunError):
    """A silo's code raised (a diverged run, a bad option): this run stops, the next may go on."""


class SiloLost(FlowerRunError):
    """A silo did not answer in time: the federation is incomplete and every run stops."""


class FlowerStopped(FlowerRunError):
    """The caller stopped the runs (a signal): the server ends without writing results."""


@dataclass(frozen=True)
class Job:
    """One run to carry out: what the server tells every silo before anything else."""

    dataset: str
    algorithm: str
    hyperparameters: dict
    config: dict
    profile: str = "quick"
    data_seed: int = 0
    dataset_modules: tuple[str, ...] = ()
    """Python files declaring federations (``--dataset-module``), loaded on every silo."""
    threads: int = field(default_factory=torch.get_num_threads)
    """CPU threads every silo computes with; by default those of the process that made the job,
    so a run on Flower gives the bits of an in-process run there (CPU kernels differ in their
    last bits across thread counts)."""

    @property
    def key(self) -> str:
        return f"{self.dataset}/{self.algorithm}/{self.config['seed']}/{self.config['lr']!r}"


# -- what crosses the wire ---------------------------------------------------------------------
def tensors_record(values: dict[str, torch.Tensor]) -> ArrayRecord:
    return ArrayRecord(torch_state_dict={n: v.detach().cpu() for n, v in values.items()})


def record_tensors(record: ArrayRecord, device: str) -> dict[str, torch.Tensor]:
    return {n: v.to(device) for n, v in record.to_torch_state_dict().items()}


def _header(job: Job, **extra) -> ConfigRecord:
    return ConfigRecord(
        {
            "protocol": PROTOCOL,
            "code": code_fingerprint(),
            "job": json.dumps(asdict(job)),
            "key": job.key,
            **{k: json.dumps(v) for k, v in extra.items()},
        }
    )
