"""Every algorithm on Flower: the round loop's link, carried by Flower messages.

The in-process engine drives an algorithm through :class:`~playerfl_core.fl.engine.LocalLink`:
the server hooks ask it for uploads, reports, deliveries and deployments, and the round loop
asks it to set up, train, evaluate and finish the clients. :class:`FlowerLink` answers the same
calls with Flower messages; each SuperNode's ClientApp (:func:`client_app`) keeps its silo as a
one-client run and answers with that run's own ``LocalLink``. Calls whose answer the server
does not need yet (train, evaluate, deliveries) wait in a queue and travel with the next call
that needs one (an upload, a report), so a FedAvg round costs one message per silo. No algorithm
has a Flower-specific copy: the same hooks run, only the link differs, and only what a hook
names crosses the wire (an upload's tensors, a report's numbers, the server's decisions listed
in ``client_attributes``).

Between messages a node keeps its client (model, optimiser, generators, personal state) in
Flower's ``Context.state``, without its data, which it reloads from its own disk. Every reply
carries the result rows the client logged, tagged with the call that logged them, so the server
assembles the same long table as the in-process engine, row for row and in the same order.

This module runs the server side (:func:`serve`, :func:`simulate`); the server's end of the
conversation is :mod:`~playerfl_core.flower.server_link` (:class:`FlowerLink`), the silo side
:mod:`~playerfl_core.flower.client`, what both agree on :mod:`~playerfl_core.flower.wire` (all
three re-exported here).
"""

from __future__ import annotations

import json
import logging
import signal
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
from flwr.app import Context
from flwr.serverapp import Grid, ServerApp
from tqdm import tqdm

from playerfl_core.fl.algorithms import get_algorithm
from playerfl_core.fl.engine import Observer, Run, RunConfig, drive
from playerfl_core.fl.schema import COLUMNS
from playerfl_core.flower.client import (
    Session,
    client_app,
)
from playerfl_core.flower.processes import descendants, end_processes
from playerfl_core.flower.server_link import FlowerLink
from playerfl_core.flower.wire import (
    CALLS,
    PROTOCOL,
    PULL_EVERY_S,
    FlowerRunError,
    FlowerStopped,
    Job,
    SiloFailed,
    SiloLost,
    record_tensors,
    tensors_record,
)

__all__ = [  # the former flower_link's names, this module's and its two cut-outs'
    "CALLS",
    "FlowerLink",
    "FlowerResult",
    "FlowerRunError",
    "FlowerStopped",
    "Job",
    "PROTOCOL",
    "PULL_EVERY_S",
    "Session",
    "SiloFailed",
    "SiloLost",
    "client_app",
    "read_result",
    "record_tensors",
    "serve",
    "server_app",
    "simulate",
    "tensors_record",
]


def serve(
    grid: Grid,
    job: Job,
    silos: int,
    timeout: float = 600.0,
    observers: Sequence[Observer] = (),
    resume=None,
    stop: threading.Event | None = None,
) -> tuple[Run, FlowerLink]:
    """Carry out ``job`` over ``silos`` Flower nodes; return the server's run and its link
    (``wire``, ``messages``). ``resume``: a
    :class:`~playerfl_core.flower.checkpoints.ServerCheckpoint` to continue from (each silo
    restores its own session of that round). ``stop``: once set, the run stops at its next
    wait for the silos (:class:`FlowerStopped`)."""
    nodes = _wait_for_nodes(grid, silos, timeout)
    link = FlowerLink(grid, job, dict(enumerate(nodes)), timeout, stop)
    hello = link.hello(None if resume is None else resume.round)
    hello = {a["silo"]: (node, a) for node, a in hello.items()}
    if sorted(hello) != list(range(silos)):
        raise FlowerRunError(
            f"expected silos 0..{silos - 1}, the SuperNodes are {sorted(hello)}: give each "
            "SuperNode its own partition-id."
        )
    link.nodes = {silo: node for silo, (node, _) in sorted(hello.items())}
    first = hello[0][1]
    spec = SimpleNamespace(
        name=first["name"],
        model=first["model"],
        num_classes=first["num_classes"],
        input_shape=tuple(first["input_shape"]),
        model_args=first["model_args"],
    )
    config = RunConfig(**job.config)
    algorithm = get_algorithm(job.algorithm, **job.hyperparameters)
    sizes = {silo: a["n_train"] for silo, (_, a) in sorted(hello.items())}
    run = Run(spec, config, [], {}, algorithm.name, sizes=sizes, link=link)
    run.global_params = {n: p.detach().clone() for n, p in run.template.named_parameters()}
    start = 0
    if resume is not None:
        algorithm, start = resume.algorithm, resume.restore(run)
    link.run, link.algorithm = run, algorithm
    drive(run, algorithm, observers, start)
    link.flush()  # the last evaluation's rows
    return run, link


