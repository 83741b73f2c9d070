"""Re-execute a chapter only when what its outputs depend on changed, by content, not file time.

Each executed chapter records in its metadata (``metadata.playerfl``) the SHA-256 of its inputs
(:func:`inputs_digest`), the machine it ran on (:func:`playerfl_core.study.machine.fingerprint`),
when, and how long it took. ``make book`` runs
``python -m playerfl_core.book.notebook_stamp execute``: a chapter whose recorded digest equals
today's keeps its committed outputs, so a fresh clone (whose file times say nothing) re-executes
only the chapters whose code, library or stores changed.

Commands::

    python -m playerfl_core.book.notebook_stamp execute [NOTEBOOK ...]  # stale ones (default: all)
    python -m playerfl_core.book.notebook_stamp status [NOTEBOOK ...]   # state, seconds, machine
    python -m playerfl_core.book.notebook_stamp stamp NOTEBOOK ...      # record without executing

``stamp`` asserts that a notebook's outputs are those of the current code: use it only right
after executing the notebook by hand with the working tree as it is now.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import nbformat
import torch

from playerfl_core.book import teaching_times
from playerfl_core.study import machine
from playerfl_core.study.archive import PENDING

ROOT = Path(__file__).resolve().parents[2]
"""The repository root; every input is found from here, whatever the working directory."""

LIBRARY = ("playerfl_core/**/*.py", "data_prep/**/*.py", "examples/*.py", "requirements.txt")
"""Inputs besides the notebook and the stores, as glob patterns under :data:`ROOT`."""

KEY = "playerfl"
"""The notebook-metadata key of the record."""


class NotANotebook(ValueError):
    """A path given on the command line is not an existing ``.ipynb`` file."""


def _stores_root(root: Path) -> Path:
    # The chapters read the archives from here (playerfl_core.study.archive.archive_dir).
    env = os.environ.get("PLAYERFL_STORES")
    return Path(env).expanduser().resolve() if env else root / "stores"


def input_files(root: Path | None = None) -> list[tuple[str, Path]]:
    """(name, path) of every library source and store file, sorted by name.

    Names are relative to the root (a store file as ``stores/<profile>/<file>``), so the digest
    does not depend on where the clone lies.
    """
    root = root or ROOT
    found = {
        p.relative_to(root).as_posix(): p
        for pattern in LIBRARY
        for p in root.glob(pattern)
        if p.is_file() and "__pycache__" not in p.parts
    }
    stores = _stores_root(root)
    if stores.is_dir():
        for p in stores.rglob("*"):
            pending = p.relative_to(stores).parts[0] == PENDING  # runs no chapter reads yet
            if p.is_file() and "__pycache__" not in p.parts and not pending:
                found["stores/" + p.relative_to(stores).as_posix()] = p
    return sorted(found.items())


def _read(notebook: Path) -> nbformat.NotebookNode:
    notebook = Path(notebook)
    if notebook.suffix != ".ipynb" or not notebook.is_file():
        raise NotANotebook(f"{notebook} is not a notebook (an existing .ipynb file)")
    return nbformat.read(notebook, as_version=4)


def inputs_digest(notebook: Path | str, root: Path | None = None) -> str:
    """SHA-256 (hex) of what the notebook's outputs depend on.

    Hashed: the notebook's cell types and sources in order (not its outputs, execution counts or
    metadata, so executing and stamping leave the digest alone), then every file of
    :func:`input_files` as its name and bytes. The data files are not hashed: they are large,
    and their loaders verify them against SHA-256 sums written in ``data_prep`` (which is
    hashed), so changed data fails loudly instead of passing as current.
    """
    nb = _read(Path(notebook))
    h = hashlib.sha256()
    cells = [[cell.cell_type, cell.source] for cell in nb.cells]
    h.update(json.dumps(cells, ensure_ascii=False).encode())
    for name, path in input_files(root):
        content = path.read_bytes()
        # Lengths frame each part, so no two file sets hash alike by shifting bytes across.
        h.update(f"\0{name}\0{len(content)}\0".encode())
        h.update(content)
    return h.hexdigest()


def record(notebook: Path | str) -> dict:
    """The notebook's stored record (empty if it was never stamped)."""
    return dict(_read(Path(notebook)).metadata.get(KEY) or {})


def stamp(notebook: Path | str, digest: str, seconds: float) -> None:
    """Write the record into the notebook's metadata; everything else stays as nbformat writes
    it (as papermill wrote it), so the diff is the record alone. ``digest`` is computed before
    executing: the inputs the outputs came from."""
    notebook = Path(notebook)
    nb = _read(notebook)
    nb.metadata[KEY] = {
        "inputs": digest,
        "machine": machine.fingerprint(threads=torch.get_num_threads()),
        "executed": datetime.now(UTC).isoformat(timespec="seconds"),
        "seconds": round(float(seconds), 1),
    }
    text = nbformat.writes(nb)
    if not notebook.read_text(encoding="utf-8").endswith("\n"):  # papermill ends without one
        text = text.rstrip("\n")
    notebook.write_text(text, encoding="utf-8")


