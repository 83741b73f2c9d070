"""Checkpoints of a Flower run, so a run a lost silo stopped resumes at its last whole round.

After every completed round the server asks each silo to save its session (model, optimiser,
generators, personal state: everything but its data) to the silo's own disk, one file per
round (:class:`SiloCheckpoints`); only when every silo has answered does the server save its
own state (rows, global parameters, algorithm) as :class:`ServerCheckpoint`. So the server's
checkpoint of round r exists only if every silo holds its round-r file, and a run restarted
from it (``flower_link.serve(..., resume=...)``) continues with round r + 1 exactly as the
uninterrupted run would: same rows, same bits. Both files are written to a temporary name and
renamed, so a process killed while writing leaves the previous checkpoint intact.

Checkpoints are pickles a process wrote on its own disk for itself; never load one from
elsewhere.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from dataclasses import asdict, dataclass
from pathlib import Path

from playerfl_core.fl.engine import Observer, Run


def job_digest(job) -> str:
    """Twelve hex digits naming a job (every field), for file names."""
    text = json.dumps(asdict(job), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


@dataclass(frozen=True)
class SiloCheckpoints:
    """One silo's saved sessions of one job: ``<state-dir>/silo<k>-<job>/round-<r>.pkl``."""

    folder: Path

    @classmethod
    def of(cls, state_dir: str | None, job, silo: int) -> SiloCheckpoints:
        if not state_dir:
            raise ValueError(
                f"silo {silo} was asked to checkpoint but has no state-dir: start its SuperNode "
                "with --node-config \"... state-dir='<folder on this silo>'\"."
            )
        return cls(Path(state_dir) / f"silo{silo}-{job_digest(job)}")

    def path(self, rnd: int) -> Path:
        return self.folder / f"round-{rnd}.pkl"

    def save(self, rnd: int, blob: bytes) -> None:
        write_atomically(self.path(rnd), blob)

    def load(self, rnd: int) -> bytes:
        path = self.path(rnd)
        if not path.exists():
            have = sorted(p.name for p in self.folder.glob("round-*.pkl"))
            raise FileNotFoundError(
                f"no checkpoint of round {rnd} in {self.folder} (have: {have or 'none'}): "
                "resume needs the SuperNode's own state-dir of the interrupted run."
            )
        return path.read_bytes()


@dataclass
class ServerCheckpoint:
    """The server's part of a run after round ``round``."""

    job_key: str
    round: int
    rows: list
    global_params: dict
    info: dict
    algorithm: object

    FILE = "checkpoint.pkl"

    @classmethod
    def capture(cls, job, run: Run, algorithm, rnd: int) -> ServerCheckpoint:
        return cls(job_digest(job), rnd, list(run.rows), run.global_params, run.info, algorithm)

    def save(self, folder: Path) -> None:
        write_atomically(Path(folder) / self.FILE, pickle.dumps(self))

    @classmethod
    def load(cls, folder: Path, job) -> ServerCheckpoint:
        path = Path(folder) / cls.FILE
        if not path.exists():
            raise FileNotFoundError(
                f"resume=true, but {path} does not exist: no round of this run completed, "
                "start it afresh (resume=false)."
            )
        point = pickle.loads(path.read_bytes())  # written by this server itself
        if point.job_key != job_digest(job):
            raise ValueError(
                f"{path} is a checkpoint of another job ({point.job_key}, this one is "
                f"{job_digest(job)}): resume with the interrupted run's exact run config."
            )
        return point

    def restore(self, run: Run) -> int:
        """Put the saved state into a fresh server ``run``; return the round to start at."""
        run.rows[:] = self.rows
        run.global_params = self.global_params
        run.info.update(self.info)
        return self.round + 1


class CheckpointObserver(Observer):
    """After each round: every silo saves its session, then the server saves its own state
    (the silos' confirmations come first: see the module docstring)."""

    def __init__(self, job, folder: Path):
        self.job, self.folder = job, Path(folder)

    def on_round_end(self, run: Run, rnd: int) -> None:
        link = run.link  # a FlowerLink: it knows the silos and holds the algorithm
        link.checkpoint(rnd)
        ServerCheckpoint.capture(self.job, run, link.algorithm, rnd).save(self.folder)
