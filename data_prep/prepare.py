"""Fetch or unpack every dataset's raw files once: `python -m data_prep.prepare [--root DIR]`.

Safe to rerun: files already in place are verified, not fetched again.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from . import fmnist, heart
from .base import DataError, data_root


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, help="data directory ($PLAYERFL_DATA or <repo>/data)")
    args = ap.parse_args(argv)
    root = (args.root or data_root()).expanduser().resolve()
    print(f"data root: {root}")
    try:
        print(fmnist.prepare(root))
    except DataError as e:
        print(f"fmnist: skipped. {e}")
    print(heart.prepare(root))
    print("digits: nothing to do (ships with scikit-learn)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
