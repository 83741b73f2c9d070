"""Reading idx files (the MNIST family's format) without trusting their headers blindly.

A header says how many items of which shape follow; a truncated or corrupted file therefore
shows up as a size mismatch, reported as a DataError naming the file, instead of a reshape
error deep inside numpy or torchvision.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .base import DataError


def read_idx(path: Path, ndim: int) -> np.ndarray:
    """The uint8 array stored in idx file `path` (memory-mapped: subsets stay cheap)."""
    path = Path(path)
    size = path.stat().st_size
    header = 4 + 4 * ndim
    with open(path, "rb") as f:
        head = f.read(header)
    if len(head) < header or head[:3] != b"\x00\x00\x08" or head[3] != ndim:
        raise DataError(
            f"{path} is not an idx file of unsigned bytes with {ndim} dimension(s) (bad header "
            f"{head[:4].hex() or 'empty'}); delete it and unpack the original again"
        )
    dims = tuple(int.from_bytes(head[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    expected = header + math.prod(dims)
    if size != expected:
        raise DataError(
            f"{path} is truncated or corrupted: its header announces shape {dims} "
            f"({expected} bytes) but the file has {size} bytes; delete it and unpack the "
            "original again"
        )
    return np.memmap(path, dtype=np.uint8, mode="r", offset=header, shape=dims)
