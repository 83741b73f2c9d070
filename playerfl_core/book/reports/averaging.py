"""Numbers, tables and sentences of chapter 03a ("The algorithm and its metric"): how well the
first-order term and the paper's s_k predict the measured loss change under averaging."""

from __future__ import annotations

import numpy as np
import pandas as pd
from tqdm import tqdm

from data_prep import load
from playerfl_core.book.reports.tables import signed
from playerfl_core.book.style import dataset_label
from playerfl_core.fl.profiles import make_config
from playerfl_core.measure.averaging_check import client_averaged, first_epoch_averaging_check
from playerfl_core.stats import claims as C
from playerfl_core.stats.p_values import p_value_text

PREDICTORS = {
    "first_order": "first-order prediction g·(θ̄ − θ)",
    "sensitivity": "federation sensitivity sₖ",
}
"""The two predictors of the measured change, by column of the averaging check."""


def measure(datasets, seeds, profile: str, device) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The averaging check after one epoch on every dataset and seed: every (client, unit)
    measurement, and the client-averaged profile per (dataset, seed)."""
    frames = []
    for name in datasets:
        for s in tqdm(seeds, desc=name):
            data = load(name, profile=profile, seed=s)
            config = make_config(name, profile, seed=s, device=device, progress=False)
            check = first_epoch_averaging_check(data, config, progress=False)
            frames.append(check.assign(dataset=name, seed=s))
    effects = pd.concat(frames, ignore_index=True)
    return effects, client_averaged(effects, by=["dataset", "seed"])


def _accuracy_row(g: pd.DataFrame) -> pd.Series:
    def rel(col):
        return float(np.median(np.abs(g[col] - g["actual"]) / np.abs(g["actual"])))

    sign_right = float((np.sign(g["first_order"]) == np.sign(g["actual"])).mean())
    return pd.Series(
        {
            "measurements": len(g),
            "share of Δℓ > 0": float((g["actual"] > 0).mean()),
            "sign right (1st order)": sign_right,
            "median rel. error, 1st order": rel("first_order"),
            "median rel. error, 2nd order": rel("second_order"),
        }
    )


def prediction_quality(effects: pd.DataFrame) -> pd.DataFrame:
    """Per dataset: how often the first-order prediction has the measured change's sign, and
    the median relative errors of the first- and second-order predictions."""
    return effects.groupby("dataset", sort=False).apply(_accuracy_row, include_groups=False)


def quality_numbers(quality: pd.DataFrame) -> dict:
    """Glue values of the quality table and its Markdown summary."""
    out, lines = {}, []
    for name, r in quality.iterrows():
        out[f"{name}_sign_right"] = r["sign right (1st order)"]
        out[f"{name}_rel1"] = r["median rel. error, 1st order"]
        out[f"{name}_rel2"] = r["median rel. error, 2nd order"]
        out[f"{name}_positive"] = r["share of Δℓ > 0"]
        lines.append(
            f"- {dataset_label(name)}: the first-order prediction has the sign of the measured "
            f"change for {r['sign right (1st order)']:.0%} of the {int(r['measurements'])} "
            f"measurements, with a median relative error of "
            f"{r['median rel. error, 1st order']:.2f} "
            f"({r['median rel. error, 2nd order']:.2f} with the second-order term); averaging "
            f"raised the client's loss in {r['share of Δℓ > 0']:.0%} of them."
        )
    out["quality_lines"] = "\n".join(lines)
    return out


def ranking_tests(profiles: pd.DataFrame, datasets) -> dict:
    """Per predictor: rank-correlation evidence per dataset (Holm over datasets) and the verdict."""
    out = {}
    for column, what in PREDICTORS.items():
        on = {name: profiles[profiles["dataset"] == name] for name in datasets}
        tests = [
            C.rank_correlation_test(on[name], column, "actual", part=dataset_label(name))
            for name in datasets
        ]
        parts = C.holm_decide([t.evidence for t in tests])
        per_seed = pd.concat(
            [
                t.per_seed.assign(dataset=dataset_label(name), predictor=what)
                for t, name in zip(tests, datasets, strict=True)
            ],
            ignore_index=True,
        )
        out[column] = {"parts": parts, "verdict": C.combine(parts), "per_seed": per_seed}
    return out


def per_seed_table(tests: dict) -> pd.DataFrame:
    """Every seed's ρ between each predictor and the measured change, per dataset."""
    return pd.concat([t["per_seed"] for t in tests.values()], ignore_index=True)


def ranking_table(tests: dict) -> pd.DataFrame:
    rows = [
        {
            "predictor": PREDICTORS[c],
            "dataset": e.part,
            "mean ρ over seeds": round(e.estimate, 3),
            "seeds": e.n,
            "p": e.pvalue,
            "Holm p": e.p_adjusted,
            "verdict": e.verdict,
            "strength": e.strength,
        }
        for c, t in tests.items()
        for e in t["parts"]
    ]
    return pd.DataFrame(rows).set_index(["predictor", "dataset"])


def ranking_numbers(tests: dict) -> dict:
    """Glue values: each predictor's verdict, strength, reason and per-dataset lines."""
    out = {}
    for column, t in tests.items():
        out |= {
            f"{k}_{column}": getattr(t["verdict"], k) for k in ("verdict", "strength", "reason")
        }
        out[f"lines_{column}"] = "\n".join(
            f"- {e.part}: mean ρ = {signed(e.estimate, 2)} over {e.n} seeds, Holm-adjusted "
            f"p = {p_value_text(e.p_adjusted)}: {e.verdict} ({e.strength})."
            for e in t["parts"]
        )
        strongest = min(t["parts"], key=lambda e: e.p_adjusted)  # the intro's example
        rho = signed(strongest.estimate, 2)
        out[f"strongest_{column}"] = (
            f"{strongest.part}: mean rank correlation {rho} over {strongest.n} seeds"
        )
    return out
