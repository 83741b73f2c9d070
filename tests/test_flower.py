"""Every algorithm on Flower gives the in-process engine's rows; only uploads leave a silo.

One Flower simulation (one SuperNode per Heart hospital, Ray actors) carries out every
algorithm; each run is compared row by row, in order, with the same run in-process.
"""

from __future__ import annotations

from dataclasses import asdict, replace

import pandas as pd
import pytest
import torch
from flwr.app import Context, Message, Metadata, RecordDict

from data_prep import load
from playerfl_core.cli import main as cli_main
from playerfl_core.fl.algorithms import ALGORITHMS, get_algorithm
from playerfl_core.fl.engine import RunConfig, run_federated
from playerfl_core.fl.profiles import make_config
from playerfl_core.fl.units import param_names, prefix, unit_names
from playerfl_core.flower.client import _handle
from playerfl_core.flower.link import simulate
from playerfl_core.flower.wire import PROTOCOL, FlowerRunError, Job, _header

ROUNDS = 4  # FedLAMA re-sets its intervals after round 3: every mechanism runs
RUNS = [(name, "after_aggregation") for name in ALGORITHMS] + [
    ("prefix_p2", "after_aggregation"),
    ("playerfl-disagreement", "after_aggregation"),
    ("playerfl-cost", "after_aggregation"),
    ("playerfl-cost2", "after_aggregation"),
    ("fedavg", "before_aggregation"),
]


def _job(name: str, timing: str, seed: int = 0) -> Job:
    config = make_config("heart", "quick", seed=seed, rounds=ROUNDS, device="cpu")
    config.eval_timing, config.progress = timing, False
    return Job("heart", name, {}, asdict(config), "quick", seed)


@pytest.fixture(scope="module")
def flower(tmp_path_factory):
    missing = Job("no_such_federation", "fedavg", {}, _job("fedavg", "after_aggregation").config)
    jobs = [missing] + [_job(name, timing) for name, timing in RUNS]
    return simulate(jobs, silos=4, out_dir=tmp_path_factory.mktemp("flower"))


def test_a_silo_pointed_at_a_missing_dataset_stops_that_run_only(flower):
    """The silos cannot load it: the run stops with their message, the next runs go on."""
    assert [f["run"].split("/")[0] for f in flower.failed] == ["no_such_federation"]
    error = flower.failed[0]["error"]
    assert "failed: DataError" in error and "no_such_federation" in error
    assert "Traceback" not in error and set(flower.table["algorithm"]) >= set(ALGORITHMS)


@pytest.fixture(scope="module")
def heart():
    return load("heart", profile="quick", seed=0)


def _in_process(heart, job: Job) -> pd.DataFrame:
    return run_federated(heart, get_algorithm(job.algorithm), RunConfig(**job.config)).table()


@pytest.mark.parametrize(("name", "timing"), RUNS)
def test_every_row_equals_the_in_process_run(flower, heart, name, timing):
    job = _job(name, timing)
    expected = _in_process(heart, job)
    got = flower.table[
        (flower.table["algorithm"] == name)
        & flower.table.index.isin(_rows_of(flower.table, name, timing))
    ].reset_index(drop=True)
    pd.testing.assert_frame_equal(got, expected, check_exact=True)


def _rows_of(table: pd.DataFrame, name: str, timing: str):
    """Index of one run's rows: runs of one algorithm follow each other in job order."""
    same = [r for r in RUNS if r[0] == name]
    blocks = table.index[table["algorithm"] == name]
    size = len(blocks) // len(same)
    k = same.index((name, timing))
    return blocks[k * size : (k + 1) * size]


def _uploads(flower, name: str) -> pd.DataFrame:
    wire = flower.wire[(flower.wire["algorithm"] == name) & (flower.wire["call"] == "uploads")]
    assert len(wire), name
    return wire


def test_playerfl_local_units_never_leave_a_silo(flower, heart):
    table = flower.table[flower.table["algorithm"] == "playerfl"]
    p = int(table.query("metric == 'split_p'")["value"].iloc[0])
    units = unit_names(_model(heart))
    assert 1 <= p < len(units)
    federated = set(param_names(_model(heart), prefix(_model(heart), p)))
    local = set(param_names(_model(heart), units[p:]))
    sent = set().union(*_uploads(flower, "playerfl")["tensors_from_silo"].map(set))
    assert sent == federated and not sent & local
    reports = flower.wire.query("algorithm == 'playerfl' and call == 'reports'")
    assert set(reports["round"]) == {0} and (reports["numbers_from_silo"] == len(units)).all()


def test_local_sends_nothing_and_fedbabu_keeps_its_head(flower, heart):
    assert (_uploads(flower, "local")["bytes_from_silo"] == 0).all()
    head = set(param_names(_model(heart), unit_names(_model(heart))[-1:]))
    babu = set().union(*_uploads(flower, "fedbabu")["tensors_from_silo"].map(set))
    assert babu and not babu & head


def test_fedavg_uploads_the_whole_model_every_round(flower, heart):
    every = set(param_names(_model(heart), unit_names(_model(heart))))
    up = _uploads(flower, "fedavg")
    assert all(set(names) == every for names in up["tensors_from_silo"])
    assert up.groupby("round")["silo"].nunique().eq(4).all()


def _model(heart):
    from playerfl_core.fl.models import model_for

    return model_for(heart, 1.0, 0)


# -- bad input: clear messages on the silo's side -------------------------------------------------
def _message(call: str, job: Job, **head) -> Message:
    """A message as a SuperNode receives it (metadata given: no Flower run needed)."""
    record = _header(job)
    for key, value in head.items():
        record[key] = value
    meta = Metadata(
        run_id=1,
        message_id="",
        src_node_id=0,
        dst_node_id=1,
        reply_to_message_id="",
        group_id="",
        created_at=0.0,
        ttl=60.0,
        message_type=f"query.{call}",
    )
    return Message(RecordDict({"head": record}), metadata=meta)


def _context(partition_id=0) -> Context:
    config = {} if partition_id is None else {"partition-id": partition_id}
    return Context(run_id=1, node_id=1, node_config=config, state=RecordDict(), run_config={})


def test_a_silo_refuses_a_server_with_other_code():
    job = _job("fedavg", "after_aggregation")
    with pytest.raises(FlowerRunError, match="different code"):
        _handle(_message("hello", job, code="0123456789ab"), _context())
    with pytest.raises(FlowerRunError, match="different code"):
        _handle(_message("hello", job, protocol=PROTOCOL + 1), _context())


def test_a_silo_without_a_valid_partition_says_how_to_start_it():
    job = _job("fedavg", "after_aggregation")
    with pytest.raises(FlowerRunError, match="partition-id"):
        _handle(_message("hello", job), _context(partition_id=7))
    with pytest.raises(FlowerRunError, match="--node-config"):
        _handle(_message("hello", job), _context(partition_id=None))


def test_a_silo_computes_with_the_jobs_thread_count():
    """CPU kernels give other last bits with other thread counts: a silo takes the job's."""
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        job = _job("fedavg", "after_aggregation")
        assert job.threads == 2  # the count of the process that made the job
        torch.set_num_threads(1)
        _handle(_message("hello", replace(job, threads=3)), _context())
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)


def test_cli_refuses_flower_on_a_gpu(tmp_path, capsys):
    code = cli_main(
        [
            "run",
            "--dataset",
            "heart",
            "--backend",
            "flower",
            "--device",
            "cuda",
            "--out",
            str(tmp_path / "t.csv"),
        ]
    )
    assert code == 2 and "--backend flower runs on the CPU" in capsys.readouterr().err
