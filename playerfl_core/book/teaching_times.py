"""The teaching page's run-time table, written from the chapters' own records.

Each executed chapter records its wall time (``metadata.playerfl.seconds``, written by
:mod:`playerfl_core.book.notebook_stamp`). :func:`update` rewrites the table between the
markers of ``chapters/teaching.md`` from those records, so the page never quotes a time the
notebooks do not hold; ``notebook_stamp execute`` calls it after executing, and a test fails
when the page and the records disagree.
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "chapters" / "teaching.md"
BEGIN, END = (
    "<!-- run times: begin (written by playerfl_core.book.teaching_times) -->",
    ("<!-- run times: end -->"),
)

CHAPTERS = {
    "00_federated_learning_in_one_hour": (
        "FedAvg from scratch and label skew under Dirichlet α, on Fashion-MNIST",
        "yes",
    ),
    "01_playerfl_in_one_run": (
        "Local, FedAvg and PLayer-FL on Fashion-MNIST and Heart, one seed: read from the quick "
        "archive, trained (about a minute) when a parameter changes",
        "yes",
    ),
    "02_layerwise_divergence": (
        "per-layer measures over three federations and three seeds",
        "yes, or run it before class and discuss the figures",
    ),
    "03_federation_sensitivity": (
        "sensitivity against gradient variance, Hessian trace and CKA; threshold sweep",
        "yes, or run it before class",
    ),
    "03a_the_algorithm_and_its_metric": (
        "the algorithm box, and what averaging a unit costs, measured and to first order",
        "yes",
    ),
    "04_does_the_rule_pick_the_right_split": (
        "reads the committed split sweeps (`stores/standard`); trains nothing",
        "yes",
    ),
    "04b_beyond_the_paper": (
        "reads the committed sweeps and rules table; trains nothing",
        "yes",
    ),
    "05_playerfl_vs_baselines": ("reads the committed twelve-algorithm grid", "yes"),
    "06_reproduction_report": (
        "reads the committed grid and the published tables; recomputes its quick grid when the "
        "code changed",
        "yes, once its quick grid is stored",
    ),
    "07_from_notebook_to_silos": (
        "all twelve algorithms in-process and on Flower's simulation engine, then PLayer-FL "
        "across a SuperLink and four SuperNode processes",
        "yes, or start the processes part before the explanation",
    ),
    "appendix_bring_your_own": (
        "a new federation from one file: one run, its split sweep and rules, the baselines",
        "as homework",
    ),
}
"""Per chapter (notebook stem): what it computes and whether it runs in class."""


def minutes(notebook: Path) -> float | None:
    """The chapter's recorded wall time in minutes, or None if it was never stamped."""
    meta = json.loads(notebook.read_text(encoding="utf-8")).get("metadata", {})
    seconds = meta.get("playerfl", {}).get("seconds")
    return None if seconds is None else float(seconds) / 60


CAPTION = "The chapters' recorded run times, and whether each fits in class."


def table(root: Path = ROOT) -> str:
    """The Markdown table, one row per chapter, in book order, captioned (a MyST table
    directive: the browser test wants every table captioned)."""
    rows = [
        f"```{{table}} {CAPTION}",
        "| Chapter | What the notebook computes | Run time (recorded) | In class? |",
        "|---|---|---|---|",
    ]
    for stem, (what, in_class) in CHAPTERS.items():
        m = minutes(root / "chapters" / f"{stem}.ipynb")
        shown = "not recorded" if m is None else f"{m:.1f} min"
        rows.append(f"| {{doc}}`{stem}` | {what} | {shown} | {in_class} |")
    return "\n".join([*rows, "```"])


def rendered(text: str, root: Path = ROOT) -> str:
    """``text`` with the table between the markers replaced by :func:`table`."""
    if BEGIN not in text or END not in text:
        raise ValueError(f"{PAGE} lacks the run-time markers {BEGIN!r} … {END!r}.")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{table(root)}\n{END}{tail}"


def update(page: Path = PAGE, root: Path = ROOT) -> bool:
    """Rewrite the page's table from the records; True if it changed."""
    text = page.read_text(encoding="utf-8")
    new = rendered(text, root)
    if new != text:
        page.write_text(new, encoding="utf-8")
    return new != text
