"""Two protocols' verdicts side by side: protocol A (the book's, or the earlier one) and
protocol B (a study's). Every before/after section of chapters 04 and 04b (each split at its own
rate, larger test sets, larger validation sets, the evaluation rung) asks the same of two such
readings: the table of both, which verdicts changed, one sentence, and what B cost.

The comparison frame holds one row per test and, per protocol ``a`` and ``b``, the mean regret
(``a``), its 95 % interval (``a_lo``, ``a_hi``) and the verdict (``a_verdict``); ``changed`` is
true where the verdicts differ."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from playerfl_core.book.prose import changes_verdicts, moved_text
from playerfl_core.book.reports.tables import in_order, interval_text, signed
from playerfl_core.book.style import dataset_label


def r1_verdicts(regrets: pd.DataFrame) -> pd.DataFrame:
    """R1's test per federation (Holm over the federations of ``regrets``)."""
    from playerfl_core.stats.split_verdicts import VERDICT_WORDS, r1_family

    rows = [(ds, VERDICT_WORDS["oracle"][e.verdict], e.p_adjusted, float(r.mean()))
            for ds, r, e in r1_family(regrets)]  # fmt: skip
    return pd.DataFrame(rows, columns=["dataset", "verdict", "p_holm", "mean"])


def r1_side_by_side(a_regrets: pd.DataFrame, b_regrets: pd.DataFrame) -> pd.DataFrame:
    """R1 under both protocols, per federation of ``b_regrets`` (the paper's rule's regrets, one
    row per dataset and seed): the seeds, the rule's modal split, per protocol the modal oracle
    split (``a_oracle``), the mean regret with its interval and the verdict. A's side is read on
    the seeds B holds; each verdict comes from its own protocol's family (A: every federation and
    seed of ``a_regrets``; B: every federation of ``b_regrets``). Rows in A's order."""
    from playerfl_core.study.split_oracle import interval

    verdicts = {"a": r1_verdicts(a_regrets).set_index("dataset"),
                "b": r1_verdicts(b_regrets).set_index("dataset")}  # fmt: skip
    rows = []
    for ds, b in b_regrets.groupby("dataset", sort=False):
        a = a_regrets[(a_regrets["dataset"] == ds) & a_regrets["seed"].isin(b["seed"])]
        row = {"dataset": ds, "n_seeds": len(b), "p_rule": int(b["p_rule"].mode().iloc[0])}
        for side, regrets in (("a", a), ("b", b)):
            row[f"{side}_oracle"] = int(regrets["p_oracle"].mode().iloc[0])
            lo_hi = (side, f"{side}_lo", f"{side}_hi")
            row.update(zip(lo_hi, interval(regrets["regret"]), strict=True))
            row[f"{side}_verdict"] = verdicts[side].loc[ds, "verdict"]
        row["b_p_holm"] = verdicts["b"].loc[ds, "p_holm"]
        rows.append(row)
    out = pd.DataFrame(rows)
    out["changed"] = out["a_verdict"] != out["b_verdict"]
    return in_order(out, a_regrets["dataset"].unique())


def regret_cells(frame: pd.DataFrame, side: str) -> list[str]:
    """A protocol's mean regrets as shown: with their intervals, or signed where the protocol's
    intervals were not computed."""
    if f"{side}_lo" not in frame:
        return [signed(m) for m in frame[side]]
    return [interval_text(*r) for r in frame[[side, f"{side}_lo", f"{side}_hi"]].to_numpy()]


def table(
    frame: pd.DataFrame,
    a: tuple[str, str],
    b: tuple[str, str],
    first: dict | None = None,
    index: dict | None = None,
) -> pd.DataFrame:
    """The side-by-side table: one row per test, indexed by ``index`` (default: the
    federation), the ``first`` columns, then per protocol its regret column and its verdict
    column, labelled by ``a`` and ``b``."""
    index = index or {"federation": frame["dataset"].map(dataset_label)}
    return pd.DataFrame(
        {
            **index,
            **(first or {}),
            a[0]: regret_cells(frame, "a"),
            a[1]: frame["a_verdict"],
            b[0]: regret_cells(frame, "b"),
            b[1]: frame["b_verdict"],
        }
    ).set_index(list(index))


def changed(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows whose verdict changed."""
    return frame[frame["changed"]]


def moves(frame: pd.DataFrame, form: str = "{name} (from {a} to {b})") -> list[str]:
    """Each changed verdict in words, its federation named: "Heart (from within δ to undecided)"."""
    return [
        form.format(name=dataset_label(r.dataset), a=r.a_verdict, b=r.b_verdict)
        for r in changed(frame).itertuples()
    ]


def verdicts_changed(frame: pd.DataFrame) -> str:
    """ "changes 2 of the 5 verdicts (Heart and Digits)", or "changes none of the 13 verdicts"."""
    return changes_verdicts([dataset_label(d) for d in changed(frame)["dataset"]], len(frame))


def regrets_moved(frame: pd.DataFrame, of: str = "federations") -> str:
    """Which way B moved the mean regrets: "the mean regret is higher on 6 and lower on 7 of the
    13 federations"."""
    return moved_text(frame["b"], frame["a"], of)


def summary(frame: pd.DataFrame, what: str, moved: str = "", of: str = "federations") -> str:
    """One sentence: ``what`` (the change of protocol, as a subject) changes which of the
    verdicts, then ``moved`` (when given) and which way B moved the mean regrets."""
    return f"{what} {verdicts_changed(frame)}{moved}; {regrets_moved(frame, of)}."


@dataclass(frozen=True)
class Cost:
    """What protocol B cost, from its store's record: runs and CPU-seconds, and for a protocol
    that trained runs again, how many came out identical to the committed ones."""

    runs: int
    cpu_seconds: float
    identical: int | None = None
    max_abs_diff: float | None = None

    @classmethod
    def of(cls, record: dict) -> Cost:
        return cls(record["runs"], record["cpu_seconds"], record.get("identical_to_committed"),
                   record.get("max_abs_diff"))  # fmt: skip

    @property
    def hours(self) -> str:
        return f"{self.cpu_seconds / 3600:.1f} CPU-hours"

    def time(self) -> str:
        """CPU-hours, or CPU-minutes below one hour."""
        return (
            self.hours if self.cpu_seconds >= 3600 else f"{self.cpu_seconds / 60:.0f} CPU-minutes"
        )

    def per_run(self, note: str = "") -> str:
        """ "2.4 CPU-hours for its 120 runs (72 CPU-seconds per run, one thread<note>)"."""
        return (
            f"{self.hours} for its {self.runs} runs "
            f"({self.cpu_seconds / self.runs:.0f} CPU-seconds per run, one thread{note})"
        )

    def retrained(self, what: str = "") -> str:
        """Runs trained again, their CPU time, and how many matched their committed runs."""
        same = (
            "every one identical to its committed run, row for row"
            if self.identical == self.runs
            else f"{self.identical} of them identical to their committed runs "
            f"(largest difference {self.max_abs_diff:.2g})"
        )
        return (
            f"{self.runs:,} runs trained again{what}, {self.hours} in all, each run on one "
            f"core; {same}"
        )
