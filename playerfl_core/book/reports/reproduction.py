"""Tables, numbers and sentences of chapter 06 ("Reproduction report"): our grid beside the
published tables, the authors' evaluation choices, and the claims scorecard.

Length (about 500 lines): one function per table or sentence of the chapter, in the chapter's
order; the scorecard's evidence gathering is the last part, since it draws on every chapter."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from playerfl_core.book.reports.bottom_line import bottom_line  # noqa: F401 (the chapter's R.)
from playerfl_core.book.reports.tables import MISSING, in_order, signed, signed_change
from playerfl_core.book.style import algorithm_label, dataset_label, score_label
from playerfl_core.fl.names import tied_text
from playerfl_core.fl.profiles import training_settings
from playerfl_core.measure import layer_studies as S
from playerfl_core.stats import claims as C
from playerfl_core.stats import metrics as M
from playerfl_core.stats import published as P
from playerfl_core.stats.p_values import p_value_text
from playerfl_core.stats.results import SERVER
from playerfl_core.study.experiments import run_grid

PAPER_ROUNDS = {"FMNIST": 100, "Heart": 20}
"""Rounds of the paper's runs (appendix §1.1), by the published tables' column names."""
SIDE_BY_SIDE = (
    ("accuracy", 1, 1, "Accuracy (%)"),
    (
        "fairness_f1",
        1e3,
        1,
        "Fairness: variance of client macro-F1 (×10³; the paper prints two significant digits)",
    ),
    ("ipr_f1", 1, 0, "IPR on macro-F1 (%)"),
    ("ipr_accuracy", 1, 0, "IPR on accuracy (%)"),
)
"""The published tables shown beside ours: name, scale, decimals, title. Fairness is shown
×10³ as in chapter 05: the paper prints it to two significant digits (9.0e-2, 3.0e-4), which
one number of decimals can show for both datasets only at that scale (90.0, 0.3)."""


def _label_index(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.rename(index=algorithm_label)


def profile_sizes(datasets, profile: str) -> pd.DataFrame:
    """The profile's training settings per dataset, beside the paper's rounds."""
    sizes = pd.DataFrame.from_dict(
        {ds: training_settings(ds, profile) for ds in datasets}, orient="index"
    )
    rounds = {ours: PAPER_ROUNDS.get(theirs, MISSING) for theirs, ours in P.paper_columns().items()}
    sizes["paper rounds (appendix §1.1)"] = [rounds.get(d, MISSING) for d in sizes.index]
    return sizes.rename(index=dataset_label)


def our_tables(table: pd.DataFrame, order, n_boot: int) -> dict:
    """Our medians of accuracy (%) and loss, fairness and IPR (%) per metric, algorithms ×
    datasets, keyed like the published tables."""
    ours = {
        "accuracy": 100 * M.to_wide(M.summarize(table, "accuracy", n_boot=n_boot), "median", order),
        "loss": M.to_wide(M.summarize(table, "loss", n_boot=n_boot), "median", order),
    }
    for metric, key in (("accuracy", "accuracy"), ("macro_f1", "f1"), ("loss", "loss")):
        f = M.fairness(table, metric).rename(columns={"variance": "value"})
        ours[f"fairness_{key}"] = M.to_wide(f, "value", order)
        i = M.ipr(table, metric).rename(columns={"ipr": "value"})
        ours[f"ipr_{key}"] = 100 * M.to_wide(i, "value", order)
    return ours


def side_by_side(
    ours: dict, name: str, both, order, scale: float = 1, digits: int = 1
) -> pd.DataFrame:
    """Our table ``name`` and the published one (both × ``scale``, to ``digits`` decimals), per
    dataset reported by both."""
    theirs = P.published_wide(name)
    cols = {}
    for ds in both:
        cols[(dataset_label(ds), "ours")] = ours[name][ds]
        cols[(dataset_label(ds), "published")] = theirs[ds]
    out = scale * pd.DataFrame(cols).reindex(order).dropna(how="all")
    return _label_index(out).round(digits)


def ordering_agreement(ours: dict, both) -> tuple[pd.DataFrame, dict]:
    """Per dataset: Spearman ρ between our and the published accuracy medians, and PLayer-FL's
    accuracy rank in both; glue values ``rho_<dataset>``."""
    theirs = P.published_wide("accuracy")
    rho = {}
    for ds in both:
        pair = pd.concat([ours["accuracy"][ds], theirs[ds]], axis=1).dropna()
        rho[ds] = spearmanr(pair.iloc[:, 0], pair.iloc[:, 1]).statistic
    pub_rank = theirs.rank(ascending=False)
    our_rank = ours["accuracy"].rank(ascending=False)
    shown = pd.DataFrame(
        {
            "Spearman ρ (accuracy, ours vs published)": pd.Series(rho).round(2),
            "PLayer-FL's accuracy rank, ours": our_rank.loc["playerfl", list(both)],
            "PLayer-FL's accuracy rank, published": pub_rank.loc["playerfl", list(both)],
        }
    )
    return shown.rename(index=dataset_label), {f"rho_{ds}": signed(r, 2) for ds, r in rho.items()}


def timing_effect(table: pd.DataFrame, before: pd.DataFrame, algorithms, datasets) -> pd.DataFrame:
    """Per dataset (in ``datasets``' order, the chapter's) and algorithm: median macro-F1
    scored after aggregation (default) and before it (the authors' timing), and the median
    paired difference."""
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
    return (
        effect.rename(index=dataset_label, level=0).rename(index=algorithm_label, level=1).round(3)
    )


def profile_ranks(table: pd.DataFrame, profile: str, claims_profile: str, claims_datasets) -> str:
    """PLayer-FL's mean macro-F1 rank (medians over seeds, ranked within each dataset) in this
    chapter's grid and in the committed grid the scorecard's C3–C5 read, as one sentence: the
    two rankings differ, and the page says by how much."""

    def rank(grid: pd.DataFrame) -> str:
        ranks = M.rank_table(M.to_wide(M.summarize(grid, "macro_f1", n_boot=200), "median"), True)
        best = M.best_mean_rank(ranks, "playerfl")
        lead = (
            "first"
            if best["holds"]
            else f"best: {tied_text(best['best_others'])}, {best['best_other_rank']:.2f}"
        )
        where = f"position {best['position']} of {best['n_algorithms']}"
        return f"{best['mean_rank']:.2f}, {where} ({lead})"

    names = [d.strip() for d in str(claims_datasets).split(",") if d.strip()]
    claims = run_grid(names, "all", claims_profile, compute=False, progress=False).table
    return (
        f"PLayer-FL's mean macro-F1 rank is {rank(table)} in this chapter's {profile} grid, and "
        f"{rank(claims)} in the committed {claims_profile} grid of chapter 05"
    )


def timing_ranks(table: pd.DataFrame, before: pd.DataFrame, effect, algorithms, order):
    """Mean macro-F1 rank over datasets when the rescored baselines are scored before
    aggregation (PLayer-FL stays scored after it, the paper's view); table and glue values."""
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
    shown = _label_index(moved.loc[["playerfl", *rescored]]).round(2)
    fedavg_gain = (
        effect.xs("fedavg", level="algorithm")["median_diff"]
        if "fedavg" in algorithms
        else pd.Series(dtype=float)
    )
    out = {f"fedavg_timing_{ds}": signed_change(v) for ds, v in fedavg_gain.items()}
    out["fedavg_timing_max"] = f"{fedavg_gain.abs().max():.3f}"
    after, before_rank = rank_dep["playerfl"], rank_aut["playerfl"]
    same = np.isclose(after, before_rank)
    pf_text = (
        f"PLayer-FL's mean rank stays at {after:.2f}"
        if same
        else f"PLayer-FL's mean rank moves from {after:.2f} to {before_rank:.2f}"
    )
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
        out[f"{name}_p_wrong"] = pub.loc[
            f"published: {score_label(name)}", "p, transposed (authors)"
        ]
        out[f"{name}_p_printed"] = P.FRIEDMAN_P[name]
    return friedman_table, out


def printed_ranks(digits: int = 2) -> tuple[pd.DataFrame, dict]:
    """The published average accuracy ranks against ranks recomputed from the published
    accuracies; glue values."""
    printed = P.published("accuracy").query("dataset == 'avg_rank'").set_index("algorithm")
    printed = printed["value"]
    recomputed = M.rank_table(P.published_wide("accuracy"), True)["mean_rank"]
    check = pd.DataFrame({"printed": printed, "recomputed": recomputed.round(digits)})
    check["difference"] = (check["recomputed"] - check["printed"]).round(digits)
    first_printed, first_recomputed = printed.idxmin(), recomputed.idxmin()
    out = {
        "rank_max_diff": f"{check['difference'].abs().max():.2f}",
        "rank_first_text": (
            f"{algorithm_label(first_printed)} is first either way"
            if first_printed == first_recomputed
            else f"the first place changes from {algorithm_label(first_printed)} to "
            f"{algorithm_label(first_recomputed)}"
        ),
    }
    return _label_index(check), out


def client_weightings(table: pd.DataFrame, order) -> tuple[pd.DataFrame, dict]:
    """Macro-F1 medians under training-size, test-size and uniform client weights: the largest
    differences and the best mean rank under each; glue values."""
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
        summary = (
            "best mean rank changes with uniform weights"
            if best["train"] == best["test"]
            else "best mean rank changes"
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
    """PLayer-FL's splits over seeds against the authors' hard-coded ones. The column names
    ``profile``: the splits are those of this chapter's grid, and another profile's (chapter
    05's standard one) can differ on the same dataset, which read as a contradiction unnamed."""
    sp = table[
        (table["client"] == SERVER)
        & (table["metric"] == "split_p")
        & (table["algorithm"] == "playerfl")
    ]
    out = (
        sp.groupby("dataset", sort=False)["value"]
        .agg(lambda v: ", ".join(str(int(x)) for x in sorted(set(v))))
        .rename(f"our p ({profile} profile, every seed)")
        .to_frame()
    )
    refs = S.REFERENCE_SPLITS  # the authors' hard-coded splits (appendix §6.11)
    out["authors' p"] = [refs.get(d, {}).get("authors_config", MISSING) for d in out.index]
    return out.rename(index=dataset_label)


OPTIONS = (
    ("Heart", {"loss": "focal"}, "focal loss"),
    ("FMNIST", {"augment": True}, "augmentation"),
)
"""The authors' per-dataset training options (appendix §2): the published tables' column name,
run option, name."""


def option_effects(table, grid, datasets, algorithms, profile, **grid_kwargs):
    """Rerun ``algorithms`` at their chosen LR with each of the authors' training options and
    compare paired by seed with the default runs; the table and the biggest change's text."""
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
            change = g["value_option"] - g["value_default"]
            rows.append(
                {
                    "dataset": ds,
                    "option": name,
                    "algorithm": algorithm_label(alg),
                    "seeds": len(g),
                    "default": g["value_default"].median(),
                    "with option": g["value_option"].median(),
                    "median paired change": change.median(),
                }
            )
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


def scorecard(
    datasets, profile, device, table, claims_profile, claims_datasets, metric_datasets="",
    metric_seeds=(0, 1, 2, 3, 4),
):  # fmt: skip
    """Every claim the book tests, under its one decision rule: C1 and C2 from first-epoch
    analytics of Local runs here; M1 (chapter 03a) from the averaging check on
    ``metric_datasets`` here; C3–C5 from the grid of ``claims_profile`` (loaded, never
    recomputed, when it is not this profile), C5 joined by the same-learning-rate comparison of
    the profile's split sweeps (chapter 04); R1 (chapter 04) and R2 (chapter 04b) from the
    committed sweeps and rules table. Claims whose evidence the profile lacks are left out."""
    from playerfl_core.book.reports import averaging

    analytics = []
    for name in datasets:
        plan = S.analytics_plan(name, profile)
        settings = replace(plan.settings, metrics=("sensitivity", *C.C2_MEASURES))
        analytics.append(
            S.layer_analytics(
                name,
                seeds=plan.seeds,
                profile=profile,
                device=device,
                algorithms=("local",),
                stages={0: "first"},
                rounds=plan.rounds,
                settings=settings,
            )
        )
    analytics = pd.concat(analytics, ignore_index=True)
    on_analytics = C.describe_profile(profile, analytics)
    evidence = table
    if claims_profile != profile:
        names = [d.strip() for d in claims_datasets.split(",") if d.strip()]
        evidence = run_grid(names, "all", claims_profile, compute=False, progress=False).table
    on_grid = C.describe_profile(claims_profile, evidence)
    split = split_evidence(claims_profile, [d.strip() for d in claims_datasets.split(",")])
    claims = [
        C.c1_divergence_grows(analytics, profile=on_analytics),
        C.c2_sensitivity_tracks(analytics, profile=on_analytics),
    ]
    metric_names = [d.strip() for d in str(metric_datasets).split(",") if d.strip()]
    if metric_names:
        _, profiles = averaging.measure(metric_names, list(metric_seeds), profile, device)
        on_metric = C.describe_profile(profile, profiles)
        claims.append(C.m1_sensitivity_ranks_cost(profiles, metric_names, dataset_label, on_metric))
    claims += [
        C.c3_best_rank(evidence, profile=on_grid),
        C.c4_fairness_and_ipr(evidence, profile=on_grid),
        C.c5_beats_random(evidence, profile=on_grid, sweep_c5=split["c5"] if split else None),
    ]
    if split:
        claims.append(split["r1"])
        if split.get("r2") is not None:
            claims.append(split["r2"])
    return C.scorecard(claims)


def split_evidence(profile: str, c5_datasets: Sequence[str] | None = None) -> dict | None:
    """The split study's claims from the committed sweeps of ``profile``: C5 at one learning
    rate (per seed, on ``c5_datasets``: the federations of the claims' grid, as chapter 04
    tests it; a heterogeneity federation is not the paper's setting), R1 over every swept
    federation, and R2 from the pre-registered test when the rules table is committed; None when
    the profile has no committed sweeps."""
    from playerfl_core.book.reports import rule_family
    from playerfl_core.study import split_oracle as O
    from playerfl_core.study.archive import archive_dir
    from playerfl_core.study.r1_rescore import TEST_PER_CLIENT

    committed = O.committed_scores(profile)
    if committed is None:
        return None
    scores, rules = committed
    regrets = O.regrets(scores, rules)
    on_sweep = C.describe_profile(profile, scores)
    c5 = O.c5_table(scores, rules)
    if c5_datasets is not None:
        c5 = c5[c5["dataset"].isin(list(c5_datasets))]
    own_rates = profile == "standard"  # the fair sweep pairs with the standard archive
    out = {"c5": c5, "r1": _r1_with_own_rates(regrets, rules, on_sweep, own_rates)}
    if rule_family.RULES_FILE.exists() and profile == "standard":
        study = rule_family.analyse(O.load_sweeps(archive_dir(profile)), rule_family.load_rules())
        sets = (
            "pre-registered evaluation set"
            + (" and confirmation test" if study.confirmation is not None else "")
            + (
                f"; Fashion-MNIST regrets on {TEST_PER_CLIENT:,} test images per client"
                + (" (and splits and rounds chosen on as many validation images)"
                   if study.test_only is not None else "")  # item 17
                if study.book is not None
                else ""
            )
        )  # fmt: skip
        out["r2"] = rule_family.r2_claim(study, f"standard: {sets}")
    return out


def _r1_with_own_rates(regrets: pd.DataFrame, rules: pd.DataFrame, profile: str, own_rates: bool):
    """R1 from its one-rate family, its regrets on large evaluation sets where the committed
    rescores hold them (items 15 and 17, ``val_rescore.r1_family``); with ``own_rates`` and the
    fair sweep committed, its reason also names every federation whose verdict differs with each
    split at its own rate (item 12, both on the book's test sets)."""
    from playerfl_core.book.reports import fair_sweeps as FS
    from playerfl_core.study.val_rescore import large_sets_text, r1_family

    family = r1_family(regrets)
    if family["rescored"].any():  # the scorecard's profile column says what R1's regrets are
        profile = f"{profile}; Fashion-MNIST regrets on {large_sets_text(family)}"
    claim = C.r1_rule_finds_oracle(family, label=dataset_label, profile=profile)
    note = FS.r1_note(FS.analyse(regrets, rules) if own_rates else None)
    if not note:
        return claim
    return replace(claim, verdict=replace(claim.verdict, reason=f"{claim.verdict.reason}. {note}"))


def chapter_titles() -> dict[str, str]:
    """Every chapter's title (its first Markdown heading), by notebook stem, for links."""
    import json
    import time
    from pathlib import Path

    titles = {}
    for path in sorted((Path(__file__).resolve().parents[3] / "chapters").glob("*.ipynb")):
        for attempt in range(20):  # a chapter executing beside this one may be mid-write
            try:
                cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
                break
            except json.JSONDecodeError:
                if attempt == 19:
                    raise
                time.sleep(0.5)
        for cell in cells:
            text = "".join(cell["source"]) if cell["cell_type"] == "markdown" else ""
            if text.startswith("# "):
                titles[path.stem] = text.splitlines()[0].removeprefix("# ").strip()
                break
    return titles
