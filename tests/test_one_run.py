"""Chapter 01 reads its runs from the committed quick archive, so every machine shows the same
numbers; any other run is trained by the chapter."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch

from playerfl_core import get_algorithm, make_config, run_federated
from playerfl_core.book.reports import one_run as R
from playerfl_core.study import machine
from playerfl_core.study.archive import archive_dir
from playerfl_core.study.run_store import REPO_ROOT


@pytest.fixture(autouse=True)
def _committed_stores(monkeypatch):
    monkeypatch.setenv("PLAYERFL_STORES", str(REPO_ROOT / "stores"))  # conftest hides them
    R._archive.cache_clear()
    yield
    R._archive.cache_clear()


def _config(**kw):
    return make_config("heart", "quick", seed=kw.pop("seed", 0), device="cpu", progress=False, **kw)


def test_the_archived_run_is_the_run_the_chapter_would_train():
    from data_prep import load

    stored = R.committed_run("heart", "playerfl", _config(), {}, "quick")
    assert stored is not None and set(stored["algorithm"]) == {"playerfl"}
    manifest = json.loads((archive_dir("quick") / "manifest.json").read_text())
    entry = next(e for e in manifest["runs"] if e["run_id"].startswith("heart_playerfl_lr0.01_s0_"))
    previous = torch.get_num_threads()
    torch.set_num_threads(1)  # as the archive's runs and the chapters compute
    try:
        trained = run_federated(load("heart", profile="quick", seed=0), get_algorithm("playerfl"),
                                _config()).table()  # fmt: skip
    finally:
        torch.set_num_threads(previous)
    assert list(stored.columns) == list(trained.columns) and len(stored) == len(trained)
    if machine.fingerprint(threads=1)["key"] == entry["machine"]:
        pd.testing.assert_frame_equal(stored, trained.reset_index(drop=True), check_exact=True)


def test_any_other_run_is_left_to_the_chapter_to_train(monkeypatch):
    assert R.committed_run("heart", "playerfl", _config(), {"threshold": 0.5}, "quick") is None
    assert R.committed_run("heart", "playerfl", _config(rounds=3), {}, "quick") is None
    assert R.committed_run("heart", "playerfl", _config(seed=987), {}, "quick") is None
    assert R.committed_run("heart", "playerfl", _config(), {}, "paper") is None  # no archive
    monkeypatch.setattr(R, "equivalent_codes", lambda code, path=None: {code})
    R._archive.cache_clear()
    assert R.committed_run("heart", "playerfl", _config(), {}, "quick") is None  # unchecked code


def test_a_close_decision_is_named_with_the_rise_that_set_it():
    """Chapter 01 gave Heart's split as firm while the rise that set it, 1.03, was 3 % above
    t = 1: one run's split must not read as firm when a rise the rule looked at is near t."""
    # F = 1, 2.03, 2.5: rises 1.03 (l = 1, above t = 1: p = 1) and 0.23
    sens = pd.DataFrame({"dataset": "heart", "unit": ["a", "b", "c"], "unit_index": [1, 2, 3],
                         "sensitivity": [1.0, 1.03, 0.47]})  # fmt: skip
    table = R.split_table(sens, {"heart": 1})
    assert table.loc["Heart", "rise at p"] == 1.03 and table.loc["Heart", "federated units"] == "a"
    text = R.close_calls(sens, {"heart": 1}, threshold=1.0)
    # "A decision here was close" followed a sentence on Fashion-MNIST: "here" pointed there
    assert text.startswith("One of this run's decisions was close (on Heart a rise of 1.03 ")
    # chapter 04 counts the split over seeds (its section on stability), not chapter 03
    assert "Chapter 04 counts {doc}`how often the split moves over seeds <04_does_the_rule" in text
    none = R.close_calls(sens, {"heart": 1}, threshold=0.5)
    assert none.startswith("None of this run's decisions was close")
    far = sens.assign(sensitivity=[1.0, 3.0, 0.1])  # rise 3.0 at l = 1: far from t = 1
    assert R.close_calls(far, {"heart": 1}, threshold=1.0).startswith("None of this run's")


def test_every_datasets_split_is_stated_not_the_first_ones_only():
    """Chapter 01's Result box counted Heart's clients in its share but named Fashion-MNIST's
    split only."""
    table = pd.DataFrame(
        {
            "p": [3, 1],
            "federated units": ["layer1, layer2, layer3", "fc1"],
            "rise at p": [2.75, 1.03],
        },
        index=pd.Index(["Fashion-MNIST", "Heart"], name="dataset"),
    )
    assert R.split_sentence(table) == (
        "On Fashion-MNIST the rule federates the first three units (p = 3: layer1, layer2, "
        "layer3); on Heart, the first unit (p = 1: fc1). Each client keeps the rest local."
    )
    assert R.split_sentence(table.iloc[1:]) == (
        "On Heart the rule federates the first unit (p = 1: fc1). Each client keeps the rest local."
    )
