"""Tables, numbers and sentences of chapter 05 (PLayer-FL against the baselines, C3–C5)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from playerfl_core.book.reports import split_choice
from playerfl_core.book.reports.claim_answers import (
    PLAYER,
    c3_answer,
    c3_plain,
    c4_answer,
    c5_answer,
    rank_outcome,
)
from playerfl_core.book.reports.tables import MISSING, in_order, interval_text, p_text
from playerfl_core.book.style import algorithm_label, dataset_label
from playerfl_core.fl.names import tied_text
from playerfl_core.stats import claims as C
from playerfl_core.stats import metrics as M
from playerfl_core.stats.p_values import p_value_text
from playerfl_core.stats.results import chosen_splits
from playerfl_core.study import split_oracle as O

RANDOM = "playerfl_random"
METRICS = {
    "macro_f1": ("Test macro-F1", 1, 3),
    "accuracy": ("Test accuracy (%)", 100, 1),
    "loss": ("Test loss (cross-entropy)", 1, 3),
}
"""Each evaluation metric: title, scale and digits of its table."""


def by_algorithm(frame: pd.DataFrame) -> pd.DataFrame:
    """Algorithms (index) and datasets (columns) in display names."""
    out = frame.rename(index=algorithm_label)
    return out.rename(columns=lambda c: dataset_label(c) if isinstance(c, str) else c)


def grid_sizes(grid, table: pd.DataFrame, datasets) -> pd.DataFrame:
    """Per dataset: learning rates tried, tuning and evaluation seeds, runs."""
    rows = []
    for ds in datasets:
        status = grid.status[grid.status["dataset"] == ds]
        rows.append(
            {
                "dataset": dataset_label(ds),
                "learning rates tried": grid.tuning[grid.tuning["dataset"] == ds]["lr"].nunique(),
                "tuning seeds": status[status["stage"] != "eval"]["seed"].nunique(),
                "evaluation seeds": table[table["dataset"] == ds]["seed"].nunique(),
                "runs": len(status),
            }
        )
    return pd.DataFrame(rows).set_index("dataset")


def chosen_lrs(grid, order, datasets) -> pd.DataFrame:
    """The learning rate chosen per algorithm and dataset."""
    chosen = grid.chosen.pivot(index="algorithm", columns="dataset", values="lr")
    return by_algorithm(chosen.reindex(order)[list(datasets)].map(lambda v: f"{v:g}"))


def lr_edges(grid) -> tuple[pd.DataFrame, str]:
    """How many algorithms chose an edge of the LR grid, and 'k of n' for the prose."""
    edges = grid.lr_at_edges()
    at_edge = int(edges["at smallest"].sum() + edges["at largest"].sum())
    shown = edges.rename(index=dataset_label) if edges.index.name == "dataset" else edges
    return shown, f"{at_edge} of {int(edges['algorithms'].sum())}"


def ci_tables(table: pd.DataFrame, order, n_boot: int):
    """Per metric: the bootstrap summary, and its "median (95 % interval)" table for the page."""
    summaries = {m: M.summarize(table, m, n_boot=n_boot) for m in METRICS}
    shown = {
        title: by_algorithm(ci_table(summaries[m], scale, digits, order))
        for m, (title, scale, digits) in METRICS.items()
    }
    return summaries, shown


def ci_table(summary: pd.DataFrame, scale: float = 1.0, digits: int = 3, order=None):
    """Algorithms × datasets: each cell's median (× ``scale``) with its interval, and its seeds
    where fewer than its dataset's others ("8 seeds": a run was excluded)."""
    typical = summary.groupby("dataset")["n_seeds"].transform("max")

    def cell(r):
        m, lo, hi = (scale * r[c] for c in ("median", "ci_low", "ci_high"))
        text = interval_text(m, lo, hi, digits)
        return text + (f", {r['n_seeds']} seeds" if r["n_seeds"] < r["typical"] else "")

    s = summary.assign(typical=typical)
    return M.to_wide(s.assign(cell=s.apply(cell, axis=1)), "cell", order)


