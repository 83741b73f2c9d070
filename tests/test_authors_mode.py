"""The authors' protocol (``protocol="authors"``): their data pipelines, settings and round
selection, and the hash-seed defect of their FedLP and pFedLA."""

import hashlib
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import data_prep
from data_prep import heart
from data_prep.base import DataError
from data_prep.partition import authors_dirichlet
from playerfl_core import get_algorithm, run_federated
from playerfl_core.fl.profiles import make_config
from playerfl_core.fl.schema import TRAINING_LOSS
from playerfl_core.stats.metrics import best_val_loss
from playerfl_core.stats.results import select_rounds

REPO = Path(__file__).resolve().parents[1]
ROWS = {"cleveland": 303, "hungarian": 261, "switzerland": 46, "va": 130}
"""Rows per site after the authors' (FLamby's) column drop and row filter (reference §2.7)."""


def sizes_of(n: int) -> dict:
    """Reference §2.1: 20 % test (rounded up), then 20 % of the rest as validation."""
    test = math.ceil(0.2 * n)
    val = math.ceil(0.2 * (n - test))
    return {"train": n - test - val, "val": val, "test": test}


# -- Heart ------------------------------------------------------------------------------------
def test_authors_heart_is_their_pipeline_and_one_split_for_every_seed():
    first = data_prep.load("heart", seed=0, protocol="authors")
    other = data_prep.load("heart", seed=13, protocol="authors")
    raw = heart.read_sites(data_prep.data_root())
    assert first.input_shape == (10,) and first.focal_loss == heart.FOCAL_LOSS
    for c, c2 in zip(first.clients, other.clients, strict=True):
        assert c.sizes() == sizes_of(ROWS[c.name])
        labels = torch.cat([c.y_train, c.y_val, c.y_test])
        site_counts = np.bincount(raw[c.name]["num"].astype(int), minlength=5)
        assert torch.bincount(labels, minlength=5).tolist() == site_counts.tolist()
        for split in ("train", "val", "test"):  # the same rows, whatever the run seed
            assert torch.equal(c.split(split)[0], c2.split(split)[0])
            assert torch.equal(c.split(split)[1], c2.split(split)[1])
    # their scaling: the hard-coded (mean, variance); sex, fbs, exang left as 0/1
    x = torch.cat([c.x_train for c in first.clients] + [c.x_val for c in first.clients])
    age_mean, age_var = heart.AUTHORS_SCALER["age"]
    ages = x[:, heart.KEPT.index("age")] * math.sqrt(age_var) + age_mean
    assert set(ages.round().tolist()) <= set(pd.concat(raw.values())["age"].tolist())
    for binary in ("sex", "fbs", "exang"):
        assert set(x[:, heart.KEPT.index(binary)].tolist()) <= {0.0, 1.0}


def test_authors_heart_split_differs_from_the_books_per_seed_split():
    book = [data_prep.load("heart", seed=s).clients[0].y_test for s in (0, 1)]
    assert not torch.equal(*book)  # the book re-splits per seed; the authors' mode does not


def test_authors_protocol_refuses_what_it_cannot_do():
    with pytest.raises(DataError, match="no authors' data pipeline"):
        data_prep.load("digits", protocol="authors")
    with pytest.raises(DataError, match="split seed at 42"):
        data_prep.load("heart", protocol="authors", split_seed=3)
    with pytest.raises(ValueError, match="protocol='authors' sets augment"):
        make_config("heart", protocol="authors", augment=True)
    book_data = data_prep.load("heart", seed=0)
    config = make_config("heart", protocol="authors", rounds=1, progress=False)
    with pytest.raises(ValueError, match="built with protocol='book'"):
        run_federated(book_data, get_algorithm("fedavg"), config)


