"""Chapter 04's R1 at low evaluation noise: per federation with held-out images, the paper's rule's
mean regret and R1's verdict before (A) and after (B) a rescore, side by side
(``protocol_comparison``); each verdict from R1's family over every swept federation.
:func:`analyse` scores the test terms on 2,000 images per client; :func:`analyse_validation`
chooses the oracle's split and each client's round on 2,000 validation images too."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from playerfl_core.book.prose import listed
from playerfl_core.book.reports import protocol_comparison as PC
from playerfl_core.book.reports.tables import interval_text
from playerfl_core.book.style import dataset_label
from playerfl_core.study import rescore as RS
from playerfl_core.study import rungs


@dataclass
class Rescore:
    comparison: pd.DataFrame
    """Per rescored federation: :func:`protocol_comparison.r1_side_by_side` (``a``: before the
    rescore; ``b``: after it) and, for the validation rescore, ``moved``: seeds whose oracle's
    split moved."""
    record: dict
    rescored_seeds: int
    """Seeds whose regret the rescore replaced."""
    before: str = "the book's test sets"
    after: str = ""
    """What the regrets were scored on before and after (for sentences; columns drop "the")."""
    oracle_moved: int | None = None
    """Seeds whose validation oracle's split moved (validation rescore); None otherwise."""
    reused: int = 0
    """Seeds read from the evaluation rung's store, not trained again (validation rescore)."""

    @property
    def images(self) -> str:
        return self.after or f"{self.record['test_per_client']:,} test images per client"


def _rescored(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """R1 side by side on the federations ``after`` rescored."""
    c = PC.r1_side_by_side(before, after.drop(columns="rescored"))
    return c[c["dataset"].isin(set(after.loc[after["rescored"], "dataset"]))].reset_index(drop=True)


def analyse(every: pd.DataFrame) -> Rescore | None:
    """The committed rescore read against ``every`` (the paper's rule's regrets of every swept
    federation on the book's test sets: R1's family before it); None when the rescore is not
    committed or replaces none of ``every``'s regrets (a chapter run on other data)."""
    committed = RS.load("r1_rescore")
    if committed is None:
        return None
    new = RS.r1_regrets(every, committed)
    if not new["rescored"].any():
        return None
    return Rescore(_rescored(every, new), committed[1], int(new["rescored"].sum()))


def analyse_validation(every: pd.DataFrame) -> Rescore | None:
    """R1's family with 2,000 test images per client (A) and with 2,000 validation images too
    (B: ``rescore.r1_family``), per federation it rescored, and on how many seeds the
    oracle's split moved; None when not committed or holding none of ``every``'s seeds."""
    committed = RS.load("val_rescore")
    if committed is None:
        return None
    test_only = RS.r1_regrets(every)
    both = RS.r1_family(every, committed)
    if not both["large_val"].any():
        return None
    mine = both.drop(columns="rescored").rename(columns={"large_val": "rescored"})
    moved, n = RS.oracle_moves(test_only, mine)
    c = _rescored(test_only.drop(columns="rescored"), mine)
    keys = ["dataset", "lr", "seed"]
    pairs = test_only[[*keys, "p_oracle"]].merge(mine.loc[mine["rescored"], [*keys, "p_oracle"]],
                                                 on=keys)  # fmt: skip
    c["moved"] = (
        c["dataset"]
        .map((pairs["p_oracle_x"] != pairs["p_oracle_y"]).groupby(pairs["dataset"]).sum())
        .astype(int)
    )
    rung = rungs.load("eval_rung")
    held = set(mine.loc[mine["rescored"], keys].itertuples(index=False, name=None))
    reused = len(RS.rung_seeds(None if rung is None else rung[0]) & held)
    images = f"{RS.TEST_PER_CLIENT:,}"
    return Rescore(c, committed[1], n, f"{images} test images per client",
                   f"{images} validation and test images per client", moved, reused)  # fmt: skip


def comparison_table(res: Rescore) -> pd.DataFrame:
    """One row per rescored federation: seeds, both mean regrets with their intervals and both
    verdicts."""
    c = res.comparison
    before, after = res.before.removeprefix("the "), _short(res)
    moved = {} if "moved" not in c else {"oracle's split moved": c["moved"]}
    a, b = (f"regret, {before}", f"verdict, {before}"), (f"regret, {after}", f"verdict, {after}")
    return PC.table(c, a, b, {"seeds": c["n_seeds"], **moved})


def _short(res: Rescore) -> str:
    """The column label of the rescored side."""
    if res.oracle_moved is None:
        return f"{res.record['test_per_client']:,} images"
    return f"{res.record['val_per_client']:,} validation images too"


def rescore_lines(res: Rescore | None, module: str = "r1_rescore") -> str:
    """One Markdown line per verdict that changed; when none did (:func:`rescore_summary` says
    so), a sentence of what they are under both, not a list of one "no change" item. ``module``:
    the study module that computes the rescore, named when it is missing."""
    if res is None:
        return (
            "- Not computed for these federations: the rescore covers the committed sweeps of "
            f"federations with held-out images (`playerfl study run {module}`)."
        )
    changed = PC.changed(res.comparison)
    if changed.empty:
        counts = res.comparison["b_verdict"].value_counts()
        kept = listed(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda i: (-i[1], i[0])))
        return (
            f"With {res.before} and with {res.images} alike, the verdicts are {kept}; the table "
            "below gives each federation's."
        )
    return "\n".join(
        f"- {dataset_label(r.dataset)}: **{r.a_verdict}** with {res.before} "
        f"(mean regret {interval_text(r.a, r.a_lo, r.a_hi)}), **{r.b_verdict}** with "
        f"{res.images} ({interval_text(r.b, r.b_lo, r.b_hi)})."
        for r in changed.itertuples()
    )


def rescore_summary(res: Rescore | None) -> str:
    """One sentence: how many verdicts changed, and which way the mean regrets moved."""
    if res is None:
        return ""
    if res.oracle_moved is None:
        return PC.summary(res.comparison, f"Scoring the regrets on {res.images}")
    what = (f"Choosing the oracle's split and every client's round on "
            f"{res.record['val_per_client']:,} validation images per client too")  # fmt: skip
    moved = f"; the oracle's split moves on {res.oracle_moved} of {res.rescored_seeds} seeds"
    return PC.summary(res.comparison, what, moved)


def rescore_cost(res: Rescore | None) -> str:
    """The runs retrained, their CPU time, and how many matched the committed runs."""
    if res is None:
        return "nothing here (not computed)"
    cost = PC.Cost.of(res.record).retrained(f" for {res.rescored_seeds - res.reused} seeds")
    if not res.reused:
        return cost
    return (
        f"{cost}; the {res.reused} seeds of the evaluation rung above were read from its store, "
        "not trained again"
    )
