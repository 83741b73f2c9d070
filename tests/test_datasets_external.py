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
from data_prep import DataError, cifar10, emnist, isic2019, mimic3, sent140, text

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
    assert fd.n_clients == 5 and fd.num_classes == 62 and fd.model == "cnn3"
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
    assert fd.n_clients == 5 and fd.num_classes == 10 and fd.model == "cnn5_pad2"
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
    assert cifar10.MEAN == pytest.approx((0.4914, 0.4822, 0.4465), abs=1e-4)  # CIFAR-10's own


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
    assert fd.class_names == ["BCC", "BKL", "MEL", "NV"] and fd.model == "cnn5"
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


# --- text: a BERT-style model folder --------------------------------------------------------

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "##s", "on", "mat",
         "happy", "sad", "day", "patient", "stable", "died", "note", "a", "is", "."]  # fmt: skip
DIM = 8


def write_model_folder(path, lowercase=None):
    """vocab.txt (one token a line) and model.safetensors with BERT's embedding tensor name;
    row i of the embeddings is filled with the value i so rows are recognisable."""
    from safetensors.torch import save_file

    path.mkdir(parents=True)
    (path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    rows = torch.arange(len(VOCAB), dtype=torch.float32)[:, None].repeat(1, DIM)
    other = torch.zeros(3, DIM)
    save_file({"bert.embeddings.word_embeddings.weight": rows, "bert.pooler.dense.bias": other},
              str(path / "model.safetensors"))  # fmt: skip
    if lowercase is not None:
        (path / "tokenizer_config.json").write_text(
            f'{{"do_lower_case": {str(lowercase).lower()}}}'
        )
    return path


def test_wordpiece_maps_a_known_sentence_and_compacts_the_vocabulary(tmp_path):
    wp = text.load_wordpiece(write_model_folder(tmp_path / "bert"), "test", "")
    ids, lengths = text.tokenise(wp, ["The cats sat on the mat.", "sad"], max_len=6)
    # [CLS] the cat ##s sat on the mat . [SEP] = 2 5 6 8 7 9 5 10 20 3; cut to 6 keeps [SEP]
    assert ids == [[2, 5, 6, 8, 7, 3], [2, 12, 3]] and lengths == [10, 3]
    (x,), rows, length = text.compact([ids], wp)
    # compact vocabulary: padding first, then the ids used, sorted: 0 2 3 5 6 7 8 12
    assert length == 6 and x.dtype == torch.float32
    assert x.tolist() == [[1, 3, 4, 6, 5, 2], [1, 7, 2, 0, 0, 0]]
    assert rows[:, 0].tolist() == [0, 2, 3, 5, 6, 7, 8, 12]  # the embedding rows of those ids


def test_tokenizer_config_controls_lowercasing(tmp_path):
    wp = text.load_wordpiece(write_model_folder(tmp_path / "cased", lowercase=False), "t", "")
    assert text.tokenise(wp, ["The cat"], 10)[0] == [[2, 1, 6, 3]]  # "The" unknown when cased


def test_padding_is_masked_in_attention(tmp_path):
    from playerfl_core.fl.models import build_model

    emb = torch.randn(len(VOCAB), DIM)
    emb[0] = 0
    model = build_model("text_transformer", 2, (12,), 1.0, 0, embeddings=emb, max_len=12)
    short = torch.tensor([[2.0, 5, 6, 3, 0, 0]])
    longer = torch.tensor([[2.0, 5, 6, 3, 0, 0, 0, 0, 0, 0, 0, 0]])
    assert torch.allclose(model(short), model(longer), atol=1e-6)
    # a real token where the padding was changes the output: the comparison can fail
    assert not torch.allclose(model(short), model(torch.tensor([[2.0, 5, 6, 3, 7, 0]])))
    assert model.token_embedding_table1.weight[0].abs().sum() == 0
    assert torch.allclose(model.token_embedding_table1.weight[1:].norm(dim=1), torch.ones(20))


def test_missing_or_broken_model_folder_gives_data_error(tmp_path):
    with pytest.raises(DataError, match=r"missing vocab.txt, model.safetensors in .*nowhere"):
        text.load_wordpiece(tmp_path / "nowhere", "sent140", "")
    folder = write_model_folder(tmp_path / "bert")
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:50])
    with pytest.raises(DataError, match="model.safetensors is not a readable safetensors file"):
        text.load_wordpiece(folder, "sent140", "")


