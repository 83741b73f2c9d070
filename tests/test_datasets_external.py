"""The paper's other five federations on tiny synthetic files written in the real layouts.

None of EMNIST, CIFAR-10, Fed-ISIC-2019, Sentiment140 or MIMIC-III is on the build machine, so
each test writes a few files exactly as the real distributions lay them out (idx files, CIFAR
python batches, FLamby's ISIC folder and CSVs, the Sentiment140 CSV, MIMIC-III's CSVs, a BERT
model folder) and checks what the loader builds from them.
"""

from __future__ import annotations

import gzip
import pickle
import struct

import numpy as np
import pytest
import torch

import data_prep
from data_prep import DataError, cifar10, emnist, isic2019

# --- writers of the real layouts ------------------------------------------------------------


def write_idx(path, array: np.ndarray) -> None:
    """An idx file of unsigned bytes: magic 0x0000 08 <ndim>, big-endian int32 dims, data."""
    head = bytes([0, 0, 8, array.ndim]) + b"".join(struct.pack(">i", d) for d in array.shape)
    path.write_bytes(head + array.astype(np.uint8).tobytes())


def write_emnist(root, n=600, seed=0, gz=False):
    rng = np.random.default_rng(seed)
    raw = root / "EMNIST" / "raw"
    raw.mkdir(parents=True)
    labels = np.arange(n) % 62
    images = rng.integers(0, 256, size=(n, 28, 28))
    for f, arr in zip(emnist.FILES, (images, labels), strict=True):
        write_idx(raw / f, arr)
        if gz:
            (raw / f"{f}.gz").write_bytes(gzip.compress((raw / f).read_bytes()))
            (raw / f).unlink()
    return images, labels


def write_cifar(root, per_batch=60, seed=0):
    """Five python batches as the official ones: protocol-2 pickles of a dict with bytes keys
    b'batch_label', b'labels' (list of int), b'data' (uint8 [N, 3072]), b'filenames'."""
    rng = np.random.default_rng(seed)
    folder = root / cifar10.FOLDER
    folder.mkdir(parents=True)
    out = []
    for i, name in enumerate(cifar10.BATCH_MD5):
        data = rng.integers(0, 256, size=(per_batch, 3072)).astype(np.uint8)
        labels = [int(v) for v in (np.arange(per_batch) + i) % 10]
        batch = {
            b"batch_label": f"training batch {i + 1} of 5".encode(),
            b"labels": labels,
            b"data": data,
            b"filenames": [f"img_{i}_{k}.png".encode() for k in range(per_batch)],
        }
        (folder / name).write_bytes(pickle.dumps(batch, protocol=2))
        out.append((data, labels))
    return out


# --- EMNIST ---------------------------------------------------------------------------------


