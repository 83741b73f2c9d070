"""Chapter 05's Result box in words: per claim (C3–C5) one plain sentence first (what the
verdict means for a reader, no test names), then the numbers with the tests named and linked to
the glossary. Reads the claims' verdicts; decides nothing (``rank_outcome`` re-reads which case of
the best-rank rule decided, and ``comparison.claims_card`` checks it agrees with the claims)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from playerfl_core.book.reports.tables import p_text
from playerfl_core.book.style import algorithm_label
from playerfl_core.stats import metrics as M
from playerfl_core.stats.evidence import best_rank_evidence
from playerfl_core.stats.p_values import p_value_text

PLAYER = "playerfl"


MEANING = {
    "supported": "the runs back it",
    "contradicted": "the runs go against it",
    "undecided": "these runs cannot tell",
}
"""What a verdict means for a reader, the first words of each answer of the Result box."""


def _ordinal(n: int) -> str:
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(n, f"{n}th")


def rank_outcome(
    wide: pd.DataFrame, higher_is_better: bool, alpha: float, blocks: str, control: str = PLAYER
) -> dict:
    """How ``control`` ranks in ``wide`` (algorithms × blocks) and which case of the book's
    best-rank decision (:func:`~playerfl_core.stats.evidence.best_rank_evidence`) decided it:
    ``untestable`` (too few blocks), ``chance`` (Friedman does not reject), ``behind`` (some
    algorithm ranks significantly ahead), ``ahead`` (ahead of every other), ``close`` (Nemenyi
    cannot separate it from some others)."""
    complete = wide.dropna(axis=0, how="any")
    ev, nem = best_rank_evidence(complete, control, higher_is_better, "", alpha, blocks)
    ranks = M.rank_table(complete, higher_is_better)["mean_rank"]
    k, n = complete.shape
    fr = M.friedman(complete, higher_is_better)
    behind = nem[(nem["mean_rank"] < ranks[control]) & (nem["p"] <= alpha)] if len(nem) else nem
    if not ev.testable:
        case = "untestable"
    elif not np.isfinite(fr.pvalue) or fr.pvalue > alpha:
        case = "chance"
    elif ev.verdict == "contradicted":
        case = "behind"
    elif ev.verdict == "supported":
        case = "ahead"
    else:
        case = "close"
    return {
        "case": case,
        "verdict": ev.verdict,
        "position": int((ranks < ranks[control]).sum()) + 1,
        "k": k,
        "n": n,
        "blocks": blocks,
        "alpha": alpha,
        "mean_rank": float(ranks[control]),
        "friedman_p": float(fr.pvalue),
        "min_p": float(ev.min_pvalue),
        "close": int((nem["p"] > alpha).sum()) if len(nem) else 0,
        "behind": [algorithm_label(a) for a in behind["other"]] if len(behind) else [],
        "nemenyi_p": float(nem["p"].max() if case == "ahead" else behind["p"].min())
        if case in ("ahead", "behind")
        else float("nan"),
    }


def _ahead(position: int) -> str:
    return "the one ranked ahead of it" if position == 2 else f"the {position - 1} ranked ahead"


def _rank_clause(o: dict) -> str:
    """Why a best-rank part came out as it did, in words (no test names)."""
    others = o["k"] - 1
    return {
        "untestable": f"{o['n']} {o['blocks']} are too few for any test to decide",
        "chance": f"over {o['n']} {o['blocks']} the algorithms' ranks differ no more than "
        "chance would make them",
        "close": (
            f"its lead over {o['close']} of the other {others} is within what chance produces"
            if o["position"] == 1
            else f"{o['close']} of the other {others}, including {_ahead(o['position'])}, "
            "are within what chance produces of it"
        ),
        "behind": f"{', '.join(o['behind'])} {'ranks' if len(o['behind']) == 1 else 'rank'} "
        "ahead of it by more than chance allows",
        "ahead": f"it is ahead of each of the other {others} by more than chance allows",
    }[o["case"]]


def _rank_numbers(o: dict, link: bool = False) -> str:
    """The test numbers behind a best-rank part, the tests named (linked to the glossary when
    ``link``)."""
    friedman = "{term}`Friedman test` p" if link else "Friedman p"
    nemenyi = "the {term}`Nemenyi test`" if link else "the Nemenyi test"
    where = f"mean rank {o['mean_rank']:.2f}, {_ordinal(o['position'])} of {o['k']}"
    head = f"{friedman} = {p_value_text(o['friedman_p'])}"
    text = {
        "untestable": f"with {o['n']} {o['blocks']} the smallest p a test could reach is "
        f"{p_value_text(o['min_p'])} > {o['alpha']:g}",
        "chance": f"{head} > {o['alpha']:g} over {o['n']} {o['blocks']}",
        "close": f"{head} ≤ {o['alpha']:g} over {o['n']} {o['blocks']}, but {nemenyi} "
        f"separates PLayer-FL from only {o['k'] - 1 - o['close']} of the other {o['k'] - 1}",
        "behind": f"{head}; {nemenyi}: p = {p_value_text(o['nemenyi_p'])} for "
        f"{', '.join(o['behind'])}",
        "ahead": f"{head}; {nemenyi}: p ≤ {p_value_text(o['nemenyi_p'])} against every other",
    }[o["case"]]
    return f"{text}; {where}"


def _best(position: int) -> str:
    return "the best" if position == 1 else f"the {_ordinal(position)}-best"


def _answer(cid: str, title: str, verdict, plain: str, numbers: str) -> str:
    return (
        f"**{cid}, {title}: {verdict.verdict}.** {MEANING[verdict.verdict].capitalize()}: "
        f"{plain} *The numbers* (evidence: {verdict.strength}): {numbers}."
    )


def c3_answer(claim, outcome: dict) -> str:
    """C3's answer for the Result box: one plain sentence, then the numbers (MyST, the tests
    linked to the glossary: C3 comes first in the box)."""
    joiner = "and" if outcome["case"] == "ahead" else "but"
    plain = (
        f"PLayer-FL has {_best(outcome['position'])} mean rank of the {outcome['k']} algorithms "
        f"on macro-F1, {joiner} {_rank_clause(outcome)}."
    )
    return _answer(
        claim.id, "PLayer-FL ranks best", claim.verdict, plain, _rank_numbers(outcome, link=True)
    )


def c4_answer(claim, fairness: dict, ipr: dict, ipr_mean: str) -> str:
    """C4's answer: PLayer-FL's places on fairness and IPR and why they decide what they do."""
    same = fairness["case"] == ipr["case"] and fairness["case"] in ("chance", "untestable")
    if same and fairness["case"] == "chance":
        why = (
            f"over {fairness['n']} {fairness['blocks']} neither ordering differs from what "
            "chance produces"
        )
    elif same:
        why = _rank_clause(fairness)
    else:
        why = f"on fairness {_rank_clause(fairness)}, and on IPR {_rank_clause(ipr)}"
    joiner = "and" if fairness["case"] == ipr["case"] == "ahead" else "but"
    plain = (
        f"PLayer-FL has {_best(fairness['position'])} mean rank of the {fairness['k']} "
        f"algorithms on {{term}}`fairness` and {_best(ipr['position'])} on "
        f"{{term}}`IPR <incentivized participation rate>`, {joiner} {why}."
    )
    numbers = f"fairness: {_rank_numbers(fairness)}; IPR: {_rank_numbers(ipr)}; mean IPR {ipr_mean}"
    return _answer(
        claim.id, "PLayer-FL is the fairest and the most worth joining", claim.verdict, plain,
        numbers,
    )  # fmt: skip


def c5_answer(claim) -> str:
    """C5's answer: in how many of its comparisons the rule's split beats a random one by more
    than chance, loses, or cannot be told apart from it."""
    parts = claim.parts
    n = len(parts)
    won = int((parts["verdict"] == "supported").sum())
    lost = int((parts["verdict"] == "contradicted").sum())
    rest = n - won - lost
    if n == 1:
        plain = "at tuned learning rates the rule's split " + (
            "scores higher than a random one by more than chance allows"
            if won
            else "scores lower than a random one by more than chance allows"
            if lost
            else "differs from a random one by no more than chance produces"
        )
    else:
        bits = []
        if won:
            bits.append(f"scores higher than a random one by more than chance allows in {won}")
        if lost:
            bits.append(f"lower in {lost}")
        said = " and ".join(bits) if bits else ""
        plain = f"of its {n} comparisons (at tuned learning rates, and at one learning rate per "
        plain += "dataset), the rule's split "
        if said:
            plain += said + (
                f", and the other {rest} are within what chance produces" if rest else ""
            )
        else:
            plain += "differs from a random one by no more than chance produces in any"
    first = parts.iloc[0]
    median = f"{first['estimate']:+.3f}".replace("-", "\u2212")
    numbers = (
        f"{claim.verdict.reason}, one family with {{term}}`Holm's adjustment`; at tuned "
        f"learning rates the median difference is {median} macro-F1 over "
        f"{int(first['n'])} paired runs, p = {p_text(first['p'])}"
        + (f", adjusted {p_text(first['p_holm'])}" if n > 1 else "")
    )
    return _answer(
        claim.id, "the rule's split beats a random one", claim.verdict, plain + ".", numbers
    )
