"""The ``ray`` backend: a grid's or a sweep's runs as Ray tasks on a cluster.

Each run is one task returning a :class:`~playerfl_core.study.run_store.FinishedRun` that the
driver alone stores, so nodes need the same code and data but no shared file system. An
unreachable cluster is one :class:`ClusterError` after a short TCP probe; a lost run is retried
``max_retries`` times; each task checks that its node runs the driver's code.
"""

from __future__ import annotations

import concurrent.futures as cf
import functools
import math
import os
import signal
import socket
import threading
import warnings
from dataclasses import dataclass

from playerfl_core.study.machine import torch_threads
from playerfl_core.study.run_store import code_fingerprint

PASSED_ENV = ("PLAYERFL_DATASET_MODULES", "PLAYERFL_DATA")
"""Environment variables a task needs as the driver has them: the user's federation files
(``--dataset-module``) and the data folder. Nodes must hold those paths."""
PROBE_SECONDS = 5.0
FIX = (
    "start a cluster with `ray start --head` (then `ray start --address=HEAD:6379` on the other "
    "nodes) and pass --address HEAD:6379, or run here with --backend local"
)


class ClusterError(ValueError):
    """The Ray cluster cannot be used: not installed, not found, not reachable, too small, or
    running other code. One line: what is wrong and how to fix it."""


class LostRun(RuntimeError):
    """A run's worker or node was lost more often than ``max_retries`` allows."""


class CodeMismatch(RuntimeError):
    """A node runs other code than the driver."""


@dataclass(frozen=True)
class RayBackend:
    """Where and with what a run computes on Ray (see the module docstring)."""

    address: str = "auto"
    cpus: float = 1.0
    gpus: float = 0.0
    max_retries: int = 3

    def __post_init__(self):
        if not isinstance(self.address, str) or not self.address.strip():
            raise ClusterError(
                f"--address: give 'auto', HOST:PORT or 'local', got {self.address!r}."
            )
        for name, value in (("--cpus", self.cpus), ("--gpus", self.gpus)):
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise ClusterError(f"{name}: {value!r} is not a number ≥ 0.")
        if self.cpus == 0 and self.gpus == 0:
            raise ClusterError("--cpus and --gpus are both 0: a run needs a CPU or a GPU.")
        retries = self.max_retries
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ClusterError(f"--max-retries: {retries!r} is not an integer ≥ 0.")

    def check_device(self, device: str | None) -> str | None:
        """``device`` as runs on the cluster see it (None passes): CUDA only with ``gpus`` > 0,
        since Ray shows a task no GPU it did not reserve; this machine need not have one."""
        if device is None:
            return None
        kind = device.split(":")[0]
        if kind not in ("cpu", "cuda"):
            raise ClusterError(f"--device: {device!r} on Ray; use cpu or cuda.")
        if kind == "cuda" and self.gpus == 0:
            raise ClusterError(
                f"--device {device} on Ray needs --gpus > 0 (a run sees only the GPUs Ray "
                "reserved for it; e.g. --gpus 0.5 for two runs per GPU)."
            )
        if kind == "cpu" and self.gpus > 0:
            raise ClusterError(
                f"--device cpu with --gpus {self.gpus:g}: the reserved GPU would idle; drop one."
            )
        return device

    def default_device(self) -> str:
        """CUDA when runs reserve a GPU (Ray shows a task only the GPUs it reserved)."""
        return "cuda" if self.gpus > 0 else "cpu"

    def open(self, threads: int | None, code: str = "", device: str = "", runs: int = 0):
        """Connect and return the executor (``device`` and ``runs`` matter only locally)."""
        return RayExecutor(self, threads, code)


def _ray():
    try:
        import ray  # deferred: Ray is optional and heavy; imported only when this backend runs
    except ImportError:
        raise ClusterError(
            "--backend ray needs the ray package (requirements.txt pins ray 2.55.1: "
            "`pip install -r requirements.txt`), or run here with --backend local."
        ) from None
    return ray


def connect(address: str) -> bool:
    """Connect to Ray at ``address``; True when this call connected (the caller disconnects)."""
    ray = _ray()
    if ray.is_initialized():
        return False
    quiet = dict(include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    if address == "local":
        _init(ray, address, **quiet)
        return True
    target = resolve(address)
    problem = probe(target)
    if problem:
        raise ClusterError(f"cannot reach the Ray cluster at {target} ({problem}): {FIX}.")
    quiet.pop("include_dashboard")  # a setting of a new cluster, not of a connection
    _init(ray, target, **quiet)
    return True


def _init(ray, address: str, **options) -> None:
    """``ray.init``, keeping this process's SIGTERM handler (Ray's would skip a grid's cleanup)."""
    main = threading.current_thread() is threading.main_thread()
    on_sigterm = signal.getsignal(signal.SIGTERM) if main else None
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Tip: In future versions of Ray")
        try:
            ray.init(address=address, **options)
        except Exception as err:  # noqa: BLE001 - any failure to connect is one line
            raise ClusterError(
                f"could not connect to Ray at {address} ({_first_line(err)}): {FIX}."
            ) from None
        finally:
            if main and on_sigterm is not None:
                signal.signal(signal.SIGTERM, on_sigterm)


def _first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0]


