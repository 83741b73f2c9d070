"""Numbers, tables and sentences of chapter 03 ("The federation-sensitivity metric", claim C2,
the split's stability, the threshold and the metric's cost). About 470 lines, one module: every
sentence the chapter glues is written here, from the same tables its cells show."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from playerfl_core.book.analysis_plots import metric_label
from playerfl_core.book.reports.tables import number_text, signed
from playerfl_core.book.style import algorithm_label, client_label, dataset_label
from playerfl_core.fl.profiles import make_config
from playerfl_core.measure import layer_studies as S
from playerfl_core.stats import claims as C
from playerfl_core.stats.decisions import strength_text

REFERENCE_NAMES = {
    "paper_transition": "the paper's transition layers",
    "authors_config": "the authors' hard-coded splits",
}
REFERENCE_SHORT = {"paper_transition": "paper's transition", "authors_config": "authors' code"}
"""The same references as table rows (short, so a table of thresholds fits the column)."""


def train_weights(data: dict):
    """The server's client weights for a (dataset, seed) key: training-set sizes, as the
    engine's aggregation weights them."""

    def weights(key):
        return {i: c.n_train for i, c in enumerate(data[(key["dataset"], key["seed"])].clients)}

    return weights


def pruning_demo(data: dict, plan: dict, name: str, profile: str, device) -> dict:
    """Zero each parameter of the head of the first client's model of dataset ``name`` after one
    epoch and compare with the first-order prediction. Returns the check table, the
    correlation and where it was measured."""
    seed = plan[name].seeds[0]
    fd = data[(name, seed)]
    config = make_config(name, profile, seed=seed, device=device, progress=False)
    model = S.first_epoch_models(fd, config)[0]
    c0, head = fd.clients[0], model.units[-1]
    check = S.pruning_check(
        model, c0.x_train.to(device), c0.y_train.to(device), head, max_params=120
    )
    r = float(np.corrcoef(check["predicted"], check["actual"])[0, 1])
    return {
        "check": check,
        "r": r,
        "where": f"{dataset_label(name)} client {client_label(c0.name)}, unit {head}",
        "title": f"{dataset_label(name)}, {client_label(c0.name)}, {head}",
    }


def measure_by_epoch(datasets, plan: dict, data: dict, profile: str, device) -> pd.DataFrame:
    """Every per-unit quantity after the first epoch, and the sensitivity after every later
    epoch, of Local and FedAvg runs on every dataset and seed of the plan."""
    tables = []
    for name in datasets:
        p = plan[name]
        n_rounds = make_config(name, profile, rounds=p.rounds).rounds
        later = replace(p.settings, metrics=("sensitivity",))
        tables.append(
            S.layer_analytics(
                name,
                seeds=p.seeds,
                profile=profile,
                device=device,
                rounds=p.rounds,
                stages={r: f"epoch {r + 1}" for r in range(n_rounds)},
                settings={r: p.settings if r == 0 else later for r in range(n_rounds)},
                data_loader=lambda s, name=name: data[(name, s)],
            )
        )
    return pd.concat(tables, ignore_index=True)


def first_epoch(table: pd.DataFrame) -> pd.DataFrame:
    """The measurements after the first epoch (Local and FedAvg models are identical then)."""
    return table[(table["round"] == 0) & (table["algorithm"] == "fedavg")]


def first_summary(first: pd.DataFrame) -> pd.DataFrame:
    """Per-client quantities after one epoch, summarised over seeds, as one 'Local = FedAvg'
    line per dataset."""
    summary = S.seed_summary(
        first[first["other"] == S.NO_OTHER],
        ["dataset", "algorithm", "stage", "metric", "depth", "unit"],
    )
    return summary.assign(algorithm="Local = FedAvg")


def units_by_dataset(first: pd.DataFrame, datasets) -> dict[str, list[str]]:
    """Each dataset's layer units in depth order."""
    return {
        name: list(first[first["dataset"] == name].sort_values("depth")["unit"].unique())
        for name in datasets
    }


