"""Chapter 03 ("The federation-sensitivity metric"): the measurements after each epoch, claim C2
and the metric's cost. :mod:`.sensitivity_splits`' names are importable from here (``R.<name>``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from playerfl_core.book.analysis_plots import metric_label
from playerfl_core.book.reports.divergence import unit_summary
from playerfl_core.book.reports.sensitivity_splits import (  # noqa: F401 (the chapter's R.)
    REFERENCE_NAMES,
    REFERENCE_SHORT,
    agreement_table,
    batch_agreement,
    batch_numbers,
    batch_studies,
    batch_table,
    fallback_text,
    fallback_thresholds,
    split_numbers,
    split_stability,
    split_table,
    splits_by_epoch,
    stability_caption,
    stability_numbers,
    threshold_numbers,
)
from playerfl_core.book.reports.table_text import and_list, signed
from playerfl_core.book.style import client_label, dataset_label
from playerfl_core.fl.profiles import make_config
from playerfl_core.measure import layer_studies as S
from playerfl_core.stats import claims as C
from playerfl_core.stats.decisions import strength_text


def train_weights(data: dict):
    """The server's client weights for a (dataset, seed) key: training-set sizes."""
    return lambda key: {
        i: c.n_train for i, c in enumerate(data[(key["dataset"], key["seed"])].clients)
    }


def pruning_demo(data: dict, plan: dict, name: str, profile: str, device) -> dict:
    """Zero each parameter of the first client's head after one epoch against the first-order
    prediction: the check table, the correlation and where it was measured."""
    seed = plan[name].seeds[0]
    fd = data[(name, seed)]
    config = make_config(name, profile, seed=seed, device=device, progress=False)
    model = S.first_epoch_models(fd, config)[0]
    c0, head = fd.clients[0], model.units[-1]
    x, y = c0.x_train.to(device), c0.y_train.to(device)
    check = S.pruning_check(model, x, y, head, max_params=120)
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
    """Per-client quantities after one epoch over seeds, one 'Local = FedAvg' line per dataset."""
    return unit_summary(first).assign(algorithm="Local = FedAvg")


def units_by_dataset(first: pd.DataFrame, datasets) -> dict[str, list[str]]:
    """Each dataset's layer units in depth order."""
    rows = {name: first[first["dataset"] == name] for name in datasets}
    return {name: list(g.sort_values("depth")["unit"].unique()) for name, g in rows.items()}


def c2_parts(c2) -> pd.DataFrame:
    """C2's (dataset, measure) parts with the dataset and measure in columns of their own."""
    parts = c2.parts["part"].str.split(": ")
    return c2.parts.assign(dataset=parts.str[0], measure=parts.str[1])


def c2_table(corr: pd.DataFrame) -> pd.DataFrame:
    """The C2 tests as shown, the strength as :func:`strength_text` writes it."""
    shown = corr[["dataset", "measure", "estimate", "n", "p", "p_holm", "verdict", "strength"]]
    parts = zip(shown["verdict"], shown["strength"], shown["estimate"], strict=True)
    strength = [strength_text(v, s, e) for v, s, e in parts]
    out = shown.rename(columns={"estimate": "mean ρ", "n": "seeds"})
    return out.assign(measure=shown["measure"].map(metric_label), strength=strength)


def rho_ranges(table: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, measure): mean and range over seeds of ρ(sensitivity, measure), epoch 1."""
    diagnostic = [*C.C2_MEASURES, "hessian_trace_per_param"]
    per_seed, _ = C.metric_correlation_tests(table, "sensitivity", diagnostic, "local", "epoch 1")
    by = per_seed.groupby(["dataset", "measure"], sort=False)["rho"]
    ranges = by.agg(mean="mean", lo="min", hi="max").reset_index()
    return ranges.assign(
        dataset=ranges["dataset"].map(dataset_label), measure=ranges["measure"].map(metric_label)
    )


def per_parameter_diagnostic(table: pd.DataFrame) -> pd.DataFrame:
    """Not part of C2: sensitivity against the Hessian trace per parameter, Holm-adjusted."""
    tests = C.metric_correlation_tests(
        table, "sensitivity", ["hessian_trace_per_param"], "local", "epoch 1"
    )[1]
    return pd.DataFrame(
        [
            {
                "dataset": dataset_label(e.part.split(": ")[0]),
                "mean ρ": e.estimate,
                "p": e.pvalue,
                "p (Holm)": e.p_adjusted,
                "verdict": e.verdict,
            }
            for e in C.holm_decide(tests)
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
        **{f"c2_{k}": getattr(c2.verdict, k) for k in ("verdict", "strength", "reason")},
        "c2_supported": int(counts.get("supported", 0)),
        "c2_pairs": len(corr),
        "c2_contradicted": int(counts.get("contradicted", 0)),
        "c2_undecided": int(counts.get("undecided", 0)),
        "c2_lines": "\n".join(lines),
    }


def same_order_text(
    analytics: pd.DataFrame, stage: str, measures=C.C2_MEASURES, algorithm: str = "local"
) -> str:
    """One sentence naming the pairs of C2's measures that rank the units identically on every
    seed of every dataset (one piece of evidence counted twice); "" when no pair does."""
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


def metric_costs(datasets, plan, data, models_by_key, device) -> pd.DataFrame:
    """Per dataset, the time of the sensitivity against the Hutchinson traces of every unit on one
    client's model after one epoch (medians, ratio and its quartiles)."""
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


def cost_numbers(costs: pd.DataFrame) -> dict:
    """Glue values of the cost paragraph: only what holds on every machine (nbval compares it)."""
    rows = list(costs.itertuples())
    not_slower = [dataset_label(r.dataset) for r in rows if not r.ratio > 1]
    direction = (
        f"not slower than the sensitivity on {and_list(not_slower)}"
        if not_slower
        else "slower than the sensitivity on every dataset"
    )
    return {
        "cost_repeats": int(costs["repeats"].iloc[0]),
        "cost_probes": and_list([f"{int(r.probes)} on {dataset_label(r.dataset)}" for r in rows]),
        "cost_direction": direction,
    }
