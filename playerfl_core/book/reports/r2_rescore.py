"""Chapter 04b's R2 at low evaluation noise: every declared family's verdicts before (A) and after
(B) a rescore side by side (``protocol_comparison``), and claim R2 on both. :func:`analyse`: the
book's test sets against 2,000 test images per client (``study.book`` against
``study.test_only``, or ``study`` when the validation rescore is not committed);
:func:`analyse_validation`: 2,000 test images against 2,000 validation images too."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from playerfl_core.book.reports import protocol_comparison as PC
from playerfl_core.book.reports import rule_family as RF
from playerfl_core.book.reports.tables import signed
from playerfl_core.book.style import set_label
from playerfl_core.study import preregistration as P
from playerfl_core.study import rescore as RS


@dataclass
class Rescore:
    comparison: pd.DataFrame
    """``rescore.family_comparison``: per family, entry and kind, both verdicts."""
    claim_book: object
    claim_large: object
    """Claim R2's verdict with the book's test sets and with the large ones."""
    curvature: pd.DataFrame
    """The curvature comparison on both (``verdict_book``, ``verdict_large``)."""
    record: dict | None
    """The rescore's store record (its runs); None when every run came from R1's rescore."""
    reused: int
    """Runs of R1's rescore that the families read."""
    before: str = "the book's test sets"
    after: str = f"{RS.TEST_PER_CLIENT:,} test images per client"
    """What the regrets were scored on before and after the rescore (for sentences)."""
    oracle_moved: tuple[int, int] | None = None
    """Validation rescore: (seeds whose oracle's split moved, seeds rescored); else None."""

    @property
    def images(self) -> str:
        return self.after

    @property
    def columns(self) -> tuple[str, str]:
        """The short column labels of the two sides."""
        if self.oracle_moved is None:
            return "book's test sets", f"{RS.TEST_PER_CLIENT:,} images"
        return f"{RS.TEST_PER_CLIENT:,} test images", f"{RS.TEST_PER_CLIENT:,} validation too"


def analyse(study: RF.RuleStudy) -> Rescore | None:
    """The side by side of a study whose regrets were rescored on 2,000 test images per client;
    None when none was (a chapter run on other sweeps)."""
    if study.book is None:
        return None
    after = study.test_only or study
    committed = RS.load("r2_rescore")
    tested = after.regrets[after.regrets["role"].isin(RS.TESTED)]
    reused = len(set(RS.tasks(tested)) & RS.runs_in(RS.load("r1_rescore")))
    record = None if committed is None else committed[1]
    return _side_by_side(study.book, after, record, reused)


def analyse_validation(study: RF.RuleStudy) -> Rescore | None:
    """Every family with 2,000 test images per client (A) and with 2,000 validation images too
    (B), and on how many seeds the oracle's split moved; None when the validation rescore
    replaced none of the study's regrets."""
    if study.test_only is None:
        return None
    keys = ["dataset", "lr", "seed"]
    oracles = [s.regrets.drop_duplicates(keys)[[*keys, "p_oracle"]]
               for s in (study.test_only, study)]  # fmt: skip
    rescored = study.regrets.loc[study.regrets["rescored"], keys].drop_duplicates()
    both = oracles[0].merge(oracles[1].merge(rescored, on=keys), on=keys)
    moved = (int((both["p_oracle_x"] != both["p_oracle_y"]).sum()), len(both))
    images = f"{RS.TEST_PER_CLIENT:,}"
    committed = RS.load("val_rescore")
    return _side_by_side(
        study.test_only, study, None if committed is None else committed[1], 0,
        before=f"{images} test images per client",
        after=f"{images} validation and test images per client", oracle_moved=moved,
    )  # fmt: skip


def _side_by_side(old: RF.RuleStudy, new: RF.RuleStudy, record, reused, **labels) -> Rescore:
    curvature = None
    if new.added is not None:
        was = P.curvature_comparison(old.regrets)[["set", "verdict"]]
        now = P.curvature_comparison(new.regrets)[["set", "verdict"]]
        curvature = was.merge(now, on="set", suffixes=("_book", "_large"))
    comparison = RS.family_comparison(old.regrets, new.regrets)
    return Rescore(comparison, RF.r2_verdict(old), RF.r2_verdict(new), curvature, record,
                   reused, **labels)  # fmt: skip


def family_table(res: Rescore) -> pd.DataFrame:
    """Per declared family: its tests, the regrets rescored, and the verdict counts with the
    book's test sets and with the large ones."""
    before, after = res.columns
    rows = []
    for family, g in res.comparison.groupby("family", sort=False):
        rows.append(
            {
                "family": set_label(family),
                "tests": len(g),
                "regrets rescored": f"{int(g['rescored'].sum())} of {int(g['n'].sum())}",
                f"{before} (within / beyond / undecided)": _counts(g["verdict_book"]),
                f"{after} (within / beyond / undecided)": _counts(g["verdict_large"]),
                "verdicts changed": int(g["changed"].sum()),
            }
        )
    return pd.DataFrame(rows).set_index("family")


