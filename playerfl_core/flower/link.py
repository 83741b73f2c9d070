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

This module is the server side (:class:`FlowerLink`, :func:`serve`, :func:`simulate`); the silo
side is :mod:`~playerfl_core.flower.client`, what both agree on :mod:`~playerfl_core.flower.wire`
(both re-exported here). About 545 lines: the server side is one class and the loop that drives
it, and cutting between them would split one conversation in two.
"""

from __future__ import annotations

import json
import logging
import re
import signal
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import torch
from flwr.app import ArrayRecord, Context, Message, RecordDict
from flwr.serverapp import Grid, ServerApp

from playerfl_core.fl.engine import Observer, Run, RunConfig, drive
from playerfl_core.fl.schema import COLUMNS
from playerfl_core.flower.client import (
    Session,
    client_app,
)
from playerfl_core.flower.wire import (
    CALLS,
    PROTOCOL,
    PULL_EVERY_S,
    FlowerRunError,
    FlowerStopped,
    Job,
    SiloFailed,
    SiloLost,
    _header,
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


# -- the server side ---------------------------------------------------------------------------
class FlowerLink:
    """The link of a server whose clients are Flower nodes (see the module docstring).

    ``wire`` records, per call and silo, the tensors sent each way (names and bytes) and the
    report's numbers (counted in ``bytes_from_silo`` as their JSON text); ``messages`` counts
    the messages sent.
    """

    def __init__(
        self,
        grid: Grid,
        job: Job,
        nodes: dict[int, int],
        timeout: float,
        stop: threading.Event | None = None,
    ):
        self.grid, self.job, self.nodes, self.timeout = grid, job, nodes, timeout
        self.stop = stop
        self.run: Run | None = None
        self.algorithm = None
        self.wire: list[dict] = []
        self.messages = 0
        self._seq = 0
        self._queue: dict[int, list] = {silo: [] for silo in nodes}

    def hello(self, resume: int | None = None) -> dict[int, dict]:
        """Each node's silo, training size and model (no data): before the run exists.
        ``resume``: each silo restores its session saved after that round instead."""
        extra = {} if resume is None else {"resume": resume}
        messages = [
            Message(
                RecordDict({"head": _header(self.job, **extra)}),
                dst_node_id=node,
                message_type="query.hello",
            )
            for node in self.nodes.values()
        ]
        return {node: out["answers"] for node, (out, _) in self._exchange(messages).items()}

    def _enqueue(self, call: str, per_silo: dict[int, dict] | None = None, **args) -> int:
        """Queue ``call`` for every silo (or those in ``per_silo``, with their tensors)."""
        self._seq += 1
        state = self.algorithm.client_state()
        for silo in per_silo if per_silo is not None else self.nodes:
            arrays = (per_silo or {}).get(silo, {})
            self._queue[silo].append((self._seq, call, args, state, arrays))
        return self._seq

    def flush(self) -> dict[int, dict[int, tuple[dict, ArrayRecord | None]]]:
        """Send every queued call; return per silo the answers by call number."""
        messages, batches = [], {}
        for silo, queue in self._queue.items():
            if not queue:
                continue
            head = _header(self.job)
            head["calls"] = json.dumps(
                [{"seq": q, "call": c, "args": a, "state": st} for q, c, a, st, _ in queue]
            )
            content = RecordDict({"head": head})
            for q, *_, arrays in queue:
                if arrays:
                    content[f"values/{q}"] = arrays
            messages.append(
                Message(content, dst_node_id=self.nodes[silo], message_type="train.calls")
            )
            batches[silo], self._queue[silo] = queue, []
        silo_of = {node: silo for silo, node in self.nodes.items()}
        replies = {silo_of[node]: r for node, r in self._exchange(messages).items()}
        answers, rows = {}, []
        for silo in sorted(replies):
            out, arrays = replies[silo]
            answers[silo] = {}
            for (q, call, args, _, sent), answer in zip(batches[silo], out["answers"], strict=True):
                upload = arrays.get(f"upload/{q}")
                answers[silo][q] = (answer, upload)
                rows += [(q, silo, i, tuple(r)) for i, r in enumerate(answer["rows"])]
                self._log_wire(call, args, silo, sent, upload, answer.get("report"))
        if self.run is not None:  # the in-process order: call by call, silo by silo
            self.run.rows.extend(row for *_, row in sorted(rows, key=lambda r: r[:3]))
        return answers

    def _exchange(self, messages: list[Message]) -> dict[int, tuple[dict, dict]]:
        """Send ``messages``, wait for every reply; per node: (answer, array records)."""
        self.messages += len(messages)
        replies = {r.metadata.src_node_id: r for r in self._send(messages)}
        node_silo = {node: silo for silo, node in self.nodes.items()}
        missing = sorted(
            node_silo[m.metadata.dst_node_id]
            for m in messages
            if m.metadata.dst_node_id not in replies
        )
        if missing:
            who = f"silos {missing}"
            if self.run is None:  # hello: which silo a node holds is not known yet
                lost = {m.metadata.dst_node_id for m in messages} - set(replies)
                who = f"SuperNodes {sorted(lost)}"
            raise SiloLost(
                f"{who} did not answer within {self.timeout:g} s (their SuperNodes "
                "stopped or are unreachable); the run stops here."
            )
        out = {}
        for node, reply in replies.items():
            if reply.has_error():
                raise SiloFailed(f"silo {node_silo[node]} failed: {_cause(reply.error.reason)}")
            answer = json.loads(reply.content["out"]["json"])
            out[node] = (answer, dict(reply.content.array_records.items()))
        return out

    def _send(self, messages: list[Message]) -> list[Message]:
        """Push ``messages`` and pull their replies until all came or ``timeout`` passed
        (every ``PULL_EVERY_S``; the deployed grid's own ``send_and_receive`` waits 3 s between
        pulls, which made every message of a run across processes up to 3 s slower)."""
        waiting = set(self.grid.push_messages(messages))
        replies, deadline = [], time.monotonic() + self.timeout
        while waiting and time.monotonic() < deadline:
            if self.stop is not None and self.stop.is_set():
                raise FlowerStopped("stopped while the silos computed")
            pulled = list(self.grid.pull_messages(sorted(waiting)))
            replies += pulled
            waiting -= {m.metadata.reply_to_message_id for m in pulled}
            if waiting:
                time.sleep(PULL_EVERY_S)
        return replies

    def _log_wire(self, call, args, silo, sent, upload, report) -> None:
        received = {"upload": upload} if upload is not None else {}
        self.wire.append(
            {
                "call": "deployment uploads" if args.get("for_deployment") else call,
                "round": args.get("rnd", -1),
                "silo": silo,
                "bytes_to_silo": _bytes(sent),
                "bytes_from_silo": _bytes(received) + (len(json.dumps(report)) if report else 0),
                "tensors_to_silo": _names(sent),
                "tensors_from_silo": _names(received),
                "numbers_from_silo": len(report or {}),
            }
        )

    def _ask(self, call: str, **args) -> dict[int, tuple[dict, ArrayRecord | None]]:
        seq = self._enqueue(call, **args)
        return {silo: answers[seq] for silo, answers in self.flush().items()}

    # calls made by the algorithm's server hooks
    def uploads(self, rnd: int, for_deployment: bool = False) -> dict[int, dict]:
        device = self.run.config.device
        return {
            silo: record_tensors(upload, device)
            for silo, (_, upload) in self._ask(
                "uploads", rnd=rnd, for_deployment=for_deployment
            ).items()
            if upload is not None
        }

    def reports(self, rnd: int) -> dict[int, dict[str, float]]:
        return {
            silo: answer["report"] for silo, (answer, _) in self._ask("reports", rnd=rnd).items()
        }

    def send(self, rnd: int, values: dict[int, dict[str, torch.Tensor]]) -> None:
        self._enqueue("send", _arrays(values), rnd=rnd)

    def deploy(self, values: dict[int, dict[str, torch.Tensor]]) -> None:
        self._enqueue("deploy", _arrays(values))

    # calls made by the round loop (answered with the next flush)
    def setup(self) -> None:
        self._enqueue("setup")

    def train(self, rnd: int) -> None:
        self._enqueue("train", rnd=rnd)

    def evaluate(self, rnd: int) -> None:
        self._enqueue("evaluate", rnd=rnd)

    def finish(self) -> None:
        self._enqueue("finish")

    def checkpoint(self, rnd: int) -> None:
        """Every silo saves its session after round ``rnd`` on its own disk; returns once all
        have (the rows queued before arrive with the answers)."""
        self._ask("checkpoint", rnd=rnd)


_ERROR_LINE = re.compile(r"^(?:\w+\.)*(\w+(?:Error|Exception)): (.+)$")


def _cause(reason: str) -> str:
    """The silo's own exception from Flower's error text (which wraps it in Ray's traceback)."""
    for line in reason.splitlines():
        match = _ERROR_LINE.match(line.strip())
        if match and match.group(1) != "ClientAppException":
            return f"{match.group(1)}: {match.group(2)}"
    return reason


def _bytes(arrays) -> int:
    """Bytes of one ArrayRecord, or of a dict of them ({} for none)."""
    if isinstance(arrays, ArrayRecord):
        return arrays.count_bytes()
    return sum(a.count_bytes() for a in arrays.values())


def _names(arrays) -> list[str]:
    if isinstance(arrays, ArrayRecord):
        return sorted(arrays)
    return sorted(n for a in arrays.values() for n in a)


def _arrays(values: dict[int, dict[str, torch.Tensor]]) -> dict[int, ArrayRecord]:
    return {silo: tensors_record(v) for silo, v in values.items()}


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
    from playerfl_core.fl.algorithms import get_algorithm

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
    from tqdm import tqdm

    out = Path(out_dir)
    stop = threading.Event()
    outcome: dict[str, BaseException] = {}
    finished = [] if finished is None else finished

    def run() -> None:
        try:
            _run_simulation(server_app(jobs, silos, out, stop, finished), silos)
        except BaseException as err:  # noqa: BLE001 - raised again in the calling thread
            outcome["error"] = err

    thread = threading.Thread(target=run, name="flower-simulation", daemon=True)
    thread.start()
    bar = tqdm(total=len(jobs), desc="flower", unit="run", disable=not progress)
    try:
        while thread.is_alive():
            thread.join(0.2)
            _retake_stop_signals()
            bar.update(len(finished) - bar.n)
    except KeyboardInterrupt:
        stop.set()
        thread.join(STOP_WITHIN_S)
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
        import ray  # noqa: F401  (its import configures its loggers: quiet them again below)
        from flwr.simulation import run_simulation

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
