"""The paper-scale study: its declaration, and its chunked, resumable computation (on the tiny
CPU stand-in)."""

import dataclasses
import json
import time

import numpy as np
import pandas as pd
import pytest

from playerfl_core.fl.algorithms import get_algorithm
from playerfl_core.fl.algorithms.prefix import prefix_name
from playerfl_core.fl.batched import OutOfTime, run_prefix_batch
from playerfl_core.fl.engine import run_federated
from playerfl_core.fl.errors import DivergenceError
from playerfl_core.study import paper_scale as P


def tiny(tmp_path, **kw):
    lines = []
    summary = P.compute(P.TINY, tmp_path, 600, "cpu", kw.pop("k", 2), say=lines.append, **kw)
    return summary, lines


def chunks(tmp_path):
    return sorted((tmp_path / P.TINY.name).glob("*"))


def test_the_declaration_is_the_papers_sizes():
    s = P.PAPER_SCALE
    assert set(s.federations) == {"fmnist", "fmnist_rotate"} and len(s.seeds) >= 10
    assert s.splits is None and s.profile == "paper" and dict(s.loader)["eval_per_client"] == 2000
    cfg = s.config("fmnist", "cpu", lr=s.learning_rates[0])
    assert (cfg.rounds, cfg.batch_size, cfg.width, cfg.lr) == (100, 128, 1.0, 1e-3)
    assert s.learning_rates == (1e-3, 5e-4)
    assert s.declared and s.commit and s.why


def test_a_second_call_computes_nothing_and_the_rows_are_the_engines(tmp_path):
    first, _ = tiny(tmp_path)
    assert (first["computed"], first["left"], first["chunks"]) == (2, 0, 1)
    second, _ = tiny(tmp_path)
    assert (second["computed"], second["already_done"]) == (0, 2)
    (record,) = [json.loads(p.read_text()) for p in chunks(tmp_path) if p.suffix == ".json"]
    assert record["driver"] == "batched" and record["status"] == "ok"
    assert {"machine", "torch", "code", "seconds"} <= set(record)
    table = P.load(P.TINY, [tmp_path / P.TINY.name])
    single = pd.concat(
        [
            run_federated(
                P.federation(P.TINY, d, s),
                get_algorithm(prefix_name(p)),
                dataclasses.replace(P.TINY.config(d, "cpu", lr=lr), seed=s),
            ).table()
            for d, lr, s, p in P.study_tasks(P.TINY)
        ],
        ignore_index=True,
    )
    assert len(table) == len(single)
    np.testing.assert_allclose(table["value"], single["value"], rtol=1e-4, atol=1e-5)


def test_a_chunk_cut_off_or_damaged_is_computed_again(tmp_path):
    tiny(tmp_path)
    json_file = next(p for p in chunks(tmp_path) if p.suffix == ".json")
    json_file.unlink()  # killed between writing the rows and the record
    summary, lines = tiny(tmp_path)
    assert summary["computed"] == 2 and any("cut off" in line for line in lines)
    rows = next(p for p in chunks(tmp_path) if p.suffix == ".parquet")
    rows.write_bytes(rows.read_bytes()[:100])  # truncated rows under an intact record
    summary, lines = tiny(tmp_path)
    assert summary["computed"] == 2 and any("refusing" in x and "differ" in x for x in lines)
    assert tiny(tmp_path)[0]["computed"] == 0


def test_a_chunk_committed_to_stores_is_skipped(tmp_path, monkeypatch):
    tiny(tmp_path / "pending")
    monkeypatch.setenv("PLAYERFL_STORES", str(tmp_path))  # stores/pending/<study.work>
    assert tiny(tmp_path / "second")[0]["computed"] == 0


def test_out_of_budget_stops_cleanly_and_writes_nothing(tmp_path):
    summary = P.compute(P.TINY, tmp_path / "late", 1e-3, "cpu", 2, say=lambda line: None)
    assert (summary["computed"], summary["left"]) == (0, 2) and summary["stopped"]
    assert not list((tmp_path / "late" / P.TINY.name).glob("*"))


def test_a_batch_past_its_deadline_stops_after_its_first_round():
    d, lr, s, p = P.study_tasks(P.TINY)[0]
    data = P.federation(P.TINY, d, s)
    with pytest.raises(OutOfTime, match="after its deadline"):
        run_prefix_batch([(data, s, p)], P.TINY.config(d, "cpu", lr=lr), time.monotonic())


def test_bad_options_are_one_line(tmp_path, capsys):
    from playerfl_core.cli import main

    assert main(["study", "run", "paper_scale", "--out", str(tmp_path), "--budget-s", "0",
                 "--tiny"]) == 2  # fmt: skip
    assert "--budget-s must be > 0" in capsys.readouterr().err
    (tmp_path / "file").write_text("")
    assert main(["study", "run", "paper_scale", "--out", str(tmp_path / "file"), "--tiny"]) == 2
    assert "is a file" in capsys.readouterr().err
    assert main(["study", "run", "paper_scale"]) == 2
    assert "give --out FOLDER" in capsys.readouterr().err


def test_a_diverged_run_is_isolated_and_recorded_the_others_kept(tmp_path, monkeypatch):
    real = P.compute_chunk

    def diverge_at_p1(study, tasks, device, deadline):
        if any(p == 1 for *_, p in tasks):
            raise DivergenceError("training loss became nan")
        return real(study, tasks, device, deadline)

    monkeypatch.setattr(P, "compute_chunk", diverge_at_p1)
    summary, _ = tiny(tmp_path)
    records = [json.loads(p.read_text()) for p in chunks(tmp_path) if p.suffix == ".json"]
    status = {tuple(r["runs"]): r["status"] for r in records}
    assert summary["computed"] == 2 and set(status.values()) == {"ok", "diverged"}
    assert all(len(runs) == 1 for runs in status)
    assert tiny(tmp_path)[0]["computed"] == 0  # a diverged run is not recomputed on every call


def test_the_command_says_what_it_did_in_one_line(tmp_path, capsys):
    from playerfl_core.cli import main

    argv = ["study", "run", "paper_scale", "--out", str(tmp_path), "--tiny", "--device", "cpu"]
    assert main(argv) == 0
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    first, second = [line for line in lines if line.startswith("paper_scale (")]
    assert "2 runs computed in 1 chunks" in first and "0 of 2 left" in first
    assert "0 runs computed" in second and "2 already done" in second


def test_a_finished_study_is_committed_as_one_table_with_its_record(tmp_path, capsys):
    """Once no run is left, the runner commits every chunk's rows as one table with its record
    (the store format of every study); a second call leaves both as they are."""
    from playerfl_core.cli import main
    from playerfl_core.study import runner

    argv = ["study", "run", "paper_scale", "--out", str(tmp_path), "--tiny", "--device", "cpu"]
    assert main(argv) == 0
    path = tmp_path / P.TINY.name / runner.TABLE_FILE
    table, record = runner.load_store(path)
    pd.testing.assert_frame_equal(table, P.load(P.TINY, [tmp_path / P.TINY.name]))
    assert record["runs"] == 2 and record["device_seconds"] > 0 and record["diverged"] == []
    assert record["study_key"] == P.TINY.key() and {"machine", "code", "sha256"} <= set(record)
    written = path.read_bytes()
    assert main(argv) == 0
    assert "already holds these 2 runs: left as it is" in capsys.readouterr().out
    assert path.read_bytes() == written
