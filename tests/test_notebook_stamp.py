"""A chapter is re-executed only when its inputs digest changed (notebook_stamp).

Every test works on a small temporary repository (ROOT monkeypatched), and papermill is replaced
by a fake that writes outputs the way an execution would, so nothing here trains a model.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

from playerfl_core.book import notebook_stamp as ns
from playerfl_core.study import machine

ROOT = Path(__file__).resolve().parents[1]

FILES = {
    "playerfl_core/__init__.py": "",
    "playerfl_core/book/reports/chapter.py": "X = 1\n",
    "data_prep/heart.py": "ROWS = 303\n",
    "examples/cancer.py": "FEATURES = 30\n",
    "requirements.txt": "torch==2.14.1\n",
    "stores/quick/manifest.json": '{"runs": 1}\n',
    "stores/quick/runs.parquet": "PAR1",
}


def write_notebook(path: Path, sources: list[str]) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# A chapter")]
    nb.cells += [nbformat.v4.new_code_cell(s) for s in sources]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


@pytest.fixture
def repo(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    for name in ("01_one", "02_two", "03_three"):
        write_notebook(root / "chapters" / f"{name}.ipynb", [f"print('{name}')"])
    monkeypatch.setattr(ns, "ROOT", root)
    monkeypatch.delenv("PLAYERFL_STORES", raising=False)
    return root


@pytest.fixture
def papermill(monkeypatch):
    """A fake papermill: records each call and gives every code cell an output and a count."""
    calls: list[str] = []
    failing: set[str] = set()

    def fake(notebook: Path) -> None:
        calls.append(notebook.stem)
        if notebook.stem in failing:
            raise subprocess.CalledProcessError(1, ["papermill", str(notebook)])
        execute_by_hand(notebook)

    monkeypatch.setattr(ns, "run_papermill", fake)
    fake.calls, fake.failing = calls, failing
    return fake


def execute_by_hand(notebook: Path) -> None:
    nb = nbformat.read(notebook, as_version=4)
    for count, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        cell.outputs = [nbformat.v4.new_output("stream", text=f"ran {count}\n")]
        cell.execution_count = count + 1
        cell.metadata["papermill"] = {"duration": 0.1}
    nb.metadata["papermill"] = {"duration": 2.5}
    nbformat.write(nb, notebook)


def chapter(repo: Path, name: str = "01_one") -> Path:
    return repo / "chapters" / f"{name}.ipynb"


def test_stamping_records_inputs_and_machine_and_keeps_the_digest(repo):
    nb = chapter(repo)
    digest = ns.inputs_digest(nb)
    assert not ns.is_current(nb)
    ns.stamp(nb, digest, 12.34)
    assert ns.inputs_digest(nb) == digest
    assert ns.is_current(nb)
    rec = ns.record(nb)
    assert rec["inputs"] == digest and rec["seconds"] == 12.3 and rec["executed"]
    assert machine.key(rec["machine"]) == machine.fingerprint()["key"]


@pytest.mark.parametrize(
    "change",
    [
        "cell source",
        "cell type",
        "cell order",
        "library",
        "new library module",
        "data_prep",
        "example",
        "requirements",
        "store manifest",
        "store table",
    ],
)
def test_a_changed_input_changes_the_digest(repo, change):
    nb = chapter(repo)
    before = ns.inputs_digest(nb)
    if change.startswith("cell"):
        book = nbformat.read(nb, as_version=4)
        if change == "cell source":
            book.cells[1].source += "\nprint('more')"
        elif change == "cell type":
            book.cells[1] = nbformat.v4.new_markdown_cell(book.cells[1].source)
        else:
            book.cells.reverse()
        nbformat.write(book, nb)
    else:
        name = {
            "library": "playerfl_core/book/reports/chapter.py",
            "new library module": "playerfl_core/new.py",
            "data_prep": "data_prep/heart.py",
            "example": "examples/cancer.py",
            "requirements": "requirements.txt",
            "store manifest": "stores/quick/manifest.json",
            "store table": "stores/quick/runs.parquet",
        }[change]
        with open(repo / name, "a") as f:
            f.write("# changed\n")
    assert ns.inputs_digest(nb) != before


def test_outputs_counts_metadata_caches_and_location_leave_the_digest(repo, tmp_path, monkeypatch):
    nb = chapter(repo)
    before = ns.inputs_digest(nb)
    execute_by_hand(nb)
    book = nbformat.read(nb, as_version=4)
    book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    book.cells[0].metadata["tags"] = ["hide-input"]
    nbformat.write(book, nb)
    cache = repo / "playerfl_core" / "__pycache__"
    cache.mkdir()
    (cache / "chapter.cpython-311.pyc").write_bytes(b"\0compiled")
    pending = repo / "stores" / "pending" / "val_rescore"  # runs of a computation not yet done
    pending.mkdir(parents=True)
    (pending / "fmnist_s0_p0.json").write_text("{}\n")
    assert ns.inputs_digest(nb) == before

    monkeypatch.chdir(tmp_path)  # the working directory does not matter ...
    assert ns.inputs_digest(nb) == before
    moved = shutil.copytree(repo, tmp_path / "elsewhere")  # ... nor where the clone lies
    monkeypatch.setattr(ns, "ROOT", moved)
    assert ns.inputs_digest(chapter(moved)) == before


def test_execute_skips_a_current_notebook_and_runs_and_stamps_a_stale_one(repo, papermill, capsys):
    current, stale = chapter(repo, "01_one"), chapter(repo, "02_two")
    ns.stamp(current, ns.inputs_digest(current), 5.0)
    untouched = current.read_bytes()

    assert ns.main(["execute", str(current), str(stale)]) == 0

    assert papermill.calls == ["02_two"]
    assert current.read_bytes() == untouched
    assert ns.is_current(stale)
    assert nbformat.read(stale, as_version=4).cells[1].outputs  # the fake's outputs were kept
    out = capsys.readouterr().out
    assert "chapter 01_one: current (executed " in out
    assert "[2/2] executing 02_two" in out

    assert ns.main(["execute", str(stale)]) == 0  # a second run has nothing to do
    assert papermill.calls == ["02_two"]


def test_execute_reexecutes_after_the_library_changed(repo, papermill):
    assert ns.main(["execute"]) == 0  # default: every chapter, sorted
    assert papermill.calls == ["01_one", "02_two", "03_three"]
    (repo / "data_prep" / "heart.py").write_text("ROWS = 304\n")
    assert ns.main(["execute"]) == 0
    assert papermill.calls == ["01_one", "02_two", "03_three"] * 2


def test_a_failing_chapter_is_named_the_others_run_and_the_exit_is_nonzero(repo, papermill, capsys):
    papermill.failing.add("02_two")

    assert ns.main(["execute"]) == 1

    assert papermill.calls == ["01_one", "02_two", "03_three"]
    assert ns.is_current(chapter(repo, "01_one")) and ns.is_current(chapter(repo, "03_three"))
    assert not ns.is_current(chapter(repo, "02_two"))  # not stamped: tried again next time
    captured = capsys.readouterr()
    assert "chapter 02_two FAILED" in captured.out
    assert "Failed: 02_two" in captured.err


def test_status_and_stamp_commands(repo, capsys):
    one, two = chapter(repo, "01_one"), chapter(repo, "02_two")
    execute_by_hand(one)
    assert ns.main(["stamp", str(one)]) == 0
    assert ns.record(one)["seconds"] == 2.5  # papermill's recorded duration
    capsys.readouterr()

    assert ns.main(["status"]) == 1  # two chapters are stale
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("chapter 01_one: current, 2.5 s, executed ")
    assert machine.describe(ns.record(one)["machine"]) in lines[0]
    assert lines[1] == "chapter 02_two: stale (never stamped)"

    ns.stamp(two, "0" * 64, 1.0)
    assert ns.main(["status", str(two)]) == 1
    assert capsys.readouterr().out.startswith("chapter 02_two: stale, 1.0 s, executed ")


@pytest.mark.parametrize("path", ["README.md", "missing.ipynb"])
def test_a_path_that_is_not_a_notebook_is_one_clear_error(repo, papermill, capsys, path):
    (repo / "README.md").write_text("# not a notebook\n")
    target = str(repo / path)
    assert ns.main(["execute", str(chapter(repo)), target]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {target} is not a notebook (an existing .ipynb file)\n"
    assert papermill.calls == []  # checked before anything runs


def test_the_teaching_pages_run_times_are_the_chapters_records():
    """The table between the markers is what the notebooks' records give; every chapter of the
    book has a row (red when a chapter is re-executed without rewriting the page, or added
    without a row)."""
    from playerfl_core.book import teaching_times as T

    text = T.PAGE.read_text(encoding="utf-8")
    assert T.rendered(text) == text, (
        "run `python -c 'from playerfl_core.book import "
        "teaching_times as T; T.update()'` (notebook_stamp execute does it)"
    )
    chapters = {p.stem for p in (T.ROOT / "chapters").glob("*.ipynb")}
    assert set(T.CHAPTERS) == chapters
    handout = T.HANDOUT.read_text(encoding="utf-8")
    assert T.lab_rendered(handout) == handout, "the lab handout's times: run the same update()"
    assert set(T.LAB_CHAPTERS) <= chapters
    for stem in T.LAB_CHAPTERS:
        seconds = T._record(T.ROOT / "chapters" / f"{stem}.ipynb")["seconds"]
        assert f"| {{doc}}`{stem}` | {float(seconds):.0f} s |" in handout


def test_chapters_execute_with_one_thread_and_no_progress_bars_however_started(
    tmp_path, monkeypatch
):
    """Stop 31: chapters executed by calling this module directly (not through ``make``) got two
    threads and progress bars, and nbval failed on both. The module now sets them itself."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setenv("TQDM_DISABLE", "0")
    notebook = tmp_path / "probe.ipynb"
    probe = "import os, torch\nprint(os.environ['TQDM_DISABLE'], torch.get_num_threads())"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(probe)]), notebook)
    ns.run_papermill(notebook)
    out = nbformat.read(notebook, as_version=4).cells[0].outputs
    assert "".join(o.get("text", "") for o in out).split() == ["1", "1"]


