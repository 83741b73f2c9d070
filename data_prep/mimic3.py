"""MIMIC-III: early clinical notes of emergency admissions, in-hospital mortality, four
diagnosis-group clients (reference §2.8), with the authors' pipeline defects fixed.

Files under `<root>/mimic3/`: `ADMISSIONS.csv` and `NOTEEVENTS.csv` (or their `.csv.gz`
originals) from MIMIC-III v1.4, and a ClinicalBERT-style model folder (default
`ClinicalBERT/`, or pass `model_dir`) with `vocab.txt` and `model.safetensors`.

Fixed, against the authors' code (reference §2.8, §10 defect 16): the missing comma
that glued "SUBDURAL HEMORRHAGE" and "STROKE;TELEMETRY" into one unmatched string (both are
brain diagnoses here); the "Physician " category (trailing space in MIMIC-III) now matches; notes
charted before admission are excluded (0-24 h after admission only); notes flagged ISERROR are
excluded; one data folder instead of the creator/loader file-name mismatch.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from . import text
from .base import ClientData, DataError, FederatedData, check_complete, missing_files
from .federation import Federation
from .partition import train_val_test_split

FOLDER = "mimic3"
ADMISSIONS, NOTES = "ADMISSIONS.csv", "NOTEEVENTS.csv"
ADMISSION_COLUMNS = ["HADM_ID", "ADMITTIME", "DISCHTIME", "ADMISSION_TYPE", "DIAGNOSIS",
                     "HOSPITAL_EXPIRE_FLAG"]  # fmt: skip
NOTE_COLUMNS = ["HADM_ID", "CHARTTIME", "CATEGORY", "ISERROR", "TEXT"]
CATEGORIES = ("Nursing", "Physician", "Nursing/other")  # compared after stripping spaces
DEFAULT_MODEL = "ClinicalBERT"
GROUPS = {  # the authors' admission-diagnosis strings (reference §2.8), in client order
    "mi": (
        "CORONARY ARTERY DISEASE", "CHEST PAIN", "CORONARY ARTERY DISEASE\\CATH",
        "ACUTE CORONARY SYNDROME", "MYOCARDIAL INFARCTION", "ACUTE MYOCARDIAL INFARCTION",
        "CHEST PAIN;TELEMETRY", "MYOCARDIAL INFARCTION\\CATH", "UNSTABLE ANGINA", "STEMI",
        "ST ELEVATED MYOCARDIAL INFARCTION", "ACUTE MYOCARDIAL INFARCTION\\CATH",
        "UNSTABLE ANGINA\\CATH", "NON-ST SEGMENT ELEVATION MYOCARDIAL INFARCTION",
    ),
    "gi": (
        "GASTROINTESTINAL BLEED", "UPPER GI BLEED", "ABDOMINAL PAIN",
        "UPPER GASTROINTESTINAL BLEED", "LOWER GASTROINTESTINAL BLEED",
    ),
    "infection": (
        "PNEUMONIA", "PNEUMONIA;CHRONIC OBST PULM DISEASE", "RESPIRATORY FAILURE", "SEPSIS",
        "URINARY TRACT INFECTION;PYELONEPHRITIS", "SEPSIS;TELEMETRY", "PNEUMONIA;TELEMETRY",
        "URINARY TRACT INFECTION", "UTI/PYELONEPHRITIS", "SEPTIC SHOCK",
    ),
    "brain": (
        "INTRACRANIAL HEMORRHAGE", "SUBARACHNOID HEMORRHAGE", "SUBDURAL HEMATOMA",
        "SUBDURAL HEMORRHAGE", "STROKE;TELEMETRY",  # the two the missing comma lost
        "STROKE;TELEMETRY;TRANSIENT ISCHEMIC ATTACK", "ACUTE SUBDURAL HEMATOMA",
        "CEREBROVASCULAR ACCIDENT", "CARDIAC ARREST", "S/P CARDIAC ARREST",
        "INTRACRANIAL BLEED", "STROKE", "STROKE/TIA",
    ),
}  # fmt: skip
HOW_CSV = (
    "MIMIC-III is credentialed: complete CITI training and sign the PhysioNet data use "
    "agreement at https://physionet.org/content/mimiciii/1.4/, then download ADMISSIONS.csv.gz "
    "and NOTEEVENTS.csv.gz (PhysioNet lists their SHA-256 sums in SHA256SUMS.txt there; check "
    "them with sha256sum). Never copy the files anywhere public."
)
HOW_MODEL = (
    "Copy a ClinicalBERT-style folder there (e.g. Hugging Face's medicalai/ClinicalBERT: "
    "vocab.txt and model.safetensors), or pass model_dir=<folder> to load()."
)

PROFILES = {
    "quick": {"max_per_client": 150, "max_len": 128},
    "paper": {"max_per_client": None, "max_len": 512},
}


def _path(where: Path, name: str) -> Path | None:
    for candidate in (where / name, where / f"{name}.gz"):
        if candidate.is_file():
            return candidate
    return None


def prepare(root: Path) -> str:
    where = Path(root) / FOLDER
    if _path(where, ADMISSIONS) is None or _path(where, NOTES) is None:
        raise missing_files("mimic3", where, [ADMISSIONS, NOTES], HOW_CSV)
    return f"mimic3: present in {where}"


def _read(path: Path, columns: list[str], **kwargs):
    check_complete(path, "mimic3")
    try:
        return pd.read_csv(path, usecols=columns, **kwargs)
    except ValueError as e:  # usecols not found, bad gzip, parser errors (ParserError <: it)
        raise DataError(
            f"mimic3: cannot read {path} ({e}); truncated or not MIMIC-III's?"
        ) from None
    except (EOFError, OSError) as e:
        raise DataError(f"mimic3: cannot read {path} ({e}); truncated?") from None


def cohort(path: Path) -> pd.DataFrame:
    """Emergency admissions with a mortality flag and one of the four groups' diagnoses."""
    adm = _read(path, ADMISSION_COLUMNS).dropna()
    group_of = {d: g for g, diagnoses in GROUPS.items() for d in diagnoses}
    adm = adm[(adm["ADMISSION_TYPE"] == "EMERGENCY") & adm["HOSPITAL_EXPIRE_FLAG"].isin([0, 1])]
    admit = pd.to_datetime(adm["ADMITTIME"], errors="coerce")
    adm = adm.assign(group=adm["DIAGNOSIS"].map(group_of), ADMITTIME=admit)
    adm = adm.dropna(subset=["group", "ADMITTIME"])
    return adm.assign(HADM_ID=adm["HADM_ID"].astype("int64")).set_index("HADM_ID")


