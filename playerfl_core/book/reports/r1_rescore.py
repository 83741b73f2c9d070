"""Chapter 04's R1 at low evaluation noise: per federation with held-out images, the paper's rule's
mean regret and R1's verdict before and after a rescore, side by side; each verdict from R1's
family over every swept federation (``fair_sweeps.compare``: ``one_*`` before, ``own_*`` after).
Item 15 of ``study.preregistration`` (:func:`analyse`) scored the test terms on 2,000 images per
client; item 17 (:func:`analyse_validation`) chose the oracle's split and each client's round on
2,000 validation images too."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from playerfl_core.book.prose import changes_verdicts, listed, moved_text
from playerfl_core.book.reports import fair_sweeps as FS
from playerfl_core.book.reports.tables import interval_text
from playerfl_core.book.style import dataset_label
from playerfl_core.study import r1_rescore as RS
from playerfl_core.study import val_rescore as VS


@dataclass
class Rescore:
    comparison: pd.DataFrame
    """Per rescored federation: ``fair_sweeps.compare``'s columns (``one_*``: before the
    rescore; ``own_*``: after it) and, for item 17, ``moved``: seeds whose oracle's split moved."""
    record: dict
    rescored_seeds: int
    """Seeds whose regret the rescore replaced."""
    before: str = "the book's test sets"
    after: str = ""
    """What the regrets were scored on before and after (for sentences; columns drop "the")."""
    oracle_moved: int | None = None
    """Seeds whose validation oracle's split moved (item 17); None for item 15."""
    reused: int = 0
    """Seeds read from item 14's rung, not trained again (item 17)."""

    @property
    def images(self) -> str:
        return self.after or f"{self.record['test_per_client']:,} test images per client"


def analyse(every: pd.DataFrame) -> Rescore | None:
    """The committed rescore read against ``every`` (the paper's rule's regrets of every swept
    federation on the book's test sets: R1's family before item 15); None when the rescore is
    not committed or replaces none of ``every``'s regrets (a chapter run on other data)."""
    committed = RS.load()
    if committed is None:
        return None
    new = RS.r1_regrets(every, committed)
    if not new["rescored"].any():
        return None
    rescored = set(new.loc[new["rescored"], "dataset"])
    c = FS.compare(every, new.drop(columns="rescored"))
    c = c[c["dataset"].isin(rescored)].reset_index(drop=True)
    return Rescore(c, committed[1], int(new["rescored"].sum()))


def analyse_validation(every: pd.DataFrame) -> Rescore | None:
    """Item 17 read against item 15: R1's family with 2,000 test images per client (item 15's
    regrets of ``every``) and with 2,000 validation images too (``val_rescore.r1_family``), per
    federation it rescored, and on how many seeds the oracle's split moved; None when item 17 is
    not committed or holds none of ``every``'s seeds."""
    committed = VS.load()
    if committed is None:
        return None
    test_only = RS.r1_regrets(every)
    both = VS.r1_family(every, committed)
    if not both["large_val"].any():
        return None
    mine = both.drop(columns="rescored").rename(columns={"large_val": "rescored"})
    moved, n = VS.oracle_moves(test_only, mine)
    c = FS.compare(test_only.drop(columns="rescored"), mine.drop(columns="rescored"))
    c = c[c["dataset"].isin(set(mine.loc[mine["rescored"], "dataset"]))].reset_index(drop=True)
    keys = ["dataset", "lr", "seed"]
    pairs = test_only[[*keys, "p_oracle"]].merge(mine.loc[mine["rescored"], [*keys, "p_oracle"]],
                                                 on=keys)  # fmt: skip
    c["moved"] = (
        c["dataset"]
        .map((pairs["p_oracle_x"] != pairs["p_oracle_y"]).groupby(pairs["dataset"]).sum())
        .astype(int)
    )
    from playerfl_core.study import eval_rung

    rung = eval_rung.load()
    held = set(mine.loc[mine["rescored"], keys].itertuples(index=False, name=None))
    reused = len(VS.rung_seeds(None if rung is None else rung[0]) & held)
    images = f"{RS.TEST_PER_CLIENT:,}"
    return Rescore(c, committed[1], n, f"{images} test images per client",
                   f"{images} validation and test images per client", moved, reused)  # fmt: skip