def split_table(splits: pd.DataFrame, units_of: dict) -> pd.DataFrame:
    """Per dataset: the split per seed, the most frequent one, its units and the published
    references."""
    rows = []
    for name, units in units_of.items():
        ps = splits[splits["dataset"] == name]["p"].tolist()
        modal = max(set(ps), key=ps.count)
        refs = S.REFERENCE_SPLITS.get(name, {})
        rows.append(
            {
                "dataset": dataset_label(name),
                "p per seed": ", ".join(str(p) for p in ps),
                "federated units (most frequent p)": ", ".join(units[:modal]),
                "paper's transition": refs.get("paper_transition", "–"),
                "authors' code": refs.get("authors_config", "–"),
            }
        )
    return pd.DataFrame(rows).set_index("dataset")


def split_numbers(splits: pd.DataFrame, units_of: dict) -> dict:
    """Glue values: the modal split per dataset, its units, a Markdown list of all, and
    ``split_fallback``, where the split is the rule's fallback (no rise above t) rather than a
    rise it found: the two can give the same p, and only the data tell them apart."""
    out, lines = {}, []
    for name, units in units_of.items():
        rows = splits[splits["dataset"] == name]
        ps = rows["p"]
        modal = int(ps.mode().iloc[0])
        out[f"{name}_p"] = modal
        out[f"{name}_L"] = len(units)
        out[f"{name}_p_units"] = ", ".join(units[:modal])
        fallback = _fallback_note(rows)
        lines.append(
            f"- {dataset_label(name)}: p = {modal} of {len(units)} units "
            f"(federate {', '.join(units[:modal])}; per seed: {', '.join(map(str, ps.tolist()))}"
            f"{'; ' + fallback if fallback else ''})"
        )
    out["split_lines"] = "\n".join(lines)
    out["split_fallback"] = fallback_text(splits, units_of)
    return out


def _fallback_note(rows: pd.DataFrame) -> str:
    """ "no rise above t in any seed: the rule's fallback", "… in 2 of 3 seeds" or ""."""
    if "fallback" not in rows or not rows["fallback"].any():
        return ""
    k, n = int(rows["fallback"].sum()), len(rows)
    return (
        f"no rise above t in {'any seed' if k == n else f'{k} of {n} seeds'}: the rule's fallback"
    )


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def fallback_text(splits: pd.DataFrame, units_of: dict) -> str:
    """One sentence: on which datasets (and in how many seeds) no relative rise exceeds t, so
    that the split is the rule's fallback (every unit but the head), and on which it is a rise
    the rule found."""
    t = ", ".join(f"{v:g}" for v in sorted(splits["threshold"].unique()))
    fell, found = [], []
    for name in units_of:
        rows = splits[splits["dataset"] == name]
        k, n = int(rows["fallback"].sum()), len(rows)
        if k:
            fell.append(f"{dataset_label(name)} in {'any seed' if k == n else f'{k} of {n} seeds'}")
        else:
            found.append(dataset_label(name))
    if not fell:
        return f"At t = {t} every split above is the first rise above t; none is the fallback."
    text = (
        f"At t = {t} no relative rise exceeds t on {_and(fell)}: there the split is the "
        "rule's fallback, every unit but the head (p = units − 1), not a rise the rule found"
    )
    return text + (f"; on {_and(found)} it is the first rise above t." if found else ".")


def fallback_thresholds(by_t: pd.DataFrame) -> str:
    """One sentence: per dataset, the thresholds of the grid at which every seed's split is the
    rule's fallback (a flat stretch of the threshold figure can be either a rise or no rise)."""
    every = by_t.groupby(["dataset", "threshold"], sort=False)["fallback"].all()
    parts = [
        f"{_ts(ts)} on {dataset_label(name)}"
        for name, g in every.groupby(level="dataset", sort=False)
        if (ts := sorted(g[g].index.get_level_values("threshold")))
    ]
    if not parts:
        return "At no threshold of the grid is any dataset's split the fallback in every seed."
    return (
        f"The split is the rule's fallback (every unit but the head) in every seed at "
        f"{_and(parts)}."
    )


def c2_parts(c2) -> pd.DataFrame:
    """C2's (dataset, measure) parts with the dataset and measure in columns of their own."""
    parts = c2.parts["part"].str.split(": ")
    return c2.parts.assign(dataset=parts.str[0], measure=parts.str[1])


