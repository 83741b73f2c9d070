"""Tests for data_prep on the real data (digits ship with scikit-learn; heart and
Fashion-MNIST come from `python -m data_prep.prepare`)."""

from __future__ import annotations

import urllib.error
from pathlib import Path

import numpy as np
import pytest
import torch

import data_prep
from data_prep import ClientData, DataError, FederatedData, base, fmnist, heart
from data_prep.partition import dirichlet_label_skew, label_skew, train_val_test_split


@pytest.fixture(scope="module")
def digit_labels() -> np.ndarray:
    from sklearn.datasets import load_digits

    return load_digits().target


@pytest.fixture(scope="module")
def heart_fd() -> FederatedData:
    return data_prep.load("heart", seed=0)


def _fmnist_root() -> Path:
    root = data_prep.data_root()
    if not (fmnist._have_raw(root) or (fmnist.DEBIAN_DIR / f"{fmnist.FILES[0]}.gz").is_file()):
        pytest.skip(
            f"Fashion-MNIST absent: neither {fmnist.raw_dir(root)} nor {fmnist.DEBIAN_DIR} has "
            "it (apt-get install dataset-fashion-mnist, then python -m data_prep.prepare)"
        )
    return root


def _pooled(fd: FederatedData, split: str) -> torch.Tensor:
    return torch.cat([c.split(split)[0] for c in fd.clients])


# --- partitioning -----------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [0.1, 0.5, 100.0])
def test_dirichlet_partition_is_disjoint_and_complete(digit_labels, alpha):
    parts = dirichlet_label_skew(digit_labels, 5, alpha, np.random.default_rng(1), min_per_client=1)
    assert len(parts) == 5
    allidx = np.concatenate(parts)
    assert len(allidx) == len(digit_labels)
    assert np.array_equal(np.sort(allidx), np.arange(len(digit_labels)))


def test_label_skew_grows_as_alpha_falls(digit_labels):
    def mean_skew(alpha):
        return np.mean(
            [
                label_skew(
                    dirichlet_label_skew(
                        digit_labels, 5, alpha, np.random.default_rng(s), min_per_client=1
                    ),
                    digit_labels,
                )
                for s in range(5)
            ]
        )

    iid, mid, strong = mean_skew(100.0), mean_skew(0.5), mean_skew(0.1)
    assert iid < 0.1 < mid < strong
    # an IID-by-construction partition has no skew; one class per client has a lot
    assert label_skew([np.arange(len(digit_labels))], digit_labels) == 0.0
    by_class = [np.flatnonzero(digit_labels == c) for c in range(10)]
    assert label_skew(by_class, digit_labels) > 0.85


def test_dirichlet_min_size_is_enforced_or_explained(digit_labels):
    parts = dirichlet_label_skew(digit_labels, 5, 0.3, np.random.default_rng(0), min_per_client=150)
    assert min(len(p) for p in parts) >= 150
    with pytest.raises(DataError, match="raise alpha"):
        dirichlet_label_skew(
            digit_labels, 10, 0.05, np.random.default_rng(0), min_per_client=170, max_redraws=20
        )
    with pytest.raises(DataError, match="cannot give"):
        dirichlet_label_skew(digit_labels, 10, 1.0, np.random.default_rng(0), min_per_client=500)


@pytest.mark.parametrize(
    ("n", "sizes"), [(100, (64, 16, 20)), (46, (28, 8, 10)), (303, (193, 49, 61))]
)
def test_train_val_test_split_sizes_and_disjoint(n, sizes):
    tr, va, te = train_val_test_split(n, np.random.default_rng(0))
    assert (len(tr), len(va), len(te)) == sizes
    assert np.array_equal(np.sort(np.concatenate([tr, va, te])), np.arange(n))


def test_split_is_seeded():
    a = train_val_test_split(50, np.random.default_rng(3))
    b = train_val_test_split(50, np.random.default_rng(3))
    c = train_val_test_split(50, np.random.default_rng(4))
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not np.array_equal(a[2], c[2])


# --- container checks -------------------------------------------------------------------


def _client(x, y, name="c"):
    return ClientData(name, x, y, x, y, x, y)


