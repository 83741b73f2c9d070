"""Chapter 04b's R2 at low evaluation noise (item 16 of ``study.preregistration``): every declared
family's verdicts with the book's test sets and with 2,000 test images per client side by side,
and claim R2 on both (``rule_family.RuleStudy``: ``study.book`` holds the book's test sets)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from playerfl_core.book.reports import r1_rescore as RR
from playerfl_core.book.reports import rule_family as RF
from playerfl_core.book.reports.tables import interval_text, signed
from playerfl_core.book.style import set_label
from playerfl_core.study import preregistration as P
from playerfl_core.study import r1_rescore as R1
from playerfl_core.study import r2_rescore as R2


@dataclass
class Rescore:
    comparison: pd.DataFrame
    """``r2_rescore.family_comparison``: per family, entry and kind, both verdicts."""
    claim_book: object
    claim_large: object
    """Claim R2's verdict with the book's test sets and with the large ones."""
    curvature: pd.DataFrame
    """Item 9's curvature comparison on both (``verdict_book``, ``verdict_large``)."""
    record: dict | None
    """Item 16's store record (its runs); None when every run came from item 15's store."""
    reused: int
    """Runs of item 15's store that the families read."""

    @property
    def images(self) -> str:
        return f"{R1.TEST_PER_CLIENT:,} test images per client"


def analyse(study: RF.RuleStudy) -> Rescore | None:
    """The side by side of a study whose regrets items 15 and 16 rescored; None when none was
    (a chapter run on other sweeps)."""
    if study.book is None:
        return None
    comparison = R2.family_comparison(study.book.regrets, study.regrets)
    curvature = None
    if study.added is not None:
        old = P.curvature_comparison(study.book.regrets)[["set", "verdict"]]
        new = P.curvature_comparison(study.regrets)[["set", "verdict"]]
        curvature = old.merge(new, on="set", suffixes=("_book", "_large"))
    committed = R2.load()
    tested = study.regrets[study.regrets["role"].isin(R2.TESTED)]
    reused = len(set(R1.tasks(tested)) & R2.runs_in(R1.load()))
    return Rescore(
        comparison,
        RF.r2_verdict(study.book),
        RF.r2_verdict(study),
        curvature,
        None if committed is None else committed[1],
        reused,
    )


def family_table(res: Rescore) -> pd.DataFrame:
    """Per declared family: its tests, the regrets rescored, and the verdict counts with the
    book's test sets and with the large ones."""
    rows = []
    for family, g in res.comparison.groupby("family", sort=False):
        rows.append(
            {
                "family": set_label(family),
                "tests": len(g),
                "regrets rescored": f"{int(g['rescored'].sum())} of {int(g['n'].sum())}",
                "book's test sets (within / beyond / undecided)": _counts(g["verdict_book"]),
                f"{R1.TEST_PER_CLIENT:,} images (within / beyond / undecided)": _counts(
                    g["verdict_large"]
                ),
                "verdicts changed": int(g["changed"].sum()),
            }
        )
    return pd.DataFrame(rows).set_index("family")


def _counts(verdicts: pd.Series) -> str:
    n = verdicts.value_counts()
    return " / ".join(str(int(n.get(v, 0))) for v in (P.WITHIN, P.BEYOND, "undecided"))


def changed_table(res: Rescore) -> pd.DataFrame:
    """One row per verdict that changed: family, rule, kind, seeds, both mean regrets and
    verdicts (empty when none changed)."""
    c = res.comparison[res.comparison["changed"]]
    return pd.DataFrame(
        {
            "family": c["family"].map(set_label),
            "rule": c["entry"],
            "kind": c["kind"],
            "seeds (rescored)": [f"{n} ({r})" for n, r in zip(c["n"], c["rescored"], strict=True)],
            "mean regret, book's test sets": c["mean_book"].map(signed),
            "verdict, book's test sets": c["verdict_book"],
            f"mean regret, {R1.TEST_PER_CLIENT:,} images": [
                interval_text(*r) for r in c[["mean_large", "lo_large", "hi_large"]].to_numpy()
            ],
            f"verdict, {R1.TEST_PER_CLIENT:,} images": c["verdict_large"],
        }
    ).set_index(["family", "rule", "kind"])


def full_table(res: Rescore) -> pd.DataFrame:
    """Every (family, rule, kind): seeds, seeds rescored, both mean regrets (three decimals
    each, as the intervals beside them) and verdicts."""
    c = res.comparison
    return pd.DataFrame(
        {
            "family": c["family"].map(set_label),
            "rule": c["entry"],
            "kind": c["kind"],
            "seeds": c["n"],
            "rescored": c["rescored"],
            "mean regret, book's": c["mean_book"].map(signed),
            "verdict, book's": c["verdict_book"],
            f"mean regret, {R1.TEST_PER_CLIENT:,}": c["mean_large"].map(signed),
            f"verdict, {R1.TEST_PER_CLIENT:,}": c["verdict_large"],
        }
    ).set_index(["family", "rule", "kind"])


CURVATURE = (
    "The curvature comparison (each second-order rule against its first-order form, one paired "
    "test per set, apart from the tolerance verdicts counted above)"
)
"""Named in full: the second-order rules' own tolerance verdicts may change while it does not."""


def summary(res: Rescore | None) -> str:
    """How many declared verdicts changed (chapter 04b's table names them), and claim R2 on both
    test-set sizes."""
    if res is None:
        return (
            "The regrets read here are not rescored (other sweeps than the committed ones): "
            "every verdict uses the book's test sets."
        )
    c = res.comparison
    changed = c[c["changed"]]
    lower = int((c["mean_large"] < c["mean_book"]).sum())
    b, g = res.claim_book, res.claim_large
    claim = (
        f"Claim R2 is {g.verdict} ({g.strength}) with both test sizes."
        if (b.verdict, b.strength) == (g.verdict, g.strength)
        else f"Claim R2 is {b.verdict} ({b.strength}) with the book's test sets and "
        f"{g.verdict} ({g.strength}) with {res.images}."
    )
    text = (
        f"Scoring R2's regrets on {res.images} changes {len(changed)} of the {len(c)} declared "
        f"verdicts{' (the second table below names them)' if len(changed) else ''}; the mean "
        f"regret is lower on {lower} of the {len(c)} (rule, kind) pairs. {claim}"
    )
    if res.curvature is not None:
        moved = res.curvature[res.curvature["verdict_book"] != res.curvature["verdict_large"]]
        text += (
            f" {CURVATURE} keeps its verdicts."
            if moved.empty
            else f" {CURVATURE} changes on "
            + "; ".join(
                f"{set_label(r.set)} (from {r.verdict_book} to {r.verdict_large})"
                for r in moved.itertuples()
            )  # fmt: skip
            + "."
        )
    return text


def cost(res: Rescore | None) -> str:
    """The runs trained again for item 16 and those read from item 15's store."""
    if res is None:
        return "nothing here (not computed)"
    if res.record is None:
        return f"no run of its own: all {res.reused} runs it reads are chapter 04's rescore's"
    return (
        f"{RR.cost_text(res.record)}; {res.reused} more runs were read from chapter 04's "
        "rescore of R1's family (the ninth declaration), not trained again"
    )