def test_make_config_sets_the_authors_loss_timing_and_augmentation():
    h = make_config("heart", protocol="authors")
    f = make_config("fmnist", protocol="authors")
    assert (h.eval_timing, h.loss, h.augment) == ("before_aggregation", "focal", False)
    assert (f.eval_timing, f.loss, f.augment) == ("before_aggregation", "cross_entropy", True)
    book = make_config("heart")
    assert (book.protocol, book.eval_timing, book.loss) == (
        "book",
        "after_aggregation",
        "cross_entropy",
    )


# -- Fashion-MNIST ----------------------------------------------------------------------------
def test_authors_fmnist_is_the_first_images_with_their_dirichlet_partition():
    from data_prep.fmnist import _read_train

    seed = 3
    data = data_prep.load("fmnist", seed=seed, protocol="authors")
    n = 5 * 400  # the quick profile's clients x samples per client
    images, targets = _read_train(str(data_prep.data_root()))
    labels = targets[:n].numpy()
    # the partition, drawn again by hand: per class ascending, floor(share x count), the
    # remainder to the last client, consecutive slices in stored order
    rng = np.random.default_rng(seed)
    expected = np.zeros((5, 10), dtype=int)
    for c in range(10):
        idx = np.flatnonzero(labels == c)
        counts = np.floor(rng.dirichlet(np.full(5, 0.5)) * len(idx)).astype(int)
        counts[-1] = len(idx) - counts[:-1].sum()
        expected[:, c] = counts
    got = np.array(
        [
            torch.bincount(torch.cat([c.y_train, c.y_val, c.y_test]), minlength=10).tolist()
            for c in data.clients
        ]
    )
    assert (got == expected).all()
    # the images are the first n in stored order, each exactly once
    pixels = torch.cat([torch.cat([c.x_train, c.x_val, c.x_test]) for c in data.clients])
    first = ((images[:n].float() / 255 - 0.2860) / 0.3530).unsqueeze(1)
    assert _sorted_rows(pixels) == _sorted_rows(first)
    for c in data.clients:
        assert c.sizes() == sizes_of(len(torch.cat([c.y_train, c.y_val, c.y_test])))


def _sorted_rows(x: torch.Tensor) -> list[bytes]:
    return sorted(hashlib.sha1(r.numpy().tobytes()).digest() for r in x.flatten(1))


def test_authors_dirichlet_cuts_each_class_into_consecutive_slices():
    labels = np.array([0, 1, 0, 1, 0, 0, 1, 2, 2, 0, 1, 2] * 5)
    parts = authors_dirichlet(labels, 3, 0.5, np.random.default_rng(0))
    assert sorted(np.concatenate(parts).tolist()) == list(range(len(labels)))
    for c in range(3):
        in_order = [i for p in parts for i in p if labels[i] == c]
        assert in_order == np.flatnonzero(labels == c).tolist()


# -- round selection by the training loss -----------------------------------------------------
def test_rounds_are_selected_by_the_validation_value_of_the_training_loss():
    data = data_prep.load("heart", seed=0, protocol="authors")
    config = make_config("heart", protocol="authors", seed=0, lr=0.05, progress=False)
    table = run_federated(data, get_algorithm("fedavg"), config).table()
    val = table[table["split"] == "val"]
    by_focal = val[val["metric"] == TRAINING_LOSS].sort_values("round", kind="stable")
    expected = by_focal.loc[by_focal.groupby("client")["value"].idxmin(), ["client", "round"]]
    chosen = select_rounds(table).drop_duplicates("client")[["client", "round"]]
    assert dict(chosen.values.tolist()) == dict(expected.values.tolist())
    # cross-entropy would choose other rounds here, so the test tells the two apart
    by_ce = val[val["metric"] == "loss"].sort_values("round", kind="stable")
    ce_rounds = dict(
        by_ce.loc[by_ce.groupby("client")["value"].idxmin(), ["client", "round"]].values
    )
    assert ce_rounds != dict(expected.values.tolist())
    # learning rates are tuned by the same loss: the weighted mean of each client's best value
    n = table[(table["split"] == "train") & (table["metric"] == "n_samples")]
    weights = n.set_index("client")["value"] / n["value"].sum()
    tuned = (by_focal.groupby("client")["value"].min() * weights).sum()
    assert best_val_loss(table)["value"].item() == pytest.approx(tuned, rel=1e-12)


