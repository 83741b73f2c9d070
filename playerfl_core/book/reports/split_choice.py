"""Numbers, tables and sentences of chapter 04 ("Does the rule pick the right split?"): the
split sweep against the rule, heterogeneity, stability and C5 at one learning rate."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from data_prep import load
from playerfl_core.book.prose import counted, listed
from playerfl_core.book.reports.table_text import and_list
from playerfl_core.book.reports.tables import in_order, interval_text, show, signed, with_intervals
from playerfl_core.book.style import algorithm_label, dataset_label
from playerfl_core.stats import claims as C
from playerfl_core.study import split_oracle as O
from playerfl_core.study.grid import MissingResultsError, run_grid
from playerfl_core.study.split_scores import split_counts


@dataclass
class SweepAnalysis:
    """What the chapter derives from one sweep table (:mod:`playerfl_core.study.split_oracle`)."""

    scores: pd.DataFrame
    rules: pd.DataFrame
    regrets: pd.DataFrame
    summary: pd.DataFrame
    regret_summary: pd.DataFrame
    n_units: dict
    variant_regrets: pd.DataFrame
    """Regrets of the paper's rule and of each pooling variant on the same seeds."""


def analyse_sweep(table: pd.DataFrame, datasets) -> SweepAnalysis:
    """Every result of the split sweep, each dataset's rows in ``datasets``' order."""
    scores = in_order(O.sweep_scores(table), datasets)
    rules = O.rule_splits(O.table_sensitivities(table))
    reg = O.regrets(scores, rules)
    return SweepAnalysis(
        scores=scores,
        rules=rules,
        regrets=reg,
        summary=in_order(O.sweep_summary(scores), datasets),
        regret_summary=O.regret_summary(reg[reg["variant"] == "paper"], by=["dataset"]),
        n_units={ds: int(scores.loc[scores["dataset"] == ds, "p"].max()) for ds in datasets},
        variant_regrets=O.variant_regrets(scores, rules),
    )


def regret_numbers(regret_sum: pd.DataFrame) -> dict:
    """Glue values: per dataset the mean regret, its CI, oracle hits, and a Markdown list of all."""
    out, lines, brief = {}, [], []
    for r in regret_sum.itertuples():
        same, near = int(round(r.same * r.n_seeds)), int(round(r.within_one * r.n_seeds))
        hits = f"{same} of {r.n_seeds}"
        out[f"{r.dataset}_regret"] = round(float(r.mean), 3)  # the precision it is quoted at
        out[f"{r.dataset}_regret_ci"] = f"[{signed(r.lo)}, {signed(r.hi)}]"
        out[f"{r.dataset}_same"] = hits
        name, regret = dataset_label(r.dataset), interval_text(r.mean, r.lo, r.hi)
        lines.append(
            f"- {name}: mean regret {regret}, 95 % CI over {counted(r.n_seeds, 'seed')}; the rule "
            f"picked the oracle's split in {hits} seeds and was within one unit "
            f"of it in {near}."
        )
        brief.append(f"{name} {regret}, the oracle's split on {hits} seeds")
    out["regret_lines"] = "\n".join(lines)
    out["regret_caption"] = "; ".join(brief)  # one line, for a caption or the Result box
    return out


def client_names(datasets, profile: str, seed: int) -> dict[str, list[str]]:
    return {ds: [c.name for c in load(ds, profile=profile, seed=seed).clients] for ds in datasets}


def client_curves(table: pd.DataFrame, datasets) -> pd.DataFrame:
    """Each client's mean gain over Local per (dataset, client, p), in ``datasets``' order."""
    return in_order(O.client_curve_summary(O.client_curves(table)), datasets)


def _gains_at_rule(regrets: pd.DataFrame, curves: pd.DataFrame):
    """Per dataset: the rule's most frequent p and how many clients gain and lose over Local."""
    rule_ps = regrets.groupby("dataset", sort=False)["p_rule"]
    rule_mode = rule_ps.agg(lambda v: int(v.mode().iloc[0]))
    at_rule = curves.merge(
        rule_mode.rename("p_rule"), left_on=["dataset", "p"], right_on=["dataset", "p_rule"]
    )
    for ds, p in rule_mode.items():
        gain = at_rule.loc[at_rule["dataset"] == ds, "gain"]
        if len(gain):
            yield ds, p, int((gain > 0).sum()), int((gain < 0).sum()), len(gain)