def comparison_table(res: Rescore) -> pd.DataFrame:
    """One row per rescored federation: seeds, both mean regrets with their intervals and both
    verdicts."""
    c = res.comparison
    before, after = res.before.removeprefix("the "), _short(res)
    moved = {} if "moved" not in c else {"oracle's split moved": c["moved"]}
    return pd.DataFrame(
        {
            "federation": c["dataset"].map(dataset_label),
            "seeds": c["n_seeds"],
            **moved,
            f"regret, {before}": [
                interval_text(*r) for r in c[["one", "one_lo", "one_hi"]].to_numpy()
            ],
            f"verdict, {before}": c["one_verdict"],
            f"regret, {after}": [
                interval_text(*r) for r in c[["own", "own_lo", "own_hi"]].to_numpy()
            ],
            f"verdict, {after}": c["own_verdict"],
        }
    ).set_index("federation")


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
            f"federations with held-out images (`python -m playerfl_core.study.{module}`)."
        )
    changed = res.comparison[res.comparison["differs"]]
    if changed.empty:
        counts = res.comparison["own_verdict"].value_counts()
        kept = listed(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda i: (-i[1], i[0])))
        return (
            f"With {res.before} and with {res.images} alike, the verdicts are {kept}; the table "
            "below gives each federation's."
        )
    return "\n".join(
        f"- {dataset_label(r['dataset'])}: **{r['one_verdict']}** with {res.before} "
        f"(mean regret {interval_text(r['one'], r['one_lo'], r['one_hi'])}), "
        f"**{r['own_verdict']}** with {res.images} "
        f"({interval_text(r['own'], r['own_lo'], r['own_hi'])})."
        for _, r in changed.iterrows()
    )


def rescore_summary(res: Rescore | None) -> str:
    """One sentence: how many verdicts changed, and which way the mean regrets moved."""
    if res is None:
        return ""
    c = res.comparison
    changed = c[c["differs"]]
    which = changes_verdicts([dataset_label(d) for d in changed["dataset"]], len(c))
    if res.oracle_moved is None:
        what, moved = f"Scoring the regrets on {res.images}", ""
    else:
        what = (f"Choosing the oracle's split and every client's round on "
                f"{res.record['val_per_client']:,} validation images per client too")  # fmt: skip
        moved = f"; the oracle's split moves on {res.oracle_moved} of {res.rescored_seeds} seeds"
    return f"{what} {which}{moved}; {moved_text(c['own'], c['one'], 'federations')}."


def rescore_cost(res: Rescore | None) -> str:
    """The runs retrained, their CPU time, and how many matched the committed runs."""
    if res is None:
        return "nothing here (not computed)"
    if not res.reused:
        return cost_text(res.record, f" for {res.rescored_seeds} seeds")
    return (
        f"{cost_text(res.record, f' for {res.rescored_seeds - res.reused} seeds')}; the "
        f"{res.reused} seeds of the evaluation rung above were read from its store, not trained "
        "again"
    )


def cost_text(record: dict, what: str = "") -> str:
    """A rescore's record in words: runs, CPU time, and how many matched their committed runs."""
    r = record
    same = (
        "every one identical to its committed run, row for row"
        if r["identical_to_committed"] == r["runs"]
        else f"{r['identical_to_committed']} of them identical to their committed runs "
        f"(largest difference {r['max_abs_diff']:.2g})"
    )
    return (
        f"{r['runs']:,} runs trained again{what}, "
        f"{r['cpu_seconds'] / 3600:.1f} CPU-hours in all, each run on one core; {same}"
    )
