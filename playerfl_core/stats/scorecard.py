"""The scorecard: the claims' verdicts as one table, in Markdown or HTML for the chapters.

Cut out of :mod:`playerfl_core.stats.claims` (issue 23), which re-exports its names. Rendering
only: nothing here decides a verdict.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from playerfl_core.stats.decisions import Claim


def describe_profile(profile: str, *tables: pd.DataFrame) -> str:
    """ "quick: 3 datasets, 2–3 seeds" from the tables' dataset and seed columns."""
    seeds = [n for t in tables for n in t.groupby("dataset")["seed"].nunique().tolist()]
    datasets = sorted({d for t in tables for d in t["dataset"].unique()})
    lo, hi = (min(seeds), max(seeds)) if seeds else (0, 0)
    span = f"{lo}" if lo == hi else f"{lo}–{hi}"
    plural = "s" if len(datasets) != 1 else ""
    return f"{profile}: {len(datasets)} dataset{plural}, {span} seeds"


def scorecard(claims: Sequence[Claim], links: bool = True) -> pd.DataFrame:
    """The scorecard: claim, statement, verdict, strength, reason, profile, chapter (a MyST
    ``{doc}`` link when ``links``), one row per claim in the order given."""
    rows = []
    for c in claims:
        rows.append(
            {
                "claim": c.id,
                "statement": c.statement,
                "verdict": c.verdict.verdict,
                "strength": c.verdict.strength,
                "evidence": c.verdict.reason,
                "profile": c.profile,
                "chapter": f"{{doc}}`{c.chapter}`" if links else c.chapter,
            }
        )
    return pd.DataFrame(rows)


def markdown_table(frame: pd.DataFrame) -> str:
    """A pipe table of ``frame`` (cells as text, pipes escaped), for glue as Markdown."""
    cols = list(frame.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |")
    return "\n".join(lines)


def scorecard_html(card: pd.DataFrame) -> str:
    """The scorecard as an HTML table whose chapter cells link to ``<chapter>.html`` (for glue
    across pages, where only HTML and plain text are pasted)."""
    import html

    cols = ["claim", "statement", "verdict", "strength", "evidence", "profile", "chapter"]
    head = "".join(f"<th>{c}</th>" for c in cols)
    body = []
    for r in card.itertuples(index=False):
        cells = []
        for c in cols:
            v = str(getattr(r, c))
            if c == "chapter":
                doc = v.removeprefix("{doc}`").removesuffix("`")
                cells.append(f'<td><a href="{html.escape(doc)}.html">{html.escape(doc)}</a></td>')
            elif c == "verdict":
                cells.append(f"<td><b>{html.escape(v)}</b></td>")
            else:
                cells.append(f"<td>{html.escape(v)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
