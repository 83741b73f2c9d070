"""No arrows back up: every module of ``playerfl_core`` (and ``data_prep``) sits in a wing, no
module imports a module of a higher wing, at top level or inside a function, and inside a wing
the imports form no circle.

The wings, bottom to top, are :data:`WINGS`; a module may import modules of its own wing or lower
ones. A new module must be given a wing here, so the map stays complete. The former flat module
paths (``playerfl_core.engine``, ...) must all still import, through ``playerfl_core.MOVED``.
"""

from __future__ import annotations

import ast
import fnmatch
import importlib
import re
import sys
from pathlib import Path

import pytest

import playerfl_core

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("data_prep", "playerfl_core")

WINGS: list[tuple[str, tuple[str, ...]]] = [
    ("data", ("data_prep",)),
    ("fl", ("playerfl_core.fl",)),  # the engine and algorithms (with the sensitivity they use)
    ("stats", ("playerfl_core.stats",)),  # tables in, numbers and verdicts out
    ("measure", ("playerfl_core.measure",)),  # layer measurements (their seeds' stats: stats)
    ("study", ("playerfl_core.study",)),  # store, grids, tuning, archives, split sweeps
    ("flower", ("playerfl_core.flower",)),  # the same runs over Flower (fingerprint: study)
    ("book", ("playerfl_core.book",)),  # reports, figures, style, prose, chapter stamps
    (
        "entry points",
        (
            "playerfl_core",  # the stable face (and the former paths' aliases)
            "playerfl_core.cli",
            "playerfl_core.checks",  # user input, checked before training (CLI and chapters)
            "playerfl_core.chapter_checks",  # the chapters' parameters
        ),
    ),
]
"""Bottom to top. A name covers the module and, for a package, every module inside it (the
top package's own ``__init__`` only, when the name is ``playerfl_core``)."""

FORMER_MODULES = (
    "algorithms analysis_plots analytics archive averaging_check averaging_plots claims "
    "comparison_plots data_plots divergence engine errors experiments flower_checkpoints "
    "flower_credentials flower_deploy flower_federation flower_link grid_plan grid_runner "
    "layer_measure layer_studies losses machine metrics models notebook_stamp plots profiles "
    "prose published reports results run_store schema scoring seed_stats seeding sensitivity "
    "silo_data split_oracle split_plots split_studies style tuning units verification workers"
).split()
"""Every module ``playerfl_core`` had at its top level before the wings (issue 23)."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {
        module_name(p): p
        for pkg in PACKAGES
        for p in sorted((ROOT / pkg).rglob("*.py"))
        if "__pycache__" not in p.parts
    }


def wing_of(module: str) -> int | None:
    """Index in :data:`WINGS` of the most specific name covering ``module``."""
    best, best_len = None, -1
    for i, (_, names) in enumerate(WINGS):
        for name in names:
            covers = module == name or (module.startswith(name + ".") and name != "playerfl_core")
            if covers and len(name) > best_len:
                best, best_len = i, len(name)
    return best


def current(name: str) -> str:
    """A former flat path under its new name (``playerfl_core.engine`` → ``...fl.engine``)."""
    top, _, rest = name.partition(".")
    old, _, below = rest.partition(".")
    if top != "playerfl_core" or old not in playerfl_core.MOVED:
        return name
    return f"playerfl_core.{playerfl_core.MOVED[old]}" + (f".{below}" if below else "")


def imports_of(
    module: str, path: Path, known: set[str], former: list | None = None
) -> list[tuple[int, str]]:
    """(line, imported module) for every import of our packages anywhere in the file; a former
    path counts as its new module (and is listed in ``former`` when given)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            # ``from pkg import mod`` imports the module pkg.mod; ``from mod import name`` mod.
            targets = []
            for a in node.names:
                sub = current(f"{source}.{a.name}")
                targets.append(sub if sub in known else f"{source}.{a.name}")
                if targets[-1] not in known:
                    targets[-1] = source
        else:
            continue
        for t in targets:
            new = current(t)
            if new != t and former is not None:
                former.append(f"{path.name}:{node.lineno}: {t} (now {new})")
            if new.split(".")[0] in PACKAGES and new in known:
                out.append((node.lineno, new))
    return out


