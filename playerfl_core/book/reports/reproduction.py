"""Chapter 06 ("Reproduction report"): our grid beside the published tables, and the claims
scorecard. :mod:`.authors_choices`' names are importable from here (the chapter's ``R.<name>``)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pandas as pd
from scipy.stats import spearmanr

from playerfl_core.book.reports import averaging, divergence, rule_family
from playerfl_core.book.reports.authors_choices import (  # noqa: F401 (the chapter's R.)
    OPTIONS,
    client_weightings,
    friedman_orientations,
    interval_widths,
    option_effects,
    printed_ranks,
    split_comparison,
    timing_effect,
    timing_effect_table,
    timing_ranks,
)
from playerfl_core.book.reports.bottom_line import bottom_line  # noqa: F401 (the chapter's R.)
from playerfl_core.book.reports.comparison import fairness_and_ipr, sizes_text
from playerfl_core.book.reports.rule_study import RULES_FILE
from playerfl_core.book.reports.tables import MISSING, signed
from playerfl_core.book.style import algorithm_label, dataset_label
from playerfl_core.fl.names import tied_text
from playerfl_core.fl.profiles import training_settings
from playerfl_core.measure import layer_studies as S
from playerfl_core.stats import claims as C
from playerfl_core.stats import metrics as M
from playerfl_core.stats import published as P
from playerfl_core.study import rescore
from playerfl_core.study import split_oracle as O
from playerfl_core.study.archive import archive_dir
from playerfl_core.study.experiments import run_grid
from playerfl_core.study.rescore import TEST_PER_CLIENT

PAPER_ROUNDS = {"FMNIST": 100, "Heart": 20}
"""Rounds of the paper's runs (appendix §1.1), by the published tables' column names."""
SIDE_BY_SIDE = (
    ("accuracy", 1, 1, "Accuracy (%)"),
    ("fairness_f1", 1e3, 1,
     "Fairness: variance of client macro-F1 (×10³; the paper prints two significant digits)"),
    ("ipr_f1", 1, 0, "IPR on macro-F1 (%)"),
)  # fmt: skip
"""The published tables shown beside ours: name, scale, decimals, title. Fairness ×10³ (as in
chapter 05) is the one scale at which one number of decimals shows both datasets' values."""


def profile_sizes(datasets, profile: str) -> pd.DataFrame:
    """The profile's training settings per dataset, beside the paper's rounds."""
    settings = {ds: training_settings(ds, profile) for ds in datasets}
    sizes = pd.DataFrame.from_dict(settings, orient="index")
    rounds = {ours: PAPER_ROUNDS.get(theirs, MISSING) for theirs, ours in P.paper_columns().items()}
    sizes["paper rounds (appendix §1.1)"] = [rounds.get(d, MISSING) for d in sizes.index]
    return sizes.rename(index=dataset_label)


def scale_text(table: pd.DataFrame, dataset: str, profile: str) -> str:
    """How large ``dataset`` runs in ``profile``: clients, examples, rounds, width."""
    settings = training_settings(dataset, profile)
    rounds = {ours: PAPER_ROUNDS.get(theirs) for theirs, ours in P.paper_columns().items()}
    paper = rounds.get(dataset)
    said = f"{settings['rounds']} rounds" + (f" (the paper's: {paper})" if paper else "")
    width = settings.get("width", 1.0)
    said += f", the model at width {width:g}" if width != 1.0 else ""
    return f"{sizes_text(table[table['dataset'] == dataset])}, {said}"


def our_tables(table: pd.DataFrame, order, n_boot: int) -> dict:
    """Our medians, fairness and IPR per metric (algorithms × datasets), keyed like the paper's."""
    ours = {
        "accuracy": 100 * M.to_wide(M.summarize(table, "accuracy", n_boot=n_boot), "median", order),
        "loss": M.to_wide(M.summarize(table, "loss", n_boot=n_boot), "median", order),
    }
    fair, incent, _ = fairness_and_ipr(table, order)
    for metric, key in (("accuracy", "accuracy"), ("macro_f1", "f1"), ("loss", "loss")):
        ours[f"fairness_{key}"] = fair[metric]
        ours[f"ipr_{key}"] = 100 * incent[metric]
    return ours


def side_by_side(ours: dict, name: str, both, order, scale: float = 1, digits: int = 1):
    """Our table ``name`` beside the published one (× ``scale``, to ``digits`` decimals)."""
    theirs = P.published_wide(name)
    cols = {}
    for ds in both:
        cols[(dataset_label(ds), "ours")] = ours[name][ds]
        cols[(dataset_label(ds), "published")] = theirs[ds]
    out = scale * pd.DataFrame(cols).reindex(order).dropna(how="all")
    return out.rename(index=algorithm_label).round(digits)


def ordering_agreement(ours: dict, both) -> tuple[pd.DataFrame, dict]:
    """Per dataset: Spearman ρ of our and the published accuracies, PLayer-FL's ranks; glue."""
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


