"""The book carries its own source: an archive of the commit it was built from, and a note naming
that commit.

``make html`` writes both into ``_build/source`` before the HTML build; the intro and the lab
handout link the archive and quote the note, so a reader of the HTML can download exactly the
code that made it. In a git checkout the archive is ``git archive HEAD`` (the note added at its
top), and the note says whether tracked files had uncommitted changes: the pages then show those
changes while the archive holds the commit. In a copy without git (a reader's unpacked archive)
the folder is packed again as it is, the note quoting the note it came with.

    python -m playerfl_core.book.source_archive OUT_DIR   # in the book's folder
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

NAME = "playerfl-book-source"
"""Stem of the archive (``.tar.gz``) and of its note (``.txt``)."""

FOLDER = "playerfl-book"
"""The folder the archive unpacks into."""

LEFT_OUT = frozenset({".git", "_build", ".venv", "data", "results"})
"""Top-level folders a copy without git leaves out of its archive: build outputs, the
environment, the prepared data (``make data`` prepares them again); ``__pycache__`` anywhere."""


def _git(top: Path, *args: str) -> str | None:
    """A git command's output in ``top``; None where git or a commit is missing."""
    try:
        done = subprocess.run(
            ["git", "-C", str(top), *args], capture_output=True, text=True, check=False
        )
    except FileNotFoundError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def source_note(top: Path) -> str:
    """What the archive holds: the commit and its date, and whether tracked files had
    uncommitted changes; or, without git, that the folder is packed as it is."""
    commit = _git(top, "rev-parse", "--verify", "-q", "HEAD")
    if commit is None:
        came_with = top / f"{NAME}.txt"
        origin = came_with.read_text() if came_with.is_file() else "(no note on its origin)\n"
        return f"not a git checkout: the archive holds this folder as it was built from\n{origin}"
    date = _git(top, "show", "-s", "--format=%cs", "HEAD")
    changed = _git(top, "status", "--porcelain", "--untracked-files=no")
    state = "yes (the book shows them; the archive holds the commit)" if changed else "none"
    return f"commit {commit} ({date})\nuncommitted changes: {state}\n"


def write_source_archive(top: Path, out_dir: Path) -> tuple[Path, Path]:
    """Write ``NAME.txt`` (:func:`source_note`) and ``NAME.tar.gz`` (the commit, or the folder
    without :data:`LEFT_OUT`, under :data:`FOLDER`/, the note at its top) into ``out_dir``."""
    top, out_dir = top.resolve(), out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    note, archive = out_dir / f"{NAME}.txt", out_dir / f"{NAME}.tar.gz"
    note.write_text(source_note(top))
    if _git(top, "rev-parse", "--verify", "-q", "HEAD") is not None:
        done = subprocess.run(
            ["git", "-C", str(top), "archive", "--format=tar.gz", f"--prefix={FOLDER}/",
             f"--add-file={note}", "-o", str(archive), "HEAD"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"git archive failed in {top}: {done.stderr.strip()}")
        return archive, note

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        return None if Path(info.name).name == "__pycache__" else info

    with tarfile.open(archive, "w:gz") as tar:
        for path in sorted(top.iterdir()):
            if path.name not in LEFT_OUT and path.name != note.name:
                tar.add(path, f"{FOLDER}/{path.name}", filter=keep)
        tar.add(note, f"{FOLDER}/{note.name}")
    return archive, note


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m playerfl_core.book.source_archive OUT_DIR", file=sys.stderr)
        return 2
    try:
        archive, note = write_source_archive(Path.cwd(), Path(args[0]))
    except RuntimeError as err:
        print(f"source archive: {err}", file=sys.stderr)
        return 1
    print(f"{archive} ({archive.stat().st_size / 1e6:.1f} MB): {note.read_text().splitlines()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