def client_names(datasets, profile: str) -> dict:
    names = split_choice.client_names(datasets, profile, seed=0)
    return {(ds, i): name for ds, ns in names.items() for i, name in enumerate(ns)}


def fairness_and_ipr(table: pd.DataFrame, order):
    """Per metric: fairness (variance of client medians) and IPR, algorithms × datasets; and the
    algorithms IPR is defined for (all but the references)."""
    others = [a for a in order if a not in M.REFERENCES]
    fair = {m: M.to_wide(M.fairness(table, m), "variance", order) for m in METRICS}
    incent = {m: M.to_wide(M.ipr(table, m), "ipr", order) for m in METRICS}
    return fair, incent, others


def fairness_table(fair: dict) -> pd.DataFrame:
    """Variance across clients of their median macro-F1, ×10³, to two decimals."""
    return by_algorithm((1e3 * fair["macro_f1"]).round(2))


def ipr_table(incent: dict, others) -> pd.DataFrame:
    """IPR (%) on every metric, for the algorithms it is defined for."""
    out = pd.concat({m: 100 * incent[m].loc[others] for m in incent}, axis=1).round(0)
    return out.rename(index=algorithm_label).rename(columns=dataset_label, level=1)


def ranks(summaries: dict, order):
    """Macro-F1 ranks over datasets, the Friedman test and Nemenyi's critical difference."""
    wide = M.to_wide(summaries["macro_f1"], "median", order)
    rank_table = M.rank_table(wide, higher_is_better=True)
    fried = M.friedman(wide, higher_is_better=True)
    return rank_table, fried, M.nemenyi_cd(fried.n_treatments, fried.n_blocks)


def rank_test_table(fried, cd: float) -> pd.DataFrame:
    """The Friedman test over datasets and the critical difference, as one row."""
    return pd.DataFrame(
        [
            {
                "algorithms": fried.n_treatments,
                "datasets (blocks)": fried.n_blocks,
                "χ²": round(fried.statistic, 3),
                "p": p_value_text(fried.pvalue),
                "Nemenyi CD (level 0.05, ranks)": round(cd, 2),
                "note": fried.message or "",
            }
        ]
    ).set_index("algorithms")


def within_dataset(table: pd.DataFrame, datasets, order) -> pd.DataFrame:
    """Per dataset, seeds as blocks: Friedman, PLayer-FL's and the best mean rank over seeds, and
    the Holm-adjusted Wilcoxon tests of PLayer-FL against each other algorithm."""
    runs = M.run_scores(table, "macro_f1")
    rows, friedman_p = [], {}
    for ds in datasets:
        on = runs[runs["dataset"] == ds]
        by_seed = on.pivot(index="algorithm", columns="seed", values="value").reindex(order)
        f = M.friedman(by_seed, higher_is_better=True)
        w = M.wilcoxon_holm(by_seed, PLAYER, higher_is_better=True)
        friedman_p[ds] = f.pvalue
        rows.append(
            {
                "dataset": ds,
                "seeds (blocks)": f.n_blocks,
                "chi2": round(f.statistic, 2),
                "p": f"{p_value_text(f.pvalue)}",
                "PLayer-FL mean rank over seeds": round(f.mean_ranks.get(PLAYER, np.nan), 2),
                "best mean rank over seeds": algorithm_label(f.mean_ranks.idxmin()),
                "smallest Wilcoxon p": f"{p_value_text(w['min_p'].min())}",
                "Wilcoxon tests run": f"{int(w['pvalue'].notna().sum())} of {len(w)}",
                "rejections": int(w["reject"].sum()),
            }
        )
    out = pd.DataFrame(rows).set_index("dataset")
    out.attrs["friedman_p"] = friedman_p  # the numbers behind the "p" column's text
    return out


