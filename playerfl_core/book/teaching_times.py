"""The teaching page's and the lab handout's run-time tables, written from the chapters' records.

Each executed chapter records its wall time (``metadata.playerfl.seconds``, written by
:mod:`playerfl_core.book.notebook_stamp`). :func:`update` rewrites the table between the
markers of ``chapters/teaching.md``, and the lab's table between the markers of
``chapters/lab_handout.md``, from those records, so neither page quotes a time the notebooks do
not hold; ``notebook_stamp execute`` calls it after executing, and a test fails when a page and
the records disagree.
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
        "FedAvg from scratch, checked against the library's engine; Dirichlet label skew; Local "
        "against FedAvg client by client; on scikit-learn's 8×8 handwritten digits",
        "yes",
    ),
    "01_playerfl_in_one_run": (
        "Local, FedAvg and PLayer-FL on Fashion-MNIST and Heart, one seed: read from the quick "
        "archive; the runs a changed parameter needs are trained (about a minute, the chapter "
        "says)",
        "yes",
    ),
    "02_layerwise_divergence": (
        "per-layer measures on Fashion-MNIST, Heart and digits, three seeds each",
        "yes, or run it before class and discuss the figures",
    ),
    "03_federation_sensitivity": (
        "sensitivity against gradient variance, Hessian trace and CKA; threshold sweep; on "
        "Fashion-MNIST, Heart and digits",
        "yes, or run it before class",
    ),
    "03a_the_algorithm_and_its_metric": (
        "the algorithm box, and what averaging a unit costs, measured and to first order, on "
        "Heart and digits (five seeds)",
        "yes",
    ),
    "04_does_the_rule_pick_the_right_split": (
        "reads the committed split sweeps (`stores/standard`) of Heart, digits and Fashion-MNIST "
        "and of their heterogeneity variants; trains nothing",
        "yes",
    ),
    "04b_beyond_the_paper": (
        "reads the committed sweeps and rules table; trains nothing",
        "yes",
    ),
    "05_playerfl_vs_baselines": (
        "reads the committed twelve-algorithm grid on Fashion-MNIST, Heart and digits",
        "yes",
    ),
    "06_reproduction_report": (
        "reads the committed grid and the published tables; recomputes its quick grid "
        "(Fashion-MNIST, Heart, digits) when the code changed",
        "yes, once its quick grid is stored",
    ),
    "07_from_notebook_to_silos": (
        "all twelve algorithms on Heart, in-process and on Flower's simulation engine, then "
        "PLayer-FL across a SuperLink and four SuperNode processes",
        "yes, or start the processes part before the explanation",
    ),
    "appendix_bring_your_own": (
        "a new federation from one file (`examples/cancer_by_texture.py`: breast-cancer "
        "biopsies split by texture): one run, its split sweep and rules, the baselines",
        "as homework",
    ),
    "appendix_every_protocol": (
        "one table of the split rule's answers under every evaluation protocol and size: "
        "reads the committed stores; trains nothing",
        "no: reading for 04",
    ),
    "appendix_preregistration": (
        "chapter 04b's full record: reads the committed sweeps and rules table; trains nothing",
        "no: reading for 04b",
    ),
}
"""Per chapter (notebook stem): what it computes (checked against its parameters cell) and
whether it runs in class."""

HANDOUT = ROOT / "chapters" / "lab_handout.md"
LAB_BEGIN, LAB_END = (
    "<!-- lab times: begin (written by playerfl_core.book.teaching_times) -->",
    "<!-- lab times: end -->",
)
LAB_CHAPTERS = (
    "00_federated_learning_in_one_hour",
    "01_playerfl_in_one_run",
    "04_does_the_rule_pick_the_right_split",
)
"""The chapters the lab handout has students re-execute."""
LAB_CAPTION = (
    "The lab's chapters: the wall time each recorded when it was last executed with its "
    "committed parameters, and on what."
)


def _record(notebook: Path) -> dict:
    return json.loads(notebook.read_text(encoding="utf-8")).get("metadata", {}).get("playerfl", {})


def minutes(notebook: Path) -> float | None:
    """The chapter's recorded wall time in minutes, or None if it was never stamped."""
    seconds = _record(notebook).get("seconds")
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


def lab_table(root: Path = ROOT) -> str:
    """The lab handout's table: per lab chapter, its recorded wall time and the date and CPU of
    that execution (``metadata.playerfl``)."""
    rows = [
        f"```{{table}} {LAB_CAPTION}",
        "| Chapter | Recorded run time | Executed on |",
        "|---|---|---|",
    ]
    for stem in LAB_CHAPTERS:
        record = _record(root / "chapters" / f"{stem}.ipynb")
        seconds = record.get("seconds")
        shown = "not recorded" if seconds is None else f"{float(seconds):.0f} s"
        machine = record.get("machine", {})
        where = ", ".join(
            str(part)
            for part in (
                str(record.get("executed", ""))[:10],
                machine.get("cpu"),
                machine.get("arch"),
            )
            if part
        )
        rows.append(f"| {{doc}}`{stem}` | {shown} | {where or 'not recorded'} |")
    return "\n".join([*rows, "```"])


def _between(text: str, begin: str, end: str, body: str, page: Path) -> str:
    if begin not in text or end not in text:
        raise ValueError(f"{page} lacks the run-time markers {begin!r} … {end!r}.")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body}\n{end}{tail}"


def rendered(text: str, root: Path = ROOT) -> str:
    """``text`` (the teaching page) with the table between the markers replaced by
    :func:`table`."""
    return _between(text, BEGIN, END, table(root), PAGE)


def lab_rendered(text: str, root: Path = ROOT) -> str:
    """``text`` (the lab handout) with the table between its markers replaced by
    :func:`lab_table`."""
    return _between(text, LAB_BEGIN, LAB_END, lab_table(root), HANDOUT)


def update(page: Path = PAGE, root: Path = ROOT, handout: Path | None = HANDOUT) -> bool:
    """Rewrite the teaching page's table (and the lab handout's, unless ``handout`` is None)
    from the records; True if either changed."""
    changed = False
    for path, render in ((page, rendered), (handout, lab_rendered)):
        if path is None:
            continue
        text = path.read_text(encoding="utf-8")
        new = render(text, root)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed = True
    return changed