def _wait_for_nodes(grid: Grid, silos: int, timeout: float) -> list[int]:
    start = time.monotonic()
    while len(nodes := sorted(grid.get_node_ids())) < silos:
        if time.monotonic() - start > timeout:
            raise FlowerRunError(
                f"only {len(nodes)} of {silos} SuperNodes connected within {timeout:g} s."
            )
        time.sleep(0.2)
    return nodes[:silos]


def server_app(
    jobs: Sequence[Job],
    silos: int,
    out_dir: str | Path,
    stop: threading.Event | None = None,
    finished: list | None = None,
) -> ServerApp:
    """A ServerApp that carries out ``jobs`` one after another and writes ``results.parquet``
    (the long table) and ``wire.parquet`` (bytes per call and silo) to ``out_dir``. ``stop``
    and ``finished``: see :func:`simulate`."""
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        try:
            _carry_out(grid, jobs, silos, out, stop, finished)
        except FlowerStopped:  # the caller knows why: it set ``stop``
            return
        except Exception as err:  # the caller reads it: Flower's own log is silenced
            (out / "error.txt").write_text(f"{type(err).__name__}: {err}")
            raise

    return app


def _carry_out(
    grid: Grid,
    jobs: Sequence[Job],
    silos: int,
    out: Path,
    stop: threading.Event | None = None,
    finished: list | None = None,
) -> None:
    """Carry out ``jobs`` one after another and write what :func:`read_result` reads; each
    finished run's table is also appended to ``finished`` at once."""
    tables, wires, failed = [], [], []
    for job in jobs:
        if stop is not None and stop.is_set():
            raise FlowerStopped("stopped between runs")
        try:
            run, link = serve(grid, job, silos, stop=stop)
        except SiloFailed as err:  # this run's rows are dropped, the others kept
            failed.append({"run": job.key, "error": str(err)})
            continue
        tables.append(run.table())
        if finished is not None:
            finished.append(tables[-1])
        wire = pd.DataFrame(link.wire).assign(
            algorithm=job.algorithm, seed=job.data_seed, messages=link.messages
        )
        wires.append(wire)
    pd.concat(tables or [pd.DataFrame(columns=COLUMNS)], ignore_index=True).to_parquet(
        out / "results.parquet", index=False
    )
    pd.concat(wires or [pd.DataFrame()], ignore_index=True).to_parquet(
        out / "wire.parquet", index=False
    )
    (out / "failed.json").write_text(json.dumps(failed, indent=1))


STOP_WITHIN_S = 30.0
"""How long :func:`simulate` waits, once stopped, for Flower and Ray to shut down before it
leaves them to end with the process (measured once: Ctrl-C to exit took 5.3 s on the shared
2-core machine, Ray's shutdown included)."""


