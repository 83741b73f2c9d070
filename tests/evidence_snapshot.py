"""What chapters 04, 04b and the pre-registration appendix show from the reports that set two
evaluation protocols side by side, computed on the committed stores by the chapters' own code
cells: every table (its values, caption and HTML), every glued sentence and number.

Written once by the code before a rewrite (``python tests/evidence_snapshot.py`` writes
``tests/fixtures/evidence_snapshot.json``); ``test_evidence_snapshot.py`` recomputes it with the
current code and compares, so a rewrite that changes one number, verdict or word fails.
Reads stores only; trains nothing."""

from __future__ import annotations

import contextlib
import json
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT = ROOT / "tests" / "fixtures" / "evidence_snapshot.json"
DIGITS = 12

REPORT_ALIASES = r"\b(FS|SL|EN|ER|RR|RR2|RS)\.(?!TEST_PER_CLIENT)"
"""Module aliases through which the chapters call the before/after reports (``RS`` is the
rescore's study module in chapter 04, rule_scope in 04b: 04b's report cells are picked by
``RR2`` lines only)."""

CHAPTERS = {
    "04_does_the_rule_pick_the_right_split": {
        "setup": (
            "book.reports import split_choice",
            "stored = O.load_sweeps",
            "table = O.sweeps",
            "het = O.sweeps",
        ),  # fmt: skip
        "report": REPORT_ALIASES,
        "extra": 'glue("scorecard_r1_note", FS.r1_note(fair))',
    },
    "04b_beyond_the_paper": {
        "setup": ("rescore = RR2.analyse",),
        "report": r"\bRR2\.",
        "lines_of": 'glue("r2_rescore_summary"',
    },
    "appendix_preregistration": {"setup": ("rescore = RR2.analyse",), "report": r"\bRR2\."},
}
"""Per chapter: markers of the cells that build what the reports read (run in order after the
parameters cell), which report cells to run, a mixed cell of which only the report lines run
(04b glues other reports' numbers in the same cell), and calls no chapter cell makes but the
scorecard does."""


def rounded(value):
    """A float to :data:`DIGITS` significant digits (NaN and infinities as strings, for JSON)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return float(f"{value:.{DIGITS}g}")
    return value


def frame_record(frame) -> dict:
    """A data frame as JSON: index, columns and rows, floats rounded."""
    import numpy as np

    def plain(v):
        if isinstance(v, np.generic):
            v = v.item()
        return rounded(v)

    reset = frame.reset_index()
    return {
        "index": [str(n) for n in frame.index.names],
        "columns": [str(c) for c in reset.columns],
        "rows": [[plain(v) for v in row] for row in reset.itertuples(index=False)],
    }


def shown(value):
    """What a chapter displays or glues, as JSON."""
    import pandas as pd

    from playerfl_core.book.reports.tables import Shown

    if isinstance(value, Shown):
        return {"caption": value.caption, "frame": frame_record(value.frame),
                "html": value._repr_html_()}  # fmt: skip
    if isinstance(value, pd.DataFrame):
        return {"frame": frame_record(value)}
    if hasattr(value, "data") and type(value).__module__.startswith("IPython"):
        return {type(value).__name__: value.data}
    return rounded(value.item() if hasattr(value, "item") else value)


def code_cells(name: str) -> list:
    import nbformat

    nb = nbformat.read(ROOT / "chapters" / f"{name}.ipynb", as_version=4)
    return [c for c in nb.cells if c.cell_type == "code"]


@contextlib.contextmanager
def captured(out: dict, chapter: str):
    """``display`` and ``glue`` write to ``out`` while a chapter's cells run."""
    import IPython.display
    import myst_nb

    count = {"n": 0}

    def display(*objects, **_):
        for obj in objects:
            count["n"] += 1
            out[f"{chapter}: display {count['n']}"] = shown(obj)

    def glue(key, value, display=True):
        out[f"{chapter}: glue {key}"] = shown(value)

    saved = IPython.display.display, myst_nb.glue
    IPython.display.display, myst_nb.glue = display, glue
    try:
        yield
    finally:
        IPython.display.display, myst_nb.glue = saved


def _statements(sources) -> tuple[list, list]:
    """The import statements and the other statements of some cells, as ``ast`` nodes."""
    import ast

    nodes = [n for s in sources for n in ast.parse(s).body]
    imports = [n for n in nodes if isinstance(n, ast.Import | ast.ImportFrom)]
    return imports, [n for n in nodes if n not in imports]


def _run(nodes, namespace: dict) -> None:
    import ast

    exec(compile(ast.Module(body=nodes, type_ignores=[]), "<cell>", "exec"), namespace)


def set_up(cells, plan: dict, done: dict) -> dict:
    """A chapter's namespace after its parameters and setup cells. Chapters whose setup computes
    the same statements from the same parameter values share one computation (04b and the
    appendix analyse the same study): the longest part of the snapshot, run once."""
    import ast

    namespace: dict = {"__name__": "__chapter__"}
    exec(next(c.source for c in cells if "parameters" in c.metadata.get("tags", [])), namespace)
    sources = [next(c.source for c in cells if marker in c.source) for marker in plan["setup"]]
    imports, work = _statements(sources)
    read = {n.id for node in work for n in ast.walk(node) if isinstance(n, ast.Name)}
    key = (frozenset(ast.dump(n) for n in work),
           tuple(sorted((k, repr(v)) for k, v in namespace.items() if k in read)))  # fmt: skip
    if key in done:
        namespace = {**done[key], **namespace}
        _run(imports, namespace)
        return namespace
    _run(imports, namespace)
    _run(work, namespace)
    done[key] = dict(namespace)
    return namespace


def chapter_outputs(name: str, plan: dict, done: dict) -> dict:
    """Run a chapter's parameters cell, its setup cells and its report cells; what they show."""
    import matplotlib

    matplotlib.use("Agg")
    cells = code_cells(name)
    out: dict = {}
    with captured(out, name):
        namespace = set_up(cells, plan, done)
        pattern = re.compile(plan["report"])
        for cell in cells:
            source = cell.source
            if any(m in source for m in plan["setup"]) or not pattern.search(source):
                continue
            if plan.get("lines_of", "\0") in source:
                source = "\n".join(line for line in source.splitlines() if pattern.search(line))
            exec(source, namespace)
        if plan.get("extra"):
            exec(plan["extra"], namespace)
    return out


def snapshot() -> dict:
    """Every chapter's outputs, keyed by chapter and display number or glue key."""
    out: dict = {}
    done: dict = {}
    for name, plan in CHAPTERS.items():
        out.update(chapter_outputs(name, plan, done))
    return out


def normalised(outputs: dict) -> dict:
    """As the JSON file holds it (tuples as lists), for comparing with what it holds."""
    return json.loads(json.dumps(outputs, ensure_ascii=False))


def main() -> int:
    sys.path.insert(0, str(ROOT))
    outputs = snapshot()
    SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
    SNAPSHOT.write_text(json.dumps(outputs, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{len(outputs)} outputs written to {SNAPSHOT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