def test_empty_split_is_an_error_single_class_a_warning():
    fd = data_prep.load("digits", seed=0)
    x, y = fd.clients[0].x_train, fd.clients[0].y_train
    args = {
        "num_classes": 10,
        "input_shape": (1, 8, 8),
        "model": "m",
        "class_names": list("0123456789"),
    }
    empty = ClientData("e", x, y, x[:0], y[:0], x, y)
    with pytest.raises(DataError, match="'val' is empty"):
        FederatedData("t", [empty], **args)
    one = y == y[0]
    with pytest.warns(UserWarning, match="client 'c' has a single class"):
        FederatedData("t", [_client(x[one], y[one]), _client(x, y, "b")], **args)
    with pytest.raises(DataError, match="float32"):
        FederatedData("t", [_client(x.double(), y)], **args)


def test_data_that_would_give_silent_or_misleading_numbers_is_named():
    """Issue 25: one class (macro-F1 1.0 whatever the model), NaN inputs in any split, huge
    inputs and a single client each get one line naming the problem and the fix."""
    fd = data_prep.load("digits", seed=0)
    x, y = fd.clients[0].x_train, fd.clients[0].y_train
    two = [_client(x, y), ClientData("b", x, y, x, y, x, y)]
    args = {"input_shape": (1, 8, 8), "model": "m"}
    with pytest.raises(DataError, match="at least 2 classes, got num_classes = 1"):
        FederatedData("t", two, num_classes=1, class_names=["0"], **args)
    ten = {"num_classes": 10, "class_names": list("0123456789"), **args}
    nan_val = x.clone()
    nan_val[3, 0, 0, 0] = float("nan")
    with pytest.raises(DataError, match=r"split 'val': 1 of \d+ samples have NaN or infinite"):
        FederatedData("t", [two[0], ClientData("b", x, y, nan_val, y, x, y)], **ten)
    with pytest.warns(UserWarning, match=r"inputs reach 1e\+30 in absolute value; standardise"):
        FederatedData("t", [two[0], ClientData("b", x * 1e30, y, x, y, x, y)], **ten)
    with pytest.warns(UserWarning, match="one client .*every algorithm trains Local"):
        FederatedData("t", [two[0]], **ten)


# --- digits -----------------------------------------------------------------------------


def test_digits_shapes_range_and_determinism():
    fd = data_prep.load("digits", seed=0)
    assert fd.n_clients == 5 and fd.num_classes == 10 and fd.input_shape == (1, 8, 8)
    assert fd.model == "small_cnn"
    assert sum(sum(c.sizes().values()) for c in fd.clients) == 1797
    x = torch.cat([_pooled(fd, s) for s in ("train", "val", "test")])
    assert x.dtype == torch.float32 and float(x.min()) == 0.0 and float(x.max()) == 1.0
    again, other = data_prep.load("digits", seed=0), data_prep.load("digits", seed=1)
    for a, b in zip(fd.clients, again.clients, strict=True):
        assert torch.equal(a.x_train, b.x_train) and torch.equal(a.y_test, b.y_test)
    assert not torch.equal(fd.clients[0].y_train, other.clients[0].y_train)
    assert data_prep.load("digits", "paper", seed=0, n_clients=3).n_clients == 3


# --- heart ------------------------------------------------------------------------------


def test_heart_sites_and_labels(heart_fd):
    rows = {s: len(df) for s, df in heart.read_sites(data_prep.data_root()).items()}
    assert rows == {"cleveland": 303, "hungarian": 261, "switzerland": 46, "va": 130}
    assert [c.name for c in heart_fd.clients] == list(heart.SITES)
    for c in heart_fd.clients:
        assert sum(c.sizes().values()) == rows[c.name]
        for s in ("train", "val", "test"):
            x, y = c.split(s)
            assert not torch.isnan(x).any()
            assert int(y.min()) >= 0 and int(y.max()) <= 4
    assert heart_fd.num_classes == 5 and heart_fd.model == "mlp"
    assert heart_fd.input_shape == (len(heart.FEATURES),)


