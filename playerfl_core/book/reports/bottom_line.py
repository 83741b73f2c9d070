"""The scorecard's bottom line: a few sentences a reader can repeat, glued as HTML into chapter
06's Result box and the intro. Glued HTML cannot hold MyST roles, so each term links to the
glossary and is defined at its first use. Reads the verdicts; decides nothing."""

from __future__ import annotations

import html
import re

import pandas as pd

from playerfl_core.book.reports.table_text import and_list
from playerfl_core.stats import claims as C
from playerfl_core.stats.split_verdicts import TOLERANCE

DOING = {"supported": "supports", "contradicted": "contradicts", "undecided": "cannot decide"}
"""What the evidence does to the claims of each verdict, in the first sentence."""


def glossary_link(text: str, term: str) -> str:
    """``text`` linked to ``term``'s glossary entry ("tolerance δ": ``term-tolerance``)."""
    anchor = re.sub(r"[^A-Za-z0-9]+", "-", term).strip("-")
    return f'<a href="glossary.html#term-{anchor}">{html.escape(text)}</a>'


def _span(ids) -> str:
    """C2–C5 when three or more ids of one letter run on without a gap, else listed."""
    ids = list(ids)
    numbers = [int(i[1:]) if i[1:].isdigit() else None for i in ids]
    run = (
        len(ids) > 2
        and len({i[0] for i in ids}) == 1
        and numbers == list(range(numbers[0] or 0, (numbers[-1] or 0) + 1))
    )
    return f"{ids[0]}–{ids[-1]}" if run else and_list(ids)


def opening(verdicts: pd.Series) -> str:
    """One sentence over every claim: how many, whose, and which the evidence supports or not."""
    ids = list(verdicts.index)
    paper = [c for c in ids if c.startswith("C")]
    own = [c for c in ids if not c.startswith("C")]
    whose = [f"the paper's {len(paper)} ({_span(paper)})"] if paper else []
    whose += [f"{len(own)} of its own ({and_list(own)})"] if own else []
    doing = [
        f"{DOING[v]} {_span(c for c in ids if verdicts[c] == v)}"
        for v in C.VERDICTS
        if (verdicts == v).any()
    ]
    if len(doing) > 1 and any(", " in g or " and " in g for g in doing):
        doing = ["; ".join(doing[:-1]) + ";", doing[-1]]  # "and" within a group: groups apart
    claims = glossary_link("claims", "claim")
    return f"The book tests {len(ids)} {claims}, {and_list(whose)}: its evidence {and_list(doing)}."


def bottom_line(card: pd.DataFrame) -> str:
    """:func:`opening`, then a short sentence per claim of the book's own (M1, R1, R2)."""
    verdicts = card.set_index("claim")["verdict"]
    delta = f"{glossary_link('δ', 'tolerance δ')} = {TOLERANCE:g}"
    oracle = f"the {glossary_link('validation oracle', 'oracle split')}'s split (the best on "
    oracle += "validation data)"
    regret = f"{glossary_link('regret', 'regret')} (test macro-F1 lost against it)"
    lines = [opening(verdicts)]
    sensitivity = glossary_link("federation sensitivity", "federation sensitivity")
    cost = "the measured cost of averaging them"
    m1 = {
        "supported": f"The paper's metric, {sensitivity}, ranks layers like {cost} (M1).",
        "contradicted": f"The paper's metric, {sensitivity}, does not rank layers like {cost} "
        "(M1).",
        "undecided": f"Whether the paper's metric, {sensitivity}, ranks layers like {cost} "
        "cannot be decided (M1).",
    }
    if "M1" in verdicts.index:
        lines.append(m1[verdicts["M1"]])
    rule = glossary_link("split rule", "split rule")
    r1 = {
        "supported": f"The paper's {rule} matches {oracle} on every federation swept: its "
        f"{regret} stays within {delta} (R1).",
        "contradicted": f"The paper's {rule} does not match {oracle} on every federation "
        f"swept: on some, its {regret} exceeds {delta} (R1).",
        "undecided": f"Whether the paper's {rule} matches {oracle}, its {regret} within "
        f"{delta}, cannot be decided (R1).",
    }
    if "R1" in verdicts.index:
        lines.append(r1[verdicts["R1"]])
        oracle, regret, delta = "the oracle's split", "regret", "δ"
    registered = glossary_link("pre-registered", "pre-registration")
    r2 = {
        "supported": f"In {registered} tests, a rule that reads only the first epoch kept its "
        f"{regret} within {delta} on every kind of heterogeneity (R2; its card in the "
        "scorecard names the rule).",
        "contradicted": f"In {registered} tests, every rule that reads only the first epoch "
        f"lost more than {delta} against {oracle} on some kind of heterogeneity (R2; its card "
        "in the scorecard says where).",
        "undecided": f"{registered.replace('>pre-', '>Pre-', 1)} tests could not decide "
        f"whether any rule that reads only the first epoch keeps its {regret} within {delta} "
        "everywhere (R2).",
    }
    if "R2" in verdicts.index:
        lines.append(r2[verdicts["R2"]])
    return " ".join(lines)
