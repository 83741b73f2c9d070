"""Worker processes that end with their parent, and a grid that stops cleanly.

A worker asks Linux for SIGKILL when its parent dies (``prctl``) and watches its parent's pid as a
fallback, so an orphan never idles holding memory. The parent turns SIGINT, SIGTERM and SIGHUP
into :class:`Stopped` and kills the workers (:func:`stop_workers`); writes are atomic, so a
stopped grid keeps its finished runs. :class:`LocalExecutor` is the ``local`` backend's executor.
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

from playerfl_core.study.machine import torch_threads

PR_SET_PDEATHSIG = 1
WATCHDOG_SECONDS = 0.5


def init_worker(threads: int, parent_pid: int) -> None:
    """Initializer of a grid worker: one thread per run, dies with ``parent_pid``."""
    torch.set_num_threads(threads)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # a closed terminal: the parent stops us
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


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
EXIT_CODES = {signal.SIGHUP: 129}
"""Exit code of a command a signal stopped: 129 for SIGHUP (as a shell reports it), else 130."""


class Stopped(KeyboardInterrupt):
    """A signal stopped the work (a ``KeyboardInterrupt``, so Ctrl-C's cleanup paths catch it);
    ``signum`` says which, ``exit_code`` what the command exits with."""

    def __init__(self, message: str = "", signum: int = signal.SIGINT):
        super().__init__(message or f"stopped by {signal_name(signum)}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(self.signum, 130)


def signal_name(signum: int) -> str:
    name = signal.Signals(signum).name
    return f"{name} (Ctrl-C)" if signum == signal.SIGINT else name


def stop_reason(err: BaseException) -> tuple[str, int]:
    """What stopped the work, in words, and the exit code (a bare KeyboardInterrupt: Ctrl-C)."""
    signum = getattr(err, "signum", signal.SIGINT)
    text = str(err) or f"stopped by {signal_name(signum)}"
    return text, EXIT_CODES.get(signum, 130)


@contextlib.contextmanager
def interrupts_as_keyboard():
    """Within the block, SIGINT, SIGTERM and SIGHUP raise :class:`Stopped` naming the signal
    (main thread only), so one cleanup path handles Ctrl-C, ``kill`` and a closed terminal."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_stopped(signum, frame):
        raise Stopped(signum=signum)

    previous = {signum: signal.signal(signum, raise_stopped) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def _sighup_blocked():
    """Processes started within the block keep SIGHUP blocked: this process alone handles it."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class WorkerDied(RuntimeError):
    """A worker process ended while it computed runs (killed, out of memory, failed start)."""


def how_it_ended(exitcode: int | None) -> str:
    """A process's end in words: 'killed by SIGKILL' for -9."""
    if exitcode is None:
        return "ended (how is not known)"
    if exitcode < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-exitcode).name}"
        return f"killed by signal {-exitcode}"
    return f"exited with code {exitcode}"


class LocalExecutor:
    """``workers`` spawned processes of ``threads`` threads each that die with this one (one: this
    process), with every backend's interface (``submit``, ``result``, ``stop``, ``close``, …)."""

    def __init__(self, workers: int, threads: int | None):
        self.workers, self.threads = max(int(workers), 1), threads
        self._seen: dict = {}  # every worker process started, by pid (to say how one ended)
        if self.workers == 1:
            self.pool = None
            return
        with _sighup_blocked():  # its queues' locks start multiprocessing's resource tracker
            self.pool = cf.ProcessPoolExecutor(
                max_workers=self.workers,
                initializer=init_worker,
                initargs=(threads, os.getpid()),
                mp_context=multiprocessing.get_context("spawn"),
            )

    def submit(self, fn, *args) -> cf.Future:
        if self.pool is not None:
            with _sighup_blocked():  # the pool starts its processes here
                fut = self.pool.submit(fn, *args)
            self._seen.update(getattr(self.pool, "_processes", None) or {})
            return fut
        fut = cf.Future()
        with torch_threads(self.threads):  # as a worker process would
            try:
                fut.set_result(fn(*args))
            except Exception as err:  # noqa: BLE001 - handed to the caller through the future
                fut.set_exception(err)
        return fut

    def result(self, fut: cf.Future):
        try:
            return fut.result()
        except cf.process.BrokenProcessPool as err:
            raise WorkerDied(self._death()) from err

    def _death(self) -> str:
        """Which worker died and how (the first end that is not the pool's own SIGTERM)."""
        for proc in self._seen.values():
            with contextlib.suppress(Exception):
                proc.join(timeout=2)
        ends = [(pid, proc.exitcode) for pid, proc in self._seen.items()]
        cause = [(pid, code) for pid, code in ends if code not in (None, 0, -signal.SIGTERM)]
        if any(code == 1 for _, code in cause) and not any(code < 0 for _, code in cause):
            return (
                "a worker process failed to start (exit code 1). From a script, call the grid "
                "or sweep under `if __name__ == '__main__':` (spawned workers re-import the "
                "script), or pass workers=1"
            )
        pid, code = (cause or ends or [(None, None)])[0]
        return f"a worker process (pid {pid}) {how_it_ended(code)}"

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
