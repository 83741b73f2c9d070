"""Chapter 05's Result box in words: per claim (C3–C5) the verdict and its effect in one plain
sentence, no test named. Decides nothing: it reads the claims' verdicts."""

from __future__ import annotations

import numpy as np
import pandas as pd

from playerfl_core.book.style import algorithm_label, dataset_label
from playerfl_core.stats import metrics as M
from playerfl_core.stats.claims import TUNED_PART
from playerfl_core.stats.evidence import best_rank_evidence

PLAYER = "playerfl"


def _ordinal(n: int) -> str:
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(n, f"{n}th")


def rank_outcome(
    wide: pd.DataFrame, higher_is_better: bool, alpha: float, blocks: str, control: str = PLAYER
) -> dict:
    """How ``control`` ranks in ``wide`` (algorithms × blocks) and which case of
    :func:`~playerfl_core.stats.evidence.best_rank_evidence` decided it: ``untestable``,
    ``chance``, ``behind``, ``ahead`` or ``close``."""
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


def _rank_clause(o: dict) -> str:
    """Why a best-rank part came out as it did, in words (no test names)."""
    others, position = o["k"] - 1, o["position"]
    ahead = "the one ranked ahead of it" if position == 2 else f"the {position - 1} ranked ahead"
    return {
        "untestable": f"{o['n']} {o['blocks']} are too few for any test to decide",
        "chance": "the algorithms' ranks differ no more than chance would make them",
        "close": (
            f"its lead over {o['close']} of the other {others} is within chance"
            if position == 1
            else f"{o['close']} of the other {others}, including {ahead}, are within chance of it"
        ),
        "behind": f"{', '.join(o['behind'])} {'ranks' if len(o['behind']) == 1 else 'rank'} "
        "ahead of it beyond chance",
        "ahead": f"it is ahead of each of the other {others} beyond chance",
    }[o["case"]]


def _answer(cid: str, title: str, verdict, plain: str) -> str:
    return f"**{cid}, {title}: {verdict.verdict}.** {plain[0].upper()}{plain[1:]}"


def c3_plain(outcome: dict) -> str:
    """C3's answer in one plain sentence: PLayer-FL's place and mean rank, and why."""
    joiner = "and" if outcome["case"] == "ahead" else "but"
    return (
        f"PLayer-FL ranks {_ordinal(outcome['position'])} of {outcome['k']} algorithms (mean "
        f"rank {outcome['mean_rank']:.2f} over {outcome['n']} {outcome['blocks']}), {joiner} "
        f"{_rank_clause(outcome)}."
    )


def c3_answer(claim, outcome: dict) -> str:
    """C3's answer for the Result box: its verdict, then :func:`c3_plain`."""
    return _answer(claim.id, "PLayer-FL ranks best on macro-F1", claim.verdict, c3_plain(outcome))


def c4_answer(claim, fairness: dict, ipr: dict, ipr_mean: str) -> str:
    """C4's answer: PLayer-FL's places on fairness and IPR and why they decide what they do."""
    same = fairness["case"] == ipr["case"] and fairness["case"] in ("chance", "untestable")
    if same and fairness["case"] == "chance":
        why = f"{fairness['n']} {fairness['blocks']} cannot tell either order from chance"
    elif same:
        why = _rank_clause(fairness)
    else:
        why = f"on fairness {_rank_clause(fairness)}, and on IPR {_rank_clause(ipr)}"
    joiner = "and" if fairness["case"] == ipr["case"] == "ahead" else "but"
    fair, ipr_term = "{term}`fairness`", "{term}`IPR <incentivized participation rate>`"
    where = (
        f"on both {fair} and {ipr_term}"
        if fairness["position"] == ipr["position"]
        else f"on {fair} and {_ordinal(ipr['position'])} on {ipr_term}"
    )
    plain = (
        f"PLayer-FL ranks {_ordinal(fairness['position'])} of {fairness['k']} algorithms "
        f"{where} (mean IPR {ipr_mean}), {joiner} {why}."
    )
    return _answer(claim.id, "PLayer-FL is fairest and most worth joining", claim.verdict,
                   plain)  # fmt: skip


def _where(part: str) -> str:
    """A C5 part's setting in a few words: "at tuned learning rates" or the dataset's name."""
    if part.startswith(TUNED_PART):
        return "at tuned learning rates"
    return dataset_label(part.removeprefix("one learning rate: ").partition(", vs ")[0])


def c5_answer(claim) -> str:
    """C5's answer: the median effect at tuned rates, then which comparisons favour either split."""
    parts = claim.parts
    first = parts.iloc[0]
    median = f"{first['estimate']:+.3f}".replace("-", "\u2212")
    plain = f"{median} macro-F1 (median of {int(first['n'])} paired runs"
    if len(parts) == 1:
        said = {"supported": "in the rule's favour beyond chance",
                "contradicted": "in the random split's favour beyond chance"}  # fmt: skip
        plain += f"), {said.get(first['verdict'], 'within chance')}."
        return _answer(claim.id, "the rule's split beats a random one", claim.verdict, plain)
    bits = []
    for verdict, whose in (("supported", "the rule's split"), ("contradicted", "the random one")):
        won = parts[parts["verdict"] == verdict]
        if len(won):
            where = ", ".join(dict.fromkeys(_where(p) for p in won["part"]))
            bits.append((len(won), f"{whose} beyond chance ({where})"))
    plain += f" {_where(first['part'])}); "
    if not bits:
        plain += f"none of its {len(parts)} comparisons differs beyond chance."
    else:
        said = [f"{bits[0][0]} of its {len(parts)} comparisons favour {bits[0][1]}"]
        said += [f"{n} favour {words}" for n, words in bits[1:]]
        plain += ", ".join(said) + "."
    return _answer(claim.id, "the rule's split beats a random one", claim.verdict, plain)
