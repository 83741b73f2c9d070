"""Worker processes that end with their parent, and a grid that stops cleanly.

A grid's runs execute in spawned worker processes. If the parent dies (``kill -9``, a closed
terminal, an out-of-memory kill), nothing tells a worker, which would finish its run and then
idle forever holding its memory. Each worker therefore

1. asks Linux to send it SIGKILL when its parent dies (``prctl(PR_SET_PDEATHSIG)`` via ctypes;
   nothing to do on other systems), and
2. runs a watchdog thread that exits the process once its parent's pid changes (the fallback
   where ``prctl`` is missing, and for the window before the ``prctl`` call),

and ignores Ctrl-C, which the parent handles: :func:`interrupts_as_keyboard` turns SIGTERM into
``KeyboardInterrupt`` too, and :func:`stop_workers` kills the workers at once (their unfinished
runs leave no file under a run's name: writes are atomic), so a stopped grid keeps every
finished run and resumes where it stopped.

:class:`LocalExecutor` is the ``local`` backend's executor (:mod:`~playerfl_core.study.backends`):
those worker processes, or the calling process itself for one worker.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time

import torch

PR_SET_PDEATHSIG = 1
WATCHDOG_SECONDS = 0.5


def init_worker(threads: int, parent_pid: int) -> None:
    """Initializer of a grid worker: one thread per run, dies with ``parent_pid``."""
    torch.set_num_threads(threads)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent_pid)


def die_with_parent(parent_pid: int) -> None:
    """End this process as soon as ``parent_pid`` is no longer its parent."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)
    threading.Thread(target=_watch, args=(parent_pid,), daemon=True, name="parent-watch").start()


def _watch(parent_pid: int) -> None:
    while True:
        time.sleep(WATCHDOG_SECONDS)
        if os.getppid() != parent_pid:
            os._exit(1)


def stop_workers(pool) -> None:
    """Kill a process pool's workers now and drop its queued work (no waiting for runs)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for proc in processes:
        with contextlib.suppress(Exception):
            proc.kill()
    for proc in processes:
        with contextlib.suppress(Exception):
            proc.join(timeout=5)
    with contextlib.suppress(Exception):
        pool.shutdown(wait=False, cancel_futures=True)


@contextlib.contextmanager
def interrupts_as_keyboard():
    """Within the block, SIGTERM raises ``KeyboardInterrupt`` as Ctrl-C does (main thread only),
    so one cleanup path handles both."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_interrupt(signum, frame):
        raise KeyboardInterrupt(f"stopped by signal {signal.Signals(signum).name}")

    previous = signal.signal(signal.SIGTERM, raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class LocalExecutor:
    """``workers`` spawned processes of ``threads`` CPU threads each that die with this one, or,
    for one worker, this process itself (a GPU, tests, a script without a ``__main__`` guard).

    The executor interface every backend offers (:mod:`~playerfl_core.study.backends`):
    ``submit(fn, *args)`` returns a :class:`concurrent.futures.Future`, :meth:`result` reads one
    (translating the backend's own failures into one clear message), ``capacity()`` runs
    compute at once, ``in_flight()`` runs to keep submitted, :meth:`stop` kills what runs,
    :meth:`close` ends the executor.
    """

    def __init__(self, workers: int, threads: int | None):
        self.workers = max(int(workers), 1)
        if self.workers == 1:
            self.pool = None
            return
        self.pool = cf.ProcessPoolExecutor(
            max_workers=self.workers,
            initializer=init_worker,
            initargs=(threads, os.getpid()),
            mp_context=multiprocessing.get_context("spawn"),
        )

    def submit(self, fn, *args) -> cf.Future:
        if self.pool is not None:
            return self.pool.submit(fn, *args)
        fut = cf.Future()
        try:
            fut.set_result(fn(*args))
        except Exception as err:  # noqa: BLE001 - handed to the caller through the future
            fut.set_exception(err)
        return fut

    def result(self, fut: cf.Future):
        try:
            return fut.result()
        except cf.process.BrokenProcessPool as err:
            raise RuntimeError(
                "A worker process died. From a script, call the grid or sweep under "
                "`if __name__ == '__main__':` (spawned workers re-import the script), or pass "
                "workers=1. Finished runs are kept; calling again resumes."
            ) from err

    def capacity(self) -> int:
        return self.workers

    def in_flight(self) -> int:
        return self.workers

    def stop(self) -> None:
        if self.pool is not None:
            stop_workers(self.pool)

    def close(self, wait: bool = True) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=wait, cancel_futures=True)