def test_heart_preprocessing_fitted_on_train_only(heart_fd):
    feats = heart.FEATURES
    cont = [feats.index(c) for c in heart.CONTINUOUS]
    train = _pooled(heart_fd, "train")[:, cont]
    held_out = torch.cat([_pooled(heart_fd, "val"), _pooled(heart_fd, "test")])[:, cont]
    assert torch.allclose(train.mean(0), torch.zeros(len(cont)), atol=1e-5)
    assert torch.allclose(train.std(0, unbiased=False), torch.ones(len(cont)), atol=1e-5)
    # held-out rows are transformed with the training statistics, not re-standardised
    assert held_out.mean(0).abs().max() > 0.02


def test_heart_missing_codes_become_indicators(heart_fd):
    feats = heart.FEATURES
    i_ind, i_chol = feats.index("chol_missing"), feats.index("chol")
    swiss = next(c for c in heart_fd.clients if c.name == "switzerland")
    x = torch.cat([swiss.x_train, swiss.x_val, swiss.x_test])
    assert bool((x[:, i_ind] == 1).all())  # every kept Swiss row has chol == 0
    assert torch.unique(x[:, i_chol]).numel() == 1  # all imputed with one median
    total = sum(
        int(_pooled(heart_fd, s)[:, feats.index("trestbps_missing")].sum())
        for s in ("train", "val", "test")
    )
    assert total == 1  # one VA row has trestbps == 0
    onehot = _pooled(heart_fd, "train")[:, [feats.index(f"cp_{v}") for v in (1, 2, 3, 4)]]
    assert torch.equal(onehot.sum(1), torch.ones(len(onehot)))


def test_heart_determinism_and_split_seed():
    a, b = data_prep.load("heart", seed=3), data_prep.load("heart", seed=3)
    assert all(torch.equal(p.x_test, q.x_test) for p, q in zip(a.clients, b.clients, strict=True))
    c = data_prep.load("heart", seed=4)
    assert not torch.equal(a.clients[0].y_train, c.clients[0].y_train)
    d = data_prep.load("heart", seed=4, split_seed=3)
    assert torch.equal(a.clients[0].x_train, d.clients[0].x_train)


def test_heart_missing_files_without_network(tmp_path, monkeypatch):
    monkeypatch.setattr(heart, "SHARED_DIR", tmp_path / "no_shared")

    def offline(*args, **kwargs):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(base.urllib.request, "urlopen", offline)
    with pytest.raises(DataError) as err:
        data_prep.load("heart", data_root=tmp_path)
    msg = str(err.value)
    assert heart.URL in msg and str(tmp_path / "heart") in msg
    assert all(f in msg for f in heart.SHA256)
    assert not list((tmp_path / "heart").glob("*"))  # no partial files left behind


def _local_heart() -> Path:
    """The prepared copy in the data root, used as the 'shared' source for temp roots."""
    heart.prepare(data_prep.data_root())
    return data_prep.data_root() / "heart"


def test_heart_corrupt_file_is_rejected(tmp_path):
    heart.prepare(tmp_path, shared_dir=_local_heart())
    victim = tmp_path / "heart" / "processed.va.data"
    victim.write_bytes(victim.read_bytes().replace(b"63,1,4,140", b"63,1,4,141", 1))
    with pytest.raises(DataError) as err:
        data_prep.load("heart", data_root=tmp_path)
    msg = str(err.value)
    assert "processed.va.data" in msg and heart.SHA256["processed.va.data"] in msg
    assert base.sha256sum(victim) in msg


def test_heart_prepare_is_idempotent(tmp_path):
    assert "copied" in heart.prepare(tmp_path, shared_dir=_local_heart())
    assert "already present" in heart.prepare(tmp_path, shared_dir=tmp_path / "nowhere")


def test_download_verifies_checksum(tmp_path):
    src = _local_heart() / "processed.va.data"
    url = src.resolve().as_uri()  # file:// exercises the real code path without a network
    good = base.download(url, tmp_path / "ok.data", heart.SHA256["processed.va.data"])
    assert good.read_bytes() == src.read_bytes()
    with pytest.raises(DataError, match="checksum mismatch"):
        base.download(url, tmp_path / "bad.data", "0" * 64)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.data"]


