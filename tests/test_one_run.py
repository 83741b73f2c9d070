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
    import playerfl_core.study.code_versions as V

    monkeypatch.setattr(V, "equivalent_codes", lambda code, path=None: {code})
    R._archive.cache_clear()
    assert R.committed_run("heart", "playerfl", _config(), {}, "quick") is None  # unchecked code