def within_numbers(within: pd.DataFrame) -> dict:
    """Glue values of the within-dataset tests."""
    seed_counts = sorted(within["seeds (blocks)"].unique())
    n_run = sum(int(v.split(" of ")[0]) for v in within["Wilcoxon tests run"])
    n_all = sum(int(v.split(" of ")[1]) for v in within["Wilcoxon tests run"])
    rejecting = [dataset_label(ds) for ds, p in within.attrs["friedman_p"].items() if p <= 0.05]
    ps = ", ".join(within["p"])
    min_ps = [f"{p_value_text(C.min_pvalue('wilcoxon', n))} with {n} seeds" for n in seed_counts]
    wilcoxon = (
        f"{n_run} of {n_all} PLayer-FL-vs-other comparisons can be run, with "
        f"{int(within['rejections'].sum())} Holm-adjusted rejections"
        if n_run
        else "none of the PLayer-FL-vs-other comparisons can be run, so none can be rejected"
    )
    friedman = (
        f"The within-dataset Friedman test rejects at 0.05 on {', '.join(rejecting)} "
        f"(p-values {ps})."
        if rejecting
        else f"The within-dataset Friedman p-values ({ps}) do not reject at 0.05: inside each "
        "dataset these seeds cannot tell the algorithms apart."
    )
    return {
        "within_min_p": ", ".join(min_ps),
        "within_wilcoxon_text": wilcoxon,
        "within_friedman_text": friedman,
    }


def paired_with_random(table: pd.DataFrame, profile: str) -> dict:
    """PLayer-FL against PLayer-FL-Random paired by seed: differences, splits, summary, C5, glue."""
    shown = list(dict.fromkeys(table["dataset"]))  # the order the reader asked for
    diffs = in_order(M.paired_differences(table, PLAYER, RANDOM, "macro_f1"), shown)
    splits = chosen_splits(table[table["algorithm"].isin([PLAYER, RANDOM])])
    splits = splits.pivot_table(index=["dataset", "seed"], columns="algorithm", values="split_p")
    paired = diffs.set_index(["dataset", "seed"]).join(splits.astype(int))
    paired = paired.rename(columns={PLAYER: "p (PLayer-FL)", RANDOM: "p (Random)"}).round(3)
    per_ds = diffs.groupby("dataset", sort=False)["diff"].agg(
        median="median", wins=lambda d: int((d > 0).sum()), seeds="size"
    )
    # C5's comparisons at one learning rate, when the committed split sweeps hold every dataset
    committed = O.committed_scores(profile)
    sweep_c5 = None if committed is None else in_order(O.c5_table(*committed), shown)
    if sweep_c5 is not None and not set(shown) <= set(sweep_c5["dataset"]):
        sweep_c5 = None
    c5 = C.c5_beats_random(
        table, PLAYER, RANDOM, rope=0.01, profile=C.describe_profile(profile, table),
        sweep_c5=sweep_c5,
    )  # fmt: skip
    ev = c5.parts.iloc[0]
    same_p = int((splits[PLAYER] == splits[RANDOM]).sum())
    several = len(c5.parts) > 1
    c5_family = (
        f"Holm's adjustment over C5's {len(c5.parts)} comparisons: this one and chapter "
        "04's at one learning rate"
        if several
        else "C5's only comparison here (no committed split sweep of these datasets)"
    )
    numbers = {
        "same_p": f"{same_p} of {len(splits)}",
        "c5_pairs": int(ev["n"]),
        "c5_median": f"{ev['estimate']:+.3f}",
        "c5_p": p_text(ev["p"]),
        "c5_p_holm": p_text(ev["p_holm"]) if several else p_text(ev["p"]),
        "c5_family": c5_family,
        "c5_posterior": f"P(PLayer-FL better) = {ev['P(claim)']:.3f}, P(practically equal) = "
        f"{ev['P(rope)']:.3f}, P(Random better) = {ev['P(opposite)']:.3f}",
    }
    parts = c5.parts.assign(part=[_c5_part_label(p) for p in c5.parts["part"]])
    family = parts[["part", "verdict", "estimate", "p_holm", "p", "n"]].rename(
        columns={"part": "comparison", "n": "pairs", "p_holm": "p (Holm)"}
    )  # the verdict first: on a phone a cut table keeps it
    posterior = parts.iloc[[0]][["part", "P(claim)", "P(rope)", "P(opposite)", "min_p"]].rename(
        columns={"part": "comparison", "P(claim)": "P(PLayer-FL better)",
                 "P(rope)": "P(practically equal)", "P(opposite)": "P(Random better)",
                 "min_p": "smallest p"}
    )  # fmt: skip
    return {
        "diffs": diffs,
        "paired": paired.reindex(shown, level="dataset").rename(index=dataset_label, level=0),
        "per_dataset": per_ds.round(3).rename(index=dataset_label),  # diffs' order: shown
        "c5": c5,
        "c5_table": family.set_index("comparison"),
        "c5_posterior": posterior.set_index("comparison"),
        "numbers": numbers,
    }