# --- Fashion-MNIST ----------------------------------------------------------------------


def test_fmnist_shapes_normalisation_and_seeding():
    root = _fmnist_root()
    fd = data_prep.load("fmnist", seed=0, data_root=root)
    assert fd.n_clients == 5 and fd.input_shape == (1, 28, 28) and fd.model == "cnn3"
    assert sum(sum(c.sizes().values()) for c in fd.clients) == 5 * 400
    x = torch.cat([_pooled(fd, s) for s in ("train", "val", "test")])
    assert x.dtype == torch.float32 and x.shape[1:] == (1, 28, 28)
    assert float(x.min()) == pytest.approx(-0.2860 / 0.3530, abs=1e-5)
    assert float(x.max()) == pytest.approx((1 - 0.2860) / 0.3530, abs=1e-5)
    assert abs(float(x.mean())) < 0.1 and abs(float(x.std()) - 1) < 0.1
    ys = torch.cat([c.y_train for c in fd.clients])

    assert set(ys.unique().tolist()) <= set(range(10))
    same, other = (data_prep.load("fmnist", seed=s, data_root=root) for s in (0, 1))
    for a, b in zip(fd.clients, same.clients, strict=True):
        assert torch.equal(a.x_train, b.x_train) and torch.equal(a.y_val, b.y_val)
    assert not torch.equal(fd.clients[0].x_test[:5], other.clients[0].x_test[:5])
    assert (
        data_prep.load("fmnist", "paper", seed=0, data_root=root, samples_per_client=100).params[
            "samples_per_client"
        ]
        == 100
    )


def test_fmnist_prepare_from_debian_package(tmp_path):
    if not (fmnist.DEBIAN_DIR / f"{fmnist.FILES[0]}.gz").is_file():
        pytest.skip(f"Debian package dataset-fashion-mnist not installed ({fmnist.DEBIAN_DIR})")
    assert "decompressed" in fmnist.prepare(tmp_path)
    assert "already present" in fmnist.prepare(tmp_path)
    fresh = data_prep.load("fmnist", seed=0, data_root=tmp_path, samples_per_client=50)
    assert "dataset-fashion-mnist" in fresh.source or "idx files" in fresh.source


# --- registry ---------------------------------------------------------------------------


def test_registry_errors_are_helpful():
    assert {"digits", "fmnist", "heart"} <= set(data_prep.available_datasets())
    with pytest.raises(DataError) as err:
        data_prep.load("cifar")
    assert all(n in str(err.value) for n in ("digits", "fmnist", "heart", "dataset_module"))
    with pytest.raises(DataError, match="quick, standard, paper"):
        data_prep.load("digits", profile="huge")
    with pytest.raises(DataError, match="samples_per_client"):
        data_prep.load("heart", samples_per_client=10)


def test_data_root_env_and_independence_from_engine(monkeypatch, tmp_path):
    monkeypatch.setenv("PLAYERFL_DATA", str(tmp_path))
    assert data_prep.data_root() == tmp_path.resolve()
    monkeypatch.delenv("PLAYERFL_DATA")
    assert data_prep.data_root() == Path(data_prep.__file__).resolve().parent.parent / "data"
    for f in Path(data_prep.__file__).parent.glob("*.py"):
        assert "playerfl_core" not in f.read_text(), f"{f.name} must not import the engine"


# --- heterogeneity variants (data_prep.skew) -------------------------------------------------
from data_prep import registry, skew  # noqa: E402
from data_prep.partition import iid_partition  # noqa: E402


def test_iid_partition_is_equal_disjoint_and_complete():
    parts = iid_partition(103, 5, np.random.default_rng(0))
    assert sorted(len(p) for p in parts) == [20, 20, 21, 21, 21]
    assert np.array_equal(np.sort(np.concatenate(parts)), np.arange(103))
    with pytest.raises(DataError, match=r"n_clients must be in 1\.\.10 "):
        iid_partition(10, 11, np.random.default_rng(0))