# --- Sentiment140 ---------------------------------------------------------------------------

TWEETS = ["the cat sat on the mat", "happy day", "sad day", "the mat is sad", "a happy cat"]


def write_sent140(root, n_users=52):
    """The training CSV: latin-1, no header, quoted six columns; user k has 60 - k tweets."""
    where = root / sent140.FOLDER
    where.mkdir(parents=True)
    lines = []
    for k in range(n_users):
        for i in range(60 - k):
            target = "4" if (i + k) % 2 else "0"
            tweet = TWEETS[i % len(TWEETS)] + (" caf\xe9" if i == 0 else "")
            lines.append(f'"{target}","{k}{i:03d}","Mon Apr 06 22:19:45 PDT 2009","NO_QUERY",'
                         f'"user{k:02d}","{tweet}"')  # fmt: skip
    (where / sent140.CSV).write_bytes(("\n".join(lines) + "\n").encode("latin-1"))
    write_model_folder(where / sent140.DEFAULT_MODEL)
    return where


def test_sent140_clients_are_ranks_36_to_50(tmp_path):
    write_sent140(tmp_path)
    fd = data_prep.load("sent140", profile="paper", data_root=tmp_path)
    # users ranked by count: user00 (60) ... user49 (11); clients = ranks 36..50
    assert [c.name for c in fd.clients] == [f"user{k:02d}" for k in range(35, 50)]
    assert fd.n_clients == 15 and fd.num_classes == 2 and fd.model == "text_transformer"
    for k, c in zip(range(35, 50), fd.clients, strict=True):
        n = 60 - k
        assert sum(c.sizes().values()) == n and c.sizes()["test"] == -(-n // 5)
    # [CLS] the cat sat on the mat [SEP] is the longest tweet (8 tokens; café is unknown: 1)
    assert fd.input_shape == (9,)
    assert fd.model_args["max_len"] == 119 and fd.model_args["embeddings"].shape[1] == DIM
    labels = torch.cat([torch.cat([c.y_train, c.y_val, c.y_test]) for c in fd.clients])
    assert 0.4 < labels.float().mean() < 0.6
    quick = data_prep.load("sent140", data_root=tmp_path, max_per_client=10)
    assert all(sum(c.sizes().values()) == 10 for c in quick.clients)


def test_sent140_truncated_csv_gives_data_error(tmp_path):
    where = write_sent140(tmp_path)
    csv = where / sent140.CSV
    csv.write_bytes(csv.read_bytes()[:-30])  # cut inside the last line's quoted text
    with pytest.raises(DataError, match="training.1600000.processed.noemoticon.csv"):
        data_prep.load("sent140", data_root=tmp_path)
    csv.write_bytes(b'"0","1","date","NO_QUERY","user"\n')  # a row with five columns
    with pytest.raises(DataError, match="line 1 is not 'target"):
        data_prep.load("sent140", data_root=tmp_path)


def test_sent140_missing_files_say_what_and_where(tmp_path):
    with pytest.raises(DataError) as err:
        data_prep.load("sent140", data_root=tmp_path)
    for part in (sent140.CSV, str(tmp_path / "sent140"), "sentiment140.com"):
        assert part in str(err.value)


# --- MIMIC-III ------------------------------------------------------------------------------


def write_mimic(root, per_group=8):
    """ADMISSIONS.csv and NOTEEVENTS.csv with MIMIC-III v1.4's columns. Per group: per_group
    emergency admissions with a valid early note, plus decoys the cohort rules must drop."""
    import pandas as pd

    where = root / mimic3.FOLDER
    where.mkdir(parents=True)
    diagnoses = {
        "mi": "CHEST PAIN", "gi": "UPPER GI BLEED", "infection": "SEPSIS",
        "brain": "SUBDURAL HEMORRHAGE",  # lost by the authors' missing comma; kept here
    }  # fmt: skip
    adm, notes, hadm = [], [], 100000
    cols = dict(ADMISSION_LOCATION="EMERGENCY ROOM ADMIT", DISCHARGE_LOCATION="HOME",
                INSURANCE="Medicare", LANGUAGE="ENGL", RELIGION="CATHOLIC",
                MARITAL_STATUS="MARRIED", ETHNICITY="WHITE", EDREGTIME="", EDOUTTIME="",
                HAS_CHARTEVENTS_DATA=1)  # fmt: skip

    def admission(diagnosis, died, kind="EMERGENCY"):
        nonlocal hadm
        hadm += 1
        adm.append(dict(ROW_ID=hadm, SUBJECT_ID=hadm, HADM_ID=hadm,
                        ADMITTIME="2150-01-01 08:00:00", DISCHTIME="2150-01-09 12:00:00",
                        DEATHTIME="", ADMISSION_TYPE=kind, **cols, DIAGNOSIS=diagnosis,
                        HOSPITAL_EXPIRE_FLAG=died))  # fmt: skip
        return hadm

    def note(h, text, hours=2.0, category="Nursing", iserror=""):
        t = pd.Timestamp("2150-01-01 08:00:00") + pd.Timedelta(hours=hours)
        notes.append(dict(ROW_ID=len(notes) + 1, SUBJECT_ID=h, HADM_ID=h,
                          CHARTDATE=t.strftime("%Y-%m-%d"), CHARTTIME=str(t),
                          STORETIME=str(t), CATEGORY=category, DESCRIPTION="Report",
                          CGID=1, ISERROR=iserror, TEXT=text))  # fmt: skip

    for diagnosis in diagnoses.values():
        for i in range(per_group):
            h = admission(diagnosis, died=int(i % 4 == 0))
            note(h, "patient stable", hours=1)
            note(h, "patient is stable . the patient died", hours=3, category="Physician ")
            note(h, "a note a note a note a note a note a note a note", hours=30)  # > 24 h
            note(h, "the patient the patient the patient the patient", hours=-2)  # before
            note(h, "note note note note note note note note note note", iserror=1)
    h = admission("CHEST PAIN", 0, kind="ELECTIVE")  # not an emergency
    note(h, "patient stable")
    h = admission("FRACTURE", 0)  # diagnosis in no group
    note(h, "patient stable")
    pd.DataFrame(adm).to_csv(where / mimic3.ADMISSIONS, index=False)
    pd.DataFrame(notes).to_csv(where / mimic3.NOTES, index=False)
    write_model_folder(where / mimic3.DEFAULT_MODEL, lowercase=True)
    return where


def test_mimic_cohort_groups_notes_and_labels(tmp_path):
    write_mimic(tmp_path)
    fd = data_prep.load("mimic3", profile="paper", data_root=tmp_path)
    assert [c.name for c in fd.clients] == ["mi", "gi", "infection", "brain"]
    assert fd.params["sizes"] == {"mi": 8, "gi": 8, "infection": 8, "brain": 8}
    for c in fd.clients:
        assert c.sizes() == {"train": 4, "val": 2, "test": 2}  # 8: ceil(1.6), ceil(1.2), rest
        y = torch.cat([c.y_train, c.y_val, c.y_test])
        assert int(y.sum()) == 2  # admissions 0 and 4 of each group died
    # the kept note is the Physician one (9 tokens with [CLS]/[SEP]), not the longer notes
    # charted after 24 h, before admission or flagged ISERROR
    assert fd.input_shape == (9,)
    x = fd.clients[0].x_train
    assert bool((x != 0).all()) and fd.model_args["max_len"] == 512
    cut = data_prep.load("mimic3", data_root=tmp_path, max_len=5, max_per_client=4)
    assert cut.input_shape == (5,) and all(sum(c.sizes().values()) == 4 for c in cut.clients)


def test_mimic_truncated_notes_give_data_error(tmp_path):
    where = write_mimic(tmp_path)
    path = where / mimic3.NOTES
    path.write_bytes(path.read_bytes()[:-25])  # a copy that stopped inside the last line
    with pytest.raises(DataError, match="NOTEEVENTS.csv does not end with a newline"):
        data_prep.load("mimic3", data_root=tmp_path)
    path.write_bytes(gzip.compress(b"HADM_ID,CHARTTIME\n1,2150-01-01\n"))
    path.rename(where / "NOTEEVENTS.csv.gz")
    with pytest.raises(DataError, match=r"cannot read .*NOTEEVENTS.csv.gz"):
        data_prep.load("mimic3", data_root=tmp_path)


def test_mimic_missing_files_say_what_and_where(tmp_path):
    with pytest.raises(DataError) as err:
        data_prep.load("mimic3", data_root=tmp_path)
    for part in ("ADMISSIONS.csv", "NOTEEVENTS.csv", str(tmp_path / "mimic3"), "physionet",
                 "credentialed"):  # fmt: skip
        assert part in str(err.value)


# --- every algorithm, one round, on every synthetic federation ------------------------------

FEDERATIONS = {
    "emnist": (write_emnist, {"samples_per_client": 60, "min_per_client": 5}),
    "cifar10": (write_cifar, {"samples_per_client": 30, "min_per_client": 5, "verify": False}),
    "isic2019": (write_isic, {"image_size": 16}),
    "sent140": (write_sent140, {"max_per_client": 6}),
    "mimic3": (write_mimic, {"max_len": 8}),
}


@pytest.fixture(scope="module")
def federations(tmp_path_factory):
    import warnings

    out = {}
    for name, (writer, kwargs) in FEDERATIONS.items():
        root = tmp_path_factory.mktemp(name)
        writer(root)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # single-class clients are expected at this size
            out[name] = data_prep.load(name, data_root=root, **kwargs)
    return out


@pytest.mark.parametrize("name", list(FEDERATIONS))
def test_one_round_of_every_algorithm(federations, name):
    from playerfl_core import ALGORITHMS, get_algorithm
    from playerfl_core.fl.engine import RunConfig, run_federated
    from playerfl_core.fl.units import unit_names

    data = federations[name]
    width = 0.05 if name in ("cifar10", "isic2019", "emnist") else 1.0
    for algorithm in ALGORITHMS:
        config = RunConfig(rounds=1, lr=1e-3, batch_size=16, width=width, progress=False)
        run = run_federated(data, get_algorithm(algorithm), config)
        table = run.table()
        scores = table[(table["split"] == "test") & (table["metric"] == "accuracy")]
        assert len(scores) >= data.n_clients, (name, algorithm)
        assert np.isfinite(table["value"].astype(float)).all(), (name, algorithm)
    assert len(unit_names(run.clients[0].model)) >= 5


@pytest.mark.parametrize("name", ["cifar10", "isic2019"])
def test_dropout_models_repeat_whatever_ran_before(federations, name):
    """These CNNs have dropout, which draws from torch's global generator: the run must seed it
    from its own streams, or the same seed gives other numbers after other code ran."""
    from playerfl_core import get_algorithm
    from playerfl_core.fl.engine import RunConfig, run_federated

    config = RunConfig(rounds=1, lr=1e-3, batch_size=16, width=0.05, progress=False)
    tables = []
    for draws in (1, 5):
        torch.rand(draws)  # what ran before
        for algorithm in ("fedavg", "pfedme"):
            tables.append(
                run_federated(federations[name], get_algorithm(algorithm), config).table()
            )
    assert tables[0].equals(tables[2]) and tables[1].equals(tables[3])


@pytest.mark.parametrize("name", ["cifar10", "isic2019"])
def test_one_augmented_round_on_image_federations(federations, name):
    from playerfl_core import get_algorithm
    from playerfl_core.fl.engine import RunConfig, run_federated

    def run(augment):
        config = RunConfig(
            rounds=1, lr=1e-3, batch_size=16, width=0.05, progress=False, augment=augment
        )
        return run_federated(federations[name], get_algorithm("fedavg"), config).table()

    tables = [run(aug) for aug in (True, True, False)]
    assert np.isfinite(tables[0]["value"].astype(float)).all()
    assert tables[0].equals(tables[1])  # seeded
    train = [t[(t["split"] == "train") & (t["metric"] == "loss")]["value"] for t in tables]
    assert not train[0].equals(train[2])  # the augmentation changed the training batches


def test_published_numbers_beside_federations_not_run():
    from playerfl_core.stats import published as P

    out = P.published_beside_missing("accuracy", ["fmnist", "heart"], present={"emnist": True})
    keys = list(dict.fromkeys(k for k, _ in out.columns))
    assert keys == ["emnist", "cifar10", "isic2019", "sent140", "mimic3"]
    assert set(out[("cifar10", "ours")]) == {"not run here: files not present"}
    assert set(out[("emnist", "ours")]) == {"not run here: files present, not run"}
    assert out[("mimic3", "published")].equals(P.published_wide("accuracy")["mimic3"])
    assert set(P.paper_columns()) == {
        "FMNIST",
        "EMNIST",
        "CIFAR",
        "ISIC",
        "Heart",
        "Sent140",
        "MIMIC",
    }
    assert P.paper_datasets() == [
        "fmnist",
        "emnist",
        "cifar10",
        "isic2019",
        "heart",
        "sent140",
        "mimic3",
    ]