def _c5_part_label(part: str) -> str:
    """A C5 part as a short row: "tuned rates, every dataset", "one rate: Digits, vs drawn"."""
    if part.startswith(C.TUNED_PART):
        return "tuned rates, every dataset"
    ds, _, other = part.removeprefix("one learning rate: ").partition(", vs ")
    return f"one rate: {dataset_label(ds)}, vs {other.removeprefix('random (').rstrip(')')}"


def best_vs_last(table: pd.DataFrame, summaries: dict, order, datasets) -> pd.DataFrame:
    """Per algorithm and dataset: median macro-F1 at the best-validation round minus the last's."""
    last = M.summarize(table, "macro_f1", selection="last", n_boot=200)
    keys = ["dataset", "algorithm"]
    both = summaries["macro_f1"].merge(last, on=keys, suffixes=("_best", "_last"))
    both["gain"] = both["median_best"] - both["median_last"]
    gain = both.pivot(index="algorithm", columns="dataset", values="gain")
    return by_algorithm(gain.reindex(order)[list(datasets)].round(3))


def sizes_text(table: pd.DataFrame) -> str:
    """Per dataset, the median over runs of its clients and training examples: "Heart 4
    clients, 600 training examples; Digits 5 clients, 1,400"."""
    train = table[(table["metric"] == "n_samples") & (table["split"] == "train")]
    per_run = (
        train.groupby(["dataset", "algorithm", "seed", "client"], sort=False)["value"]
        .first()
        .groupby(["dataset", "algorithm", "seed"], sort=False)
        .agg(["size", "sum"])
    )
    sizes = per_run.groupby("dataset", sort=False).median()
    said = [
        f"{dataset_label(ds)} {int(r['size'])} clients, {int(r['sum']):,}"
        for ds, r in sizes.iterrows()
    ]
    return "; ".join([said[0] + " training examples", *said[1:]])


def c3_block_table(table) -> pd.DataFrame:
    """Each algorithm's mean macro-F1 rank over the runs, best first; Nemenyi's p against it."""
    ranks = C.c3_rank_table(table, PLAYER)
    n = ranks.attrs["blocks"]
    return pd.DataFrame(
        {
            "algorithm": ranks["algorithm"].map(algorithm_label),
            f"mean rank over {n} (dataset, seed) runs": ranks["mean_rank"].map("{:.2f}".format),
            "Nemenyi p against PLayer-FL": [
                MISSING if pd.isna(p) else p_value_text(p) for p in ranks["nemenyi_p"]
            ],
        }
    ).set_index("algorithm")


def evidence_words(strength: str) -> str:
    """ "weak evidence"; "no evidence" for strength "none"."""
    return "no evidence" if strength == "none" else f"{strength} evidence"


