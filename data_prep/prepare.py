"""Fetch, unpack or check every dataset's raw files once, and report each one's status:
`python -m data_prep.prepare [--root DIR]`.

Safe to rerun: files already in place are verified, not fetched again. A dataset whose files
are missing is reported with what to put where; it does not stop the others.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from . import cifar10, emnist, fmnist, heart, isic2019, mimic3, sent140
from .base import DataError, data_root


def _digits(root: Path) -> str:
    return "digits: nothing to do (ships with scikit-learn)"


STEPS = {
    "fmnist": fmnist.prepare,
    "heart": heart.prepare,
    "digits": _digits,
    "emnist": emnist.prepare,
    "cifar10": cifar10.prepare,
    "isic2019": isic2019.prepare,
    "sent140": sent140.prepare,
    "mimic3": mimic3.prepare,
}
"""Dataset -> ``prepare(root) -> one-line status`` (raises DataError when files are missing)."""


def statuses(root: Path) -> dict[str, tuple[bool, str]]:
    """Per dataset: (ready, one-line account); runs every preparation step."""
    out = {}
    for name, step in STEPS.items():
        try:
            out[name] = (True, step(root))
        except DataError as e:
            out[name] = (False, f"{name}: not available. {str(e).removeprefix(name + ': ')}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, help="data directory ($PLAYERFL_DATA or <repo>/data)")
    args = ap.parse_args(argv)
    root = (args.root or data_root()).expanduser().resolve()
    print(f"data root: {root}")
    for _, line in statuses(root).values():
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