def client_lines(regrets: pd.DataFrame, curves: pd.DataFrame) -> str:
    """Markdown: at the rule's most frequent split, how many clients gain or lose over Local."""
    return "\n".join(
        f"- {dataset_label(ds)} (rule's most frequent p = {p}): {gain} of {n} clients gain over "
        f"Local on average, {lose} lose."
        for ds, p, gain, lose, n in _gains_at_rule(regrets, curves)
    )


def client_caption(regrets: pd.DataFrame, curves: pd.DataFrame) -> str:
    """One line for the figure's caption: clients that gain at the rule's most frequent split."""
    parts = [
        f"{dataset_label(ds)} {gain} of {n} (p = {p})"
        for ds, p, gain, _, n in _gains_at_rule(regrets, curves)
    ]
    return "At the rule's most frequent split, clients that gain over Local: " + "; ".join(parts)


def heterogeneity_plan(bases: str, alphas: str, kinds: str, mixed: str) -> pd.DataFrame:
    """The heterogeneity federations from the chapter's comma-separated parameters."""
    return O.heterogeneity_federations(
        bases=[b.strip() for b in str(bases).split(",") if b.strip()],
        alphas=[float(a) for a in str(alphas).split(",") if a],
        kinds=[k for k in str(kinds).split(",") if k],
        mixed=[(m.split(":")[0], float(m.split(":")[1])) for m in str(mixed).split(",") if m],
    )


def analyse_heterogeneity(het: pd.DataFrame, fed_table: pd.DataFrame):
    """The per-federation summary, each base's number of units, and the per-seed regrets."""
    scores = in_order(O.sweep_scores(het), fed_table["dataset"])  # the plan's order
    rules = O.rule_splits(O.table_sensitivities(het))
    summary = O.heterogeneity_summary(scores, rules, fed_table)
    base = scores["dataset"].map(fed_table.set_index("dataset")["base"])
    units = scores.assign(base=base).groupby("base")["p"].max().to_dict()
    per_seed = O.regrets(scores, rules).merge(fed_table[["dataset", "family"]], on="dataset")
    return summary, units, per_seed


def heterogeneity_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The heterogeneity summary as shown: splits as counts, regret with interval, references."""
    refs = ["playerfl", "local", "fedavg"]
    shown = pd.DataFrame(
        {
            "federation": summary["dataset"].map(dataset_label),
            "kind": summary["family"],
            "rule's p (p×seeds)": summary["rule_ps"].map(split_counts),
            "oracle's p (p×seeds)": summary["oracle_ps"].map(split_counts),
            "regret (95 % CI)": [
                interval_text(r.regret, r.lo, r.hi, 3) for r in summary.itertuples()
            ],
            **{algorithm_label(a): summary[a].round(3) for a in refs},
            "seeds": summary["n_seeds"],
        }
    )
    return shown.set_index("federation")


def heterogeneity_numbers(summary: pd.DataFrame) -> dict:
    """Glue values: per base how the rule's and the oracle's splits move with heterogeneity, in
    Markdown: the rule's splits over its seeds, the oracle's median per federation."""
    lines = []
    for base, g in summary.groupby("base", sort=False):
        g = g.sort_values("order")
        rule = [p for ps in g["rule_ps"] for p in ps]
        oracle = (
            "; ".join(  # "α = 0.05: 1; α = 0.1: 3": "α=0.05 1; α=0.1 3" reads as one number run
                f"{r.level.replace('+', ' + ').replace('=', ' = ')}: {np.median(r.oracle_ps):g}"
                for r in g.itertuples()
            )
        )
        moves = "does not move" if len(set(rule)) == 1 else "moves"
        lines.append(
            f"- {dataset_label(base)}: the rule {moves}: p {split_counts(rule)} over the "
            f"{len(rule)} seeds of its {len(g)} federations. Oracle's median p per federation: "
            f"{oracle}."
        )
    return {"het_movement_lines": "\n".join(lines)}


def stability_seeds_text(stab_summary: pd.DataFrame) -> str:
    """How many seeds the stability study read per dataset: "50 (Heart), 10 (Digits) and …"."""
    paper = stab_summary[stab_summary["variant"] == "paper"]
    return and_list([f"{r.n_seeds} ({dataset_label(r.dataset)})" for r in paper.itertuples()])


STABILITY_COLUMNS = {
    "p_oracle": "best p on mean validation",
    "same": "share at that p",
    "within_one": "share within 1 of it",
}
"""The stability table's reference is one split per dataset, not each seed's oracle."""


def stability_table(stab_summary: pd.DataFrame, caption: str):
    """The stability table as shown (:data:`STABILITY_COLUMNS` names its reference)."""
    return by_dataset(stab_summary.rename(columns=STABILITY_COLUMNS), ["dataset", "variant"],
                      decimals=2, caption=caption)  # fmt: skip


def stability_caption(stab_summary: pd.DataFrame) -> str:
    """Caption line: the paper's rule's most frequent split, its share, the best on validation."""
    paper = stab_summary[stab_summary["variant"] == "paper"]
    parts = [
        f"{dataset_label(r.dataset)} p = {r.modal_p} on {r.modal_share:.0%} of seeds (best "
        f"on mean validation: p = {r.p_oracle})"
        for r in paper.itertuples()
    ]
    return "The paper's rule picks " + "; ".join(parts)


def near_threshold_table(near: pd.DataFrame, margin: float):
    """The regret of seeds whose decision was close to t against the others'."""
    caption = (f"Regret of seeds whose decision was close to the rule's rise threshold t (a rise "
               f"within {margin:g}·t of t) against the others")  # fmt: skip
    if (near["n_seeds"] < 2).any():
        caption += "; – where a group holds a single seed, which gives no interval"
    shown = near.assign(near=near["near"].map({True: "yes", False: "no"}))
    return by_dataset(shown, ["dataset", "near"], value_name="mean regret (95 % CI)",
                      caption=caption)  # fmt: skip