def violations(modules: dict[str, Path]) -> tuple[list[str], list[str]]:
    """(modules with no wing, upward imports as readable lines)."""
    known = set(modules)
    missing = sorted(m for m in modules if wing_of(m) is None)
    upward = []
    for module, path in modules.items():
        here = wing_of(module)
        if here is None:
            continue
        for line, target in imports_of(module, path, known):
            there = wing_of(target)
            if there is not None and there > here:
                where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
                upward.append(
                    f"{where}:{line}: {module} (wing {WINGS[here][0]!r}) "
                    f"imports {target} (wing {WINGS[there][0]!r}, higher)"
                )
    return missing, upward


def cycles(modules: dict[str, Path]) -> list[list[str]]:
    """Circles of imports among modules of one wing, each as [a, b, ..., a]."""
    known = set(modules)
    edges = {
        m: sorted({t for _, t in imports_of(m, p, known) if t != m and wing_of(t) == wing_of(m)})
        for m, p in modules.items()
    }
    found, done = [], set()

    def visit(m: str, stack: list[str]) -> None:
        if m in stack:
            found.append(stack[stack.index(m) :] + [m])
            return
        if m in done:
            return
        for t in edges.get(m, []):
            visit(t, stack + [m])
        done.add(m)

    for m in sorted(edges):
        visit(m, [])
    return found


def test_every_module_has_a_wing():
    missing, _ = violations(all_modules())
    assert not missing, (
        f"Modules without a wing: {missing}. Add each to WINGS in tests/test_import_graph.py."
    )


def test_no_module_imports_a_higher_wing():
    _, upward = violations(all_modules())
    assert not upward, "Imports pointing up a wing:\n" + "\n".join(upward)


def test_no_circle_inside_a_wing():
    found = cycles(all_modules())
    assert not found, "Import circles:\n" + "\n".join(" → ".join(c) for c in found)


def test_wings_name_only_existing_modules():
    """A stale name in the map (a module renamed or removed) would silently cover nothing."""
    modules = set(all_modules())
    stale = [
        name
        for _, names in WINGS
        for name in names
        if name not in modules and not any(m.startswith(name + ".") for m in modules)
    ]
    assert not stale, f"WINGS names modules that do not exist: {stale}"


def test_the_library_uses_no_former_path():
    """Former paths are for readers' code, one release; ours would dodge the wings' order."""
    modules = all_modules()
    former: list[str] = []
    for m, p in modules.items():
        imports_of(m, p, set(modules), former)
    assert not former, "Imports of former paths:\n" + "\n".join(former)


def test_every_former_module_still_imports_as_the_same_object():
    modules = set(all_modules())
    assert sorted(playerfl_core.MOVED) == sorted(FORMER_MODULES)
    for old in FORMER_MODULES:
        new = f"playerfl_core.{playerfl_core.MOVED[old]}"
        assert new in modules, f"MOVED[{old!r}] = {new}, which does not exist"
        # Another test in this process may have imported the former path already: forget
        # that alias (the module itself stays), so the import goes through the alias again.
        sys.modules.pop(f"playerfl_core.{old}", None)
        with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
            aliased = importlib.import_module(f"playerfl_core.{old}")
        assert aliased is importlib.import_module(new), old


@pytest.mark.parametrize(
    ("source", "expect"),
    [
        ("from playerfl_core.stats.metrics import holm\n", True),
        ("def f():\n    from playerfl_core.study import experiments\n", True),
        ("import playerfl_core.cli\n", True),
        ("from playerfl_core.book import style\n", True),
        ("from playerfl_core.metrics import holm\n", True),  # a former path counts as its new one
        ("from playerfl_core.fl.schema import SERVER\n", False),
        ("from .units import unit_names\n", False),
    ],
)
def test_the_checker_sees_imports_at_any_depth(tmp_path, source, expect):
    """The engine importing upward, at top level or inside a function, is reported."""
    modules = all_modules()
    fake = tmp_path / "engine.py"
    fake.write_text(source)
    modules["playerfl_core.fl.engine"] = fake
    found = imports_of("playerfl_core.fl.engine", fake, set(modules))
    assert found, f"no import of our packages seen in {source!r}"
    _, upward = violations(modules)
    assert any(": playerfl_core.fl.engine (wing" in u for u in upward) == expect, upward


@pytest.mark.parametrize(
    "source",
    [
        "from playerfl_core.fl.engine import run_federated\n",
        "def f():\n    from playerfl_core.fl import engine\n",
    ],
)
def test_the_checker_sees_circles(tmp_path, source):
    """A module of ``fl`` importing the engine, which imports it back, is a circle."""
    modules = all_modules()
    fake = tmp_path / "losses.py"
    fake.write_text(source)
    modules["playerfl_core.fl.losses"] = fake
    found = cycles(modules)
    assert any("playerfl_core.fl.losses" in c and "playerfl_core.fl.engine" in c for c in found)


