"""Where a grid's or a sweep's runs compute: ``local`` (this machine's worker processes, the
default) or ``ray`` (a Ray cluster, :mod:`~playerfl_core.study.ray_cluster`).

A backend decides only *where*; the calling process writes every run. ``open(threads, code)``
gives an executor (see :class:`~playerfl_core.study.workers.LocalExecutor`);
``default_device()`` is the device when none is named; :func:`execute` runs independent jobs.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
from dataclasses import dataclass

import torch

from playerfl_core.study.run_spec import code_fingerprint
from playerfl_core.study.workers import LocalExecutor, interrupts_as_keyboard

BACKENDS = ("local", "ray")


@dataclass(frozen=True)
class LocalBackend:
    """``workers`` processes on this machine (None: 2 on a CPU with ≥ 2 cores, else 1)."""

    workers: int | None = None

    def default_device(self) -> str:
        return "cuda" if torch.cuda.is_available() else "cpu"

    def n_workers(self, device: str) -> int:
        if self.workers is not None:
            return self.workers
        return min(2, os.cpu_count() or 1) if device == "cpu" else 1

    def open(self, threads: int | None, code: str = "", device: str = "cpu", runs: int = 2):
        """Workers for ``runs`` runs: never more processes than runs."""
        return LocalExecutor(self.n_workers(device) if runs > 1 else 1, threads)


def backend_for(backend, workers: int | None = None):
    """``"local"`` (with ``workers``), ``"ray"`` (Ray's defaults: ``--address auto``, one CPU
    per run) or a backend object, e.g. ``RayBackend(address="head:6379", gpus=0.5)``."""
    if backend == "local" or backend is None:
        return LocalBackend(workers)
    if backend == "ray":
        backend = _ray_backend()()
    if isinstance(backend, LocalBackend) or isinstance(backend, _ray_backend()):
        if workers is not None and not isinstance(backend, LocalBackend):
            raise ValueError(
                "workers is a setting of the local backend; on Ray, how many runs compute at "
                "once follows from the cluster and the CPUs/GPUs each run reserves (--cpus, "
                "--gpus)."
            )
        return backend
    raise ValueError(f"Unknown backend {backend!r}; use one of {BACKENDS} (or a RayBackend).")


def execute(fn, jobs: list[tuple], backend, device: str, on_done) -> None:
    """``fn(*job)`` for every job on ``backend``, at most its ``in_flight()`` at a time, calling
    ``on_done(i, result)`` as job ``i`` ends; Ctrl-C, SIGTERM or a failed run stops the workers."""
    executor = backend.open(1, code_fingerprint(), device, len(jobs))
    queue, pending = list(enumerate(jobs)), {}
    try:
        with interrupts_as_keyboard():
            while queue or pending:
                while queue and len(pending) < executor.in_flight():
                    i, job = queue.pop(0)
                    pending[executor.submit(fn, *job)] = i
                finished, _ = cf.wait(list(pending), return_when=cf.FIRST_COMPLETED)
                for fut in finished:
                    on_done(pending.pop(fut), lambda fut=fut: executor.result(fut))
    except BaseException:  # no worker outlives the study
        executor.stop()
        executor.close(wait=False)
        raise
    executor.close()


def _ray_backend():
    from playerfl_core.study.ray_cluster import RayBackend  # deferred: no Ray until a run needs it

    return RayBackend