def sweep_caption(regrets: pd.DataFrame) -> str:
    """Caption line of a one-dataset sweep figure: both splits over seeds and the mean regret."""
    paper = regrets[regrets["variant"] == "paper"]
    m, lo, hi = O.interval(paper["regret"])
    return (
        f"Rule's p: {split_counts(paper['p_rule'])}; oracle's p: {split_counts(paper['p_oracle'])} "
        f"(p×seeds); mean regret {interval_text(m, lo, hi)}"
    )


def c5_caption(c5_sum: pd.DataFrame) -> str:
    """Caption line: the rule's split against PLayer-FL-Random's draw, per dataset."""
    drawn = c5_sum[c5_sum["other"] == "random (drawn)"]
    parts = [f"{dataset_label(r.dataset)} {interval_text(r.mean, r.lo, r.hi)}"
             for r in drawn.itertuples()]  # fmt: skip
    return "Against the split PLayer-FL-Random draws: " + "; ".join(parts)


def by_dataset(
    frame: pd.DataFrame,
    index,
    decimals: int = 3,
    caption: str | None = None,
    value_name: str | None = None,
    best=None,
):
    """A summary table as shown, indexed by ``index``: ``mean``/``lo``/``hi`` as one column named
    ``value_name``; a seeds column equal on every row goes into the caption."""
    shown = frame.assign(dataset=frame["dataset"].map(dataset_label))
    caption = caption or ""
    if "n_seeds" in shown.columns and shown["n_seeds"].nunique() == 1:
        caption += f" ({counted(int(shown['n_seeds'].iloc[0]), 'seed')} per row)"
        shown = shown.drop(columns="n_seeds")
    if {"mean", "lo", "hi"} <= set(shown.columns):
        shown = with_intervals(shown, decimals=decimals, name=value_name)
    shown = shown.set_index(index)
    return show(shown, decimals=decimals, index=True, caption=caption or None, best=best)


