"""Studies as declarations (``study.registry``), one runner (``study.runner``) and one command
(``playerfl study``)."""

import json
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from playerfl_core.cli import main
from playerfl_core.study import authors_mode as A
from playerfl_core.study import fair_sweeps as F
from playerfl_core.study import paper_scale as P
from playerfl_core.study import registry, rungs, runner
from playerfl_core.study.archive import load_archive, read_manifest, stores_dir
from playerfl_core.study.declaration import REQUIRED

FIXTURES = Path(__file__).parent / "fixtures" / "study_runner"
"""Tables the deleted per-study process pools computed on this machine (one thread per run)."""


@pytest.fixture
def committed(monkeypatch):
    monkeypatch.delenv("PLAYERFL_STORES", raising=False)


def test_every_registered_study_is_declared_completely():
    studies = registry.studies()
    assert len(studies) == 15
    for name, study in studies.items():
        assert name == study.name, name
        assert all(getattr(study, f) not in ("", (), None) for f in REQUIRED), name
        module = runner.computes(study)  # importable
        assert study.declared == "unknown" or study.declared.startswith("2026-12-"), name
        assert hasattr(module, "run_one") or hasattr(module, "compute_table"), name


def test_the_paper_scale_declaration_keeps_its_key():
    """Its chunks' records carry this key; a different one would refuse every chunk."""
    assert (P.PAPER_SCALE.key(), P.TINY.key()) == ("e302e0ca2433", "92844c65ada1")


def test_the_ladders_and_the_rescores_declarations_keep_their_keys():
    """Their committed stores were computed under these declarations: the same federations,
    seeds, sizes, declaration date and commit, wherever the declaration lives."""
    names = ["eval_rung", "middle_rung", "scale_ladder", "r1_rescore", "r2_rescore", "val_rescore"]
    assert [registry.study(n).key() for n in names] == [
        "4119c462f003", "e5d3d186424f", "be107a21dddb", "6c7288f9a2f3", "fd7e1823860f",
        "34be2b00987b",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "name", ["middle_rung", "eval_rung", "scale_ladder", "r1_rescore", "r2_rescore", "val_rescore"]
)
def test_each_committed_store_loads_as_its_module_reads_it_and_matches_its_sha256(name, committed):
    study = registry.study(name)
    state = runner.store_state(study)
    assert state["committed"] and state["sha256_matches"] is True
    table, record = runner.computes(study).load(name)
    again, _ = runner.load_store(study.store_path())
    pd.testing.assert_frame_equal(table, again)
    assert state["cpu_seconds"] == record["cpu_seconds"] > 0


def test_show_reports_the_store_its_sha256_and_its_cost(committed, capsys):
    assert main(["study", "show", "middle_rung"]) == 0
    out = capsys.readouterr().out
    assert "ladder/middle_sweep.parquet committed; SHA-256 matches its record" in out
    assert "cost 9,317 CPU-s over 60 runs" in out and "declared: 2026-12-02" in out
    assert main(["study", "show", "split_rule_test"]) == 0
    assert "SHA-256 matches its record; its record keeps no cost" in capsys.readouterr().out