def test_emnist_layout_sizes_and_normalisation(tmp_path):
    images, labels = write_emnist(tmp_path)
    fd = data_prep.load("emnist", data_root=tmp_path, samples_per_client=100, min_per_client=5)
    assert fd.n_clients == 5 and fd.num_classes == 62 and fd.model == "fmnist_cnn"
    assert fd.class_names[:11] == [*"0123456789", "A"] and fd.class_names[-1] == "z"
    assert sum(sum(c.sizes().values()) for c in fd.clients) == 500
    for c in fd.clients:
        n = sum(c.sizes().values())
        assert c.sizes()["test"] == -(-n // 5)  # 20 % test, rounded up
        assert tuple(c.x_train.shape[1:]) == (1, 28, 28)
    # pixels follow the authors' normalisation: every stored value maps back to a byte
    x = torch.cat([c.x_train for c in fd.clients])
    raw = x * emnist.STD + emnist.MEAN
    assert torch.allclose(raw * 255, (raw * 255).round(), atol=1e-3)
    pooled = set(np.unique(np.concatenate([c.y_train.numpy() for c in fd.clients])))
    assert pooled <= set(range(62)) and len(pooled) > 40


def test_emnist_unpacks_gz_and_reports_truncation(tmp_path):
    write_emnist(tmp_path, gz=True)
    assert "unpacked" in emnist.prepare(tmp_path)
    images = tmp_path / "EMNIST" / "raw" / emnist.FILES[0]
    images.write_bytes(images.read_bytes()[:-100])
    with pytest.raises(
        DataError, match="emnist-byclass-train-images-idx3-ubyte is truncated or corrupted"
    ):
        data_prep.load("emnist", data_root=tmp_path, samples_per_client=50, min_per_client=5)


def test_emnist_missing_files_say_what_and_where(tmp_path):
    with pytest.raises(DataError) as err:
        data_prep.load("emnist", data_root=tmp_path)
    msg = str(err.value)
    for part in (*emnist.FILES, str(tmp_path / "EMNIST" / "raw"), "gzip.zip", emnist.ARCHIVE_MD5):
        assert part in msg


# --- CIFAR-10 -------------------------------------------------------------------------------


def test_cifar_layout_sizes_channels_and_statistics(tmp_path):
    batches = write_cifar(tmp_path)
    fd = data_prep.load("cifar10", data_root=tmp_path, samples_per_client=60, verify=False,
                        min_per_client=5)  # fmt: skip
    assert fd.n_clients == 5 and fd.num_classes == 10 and fd.model == "cifar_cnn"
    assert sum(sum(c.sizes().values()) for c in fd.clients) == 300 == 5 * 60
    assert all(tuple(c.x_test.shape[1:]) == (3, 32, 32) for c in fd.clients)
    # all 300 images used: channel means of the stored tensors undo to the raw pixel means
    x = torch.cat([torch.cat([c.x_train, c.x_val, c.x_test]) for c in fd.clients])
    raw = np.concatenate([d for d, _ in batches]).reshape(-1, 3, 32, 32) / 255.0
    mean = torch.tensor(cifar10.MEAN).view(1, 3, 1, 1)
    std = torch.tensor(cifar10.STD).view(1, 3, 1, 1)
    undone = (x * std + mean).mean(dim=(0, 2, 3))
    assert torch.allclose(undone, torch.tensor(raw.mean(axis=(0, 2, 3))).float(), atol=1e-4)
    assert "CIFAR-100" in fd.notes and "verify=False" in fd.source


def test_cifar_checks_official_md5_before_unpickling(tmp_path):
    write_cifar(tmp_path)
    with pytest.raises(DataError, match=r"data_batch_1 does not match the official MD5"):
        data_prep.load("cifar10", data_root=tmp_path, samples_per_client=60)


def test_cifar_refuses_code_in_a_pickle_and_truncation(tmp_path):
    write_cifar(tmp_path)
    evil = tmp_path / cifar10.FOLDER / "data_batch_2"

    class Boom:
        def __reduce__(self):
            return (print, ("pwned",))

    evil.write_bytes(pickle.dumps({b"data": Boom()}, protocol=2))
    with pytest.raises(DataError, match="data_batch_2 is not a readable CIFAR.*refusing global"):
        cifar10.read_train(tmp_path, verify=False)
    first = tmp_path / cifar10.FOLDER / "data_batch_1"
    first.write_bytes(first.read_bytes()[:500])
    with pytest.raises(DataError, match="data_batch_1 is not a readable CIFAR python batch"):
        cifar10.read_batch(first, verify=False)


def test_cifar_missing_files_say_what_and_where(tmp_path):
    with pytest.raises(DataError) as err:
        data_prep.load("cifar10", data_root=tmp_path)
    msg = str(err.value)
    for part in ("data_batch_1", "data_batch_5", str(tmp_path / "cifar-10-batches-py"),
                 cifar10.ARCHIVE, cifar10.ARCHIVE_MD5):  # fmt: skip
        assert part in msg


# --- Fed-ISIC-2019 --------------------------------------------------------------------------

ISIC_CENTRES = (  # FLamby's `dataset` strings (lesion-id prefix + HAM sub-dataset)
    "BCN_nan", "HAM_vidir_molemax", "HAM_vidir_modern", "HAM_rosendahl", "MSK4nan",
    "HAM_vienna_dias",
)  # fmt: skip


def write_isic(root, per_centre=12, seed=0):
    """FLamby's preprocessed layout: JPEGs (shorter side 224 in the real files; smaller here),
    the ground-truth CSV with one-hot columns, the FL metadata CSV with the `dataset` column."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    where = root / isic2019.FOLDER
    (where / isic2019.IMAGES).mkdir(parents=True)
    gt, meta, k = [], [], 0
    for centre in ISIC_CENTRES:
        for i in range(per_centre):
            name = f"ISIC_{k:07d}"
            k += 1
            category = isic2019.ONE_HOT[i % 6]  # MEL, NV, BCC, AK, BKL, DF
            row = {"image": name, **{c: float(c == category) for c in isic2019.ONE_HOT}}
            gt.append(row)
            meta.append({"image": name, "age_approx": 50.0, "anatom_site_general": "torso",
                         "sex": "male", "dataset": centre})  # fmt: skip
            pixels = rng.integers(0, 256, size=(30, 40, 3)).astype(np.uint8)
            Image.fromarray(pixels).save(where / isic2019.IMAGES / f"{name}.jpg")
    import pandas as pd

    pd.DataFrame(gt).to_csv(where / isic2019.GROUND_TRUTH, index=False)
    pd.DataFrame(meta).to_csv(where / isic2019.METADATA, index=False)
    return where


def test_isic_centres_classes_crops(tmp_path):
    write_isic(tmp_path)
    fd = data_prep.load("isic2019", data_root=tmp_path, image_size=16, max_per_centre=6)
    # alphabetical centre order read from the metadata, first four kept
    assert [c.name for c in fd.clients] == [
        "BCN_nan", "HAM_rosendahl", "HAM_vidir_modern", "HAM_vidir_molemax",
    ]  # fmt: skip
    assert fd.class_names == ["BCC", "BKL", "MEL", "NV"] and fd.model == "isic_cnn"
    for c in fd.clients:
        # 12 images, 8 of the kept classes (AK, DF dropped), capped at 6: test ceil(1.2) = 2,
        # val ceil(0.8) = 1, train 3
        assert c.sizes() == {"train": 3, "val": 1, "test": 2}
        assert tuple(c.x_train.shape[1:]) == (3, 16, 16)
    uncapped = data_prep.load("isic2019", data_root=tmp_path, image_size=16, max_per_centre=99)
    assert all(sum(c.sizes().values()) == 8 for c in uncapped.clients)
    labels = torch.cat([torch.cat([c.y_train, c.y_val, c.y_test]) for c in uncapped.clients])
    # per centre: MEL, NV, BCC, BKL twice each -> codes 2, 3, 0, 1
    assert torch.bincount(labels, minlength=4).tolist() == [8, 8, 8, 8]


def test_isic_bad_image_and_csv_give_data_error(tmp_path):
    where = write_isic(tmp_path)
    jpg = where / isic2019.IMAGES / "ISIC_0000001.jpg"
    jpg.write_bytes(jpg.read_bytes()[:40])
    with pytest.raises(DataError, match="ISIC_0000001.jpg is not a readable image"):
        data_prep.load("isic2019", data_root=tmp_path, image_size=16)
    jpg.unlink()
    with pytest.raises(DataError, match="ISIC_0000001.jpg is listed in the CSVs but missing"):
        data_prep.load("isic2019", data_root=tmp_path, image_size=16)
    (where / isic2019.METADATA).write_text("image,age_approx\nISIC_0000000,50\n")
    with pytest.raises(DataError, match=r"Metadata_FL.csv lacks columns \['dataset'\]"):
        data_prep.load("isic2019", data_root=tmp_path, image_size=16)


def test_isic_missing_files_say_what_and_where(tmp_path):
    with pytest.raises(DataError) as err:
        data_prep.load("isic2019", data_root=tmp_path)
    for part in (isic2019.IMAGES, isic2019.GROUND_TRUTH, isic2019.METADATA,
                 str(tmp_path / "isic2019"), "FLamby", "CC BY-NC"):  # fmt: skip
        assert part in str(err.value)
