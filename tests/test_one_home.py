"""One home per dataset: no dataset name in the library outside the declarations in data_prep."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from data_prep.registry import BUILT_IN

PACKAGE = Path(__file__).resolve().parent.parent / "playerfl_core"
NAMES = sorted(m.FEDERATION.name for m in BUILT_IN)
NAMED = re.compile(rf"^({'|'.join(NAMES)})(_\w*)?$")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes (prose may mention a dataset; code may not)."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                found.add(id(body[0].value))
        # attribute docstrings: a string expression right after an assignment
        if isinstance(body, list):
            for before, after in zip(body, body[1:], strict=False):
                if isinstance(before, ast.Assign | ast.AnnAssign) and isinstance(after, ast.Expr):
                    if isinstance(after.value, ast.Constant):
                        found.add(id(after.value))
    return found


def dataset_names_in(source: str) -> list[tuple[int, str]]:
    tree = ast.parse(source)
    skip = _docstrings(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in skip
        and NAMED.match(node.value.strip())
    ]


def test_the_library_names_no_dataset():
    hits = {
        str(path.relative_to(PACKAGE)): found
        for path in sorted(PACKAGE.rglob("*.py"))
        if (found := dataset_names_in(path.read_text()))
    }
    assert not hits, f"dataset names in library code (declare them in data_prep instead): {hits}"


def test_the_scan_finds_a_dataset_name():
    """The scan itself: a name in code is found, in a docstring it is not."""
    assert dataset_names_in('SIZES = {"heart": (16, 16)}\n') == [(1, "heart")]
    assert dataset_names_in('x = f(bases=("digits_rotate",))\n') == [(1, "digits_rotate")]
    assert dataset_names_in('def f():\n    """Runs on heart."""\n    return 1\n') == []
    assert dataset_names_in('label = "Heart disease"\n') == []