def profile_ranks(table: pd.DataFrame, profile: str, claims_profile: str, claims_datasets) -> str:
    """PLayer-FL's mean macro-F1 rank of medians in this chapter's grid and in the grid the
    scorecard's C3–C5 read, as one sentence naming each grid and its seeds."""

    def rank(grid: pd.DataFrame, which: str) -> str:
        ranks = M.rank_table(M.to_wide(M.summarize(grid, "macro_f1", n_boot=200), "median"), True)
        best = M.best_mean_rank(ranks, "playerfl")
        lead = (
            ""
            if best["holds"]
            else (f"; best {tied_text(best['best_others'])}, {best['best_other_rank']:.2f}")
        )
        seeds = C.describe_profile(which, grid).partition(", ")[2]
        return (
            f"{best['mean_rank']:.2f} ({best['position']} of {best['n_algorithms']}{lead}) in "
            f"{{where}} {which} grid ({seeds})"
        )

    claims = _stored_grid(claims_datasets, claims_profile)
    here = rank(table, profile).replace("{where}", "this chapter's")
    there = rank(claims, claims_profile).replace("{where}", "chapter 05's")
    return f"PLayer-FL's mean macro-F1 rank of medians is {here}, and {there}"


def scorecard(
    datasets, profile, device, table, claims_profile, claims_datasets, metric_datasets="",
    metric_seeds=(0, 1, 2, 3, 4),
):  # fmt: skip
    """Every claim the book tests: C1, C2 from first-epoch analytics of Local runs here; M1 from
    the averaging check on ``metric_datasets``; C3–C5 from the stored grid of ``claims_profile``;
    C5's one-rate part, R1 and R2 from the committed sweeps (:func:`split_evidence`). Claims
    whose evidence the profile lacks are left out."""
    measured = ("sensitivity", *C.C2_MEASURES)
    plans = {name: S.analytics_plan(name, profile) for name in datasets}
    plans = {
        n: replace(p, settings=replace(p.settings, metrics=measured)) for n, p in plans.items()
    }
    analytics = divergence.measure(
        datasets, plans, profile, device, algorithms=("local",), stages={0: "first"}
    )
    on_analytics = C.describe_profile(profile, analytics)
    same = claims_profile == profile
    evidence = table if same else _stored_grid(claims_datasets, claims_profile)
    on_grid = C.describe_profile(claims_profile, evidence)
    split = split_evidence(claims_profile, _names(claims_datasets))
    claims = [
        C.c1_divergence_grows(analytics, profile=on_analytics),
        C.c2_sensitivity_tracks(analytics, profile=on_analytics),
    ]
    metric_names = _names(metric_datasets)
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


def _names(datasets: str) -> list[str]:
    """The dataset names of a comma-separated parameter."""
    return [d.strip() for d in str(datasets).split(",") if d.strip()]


def _stored_grid(datasets: str, profile: str) -> pd.DataFrame:
    """The evaluation table of ``profile``'s stored grid on ``datasets`` (never computed)."""
    return run_grid(_names(datasets), "all", profile, compute=False, progress=False).table


def split_evidence(profile: str, c5_datasets: Sequence[str] | None = None) -> dict | None:
    """The split study's claims from ``profile``'s committed sweeps (None without them): C5 at one
    learning rate on ``c5_datasets``, R1 over every swept federation, and R2 when the rules
    table is committed."""
    committed = O.committed_scores(profile)
    if committed is None:
        return None
    scores, rules = committed
    regrets = O.regrets(scores, rules)
    on_sweep = C.describe_profile(profile, scores)
    c5 = O.c5_table(scores, rules)
    if c5_datasets is not None:
        c5 = c5[c5["dataset"].isin(list(c5_datasets))]
    out = {"c5": c5, "r1": _r1_claim(regrets, on_sweep)}
    if RULES_FILE.exists() and profile == "standard":
        study = rule_family.analyse(O.load_sweeps(archive_dir(profile)), rule_family.load_rules())
        sets = (
            "pre-registered evaluation set"
            + (" and confirmation test" if study.confirmation is not None else "")
            + (
                f"; Fashion-MNIST regrets on {TEST_PER_CLIENT:,} test images per client"
                + (" (and splits and rounds chosen on as many validation images)"
                   if study.test_only is not None else "")
                if study.book is not None
                else ""
            )
        )  # fmt: skip
        out["r2"] = rule_family.r2_claim(study, f"standard: {sets}")
    return out


def _r1_claim(regrets: pd.DataFrame, profile: str):
    """R1 from its one-rate family, on the rescores' large evaluation sets where they reach."""
    family = rescore.r1_family(regrets)
    if family["rescored"].any():  # the scorecard's profile column says what R1's regrets are
        profile = f"{profile}; Fashion-MNIST regrets on {rescore.large_sets_text(family)}"
    return C.r1_rule_finds_oracle(family, label=dataset_label, profile=profile)


def chapter_titles() -> dict[str, str]:
    """Every chapter's title (its first Markdown heading), by notebook stem, for links."""
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
