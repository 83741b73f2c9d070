"""The grid plan: which runs a grid (dataset × algorithm × learning rate × seed) needs.

One :class:`PairPlan` per (dataset, algorithm): its tuning runs, evaluation seeds and, once tuned,
its rate. A tuning run at the chosen rate on an evaluation seed is reused; the quick profile tunes
on evaluation seed 0 (for time), the paper profile on separate seeds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from playerfl_core.fl.algorithms import ALGORITHMS, is_algorithm
from playerfl_core.fl.schema import COLUMNS
from playerfl_core.study import machine
from playerfl_core.study.code_versions import equivalent_codes
from playerfl_core.study.grid_result import GridResult
from playerfl_core.study.run_store import ERROR, OK, RunSpec, Store, load_data_cached
from playerfl_core.study.split_sweeps import model_units
from playerfl_core.study.tuning import chosen_lr, tuning_scores, widened_lr

SPLIT_PREFIX = "prefix_p"
"""``prefix_p<k>``: federate units 1..k at the LR tuned for PLayer-FL (the split sweep)."""


def split_algorithms(dataset: str, profile: str) -> list[str]:
    """``prefix_p0`` … ``prefix_pL`` for the model of ``dataset`` (L its number of units)."""
    units = model_units(load_data_cached(dataset, profile, 0))
    return [f"{SPLIT_PREFIX}{k}" for k in range(len(units) + 1)]


def algorithm_names(algorithms) -> list[str]:
    """The algorithm names of a grid: ``"all"``/None, a comma-separated string or a list."""
    if algorithms in ("all", None):
        names = list(ALGORITHMS)
    elif isinstance(algorithms, str):
        names = [a.strip() for a in algorithms.split(",") if a.strip()]
    else:
        names = list(algorithms)
    if not names:
        raise ValueError(
            f"No algorithm given ({algorithms!r}); name at least one, e.g. 'local,fedavg', or "
            "'all'."
        )
    for name in names:
        if not is_algorithm(name):
            raise ValueError(
                f"Unknown algorithm {name!r}. Available: {', '.join(ALGORITHMS)}, or "
                "prefix_p<k> for the split sweep."
            )
    return names


@dataclass
class PairPlan:
    """One (dataset, algorithm): tune its rate on the tuning seeds (unless known), then evaluate."""

    seeds: tuple[int, ...]
    tune: list[RunSpec] = field(default_factory=list)
    lr: float | None = None
    """The learning rate to evaluate: None until tuning has decided, NaN when it failed."""
    lrs: tuple[float, ...] = ()
    tune_seeds: tuple[int, ...] = ()
    widen: int = 0
    widened: list[float] = field(default_factory=list)
    follow: tuple[str, str] | None = None
    """A split-sweep pair takes the learning rate of this pair (PLayer-FL's) instead of tuning."""


class GridPlan:
    """Every run a grid needs, which are finished, and what can start now; :meth:`resolve` picks a
    pair's rate once its tuning runs finish, then :meth:`todo` lists its evaluation runs."""

    def __init__(
        self,
        store: Store,
        profile: str,
        *,
        eval_timing: str = "after_aggregation",
        rounds: int | None = None,
        loss: str = "cross_entropy",
        augment: bool = False,
        protocol: str = "book",
        code: str = "",
        fresh: bool = False,
        retry_errors: bool = True,
        recompute_stale: bool = False,
    ):
        self.store, self.profile, self.code = store, profile, code
        self.options = (eval_timing, rounds, loss, augment, protocol)
        self.fresh, self.retry_errors, self.recompute_stale = fresh, retry_errors, recompute_stale
        self.same_as_now = equivalent_codes(code)
        """Fingerprints checked to give this code's runs bit for bit (``code`` included): their
        stored runs are current, neither flagged ``stale_code`` nor redone by
        ``recompute_stale``."""
        self.pairs: dict[tuple[str, str], PairPlan] = {}
        self.spec_stage: dict[RunSpec, str] = {}
        """Tuning runs (stage "tune"); any other run of the plan is an evaluation run."""
        self.records: dict[RunSpec, dict] = {}
        """Finished runs' manifest entries (computed in this call, or found in the store)."""

    def spec(self, dataset: str, algorithm: str, lr: float, seed: int) -> RunSpec:
        return RunSpec(dataset, algorithm, lr, seed, self.profile, *self.options)

    def add_dataset(
        self,
        dataset: str,
        algorithms: list[str],
        settings: dict,
        fixed_lr: dict,
        splits: bool = False,
    ) -> None:
        """Plan ``dataset``: its split sweep (if ``splits``), then ``algorithms``."""
        ds, s = dataset, settings
        for alg in split_algorithms(ds, self.profile) if splits else []:
            self.pairs[(ds, alg)] = PairPlan(
                seeds=s["seeds"], lr=fixed_lr.get((ds, alg)), follow=(ds, "playerfl")
            )
        for alg in algorithms:
            fixed = (ds, alg) in fixed_lr
            if fixed:
                tune, lr = [], float(fixed_lr[(ds, alg)])
            else:
                tune = [self.spec(ds, alg, lr, t) for lr in s["lrs"] for t in s["tune_seeds"]]
                lr = s["lrs"][0] if not s["tune_seeds"] else None
            self.pairs[(ds, alg)] = PairPlan(
                seeds=s["seeds"],
                tune=tune,
                lr=lr,
                lrs=(lr,) if fixed else s["lrs"],
                tune_seeds=s["tune_seeds"],
                widen=0 if fixed else s["widen"],
            )
            self.spec_stage.update(dict.fromkeys(tune, "tune"))

    def eval_specs(self, key: tuple[str, str], lr: float | None) -> list[RunSpec]:
        """The pair's evaluation runs at ``lr``; none for None (undecided) or NaN (failed)."""
        if lr is None or math.isnan(lr):
            return []
        return [self.spec(*key, lr, seed) for seed in self.pairs[key].seeds]

    def done(self, spec: RunSpec) -> bool:
        """Finished (in this call, or stored unless ``fresh``); failed errors are retried."""
        if spec in self.records:
            return True
        rec = None if self.fresh else self.store.record(spec)
        if rec is None or (rec["status"] == ERROR and self.retry_errors):
            return False
        if self.recompute_stale and rec.get("code", self.code) not in self.same_as_now:
            return False
        self.records[spec] = rec
        return True

    def resolve(self) -> None:
        """Choose the LR of every pair whose tuning runs all finished; widen at an edge."""
        for (ds, alg), p in self.pairs.items():
            while p.lr is None and p.tune and all(self.done(sp) for sp in p.tune):
                lr = chosen_lr(p.tune, self.records, self.store)
                extra = widened_lr(lr, p.lrs) if len(p.widened) < p.widen else None
                if extra is None:
                    p.lr = lr
                    break
                p.widened.append(extra)
                p.lrs = tuple(sorted({*p.lrs, extra}, reverse=True))
                new = [self.spec(ds, alg, extra, t) for t in p.tune_seeds]
                p.tune = [*p.tune, *new]
                self.spec_stage.update(dict.fromkeys(new, "tune"))
        for p in self.pairs.values():
            if p.lr is None and p.follow is not None:
                p.lr = self.pairs[p.follow].lr

    def todo(self) -> tuple[list[RunSpec], int]:
        """Runs that can start now, and the number still to run in total."""
        ready, n_left = [], 0
        for key, p in self.pairs.items():
            tune_left = [sp for sp in p.tune if not self.done(sp)]
            ready += tune_left
            n_left += len(tune_left)
            if p.lr is None:
                tuned = {sp.seed for sp in p.tune}
                n_left += len([s for s in p.seeds if s not in tuned])
            else:
                ev = [sp for sp in self.eval_specs(key, p.lr) if not self.done(sp)]
                ready += ev
                n_left += len(ev)
        return list(dict.fromkeys(ready)), n_left

    def undecided_tuning(self) -> list[RunSpec]:
        """Tuning runs of the pairs whose learning rate is not chosen yet."""
        return [sp for p in self.pairs.values() if p.lr is None for sp in p.tune]

    def unscheduled(self) -> list[RunSpec]:
        """Evaluation runs whose LR is not chosen yet, with a stand-in LR for the time estimate."""
        out = []
        for key, p in self.pairs.items():
            lrs = p.lrs or self.pairs[p.follow].lrs
            if p.lr is None and lrs:
                tuned = {sp.seed for sp in p.tune}
                out += [sp for sp in self.eval_specs(key, lrs[0]) if sp.seed not in tuned]
        return out

    def collect(self, computed: int) -> GridResult:
        """The grid's tables from the finished runs (every run of the plan must be done)."""
        records, store, code, same_as_now = self.records, self.store, self.code, self.same_as_now
        eval_tables, tune_tables, status_rows, tuning_rows, chosen_rows = [], [], [], [], []
        notes = []
        seen = set()
        for key, p in self.pairs.items():
            ds, alg = key
            tune_ok = [store.table(sp) for sp in p.tune if records[sp]["status"] == OK]
            tune_tables += tune_ok
            if p.tune:
                scores = tuning_scores(p.tune, records, tune_ok)
                scores["chosen"] = scores["lr"] == p.lr
                scores["added"] = scores["lr"].isin(p.widened)
                tuning_rows.append(scores)
            lr_from = p.follow[1] if p.follow is not None else alg
            chosen_rows.append((ds, alg, p.lr, bool(p.tune), lr_from, len(p.widened)))
            notes += [
                f"WIDENED: {ds}/{alg}: the chosen rate sat at an edge of the grid, so tuning also "
                f"tried lr={extra:g}."
                for extra in p.widened
            ]
            if p.lr is None or math.isnan(p.lr):
                why = (
                    f"its learning rate comes from {p.follow[1]}, whose tuning failed"
                    if p.follow is not None
                    else "every learning rate failed during tuning"
                )
                notes.append(f"EXCLUDED: {ds}/{alg}: {why}; no evaluation runs.")
            specs = self.eval_specs(key, p.lr)
            eval_tables += [store.table(sp) for sp in specs if records[sp]["status"] == OK]
            for sp in [*p.tune, *specs]:
                if sp in seen:
                    continue
                seen.add(sp)
                rec = records[sp]
                tuned = sp in self.spec_stage
                stage = "tune+eval" if tuned and sp in specs else ("tune" if tuned else "eval")
                stale = rec.get("code", code) not in same_as_now
                run = (rec["run_id"], sp.dataset, sp.algorithm, sp.lr, sp.seed, stage)
                kept = (rec["status"], rec.get("error", ""), rec.get("seconds"))
                status_rows.append((*run, *kept, stale, machine.key(rec.get("machine"))))
        empty = pd.DataFrame(columns=COLUMNS)
        table = pd.concat(eval_tables, ignore_index=True) if eval_tables else empty
        tuning_table = pd.concat(tune_tables, ignore_index=True) if tune_tables else empty
        tuning = (
            pd.concat(tuning_rows, ignore_index=True)
            if tuning_rows
            else pd.DataFrame(
                columns=["dataset", "algorithm", "lr", "n_runs", "n_ok", "score", "chosen", "added"]
            )
        )
        chosen_columns = ["dataset", "algorithm", "lr", "tuned", "lr_from", "widened"]
        chosen = pd.DataFrame(chosen_rows, columns=chosen_columns)
        columns = ["run_id", "dataset", "algorithm", "lr", "seed", "stage", "status", "error"]
        status = pd.DataFrame(status_rows, columns=[*columns, "seconds", "stale_code", "machine"])
        return GridResult(table, tuning_table, tuning, chosen, status, store, computed, notes)