def early_notes(path: Path, adm: pd.DataFrame, chunksize: int = 200_000) -> pd.DataFrame:
    """Cohort notes of the kept categories charted 0-24 h after admission, ISERROR excluded,
    duplicate (chart time, admission) pairs dropped (NOTEEVENTS is large: read in chunks)."""
    keep = []
    reader = _read(path, NOTE_COLUMNS, chunksize=chunksize)
    try:
        for chunk in tqdm(reader, desc="mimic3 notes", leave=False):
            chunk = chunk[chunk["HADM_ID"].isin(adm.index) & chunk["CHARTTIME"].notna()]
            chunk = chunk.assign(HADM_ID=chunk["HADM_ID"].astype("int64"))
            chunk = chunk[chunk["CATEGORY"].astype(str).str.strip().isin(CATEGORIES)]
            keep.append(chunk[chunk["ISERROR"].fillna(0).astype(float) != 1])
    except (ValueError, EOFError, OSError) as e:
        raise DataError(f"mimic3: cannot read {path} ({e}); truncated?") from None
    notes = pd.concat(keep) if keep else pd.DataFrame(columns=NOTE_COLUMNS)
    notes = notes.assign(CHARTTIME=pd.to_datetime(notes["CHARTTIME"], errors="coerce"))
    admit = adm.loc[notes["HADM_ID"], "ADMITTIME"].to_numpy()
    delay = (notes["CHARTTIME"].to_numpy() - admit) / np.timedelta64(1, "h")
    early = (delay >= 0) & (delay <= 24)
    notes = notes[early].assign(ADMITTIME=admit[early])
    notes = notes.sort_values(["ADMITTIME", "HADM_ID", "CHARTTIME"], kind="stable")
    return notes.drop_duplicates(["CHARTTIME", "HADM_ID"]).reset_index(drop=True)


