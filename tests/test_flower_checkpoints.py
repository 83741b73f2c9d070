"""Checkpoint and resume of a Flower run, in seconds: the server's link talks to four Heart
silos through a loopback grid that hands each message to the silos' own handler in this
process (no Flower processes; ``test_flower_deploy`` does the same across real ones).

A silo "killed" after a round never answers again: the run stops naming it, the server's
checkpoint holds exactly the completed rounds' rows, and a fresh federation (new Flower run,
empty node state, the same state-dirs) resumed from it ends with the uninterrupted run's rows.
"""

from __future__ import annotations

import itertools
import json

import pandas as pd
import pytest
from flwr.app import Context, RecordDict
from flwr.supercore.task_identity import TaskIdentity

from data_prep import load
from playerfl_core.fl.algorithms import get_algorithm
from playerfl_core.fl.engine import RunConfig, run_federated
from playerfl_core.fl.profiles import make_config
from playerfl_core.flower import silo_data
from playerfl_core.flower.checkpoints import CheckpointObserver, ServerCheckpoint
from playerfl_core.flower.client import _DATA, _handle
from playerfl_core.flower.deploy import job_from_config
from playerfl_core.flower.link import serve
from playerfl_core.flower.wire import FlowerRunError, SiloLost

ROUNDS = 3
SILOS = 4


class LoopbackGrid:
    """What :class:`FlowerLink` uses of Flower's ``Grid``, delivering in-process. A silo in
    ``kill_after`` (silo → round) stops answering once it saved that round's checkpoint."""

    def __init__(self, state_dir, kill_after: dict[int, int] | None = None, data_dirs=None):
        self.contexts = {
            100 + k: Context(
                run_id=1,
                node_id=100 + k,
                node_config={"partition-id": k, "state-dir": str(state_dir / f"silo{k}")}
                | ({"data-dir": str(data_dirs[k])} if data_dirs else {}),
                state=RecordDict(),
                run_config={},
            )
            for k in range(SILOS)
        }
        self.kill_after, self.dead = kill_after or {}, set()
        self.silent: set[int] = set()
        """Nodes Flower lists but that never answer (stopped between listing and asking)."""
        self.replies, self.count = {}, itertools.count()

    def get_node_ids(self):
        return [n for n in self.contexts if n not in self.dead]

    def push_messages(self, messages):
        """Answer each message at once (a dead or silent node never does); their ids."""
        ids = []
        for message in messages:
            message.metadata.__dict__["_message_id"] = f"m{next(self.count)}"  # as Flower does
            ids.append(message.metadata.message_id)
            node = message.metadata.dst_node_id
            if node in self.dead or node in self.silent:
                continue
            self.replies[ids[-1]] = _handle(message, self.contexts[node])
            silo = node - 100
            calls = json.loads(message.content["head"].get("calls", "[]"))
            saved = {c["args"]["rnd"] for c in calls if c["call"] == "checkpoint"}
            if self.kill_after.get(silo) in saved:
                self.dead.add(node)
        return ids

    def pull_messages(self, message_ids):
        return [self.replies.pop(i) for i in message_ids if i in self.replies]


@pytest.fixture(autouse=True)
def _task_identity(monkeypatch):
    """Messages are stamped with the task that made them; a Flower process sets these."""
    for name, value in (("_run_id", 1), ("_node_id", 0), ("_task_id", 1)):
        monkeypatch.setattr(TaskIdentity, name, value)


def _job(**over):
    return job_from_config(
        {"dataset": "heart", "algorithm": "playerfl", "profile": "quick", "seed": 0}
        | {"rounds": ROUNDS, "lr": 0.0}
        | over
    )


@pytest.fixture(scope="module")
def expected():
    config = make_config("heart", "quick", seed=0, rounds=ROUNDS, device="cpu")
    data = load("heart", profile="quick", seed=0)
    return run_federated(data, get_algorithm("playerfl"), config).table()


def _serve(grid, job, out, resume=None):
    run, _ = serve(grid, job, SILOS, 0.5, [CheckpointObserver(job, out)], resume)
    return run.table()


