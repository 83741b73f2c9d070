"""Does a recomputed run agree with its stored copy? Bit for bit where it was stored, and
statistically on any other machine.

Float32 training repeats bit for bit only on the same machine
(:func:`~playerfl_core.study.machine.key`); elsewhere the last bits differ and training amplifies
them, so runs recomputed there are judged over the sample (:func:`statistical_verdict`): the same
rows, round 0 within :data:`ROUND0_RTOL` on :data:`ROUND0_SHARE` of the runs, and the median
signed change of the selected test score within :data:`SELECTED_TOL`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from playerfl_core.fl.schema import COLUMNS
from playerfl_core.stats.results import client_scores

BITWISE, STATISTICAL = "bitwise", "statistical"
ROUND0_RTOL = 1e-2
"""Largest mean relative difference of a run's round-0 values (each |Δ| / max(|stored|, 1e-6),
capped at 1): across two CPUs at most 9e-3; two different algorithms typically 0.28."""
ROUND0_SHARE = 0.8
"""Share of sampled runs whose round 0 must agree (one odd run in five may differ)."""
SELECTED_TOL = 0.02
"""Largest |median over runs of the mean change| of each client's selected test score."""


def compare_run(fresh: pd.DataFrame, stored: pd.DataFrame) -> dict:
    """How a recomputed run's table differs from the stored one (both in the results schema)."""
    fresh = fresh[COLUMNS].reset_index(drop=True)
    stored = stored[COLUMNS].reset_index(drop=True)
    keys = [c for c in COLUMNS if c != "value"]
    same = fresh.shape == stored.shape and fresh[keys].astype(str).equals(stored[keys].astype(str))
    if not same:
        nan = float("nan")
        return dict(
            same_structure=False,
            identical=False,
            max_abs_diff=float("inf"),
            round0_rel=nan,
            round0_agrees=False,
            selected_diff=nan,
        )
    a, b = fresh["value"].to_numpy(float), stored["value"].to_numpy(float)
    both_nan = np.isnan(a) & np.isnan(b)
    diff = np.where(both_nan, 0.0, np.abs(a - b))
    first = (stored["round"] == stored["round"].min()).to_numpy()
    relative = np.minimum(diff[first] / np.maximum(np.abs(b[first]), 1e-6), 1.0)
    round0 = float(relative.mean()) if len(relative) else 0.0
    return dict(
        same_structure=True,
        identical=bool(np.all(diff == 0.0)),
        max_abs_diff=float(np.max(diff)) if len(diff) else 0.0,
        round0_rel=round0,
        round0_agrees=round0 <= ROUND0_RTOL,
        selected_diff=_selected_change(fresh, stored),
    )


def _selected_change(fresh: pd.DataFrame, stored: pd.DataFrame) -> float:
    """Mean change over clients of the test score at the best-validation round."""
    metrics = set(stored["metric"])
    metric = "macro_f1" if "macro_f1" in metrics else "accuracy" if "accuracy" in metrics else None
    if metric is None:
        return float("nan")
    new = client_scores(fresh, metric=metric).set_index("client")["value"]
    old = client_scores(stored, metric=metric).set_index("client")["value"]
    return float((new - old).mean())


def statistical_verdict(report: pd.DataFrame) -> tuple[bool, str]:
    """Whether runs recomputed on another machine are consistent with their stored copies,
    judged over the runs of ``report`` (rows of :func:`compare_run`); with one line saying why."""
    n = len(report)
    if n == 0:
        return True, "no run to compare"
    if not report["same_structure"].all():
        bad = report.loc[~report["same_structure"], "run_id"].tolist()
        return False, f"{len(bad)} of {n} runs have other rows than stored: {', '.join(bad[:3])}"
    share = float(report["round0_agrees"].mean())
    if share < ROUND0_SHARE:
        return False, (
            f"round 0 agrees to {ROUND0_RTOL:g} (relative) on {share:.0%} of {n} runs, below "
            f"{ROUND0_SHARE:.0%}: the stored runs were not computed by this code and settings"
        )
    shift = float(report["selected_diff"].dropna().median()) if n else 0.0
    if abs(shift) > SELECTED_TOL:
        return False, (
            f"selected test scores moved by {shift:+.3f} (median over {n} runs), beyond "
            f"±{SELECTED_TOL:g}: a systematic change, not last-bit drift"
        )
    return True, (
        f"consistent: round 0 agrees on {share:.0%} of {n} runs, selected test scores move by "
        f"{shift:+.3f} (median over runs, tolerance ±{SELECTED_TOL:g})"
    )
