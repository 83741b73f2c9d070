"""What a grid's runs cost: seconds per run for ordering and the time left (:class:`RunTimer`),
and the table ``playerfl grid --dry-run`` prints (:func:`grid_cost`, :func:`cost_report`).

Seconds per run come from runs the store measured (same dataset and algorithm, else same dataset),
else from the declaration's ``seconds_per_run`` × :data:`PRIOR_FACTOR` × :func:`size_factor` (the
profile's training work relative to the quick sizes); an estimate on the high side.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd
import torch
from torch.utils.flop_counter import FlopCounterMode

from data_prep.registry import federation
from playerfl_core.fl.models import model_for
from playerfl_core.fl.profiles import SIZE_OF, make_config
from playerfl_core.study.run_store import OK, Store, load_data_cached

PRIOR_FACTOR = {"pfedme": 4.0, "ditto": 2.0}
"""How much slower than the dataset's ``seconds_per_run`` an algorithm is: used only until the
store holds measured timings (pFedMe trains K times per batch, Ditto trains two models)."""


class RunTimer:
    """Seconds per run of a grid's profile: measured in the store where it can, else declared
    and scaled (module docstring). :meth:`add` counts a run as it finishes."""

    def __init__(self, store: Store, profile: str = "quick"):
        self.profile = profile
        self.by_pair: dict[tuple, list[float]] = {}
        self.by_dataset: dict[str, list[float]] = {}
        for rec in store.timing_records():  # earlier sessions' timings, from the manifests
            self.add(rec)

    def add(self, rec: dict) -> None:
        """Count a finished run's time; unreadable records and other profiles' runs are skipped."""
        if not isinstance(rec, dict) or rec.get("status") != OK:
            return
        seconds, dataset = rec.get("seconds"), rec.get("dataset")
        if not isinstance(seconds, int | float) or not math.isfinite(seconds) or not dataset:
            return
        if rec.get("profile", self.profile) != self.profile:
            return
        self.by_pair.setdefault((dataset, rec.get("algorithm")), []).append(seconds)
        self.by_dataset.setdefault(dataset, []).append(seconds)

    def seconds(self, spec) -> tuple[float, str]:
        """One run's expected seconds and what the figure rests on."""
        pair = self.by_pair.get((spec.dataset, spec.algorithm))
        if pair:
            return float(np.mean(pair)), f"measured ({len(pair)} runs)"
        ds = self.by_dataset.get(spec.dataset)
        if ds:
            return float(np.mean(ds)), f"measured, other algorithms ({len(ds)} runs)"
        declared = federation(spec.dataset).seconds_per_run
        factor = PRIOR_FACTOR.get(spec.algorithm, 1.0)
        scale = size_factor(spec.dataset, self.profile)
        basis = f"declared {declared:g} s" + (f" × {factor:g}" if factor != 1 else "")
        basis += f" × {scale:.3g} ({self.profile} sizes)" if scale != 1 else ""
        return declared * factor * scale, basis

    def estimate(self, specs) -> float:
        """Expected seconds of all ``specs`` together (one after another)."""
        return sum(self.seconds(sp)[0] for sp in specs)


@functools.cache
def size_factor(dataset: str, profile: str) -> float:
    """Training work of one run at ``profile``'s sizes ÷ at the quick sizes (1 for the quick
    sizes): rounds × local epochs × training images × operations per image (module docstring)."""
    if SIZE_OF[profile] == "quick":
        return 1.0
    return _work(dataset, profile) / _work(dataset, "quick")


def _work(dataset: str, profile: str) -> float:
    data = load_data_cached(dataset, profile, 0)
    config = make_config(dataset, profile, device="cpu")
    model = model_for(data, config.width, 0)
    x = data.clients[0].x_train[:1]
    with FlopCounterMode(display=False) as counter:
        out = model(x)
        (out.float().sum() if torch.is_tensor(out) else sum(o.sum() for o in out)).backward()
    per_image = counter.get_total_flops() or sum(p.numel() for p in model.parameters())
    images = sum(c.n_train for c in data.clients)
    return float(config.rounds * config.local_epochs * images * per_image)