@pytest.mark.parametrize("own_data", [False, True], ids=["whole federation", "own data only"])
def test_a_checkpointed_run_gives_the_in_process_rows(tmp_path, expected, own_data):
    """A silo that holds only its own data file (a deployment) computes the same rows as one
    that builds the whole federation from the raw files (simulation)."""
    data_dirs = None
    if own_data:
        data_dirs = [tmp_path / "data" / f"silo{k}" for k in range(SILOS)]
        silo_data.write(load("heart", profile="quick", seed=0), "quick", 0, data_dirs)
    grid = LoopbackGrid(tmp_path / "silos", data_dirs=data_dirs)
    got = _serve(grid, _job(), tmp_path / "server")
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    if own_data:
        assert all(isinstance(d, silo_data.SiloData) for k, d in _DATA.items() if k[-1])
    assert ServerCheckpoint.load(tmp_path / "server", _job()).round == ROUNDS - 1
    for k in range(SILOS):
        (folder,) = (tmp_path / "silos" / f"silo{k}").iterdir()
        assert sorted(p.name for p in folder.iterdir()) == [f"round-{r}.pkl" for r in range(ROUNDS)]


@pytest.mark.parametrize("lost_after", [0, 1])
def test_a_lost_silo_stops_the_run_and_a_restart_resumes(tmp_path, expected, lost_after):
    job, out, state = _job(), tmp_path / "server", tmp_path / "silos"
    with pytest.raises(SiloLost, match=r"silos \[2\] did not answer"):
        _serve(LoopbackGrid(state, kill_after={2: lost_after}), job, out)
    point = ServerCheckpoint.load(out, job)
    assert point.round == lost_after
    completed = expected[expected["round"] <= lost_after]
    assert point.rows == list(completed.itertuples(index=False))
    assert point.rows == list(expected.itertuples(index=False))[: len(point.rows)]

    got = _serve(LoopbackGrid(state), job, out, resume=point)  # fresh nodes, same disks
    pd.testing.assert_frame_equal(got, expected, check_exact=True)


def test_a_node_lost_before_it_said_which_silo_it_is_is_named_by_its_node_id(tmp_path):
    grid = LoopbackGrid(tmp_path)
    grid.silent.add(102)
    with pytest.raises(SiloLost, match=r"^SuperNodes \[102\] did not answer"):
        _serve(grid, _job(), tmp_path / "server")


def test_resume_needs_each_silos_own_checkpoint(tmp_path):
    job, out, state = _job(), tmp_path / "server", tmp_path / "silos"
    with pytest.raises(SiloLost):
        _serve(LoopbackGrid(state, kill_after={1: 0}), job, out)
    for path in (state / "silo3").rglob("round-0.pkl"):
        path.unlink()
    with pytest.raises(FlowerRunError, match="no checkpoint of round 0 in .*silo3"):
        _serve(LoopbackGrid(state), job, out, resume=ServerCheckpoint.load(out, job))


def test_a_checkpoint_of_another_job_is_refused(tmp_path):
    job, out = _job(), tmp_path / "server"
    with pytest.raises(SiloLost):
        _serve(LoopbackGrid(tmp_path / "silos", kill_after={0: 0}), job, out)
    with pytest.raises(ValueError, match="checkpoint of another job"):
        ServerCheckpoint.load(out, _job(seed=1))
    with pytest.raises(FileNotFoundError, match="no round of this run completed"):
        ServerCheckpoint.load(tmp_path / "elsewhere", job)


def test_a_silo_without_a_state_dir_says_how_to_start_it(tmp_path):
    grid = LoopbackGrid(tmp_path)
    del grid.contexts[102].node_config["state-dir"]
    with pytest.raises(FlowerRunError, match="silo 2 .* no state-dir: start its SuperNode"):
        _serve(grid, _job(), tmp_path / "server")


def test_drive_refuses_a_start_outside_the_rounds():
    from playerfl_core.fl.engine import drive

    run = type("R", (), {"config": RunConfig(rounds=2, lr=0.1, batch_size=4), "link": None})
    with pytest.raises(ValueError, match="start must be a round in 0 … 2, got 3"):
        drive(run, None, start=3)
