"""README's "How to extend": each step of each recipe, done here as the README says.

A split rule (declare, register, run), a study (declare, register, run) and a chapter figure
(draw from the table, caption the cell, let the browser test check it).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import matplotlib
import nbformat
import pandas as pd
import pytest

from data_prep import load
from playerfl_core.fl.algorithms import get_algorithm, is_algorithm
from playerfl_core.fl.engine import run_federated
from playerfl_core.fl.profiles import make_config
from playerfl_core.fl.split_rules import RULES, SplitRule, describe_rules, register_rule
from playerfl_core.study import registry, runner

matplotlib.use("Agg")
REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def _recipe(title: str) -> str:
    section = README.split("## How to extend", 1)[1].split("\n## ", 1)[0]
    return section.split(f"### {title}", 1)[1].split("\n### ", 1)[0]


# -- a split rule -----------------------------------------------------------------------------
FIRST_UNIT = SplitRule(
    name="first_unit",
    summary="federate the first unit only, whatever the first epoch says",
    quantity="sensitivity",
    needs=(),
    default_threshold=0.0,
    measure=lambda state: dict.fromkeys(state.units, 0.0),
    split=lambda values, t: 1,
    range="1",
)


@pytest.fixture
def first_unit():
    register_rule(FIRST_UNIT)
    yield FIRST_UNIT
    RULES.pop(FIRST_UNIT.name, None)


def test_a_split_rule_is_declared_registered_and_run(first_unit):
    assert "register_rule" in _recipe("A new split rule")
    assert "first_unit" in [r["rule"] for r in describe_rules()]  # `playerfl rules` lists it
    assert is_algorithm("playerfl-first_unit")
    heart = load("heart", "quick", seed=0)
    config = make_config("heart", "quick", seed=0, rounds=2, device="cpu", progress=False)
    run = run_federated(heart, get_algorithm("playerfl-first_unit"), config)
    assert run.info["split_p"] == 1


def test_a_rule_under_a_taken_name_or_with_unknown_needs_is_refused(first_unit):
    register_rule(FIRST_UNIT)  # the same rule again: harmless
    with pytest.raises(ValueError, match="'paper' is taken"):
        register_rule(replace(FIRST_UNIT, name="paper"))
    with pytest.raises(ValueError, match="needs=\\('grads',\\)"):
        register_rule(replace(FIRST_UNIT, name="other", needs=("grads",)))
    with pytest.raises(ValueError, match="give a playerfl_core.fl.split_rules.SplitRule"):
        register_rule("first_unit")


# -- a study ----------------------------------------------------------------------------------
def _small_rung():
    """A new study declared from an existing one: the middle rung's sweep at 60 images per
    client and one round, on one seed (what the README's recipe declares, at test size)."""
    return replace(
        registry.tiny("middle_rung"),
        name="small_rung",
        what="The split sweep at 60 images per client and one round.",
        why="The README's recipe, at test size.",
        store="ladder/small_rung.parquet",
        work="small_rung",
    )


def test_a_study_is_declared_registered_and_run(tmp_path, monkeypatch):
    assert "registry.BUILDERS" in _recipe("A new study")
    study = _small_rung()
    monkeypatch.setattr(registry, "BUILDERS", (*registry.BUILDERS, lambda: study))
    assert registry.study("small_rung") == study  # `playerfl study list` and `show` know it
    plan = runner.plan(study, tmp_path / "work")
    assert len(plan) == 6 and not any(done for _, done in plan)  # `--dry-run`: 6 runs to do
    options = runner.RunOptions(workers=1, progress=False, out=tmp_path)
    assert runner.run(study, options, say=lambda line: None) == 0
    table = pd.read_parquet(tmp_path / "small_rung" / "small_rung.parquet")
    assert sorted(table["algorithm"].unique()) == [f"prefix_p{p}" for p in range(6)]
    assert (tmp_path / "small_rung" / "small_rung.parquet.json").exists()  # its record


# -- a chapter figure -------------------------------------------------------------------------
def test_a_figure_is_drawn_from_the_tidy_table():
    from playerfl_core.book.plots import plot_client_scores

    assert "mystnb" in _recipe("A new chapter figure")
    scores = pd.DataFrame(
        {
            "dataset": "heart",
            "algorithm": ["fedavg", "fedavg", "local", "local"],
            "client_name": ["a", "b", "a", "b"],
            "value": [0.5, 0.6, 0.7, 0.8],
        }
    )
    fig = plot_client_scores(scores).figure
    heights = sorted(round(p.get_height(), 3) for p in fig.axes[0].patches if p.get_height())
    assert heights == [0.5, 0.6, 0.7, 0.8]


def test_every_chapter_figure_has_a_caption():
    """Step 2: the cell that draws a figure carries its caption (``mystnb.figure.caption``)."""
    drawn = missing = 0
    for path in sorted((REPO / "chapters").glob("*.ipynb")):
        for cell in nbformat.read(path, 4).cells:
            outputs = cell.get("outputs", []) if cell.cell_type == "code" else []
            if any("image/png" in o.get("data", {}) for o in outputs):
                drawn += 1
                caption = cell.metadata.get("mystnb", {}).get("figure", {}).get("caption")
                missing += not caption
    assert drawn >= 20 and missing == 0, f"{missing} of {drawn} figures have no caption"
