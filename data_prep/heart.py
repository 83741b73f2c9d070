"""UCI Heart Disease: four hospitals, four natural clients (as in FLamby and the paper).

The files are tiny, so every load checks their SHA-256; a corrupted or edited file would
otherwise change every number in the book without a trace.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from .base import (
    REPO_ROOT,
    ClientData,
    DataError,
    FederatedData,
    check_data_paths,
    download,
    sha256sum,
)
from .federation import Federation
from .partition import authors_split, check_protocol, train_val_test_split

SITES = ("cleveland", "hungarian", "switzerland", "va")
SHA256 = {  # as recorded with the host copy of the UCI files (shared/data/heart/README.md)
    "processed.cleveland.data": "a74b7efa387bc9d108d7d0115d831fe9b414b29ae7124f331b622b4efa0427c8",
    "processed.hungarian.data": "d1ad108f785768cd3d7e82dc522e6f5a61eea93cccfb3a46ee8076f73fc3d796",
    "processed.switzerland.data": "834a405ccf5b66ab4056bb77794adc8df0b7125186454c0a1d002d33c6c3b314",  # noqa: E501
    "processed.va.data": "e7c93d8d0d2acdadfa4c5e8de768e2191e7f618b952e29623f1f0d5949ff6b8f",
}
URL = "https://archive.ics.uci.edu/ml/machine-learning-databases/heart-disease/"
SHARED_DIR = REPO_ROOT.parent / "shared" / "data" / "heart"  # local copy, if the host has one

COLUMNS = [
    "age", "sex", "cp", "trestbps", "chol", "fbs", "restecg",
    "thalach", "exang", "oldpeak", "slope", "ca", "thal", "num",
]  # fmt: skip
KEPT = ["age", "sex", "cp", "trestbps", "chol", "fbs", "restecg", "thalach", "exang", "oldpeak"]
CONTINUOUS = ["age", "trestbps", "chol", "thalach", "oldpeak"]
BINARY = ["sex", "fbs", "exang"]
CATEGORICAL = {"cp": [1, 2, 3, 4], "restecg": [0, 1, 2]}
ZERO_MEANS_MISSING = ["trestbps", "chol"]  # 0 mmHg / 0 mg/dl are the raw files' missing codes
FEATURES = (
    CONTINUOUS
    + BINARY
    + [f"{c}_{v}" for c, vals in CATEGORICAL.items() for v in vals]
    + [f"{c}_missing" for c in ZERO_MEANS_MISSING]
)
CLASS_NAMES = ["no disease", "severity 1", "severity 2", "severity 3", "severity 4"]
PROFILES = {"quick": {}, "paper": {}}  # natural silos: both profiles use every row


def file_name(site: str) -> str:
    return f"processed.{site}.data"


def _check(path: Path, name: str | None = None) -> None:
    name = name or path.name
    actual = sha256sum(path)
    if actual != SHA256[name]:
        raise DataError(
            f"checksum mismatch for {name} ({path}): expected sha256 {SHA256[name]}, "
            f"got {actual}. Delete it and run python -m data_prep.prepare to fetch it again."
        )


def prepare(root: Path, shared_dir: Path | None = None) -> str:
    """Put the four verified files in `<root>/heart/`; idempotent.

    Copies them from the host's shared data folder when it has them, else downloads them
    from the UCI repository. Returns a one-line account of what happened.
    """
    shared_dir = SHARED_DIR if shared_dir is None else Path(shared_dir)
    dest = Path(root) / "heart"
    check_data_paths("heart", [dest / f for f in SHA256] + [dest / f"{f}.part" for f in SHA256])
    done, failed = [], []
    for f in SHA256:
        target = dest / f
        if target.is_file():
            _check(target)
            continue
        dest.mkdir(parents=True, exist_ok=True)
        if (shared_dir / f).is_file():
            tmp = dest / f"{f}.part"
            shutil.copyfile(shared_dir / f, tmp)
            try:
                _check(tmp, f)
            except DataError:
                tmp.unlink()
                raise
            tmp.replace(target)
            done.append(f"copied {f}")
            continue
        try:
            download(URL + f, target, SHA256[f])
            done.append(f"downloaded {f}")
        except DataError as e:
            failed.append((f, e))
    if failed:
        names = ", ".join(f for f, _ in failed)
        raise DataError(
            f"Heart Disease files missing: {names}. Download them from {URL} (UCI Heart Disease "
            f"data set, same file names) and place them in {dest}, then rerun. "
            f"First error: {failed[0][1]}"
        )
    return f"heart: {'; '.join(done) if done else 'already present'} in {dest}"


def read_sites(root: Path) -> dict[str, pd.DataFrame]:
    """Raw rows per site with the 10 kept features and the label; rows with '?' dropped.

    slope, ca and thal are mostly missing outside Cleveland and are dropped first, as in
    FLamby, which leaves 303 / 261 / 46 / 130 rows.
    """
    out = {}
    for site in SITES:
        path = Path(root) / "heart" / file_name(site)
        _check(path)
        df = pd.read_csv(path, header=None, names=COLUMNS, na_values="?")
        out[site] = df[KEPT + ["num"]].dropna().reset_index(drop=True).astype(float)
    return out


def _features(df: pd.DataFrame, medians: dict[str, float] | None) -> pd.DataFrame:
    """Missing codes to indicators + median, categoricals to one-hot (continuous unscaled)."""
    df = df.copy()
    for c in ZERO_MEANS_MISSING:
        df[f"{c}_missing"] = (df[c] == 0).astype(float)
        df.loc[df[c] == 0, c] = np.nan
        if medians is not None:
            df[c] = df[c].fillna(medians[c])
    for c, vals in CATEGORICAL.items():
        for v in vals:
            df[f"{c}_{v}"] = (df[c] == v).astype(float)
    return df


FOCAL_LOSS = {"gamma": 3.0, "alpha": (0.12939189, 0.18108108, 0.22331081, 0.22364865, 0.24256757)}
"""The authors' focal loss for Heart (appendix §4.1): γ = 3 and one α per class 0-4."""


