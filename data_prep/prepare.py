"""Fetch, unpack or check every dataset's raw files once, and report each one's status:
`python -m data_prep.prepare [--root DIR]`.

Safe to rerun: files already in place are verified, not fetched again. A dataset whose files
are missing is reported with what to put where; it does not stop the others.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .base import DataError, data_root
from .registry import declarations


def statuses(root: Path) -> dict[str, tuple[bool, str]]:
    """Per dataset: (ready, one-line account); runs every preparation step."""
    out = {}
    for fed in declarations():
        name = fed.name
        try:
            out[name] = (True, fed.prepare(root) if fed.prepare else f"{name}: nothing to fetch")
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
