"""The source archive the book carries (playerfl_core.book.source_archive): the commit's files
under one folder, with a note naming the commit and whether tracked files had changed; a copy
without git packs its folder as it is."""

from __future__ import annotations

import gzip
import subprocess
import tarfile
from pathlib import Path

from playerfl_core.book.source_archive import FOLDER, NAME, main, write_source_archive


def _git(top: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(top), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def _repo(top: Path) -> str:
    """A one-commit repository holding a README.md, a Makefile and an ignored build folder."""
    top.mkdir()
    _git(top, "init", "-q")
    (top / "README.md").write_text("# a book\n")
    (top / "Makefile").write_text("book:\n\techo built\n")
    (top / ".gitignore").write_text("_build/\n")
    (top / "_build").mkdir()
    (top / "_build" / "page.html").write_text("built")
    _git(top, "add", ".")
    _git(top, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first")
    return _git(top, "rev-parse", "HEAD")


def _tar_commit(archive: Path) -> str:
    """The commit ``git archive`` recorded in the archive's pax header."""
    tar = gzip.decompress(archive.read_bytes())
    return (
        subprocess.run(["git", "get-tar-commit-id"], input=tar, capture_output=True, check=True)
        .stdout.decode()
        .strip()
    )


def _members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def test_the_archive_holds_the_commit_and_names_it(tmp_path):
    commit = _repo(tmp_path / "book")
    (tmp_path / "book" / "README.md").write_text("# edited, not committed\n")
    archive, note = write_source_archive(tmp_path / "book", tmp_path / "out")

    said = note.read_text()
    assert said.startswith(f"commit {commit} (") and "uncommitted changes: yes" in said, said
    files = _members(archive)
    assert files[f"{FOLDER}/README.md"] == b"# a book\n"  # the commit's, not the edited file
    assert files[f"{FOLDER}/Makefile"] == b"book:\n\techo built\n"
    assert files[f"{FOLDER}/{NAME}.txt"] == said.encode()
    assert not any("_build" in name for name in files), sorted(files)
    assert _tar_commit(archive) == commit

    _git(tmp_path / "book", "checkout", "-q", "README.md")
    _, note = write_source_archive(tmp_path / "book", tmp_path / "out")
    assert note.read_text().endswith("uncommitted changes: none\n"), note.read_text()


def test_a_copy_without_git_packs_its_folder_and_quotes_its_note(tmp_path):
    _repo(tmp_path / "book")
    archive, _ = write_source_archive(tmp_path / "book", tmp_path / "out")
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path / "copy", filter="data")
    copy = tmp_path / "copy" / FOLDER
    (copy / "_build").mkdir()
    (copy / "_build" / "page.html").write_text("built")
    (copy / "__pycache__").mkdir()
    (copy / "__pycache__" / "x.pyc").write_bytes(b"")

    archive, note = write_source_archive(copy, tmp_path / "again")
    said = note.read_text()
    assert said.startswith("not a git checkout"), said
    assert (copy / f"{NAME}.txt").read_text() in said  # the note it came with
    files = _members(archive)
    assert sorted(files) == sorted(
        f"{FOLDER}/{name}" for name in ("README.md", "Makefile", ".gitignore", f"{NAME}.txt")
    ), sorted(files)
    assert files[f"{FOLDER}/{NAME}.txt"] == said.encode()


def test_the_command_says_what_it_wrote(tmp_path, monkeypatch, capsys):
    commit = _repo(tmp_path / "book")
    monkeypatch.chdir(tmp_path / "book")
    assert main(["out"]) == 0
    assert f"commit {commit}" in capsys.readouterr().out
    assert main([]) == 2
    assert "usage" in capsys.readouterr().err
