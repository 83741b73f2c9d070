"""Running a grid plan on a backend (:mod:`~playerfl_core.study.backends`), longest expected run
first, with a progress bar and the time left.

Every run comes back to this process, which alone writes it into the store, so calling again
resumes. A stop raises :class:`GridInterrupted`, a dead worker
:class:`~playerfl_core.study.workers.WorkerDied`, a full disk :class:`GridStoreFull`.
"""

from __future__ import annotations

import concurrent.futures as cf
import signal

import torch
from tqdm import tqdm

from playerfl_core.study.grid_cost import RunTimer
from playerfl_core.study.ray_cluster import ClusterError, LostRun
from playerfl_core.study.run_store import RunSpec, compute
from playerfl_core.study.workers import Stopped, WorkerDied, interrupts_as_keyboard, stop_reason

RESUME = "run the same command again to resume (nothing finished is recomputed)"


class GridInterrupted(Stopped):
    """A signal stopped a grid; its message says which, and how to resume."""


class GridStoreFull(OSError):
    """The store could not be written (a full disk, a quota); the runs stored before are whole."""


def run_plan(plan, device: str, backend, threads: int, progress: bool) -> int:
    """Run what ``plan`` needs on ``backend``, longest expected run first; return how many ran."""
    ready, n_left = plan.todo()
    if not ready:
        return 0
    store, code = plan.store, plan.code
    timer = RunTimer(store, plan.profile)
    computed, lost = 0, {}
    previous_threads = torch.get_num_threads()
    executor, bar, interrupted = None, None, False
    try:
        with interrupts_as_keyboard():
            executor = backend.open(threads, code, device, n_left)  # first: a cluster that
            bar = tqdm(  # cannot be used is one line, without a bar above it
                total=n_left,
                desc=f"grid {plan.profile}",
                unit="run",
                disable=not progress or not n_left,
                bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} runs [{elapsed}{postfix}]",
            )
            pending: dict[cf.Future, RunSpec] = {}
            while True:
                busy = {*pending.values(), *lost}
                queue = sorted(
                    (sp for sp in ready if sp not in busy), key=lambda sp: -timer.estimate([sp])
                )
                for sp in queue[: max(executor.in_flight() - len(pending), 0)]:
                    pending[executor.submit(compute, sp, device, threads, code)] = sp
                if not pending:
                    break
                finished, _ = cf.wait(list(pending), return_when=cf.FIRST_COMPLETED)
                written, died = 0, []
                for fut in finished:
                    sp = pending.pop(fut)
                    try:
                        run = executor.result(fut)
                    except LostRun as err:
                        lost[sp] = str(err)
                        continue
                    except WorkerDied as err:  # the runs that did finish are stored first
                        died.append((sp, err))
                        continue
                    written += 1
                    plan.records[sp] = _write(store, run, computed)
                    computed += 1
                    timer.add(plan.records[sp])
                if died:
                    flying = sorted(sp.run_id for sp in [*(d for d, _ in died), *pending.values()])
                    raise WorkerDied(
                        f"{died[0][1]} while computing {', '.join(flying)}; the {computed} runs "
                        f"finished now are stored in {store.root}; {RESUME}."
                    )
                plan.resolve()
                ready, n_left = plan.todo()
                left = dict.fromkeys([*pending.values(), *ready, *plan.unscheduled()])
                eta = timer.estimate(left) / executor.capacity()
                bar.total = max(bar.total, bar.n + written + n_left)  # widening adds
                bar.set_postfix_str(f"~{_fmt(eta)} left", refresh=False)
                bar.update(written)
    except KeyboardInterrupt as err:
        interrupted = True
        if executor is not None:
            executor.stop()
        why, _ = stop_reason(err)
        raise GridInterrupted(
            f"grid {why} after {computed} runs computed now; they and every run finished "
            f"before are stored in {store.root}; {RESUME}.",
            getattr(err, "signum", signal.SIGINT),
        ) from None
    except (WorkerDied, GridStoreFull):
        interrupted = True
        executor.stop()
        raise
    finally:
        if bar is not None:
            bar.close()
        if executor is not None:
            executor.close(wait=not interrupted)
        torch.set_num_threads(previous_threads)
    if lost:
        sp, why = next(iter(lost.items()))
        raise ClusterError(
            f"{len(lost)} runs were lost with their workers or nodes ({sp.run_id}: {why}) and "
            f"are not stored; the {computed} runs finished now are. Run the same command again "
            "to compute the lost ones (a larger --max-retries rides out an unstable cluster)."
        )
    return computed


def _write(store, run, computed: int) -> dict:
    """Store one finished run; a failed write (a full disk) is one message naming the store."""
    try:
        return store.write_finished(run)
    except OSError as err:
        raise GridStoreFull(
            err.errno,
            f"could not write run {run.spec.run_id} into the store {store.root} "
            f"({err.strerror or err}); the {computed} runs written before it now are whole. Free "
            f"space there (or give another --store), then {RESUME}.",
        ) from None


def _fmt(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"
