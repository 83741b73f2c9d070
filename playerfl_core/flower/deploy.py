"""The Flower App for real processes: a SuperLink, one SuperNode per silo, ``flwr run``.

``server`` and ``client`` are what the app folder ``silos/`` names in
``[tool.flwr.app.components]``. The job comes from the run config (``[tool.flwr.app.config]``,
overridden with ``flwr run --run-config``); the round loop, the messages and the checks are
:mod:`playerfl_core.flower.link`'s, the same as in simulation. Unlike simulation, a deployed
run checkpoints every round (:mod:`playerfl_core.flower.checkpoints`), so a run stopped by a lost
silo resumes with ``resume=true`` from its last completed round.

What the server writes to the run config's ``out`` folder: ``status.json`` (``ok``, and the
``error`` that stopped the run), ``results.parquet`` (the long table), ``wire.parquet`` and
``checkpoint.pkl``. :mod:`playerfl_core.flower.federation` starts the processes and submits.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import torch
from flwr.app import Context
from flwr.serverapp import Grid, ServerApp

from playerfl_core.fl.algorithms import get_algorithm
from playerfl_core.fl.profiles import make_config
from playerfl_core.flower.checkpoints import CheckpointObserver, ServerCheckpoint
from playerfl_core.flower.link import Job, client_app, serve

APP_PYPROJECT = Path(__file__).resolve().parents[2] / "silos" / "pyproject.toml"

RUN_CONFIG = {
    # the dataset lives in the app's config, not in library code (one home for dataset names)
    "dataset": tomllib.loads(APP_PYPROJECT.read_text())["tool"]["flwr"]["app"]["config"]["dataset"],
    "algorithm": "playerfl",
    "profile": "quick",
    "seed": 0,
    "rounds": 0,
    "lr": 0.0,
    "threads": 0,
    "silos": 4,
    "timeout": 120.0,
    "resume": False,
    "out": "",
}
"""The run config's keys and defaults (``silos/pyproject.toml`` declares the same);
``rounds`` 0 and ``lr`` 0.0 mean the profile's, ``threads`` 0 the server process's CPU threads
(what each silo computes with: the same count gives the same bits)."""


def job_from_config(config: dict) -> Job:
    """The :class:`Job` a run config describes; bad values raise a ValueError naming the key."""
    unknown = sorted(set(config) - set(RUN_CONFIG))
    if unknown:
        raise ValueError(f"run config: unknown keys {unknown}; the keys are {sorted(RUN_CONFIG)}.")
    config = {**RUN_CONFIG, **config}  # a key not given: its default
    get_algorithm(str(config["algorithm"]))  # an unknown name raises, listing the valid ones
    for key in ("rounds", "lr", "seed", "threads"):
        if config[key] < 0:
            raise ValueError(f"run config: {key} must be ≥ 0, got {config[key]!r}.")
    run = make_config(
        str(config["dataset"]),
        str(config["profile"]),
        seed=int(config["seed"]),
        rounds=int(config["rounds"]) or None,
        lr=float(config["lr"]) or None,
        device="cpu",
    )
    return Job(
        str(config["dataset"]),
        str(config["algorithm"]),
        {},
        asdict(run),
        str(config["profile"]),
        int(config["seed"]),
        threads=int(config["threads"]) or torch.get_num_threads(),
    )


def _settings(context: Context) -> dict:
    config = {**RUN_CONFIG, **dict(context.run_config)}
    if not config["out"]:
        raise ValueError("run config: out (the server's output folder) is empty; set it.")
    if not (isinstance(config["silos"], int) and config["silos"] >= 1):
        raise ValueError(f"run config: silos must be an integer ≥ 1, got {config['silos']!r}.")
    if not config["timeout"] > 0:
        raise ValueError(f"run config: timeout must be > 0 seconds, got {config['timeout']!r}.")
    return config


server = ServerApp()


@server.main()
def _main(grid: Grid, context: Context) -> None:
    out = Path(str(context.run_config.get("out", "")) or ".")
    try:
        config = _settings(context)
        out = Path(config["out"])
        out.mkdir(parents=True, exist_ok=True)
        (out / "status.json").unlink(missing_ok=True)
        job = job_from_config({k: v for k, v in config.items() if k not in _SERVER_KEYS})
        resume = ServerCheckpoint.load(out, job) if config["resume"] else None
        run, link = serve(
            grid,
            job,
            config["silos"],
            timeout=float(config["timeout"]),
            observers=[CheckpointObserver(job, out)],
            resume=resume,
        )
        run.table().to_parquet(out / "results.parquet", index=False)
        pd.DataFrame(link.wire).assign(messages=link.messages).to_parquet(
            out / "wire.parquet", index=False
        )
        _status(out, ok=True, resumed_after=None if resume is None else resume.round)
    except Exception as err:
        _status(out, ok=False, error=f"{type(err).__name__}: {err}")
        raise


_SERVER_KEYS = ("silos", "timeout", "resume", "out")
"""Run-config keys about this server, not the job."""


def _status(out: Path, **fields) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "status.json").write_text(json.dumps(fields, indent=1))


client = client_app()