def c2_table(corr: pd.DataFrame) -> pd.DataFrame:
    """The C2 tests as shown: dataset, measure, mean ρ, seeds, p, Holm p, verdict, strength
    (an undecided part's *weak* with the direction it leans, :func:`strength_text`)."""
    shown = corr[["dataset", "measure", "estimate", "n", "p", "p_holm", "verdict", "strength"]]
    strength = [
        strength_text(v, s, e)
        for v, s, e in zip(shown["verdict"], shown["strength"], shown["estimate"], strict=True)
    ]
    return shown.rename(columns={"estimate": "mean ρ", "n": "seeds"}).assign(
        measure=shown["measure"].map(metric_label), strength=strength
    )


def rho_ranges(table: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, measure): mean and range over seeds of ρ(sensitivity, measure) after the
    first epoch (C2's measures and the per-parameter Hessian trace), in display names."""
    diagnostic = [*C.C2_MEASURES, "hessian_trace_per_param"]
    per_seed, _ = C.metric_correlation_tests(table, "sensitivity", diagnostic, "local", "epoch 1")
    ranges = (
        per_seed.groupby(["dataset", "measure"], sort=False)["rho"]
        .agg(mean="mean", lo="min", hi="max")
        .reset_index()
    )
    return ranges.assign(
        dataset=ranges["dataset"].map(dataset_label), measure=ranges["measure"].map(metric_label)
    )


def per_parameter_diagnostic(table: pd.DataFrame) -> pd.DataFrame:
    """Not part of C2: sensitivity against the Hessian trace per parameter, Holm-adjusted."""
    parts = C.holm_decide(
        C.metric_correlation_tests(
            table, "sensitivity", ["hessian_trace_per_param"], "local", "epoch 1"
        )[1]
    )
    return pd.DataFrame(
        [
            {
                "dataset": dataset_label(e.part.split(": ")[0]),
                "mean ρ": e.estimate,
                "p": e.pvalue,
                "p (Holm)": e.p_adjusted,
                "verdict": e.verdict,
            }
            for e in parts
        ]
    )


def c2_numbers(c2, corr: pd.DataFrame) -> dict:
    """Glue values of the C2 verdict paragraph and its per-measure Markdown list."""
    by_measure = corr.groupby("measure", sort=False)["verdict"].apply(
        lambda v: ", ".join(f"{n} {w}" for w, n in v.value_counts().items())
    )
    lines = []
    for m, txt in by_measure.items():
        rows = corr[corr["measure"] == m]
        rhos = ", ".join(signed(r, 2) for r in rows["estimate"])
        names = ", ".join(dataset_label(d) for d in rows["dataset"])
        lines.append(f"- {metric_label(m)}: {txt} (mean ρ = {rhos} for {names})")
    counts = corr["verdict"].value_counts()
    return {
        "c2_verdict": c2.verdict.verdict,
        "c2_strength": c2.verdict.strength,
        "c2_reason": c2.verdict.reason,
        "c2_supported": int(counts.get("supported", 0)),
        "c2_pairs": len(corr),
        "c2_contradicted": int(counts.get("contradicted", 0)),
        "c2_undecided": int(counts.get("undecided", 0)),
        "c2_lines": "\n".join(lines),
    }


def same_order_text(
    analytics: pd.DataFrame, stage: str, measures=C.C2_MEASURES, algorithm: str = "local"
) -> str:
    """One sentence naming the pairs of C2's measures that order the units identically (the
    same ranks of their client-averaged values) on every seed of every dataset: such parts
    of C2 are one piece of evidence counted twice; "" when no pair does."""
    prof = C.unit_profiles(analytics, list(measures), algorithm, stage)
    ranks = prof.groupby(["dataset", "seed"])[list(measures)].rank(method="average")
    pairs = [
        (a, b)
        for i, a in enumerate(measures)
        for b in measures[i + 1 :]
        if ranks[a].notna().all() and ranks[a].equals(ranks[b])
    ]
    if not pairs:
        return ""
    names = "; ".join(f"{metric_label(a)} and {metric_label(b)}" for a, b in pairs)
    n_seeds = prof.groupby("dataset")["seed"].nunique()
    return (
        f"These measures order the units identically on every seed of every dataset "
        f"({int(n_seeds.sum())} seeds of {len(n_seeds)} datasets): {names}. Their parts of C2 "
        "are one piece of evidence counted twice, not two."
    )


def splits_by_epoch(table: pd.DataFrame, weights, units_of: dict, threshold: float):
    """The server's split from the sensitivities after every epoch, per algorithm and seed."""
    sens = table[table["metric"] == "sensitivity"]
    by_epoch = S.server_splits(
        sens, [threshold], weights=weights, by=["dataset", "algorithm", "round", "seed"]
    )
    by_epoch["epoch"] = by_epoch["round"] + 1
    by_epoch["n_units"] = by_epoch["dataset"].map({n: len(u) for n, u in units_of.items()})
    return by_epoch


def split_stability(by_epoch: pd.DataFrame) -> pd.DataFrame:
    """Per dataset and algorithm: the share of later (epoch, seed) measurements whose split is
    the epoch-1 split."""
    base = by_epoch[by_epoch["round"] == 0][["dataset", "seed", "algorithm", "p"]]
    merged = by_epoch.merge(base, on=["dataset", "seed", "algorithm"], suffixes=("", "_epoch1"))
    later = merged[merged["round"] > 0]
    return (
        later.assign(same=later["p"] == later["p_epoch1"])
        .groupby(["dataset", "algorithm"], sort=False)["same"]
        .mean()
        .reset_index()
    )


def stability_numbers(stability: pd.DataFrame, datasets) -> dict:
    out = {}
    for name in datasets:
        s = stability[stability["dataset"] == name].set_index("algorithm")["same"]
        out[f"{name}_stable_local"] = float(s.get("local", np.nan))
        out[f"{name}_stable_fedavg"] = float(s.get("fedavg", np.nan))
    return out


def stability_caption(stability: pd.DataFrame) -> str:
    """One line for the figure's caption: per dataset, the share of later epochs whose split is
    epoch 1's, under Local and FedAvg."""
    parts = []
    for name, g in stability.groupby("dataset", sort=False):
        s = g.set_index("algorithm")["same"]
        shares = " and ".join(
            f"{s[a]:.0%} ({algorithm_label(a)})" for a in ("local", "fedavg") if a in s
        )
        parts.append(f"{dataset_label(name)} {shares}")
    return "Later epochs give epoch 1's split in " + "; ".join(parts)


def batch_studies(datasets, plan, data, profile, device, counts, draws):
    """The split from m random mini-batches per client against the full-data split, for every
    dataset and seed; also returns the first-epoch models (reused by the cost study)."""
    studies, models_by_key = [], {}
    for name in datasets:
        for s in plan[name].seeds:
            config = make_config(name, profile, seed=s, device=device, progress=False)
            models = S.first_epoch_models(data[(name, s)], config)
            models_by_key[(name, s)] = models
            clients = [
                replace(c, x_train=c.x_train.to(device), y_train=c.y_train.to(device))
                for c in data[(name, s)].clients
            ]
            study = S.batch_study(models, clients, config.batch_size, counts, draws, s)
            studies.append(study.assign(dataset=name, seed=s))
    return pd.concat(studies, ignore_index=True), models_by_key


def batch_numbers(batches: pd.DataFrame, counts) -> dict:
    few, most = min(counts), max(counts)
    return {
        "batch_few": few,
        "batch_most": most,
        "batch_agree_few": float(batches[batches["batches"] == few]["agree"].mean()),
        "batch_agree_most": float(batches[batches["batches"] == most]["agree"].mean()),
    }


def batch_agreement(batches: pd.DataFrame) -> pd.DataFrame:
    """Share of draws whose split equals the full-data split, per dataset and m."""
    return batches.groupby(["dataset", "batches"], sort=False)["agree"].mean().reset_index()


def batch_table(agreement: pd.DataFrame) -> pd.DataFrame:
    """dataset × m: the share of draws equal to the full-data split, the columns headed
    "m = 1", "m = 2", … (a bare 1 2 4 does not say what it counts)."""
    table = agreement.pivot_table(index="dataset", columns="batches", values="agree", sort=False)
    table.columns = [f"m = {m}" for m in table.columns]
    return table.round(2)


def _ts(ts) -> str:
    return "t ∈ {" + ", ".join(f"{t:g}" for t in ts) + "}"


def threshold_numbers(agreement: pd.DataFrame, datasets) -> dict:
    """Glue values: per dataset, the thresholds reproducing each published split in every
    seed; across datasets, those reproducing each kind of reference everywhere."""
    lines = []
    for name in [n for n in datasets if n in S.REFERENCE_SPLITS]:
        refs = S.REFERENCE_SPLITS[name]

        def agree(ref, name=name):
            a = agreement[(agreement["dataset"] == name) & (agreement["reference"] == ref)]
            ok = a[a["agreement"] == 1.0]["threshold"].tolist()
            return _ts(ok) if ok else "no t of the grid"

        lines.append(
            f"- {dataset_label(name)}: the paper's transition (p = {refs['paper_transition']}) is "
            f"reproduced in every seed by {agree('paper_transition')}; the authors' code (p = "
            f"{refs['authors_config']}) by {agree('authors_config')}."
        )
    common = {
        ref: sorted(g.groupby("threshold")["agreement"].min().loc[lambda a: a == 1.0].index)
        for ref, g in agreement.groupby("reference", sort=False)
    }
    text = "; ".join(
        f"{_ts(ts) if ts else 'no threshold of the grid'} reproduces "
        f"{REFERENCE_NAMES.get(ref, ref)} on every dataset in every seed"
        for ref, ts in common.items()
    )
    return {
        "threshold_lines": "\n".join(lines) or "- (no dataset with a published split)",
        "threshold_common": text or "no dataset has a published split",
    }


def agreement_table(agreement: pd.DataFrame) -> pd.DataFrame:
    """threshold × (dataset, reference): the share of seeds reproducing the reference (the
    thresholds as rows: eight of them side by side would not fit the page)."""
    if not len(agreement):
        return pd.DataFrame()
    shown = agreement.assign(
        dataset=agreement["dataset"].map(dataset_label),
        reference=agreement["reference"].map(lambda r: REFERENCE_SHORT.get(r, r)),
    )
    return shown.pivot_table(
        index="threshold", columns=["dataset", "reference"], values="agreement", sort=False
    ).round(2)


def metric_costs(datasets, plan, data, models_by_key, device) -> pd.DataFrame:
    """Time of the sensitivity against the Hutchinson traces of every unit on one client's
    model after one epoch, per dataset (medians, ratio and its quartiles)."""
    rows = []
    for name in datasets:
        p = plan[name]
        s0 = p.seeds[0]
        c = data[(name, s0)].clients[0]
        n = min(p.settings.hessian_samples or len(c.y_train), len(c.y_train))
        x, y = c.x_train[:n].to(device), c.y_train[:n].to(device)
        probes = p.settings.hutchinson_probes
        cost = S.metric_cost(models_by_key[(name, s0)][0], x, y, n_probes=probes)
        rows.append({"dataset": name, "samples": n, "probes": probes, **cost})
    return pd.DataFrame(rows)


COST_SPEC = ".3g"
"""Every timing ratio of the chapter, in its table and its prose, at three significant digits."""


def cost_numbers(costs: pd.DataFrame) -> dict:
    """Glue values of the cost paragraph, each ratio named by its dataset, in the table's (the
    chapter's) order: ``cost_measured`` (median ratio with its quartiles), ``cost_extrapolated``
    (at 100 probes), ``cost_summary`` (medians, "27.6× (Heart)") and ``cost_probes``."""

    def x(v) -> str:
        return number_text(float(v), COST_SPEC)

    rows = list(costs.itertuples())
    names = [dataset_label(r.dataset) for r in rows]
    measured = [
        f"{x(r.ratio)} times the sensitivity on {n} (quartiles of the per-repeat ratio "
        f"{x(r.ratio_q1)}–{x(r.ratio_q3)})"
        if i == 0
        else f"{x(r.ratio)} times on {n} ({x(r.ratio_q1)}–{x(r.ratio_q3)})"
        for i, (r, n) in enumerate(zip(rows, names, strict=True))
    ]
    return {
        "cost_repeats": int(costs["repeats"].iloc[0]),
        "cost_measured": _and(measured),
        "cost_extrapolated": _and(
            [
                f"{x(r.ratio * 100 / r.probes)} times on {n}"
                for r, n in zip(rows, names, strict=True)
            ]
        ),
        "cost_summary": _and([f"{x(r.ratio)}× ({n})" for r, n in zip(rows, names, strict=True)]),
        "cost_probes": _and([f"{int(r.probes)} on {n}" for r, n in zip(rows, names, strict=True)]),
    }
