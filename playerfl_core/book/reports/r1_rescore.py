"""Chapter 04's R1 at low evaluation noise (item 15 of ``study.preregistration``): per federation
with held-out images, the paper's rule's mean regret and R1's verdict with the book's test sets
and with 2,000 test images per client, side by side; each verdict from R1's family over every
swept federation (``fair_sweeps.compare``: ``one_*`` the book's test sets, ``own_*`` the large
ones)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from playerfl_core.book.reports import fair_sweeps as FS
from playerfl_core.book.reports.tables import interval_text
from playerfl_core.book.style import dataset_label
from playerfl_core.study import r1_rescore as RS


@dataclass
class Rescore:
    comparison: pd.DataFrame
    """Per rescored federation: ``fair_sweeps.compare``'s columns (``one_*``: the book's test
    sets; ``own_*``: :data:`~playerfl_core.study.r1_rescore.TEST_PER_CLIENT` images)."""
    record: dict
    rescored_seeds: int
    """Seeds whose regret the rescore replaced."""

    @property
    def images(self) -> str:
        return f"{self.record['test_per_client']:,} test images per client"


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


def comparison_table(res: Rescore) -> pd.DataFrame:
    """One row per rescored federation: seeds, both mean regrets with their intervals and both
    verdicts."""
    c = res.comparison
    return pd.DataFrame(
        {
            "federation": c["dataset"].map(dataset_label),
            "seeds": c["n_seeds"],
            "regret, book's test sets": [
                interval_text(*r) for r in c[["one", "one_lo", "one_hi"]].to_numpy()
            ],
            "verdict, book's test sets": c["one_verdict"],
            f"regret, {res.record['test_per_client']:,} images": [
                interval_text(*r) for r in c[["own", "own_lo", "own_hi"]].to_numpy()
            ],
            f"verdict, {res.record['test_per_client']:,} images": c["own_verdict"],
        }
    ).set_index("federation")


def rescore_lines(res: Rescore | None) -> str:
    """One Markdown line per verdict that changed, or one saying none did."""
    if res is None:
        return (
            "- Not computed for these federations: the rescore covers the committed sweeps of "
            "federations with held-out images (`python -m playerfl_core.study.r1_rescore`)."
        )
    changed = res.comparison[res.comparison["differs"]]
    if changed.empty:
        return f"- No verdict changes with {res.images}."
    return "\n".join(
        f"- {dataset_label(r['dataset'])}: **{r['one_verdict']}** with the book's test sets "
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
    which = ", ".join(dataset_label(d) for d in changed["dataset"]) or "none"
    lower = int((c["own"] < c["one"]).sum())
    return (
        f"Scoring the regrets on {res.images} changes {len(changed)} of the {len(c)} "
        f"verdicts ({which}); the mean regret is lower on {lower} of the {len(c)} federations."
    )


def rescore_cost(res: Rescore | None) -> str:
    """The runs retrained, their CPU time, and how many matched the committed runs."""
    if res is None:
        return "nothing here (not computed)"
    return cost_text(res.record, f" for {res.rescored_seeds} seeds")


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
        f"{r['runs']} runs trained again{what}, "
        f"{r['cpu_seconds'] / 3600:.1f} CPU-hours on one core each; {same}"
    )