def simulate(
    jobs: Sequence[Job],
    silos: int,
    out_dir: str | Path,
    finished: list | None = None,
    progress: bool = False,
) -> FlowerResult:
    """Run ``jobs`` on Flower's simulation engine (one SuperNode per silo, Ray actors, one CPU
    each). ``finished``: a list that receives each run's table as the run finishes, so a caller
    keeps them when the simulation stops early; ``progress``: a bar of finished runs.

    The simulation runs in a thread of its own, and this (main) thread only waits for it, so a
    signal (Ctrl-C, SIGTERM, SIGHUP, turned into ``KeyboardInterrupt`` by the caller, e.g. with
    :func:`~playerfl_core.study.workers.interrupts_as_keyboard`) stops it cleanly: the server
    stops at its next wait for the silos, Flower stops its SuperNodes and shuts Ray down, and
    the ``KeyboardInterrupt`` is raised again here. Ray started from a thread other than the
    main one also leaves this process's signal handlers alone (its own SIGTERM handler exits
    at once and ended such runs with a crash report).
    """
    out = Path(out_dir)
    stop = threading.Event()
    outcome: dict[str, BaseException] = {}
    finished = [] if finished is None else finished

    def run() -> None:
        try:
            _run_simulation(server_app(jobs, silos, out, stop, finished), silos)
        except BaseException as err:  # noqa: BLE001 - raised again in the calling thread
            outcome["error"] = err

    before = set(descendants())
    thread = threading.Thread(target=run, name="flower-simulation", daemon=True)
    thread.start()
    bar = tqdm(total=len(jobs), desc="flower", unit="run", disable=not progress)
    try:
        while thread.is_alive():
            thread.join(0.2)
            _retake_stop_signals()
            bar.update(len(finished) - bar.n)
    except KeyboardInterrupt:
        started = set(descendants()) - before  # Ray's processes for this simulation
        stop.set()
        thread.join(STOP_WITHIN_S)
        end_processes(started)
        raise
    finally:
        bar.close()
    if "error" in outcome:
        raise outcome["error"]
    return read_result(out)


def _retake_stop_signals() -> None:
    """Give SIGINT, SIGTERM and SIGHUP back to this process's Python handlers: Ray's core
    worker, started in the simulation's thread, installs a C++ handler for SIGTERM that prints
    a stack and aborts the process (exit 134) before Python sees the signal."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        handler = signal.getsignal(signum)
        if handler is not None:  # None: a handler not set from Python, left alone
            signal.signal(signum, handler)


def _run_simulation(app: ServerApp, silos: int) -> None:
    """Flower's ``run_simulation`` with Flower's and Ray's logs silenced (errors reach the
    caller: SiloFailed, read_result)."""
    loggers = {name: logging.getLogger(name) for name in ("flwr", "ray", "ray.widgets.util")}
    levels = {name: log.level for name, log in loggers.items()}
    for log in loggers.values():
        log.setLevel(logging.CRITICAL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Ray's import notices (tqdm widgets in notebooks)
        import ray  # noqa: F401  # deferred: slow; importing it resets its loggers, quieted below
        from flwr.simulation import run_simulation  # deferred: it imports ray

    for log in loggers.values():
        log.setLevel(logging.CRITICAL)
    # "local": a Ray of its own, never a cluster that `ray start` (or RAY_ADDRESS) left on this
    # machine, whose stop would end this simulation's silos mid-run.
    quiet = {
        "address": "local",
        "log_to_driver": False,
        "configure_logging": False,
        "include_dashboard": False,
    }
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Ray's notices (GPU variables, widgets)
            run_simulation(
                server_app=app,
                client_app=client_app(),
                num_supernodes=silos,
                backend_config={
                    "client_resources": {"num_cpus": 1, "num_gpus": 0.0},
                    "init_args": quiet,
                },
            )
    finally:
        for name, log in loggers.items():
            log.setLevel(levels[name])


@dataclass(frozen=True)
class FlowerResult:
    table: pd.DataFrame
    """The long results table, as the in-process engine writes it."""
    wire: pd.DataFrame
    """Bytes of tensors sent to and from each silo, per call and round."""
    failed: list[dict]
    """Runs a silo's error stopped (``run``, ``error``)."""


def read_result(out: Path) -> FlowerResult:
    """What :func:`server_app` wrote to ``out``."""
    if (out / "error.txt").exists():
        raise FlowerRunError(f"the Flower run stopped: {(out / 'error.txt').read_text()}")
    if not (out / "results.parquet").exists():
        raise FlowerRunError(
            "the Flower run ended without results and without an error from its server: "
            "Flower failed to start it (run again with logging at INFO to see why)."
        )
    return FlowerResult(
        pd.read_parquet(out / "results.parquet"),
        pd.read_parquet(out / "wire.parquet"),
        json.loads((out / "failed.json").read_text()),
    )
