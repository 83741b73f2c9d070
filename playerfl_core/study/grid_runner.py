"""Running a grid plan: a pool of worker processes (or inline), longest expected run first,
with a progress bar and an estimate of the time left.

Runs execute with one CPU thread each by default; Ctrl-C or SIGTERM stops the workers and
raises :class:`GridInterrupted` (finished runs are stored, so calling again resumes).
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import math
import multiprocessing
import os

import numpy as np
import torch
from tqdm import tqdm

from data_prep.registry import federation
from playerfl_core.study.run_store import OK, RunSpec, Store, execute
from playerfl_core.study.workers import init_worker, interrupts_as_keyboard, stop_workers


class GridInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped a grid; its message says how to resume."""


def run_plan(
    plan,
    ready: list[RunSpec],
    n_left: int,
    device: str,
    workers: int,
    threads: int,
    progress: bool,
) -> int:
    """Run everything ``plan`` (a :class:`~playerfl_core.study.grid_plan.GridPlan`) needs, resolving
    as runs finish; return how many ran.

    Longest expected run first, at most ``workers`` in flight: the slow runs (large
    datasets, pFedMe) do not end up alone at the tail while other workers idle.
    """
    store, code = plan.store, plan.code
    timer = _Timer(store)
    computed = 0
    bar = tqdm(
        total=n_left,
        desc=f"grid {plan.profile}",
        unit="run",
        disable=not progress or not n_left,
        bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} runs [{elapsed}{postfix}]",
    )
    pool = _make_pool(workers if n_left > 1 else 1, threads)
    previous_threads = torch.get_num_threads()
    interrupted = False
    try:
        with interrupts_as_keyboard():
            pending: dict[cf.Future, RunSpec] = {}
            while True:
                queue = sorted(
                    (sp for sp in ready if sp not in pending.values()),
                    key=lambda sp: -timer.estimate([sp]),
                )
                for sp in queue[: max(workers, 1) - len(pending)]:
                    fut = pool.submit(execute, sp, str(store.root), device, threads, code)
                    pending[fut] = sp
                if not pending:
                    break
                finished, _ = cf.wait(list(pending), return_when=cf.FIRST_COMPLETED)
                for fut in finished:
                    sp = pending.pop(fut)
                    try:
                        plan.records[sp] = fut.result()
                    except cf.process.BrokenProcessPool as err:
                        raise RuntimeError(
                            "A grid worker process died. From a script, call run_grid under "
                            "`if __name__ == '__main__':` (spawned workers re-import the "
                            "script), or pass workers=1. Finished runs are stored; calling "
                            "again resumes."
                        ) from err
                    computed += 1
                    timer.add(plan.records[sp])
                plan.resolve()
                ready, n_left = plan.todo()
                left = dict.fromkeys([*pending.values(), *ready, *plan.unscheduled()])
                eta = timer.estimate(left) / max(workers, 1)
                bar.total = max(bar.total, bar.n + len(finished) + n_left)  # widening adds
                bar.set_postfix_str(f"~{_fmt(eta)} left", refresh=False)
                bar.update(len(finished))
    except KeyboardInterrupt as err:
        interrupted = True
        stop_workers(pool)
        raise GridInterrupted(
            f"grid stopped ({err or 'Ctrl-C'}). The runs finished so far are stored in "
            f"{store.root}; run the same command again to resume (nothing finished is "
            "recomputed)."
        ) from None
    finally:
        bar.close()
        pool.shutdown(wait=not interrupted, cancel_futures=True)
        torch.set_num_threads(previous_threads)
    return computed


class _InlineExecutor:
    """Runs a submitted call at once, in this process (workers=1, e.g. GPU or tests)."""

    def submit(self, fn, *args):
        fut = cf.Future()
        fut.set_result(fn(*args))
        return fut

    def shutdown(self, wait=True, cancel_futures=False):
        pass


def _make_pool(workers: int, threads: int):
    if workers <= 1:
        return _InlineExecutor()
    return cf.ProcessPoolExecutor(
        max_workers=workers,
        initializer=init_worker,
        initargs=(threads, os.getpid()),
        mp_context=multiprocessing.get_context("spawn"),
    )


class _Timer:
    """Estimates seconds per run from finished runs: same (dataset, algorithm), else dataset."""

    def __init__(self, store: Store):
        self.by_pair: dict[tuple, list[float]] = {}
        self.by_dataset: dict[str, list[float]] = {}
        if store.runs.exists():  # earlier sessions' timings, from the manifests
            for f in list(store.runs.glob("*.json"))[:2000]:
                try:
                    self.add(json.loads(f.read_text()))
                except (OSError, ValueError):
                    continue

    def add(self, rec: dict) -> None:
        """Count a finished run's time; anything unreadable (a damaged record) is skipped."""
        if not isinstance(rec, dict) or rec.get("status") != OK:
            return
        seconds, dataset = rec.get("seconds"), rec.get("dataset")
        if not isinstance(seconds, int | float) or not math.isfinite(seconds) or not dataset:
            return
        self.by_pair.setdefault((dataset, rec.get("algorithm")), []).append(seconds)
        self.by_dataset.setdefault(dataset, []).append(seconds)

    def estimate(self, specs) -> float:
        total = 0.0
        for sp in specs:
            pair = self.by_pair.get((sp.dataset, sp.algorithm))
            if pair:
                total += float(np.mean(pair))
                continue
            ds = self.by_dataset.get(sp.dataset)
            base = float(np.mean(ds)) if ds else federation(sp.dataset).seconds_per_run
            total += base * _PRIOR_FACTOR.get(sp.algorithm, 1.0)
        return total


_PRIOR_FACTOR = {"pfedme": 4.0, "ditto": 2.0}
"""How much slower than the dataset's ``seconds_per_run`` (its declaration's rough seconds per
quick run on one CPU thread) an algorithm is: used only to order runs and estimate the time left
until the store holds measured timings."""


def _fmt(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"
