"""Numbers, tables and sentences of chapter 04 ("Does the rule pick the right split?"): the
split sweep against the rule, heterogeneity, stability and C5 at one learning rate."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from data_prep import load
from playerfl_core.book.prose import counted
from playerfl_core.book.style import algorithm_label, dataset_label
from playerfl_core.study import split_oracle as O


@dataclass
class SweepAnalysis:
    """What the chapter derives from one sweep table (see
    :mod:`playerfl_core.study.split_oracle`)."""

    scores: pd.DataFrame
    rules: pd.DataFrame
    regrets: pd.DataFrame
    summary: pd.DataFrame
    regret_summary: pd.DataFrame
    n_units: dict

    @property
    def paper_regrets(self) -> pd.DataFrame:
        """Regrets of the paper's rule (not of its variants)."""
        return self.regrets[self.regrets["variant"] == "paper"]


def analyse_sweep(table: pd.DataFrame, datasets) -> SweepAnalysis:
    scores = O.sweep_scores(table)
    rules = O.rule_splits(O.table_sensitivities(table))
    reg = O.regrets(scores, rules)
    return SweepAnalysis(
        scores=scores,
        rules=rules,
        regrets=reg,
        summary=O.sweep_summary(scores),
        regret_summary=O.regret_summary(reg[reg["variant"] == "paper"], by=["dataset"]),
        n_units={ds: int(scores.loc[scores["dataset"] == ds, "p"].max()) for ds in datasets},
    )


def _of(k: int, n: int) -> str:
    return f"{k} of {n}"


def regret_numbers(regret_sum: pd.DataFrame) -> dict:
    """Glue values: per dataset the mean regret (rounded to the 3 decimals it is quoted at), its CI,
    how often the rule hit the oracle, and a Markdown list of all."""
    out, lines = {}, []
    for r in regret_sum.itertuples():
        same, near = int(round(r.same * r.n_seeds)), int(round(r.within_one * r.n_seeds))
        out[f"{r.dataset}_regret"] = round(float(r.mean), 3)  # the precision it is quoted at
        out[f"{r.dataset}_regret_ci"] = f"[{r.lo:.3f}, {r.hi:.3f}]"
        out[f"{r.dataset}_same"] = _of(same, r.n_seeds)
        lines.append(
            f"- {dataset_label(r.dataset)}: mean regret {r.mean:.3f} (95 % CI [{r.lo:.3f}, "
            f"{r.hi:.3f}], {counted(r.n_seeds, 'seed')}); the rule picked the oracle's split in "
            f"{_of(same, r.n_seeds)} seeds and was within one unit of it in {near}."
        )
    out["regret_lines"] = "\n".join(lines)
    return out


def client_names(datasets, profile: str, seed: int) -> dict[str, list[str]]:
    return {ds: [c.name for c in load(ds, profile=profile, seed=seed).clients] for ds in datasets}


def client_lines(regrets: pd.DataFrame, curves: pd.DataFrame) -> str:
    """Markdown: at the rule's most frequent split, how many clients gain or lose over Local."""
    rule_mode = regrets.groupby("dataset")["p_rule"].agg(lambda v: int(v.mode().iloc[0]))
    at_rule = curves.merge(
        rule_mode.rename("p_rule"), left_on=["dataset", "p"], right_on=["dataset", "p_rule"]
    )
    return "\n".join(
        f"- {dataset_label(ds)} (rule's most frequent p = {rule_mode[ds]}): "
        f"{_of(int((g['gain'] > 0).sum()), len(g))} clients gain over Local on average, "
        f"{int((g['gain'] < 0).sum())} lose."
        for ds, g in at_rule.groupby("dataset")
    )


def heterogeneity_plan(bases: str, alphas: str, kinds: str, mixed: str) -> pd.DataFrame:
    """The heterogeneity federations from the chapter's comma-separated parameters (mixed:
    ``kind:alpha`` items)."""
    return O.heterogeneity_federations(
        bases=[b.strip() for b in str(bases).split(",") if b.strip()],
        alphas=[float(a) for a in str(alphas).split(",") if a],
        kinds=[k for k in str(kinds).split(",") if k],
        mixed=[(m.split(":")[0], float(m.split(":")[1])) for m in str(mixed).split(",") if m],
    )


