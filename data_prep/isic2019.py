"""Fed-ISIC-2019 (FLamby): dermoscopy images from natural centres, four classes, four clients
(reference §2.5).

Files, in FLamby's layout after its `download_isic.py` and `resize_images.py` (images resized
so the shorter side is 224 px), under `<root>/isic2019/`:
`ISIC_2019_Training_Input_preprocessed/<image>.jpg`, `ISIC_2019_Training_GroundTruth.csv`
(image + one-hot MEL, NV, BCC, AK, BKL, DF, VASC, SCC, UNK) and
`ISIC_2019_Training_Metadata_FL.csv` (image + `dataset`, the centre FLamby derives).
Centres are ordered alphabetically by their `dataset` string, as the authors do, and the first
four become clients; the order is read from the file and recorded in `params`, not assumed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch
from PIL import Image, UnidentifiedImageError
from tqdm import tqdm

from .augment import coarse_dropout, random_affine_perspective, random_flips_light
from .base import ClientData, DataError, FederatedData, missing_files
from .federation import Federation
from .partition import train_val_test_split

FOLDER = "isic2019"
IMAGES = "ISIC_2019_Training_Input_preprocessed"
GROUND_TRUTH = "ISIC_2019_Training_GroundTruth.csv"
METADATA = "ISIC_2019_Training_Metadata_FL.csv"
ONE_HOT = ("MEL", "NV", "BCC", "AK", "BKL", "DF", "VASC", "SCC", "UNK")
CLASSES = ["BCC", "BKL", "MEL", "NV"]  # the authors' four, coded 0..3 (reference §2.5)
MEAN, STD = (0.585, 0.500, 0.486), (0.229, 0.224, 0.225)  # the authors', on pixels / 255
SHORTER_SIDE = 224  # FLamby's preprocessing; the paper crops 200 x 200 from it
HOW = (
    "Get the ISIC 2019 training data (ISIC Archive, CC BY-NC 4.0; BCN_20000, HAM10000 and MSK "
    "attributions apply) with FLamby's fed_isic2019 scripts: dataset_creation_scripts/"
    "download_isic.py (writes the two CSVs) then resize_images.py (writes the preprocessed "
    "images); copy their output folder's contents there. No checksum is published for them."
)

PROFILES = {
    "quick": {"max_per_centre": 150, "image_size": 64},
    "paper": {"max_per_centre": 5000, "image_size": 200},
}


def folder(root: Path) -> Path:
    return Path(root) / FOLDER


def prepare(root: Path) -> str:
    """Check the three parts are in place (nothing to fetch: the download needs FLamby)."""
    where = folder(root)
    parts = [IMAGES + "/", GROUND_TRUTH, METADATA]
    if not (where / IMAGES).is_dir() or not all((where / f).is_file() for f in parts[1:]):
        raise missing_files("isic2019", where, parts, HOW)
    return f"isic2019: present in {where}"


def _read_csv(path: Path, columns: tuple[str, ...]) -> pd.DataFrame:
    try:
        df = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise DataError(f"isic2019: cannot parse {path} ({e}); copy it again") from None
    absent = [c for c in columns if c not in df.columns]
    if absent:
        raise DataError(f"isic2019: {path} lacks columns {absent}; is it FLamby's file?")
    return df


def read_table(root: Path) -> pd.DataFrame:
    """One row per kept image: image, centre, label (0..3), in ground-truth order."""
    where = folder(root)
    gt = _read_csv(where / GROUND_TRUTH, ("image", *ONE_HOT))
    meta = _read_csv(where / METADATA, ("image", "dataset"))
    onehot = gt[list(ONE_HOT)].to_numpy(dtype=float)
    if np.isnan(onehot).any():
        raise DataError(f"isic2019: empty label cells in {where / GROUND_TRUTH} (truncated?)")
    gt = gt.assign(category=np.array(ONE_HOT)[onehot.argmax(axis=1)])
    df = gt[["image", "category"]].merge(meta[["image", "dataset"]], on="image", how="inner")
    df = df[df["category"].isin(CLASSES) & df["dataset"].notna()]
    return pd.DataFrame(
        {
            "image": df["image"].to_numpy(),
            "centre": df["dataset"].astype(str).to_numpy(),
            "label": df["category"].map(CLASSES.index).to_numpy(dtype=np.int64),
        }
    )


def read_image(path: Path, size: int) -> np.ndarray:
    """Shorter side to SHORTER_SIDE·size/200 px (a no-op on FLamby's files at size 200), then
    the centre size x size crop (the authors' evaluation transform), as uint8 HWC RGB."""
    if not path.is_file():
        raise DataError(f"isic2019: {path} is listed in the CSVs but missing; copy it again")
    try:
        with Image.open(path) as img:
            img = img.convert("RGB")
            short = round(SHORTER_SIDE * size / 200)
            w, h = img.size
            if min(w, h) != short:
                scale = short / min(w, h)
                w, h = max(short, round(w * scale)), max(short, round(h * scale))
                img = img.resize((w, h), Image.Resampling.BILINEAR)
            left, top = (w - size) // 2, (h - size) // 2
            return np.asarray(img.crop((left, top, left + size, top + size)), dtype=np.uint8)
    except (UnidentifiedImageError, OSError, SyntaxError) as e:
        raise DataError(f"isic2019: {path} is not a readable image ({e}); copy it again") from None


def load(
    root: Path,
    seed: int,
    n_centres: int = 4,
    max_per_centre: int = 5000,
    image_size: int = 200,
    split_seed: int | None = None,
) -> FederatedData:
    """The first `n_centres` centres (alphabetical), at most `max_per_centre` images each (a
    seeded sample), centre crops of `image_size`, per-centre 64/16/20 splits."""
    root = Path(root)
    prepare(root)
    table = read_table(root)
    centres = sorted(table["centre"].unique())
    if len(centres) < n_centres:
        raise DataError(f"isic2019: {len(centres)} centres {centres} in {METADATA}; need "
                        f"n_centres={n_centres} or fewer")  # fmt: skip
    rng = np.random.default_rng(seed if split_seed is None else split_seed)
    mean, std = (torch.tensor(v).view(1, 3, 1, 1) for v in (MEAN, STD))
    clients, rows = [], {}
    for centre in centres[:n_centres]:
        sub = table[table["centre"] == centre].reset_index(drop=True)
        if len(sub) > max_per_centre:
            sub = sub.iloc[np.sort(rng.choice(len(sub), max_per_centre, replace=False))]
        rows[centre] = len(sub)
        pixels = np.stack(
            [
                read_image(folder(root) / IMAGES / f"{name}.jpg", image_size)
                for name in tqdm(sub["image"], desc=f"isic2019 {centre}", leave=False)
            ]
        )
        x = (torch.from_numpy(pixels).permute(0, 3, 1, 2).float() / 255.0 - mean) / std
        y = torch.from_numpy(sub["label"].to_numpy().copy())
        tr, va, te = (torch.from_numpy(i) for i in train_val_test_split(len(sub), rng))
        clients.append(ClientData(centre, x[tr], y[tr], x[va], y[va], x[te], y[te]))
    return FederatedData(
        name="isic2019",
        clients=clients,
        num_classes=len(CLASSES),
        input_shape=(3, image_size, image_size),
        class_names=list(CLASSES),
        source=(
            "ISIC 2019 training set (BCN_20000, HAM10000, MSK; ISIC Archive, CC BY-NC 4.0) in "
            f"FLamby's Fed-ISIC2019 preprocessed layout, {folder(root)}"
        ),
        notes=(
            f"Centres sorted alphabetically by FLamby's `dataset` string, first {n_centres} of "
            f"{centres} become clients, with {rows} images (classes {CLASSES} only, others "
            f"dropped; at most {max_per_centre} per centre, a seeded sample). Centre "
            f"{image_size} x {image_size} crop after resizing the shorter side to "
            f"{round(SHORTER_SIDE * image_size / 200)} px; normalised with the authors' mean "
            f"{MEAN} / std {STD}. Per-centre shuffled 64/16/20 split. The paper's ISIC CNN "
            "(§3.3). augment=True: flips, rotation ±50°, scale ±7 %, shift up to 6 % (standing "
            "in for the random crop), brightness ±0.15, contrast ±0.1, then coarse dropout: per "
            "image 1-8 black holes (pixel value 0), sides 1-16 px each. The authors draw the "
            "maximum hole count once per dataset object (§10 defect 21); we draw the count per "
            "image, as the published augmentation intends. Holes are 16 px at most at every "
            "image_size (not scaled with it). The authors' 0.1° shear is left out (a no-op in "
            "practice)."
        ),
        augmentation=_augment,
        params={
            "n_centres": n_centres,
            "max_per_centre": max_per_centre,
            "image_size": image_size,
            "split_seed": split_seed,
            "centres": list(centres[:n_centres]),
            "rows": rows,
        },
    )


def _augment(x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """The ISIC training augmentation (see the notes of `load`), on the batch's device."""
    fill = [-m / s for m, s in zip(MEAN, STD, strict=True)]
    fill_t = torch.tensor(fill, device=x.device, dtype=x.dtype).view(1, 3, 1, 1)
    x = random_affine_perspective(
        x - fill_t, generator, degrees=50.0, translate=0.06, scale=(0.93, 1.07), p_perspective=0.0
    )
    x = random_flips_light(x + fill_t, generator, mean=MEAN, std=STD)
    return coarse_dropout(x, generator, max_holes=8, max_side=16, fill=fill)


FEDERATION = Federation(
    name="isic2019",
    paper_name="ISIC",
    load=load,
    model="cnn5",
    label="Fed-ISIC-2019",
    color="#01665e",
    sizes=PROFILES,
    training={
        "quick": {"rounds": 10, "batch_size": 32, "lr": 1e-3, "width": 0.25},
        "paper": {"rounds": 60, "batch_size": 128, "lr": 1e-3, "width": 1.0},
    },
    lr_grid={"quick": (3e-3, 1e-3), "paper": (5e-3, 1e-3, 5e-4, 1e-4)},
    hypernetwork=(64, 128),
    prepare=prepare,
)
"""Paper sizes, rates and pFedLA sizes: appendix §1.1–1.2. The quick settings are untried
defaults: the files were not on the machine that built the book."""
