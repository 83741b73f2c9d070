"""Numbers, tables and sentences of chapter 02 ("Layer-wise divergence", claim C1)."""

from __future__ import annotations

import pandas as pd

from playerfl_core.book.analysis_plots import metric_label
from playerfl_core.book.reports.tables import signed
from playerfl_core.book.style import dataset_label
from playerfl_core.measure import layer_studies as S
from playerfl_core.stats import claims as C
from playerfl_core.stats.p_values import p_value_text


def plan_table(plan: dict) -> pd.DataFrame:
    """What the analytics plan measures per dataset: seeds, epochs, Hessian samples, probes."""
    return pd.DataFrame(
        [
            {
                "dataset": dataset_label(name),
                "seeds": ", ".join(str(s) for s in p.seeds),
                "rounds": p.rounds or "profile's",
                "Hessian samples per client": p.settings.hessian_samples or "all",
                "Hutchinson probes": p.settings.hutchinson_probes,
                "CKA probe inputs per client": p.settings.probe_per_client,
            }
            for name, p in plan.items()
        ]
    ).set_index("dataset")


def measure(datasets, plan: dict, profile: str, device, **options) -> pd.DataFrame:
    """The long analytics table of every dataset, per its plan (by default the first and final
    stage of Local and FedAvg; ``options`` go to ``layer_analytics``)."""
    tables = [
        S.layer_analytics(
            name,
            seeds=plan[name].seeds,
            profile=profile,
            device=device,
            rounds=plan[name].rounds,
            settings=plan[name].settings,
            **options,
        )
        for name in datasets
    ]
    return pd.concat(tables, ignore_index=True)


def unit_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per-client quantities summarised over seeds, per dataset, algorithm, stage and unit."""
    per_client = table[table["other"] == S.NO_OTHER]
    return S.seed_summary(per_client, ["dataset", "algorithm", "stage", "metric", "depth", "unit"])


def seeds_text(plan: dict) -> str:
    """'3' or '3–5': the number of seeds per dataset, for the prose."""
    n = sorted({len(p.seeds) for p in plan.values()})
    return "–".join(str(k) for k in dict.fromkeys([n[0], n[-1]]))


def cka_numbers(summary: pd.DataFrame, datasets) -> dict:
    """Glue values of the CKA paragraph: 1 − CKA of the first and last unit per dataset."""
    cka = summary[summary["metric"] == "cka_dissimilarity"]
    out = {}
    for name in datasets:
        d = cka[cka["dataset"] == name]
        first, final, avg = (
            d[(d["stage"] == stage) & (d["algorithm"] == algorithm)].sort_values("depth")
            for stage, algorithm in (("first", "local"), ("final", "local"), ("final", "fedavg"))
        )
        out[f"{name}_first_unit1"] = float(first["mean"].iloc[0])
        out[f"{name}_first_last"] = float(first["mean"].iloc[-1])
        out[f"{name}_final_unit1"] = float(final["mean"].iloc[0])
        out[f"{name}_final_last"] = float(final["mean"].iloc[-1])
        out[f"{name}_fedavg_last"] = float(avg["mean"].iloc[-1])
        out[f"{name}_unit1"] = str(first["unit"].iloc[0])
        out[f"{name}_last"] = str(first["unit"].iloc[-1])
    return out


def cka_matrix_caption(summary: pd.DataFrame, name: str) -> str:
    """Caption line of the client × client figure: 1 − CKA of the first and last unit."""
    n = cka_numbers(summary, [name])
    first, last = n[f"{name}_final_unit1"], n[f"{name}_final_last"]
    verdict = "the last unit separates the clients more" if last > first else (
        "the first unit separates the clients at least as much as the last")  # fmt: skip
    return (
        f"{dataset_label(name)}: mean 1 − CKA {first:.3f} in {n[f'{name}_unit1']} and "
        f"{last:.2f} in {n[f'{name}_last']}; {verdict}"
    )


def cka_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Mean 1 − CKA per (dataset, algorithm, stage) and unit depth."""
    cka = summary[summary["metric"] == "cka_dissimilarity"]
    index = ["dataset", "algorithm", "stage"]
    wide = cka.pivot_table(index=index, columns="depth", values="mean", sort=False)
    return wide.round(4)  # the prose quotes the first unit to four decimals (0.0004, not 0.000)