def is_current(notebook: Path | str, root: Path | None = None) -> bool:
    """Whether the notebook's recorded inputs digest equals today's."""
    return record(notebook).get("inputs") == inputs_digest(notebook, root)


def chapter_env() -> dict[str, str]:
    """The environment chapters execute in, however they are started: one CPU thread unless
    ``OMP_NUM_THREADS`` says otherwise (kernels differ in their last bits across thread counts,
    and nbval compares outputs made this way), and no progress bars (their timings differ on
    every run, so a cell nbval compares would fail, and on the page they are logs)."""
    return {
        **os.environ,
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
        "TQDM_DISABLE": "1",
    }


def run_papermill(notebook: Path) -> None:
    """Execute ``notebook`` in its own folder (the chapters' working directory) and replace it
    with the result only when every cell ran: a failing chapter keeps its committed outputs, and
    papermill's failed copy (with the error) is left at :func:`failed_copy` to read. Raises
    :class:`subprocess.CalledProcessError` on failure."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / notebook.name
        papermill = [sys.executable, "-m", "papermill", str(notebook), str(out)]
        options = ["--cwd", str(notebook.parent), "-k", "python3", "--log-level", "WARNING"]
        try:
            subprocess.run(papermill + options, check=True, env=chapter_env())
        except subprocess.CalledProcessError:
            if out.exists():
                failed_copy(notebook).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(out, failed_copy(notebook))
            raise
        shutil.copyfile(out, notebook)


def failed_copy(notebook: Path) -> Path:
    """Where a failed execution of ``notebook`` is kept: ``_build/failed/<name>`` beside the
    book (never in ``chapters/``, where the book would build it)."""
    return notebook.resolve().parent.parent / "_build" / "failed" / notebook.name


def _chapter(notebook: Path) -> str:
    return f"chapter {notebook.stem}"


def _when_where(rec: dict) -> str:
    return f"executed {rec.get('executed', '?')} on {machine.describe(rec.get('machine'))}"


def execute(notebooks: list[Path], root: Path | None = None) -> int:
    """Execute and stamp each stale notebook; 0 if all are current or ran, else 1.

    A failing chapter is named and the others still run; it is not stamped, so the next call
    tries it again.
    """
    failed = []
    for i, notebook in enumerate(notebooks, 1):
        digest = inputs_digest(notebook, root)
        rec = record(notebook)
        if rec.get("inputs") == digest:
            print(f"{_chapter(notebook)}: current ({_when_where(rec)})", flush=True)
            continue
        print(f"[{i}/{len(notebooks)}] executing {notebook.stem}", flush=True)
        start = time.monotonic()
        try:
            run_papermill(notebook)
        except subprocess.CalledProcessError as err:
            print(
                f"{_chapter(notebook)} FAILED (papermill exit {err.returncode}); its committed "
                f"outputs are kept, the failed run is in {failed_copy(notebook)}",
                flush=True,
            )
            failed.append(notebook.stem)
            continue
        seconds = time.monotonic() - start
        stamp(notebook, digest, seconds)
        print(f"{_chapter(notebook)}: executed in {seconds:.0f} s", flush=True)
    if root is None:
        if teaching_times.update():
            print("chapters/teaching.md: run-time table rewritten from the records", flush=True)
    if failed:
        print(f"Failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def status(notebooks: list[Path], root: Path | None = None) -> int:
    """Print each chapter's state, recorded seconds and machine; 0 if all are current, else 1."""
    stale = 0
    for notebook in notebooks:
        rec = record(notebook)
        if not rec:
            print(f"{_chapter(notebook)}: stale (never stamped)")
            stale += 1
            continue
        current = rec.get("inputs") == inputs_digest(notebook, root)
        stale += not current
        state = "current" if current else "stale"
        print(f"{_chapter(notebook)}: {state}, {rec.get('seconds', '?')} s, {_when_where(rec)}")
    return 1 if stale else 0


def _notebooks(paths: list[str], root: Path | None = None) -> list[Path]:
    if not paths:
        return sorted((root or ROOT).joinpath("chapters").glob("*.ipynb"))
    for path in paths:
        _read(Path(path))  # one clear error before anything runs
    return [Path(p).resolve() for p in paths]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m playerfl_core.book.notebook_stamp",
        description="Execute chapters whose inputs digest changed; show or record digests.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("execute", help="execute and stamp stale notebooks (default: all chapters)")
    sub.add_parser("status", help="current or stale, recorded seconds and machine (exit 1: stale)")
    sub.add_parser(
        "stamp",
        help="record the current digest without executing: only right after executing by hand",
    )
    for name, choice in sub.choices.items():
        choice.add_argument("notebooks", nargs="+" if name == "stamp" else "*", metavar="NOTEBOOK")
    args = parser.parse_args(argv)
    try:
        notebooks = _notebooks(args.notebooks)
    except NotANotebook as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.command == "execute":
        return execute(notebooks)
    if args.command == "status":
        return status(notebooks)
    for notebook in notebooks:
        # papermill's own record of the hand execution's wall time, when there is one
        seconds = _read(notebook).metadata.get("papermill", {}).get("duration") or 0.0
        stamp(notebook, inputs_digest(notebook), seconds)
        print(f"{_chapter(notebook)}: stamped as current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
