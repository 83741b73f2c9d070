"""Chapter 04's fair sweep (item 12 of ``study.preregistration``): the paper's rule's regret with
every split at PLayer-FL's rate and with every split at its own tuned rate, side by side, each
tested as R1 is (its own family), and the rate each split was tuned to."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from playerfl_core.book.prose import changes_verdicts
from playerfl_core.book.reports.tables import in_order, interval_text
from playerfl_core.book.style import dataset_label
from playerfl_core.stats.split_verdicts import VERDICT_WORDS, r1_family
from playerfl_core.study import fair_sweeps as F
from playerfl_core.study import split_oracle as O


@dataclass
class FairSweep:
    """The fair sweep read against the one-rate sweep on the same seeds."""

    rates: pd.DataFrame
    """:func:`~playerfl_core.study.fair_sweeps.own_rates`."""
    regrets: pd.DataFrame
    """Own-rate regrets (:func:`~playerfl_core.study.split_scores.regrets`, paper's rule)."""
    comparison: pd.DataFrame
    """Per federation: both regrets, verdicts and modal oracle splits (:func:`compare`)."""
    runs: int
    cpu_seconds: float
    missing: tuple[str, ...] = ()
    """Declared federations (``fair_sweeps.DATASETS``) the archive does not hold yet."""


def _verdicts(regrets: pd.DataFrame) -> pd.DataFrame:
    """R1's test per federation (Holm over the federations of ``regrets``)."""
    rows = [(ds, VERDICT_WORDS["oracle"][e.verdict], e.p_adjusted, float(r.mean()))
            for ds, r, e in r1_family(regrets)]  # fmt: skip
    return pd.DataFrame(rows, columns=["dataset", "verdict", "p_holm", "mean"])


def compare(one_rate: pd.DataFrame, own_rate: pd.DataFrame) -> pd.DataFrame:
    """Per federation of ``own_rate``: mean regret with its 95 % interval at one rate, on the
    seeds ``own_rate`` holds (its verdict from ``one_rate``'s R1 family: every federation and
    seed it holds) and at own rates (the family of every federation ``own_rate`` holds), the
    modal oracle split under each, and whether the verdicts differ. Read for the fair sweep
    (item 12) and for R1's rescore on large test sets (item 15, ``book.reports.r1_rescore``)."""
    one_v, own_v = (
        _verdicts(one_rate).set_index("dataset"),
        _verdicts(own_rate).set_index("dataset"),
    )
    rows = []
    for ds, own in own_rate.groupby("dataset", sort=False):
        one = one_rate[(one_rate["dataset"] == ds) & one_rate["seed"].isin(own["seed"])]
        rows.append(
            {
                "dataset": ds,
                "n_seeds": len(own),
                "p_rule": int(own["p_rule"].mode().iloc[0]),
                "one_oracle": int(one["p_oracle"].mode().iloc[0]),
                "own_oracle": int(own["p_oracle"].mode().iloc[0]),
                **dict(zip(("one", "one_lo", "one_hi"), O.interval(one["regret"]), strict=True)),
                "one_verdict": one_v.loc[ds, "verdict"],
                **dict(zip(("own", "own_lo", "own_hi"), O.interval(own["regret"]), strict=True)),
                "own_verdict": own_v.loc[ds, "verdict"],
                "own_p_holm": own_v.loc[ds, "p_holm"],
            }
        )
    out = pd.DataFrame(rows)
    out["differs"] = out["one_verdict"] != out["own_verdict"]
    return in_order(out, one_rate["dataset"].unique())  # the chapter's order, as its other tables


def analyse(one_rate_regrets: pd.DataFrame, rules: pd.DataFrame) -> FairSweep | None:
    """The committed fair sweep against ``one_rate_regrets`` (the paper's rule, every swept
    federation) with the rule's splits ``rules`` of the one-rate sweep; None when not committed
    or when ``rules`` lacks its federations (a chapter run on other data)."""
    from playerfl_core.study.archive import archive_dir, read_manifest

    committed = F.load()
    if committed is None:
        return None
    table, manifest = committed
    held = [d for d in F.DATASETS if d in set(table["dataset"])]
    if not held or not set(held) <= set(rules["dataset"]):
        return None
    rates = F.own_rates(table, manifest)
    regrets = O.regrets(F.own_rate_scores(table, rates), rules)
    runs, cpu = F.cost(manifest, read_manifest(archive_dir(F.PROFILE)))
    missing = tuple(d for d in F.DATASETS if d not in held)
    return FairSweep(rates, regrets, compare(one_rate_regrets, regrets), runs, cpu, missing)


def comparison_table(fair: FairSweep) -> pd.DataFrame:
    """The comparison as shown: one row per federation."""
    c = fair.comparison
    return pd.DataFrame(
        {
            "federation": c["dataset"].map(dataset_label),
            "seeds": c["n_seeds"],
            "rule's p": c["p_rule"],
            "oracle's p, one rate": c["one_oracle"],
            "oracle's p, own rates": c["own_oracle"],
            "regret, one rate": [
                interval_text(*r) for r in c[["one", "one_lo", "one_hi"]].to_numpy()
            ],
            "verdict, one rate": c["one_verdict"],
            "regret, own rates": [
                interval_text(*r) for r in c[["own", "own_lo", "own_hi"]].to_numpy()
            ],
            "verdict, own rates": c["own_verdict"],
        }
    ).set_index("federation")


def rates_table(fair: FairSweep) -> pd.DataFrame:
    """Per federation and split: the tuned rate, starred where it sits at an edge of the rates
    tried; a dash where the federation's model has no such split; the one-rate sweep's rate in
    the last column."""
    pairs = zip(fair.rates["lr"], fair.rates["at_edge"], strict=True)
    r = fair.rates.assign(shown=[f"{lr:g}{'*' if edge else ''}" for lr, edge in pairs])
    wide = r.pivot(index="dataset", columns="p", values="shown").fillna("–")
    wide.columns = [f"p = {p}" for p in wide.columns]
    wide["one rate"] = [f"{F.sweep_lr(ds):g}" for ds in wide.index]
    wide = wide.loc[
        [d for d in fair.comparison["dataset"] if d in wide.index]
    ]  # as the table above
    wide.index = wide.index.map(dataset_label).rename("federation")
    return wide


def rates_caption(fair: FairSweep) -> str:
    """The caption of :func:`rates_table`: it explains a star only where one is shown."""
    edges = int(fair.rates["at_edge"].sum())
    star = (
        f"* at an edge of the rates tried, after widening: {edges} of {len(fair.rates)} splits"
        if edges
        else f"none of the {len(fair.rates)} tuned rates sits at an edge of the rates tried, "
        "after widening"
    )
    return (
        f"The learning rate each split was tuned to ({star}; – where the federation's model has "
        "no such split), and the one rate every split of the one-rate sweep trains at."
    )


def fair_lines(fair: FairSweep) -> str:
    """One Markdown line per federation, and one on how many verdicts moved."""
    lines = []
    for _, r in fair.comparison.iterrows():
        moved = (f"**{r['one_verdict']}** at one rate, **{r['own_verdict']}** at own rates"
                 if r["differs"] else f"**{r['own_verdict']}** under both")  # fmt: skip
        one = interval_text(r["one"], r["one_lo"], r["one_hi"])
        own = interval_text(r["own"], r["own_lo"], r["own_hi"])
        lines.append(
            f"- {dataset_label(r['dataset'])}: mean regret {one} at one rate, {own} at own "
            f"rates; {moved}."
        )
    if fair.missing:
        names = "; ".join(dataset_label(d) for d in fair.missing)
        lines.append(f"- Declared but not computed yet: {names}.")
    return "\n".join(lines)


def fair_summary(fair: FairSweep) -> str:
    """One sentence: how many verdicts the fair sweep changes and in which direction the mean
    regret moved."""
    c = fair.comparison
    up = int((c["own"] > c["one"]).sum())
    differs = c[c["differs"]]
    which = changes_verdicts([dataset_label(d) for d in differs["dataset"]], len(c))
    return (
        f"Training every split at its own rate {which}; the mean regret is larger at own rates "
        f"on {up} of the {len(c)} federations."
    )


def fair_cost(fair: FairSweep) -> str:
    """The runs the fair sweep added to the one-rate archive and their CPU time."""
    hours = fair.cpu_seconds / 3600
    spent = f"{hours:.1f} CPU-hours" if hours >= 1 else f"{fair.cpu_seconds / 60:.0f} CPU-minutes"
    return f"{fair.runs} runs beyond the committed one-rate sweep, {spent} where they ran"


def r1_note(fair: FairSweep | None) -> str:
    """The sentence the scorecard's R1 adds: which federations' verdicts differ at own rates
    (both sides on the book's test sets: item 12's runs are not rescored)."""
    if fair is None:
        return ""
    c = fair.comparison
    differs = c[c["differs"]]
    head = (
        f"With every split trained at its own tuned rate ({len(c)} federations, on the book's "
        "test sets; chapter 04)"
    )
    if differs.empty:
        return f"{head} no verdict changes"
    moved = [
        f"{dataset_label(r['dataset'])} (from {r['one_verdict']} to {r['own_verdict']})"
        for _, r in differs.iterrows()
    ]
    listed = moved[0] if len(moved) == 1 else f"{', '.join(moved[:-1])} and {moved[-1]}"
    return f"{head}, the verdict moves on {listed}"