def heterogeneity_tables(summary: pd.DataFrame):
    """:func:`heterogeneity_table` as two tables that fit the page: the splits and the scores."""
    table = heterogeneity_table(summary)
    split_columns = ["kind", "rule's p (p×seeds)", "oracle's p (p×seeds)", "seeds"]
    splits = (
        "The splits per federation: every seed's p, written p×(number of seeds), chosen by "
        "the paper's rule and by the oracle (the split best on validation data). The closer "
        "the two lists, the better the rule."
    )
    scores = (
        "Scores per federation on the book's evaluation sets (the headline regrets, on "
        "larger sets where computed, are the verdict list's): the rule's mean regret (the "
        "oracle split's macro-F1 minus the rule split's; lower is better) with its 95 % "
        "interval over seeds, and the mean test macro-F1 of PLayer-FL (the rule's split), "
        "Local (p = 0) and FedAvg (all units shared)."
    )
    rest = table.drop(columns=split_columns)
    return (
        show(table[split_columns], index=True, caption=splits),
        show(rest, decimals=3, index=True, caption=scores),
    )


def seed_range(regrets: pd.DataFrame) -> str:
    """ "10" or "5–10": the number of seeds per federation."""
    n = regrets.groupby("dataset")["seed"].nunique()
    return f"{n.min()}" if n.min() == n.max() else f"{n.min()}–{n.max()}"


def tuned_runs(profile: str, datasets) -> pd.DataFrame | None:
    """The stored comparison grid of ``profile`` on ``datasets``; None when it lacks any run."""
    try:
        return run_grid(list(datasets), "all", profile, compute=False, progress=False).table
    except MissingResultsError:
        return None


def r1_answer(verdicts: pd.DataFrame) -> str:
    """The chapter's question answered in one plain sentence from R1's parts: on how many
    federations the rule's split is as good as the oracle's, clearly worse, or undecided."""
    v = verdicts.loc[verdicts["claim"] == "oracle", "verdict"]
    n = len(v)
    same = "the rule's split is as good as the best split found by training every split"
    if (v == "supported").all():
        return f"Yes: on {'the one federation' if n == 1 else f'all {n} federations'}, {same}."
    worse, open_ = "the rule's split is clearly worse", "the seeds cannot tell"
    parts = []
    for verdict, said in {"supported": same, "contradicted": worse, "undecided": open_}.items():
        if k := int((v == verdict).sum()):
            parts.append(f"on {f'{k} of the {n} federations' if not parts else k} {said}")
    head = "Not on every federation" if (v == "contradicted").any() else "Not shown"
    return f"{head}: {listed(parts)}."


def r1_counts(verdicts: pd.DataFrame) -> dict[str, int]:
    """R1's parts by verdict, for the intro: within δ, beyond δ, and how many in all."""
    v = verdicts.loc[verdicts["claim"] == "oracle", "verdict"]
    return {"r1_within": int((v == "supported").sum()),
            "r1_beyond": int((v == "contradicted").sum()), "r1_federations": len(v)}  # fmt: skip


CLAIM_WORDS = {
    "oracle": ("R1", "the rule's split is as good as the validation oracle's on every federation "
                     "(mean regret within δ)"),
    "C5": ("C5", "the rule's split beats a random one"),
}  # fmt: skip
MEANING = {
    "contradicted": "some part of it is decided against it",
    "supported": "every part of it is decided for it",
    "undecided": "no part is decided against it, and not every part for it",
}


def claim_sentence(verdicts: pd.DataFrame, claim: str, restate: bool = True) -> str:
    """ "**Claim R1 is contradicted** …": the verdict of ``claim``'s parts combined
    (``claims.combine``), then (with ``restate``) what the claim says, and why."""
    rows = verdicts[verdicts["claim"] == claim]
    parts = [
        C.Evidence(part=r.dataset, test="", estimate=r.estimate, n=r.n_seeds, replicates="seeds",
                   pvalue=r.p, min_pvalue=0.0, verdict=r.verdict, strength=r.strength)
        for r in rows.itertuples()
    ]  # fmt: skip
    combined = C.combine(parts)
    reason = (f"{combined.reason}, with Holm's adjustment over them" if len(parts) > 1
              else f"its one part is {combined.verdict}; no adjustment is needed")  # fmt: skip
    cid, statement = CLAIM_WORDS[claim]
    strength = f" ({combined.strength} evidence)" if combined.strength != "none" else ""
    said = f". It says {statement}; {MEANING[combined.verdict]}" if restate else (
        f": {MEANING[combined.verdict]}")  # fmt: skip
    return f"**Claim {cid} is {combined.verdict}**{strength}{said} ({reason})."