@pytest.mark.parametrize(
    "name, kind, alpha",
    [("digits_alpha0.05", None, 0.05), ("fmnist_rotate", "rotate", None),
     ("digits_invert_alpha0.1", "invert", 0.1), ("digits", None, None), ("heart_rotate", 0, 0)],
)  # fmt: skip
def test_variant_names_encode_their_parameters(name, kind, alpha):
    v = registry.parse_variant(name)
    if name in ("digits", "heart_rotate"):
        assert v is None
    else:
        assert (v.base, v.kind, v.alpha) == (name.split("_")[0], kind, alpha)
        assert skew.variant_name(v.base, v.kind, v.alpha) == name


@pytest.mark.parametrize("bad", ["digits_alpha0", "digits_alpha-0.5", "fmnist_rotate_alphaX"])
def test_alpha_must_be_positive(bad):
    with pytest.raises(DataError, match=r"alpha must be a number > 0 \(valid range: alpha > 0"):
        data_prep.load(bad)


def test_dirichlet_rejects_alpha_zero_with_the_valid_range(digit_labels):
    with pytest.raises(DataError, match=r"valid range: alpha > 0"):
        dirichlet_label_skew(digit_labels, 5, 0.0, np.random.default_rng(0))


def test_label_skew_variant_is_the_base_at_that_alpha():
    v = data_prep.load("digits_alpha0.1", seed=3)
    b = data_prep.load("digits", seed=3, alpha=0.1)
    assert v.name == "digits_alpha0.1" and v.model == b.model
    for cv, cb in zip(v.clients, b.clients, strict=True):
        assert torch.equal(cv.x_train, cb.x_train) and torch.equal(cv.y_test, cb.y_test)
    with pytest.raises(DataError, match="fixes alpha=0.1"):
        data_prep.load("digits_alpha0.1", alpha=0.5)


def test_feature_skew_keeps_labels_iid_and_transforms_each_client():
    inv = data_prep.load("digits_invert", seed=1)
    rot = data_prep.load("digits_rotate", seed=1)
    # Same IID label partition whatever the transformation; near-equal client sizes.
    for a, b in zip(inv.clients, rot.clients, strict=True):
        assert torch.equal(a.y_train, b.y_train) and torch.equal(a.y_test, b.y_test)
    sizes = [sum(c.sizes().values()) for c in inv.clients]
    assert max(sizes) - min(sizes) <= 1

    def skew_of(fd):
        labels = torch.cat([torch.cat([c.y_train, c.y_val, c.y_test]) for c in fd.clients])
        edges = np.cumsum([0] + sizes_of(fd))
        return label_skew(
            [np.arange(a, b) for a, b in zip(edges[:-1], edges[1:], strict=True)], labels.numpy()
        )

    def sizes_of(fd):
        return [sum(c.sizes().values()) for c in fd.clients]

    assert skew_of(inv) < 0.12 < 0.3 < skew_of(data_prep.load("digits_alpha0.1", seed=1))
    # Client 0 is untouched by inversion and rotated by 0 degrees: both equal the IID split.
    assert torch.allclose(inv.clients[0].x_train, rot.clients[0].x_train, atol=1e-6)
    noise_0 = data_prep.load("digits_noise", seed=1).clients[0].x_val
    assert torch.equal(inv.clients[0].x_val, noise_0)
    assert not torch.allclose(inv.clients[1].x_train, rot.clients[1].x_train, atol=0.1)


def test_transformations_do_what_they_say():
    x = torch.rand(4, 1, 8, 8)
    lo, hi = 0.0, 1.0
    assert torch.equal(skew.KINDS["invert"](x, 1, 5, lo, hi, 0), 1 - x)
    assert torch.equal(skew.KINDS["invert"](x, 2, 5, lo, hi, 0), x)
    assert torch.allclose(skew.KINDS["rotate"](x, 0, 5, lo, hi, 0), x, atol=1e-6)
    assert torch.allclose(skew.KINDS["rotate"](x, 4, 5, lo, hi, 0), x.flip(-1, -2), atol=1e-5)
    assert torch.equal(skew.KINDS["noise"](x, 0, 5, lo, hi, 7), x)
    noisy = skew.KINDS["noise"](x, 4, 5, lo, hi, 7)
    assert torch.equal(noisy, skew.KINDS["noise"](x, 4, 5, lo, hi, 7))
    assert 0.4 < float((noisy - x).std()) < 0.6


