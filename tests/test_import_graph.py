"""No arrows back up: every module of ``playerfl_core`` (and ``data_prep``) sits on a layer, and
no module imports a module on a higher layer, at top level or inside a function.

The layers, bottom to top, are :data:`LAYERS`; a module may import modules of its own layer or
lower ones. A new module must be given a layer here, so the map stays complete.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("data_prep", "playerfl_core")

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("data", ("data_prep",)),
    (
        "foundations",
        (
            "playerfl_core.models",
            "playerfl_core.units",
            "playerfl_core.schema",
            "playerfl_core.seeding",
            "playerfl_core.errors",
            "playerfl_core.losses",
            "playerfl_core.scoring",
            "playerfl_core.sensitivity",
            "playerfl_core.workers",
            "playerfl_core.machine",  # which machine computed a run (the facts behind last bits)
        ),
    ),
    ("engine", ("playerfl_core.engine", "playerfl_core.divergence", "playerfl_core.profiles")),
    ("algorithms", ("playerfl_core.algorithms", "playerfl_core")),
    (
        "studies",
        (
            "playerfl_core.style",  # display names and colours: claims' reasons use the names
            "playerfl_core.results",
            "playerfl_core.run_store",
            "playerfl_core.flower_link",  # the round loop over Flower (uses the code fingerprint)
            "playerfl_core.flower_checkpoints",
            "playerfl_core.flower_credentials",
            "playerfl_core.flower_deploy",
            "playerfl_core.silo_data",  # each silo's own data file, for a deployed SuperNode
            "playerfl_core.tuning",
            "playerfl_core.grid_plan",
            "playerfl_core.grid_runner",
            "playerfl_core.experiments",
            "playerfl_core.verification",  # bitwise here, statistical across machines
            "playerfl_core.archive",
            "playerfl_core.analytics",
            "playerfl_core.layer_measure",
            "playerfl_core.split_studies",
            "playerfl_core.seed_stats",
            "playerfl_core.layer_studies",
            "playerfl_core.averaging_check",
            "playerfl_core.split_oracle",
            "playerfl_core.metrics",
            "playerfl_core.claims",
        ),
    ),
    (
        "reports",
        (
            "playerfl_core.plots",
            "playerfl_core.analysis_plots",
            "playerfl_core.comparison_plots",
            "playerfl_core.split_plots",
            "playerfl_core.averaging_plots",
            "playerfl_core.data_plots",
            "playerfl_core.prose",
            "playerfl_core.published",
            "playerfl_core.reports",
        ),
    ),
    (
        "entry points",
        (
            "playerfl_core.cli",
            "playerfl_core.chapter_checks",
            "playerfl_core.checks",
            "playerfl_core.flower_federation",  # the processes recipe (python -m, make silos)
            "playerfl_core.notebook_stamp",  # make book: re-execute a chapter whose inputs changed
        ),
    ),
]
"""Bottom to top. A name covers the module and, for a package, every module inside it (the
package's own ``__init__`` only when the name is listed by itself, as ``playerfl_core``)."""


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


def layer_of(module: str) -> int | None:
    """Index in :data:`LAYERS` of the most specific name covering ``module``."""
    best, best_len = None, -1
    for i, (_, names) in enumerate(LAYERS):
        for name in names:
            covers = module == name or (
                module.startswith(name + ".") and name not in ("playerfl_core",)
            )
            if covers and len(name) > best_len:
                best, best_len = i, len(name)
    return best


def imports_of(module: str, path: Path, known: set[str]) -> list[tuple[int, str]]:
    """(line, imported module) for every import of our packages anywhere in the file."""
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
            targets = [
                f"{source}.{a.name}" if f"{source}.{a.name}" in known else source
                for a in node.names
            ]
        else:
            continue
        out.extend((node.lineno, t) for t in targets if t.split(".")[0] in PACKAGES and t in known)
    return out


def violations(modules: dict[str, Path]) -> tuple[list[str], list[str]]:
    """(modules with no layer, upward imports as readable lines)."""
    known = set(modules)
    missing = sorted(m for m in modules if layer_of(m) is None)
    upward = []
    for module, path in modules.items():
        here = layer_of(module)
        if here is None:
            continue
        for line, target in imports_of(module, path, known):
            there = layer_of(target)
            if there is not None and there > here:
                where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
                upward.append(
                    f"{where}:{line}: {module} (layer {LAYERS[here][0]!r}) "
                    f"imports {target} (layer {LAYERS[there][0]!r}, higher)"
                )
    return missing, upward


def test_every_module_has_a_layer():
    missing, _ = violations(all_modules())
    assert not missing, (
        f"Modules without a layer: {missing}. Add each to LAYERS in tests/test_import_graph.py."
    )


def test_no_module_imports_a_higher_layer():
    _, upward = violations(all_modules())
    assert not upward, "Imports pointing up a layer:\n" + "\n".join(upward)


def test_layers_name_only_existing_modules():
    """A stale name in the map (a module renamed or removed) would silently cover nothing."""
    modules = set(all_modules())
    stale = [
        name
        for _, names in LAYERS
        for name in names
        if name not in modules and not any(m.startswith(name + ".") for m in modules)
    ]
    assert not stale, f"LAYERS names modules that do not exist: {stale}"


@pytest.mark.parametrize(
    ("source", "expect"),
    [
        ("from playerfl_core.algorithms import get_algorithm\n", True),
        ("def f():\n    from playerfl_core import experiments\n", True),
        ("import playerfl_core.cli\n", True),
        ("from playerfl_core.schema import SERVER\n", False),
        ("from .units import unit_names\n", False),
    ],
)
def test_the_checker_sees_imports_at_any_depth(tmp_path, source, expect):
    """The engine importing upward, at top level or inside a function, is reported."""
    modules = all_modules()
    fake = tmp_path / "engine.py"
    fake.write_text(source)
    original = modules["playerfl_core.engine"]
    modules["playerfl_core.engine"] = fake
    known = set(modules)
    found = imports_of("playerfl_core.engine", fake, known)
    assert found, f"no import of our packages seen in {source!r}"
    _, upward = violations(modules)
    assert any(": playerfl_core.engine (layer" in u for u in upward) == expect, upward
    modules["playerfl_core.engine"] = original
