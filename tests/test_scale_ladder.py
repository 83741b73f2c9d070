"""The scale ladder (``study.scale_ladder``): the rule's first-epoch split at two sizes."""

import pandas as pd
import pytest

from playerfl_core.study import scale_ladder as L
from playerfl_core.study.split_scores import first_epoch_sensitivities


def _first_epochs(work, datasets, seeds, profile, workers):
    """The ladder's first epochs through the study runner (what ``playerfl study run`` does)."""
    from dataclasses import replace

    from playerfl_core.study import registry, runner

    study = replace(
        registry.study("scale_ladder"), federations=datasets, seeds=seeds, profile=profile
    )
    runner.compute(study, runner.RunOptions(workers=workers, progress=False), work)
    return runner.collect(study, work)


def test_compute_is_the_first_epoch_of_each_seed_whatever_the_workers(tmp_path):
    """Each (federation, seed) is one task; the table is the same as computing the seeds one by
    one in this process, and the CPU-seconds are counted."""
    import torch

    table, totals = _first_epochs(tmp_path, ("digits",), (0, 1), "quick", workers=2)
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        direct = first_epoch_sensitivities("digits", [0, 1], "quick", progress=False)
    finally:
        torch.set_num_threads(previous)
    pd.testing.assert_frame_equal(
        table, direct.sort_values(["dataset", "seed", "client", "depth"], ignore_index=True)
    )
    assert totals["cpu_seconds"] > 0


def test_the_ladder_summary_counts_every_split_per_rung():
    rows = [("fmnist", "book", s, 3) for s in range(10)]
    rows += [("fmnist", "paper", s, 3 if s < 7 else 4) for s in range(10)]
    at = pd.DataFrame(rows, columns=["dataset", "rung", "seed", "p_rule"])
    summary = L.ladder_summary(at).set_index("rung")
    assert summary.loc["book", "splits"] == "3×10" and summary.loc["paper", "splits"] == "3×7, 4×3"
    assert summary.loc["paper", "modal_share"] == pytest.approx(0.7)


@pytest.mark.slow
def test_the_committed_paper_size_choice_is_reproduced_for_one_seed(monkeypatch, tmp_path):
    """One seed of the committed paper-size first epochs, recomputed here: the rule's split is
    the same (its numbers may drift in their last bits on another CPU; the split may not)."""
    from playerfl_core.study.split_scores import rule_splits

    monkeypatch.delenv("PLAYERFL_STORES", raising=False)  # the committed stores
    committed = L.load()
    assert committed is not None, "stores/ladder is not committed"
    table, _ = committed
    seed0 = table[(table["dataset"] == "fmnist") & (table["seed"] == 0)]
    again, _ = _first_epochs(tmp_path, ("fmnist",), (0,), L.PAPER, workers=1)
    split = rule_splits(seed0).set_index("variant")["p_rule"]
    assert rule_splits(again).set_index("variant")["p_rule"].equals(split)