def test_a_failing_chapter_keeps_its_outputs_and_the_failed_run_is_kept_apart(tmp_path):
    """A chapter that fails half-way used to be overwritten with papermill's error copy (an
    error cell on top, outputs gone); it now stays as it was, and the failed run is kept under
    _build/failed for reading."""
    chapters = tmp_path / "chapters"
    chapters.mkdir()
    notebook = chapters / "probe.ipynb"
    cells = [nbformat.v4.new_code_cell("print('kept')"), nbformat.v4.new_code_cell("1 / 0")]
    cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="kept\n")]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), notebook)
    before = notebook.read_bytes()
    with pytest.raises(subprocess.CalledProcessError):
        ns.run_papermill(notebook)
    assert notebook.read_bytes() == before
    failed = ns.failed_copy(notebook)
    assert failed == tmp_path / "_build" / "failed" / "probe.ipynb"
    assert "ZeroDivisionError" in failed.read_text()


def test_every_chapter_is_scheduled_in_a_teaching_plan():
    """The teaching page's two-week and four-week plans together give every numbered chapter a
    session (issue 35: 03a, 04b and 07 had none), so an instructor adopts the book as is."""
    import re

    text = (ROOT / "chapters" / "teaching.md").read_text(encoding="utf-8")
    plans = text[text.index("## A two-week plan") : text.index("## Assessment ideas")]
    chapters = sorted(p.stem for p in (ROOT / "chapters").glob("0*.ipynb"))
    named = set(re.findall(r"\{doc\}`(0[^`]+)`", plans))
    assert set(chapters) - named == set(), sorted(set(chapters) - named)