def load(
    root: Path,
    seed: int,
    max_len: int = 512,
    max_per_client: int | None = None,
    model_dir: str | None = None,
    split_seed: int | None = None,
) -> FederatedData:
    """Per admission the early note with most tokens (cut to `max_len`), its mortality label;
    clients mi, gi, infection, brain; at most `max_per_client` admissions each; 64/16/20."""
    where = Path(root) / FOLDER
    prepare(root)
    folder = Path(model_dir) if model_dir else where / DEFAULT_MODEL
    wp = text.load_wordpiece(folder, "mimic3", HOW_MODEL, lowercase=False)
    adm = cohort(_path(where, ADMISSIONS))
    notes = early_notes(_path(where, NOTES), adm)
    ids, full = text.tokenise(wp, notes["TEXT"].astype(str).tolist(), max_len)
    notes = notes.assign(tokens=full, row=np.arange(len(notes)))
    best = notes.sort_values("tokens", ascending=False, kind="stable").drop_duplicates("HADM_ID")
    best = best.sort_values("row").set_index("HADM_ID")
    died = adm.loc[best.index, "HOSPITAL_EXPIRE_FLAG"].astype(np.int64)
    best = best.assign(group=adm.loc[best.index, "group"], label=died)
    rng = np.random.default_rng(seed if split_seed is None else split_seed)
    groups, labels, sizes = [], [], {}
    for g in GROUPS:
        mine = best[best["group"] == g]
        if len(mine) < 3:
            raise DataError(
                f"mimic3: only {len(mine)} admissions of group {g!r} with an early note in "
                f"{where}; need at least 3 for train/val/test (are the files complete?)"
            )
        if max_per_client is not None and len(mine) > max_per_client:
            mine = mine.iloc[np.sort(rng.choice(len(mine), max_per_client, replace=False))]
        groups.append([ids[r] for r in mine["row"]])
        labels.append(torch.from_numpy(mine["label"].to_numpy().copy()))
        sizes[g] = len(mine)
    xs, rows, length = text.compact(groups, wp)
    clients = []
    for g, x, y in zip(GROUPS, xs, labels, strict=True):
        tr, va, te = (torch.from_numpy(i) for i in train_val_test_split(len(y), rng))
        clients.append(ClientData(g, x[tr], y[tr], x[va], y[va], x[te], y[te]))
    return FederatedData(
        name="mimic3",
        clients=clients,
        num_classes=2,
        input_shape=(length,),
        class_names=["survived", "died in hospital"],
        source=f"MIMIC-III v1.4 ADMISSIONS and NOTEEVENTS in {where} (PhysioNet credentialed "
        f"access); WordPiece vocabulary and static word embeddings from {wp.folder}",
        notes=(
            f"Emergency admissions whose admission diagnosis is in one of the authors' four "
            f"lists (brain list with the missing-comma bug fixed); clients {list(GROUPS)} with "
            f"{sizes} admissions"
            + (f" (at most {max_per_client} each, a seeded sample)" if max_per_client else "")
            + ". Per admission the Nursing, Physician or Nursing/other note charted 0-24 h "
            "after admission with most tokens (ISERROR notes excluded). Label: in-hospital "
            f"mortality. WordPiece tokens cut to {max_len}, padded to {length}; compact "
            f"vocabulary of {len(rows)} tokens seeds the token table with static input "
            "embeddings. Per-group shuffled 64/16/20 split. The one-block transformer of §3.5 "
            f"with {max_len} positions, padding masked."
        ),
        model_args={"embeddings": rows, "max_len": max_len},
        params={
            "max_len": max_len,
            "max_per_client": max_per_client,
            "model_dir": str(wp.folder),
            "split_seed": split_seed,
            "sizes": sizes,
            "vocabulary": len(rows),
        },
    )


FEDERATION = Federation(
    name="mimic3",
    paper_name="MIMIC",
    load=load,
    model="text_transformer",
    label="MIMIC-III",
    color="#8dd3c7",
    sizes=PROFILES,
    training={
        "quick": {"rounds": 5, "batch_size": 64, "lr": 1e-4, "width": 1.0},
        "paper": {"rounds": 25, "batch_size": 64, "lr": 1e-4, "width": 1.0},
    },
    lr_grid={"quick": (1e-3, 1e-4), "paper": (1e-3, 5e-4, 1e-4, 8e-5)},
    hypernetwork=(64, 128),
    prepare=prepare,
)
"""Paper sizes, rates and pFedLA sizes: appendix §1.1–1.2. The quick settings are untried
defaults: the files were not on the machine that built the book."""
