"""The pre-registration's record lives in its appendix, and the library names things by what they
are: the appendix holds every declared point in order, every "point N of the record" it cites
exists, the module points readers there, and no docstring or comment of the library cites a
tracker item or issue by number."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from playerfl_core.study import preregistration
from playerfl_core.study.run_spec import REPO_ROOT

APPENDIX = REPO_ROOT / "chapters" / "appendix_preregistration.ipynb"
RECORD_LABEL = "(preregistration-record)="
TRACKER = re.compile(r"\b[Ii]tems? [0-9]+|\b[Ii]ssues? [0-9]+|#[0-9]{2}\b")


def markdown_cells() -> list[str]:
    cells = json.loads(APPENDIX.read_text())["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]


def record() -> str:
    (text,) = [s for s in markdown_cells() if s.startswith(RECORD_LABEL)]
    return text


def test_the_record_holds_every_declared_point_in_order():
    numbers = [int(n) for n in re.findall(r"^(\d+)\. \*\*", record(), flags=re.M)]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 17, numbers


def test_every_point_the_appendix_cites_is_in_the_record():
    points = {int(n) for n in re.findall(r"^(\d+)\. \*\*", record(), flags=re.M)}
    cited = [
        int(n)
        for text in markdown_cells()
        for n in re.findall(r"point (\d+) of\s+\{ref\}`the record <preregistration-record>`", text)
    ]
    assert cited, "the appendix's sections no longer cite the record"
    assert set(cited) <= points, sorted(set(cited) - points)


def test_the_module_points_to_the_appendix_record():
    doc = preregistration.__doc__
    heading = re.search(r"^## (.+)$", record(), flags=re.M).group(1)
    assert "appendix_preregistration.ipynb" in doc
    assert f'"{heading.split(": ")[0]}' in " ".join(doc.split())
    assert len(doc.splitlines()) < 30  # a summary, not the history


def _library_files() -> list[Path]:
    """Every module of the library. The files the code fingerprint hashes are in too: it ignores
    comments and docstrings, so naming things there keeps every stored run current."""
    files = [*(REPO_ROOT / "playerfl_core").rglob("*.py"), *(REPO_ROOT / "data_prep").rglob("*.py")]
    return sorted(p for p in files if "__pycache__" not in p.parts)


@pytest.mark.parametrize(
    "path", _library_files(), ids=lambda p: p.relative_to(REPO_ROOT).as_posix()
)
def test_no_tracker_numbers_in_the_library(path):
    found = [
        f"{path.name}:{i}: {line.strip()}"
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if TRACKER.search(line)
    ]
    assert not found, found