def client_labels(table: pd.DataFrame, name: str) -> list[str]:
    """c1, c2, ... for the clients of dataset ``name``."""
    return [f"c{i + 1}" for i in range(int(table[table["dataset"] == name]["client"].max()) + 1)]


def trends_for_forest(trends: pd.DataFrame) -> pd.DataFrame:
    """A trend table in display names with the mean and range of ρ over seeds as mean/lo/hi."""
    return trends.assign(
        dataset=trends["dataset"].map(dataset_label),
        metric=trends["metric"].map(metric_label),
        mean=trends["rho_mean"],
        lo=trends["rho_min"],
        hi=trends["rho_max"],
    )


def _extremes(summary, metric, name, stage="first"):
    d = summary[
        (summary["metric"] == metric)
        & (summary["dataset"] == name)
        & (summary["stage"] == stage)
        & (summary["algorithm"] == "local")
    ]
    d = d.sort_values("depth")
    hi, lo = d.loc[d["mean"].idxmax()], d.loc[d["mean"].idxmin()]
    return f"{hi['unit']} (unit {hi['depth']} of {len(d)})", f"{lo['unit']} (unit {lo['depth']})"


def landscape_notes(summary: pd.DataFrame, datasets) -> str:
    """Markdown list: where the Hessian trace and the sensitivity peak, per dataset."""
    notes = []
    for name in datasets:
        trace_hi, _ = _extremes(summary, "hessian_trace", name)
        sens_hi, sens_lo = _extremes(summary, "sensitivity", name)
        notes.append(
            f"- {dataset_label(name)}: after one epoch the Hessian block trace is largest in "
            f"{trace_hi}; the sensitivity is largest in {sens_hi} and smallest in {sens_lo}."
        )
    return "\n".join(notes)


def landscape_caption(summary: pd.DataFrame, datasets) -> str:
    """One line for the figure's caption: where the sensitivity peaks after one epoch."""
    parts = [f"{dataset_label(n)} in {_extremes(summary, 'sensitivity', n)[0]}" for n in datasets]
    return "After one epoch the sensitivity is largest: " + "; ".join(parts)


def verdict_counts(trends: pd.DataFrame) -> str:
    """Markdown list: per metric, how many (dataset, stage) cells got each verdict."""
    lines = []
    for metric, g in trends.groupby("metric", sort=False):
        counts = g["verdict"].value_counts()
        parts = ", ".join(f"{counts[v]} {v}" for v in C.VERDICTS if v in counts)
        lines.append(f"- {metric_label(metric)}: {parts} of {len(g)} (dataset, stage) cells")
    return "\n".join(lines)


def c1_lines(c1, trend: pd.DataFrame, agree: pd.DataFrame, rises: pd.DataFrame) -> str:
    """Markdown: the C1 verdict and, per dataset, its evidence and the non-rising neighbours."""
    final = trend[(trend["algorithm"] == "local") & (trend["stage"] == "final")]
    final = final.set_index("dataset")
    agree_local = agree[agree["algorithm"] == "local"].set_index("dataset")
    v = c1.verdict
    lines = [f"**C1: {v.verdict}** (evidence: {v.strength}; {v.reason})."]
    for part in c1.parts.itertuples():
        name = part.part
        r = rises[rises["dataset"] == name]
        exceptions = [
            f"{row.pair} ({row.stage}: rises in {row.rises:.0%} of seeds)"
            for row in r.itertuples()
            if row.rises < 1
        ]
        text = (
            f"- {dataset_label(name)}: after one epoch mean ρ = {signed(part.estimate, 2)} over "
            f"{part.n} seeds, p = {p_value_text(part.p)} (Holm {p_value_text(part.p_holm)}): "
            f"{part.verdict} ({part.strength}); at the end of Local training mean ρ = "
            f"{signed(final.loc[name, 'rho_mean'], 2)} ({final.loc[name, 'verdict']}); "
            f"first-vs-final profile agreement mean ρ = "
            f"{signed(agree_local.loc[name, 'rho_mean'], 2)} ({agree_local.loc[name, 'verdict']}). "
        )
        text += (
            f"Non-rising neighbours: {'; '.join(exceptions)}."
            if exceptions
            else "Divergence rises at every step in every seed."
        )
        lines.append(text)
    return "\n".join(lines)