def claims_card(table, profile, rank_table, fair, incent, others, fried, cd, c5, order):
    """Claims C3–C5: the scorecard and every glue value of the chapter's verdict section."""
    c3_rank = M.best_mean_rank(rank_table, PLAYER)
    fair_ranks = M.rank_table(fair["macro_f1"].loc[others], higher_is_better=False)
    ipr_ranks = M.rank_table(incent["macro_f1"].loc[others], higher_is_better=True)
    c4_fair = M.best_mean_rank(fair_ranks, PLAYER)
    c4_ipr = M.best_mean_rank(ipr_ranks, PLAYER)
    described = C.describe_profile(profile, table)
    c3 = C.c3_best_rank(table, PLAYER, profile=described)
    c4 = C.c4_fairness_and_ipr(table, PLAYER, profile=described)
    card = C.scorecard([c3, c4, c5])
    seeds = table.groupby("dataset")["seed"].nunique()
    one = seeds.nunique() == 1
    each = f"{seeds.iloc[0]} seeds each" if one else f"{seeds.min()}–{seeds.max()} seeds"
    out = {
        "grid_profile": described.replace(":", " profile,", 1),
        "grid_sizes": f"{profile} grid: {sizes_text(table)}; {each}",
    }
    for claim in (c3, c4, c5):
        key = claim.id.lower()
        out[f"{key}_verdict"] = claim.verdict.verdict
        out[f"{key}_strength"] = claim.verdict.strength
        out[f"{key}_evidence"] = evidence_words(claim.verdict.strength)
        out[f"{key}_reason"] = claim.verdict.reason
    out |= {
        "c3_test": c3.parts["reason"].iloc[0],
        "c4_fair_test": c4.parts["reason"].iloc[0],
        "c4_ipr_test": c4.parts["reason"].iloc[1],
        "c3_rank": f"{c3_rank['mean_rank']:.2f}",
        "c3_position": f"{c3_rank['position']} of {c3_rank['n_algorithms']}",
        "c3_best_other": tied_text(c3_rank["best_others"]),
        "c3_best_other_rank": f"{c3_rank['best_other_rank']:.2f}",
        "c3_p": f"{p_value_text(fried.pvalue)}",
        "c3_cd": f"{cd:.1f}",
        "c4_fair_position": f"{c4_fair['position']} of {c4_fair['n_algorithms']}",
        "c4_ipr_position": f"{c4_ipr['position']} of {c4_ipr['n_algorithms']}",
        "c4_ipr_mean": f"{100 * incent['macro_f1'].loc[PLAYER].mean():.0f}%",
        "n_for_cd2": min(n for n in range(3, 500) if M.nemenyi_cd(len(order), n) < 2),
    }
    accuracy = M.run_scores(table, "accuracy").query("algorithm == @PLAYER")
    for dataset, values in accuracy.groupby("dataset", observed=True)["value"]:
        out[f"{dataset}_playerfl_accuracy"] = f"{100 * values.median():.0f} %"  # the intro's scale
    # the Result box: per claim one plain sentence, then the numbers (glued as MyST)
    blocks = M.run_scores(table, "macro_f1").pivot_table(
        index="algorithm", columns=["dataset", "seed"], values="value"
    )
    c3_outcome = rank_outcome(blocks, True, C.ALPHA, "(dataset, seed) runs")
    # C4's two parts as claims.c4_fairness_and_ipr decides them (α/2 each, references out)
    kept = sorted(a for a in fair["macro_f1"].index if a not in M.REFERENCES)  # as the claim's
    fair_outcome = rank_outcome(fair["macro_f1"].loc[kept], False, C.ALPHA / 2, "datasets")
    ipr_outcome = rank_outcome(incent["macro_f1"].loc[kept], True, C.ALPHA / 2, "datasets")
    decided = [*c3.parts["verdict"], *c4.parts["verdict"]]
    if [o["verdict"] for o in (c3_outcome, fair_outcome, ipr_outcome)] != decided:
        raise RuntimeError("the Result box's answers differ from the claims' verdicts")
    out |= {
        "c3_plain": c3_plain(c3_outcome),  # the intro quotes the Result box's sentence
        "c3_answer": c3_answer(c3, c3_outcome),
        "c4_answer": c4_answer(c4, fair_outcome, ipr_outcome, out["c4_ipr_mean"]),
        "c5_answer": c5_answer(c5),
    }
    return card, out