def _counts(verdicts: pd.Series) -> str:
    n = verdicts.value_counts()
    return " / ".join(str(int(n.get(v, 0))) for v in (P.WITHIN, P.BEYOND, "undecided"))


def sides(comparison: pd.DataFrame) -> pd.DataFrame:
    """``rescore.family_comparison`` in the comparison's columns (``a``: the book's side)."""
    names = {"mean_book": "a", "verdict_book": "a_verdict", "mean_large": "b",
             "lo_large": "b_lo", "hi_large": "b_hi", "verdict_large": "b_verdict"}  # fmt: skip
    return comparison.rename(columns=names)


def changed_table(res: Rescore) -> pd.DataFrame:
    """One row per verdict that changed: family, rule, kind, seeds, both mean regrets and
    verdicts (empty when none changed)."""
    c = PC.changed(sides(res.comparison))
    before, after = res.columns
    index = {"family": c["family"].map(set_label), "rule": c["entry"], "kind": c["kind"]}
    seeds = [f"{n} ({r})" for n, r in zip(c["n"], c["rescored"], strict=True)]
    return PC.table(c, (f"mean regret, {before}", f"verdict, {before}"),
                    (f"mean regret, {after}", f"verdict, {after}"), {"seeds (rescored)": seeds},
                    index)  # fmt: skip


def full_table(res: Rescore, then: Rescore | None = None) -> pd.DataFrame:
    """Every (family, rule, kind): the seeds, how many were rescored, and per evaluation protocol
    the mean regret (three decimals, as the intervals elsewhere) with its verdict's mark (✓
    within δ, ✗ beyond, ? undecided): the book's test sets and 2,000 test images (``res``)
    and, with ``then`` (the validation rescore), 2,000 validation images too. One short cell
    per protocol keeps the table narrow enough for a phone."""
    c = res.comparison
    keys = ["family", "entry", "kind"]
    before, after = res.columns
    out = c[keys].assign(seeds=c["n"], rescored=c["rescored"])
    out[before] = _cells(c["mean_book"], c["verdict_book"])
    out[after] = _cells(c["mean_large"], c["verdict_large"])
    if then is not None:
        t = then.comparison.set_index(keys).loc[pd.MultiIndex.from_frame(c[keys])]
        out[then.columns[1]] = _cells(t["mean_large"], t["verdict_large"])
    out["family"] = out["family"].map(set_label)
    return out.rename(columns={"entry": "rule"}).set_index(["family", "rule", "kind"])


def _cells(means: pd.Series, verdicts: pd.Series) -> list[str]:
    return [f"{signed(m)} {RF.verdict_mark(v)}" for m, v in zip(means, verdicts, strict=True)]


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
    b, g = res.claim_book, res.claim_large
    if res.oracle_moved is None:
        what, moved, sizes = f"Scoring R2's regrets on {res.images}", "", "test sizes"
    else:
        what = ("Choosing every split and every client's round on "
                f"{RS.TEST_PER_CLIENT:,} validation images per client too")  # fmt: skip
        moved = "; the oracle's split moves on {} of {} seeds".format(*res.oracle_moved)
        sizes = "validation sizes"
    claim = (
        f"Claim R2 is {g.verdict} ({g.strength}) with both {sizes}."
        if (b.verdict, b.strength) == (g.verdict, g.strength)
        else f"Claim R2 is {b.verdict} ({b.strength}) with {res.before} and "
        f"{g.verdict} ({g.strength}) with {res.images}."
    )
    text = (
        f"{what} changes {len(changed)} of the {len(c)} declared verdicts"
        f"{' (the second table below names them)' if len(changed) else ''}{moved}; "
        f"{PC.regrets_moved(sides(c), '(rule, kind) pairs')}. {claim}"
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
    """The runs trained again for this rescore and those read from R1's rescore."""
    if res is None:
        return "nothing here (not computed)"
    if res.oracle_moved is not None:  # one store for R1's and R2's families
        return (
            "chapter 04's runs (the eleventh declaration trained every split of R1's and R2's "
            "Fashion-MNIST seeds again in one store; chapter 04 gives its cost)"
        )
    if res.record is None:
        return f"no run of its own: all {res.reused} runs it reads are chapter 04's rescore's"
    return (
        f"{PC.Cost.of(res.record).retrained()}; {res.reused} more runs were read from chapter 04's "
        "rescore of R1's family (the ninth declaration), not trained again"
    )