def test_book_runs_log_no_training_loss_and_stay_selected_by_cross_entropy():
    data = data_prep.load("heart", seed=0)
    config = make_config("heart", seed=0, rounds=3, progress=False)
    table = run_federated(data, get_algorithm("fedavg"), config).table()
    assert TRAINING_LOSS not in set(table["metric"])
    val = table[(table["split"] == "val") & (table["metric"] == "loss")]
    expected = val.loc[val.groupby("client")["value"].idxmin(), ["client", "round"]]
    chosen = select_rounds(table).drop_duplicates("client")[["client", "round"]]
    assert dict(chosen.values.tolist()) == dict(expected.values.tolist())


# -- the hash-seed defect ---------------------------------------------------------------------
AUTHORS_FEDLP = """
import random
units = {name.split(".")[0] for name in %r}   # their layer units: a Python set
random.seed(1)                                # their per-run seed
kept = [u for u in units if random.random() < 0.7]  # one coin per unit, in set order
sizes = %r
print(",".join(units), sum(sizes[u] for u in kept))
"""


def _python(code: str, hash_seed: int) -> str:
    env = {**os.environ, "PYTHONHASHSEED": str(hash_seed), "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_the_authors_fedlp_depends_on_the_hash_seed():
    """Their FedLP flips its coins while iterating a set of layer names: which units a client
    uploads (and so every number after) changes with PYTHONHASHSEED."""
    data = data_prep.load("heart", seed=0, protocol="authors")
    from playerfl_core.fl.models import model_for

    model = model_for(data, 1.0, 0)
    names = [n for n, _ in model.named_parameters()]
    sizes = {
        u: sum(p.numel() for n, p in model.named_parameters() if n.startswith(u + "."))
        for u in model.units
    }
    code = AUTHORS_FEDLP % (names, sizes)
    outputs = [_python(code, h).split() for h in range(6)]
    orders = {o[0] for o in outputs}
    uploaded = {o[1] for o in outputs}
    assert len(orders) > 1  # the set's order moves with the hash seed
    assert len(uploaded) > 1  # and with it the parameters a client uploads


ENGINE_RUN = """
import hashlib, torch
import data_prep
from playerfl_core import get_algorithm, run_federated
from playerfl_core.fl.profiles import make_config
torch.set_num_threads(1)
data = data_prep.load("heart", seed=0)
for name in ("fedlp", "pfedla"):
    config = make_config("heart", seed=0, rounds=2, progress=False)
    table = run_federated(data, get_algorithm(name), config).table()
    print(name, hashlib.sha256(table.to_csv(index=False).encode()).hexdigest())
"""


def test_this_engines_fedlp_and_pfedla_do_not_depend_on_the_hash_seed():
    first = _python(ENGINE_RUN, 0)
    assert [line.split()[0] for line in first.splitlines()] == ["fedlp", "pfedla"]
    assert _python(ENGINE_RUN, 1) == first


def test_a_run_spec_of_the_authors_protocol_names_what_runs():
    from playerfl_core.study.run_store import RunSpec

    spec = RunSpec("heart", "fedavg", 0.1, 0, protocol="authors")
    assert (spec.eval_timing, spec.loss, spec.augment) == ("before_aggregation", "focal", False)
    assert "_before_aggregation_focal_authors_" in spec.run_id
    config = spec.config("cpu")
    assert (config.protocol, config.loss, config.eval_timing) == (
        "authors",
        "focal",
        "before_aggregation",
    )
    assert RunSpec("heart", "fedavg", 0.1, 0).run_id != spec.run_id