def test_show_names_a_store_whose_sha256_differs(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("PLAYERFL_STORES", raising=False)
    source = stores_dir() / "ladder"
    (tmp_path / "ladder").mkdir()
    for name in ("paper_first_epoch.parquet", "paper_first_epoch.parquet.json"):
        shutil.copy(source / name, tmp_path / "ladder" / name)
    record = tmp_path / "ladder" / "paper_first_epoch.parquet.json"
    record.write_text(json.dumps({**json.loads(record.read_text()), "sha256": "0" * 64}))
    monkeypatch.setenv("PLAYERFL_STORES", str(tmp_path))
    assert main(["study", "show", "scale_ladder"]) == 1
    assert "SHA-256 DIFFERS from its record" in capsys.readouterr().out


def test_list_and_bad_names_say_one_line(committed, capsys):
    assert main(["study", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 15 and lines[8].split()[:2] == ["middle_rung", "committed"]
    assert main(["study", "show", "middle"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("playerfl: Unknown study 'middle'") and "middle_rung" in err
    assert "\n" not in err
    assert main(["study", "run", "eval_rung", "--tiny"]) == 2
    assert "has no tiny stand-in" in capsys.readouterr().err


def test_dry_run_lists_every_run_and_what_is_done(tmp_path, capsys):
    assert main(["study", "run", "middle_rung", "--tiny", "--dry-run", "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["todo  fmnist_s0_p0", "todo  fmnist_s0_p1"]
    assert lines[-1].startswith("middle_rung_tiny: 6 runs, 6 to compute")


def test_a_tiny_run_equals_the_old_pools_table_and_resumes_only_what_is_missing(
    tmp_path, monkeypatch
):
    rungs.federation.cache_clear()
    study = registry.tiny("middle_rung")
    options = runner.RunOptions(workers=1, progress=False)
    assert runner.compute(study, options, tmp_path) == 6
    table, totals = runner.collect(study, tmp_path)
    pd.testing.assert_frame_equal(table, pd.read_parquet(FIXTURES / "middle_tiny.parquet"))
    assert totals["runs"] == 6 and not totals["diverged"]
    for name in ("fmnist_s0_p2", "fmnist_s0_p5"):  # cut off: no record, or no record yet
        (tmp_path / f"{name}.json").unlink()
    with pytest.raises(ValueError, match="2 of the middle_rung_tiny study's 6 runs are not"):
        runner.collect(study, tmp_path)
    computed, real = [], rungs.run_one
    monkeypatch.setattr(rungs, "run_one", lambda s, t, d: computed.append(t) or real(s, t, d))
    assert runner.compute(study, options, tmp_path) == 2
    assert sorted(computed) == [("fmnist", 0, 2), ("fmnist", 0, 5)]
    again, _ = runner.collect(study, tmp_path)
    pd.testing.assert_frame_equal(again, table)
    assert runner.compute(study, options, tmp_path) == 0
    rows = tmp_path / "fmnist_s0_p3.parquet"  # damaged under an intact record: computed again
    rows.write_bytes(rows.read_bytes()[:100])
    lines = []
    assert runner.compute(study, options, tmp_path, say=lines.append) == 1
    assert lines and "fmnist_s0_p3.json" in lines[0] and "differ from the record" in lines[0]
    pd.testing.assert_frame_equal(runner.collect(study, tmp_path)[0], table)


def test_the_first_epochs_through_the_runner_equal_the_old_pools(tmp_path):
    study = replace(
        registry.study("scale_ladder"), federations=("digits",), seeds=(0,), profile="quick"
    )
    runner.compute(study, runner.RunOptions(workers=1, progress=False), tmp_path)
    table, totals = runner.collect(study, tmp_path)
    pd.testing.assert_frame_equal(table, pd.read_parquet(FIXTURES / "ladder_digits.parquet"))
    assert totals["runs"] == 1 and totals["cpu_seconds"] > 0


def test_a_run_commits_its_table_with_its_record_once(tmp_path, monkeypatch, capsys):
    """A tiny run through the command: table and record in --out; a second call computes
    nothing and leaves the table as it is."""
    rungs.federation.cache_clear()
    assert main(["study", "run", "middle_rung", "--tiny", "--out", str(tmp_path),
                 "--workers", "1"]) == 0  # fmt: skip
    path = tmp_path / "middle_rung_tiny" / "middle_sweep.parquet"
    record = json.loads(Path(f"{path}.json").read_text())
    assert record["runs"] == 6 and record["samples_per_client"] == 60 and record["lr"] == 3e-3
    pd.testing.assert_frame_equal(
        pd.read_parquet(path), pd.read_parquet(FIXTURES / "middle_tiny.parquet")
    )
    capsys.readouterr()
    assert main(["study", "run", "middle_rung", "--tiny", "--out", str(tmp_path)]) == 0
    assert "already holds these 6 runs: left as it is" in capsys.readouterr().out


def test_the_authors_mode_declaration_is_its_committed_seeds(committed):
    record = json.loads((A.store_path().with_name(f"{A.TABLE_FILE}.json")).read_text())
    assert {d: tuple(s) for d, s in record["seeds"].items()} == A.SEEDS


def test_studies_have_no_entry_points_of_their_own():
    """``playerfl study run`` is the one way to compute a study (``machine`` is no study)."""
    folder = Path(__file__).parents[1] / "playerfl_core" / "study"
    entry = re.compile(r"^(def main\(|if __name__ == .__main__.:)", re.MULTILINE)
    with_main = sorted(p.name for p in folder.glob("*.py") if entry.search(p.read_text()))
    assert with_main == ["machine.py"]


def test_every_study_says_whether_its_store_is_committed_and_what_it_cost(committed, capsys):
    shown = {}
    for name in registry.studies():
        assert main(["study", "show", name]) == 0, name
        shown[name] = capsys.readouterr().out.splitlines()[-1]
    assert all(" committed; SHA-256 matches its record; " in shown[n] for n in shown
               if n != "paper_scale"), shown  # fmt: skip
    assert "stores/fair/runs.parquet committed" in shown["fair_sweeps"]
    assert "cost 6,293 CPU-s over 735 runs" in shown["fair_sweeps"]
    assert "cost 1,630 CPU-s over 600 runs" in shown["authors_mode"]
    assert "is not committed; compute it: playerfl study run paper_scale" in shown["paper_scale"]


def test_the_committed_archive_reads_as_a_store_and_recommits_the_same_numbers(tmp_path, committed):
    """The fair sweep's archive (``manifest.json`` beside ``runs.parquet``) loads through the
    runner as a table and its record; committed again in the one format (table and record) it
    loads as the same table, with the same runs and the same rates."""
    study = registry.study("fair_sweeps")
    path = runner.store_file(study)
    table, record = runner.load_store(path)
    pd.testing.assert_frame_equal(table, load_archive(path.parent)[0])
    assert record["entries"] == read_manifest(path.parent)["runs"] and record["runs"] == 735
    out = tmp_path / "fair" / runner.TABLE_FILE
    extra = {k: record[k] for k in ("runs", "entries", "cpu_seconds", "profile")}
    assert runner.commit(study, table, extra, out, say=lambda line: None) == out
    again, kept = runner.load_store(out)
    pd.testing.assert_frame_equal(again, table)
    assert runner.sha256_matches(out, kept) and kept["entries"] == record["entries"]
    pd.testing.assert_frame_equal(F.own_rates(again, kept), F.own_rates(table, record))
    assert runner.commit(study, again, extra, out, say=lambda line: None) is None


def test_one_worker_keeps_each_run_as_it_ends_so_a_stop_loses_none(tmp_path, monkeypatch):
    """With one local worker (a GPU, --workers 1) runs compute in this process one at a time:
    each is kept before the next starts, so Ctrl-C during the third keeps the first two."""
    study = registry.tiny("middle_rung")
    started = []

    def stopped_at_the_third(s, task, device):
        started.append(task)
        if len(started) == 3:
            raise KeyboardInterrupt
        return task, pd.DataFrame({"value": [float(len(started))]}), {"cpu_seconds": 0.0}

    monkeypatch.setattr(rungs, "run_one", stopped_at_the_third)
    with pytest.raises(KeyboardInterrupt):
        runner.compute(study, runner.RunOptions(workers=1, progress=False), tmp_path)
    assert sorted(runner.done_runs(tmp_path)) == ["fmnist_s0_p0", "fmnist_s0_p1"]
