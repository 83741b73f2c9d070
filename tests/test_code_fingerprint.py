"""The code fingerprint moves with the code a run executes, not with its prose: a comment or a
docstring edited in a fingerprinted file keeps it, any change to code changes it, and the
committed record links today's fingerprint to the code of every committed store's runs."""

from __future__ import annotations

import json
import shutil

import pytest

from playerfl_core.study import run_spec
from playerfl_core.study.code_versions import equivalent_codes
from playerfl_core.study.run_spec import REPO_ROOT, code_fingerprint, code_text

MODULE = b'''"""A module docstring."""

import math  # why math

RATE = 0.5
"""What the rate is for."""


def step(x):
    """One step.

    More about it.
    """
    # a comment on its own line
    text = """kept

as it runs"""
    return math.exp(RATE * x), text


class Box:
    """A box."""

    size = 1
    """Its size."""

    if RATE:
        try:
            def inner(self):
                """Inside blocks."""
                return 1
        except ValueError:
            "a string statement in a handler"
'''

SAME = [  # (what changed, old bytes, new bytes): prose only
    ("module docstring", b'"""A module docstring."""', b'"""Another, longer\n\ndocstring."""'),
    ("trailing comment", b"  # why math", b"  # another reason"),
    ("comment removed", b"    # a comment on its own line\n", b""),
    ("comment added", b"RATE = 0.5\n", b"# said first\nRATE = 0.5  # said after\n"),
    ("attribute docstring", b'"""What the rate is for."""', b'"""For the step."""'),
    ("function docstring", b"    More about it.\n", b"    More about it,\n    on two lines.\n"),
    ("class docstring", b'"""A box."""', b'"""A box, described."""'),
    ("class attribute docstring", b'"""Its size."""', b'"""Its size, in units."""'),
    ("docstring inside blocks", b'"""Inside blocks."""', b'"""Inside if and try."""'),
    ("string statement in a handler", b'"a string statement in a handler"', b'"reworded"'),
]
DIFFERENT = [  # code
    ("a number", b"RATE = 0.5", b"RATE = 0.25"),
    ("a string that runs", b"as it runs", b"as it ran"),
    ("a blank line inside a string that runs", b"kept\n\nas", b"kept\nas"),
    ("an import moved", b"import math  # why math\n", b""),
    ("a call", b"math.exp(", b"math.expm1("),
    ("code inside blocks", b"                return 1\n", b"                return 2\n"),
]


@pytest.mark.parametrize(("what", "old", "new"), SAME, ids=[s[0] for s in SAME])
def test_prose_keeps_the_code_text(what, old, new):
    assert old in MODULE, what
    assert code_text(MODULE.replace(old, new)) == code_text(MODULE), what


@pytest.mark.parametrize(("what", "old", "new"), DIFFERENT, ids=[d[0] for d in DIFFERENT])
def test_code_changes_the_code_text(what, old, new):
    assert old in MODULE, what
    edited = MODULE.replace(old, new)
    if what == "an import moved":
        edited = edited.replace(b"def step(x):\n", b"def step(x):\n    import math\n\n")
    assert code_text(edited) != code_text(MODULE), what


def test_a_file_that_does_not_parse_counts_by_its_bytes():
    broken = b"def f(:\n    return 1  # comment\n"
    assert code_text(broken) == broken


@pytest.fixture
def sources(tmp_path, monkeypatch):
    """A copy of the fingerprinted sources, which the fingerprint then reads."""
    for package in ("playerfl_core", "data_prep"):
        shutil.copytree(
            REPO_ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    monkeypatch.setattr(run_spec, "REPO_ROOT", tmp_path)
    monkeypatch.setattr(run_spec, "PACKAGE_DIR", tmp_path / "playerfl_core")
    return tmp_path


def _edit(path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, (path, old)
    path.write_text(text.replace(old, new))


def test_the_fingerprint_keeps_for_prose_and_moves_for_code(sources):
    today = code_fingerprint()
    engine = sources / "playerfl_core" / "fl" / "engine.py"
    _edit(engine, '"""The federated engine:', '"""The federated engine (reworded):')
    _edit(engine, "class LocalLink:\n", "class LocalLink:  # in one process\n")
    assert code_fingerprint() == today
    _edit(engine, "    run.link = LocalLink(run, algorithm)\n", "    run.link = None\n")
    assert code_fingerprint() != today
    assert len(code_fingerprint()) == 12


def test_every_fingerprinted_module_counts(sources):
    """A code change anywhere the fingerprint looks changes it (engine, algorithms, data_prep)."""
    today = code_fingerprint()
    for name in ("fl/models.py", "fl/algorithms/ditto.py", "../data_prep/partition.py"):
        path = sources / "playerfl_core" / name
        path.write_text(path.read_text() + "\nEXTRA = 1\n")
        assert code_fingerprint() != today, name
        today = code_fingerprint()


def test_every_committed_store_was_computed_by_code_known_to_give_todays_runs():
    """Each archive's runs count as current: their code is today's or linked to it, bit for bit,
    in ``stores/code_versions.json`` (else grids flag them stale_code and chapters recompute)."""
    known = equivalent_codes(code_fingerprint(), REPO_ROOT / "stores" / "code_versions.json")
    unknown = {}
    for manifest in sorted((REPO_ROOT / "stores").glob("*/manifest.json")):
        codes = {run.get("code") for run in json.loads(manifest.read_text())["runs"]}
        if codes - known - {None}:
            unknown[manifest.parent.name] = sorted(codes - known - {None})
    assert not unknown, (
        f"runs of code versions not linked to today's ({code_fingerprint()}): {unknown}; run "
        "`playerfl archive check-code --profile NAME` for each, which re-computes their runs"
    )
