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
"""

from __future__ import annotations

import contextlib
import ctypes
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