def test_quantity_skew_changes_only_how_many_samples_each_client_holds():
    qty = data_prep.load("digits_quantity", seed=1)
    iid = data_prep.load("digits_invert", seed=1)
    sizes = [sum(c.sizes().values()) for c in qty.clients]
    pooled = sum(sum(c.sizes().values()) for c in iid.clients)
    assert sum(sizes) == pooled  # every sample, once
    assert min(sizes) >= skew.QUANTITY_FLOOR * pooled - 1 and max(sizes) > 3 * min(sizes)
    assert sizes == [
        sum(c.sizes().values()) for c in data_prep.load("digits_quantity", seed=1).clients
    ]
    assert sizes != [
        sum(c.sizes().values()) for c in data_prep.load("digits_quantity", seed=2).clients
    ]
    labels = torch.cat([torch.cat([c.y_train, c.y_val, c.y_test]) for c in qty.clients]).numpy()
    edges = np.cumsum([0, *sizes])
    parts = [np.arange(a, b) for a, b in zip(edges[:-1], edges[1:], strict=True)]
    assert label_skew(parts, labels) < 0.12  # labels stay IID

    def inputs(fd):  # the pooled samples, order-free: untouched inputs give the same multiset
        x = torch.cat([torch.cat([c.x_train, c.x_val, c.x_test]) for c in fd.clients])
        return x.flatten(1).sum(1).sort().values

    assert torch.equal(inputs(qty), inputs(data_prep.load("digits", seed=1)))
    assert registry.parse_variant("digits_quantity").kind == skew.QUANTITY
    with pytest.raises(DataError, match="quantity skew keeps labels IID, so it has no _alpha"):
        registry.parse_variant("digits_quantity_alpha0.1")


def test_concept_shift_swaps_the_labels_of_odd_clients_in_pairs_and_nothing_else():
    swap = data_prep.load("digits_swap", seed=1)
    iid = data_prep.load("digits_invert", seed=1)  # the same IID parts, inputs inverted instead
    for k, (s, c) in enumerate(zip(swap.clients, iid.clients, strict=True)):
        for part in ("train", "val", "test"):
            got, plain = getattr(s, f"y_{part}"), getattr(c, f"y_{part}")
            assert torch.equal(got, plain ^ 1 if k % 2 == 1 else plain), (k, part)
        if k % 2 == 0:  # inputs untouched where invert leaves them alone
            assert torch.equal(s.x_train, c.x_train)
    assert "concept shift" in swap.notes
    assert registry.parse_variant("fmnist_swap").kind == skew.SWAP
    with pytest.raises(DataError, match="concept shift keeps labels IID, so it has no _alpha"):
        registry.parse_variant("digits_swap_alpha0.1")
    # an odd number of classes: the last class has no partner and keeps its label
    from dataclasses import replace

    three = [replace(c, y_train=torch.tensor([0, 1, 2]), y_val=c.y_val % 3, y_test=c.y_test % 3)
             for c in swap.clients[:2]]  # fmt: skip
    assert skew._swapped(three, 3)[1].y_train.tolist() == [1, 0, 2]


def test_mixed_variant_has_the_label_skew_and_the_transformation():
    mixed = data_prep.load("digits_invert_alpha0.3", seed=2)
    label = data_prep.load("digits_alpha0.3", seed=2)
    for k, (m, b) in enumerate(zip(mixed.clients, label.clients, strict=True)):
        assert torch.equal(m.y_train, b.y_train)
        expected = 1 - b.x_train if k % 2 else b.x_train
        assert torch.allclose(m.x_train, expected, atol=1e-6)


def test_variants_train_with_their_base_settings():
    from dataclasses import replace

    from playerfl_core import make_config

    variant = make_config("fmnist_rotate_alpha0.1", "quick")
    assert variant.dataset == "fmnist_rotate_alpha0.1"  # settings record what they were made for
    assert replace(variant, dataset=None) == replace(make_config("fmnist", "quick"), dataset=None)
    with pytest.raises(ValueError, match="unknown dataset .imagenet.*dataset_module"):
        make_config("imagenet", "quick")