def test_long_modules_say_why():
    """Small rooms: a module over about 400 lines states in its docstring why it is one module."""
    long = []
    for m, p in all_modules().items():
        text = p.read_text()
        if text.count("\n") > 420:
            doc = ast.get_docstring(ast.parse(text)) or ""
            if not re.search(r"\b\d+\s+lines\b", doc):  # "About 560 lines …" ("baselines" is not)
                long.append(f"{m} ({text.count(chr(10))} lines)")
    assert not long, f"Long modules whose docstring does not say why: {long}"


LISTED_WINGS = ("data_prep", "fl", "stats", "measure", "study", "flower")
"""Wings whose ``__init__`` lists its modules, one ``- ``name``: what it is`` line each (book/ and
cli/ not yet)."""


def listed_modules(package: Path) -> list[str]:
    """The names a package's docstring lists, one per line (a subpackage as ``name/``)."""
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    return re.findall(r"^- ``([\w/]+)``: \S", doc, flags=re.M)


def present_modules(package: Path) -> list[str]:
    modules = [p.stem for p in package.glob("*.py") if p.name != "__init__.py"]
    packages = [f"{p.name}/" for p in package.iterdir() if (p / "__init__.py").is_file()]
    return sorted(modules + packages)


@pytest.mark.parametrize("wing", LISTED_WINGS)
def test_every_wing_lists_its_modules(wing):
    """A reader opening a wing sees every module in it, once, with what it is for."""
    package = ROOT / wing if wing == "data_prep" else ROOT / "playerfl_core" / wing
    listed = listed_modules(package)
    twice = sorted({m for m in listed if listed.count(m) > 1})
    missing = sorted(set(present_modules(package)) - set(listed))
    stale = sorted(set(listed) - set(present_modules(package)))
    assert not (twice or missing or stale), (
        f"{package.relative_to(ROOT)}/__init__.py docstring: add a '- ``name``: what it is' "
        f"line for {missing}, remove {stale} (no such module), list once {twice}"
    )


def readme_module_map() -> dict[str, set[str]]:
    """Per wing folder (``fl``, ``study``, ... and ``""`` for the top level): the module names
    README's module map gives it (rows of one wing joined; ``*_plots`` stays a pattern)."""
    text = (ROOT / "README.md").read_text()
    start = text.index("### Module map")
    table = [line for line in text[start:].splitlines()[1:] if line.startswith("|")]
    found: dict[str, set[str]] = {}
    for row in table[2:]:  # below the header and its rule
        wing_cell, names_cell = [c.strip() for c in row.strip("|").split("|")][:2]
        wing = re.match(r"`?([\w ]+)", wing_cell).group(1).strip()
        wing = "" if wing == "top level" else wing
        found.setdefault(wing, set()).update(re.findall(r"`([\w/*]+)`", names_cell))
    return found


def _modules_in(package: Path) -> set[str]:
    """Module names of a package's folder, a subpackage as ``name/``."""
    modules = {p.stem for p in package.glob("*.py") if p.stem not in ("__init__", "__main__")}
    return modules | {f"{p.name}/" for p in package.iterdir() if (p / "__init__.py").is_file()}


def test_the_readme_module_map_is_current():
    """Every module of every wing (and the top level, ``cli/``'s included) is named in README's
    module map, and the map names no module that is gone."""
    mapped = readme_module_map()
    wings = {p.name for p in (ROOT / "playerfl_core").iterdir() if (p / "__init__.py").is_file()}
    problems = [f"no row for the wing {w}/" for w in sorted(wings - {"cli"} - set(mapped))]
    for wing, names in mapped.items():
        if wing == "data_prep":
            continue  # one row for all the federations, a file each
        present = _modules_in(ROOT / "playerfl_core" / wing)
        if wing == "":  # the top level: its own modules and the command's package
            present = {m for m in present if not m.endswith("/")} | {"cli/"}
            present |= _modules_in(ROOT / "playerfl_core" / "cli")
        missing = sorted(m for m in present if not any(fnmatch.fnmatch(m, n) for n in names))
        stale = sorted(n for n in names if not any(fnmatch.fnmatch(m, n) for m in present))
        if missing or stale:
            problems.append(f"{wing or 'top level'}: add {missing}, remove {stale}")
    assert not problems, "README's module map:\n" + "\n".join(problems)
