"""The former flat module paths (``playerfl_core.engine``, ...) still work for one release: as the
same module objects as the new paths, in ``from ... import`` forms, under ``python -m``, and for
every name the chapters import."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_old_and_new_paths_are_one_module(monkeypatch):
    # another test of this process may have imported the old path already (no second warning)
    monkeypatch.delitem(sys.modules, "playerfl_core.engine", raising=False)
    with pytest.warns(DeprecationWarning, match=r"playerfl_core\.fl\.engine"):
        import playerfl_core.engine as old
    from playerfl_core.fl import engine as new

    assert old is new
    assert sys.modules["playerfl_core.engine"] is sys.modules["playerfl_core.fl.engine"]
    assert new.__name__ == "playerfl_core.fl.engine"
    assert new.__spec__.name == "playerfl_core.fl.engine"  # the alias does not take its spec


def test_from_an_old_package_import_a_module():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from playerfl_core.algorithms import prefix as old_prefix
        from playerfl_core.reports import one_run
        from playerfl_core.reports.tables import show
    from playerfl_core.book.reports import one_run as new_one_run
    from playerfl_core.book.reports.tables import show as new_show
    from playerfl_core.fl.algorithms import prefix

    assert one_run is new_one_run and show is new_show and old_prefix is prefix


def test_from_playerfl_core_import_an_old_module():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from playerfl_core import claims as C
        from playerfl_core import split_oracle as O
    assert callable(C.scorecard_html) and callable(C.min_pvalue) and callable(O.sweeps)


def test_python_m_an_old_path():
    out = subprocess.run(
        [sys.executable, "-m", "playerfl_core.flower_federation", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "usage" in out.stdout.lower()


def _chapter_imports():
    """(module, names) of every ``from playerfl_core... import`` line in the chapters."""
    found = set()
    for nb in sorted((ROOT / "chapters").glob("*.ipynb")):
        for cell in json.loads(nb.read_text())["cells"]:
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"])
            lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
            try:
                tree = ast.parse("\n".join(lines))
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "playerfl_core"
                ):
                    found.add((node.module, tuple(a.name for a in node.names)))
    return sorted(found)


@pytest.mark.parametrize(("module", "names"), _chapter_imports())
def test_every_name_a_chapter_imports_resolves(module, names):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        mod = importlib.import_module(module)
        for name in names:
            if not hasattr(mod, name):
                importlib.import_module(f"{module}.{name}")


def _chapter_attributes():
    """(module, attribute) for every ``X.attr`` where a chapter bound X by importing a module of
    ``playerfl_core`` (``from playerfl_core import claims as C``, then ``C.scorecard``)."""
    found = set()
    for nb in sorted((ROOT / "chapters").glob("*.ipynb")):
        trees = []
        for cell in json.loads(nb.read_text())["cells"]:
            if cell["cell_type"] == "code":
                lines = [
                    ln
                    for ln in "".join(cell["source"]).splitlines()
                    if not ln.lstrip().startswith(("%", "!"))
                ]
                try:
                    trees.append(ast.parse("\n".join(lines)))
                except SyntaxError:
                    continue
        bound = {}
        for tree in trees:
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "playerfl_core"
                ):
                    for a in node.names:
                        bound[a.asname or a.name] = (node.module, a.name)
        for tree in trees:
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                    if node.value.id in bound:
                        found.add((*bound[node.value.id], node.attr))
    return sorted(found)


@pytest.mark.parametrize(("module", "name", "attr"), _chapter_attributes())
def test_every_attribute_a_chapter_reads_resolves(module, name, attr):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        mod = importlib.import_module(module)
        obj = (
            getattr(mod, name)
            if hasattr(mod, name)
            else importlib.import_module(f"{module}.{name}")
        )
    if not isinstance(obj, type(sys)):
        return  # a function or class: its attributes are not the wings' business
    assert hasattr(obj, attr), f"{module}.{name}.{attr}"
