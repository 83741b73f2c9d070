"""Local processes for the silo recipe: a free loopback port, Flower's executables and their
environment, and a started process (own process group, output to a file) that stops with every
child it spawned.

Cut out of :mod:`playerfl_core.flower.federation` (which re-exports these names): the recipe's
steps read on their own, and this is the plumbing under them.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


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
        for pid in [self.popen.pid, *_descendants(self.popen.pid)]:
            try:
                os.killpg(pid, sig) if pid == self.popen.pid else os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def stop(self, grace: float = 10.0) -> None:
        if self.alive():
            family = _descendants(self.popen.pid)
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


def _descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (Linux ``/proc``)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
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
