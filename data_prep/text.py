"""Text federations: WordPiece tokens and static word embeddings from a local BERT-style folder.

The authors tokenise with a pretrained BERT tokenizer and seed the model's token table with the
rows of BERT's *static input* word-embedding matrix (not contextual outputs), for the tokens
that occur in the corpus only (reference §2.6, §2.8). Here the folder the user names must hold
`vocab.txt` (WordPiece vocabulary, one token a line) and `model.safetensors` (any tensor whose
name ends in `word_embeddings.weight`; safetensors only: no pickled `.bin` is ever loaded).
Nothing is downloaded at run time. Lower-casing follows `tokenizer_config.json`'s
`do_lower_case` when present, else the `lowercase` argument.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open
from tokenizers import BertWordPieceTokenizer

from .base import DataError, missing_files

PAD_INDEX = 0  # compact index of padding; the text model masks it (models.PAD_INDEX)
VOCAB, WEIGHTS = "vocab.txt", "model.safetensors"
EMBEDDING_SUFFIX = "word_embeddings.weight"


@dataclass
class WordPiece:
    """A tokenizer and its static input embeddings ``[vocab size, d]``."""

    tokenizer: object
    embeddings: torch.Tensor
    pad_id: int
    sep_id: int
    folder: Path
    lowercase: bool


def load_wordpiece(folder: Path, dataset: str, how: str, lowercase: bool = True) -> WordPiece:
    """Read `vocab.txt` and the word-embedding matrix of `model.safetensors` in `folder`."""
    folder = Path(folder)
    if not all((folder / f).is_file() for f in (VOCAB, WEIGHTS)):
        raise missing_files(dataset, folder, [VOCAB, WEIGHTS], how)
    config = folder / "tokenizer_config.json"
    if config.is_file():
        try:
            lowercase = bool(json.loads(config.read_text()).get("do_lower_case", lowercase))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise DataError(f"{dataset}: cannot parse {config} ({e})") from None
    try:
        tok = BertWordPieceTokenizer(str(folder / VOCAB), lowercase=lowercase)
    except Exception as e:  # the Rust tokenizer raises plain Exceptions
        raise DataError(
            f"{dataset}: {folder / VOCAB} is not a usable WordPiece vocabulary ({e}); it needs "
            "[PAD], [UNK], [CLS], [SEP] and one token a line"
        ) from None
    pad_id, sep_id = tok.token_to_id("[PAD]"), tok.token_to_id("[SEP]")
    if pad_id is None or sep_id is None:
        raise DataError(f"{dataset}: {folder / VOCAB} lacks [PAD] or [SEP]")
    try:
        with safe_open(str(folder / WEIGHTS), framework="pt") as f:
            keys = sorted(k for k in f.keys() if k.endswith(EMBEDDING_SUFFIX))
            if not keys:
                raise DataError(
                    f"{dataset}: {folder / WEIGHTS} has no tensor named *{EMBEDDING_SUFFIX} "
                    f"(it has {sorted(f.keys())[:5]}...); is it a BERT-style checkpoint?"
                )
            emb = f.get_tensor(keys[0]).float()
    except DataError:
        raise
    except Exception as e:  # SafetensorError, OSError, ... on a truncated or foreign file
        raise DataError(
            f"{dataset}: {folder / WEIGHTS} is not a readable safetensors file ({e}); copy it again"
        ) from None
    if emb.ndim != 2 or emb.shape[0] < tok.get_vocab_size():
        raise DataError(
            f"{dataset}: embeddings {tuple(emb.shape)} in {folder / WEIGHTS} do not cover the "
            f"{tok.get_vocab_size()} tokens of {folder / VOCAB}; are they from the same model?"
        )
    return WordPiece(tok, emb, pad_id, sep_id, folder, lowercase)


def tokenise(wp: WordPiece, texts: list[str], max_len: int) -> tuple[list[list[int]], list[int]]:
    """Token ids with [CLS] … [SEP], cut to `max_len` (keeping [SEP] last), and each text's
    untruncated length (MIMIC keeps the longest note of an admission by that length)."""
    if max_len < 2:
        raise DataError(f"max_len must be at least 2 ([CLS] and [SEP]), got {max_len}")
    full = [e.ids for e in wp.tokenizer.encode_batch(list(texts))]
    cut = [ids if len(ids) <= max_len else ids[: max_len - 1] + [wp.sep_id] for ids in full]
    return cut, [len(ids) for ids in full]


def compact(
    sequences: list[list[list[int]]], wp: WordPiece
) -> tuple[list[torch.Tensor], torch.Tensor, int]:
    """Per group, a float32 ``[n, T]`` tensor of compact token indices padded with
    ``PAD_INDEX`` to the longest sequence of all groups; the ``[V, d]`` embedding rows of the
    compact vocabulary (row 0, padding, is zeros); T.

    The compact vocabulary is the sorted set of token ids that occur, padding first, as the
    authors build it: the model's token table has one row per token actually used.
    """
    used = sorted({t for group in sequences for s in group for t in s} - {wp.pad_id})
    ids = np.array([wp.pad_id, *used])
    index = {int(t): i for i, t in enumerate(ids)}
    length = max((len(s) for group in sequences for s in group), default=0)
    out = []
    for group in sequences:
        x = torch.full((len(group), length), float(PAD_INDEX))
        for row, s in enumerate(group):
            x[row, : len(s)] = torch.tensor([index[t] for t in s], dtype=torch.float32)
        out.append(x)
    rows = wp.embeddings[torch.from_numpy(ids)].clone()
    rows[PAD_INDEX] = 0.0
    return out, rows, length
