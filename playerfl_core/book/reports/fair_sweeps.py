"""Chapter 04's fair sweep: the paper's rule's regret with every split at PLayer-FL's rate (A)
and with every split at its own tuned rate (B), side by side (``protocol_comparison``), each
tested as R1 is, and the rate each split was tuned to."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from playerfl_core.book.prose import listed
from playerfl_core.book.reports import protocol_comparison as PC
from playerfl_core.book.reports.tables import interval_text
from playerfl_core.book.style import dataset_label
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
    """:func:`protocol_comparison.r1_side_by_side`: one rate (``a``), own rates (``b``)."""
    cost: PC.Cost
    """The runs the fair sweep added to the one-rate archive."""
    missing: tuple[str, ...] = ()
    """Declared federations (``fair_sweeps.DATASETS``) the archive does not hold yet."""


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
    cost = PC.Cost(*F.cost(manifest, read_manifest(archive_dir(F.PROFILE))))
    missing = tuple(d for d in F.DATASETS if d not in held)
    comparison = PC.r1_side_by_side(one_rate_regrets, regrets)
    return FairSweep(rates, regrets, comparison, cost, missing)


def comparison_table(fair: FairSweep) -> pd.DataFrame:
    """The comparison as shown: one row per federation."""
    c = fair.comparison
    first = {
        "seeds": c["n_seeds"],
        "rule's p": c["p_rule"],
        "oracle's p, one rate": c["a_oracle"],
        "oracle's p, own rates": c["b_oracle"],
    }
    return PC.table(c, ("regret, one rate", "verdict, one rate"),
                    ("regret, own rates", "verdict, own rates"), first)  # fmt: skip


def rates_table(fair: FairSweep) -> pd.DataFrame:
    """Per federation and split: the tuned rate, starred where it sits at an edge of the rates
    tried; a dash where the federation's model has no such split; the one-rate sweep's rate in
    the last column."""
    pairs = zip(fair.rates["lr"], fair.rates["at_edge"], strict=True)
    r = fair.rates.assign(shown=[f"{lr:g}{'*' if edge else ''}" for lr, edge in pairs])
    wide = r.pivot(index="dataset", columns="p", values="shown").fillna("–")
    wide.columns = [f"p = {p}" for p in wide.columns]
    wide["one rate"] = [f"{F.sweep_lr(ds):g}" for ds in wide.index]
    wide = wide.loc[[d for d in fair.comparison["dataset"] if d in wide.index]]  # as above
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
    """One Markdown line per federation, and one for declared federations not computed yet."""
    lines = []
    for r in fair.comparison.itertuples():
        moved = (f"**{r.a_verdict}** at one rate, **{r.b_verdict}** at own rates"
                 if r.changed else f"**{r.b_verdict}** under both")  # fmt: skip
        lines.append(
            f"- {dataset_label(r.dataset)}: mean regret {interval_text(r.a, r.a_lo, r.a_hi)} at "
            f"one rate, {interval_text(r.b, r.b_lo, r.b_hi)} at own rates; {moved}."
        )
    if fair.missing:
        names = "; ".join(dataset_label(d) for d in fair.missing)
        lines.append(f"- Declared but not computed yet: {names}.")
    return "\n".join(lines)


def fair_summary(fair: FairSweep) -> str:
    """One sentence: how many verdicts the fair sweep changes and on how many federations the
    mean regret is larger at own rates."""
    c = fair.comparison
    return (
        f"Training every split at its own rate {PC.verdicts_changed(c)}; the mean regret is "
        f"larger at own rates on {int((c['b'] > c['a']).sum())} of the {len(c)} federations."
    )


def fair_cost(fair: FairSweep) -> str:
    """The runs the fair sweep added to the one-rate archive and their CPU time."""
    cost = fair.cost
    return f"{cost.runs} runs beyond the committed one-rate sweep, {cost.time()} where they ran"


def r1_note(fair: FairSweep | None) -> str:
    """The sentence the scorecard's R1 adds: which federations' verdicts differ at own rates
    (both sides on the book's test sets: the fair sweep's runs are not rescored)."""
    if fair is None:
        return ""
    moved = PC.moves(fair.comparison)
    head = (
        f"With every split trained at its own tuned rate ({len(fair.comparison)} federations, on "
        "the book's test sets; chapter 04)"
    )
    return (
        f"{head}, the verdict moves on {listed(moved)}" if moved else f"{head} no verdict changes"
    )
