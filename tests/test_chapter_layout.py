"""Every chapter ends the same way, so a course can rely on it: its recall questions first (a few
minutes, without the notebook), then its exercises (longer, with it)."""

import json
from pathlib import Path

import pytest

CHAPTERS = sorted((Path(__file__).parents[1] / "chapters").glob("0*.ipynb"))
RECALL = ("## Check your understanding", "## Recall")


def _headings(path: Path) -> list[str]:
    cells = json.loads(path.read_text())["cells"]
    lines = "".join("".join(c["source"]) + "\n" for c in cells if c["cell_type"] == "markdown")
    return [line.strip() for line in lines.splitlines() if line.startswith("## ")]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_recall_questions_come_before_the_exercises(path):
    heads = _headings(path)
    recall = [i for i, h in enumerate(heads) if h in RECALL]
    exercises = [i for i, h in enumerate(heads) if h == "## Exercises"]
    assert len(recall) == 1 and len(exercises) == 1, heads
    assert recall[0] < exercises[0], f"{path.name}: exercises before the recall questions"