def resolve(address: str) -> str:
    """``auto`` → ``RAY_ADDRESS``, else this machine's ``ray start`` cluster; others as given."""
    if address != "auto":
        return address
    if os.environ.get("RAY_ADDRESS", "").strip():
        return os.environ["RAY_ADDRESS"].strip()
    from ray._private.services import canonicalize_bootstrap_address  # deferred: Ray is optional

    try:
        found = canonicalize_bootstrap_address("auto")
    except Exception:  # noqa: BLE001 - "none found" in any form
        found = None
    if not found:
        raise ClusterError(f"no running Ray cluster found (--address auto): {FIX}.")
    return found


def probe(address: str) -> str:
    """Why a TCP connection to ``address`` fails within :data:`PROBE_SECONDS` ('' if it works)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return f"not HOST:PORT: {address!r}"
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_SECONDS).close()
    except OSError as err:
        return err.strerror or str(err) or type(err).__name__
    return ""


@functools.cache
def _node_code() -> str:
    return code_fingerprint()


def _run_task(code: str, threads: int | None, fn, *args):
    """A Ray task: check the node's code, compute ``fn(*args)`` with ``threads`` CPU threads."""
    if code and _node_code() != code:
        raise CodeMismatch(
            f"node {socket.gethostname()} runs other code (fingerprint {_node_code()}) than the "
            f"driver ({code}): install the same checkout on every node (`make setup`)."
        )
    with torch_threads(threads):
        return fn(*args)


class RayExecutor:
    """The executor interface of :class:`~playerfl_core.study.workers.LocalExecutor`, on Ray."""

    def __init__(self, backend: RayBackend, threads: int | None, code: str):
        self.ray, self.backend, self.threads, self.code = _ray(), backend, threads, code
        self.owned = connect(backend.address)
        try:
            self._check_fits()
        except ClusterError:
            self.close()
            raise
        env = {k: os.environ[k] for k in PASSED_ENV if os.environ.get(k)}
        self.remote = self.ray.remote(_run_task).options(
            num_cpus=backend.cpus,
            num_gpus=backend.gpus,
            max_retries=backend.max_retries,
            retry_exceptions=False,
            **({"runtime_env": {"env_vars": env}} if env else {}),
        )
        self.refs: dict[cf.Future, object] = {}

    def _check_fits(self) -> None:
        if self.capacity(strict=True) == 0:
            raise ClusterError(
                f"no node of the Ray cluster has {self.backend.cpus:g} CPUs and "
                f"{self.backend.gpus:g} GPUs free for one run ({self._nodes_text()}): lower "
                "--cpus/--gpus or add a node that has them."
            )

    def _alive(self) -> list[dict]:
        return [n.get("Resources", {}) for n in self.ray.nodes() if n.get("Alive")]

    def _nodes_text(self) -> str:
        nodes = self._alive()
        return f"{len(nodes)} nodes: " + ", ".join(
            f"{r.get('CPU', 0):g} CPUs/{r.get('GPU', 0):g} GPUs" for r in nodes
        )

    def capacity(self, strict: bool = False) -> int:
        """Runs the cluster's live nodes compute at once (at least 1 unless ``strict``)."""
        total = 0
        for res in self._alive():
            fits = [
                math.floor(res.get(key, 0) / need + 1e-9)
                for key, need in (("CPU", self.backend.cpus), ("GPU", self.backend.gpus))
                if need > 0
            ]
            total += min(fits)
        return total if strict else max(total, 1)

    def in_flight(self) -> int:
        """Twice the capacity: a freed worker starts the next run without a driver round trip."""
        return 2 * self.capacity()

    def submit(self, fn, *args) -> cf.Future:
        ref = self.remote.remote(self.code, self.threads, fn, *args)
        fut = ref.future()
        self.refs[fut] = ref
        return fut

    def result(self, fut: cf.Future):
        exceptions = self.ray.exceptions
        try:
            return fut.result()
        except exceptions.RayTaskError as err:  # raised on the node
            if isinstance(err.cause, CodeMismatch):
                raise ClusterError(str(err.cause)) from None
            if isinstance(err.cause, exceptions.RayError) or not isinstance(err.cause, Exception):
                raise ClusterError(  # e.g. the node's Python could not even load the task
                    f"a node could not run the task ({_first_line(err.cause or err)}): every "
                    f"node needs this checkout (code {self.code or '?'}) on its Python path, the "
                    "same packages and the data (README, 'Running on a cluster')."
                ) from None
            raise err.cause from None  # the run's own exception (e.g. a sweep's divergence)
        except exceptions.RayError as err:  # the worker or node was lost, retries spent
            raise LostRun(
                f"lost {self.backend.max_retries + 1} times ({type(err).__name__}: "
                f"{_first_line(err)})"
            ) from None
        finally:
            self.refs.pop(fut, None)

    def stop(self) -> None:
        for ref in list(self.refs.values()):
            try:
                self.ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001, S110 - already finished or gone
                pass
        self.refs.clear()

    def close(self, wait: bool = True) -> None:
        if self.owned and self.ray.is_initialized():
            self.ray.shutdown()
