"""An import inside a function or class says why it is not at the top of its module.

At the top, a module's dependencies show at a glance and an import cycle fails at once, on import;
an import inside a function is kept only where it breaks a real cycle or puts off a slow or
optional dependency, and then its line (for a multi-line import, its first or last line) carries
``# deferred: <why>``. Imports at module level, ``if TYPE_CHECKING:`` blocks included, need none.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "playerfl_core"
REASON = re.compile(r"#\s*deferred:\s*\S")
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def unexplained_imports(source: str) -> list[int]:
    """First lines of the imports inside a function or class of ``source`` whose first and last
    lines carry no ``# deferred: <why>`` comment (a string that looks like one does not count)."""
    comments = {
        token.start[0]: token.string
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    }
    found = []

    def visit(node: ast.AST, nested: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if nested and isinstance(child, (ast.Import, ast.ImportFrom)):
                lines = (child.lineno, child.end_lineno)
                if not any(REASON.search(comments.get(n, "")) for n in lines):
                    found.append(child.lineno)
            visit(child, nested or isinstance(child, SCOPES))

    visit(ast.parse(source), nested=False)
    return sorted(found)


def test_every_import_inside_a_function_says_why_it_is_deferred():
    unexplained = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line in unexplained_imports(path.read_text(encoding="utf-8"))
    ]
    assert not unexplained, (
        "imports inside a function or class with no '# deferred: <why>' on their line: move them "
        "to the module's top, or say why they cannot be there:\n  " + "\n  ".join(unexplained)
    )


def test_the_check_flags_bare_imports_and_accepts_reasoned_ones():
    source = """\
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas

try:
    import ray
except ImportError:
    ray = None


def bare():
    import json


def reasoned():
    import json  # deferred: a cycle


def reason_after_noqa():
    import ray  # noqa: F401  # deferred: slow


def reason_on_first_line():
    from json import (  # deferred: a cycle
        dumps,
        loads,
    )


def reason_on_last_line():
    from json import (
        dumps,
        loads,
    )  # deferred: a cycle


def reason_in_the_middle_only():
    from json import (
        dumps,  # deferred: a cycle
        loads,
    )


def empty_reason():
    import json  # deferred:


def a_string_is_no_comment():
    import json; text = "# deferred: a cycle"


class Holder:
    import json

    def method(self):
        def inner():
            import json
"""
    lines = source.splitlines()

    def scope(line: int) -> str:  # the def or class an import at ``line`` sits in
        header = next(
            text for text in reversed(lines[: line - 1]) if text.lstrip().startswith(("def", "cl"))
        )
        return header.split()[1].split("(")[0].rstrip(":")

    assert [scope(line) for line in unexplained_imports(source)] == [
        "bare",
        "reason_in_the_middle_only",
        "empty_reason",
        "a_string_is_no_comment",
        "Holder",
        "inner",
    ]
