"""Local processes for the silo recipe: a free loopback port, Flower's executables and their
environment, and a started process (own process group, output to a file) that stops with every
child it spawned; and, for a stopped simulation, ending the processes Ray started.

Cut out of :mod:`playerfl_core.flower.federation` (which re-exports these names): the recipe's
steps read on their own, and this is the plumbing under them.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil


class FederationError(RuntimeError):
    """A process did not start, a wait timed out, or the run failed: the message says which."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Process:
    """One started process, in its own process group, logging to a file."""

    name: str
    popen: subprocess.Popen
    log: Path

    def alive(self) -> bool:
        return self.popen.poll() is None

    def tail(self, lines: int = 15) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the process's group and every process it spawned (Flower detaches its
        SuperExec and app processes into sessions of their own)."""
        for pid in [self.popen.pid, *(p.pid for p in descendants(self.popen.pid))]:
            try:
                os.killpg(pid, sig) if pid == self.popen.pid else os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def stop(self, grace: float = 10.0) -> None:
        if self.alive():
            family = [p.pid for p in descendants(self.popen.pid)]
            self.kill(signal.SIGTERM)
            try:
                self.popen.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
            for pid in family:  # children detached into their own sessions
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self.kill(signal.SIGKILL)
        try:
            self.popen.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            raise FederationError(f"{self.name} (pid {self.popen.pid}) did not stop.") from None


def descendants(pid: int | None = None) -> list[psutil.Process]:
    """Every live process below ``pid`` (this process by default); none once ``pid`` is gone."""
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


ENDS_WITHIN_S = 5.0
"""How long processes asked to stop may take before they are terminated: a busy Ray worker
notices its raylet is gone only when it next looks, which on a loaded machine was later than
15 s after the command that started it had exited."""


def end_processes(procs) -> None:
    """Wait for ``procs`` to end, then terminate (and at last kill) any still running. Their
    parent may be gone, so the caller lists them while they are still its descendants."""
    running = _running(procs)
    for signal_them, wait_s in ((None, ENDS_WITHIN_S), ("terminate", 2.0), ("kill", 2.0)):
        for p in running if signal_them else []:
            with contextlib.suppress(psutil.NoSuchProcess):
                getattr(p, signal_them)()
        deadline = time.monotonic() + wait_s
        while (running := _running(running)) and time.monotonic() < deadline:
            time.sleep(0.1)


def _running(procs) -> list[psutil.Process]:
    """Those of ``procs`` still running (a zombie has ended: only its parent's wait is left)."""
    out = []
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
    return out


def _bin(name: str) -> str:
    """A Flower executable of this Python's environment."""
    return str(Path(sys.executable).parent / name)


def _environment(flwr_home: Path) -> dict:
    """The processes' environment: this library importable, Flower offline and quiet."""
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    for name in ("FORCE_COLOR", "CLICOLOR_FORCE"):  # set in Jupyter kernels: ANSI codes in JSON
        env.pop(name, None)
    env["NO_COLOR"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    env["PATH"] = os.pathsep.join((str(Path(sys.executable).parent), env.get("PATH", "")))
    env.update(
        FLWR_HOME=str(flwr_home),
        FLWR_TELEMETRY_ENABLED="0",
        FLWR_DISABLE_UPDATE_CHECK="1",
        OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "1"),
    )
    return env


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)
