"""The scorecard: the claims' verdicts as one table, in Markdown or HTML for the chapters.

Cut out of :mod:`playerfl_core.stats.claims`, which re-exports its names. Rendering
only: nothing here decides a verdict.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import pandas as pd

from playerfl_core.stats.decisions import Claim


def describe_profile(profile: str, *tables: pd.DataFrame) -> str:
    """ "quick: 3 federations, 2–3 seeds" from the tables' dataset and seed columns."""
    seeds = [n for t in tables for n in t.groupby("dataset")["seed"].nunique().tolist()]
    datasets = sorted({d for t in tables for d in t["dataset"].unique()})
    lo, hi = (min(seeds), max(seeds)) if seeds else (0, 0)
    span = f"{lo}" if lo == hi else f"{lo}–{hi}"
    plural = "s" if len(datasets) != 1 else ""
    return f"{profile}: {len(datasets)} federation{plural}, {span} seeds"


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


BADGE_COLORS = {"supported": "#1a7f37", "contradicted": "#b42318", "undecided": "#6e7781"}
"""Verdict badge colours (green, red, grey), with white text: readable for colour-blind readers
too, since the badge also carries the word."""


def scorecard_html(card: pd.DataFrame, titles: dict[str, str] | None = None) -> str:
    """The scorecard as an HTML block for glue across pages (where only HTML and plain text are
    pasted): one card per claim, stacked, so it reads on a phone as well as at 1280 px: the
    claim's id and statement, a coloured verdict badge with its strength (always, "none" too:
    chapter 05's tables print it, and a badge without one read as a missing value), the reason
    and a link to the chapter by its title (``titles``: chapter → title; the file name
    otherwise)."""
    titles = titles or {}
    items = []
    for r in card.itertuples(index=False):
        doc = str(r.chapter).removeprefix("{doc}`").removesuffix("`")
        color = BADGE_COLORS.get(r.verdict, BADGE_COLORS["undecided"])
        badge = (
            f'<span style="background:{color};color:#fff;border-radius:0.8em;padding:0.1em '
            f'0.6em;font-weight:600;white-space:nowrap">{html.escape(r.verdict)}'
            f" · {html.escape(r.strength)}</span>"
        )
        link = f'<a href="{html.escape(doc)}.html">{html.escape(titles.get(doc, doc))}</a>'
        items.append(
            '<div style="border-left:4px solid ' + color + ';padding:0.4em 0.8em;margin:0.6em 0">'
            f"<div><b>{html.escape(r.claim)}</b> {badge}</div>"
            f"<div>{html.escape(r.statement)}</div>"
            f'<div style="font-size:0.9em;color:#444">Why: {html.escape(str(r.evidence))}. '
            f"Evidence: {html.escape(str(r.profile))}; chapter: {link}.</div></div>"
        )
    return '<div class="scorecard">' + "".join(items) + "</div>"