COLUMNS = ["dataset", "algorithm", "tuning", "evaluation", "stored", "s/run", "CPU-hours", "basis"]


def grid_cost(plan) -> pd.DataFrame:
    """Per (dataset, algorithm) of a plan: the runs still to compute and already stored, the
    expected seconds per run, CPU-hours and what they rest on."""
    timer = RunTimer(plan.store, plan.profile)
    ready, _ = plan.todo()
    todo = [*ready, *plan.unscheduled()]
    rows = []
    for key, p in plan.pairs.items():
        mine = [sp for sp in todo if (sp.dataset, sp.algorithm) == key]
        tune = [sp for sp in mine if sp in p.tune]
        evaluation = [sp for sp in mine if sp not in p.tune]
        stored = sum(plan.done(sp) for sp in {*p.tune, *plan.eval_specs(key, p.lr)})
        seconds, basis = timer.seconds(plan.spec(*key, p.lr or (p.lrs or (0.0,))[0], 0))
        rows.append(
            [*key, len(tune), len(evaluation), stored, seconds,
             len(mine) * seconds / 3600, basis]
        )  # fmt: skip
    return pd.DataFrame(rows, columns=COLUMNS)


def widening_runs(plan) -> int:
    """Tuning runs a grid may still add where a chosen rate sits at an edge of the grid."""
    return sum(
        (p.widen - len(p.widened)) * len(p.tune_seeds)
        for p in plan.pairs.values()
        if p.lr is None and p.tune
    )


def cost_report(cost: pd.DataFrame, profile: str, widen: int = 0, limit: int = 60) -> str:
    """The dry run's text: one line per (dataset, algorithm), the totals and the assumptions."""
    shown = cost.copy()
    if len(shown) > limit:
        shown = cost.groupby("dataset", sort=False, as_index=False).agg(
            algorithm=("algorithm", "size"), tuning=("tuning", "sum"),
            evaluation=("evaluation", "sum"), stored=("stored", "sum"),
            **{"CPU-hours": ("CPU-hours", "sum")},
        )  # fmt: skip
        shown["algorithm"] = shown["algorithm"].map(lambda n: f"{n} algorithms")
    else:
        shown["s/run"] = shown["s/run"].round(1)
    shown["CPU-hours"] = shown["CPU-hours"].round(2)
    n_tune, n_eval = int(cost["tuning"].sum()), int(cost["evaluation"].sum())
    hours = float(cost["CPU-hours"].sum())
    lines = [
        f"Grid, profile {profile}: {n_tune + n_eval} runs to compute ({n_tune} tuning, "
        f"{n_eval} evaluation), {int(cost['stored'].sum())} already stored.",
        shown.to_string(index=False),
        f"Total: about {hours:.3g} CPU-hours (one CPU thread per run); wall time is that ÷ the "
        "number of runs computing at once.",
    ]
    if widen:
        lines.append(
            f"Tuning may add up to {widen} more runs where a chosen learning rate sits at an "
            "edge of the grid (not counted)."
        )
    if cost["basis"].str.startswith("declared").any():
        lines.append(
            "Where no run is measured yet, seconds per run are the dataset declaration's "
            "seconds_per_run (one quick-size run on one CPU thread), times the algorithm's "
            "known slowness, times the profile's training work relative to the quick sizes "
            "(rounds × training images × operations per image); bigger models and batches "
            "usually run faster per operation, so for the paper sizes this errs on the high "
            "side. Runs stored for this profile replace the guess: compute a few first "
            "(e.g. --algorithms fedavg --seeds 0) for a measured estimate. On a GPU, runs are "
            "faster than these CPU figures (not measured here)."
        )
    return "\n".join(lines)
