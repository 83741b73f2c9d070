"""Sentiment140: tweets of single users as natural clients, binary sentiment (reference §2.6).

Files under `<root>/sent140/`: the Sentiment140 training CSV
`training.1600000.processed.noemoticon.csv` (latin-1, no header, six columns: target 0/4, id,
date, query flag, user, text) and a BERT model folder (default `bert-base-uncased/`, or pass
`model_dir`) with `vocab.txt` and `model.safetensors` (see `data_prep.text`).
The 50 users with most tweets are ranked (ties: user name); the authors' clients are the 15
*least* active of them (ranks 36-50), ordered by descending tweet count, kept here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from . import text
from .base import ClientData, DataError, FederatedData, check_complete, missing_files
from .federation import Federation
from .partition import train_val_test_split

FOLDER = "sent140"
CSV = "training.1600000.processed.noemoticon.csv"
COLUMNS = ["target", "id", "date", "flag", "user", "text"]
DEFAULT_MODEL = "bert-base-uncased"
HOW_CSV = (
    "Get Sentiment140 (Go, Bhayani, Huang 2009) from http://help.sentiment140.com/for-students "
    "(trainingandtestdata.zip; free for research, no redistribution) and unzip the training "
    "CSV there. No checksum is published."
)
HOW_MODEL = (
    "Copy a BERT model folder there, e.g. Hugging Face's bert-base-uncased (Apache 2.0) "
    "vocab.txt and model.safetensors, or pass model_dir=<folder> to load()."
)

PROFILES = {
    "quick": {"max_per_client": 60, "max_len": 119},
    "paper": {"max_per_client": None, "max_len": 119},
}


def prepare(root: Path) -> str:
    where = Path(root) / FOLDER
    if not (where / CSV).is_file():
        raise missing_files("sent140", where, [CSV], HOW_CSV)
    model = where / DEFAULT_MODEL
    if not all((model / f).is_file() for f in (text.VOCAB, text.WEIGHTS)):
        return (
            f"sent140: {CSV} present in {where}; no model folder at {model} (pass "
            "model_dir=<BERT folder> to load)"
        )
    return f"sent140: present in {where}"


def read_tweets(path: Path) -> pd.DataFrame:
    """The CSV as strings, checked: complete, six columns, user and text present, target 0/4."""
    check_complete(path, "sent140")
    try:
        df = pd.read_csv(path, encoding="latin-1", header=None, names=COLUMNS, dtype=str,
                         keep_default_na=False, na_values=[])  # fmt: skip
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as e:
        raise DataError(f"sent140: cannot parse {path} ({e}); is it truncated?") from None
    bad = df[~df["target"].isin(["0", "4"]) | (df["user"] == "") | (df["text"] == "")]
    if len(bad) or df.isna().any().any():
        line = int(bad.index[0]) + 1 if len(bad) else int(df.isna().any(axis=1).idxmax()) + 1
        raise DataError(
            f"sent140: {path} line {line} is not 'target (0 or 4), id, date, flag, user, text' "
            "(truncated or another file?)"
        )
    return df


def select_clients(df: pd.DataFrame, n_top_users: int, n_clients: int) -> list[str]:
    """The `n_clients` least active of the `n_top_users` most active users, most active first."""
    counts = df["user"].value_counts()
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    if len(ranked) < n_top_users or not 1 <= n_clients <= n_top_users:
        raise DataError(
            f"sent140: need n_top_users ({n_top_users}) <= {len(ranked)} users in the file and "
            f"1 <= n_clients ({n_clients}) <= n_top_users"
        )
    return [user for user, _ in ranked[n_top_users - n_clients : n_top_users]]


def load(
    root: Path,
    seed: int,
    n_top_users: int = 50,
    n_clients: int = 15,
    max_len: int = 119,
    max_per_client: int | None = None,
    model_dir: str | None = None,
    split_seed: int | None = None,
) -> FederatedData:
    """Clients = users ranked `n_top_users - n_clients + 1` … `n_top_users`; tweets tokenised
    and cut to `max_len` tokens; at most `max_per_client` tweets each (seeded); 64/16/20."""
    where = Path(root) / FOLDER
    if not (where / CSV).is_file():
        raise missing_files("sent140", where, [CSV], HOW_CSV)
    folder = Path(model_dir) if model_dir else where / DEFAULT_MODEL
    wp = text.load_wordpiece(folder, "sent140", HOW_MODEL, lowercase=True)
    df = read_tweets(where / CSV)
    users = select_clients(df, n_top_users, n_clients)
    rng = np.random.default_rng(seed if split_seed is None else split_seed)
    groups, labels = [], []
    for user in users:
        mine = df[df["user"] == user]
        if max_per_client is not None and len(mine) > max_per_client:
            mine = mine.iloc[np.sort(rng.choice(len(mine), max_per_client, replace=False))]
        groups.append(text.tokenise(wp, mine["text"].tolist(), max_len)[0])
        labels.append(torch.from_numpy((mine["target"] == "4").to_numpy().astype(np.int64)))
    xs, rows, length = text.compact(groups, wp)
    clients = []
    for user, x, y in zip(users, xs, labels, strict=True):
        tr, va, te = (torch.from_numpy(i) for i in train_val_test_split(len(y), rng))
        clients.append(ClientData(user, x[tr], y[tr], x[va], y[va], x[te], y[te]))
    sizes = {u: len(y) for u, y in zip(users, labels, strict=True)}
    return FederatedData(
        name="sent140",
        clients=clients,
        num_classes=2,
        input_shape=(length,),
        class_names=["negative", "positive"],
        source=f"Sentiment140 training CSV {where / CSV}; WordPiece vocabulary and static word "
        f"embeddings from {wp.folder}",
        notes=(
            f"Clients = the {n_clients} least active of the {n_top_users} most active users "
            f"(the authors' choice), most active first: {sizes} tweets"
            + (f" (at most {max_per_client} each, a seeded sample)" if max_per_client else "")
            + f". Label 0 -> negative, 4 -> positive. WordPiece tokens with [CLS]/[SEP] (lower-"
            f"case {wp.lowercase}), cut to {max_len} (the authors do not cut; their position "
            f"table has 119 rows), padded to the longest ({length}); compact vocabulary of "
            f"{len(rows)} tokens used by these clients (the authors': all 50 users') seeds the "
            "token table with the static input embeddings. Per-user shuffled 64/16/20 split. "
            "The one-block transformer of §3.5, padding masked in attention."
        ),
        model_args={"embeddings": rows, "max_len": max_len},
        params={
            "n_top_users": n_top_users,
            "n_clients": n_clients,
            "max_len": max_len,
            "max_per_client": max_per_client,
            "model_dir": str(wp.folder),
            "split_seed": split_seed,
            "vocabulary": len(rows),
        },
    )


FEDERATION = Federation(
    name="sent140",
    paper_name="Sent140",
    load=load,
    model="text_transformer",
    label="Sentiment140",
    color="#b2abd2",
    sizes=PROFILES,
    training={
        "quick": {"rounds": 5, "batch_size": 64, "lr": 1e-3, "width": 1.0},
        "paper": {"rounds": 50, "batch_size": 64, "lr": 1e-3, "width": 1.0},
    },
    lr_grid={"quick": (1e-3, 1e-4), "paper": (1e-3, 5e-4, 1e-4, 8e-5)},
    hypernetwork=(64, 128),
    prepare=prepare,
)
"""Paper sizes, rates and pFedLA sizes: appendix §1.1–1.2. The quick settings are untried
defaults: the files were not on the machine that built the book."""