def analyse_heterogeneity(het: pd.DataFrame, fed_table: pd.DataFrame):
    """Per heterogeneity federation: rule and oracle splits, regret, the three reference
    scores; and each base's number of units."""
    scores = O.sweep_scores(het)
    rules = O.rule_splits(O.table_sensitivities(het))
    summary = O.heterogeneity_summary(scores, rules, fed_table)
    base = scores["dataset"].map(fed_table.set_index("dataset")["base"])
    units = scores.assign(base=base).groupby("base")["p"].max().to_dict()
    return summary, units


def heterogeneity_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The heterogeneity summary as shown: display names, three decimals."""
    cols = ["dataset", "family", "p_rule", "p_oracle", "regret", "lo", "hi"]
    refs = ["playerfl", "local", "fedavg"]
    shown = summary[[*cols, *refs, "n_seeds"]].round(3)
    shown = shown.assign(dataset=shown["dataset"].map(dataset_label))
    return shown.rename(columns={a: algorithm_label(a) for a in refs}).set_index("dataset")


def heterogeneity_numbers(summary: pd.DataFrame) -> dict:
    """Glue values: the federation with the largest regret, and the feature/mixed-skew lines."""
    worst = summary.sort_values("regret").iloc[-1]
    feat = summary[summary["family"] != "label skew"]
    return {
        "het_worst": f"{dataset_label(worst['dataset'])} (mean regret {worst['regret']:.3f}, "
        f"95 % CI [{worst['lo']:.3f}, {worst['hi']:.3f}])",
        "het_feature_lines": "\n".join(
            f"- {dataset_label(r.dataset)}: rule p = {r.p_rule}, oracle p = {r.p_oracle}; "
            f"PLayer-FL {r.playerfl:.3f} vs Local {r.local:.3f} and FedAvg {r.fedavg:.3f}"
            for r in feat.itertuples()
        ),
    }


def stability_sensitivities(datasets, n_seeds: int, profile: str, device) -> pd.DataFrame:
    """First-epoch sensitivities of seeds 0..n_seeds-1 of every dataset."""
    return pd.concat(
        [
            O.first_epoch_sensitivities(
                ds, range(int(n_seeds)), profile, device=device, progress=False
            )
            for ds in datasets
        ],
        ignore_index=True,
    )


def stability_lines(stab_summary: pd.DataFrame) -> str:
    """Markdown: per dataset, the paper's rule's most frequent split, how many distinct splits
    it picks over seeds, and how often it is within one unit of the oracle."""
    paper = stab_summary[stab_summary["variant"] == "paper"]
    return "\n".join(
        f"- {dataset_label(r.dataset)}: most frequent p = {r.modal_p} on {r.modal_share:.0%} of "
        f"seeds, {counted(r.distinct, 'distinct split')}; within one unit of the oracle "
        f"(p = {r.p_oracle}) on {r.within_one:.0%}."
        for r in paper.itertuples()
    )


def variant_lines(ablation: pd.DataFrame) -> str:
    """Markdown: per dataset, the rule variant with the lowest mean regret."""
    best = ablation.sort_values("mean").groupby("dataset").head(1)
    return "\n".join(
        f"- {dataset_label(r.dataset)}: lowest mean regret with '{r.variant}' ({r.mean:.3f}, CI "
        f"[{r.lo:.3f}, {r.hi:.3f}], {counted(r.n_seeds, 'seed')})"
        for r in best.itertuples()
    )


def by_dataset(frame: pd.DataFrame, index, decimals: int = 3) -> pd.DataFrame:
    """A summary table as shown: datasets in display names, rounded, indexed by ``index``."""
    shown = frame.assign(dataset=frame["dataset"].map(dataset_label)).round(decimals)
    return shown.set_index(index)
