"""Per-client seeds: one stable stream name per use, so every algorithm of a run draws the same
numbers for the same purpose. Below the engine and the algorithms, which both need it."""

from __future__ import annotations

import zlib


def client_seed(seed: int, client_id: int, stream: str = "shuffle") -> int:
    """A stable per-client seed, identical for every algorithm of a run."""
    return zlib.crc32(f"{seed}/{client_id}/{stream}".encode())