AUTHORS_SCALER = {
    "age": (53.0872973, 70.1459463),
    "cp": (3.23702703, 0.817756772),
    "trestbps": (132.74405405, 345.493057),
    "chol": (220.23648649, 4884.30934),
    "restecg": (0.64513514, 0.592069868),
    "thalach": (138.75459459, 529.172208),
    "oldpeak": (0.89532432, 1.11317517),
}
"""The authors' hard-coded (mean, variance) per scaled column (reference §2.7); the other three
kept columns (sex, fbs, exang) stay 0/1."""


def load(
    root: Path, seed: int, split_seed: int | None = None, protocol: str = "book"
) -> FederatedData:
    """Four hospitals, 5-class label, per-site 64/16/20 split.

    Imputation medians and z-score statistics come from the pooled *training* rows only
    (in a federation: shared counts, sums and sums of squares), so val/test never leak.
    `split_seed` fixes the splits independently of `seed` (the authors always used 42).
    ``protocol="authors"``: the authors' pipeline instead (:func:`load_authors`).
    """
    check_protocol(protocol)
    root = Path(root)
    origin = prepare(root)
    sites = read_sites(root)
    if protocol == "authors":
        if split_seed is not None:
            raise DataError(
                "heart: protocol='authors' fixes the split seed at 42 (reference §2.1); drop "
                f"split_seed={split_seed}."
            )
        return load_authors(sites, origin)
    rng = np.random.default_rng(seed if split_seed is None else split_seed)
    splits = {s: train_val_test_split(len(df), rng) for s, df in sites.items()}
    train_raw = pd.concat([_features(sites[s].iloc[splits[s][0]], None) for s in SITES])
    medians = {c: float(train_raw[c].median()) for c in ZERO_MEANS_MISSING}
    train = pd.concat([_features(sites[s].iloc[splits[s][0]], medians) for s in SITES])
    mean = train[CONTINUOUS].mean()
    std = train[CONTINUOUS].std(ddof=0)

    def tensors(df: pd.DataFrame) -> tuple[torch.Tensor, torch.Tensor]:
        f = _features(df, medians)
        f[CONTINUOUS] = (f[CONTINUOUS] - mean) / std
        x = torch.tensor(f[FEATURES].to_numpy(), dtype=torch.float32)
        return x, torch.tensor(df["num"].to_numpy(), dtype=torch.int64)

    clients = []
    for s in SITES:
        parts = [tensors(sites[s].iloc[idx]) for idx in splits[s]]
        clients.append(ClientData(s, *parts[0], *parts[1], *parts[2]))
    n_rows = {s: len(df) for s, df in sites.items()}
    scaler = {c: (round(float(mean[c]), 4), round(float(std[c]), 4)) for c in CONTINUOUS}
    return FederatedData(
        name="heart",
        clients=clients,
        focal_loss=dict(FOCAL_LOSS),
        num_classes=5,
        input_shape=(len(FEATURES),),
        class_names=list(CLASS_NAMES),
        source=(
            "UCI Heart Disease (Janosi, Steinbrunn, Pfisterer, Detrano 1988; CC BY 4.0), "
            f"processed.*.data from {URL}, SHA-256 verified; {origin}"
        ),
        notes=(
            f"Clients = hospitals {', '.join(SITES)} with {n_rows} rows after dropping slope, "
            "ca and thal (mostly missing) and then rows with '?' in a kept column (FLamby's "
            "convention). Label: num, 5 classes 0-4 (not binarised, as the paper). "
            "trestbps = 0 and chol = 0 are impossible values the raw files use as missing "
            "codes (chol is 0 for every kept Swiss row): each gets an indicator column and "
            f"is imputed with the pooled training median {medians}. cp (1-4) and restecg "
            "(0-2) are one-hot encoded (the authors z-score them). Continuous columns "
            f"{CONTINUOUS} are z-scored with the pooled training mean/std {scaler} "
            "(federated equivalent: clients share counts, sums and sums of squares; the "
            "median would need a federated quantile protocol); binary columns are left as 0/1. "
            f"Per-site shuffled 64/16/20 split. Features ({len(FEATURES)}): {FEATURES}."
        ),
        params={
            "split_seed": split_seed,
            "rows": n_rows,
            "features": list(FEATURES),
            "medians": medians,
            "scaler": scaler,
        },
    )


