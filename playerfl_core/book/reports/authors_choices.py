"""The authors' evaluation and training choices that chapter 06 measures against the book's (when
a model is scored, Friedman's orientation, printed ranks, client weights, interval widths,
hard-coded splits, training options): one function per table, each with its glued values."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from playerfl_core.book.reports.tables import MISSING, in_order, signed, signed_change
from playerfl_core.book.style import algorithm_label, dataset_label, score_label
from playerfl_core.measure import layer_studies as S
from playerfl_core.stats import metrics as M
from playerfl_core.stats import published as P
from playerfl_core.stats.p_values import p_value_text
from playerfl_core.stats.results import chosen_splits
from playerfl_core.study.experiments import run_grid


def timing_effect(table: pd.DataFrame, before: pd.DataFrame, algorithms, datasets) -> pd.DataFrame:
    """Per dataset (in ``datasets``' order) and algorithm: median macro-F1 scored after
    aggregation and before it (the authors' timing), and the median paired difference."""
    dep = M.run_scores(table[table["algorithm"].isin(algorithms)], "macro_f1")
    aut = M.run_scores(before, "macro_f1")
    pair = dep.merge(aut, on=["dataset", "algorithm", "lr", "seed"], suffixes=("_after", "_before"))
    pair = in_order(pair, datasets)
    pair["diff"] = pair["value_before"] - pair["value_after"]
    return pair.groupby(["dataset", "algorithm"], sort=False).agg(
        after=("value_after", "median"),
        before=("value_before", "median"),
        median_diff=("diff", "median"),
        seeds=("seed", "nunique"),
    )


def timing_effect_table(effect: pd.DataFrame) -> pd.DataFrame:
    named = effect.rename(index=dataset_label, level=0)
    return named.rename(index=algorithm_label, level=1).round(3)


def timing_ranks(table: pd.DataFrame, before: pd.DataFrame, effect, algorithms, order):
    """Mean macro-F1 ranks with the rescored baselines scored before aggregation; table and glue."""
    med_dep = M.to_wide(M.summarize(table, "macro_f1", n_boot=200), "median", order)
    med_aut = med_dep.copy()
    alt = M.to_wide(M.summarize(before, "macro_f1", n_boot=200), "median")
    for alg in alt.index:
        if alg != "playerfl":
            med_aut.loc[alg, alt.columns] = alt.loc[alg]
    rank_dep = M.rank_table(med_dep, True)["mean_rank"]
    rank_aut = M.rank_table(med_aut, True)["mean_rank"]
    moved = pd.DataFrame(
        {"after aggregation": rank_dep, "before aggregation (baselines only)": rank_aut}
    )
    rescored = [a for a in algorithms if a != "playerfl"]
    shown = moved.loc[["playerfl", *rescored]].rename(index=algorithm_label).round(2)
    fedavg_gain = (
        effect.xs("fedavg", level="algorithm")["median_diff"]
        if "fedavg" in algorithms
        else pd.Series(dtype=float)
    )
    out = {f"fedavg_timing_{ds}": signed_change(v) for ds, v in fedavg_gain.items()}
    out["fedavg_timing_max"] = f"{fedavg_gain.abs().max():.3f}"
    after, before_rank = rank_dep["playerfl"], rank_aut["playerfl"]
    same = np.isclose(after, before_rank)
    moves = f"stays at {after:.2f}" if same else f"moves from {after:.2f} to {before_rank:.2f}"
    pf_text = f"PLayer-FL's mean rank {moves}"
    others = ", ".join(
        f"{algorithm_label(a)} from {rank_dep[a]:.2f} to {rank_aut[a]:.2f}" for a in rescored
    )
    out["timing_rank_text"] = pf_text + (f" (rescored baselines: {others})" if others else "")
    out["playerfl_rank_change"] = "none" if same else f"{after:.2f} → {before_rank:.2f}"
    return shown, out


def _printed_p(printed: str) -> str:
    """A p-value as the paper printed it, in the book's notation: "< 5e-3" reads "< 0.005"."""
    return re.sub(r"\d+(?:\.\d+)?e-\d+", lambda m: p_value_text(float(m[0]), 1), printed)


def friedman_orientations(table: pd.DataFrame, order) -> tuple[pd.DataFrame, dict]:
    """Friedman p-values of our macro-F1 and every published table, with algorithms as
    treatments (correct) and transposed (the authors'), beside the printed p; glue values."""
    rows, right_ps = [], {}
    our_f1 = M.to_wide(M.summarize(table, "macro_f1", n_boot=200), "median", order)
    tables = [("ours: macro-F1", our_f1, True, MISSING)] + [
        (f"published: {score_label(n)}", P.published_wide(n), n.startswith(("accuracy", "ipr")), p)
        for n, p in P.FRIEDMAN_P.items()
    ]
    for name, wide, hib, printed in tables:
        right = M.friedman(wide, hib, orientation="algorithms")
        wrong = M.friedman(wide, hib, orientation="authors")
        right_ps[name] = right.pvalue
        rows.append(
            {
                "table": name,
                "algorithms × datasets": f"{wide.shape[0]} × {wide.shape[1]}",
                "p, correct (algorithms as treatments)": f"{p_value_text(right.pvalue)}",
                "p, transposed (authors)": f"{p_value_text(wrong.pvalue)}",
                "p printed": _printed_p(printed),
            }
        )
    friedman_table = pd.DataFrame(rows).set_index("table")
    pub_acc = M.friedman(P.published_wide("accuracy"), True)
    pub_cd = M.nemenyi_cd(pub_acc.n_treatments, pub_acc.n_blocks)
    pub_ranks = P.published("accuracy").query("dataset == 'avg_rank'")["value"].to_numpy()
    gaps = np.abs(pub_ranks[:, None] - pub_ranks[None, :])[np.triu_indices(len(pub_ranks), 1)]
    pub = friedman_table.drop(index="ours: macro-F1")
    not_sig = [t.removeprefix("published: ") for t in pub.index if right_ps[t] >= 0.05]
    wrong_acc = M.friedman(P.published_wide("accuracy"), orientation="authors")
    out = {
        "pub_acc_p_right": f"{p_value_text(pub_acc.pvalue)}",
        "pub_acc_p_wrong": f"{p_value_text(wrong_acc.pvalue)}",
        "pub_acc_cd": f"{pub_cd:.2f}",
        "pub_gaps_below_cd": f"{int((gaps < pub_cd).sum())} of {len(gaps)}",
        "n_not_sig": f"{len(not_sig)} of {len(pub)}",
        "not_sig_tables": ", ".join(not_sig) or "none",
    }
    for name in ("ipr_f1", "ipr_loss"):
        label = f"published: {score_label(name)}"
        out[f"{name}_p_wrong"] = pub.loc[label, "p, transposed (authors)"]
        out[f"{name}_p_printed"] = P.FRIEDMAN_P[name]
    return friedman_table, out


def printed_ranks(digits: int = 2) -> tuple[pd.DataFrame, dict]:
    """The published average accuracy ranks against those recomputed from the published scores."""
    printed = P.published("accuracy").query("dataset == 'avg_rank'").set_index("algorithm")["value"]
    recomputed = M.rank_table(P.published_wide("accuracy"), True)["mean_rank"]
    check = pd.DataFrame({"printed": printed, "recomputed": recomputed.round(digits)})
    check["difference"] = (check["recomputed"] - check["printed"]).round(digits)
    was, now = algorithm_label(printed.idxmin()), algorithm_label(recomputed.idxmin())
    first_text = (
        f"{was} is first either way"
        if was == now
        else f"the first place changes from {was} to {now}"
    )
    out = {
        "rank_max_diff": f"{check['difference'].abs().max():.2f}",
        "rank_first_text": first_text,
    }
    return check.rename(index=algorithm_label), out


def client_weightings(table: pd.DataFrame, order) -> tuple[pd.DataFrame, dict]:
    """Macro-F1 medians under training-size, test-size and uniform client weights, with glue."""
    by_w = {
        w: M.to_wide(M.summarize(table, "macro_f1", weighting=w, n_boot=200), "median", order)
        for w in ("train", "test", "uniform")
    }
    diff_test = float((by_w["test"] - by_w["train"]).abs().max().max())
    diff_uni = float((by_w["uniform"] - by_w["train"]).abs().max().max())
    best = {w: algorithm_label(M.rank_table(by_w[w], True)["mean_rank"].idxmin()) for w in by_w}
    if len(set(best.values())) == 1:
        text = (
            f"All three weightings give {best['train']} the best mean macro-F1 rank, so "
            "here the choice moves numbers without changing the winner."
        )
        summary = "winner unchanged"
    else:
        text = (
            "The choice is not harmless here: the best mean macro-F1 rank goes to "
            + ", ".join(f"{a} with {w} weights" for w, a in best.items())
            + ". Which clients count how much changes the conclusion, so it must be "
            "stated with the results."
        )
        summary = "best mean rank changes" + (
            " with uniform weights" if best["train"] == best["test"] else ""
        )
    shown = pd.DataFrame(
        {
            "client weights": list(best),
            "max |difference| from training-size weights": [0.0, diff_test, diff_uni],
            "best mean rank": list(best.values()),
        }
    ).set_index("client weights")
    out = {
        "weights_test_diff": signed(diff_test, 4),
        "weights_uniform_diff": signed(diff_uni),
        "weights_text": text,
        "weights_summary": summary,
    }
    return shown.round(4), out


def interval_widths(table: pd.DataFrame, n_boot: int) -> pd.DataFrame:
    """Per dataset: seeds, our mean CI half-width, and the authors' (0 below five seeds)."""
    s = M.summarize(table, "macro_f1", n_boot=n_boot)
    s["our half-width"] = (s["ci_high"] - s["ci_low"]) / 2
    s["authors' half-width"] = np.where(s["n_seeds"] < 5, 0.0, np.nan)
    few = s.groupby("dataset", sort=False).agg(
        seeds=("n_seeds", "max"),
        ours=("our half-width", "mean"),
        authors=("authors' half-width", "mean"),
    )
    return few.round(4).rename(index=dataset_label)


def split_comparison(table: pd.DataFrame, profile: str) -> pd.DataFrame:
    """PLayer-FL's splits over seeds in ``profile`` against the authors' hard-coded ones."""
    sp = chosen_splits(table[table["algorithm"] == "playerfl"])
    splits = sp.groupby("dataset", sort=False)["split_p"].agg(
        lambda v: ", ".join(str(int(x)) for x in sorted(set(v)))
    )
    out = splits.rename(f"our p ({profile} profile, every seed)").to_frame()
    refs = S.REFERENCE_SPLITS  # the authors' hard-coded splits (appendix §6.11)
    out["authors' p"] = [refs.get(d, {}).get("authors_config", MISSING) for d in out.index]
    return out.rename(index=dataset_label)


OPTIONS = (
    ("Heart", {"loss": "focal"}, "focal loss"),
    ("FMNIST", {"augment": True}, "augmentation"),
)
"""The authors' per-dataset training options (appendix §2): paper column, run option, name."""


def option_effects(table, grid, datasets, algorithms, profile, **grid_kwargs):
    """``algorithms`` rerun at their chosen LR with each of the authors' training options, paired
    by seed with the default runs: the table and the biggest change's text."""
    lr_of = grid.chosen.set_index(["dataset", "algorithm"])["lr"]
    rows = []
    columns = P.paper_columns()
    for paper_name, option, name in OPTIONS:
        ds = columns.get(paper_name)
        if ds not in datasets:
            continue
        fixed = {(ds, a): float(lr_of[(ds, a)]) for a in algorithms}
        alt = run_grid([ds], algorithms, profile, fixed_lr=fixed, **grid_kwargs, **option)
        base = M.run_scores(table[(table["dataset"] == ds) & table["algorithm"].isin(algorithms)])
        paired = base.merge(
            M.run_scores(alt.table),
            on=["dataset", "algorithm", "lr", "seed"],
            suffixes=("_default", "_option"),
        )
        for alg, g in paired.groupby("algorithm", sort=False):
            change = (g["value_option"] - g["value_default"]).median()
            medians = g[["value_default", "value_option"]].median()
            rows.append((ds, name, algorithm_label(alg), len(g), *medians, change))
    columns = ["dataset", "option", "algorithm", "seeds", "default", "with option"]
    options = in_order(pd.DataFrame(rows, columns=[*columns, "median paired change"]), datasets)
    options["dataset"] = options["dataset"].map(dataset_label)  # the chapter's order, as above
    options = options.set_index(["dataset", "option", "algorithm"])
    if not len(options):
        return options, "not measured (no federation with one of the authors' options selected)"
    biggest = options["median paired change"].abs().idxmax()
    text = (
        f"{biggest[2]} with the {biggest[1]} on {biggest[0]} "
        f"({signed_change(options.loc[biggest, 'median paired change'])})"
    )
    return options.round(3), text