def load_authors(sites: dict[str, pd.DataFrame], origin: str) -> FederatedData:
    """The authors' Heart pipeline (reference §2.7), so their numbers can be reproduced.

    Their 10 raw features in file order; 7 columns z-scored with their hard-coded pooled
    constants (categorical cp and restecg too), zero-as-missing values kept; and ONE split per
    site with seed 42 (:func:`~data_prep.partition.authors_split`), identical for every run
    seed, so every run sees the same (hard) Cleveland test set.
    """
    clients = []
    for s in SITES:
        df = sites[s].copy()
        for c, (mean, var) in AUTHORS_SCALER.items():
            df[c] = (df[c] - mean) / np.sqrt(var)
        x = torch.tensor(df[KEPT].to_numpy(), dtype=torch.float32)
        y = torch.tensor(df["num"].to_numpy(), dtype=torch.int64)
        parts = [(x[idx], y[idx]) for idx in map(torch.from_numpy, authors_split(len(df)))]
        clients.append(ClientData(s, *parts[0], *parts[1], *parts[2]))
    return FederatedData(
        name="heart",
        clients=clients,
        focal_loss=dict(FOCAL_LOSS),
        num_classes=5,
        input_shape=(len(KEPT),),
        class_names=list(CLASS_NAMES),
        source=f"UCI Heart Disease, processed.*.data from {URL}, SHA-256 verified; {origin}",
        notes=(
            "The authors' pipeline (reference §2.7): features "
            f"{KEPT} as in the files, {list(AUTHORS_SCALER)} z-scored with their hard-coded "
            "pooled mean/variance (categorical cp and restecg included), zeros used as missing "
            "codes kept; one shuffled 64/16/20 split per site with seed 42 for every run."
        ),
        params={
            "protocol": "authors",
            "rows": {s: len(df) for s, df in sites.items()},
            "features": list(KEPT),
        },
    )


FEDERATION = Federation(
    name="heart",
    paper_name="Heart",
    load=load,
    run_by_default=True,
    model="mlp",
    label="Heart",
    color="#1b9e77",
    client_labels={
        "cleveland": "Cleveland",
        "hungarian": "Hungary",
        "switzerland": "Switzerland",
        "va": "Long Beach VA",
    },
    sizes=PROFILES,
    training={
        "quick": {"rounds": 20, "batch_size": 32, "lr": 1e-2, "width": 1.0},
        "paper": {"rounds": 20, "batch_size": 32, "lr": 1e-2, "width": 1.0},
    },
    lr_grid={"quick": (3e-2, 1e-2, 3e-3), "paper": (5e-1, 1e-1, 5e-2, 1e-2, 5e-3)},
    grids={
        "quick": {"seeds": (0, 1, 2)},
        "standard": {"lrs": (1e-1, 3e-2, 1e-2, 3e-3), "tune_seeds": (100, 101, 102)},
        "paper": {"tune_seeds": tuple(range(1000, 1010)), "seeds": tuple(range(50))},
    },
    analytics={"quick": {"seeds": 3, "rounds": 20}, "paper": {"seeds": 5}},
    reference_splits={"paper_transition": 2, "authors_config": 1},
    hypernetwork=(16, 16),
    authors_training={"loss": "focal"},
    seconds_per_run=0.8,
    prepare=prepare,
)
"""Paper sizes and grids: appendix §1.1; analytics: the authors' 5 runs (§8.1). Reference splits:
the authors' hard-coded fc1 (§6.11) and the paper's transition layer FC2 (§8.6)."""
