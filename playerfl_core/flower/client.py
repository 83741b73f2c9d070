"""The silo side of the Flower link: each SuperNode's ClientApp (:func:`client_app`) keeps its
silo as a one-client run between messages and answers the server's calls with that run's own
:class:`~playerfl_core.fl.engine.LocalLink`.

Cut out of :mod:`playerfl_core.flower.link`, whose docstring tells the whole story.
"""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass, field

import torch
from flwr.app import ConfigRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp

from data_prep import registry
from playerfl_core.fl.algorithms import get_algorithm
from playerfl_core.fl.engine import LocalLink, Run, RunConfig, make_client
from playerfl_core.flower import silo_data
from playerfl_core.flower.checkpoints import SiloCheckpoints
from playerfl_core.flower.wire import (
    CALLS,
    PROTOCOL,
    FlowerRunError,
    Job,
    record_tensors,
    tensors_record,
)
from playerfl_core.study.run_store import code_fingerprint

# -- the client side ---------------------------------------------------------------------------
_DATA: dict[tuple, object] = {}
"""Loaded data per process (read-only): a node reloads its silo from disk only once."""


def _silo_data(job: Job, context: Context):
    """This node's data: only its own silo's file when its node config names a ``data-dir``
    (a deployment, :mod:`playerfl_core.flower.silo_data`); else the whole federation, built from the
    raw files on this machine (simulation, where every silo shares one machine)."""
    data_dir = context.node_config.get("data-dir")
    key = (job.dataset, job.profile, job.data_seed, tuple(job.dataset_modules), data_dir)
    if key not in _DATA:
        for path in job.dataset_modules:
            registry.load_dataset_module(path)  # idempotent
        if data_dir:
            silo = _silo(context)
            _DATA[key] = silo_data.read(data_dir, job.dataset, job.profile, job.data_seed, silo)
        else:
            _DATA[key] = registry.load(job.dataset, profile=job.profile, seed=job.data_seed)
    return _DATA[key]


@dataclass
class Session:
    """One silo's part of one run: a one-client run and its copy of the algorithm."""

    run: Run
    algorithm: object
    link: LocalLink = field(init=False)

    def __post_init__(self):
        self.link = LocalLink(self.run, self.algorithm)

    def pack(self) -> bytes:
        """The training state without the data (the node reloads that from its own disk)."""
        client, data = self.run.clients[0], self.run.data
        held = client.x, client.y
        client.x = client.y = self.run.data = None
        try:
            return pickle.dumps((self.run, self.algorithm))
        finally:
            client.x, client.y = held
            self.run.data = data

    @classmethod
    def unpack(cls, blob: bytes, data) -> Session:
        run, algorithm = pickle.loads(blob)  # written by this node itself (Context.state)
        run.data = data
        run.clients[0].attach(data.clients[run.clients[0].id])
        return cls(run, algorithm)


def _new_session(job: Job, silo: int, data) -> Session:
    if not 0 <= silo < data.n_clients:
        raise FlowerRunError(
            f"this SuperNode is silo {silo} (node config partition-id), but {job.dataset!r} "
            f"has silos 0..{data.n_clients - 1}: start it with a valid partition-id."
        )
    config = RunConfig(**job.config)
    config.check_data(data)
    client = make_client(data, silo, config)
    algorithm = get_algorithm(job.algorithm, **job.hyperparameters)
    return Session(Run(data, config, [client], {}, algorithm.name), algorithm)


def _silo(context: Context) -> int:
    try:
        return int(context.node_config["partition-id"])
    except KeyError:
        raise FlowerRunError(
            "this SuperNode has no partition-id in its node config: start it with "
            '--node-config "partition-id=<silo> num-partitions=<silos>".'
        ) from None


def _handle(message: Message, context: Context) -> Message:
    """Answer one message: ``hello`` (a new run) or a batch of link calls, run in order."""
    head = message.content["head"]
    if head["protocol"] != PROTOCOL or head["code"] != code_fingerprint():
        raise FlowerRunError(
            f"server and silo run different code (protocol {head['protocol']} vs {PROTOCOL}, "
            f"code {head['code']} vs {code_fingerprint()}): install the same playerfl_core "
            "version on the server and every silo."
        )
    job = Job(**json.loads(head["job"]))
    torch.set_num_threads(job.threads)
    silo, slot = _silo(context), f"session:{head['key']}"
    if message.metadata.message_type.endswith(".hello"):
        data = _silo_data(job, context)
        if "resume" in head:  # a restarted run: the session saved after that round
            try:
                saved = _checkpoints(context, job, silo).load(json.loads(head["resume"]))
            except FileNotFoundError as err:
                raise FlowerRunError(f"silo {silo} cannot resume: {err}") from None
            session = Session.unpack(saved, data)
        else:
            session = _new_session(job, silo, data)
        context.state[slot] = ConfigRecord({"blob": session.pack()})
        spec = {k: getattr(data, k) for k in ("name", "model", "num_classes")}
        spec["input_shape"] = list(data.input_shape)
        spec["model_args"] = getattr(data, "model_args", None) or {}
        answer = {"silo": silo, "n_train": session.run.clients[0].n_train, **spec}
        return _reply(message, {"answers": answer})
    if slot not in context.state:
        raise FlowerRunError(f"silo {silo} has no state for run {head['key']} (no hello).")
    session = Session.unpack(context.state[slot]["blob"], _silo_data(job, context))
    answers, arrays = [], {}
    for entry in json.loads(head["calls"]):
        if entry["call"] == "checkpoint":
            _checkpoints(context, job, silo).save(entry["args"]["rnd"], session.pack())
        answer, upload = _run_call(session, silo, entry, message.content)
        answers.append(answer)
        if upload is not None:
            arrays[f"upload/{entry['seq']}"] = upload
    context.state[slot] = ConfigRecord({"blob": session.pack()})
    return _reply(message, {"answers": answers}, arrays)


def _checkpoints(context: Context, job: Job, silo: int) -> SiloCheckpoints:
    """Where this silo keeps its sessions: ``state-dir`` in the node config (its own disk)."""
    try:
        return SiloCheckpoints.of(context.node_config.get("state-dir"), job, silo)
    except ValueError as err:
        raise FlowerRunError(str(err)) from None


def _run_call(session: Session, silo: int, entry: dict, content: RecordDict):
    """One link call on the silo's one-client run: (answer, upload record or None)."""
    call, args, seq = entry["call"], entry["args"], entry["seq"]
    if call not in CALLS:
        raise FlowerRunError(f"unknown call {call!r}: server and silo versions differ.")
    session.algorithm.load_client_state(entry["state"])
    link, rnd, upload = session.link, args.get("rnd", 0), None
    answer: dict = {"seq": seq}
    if call in ("send", "deploy"):
        values = {silo: record_tensors(content[f"values/{seq}"], session.run.config.device)}
        link.send(rnd, values) if call == "send" else link.deploy(values)
    elif call == "uploads":
        sent = link.uploads(rnd, args.get("for_deployment", False))
        upload = tensors_record(sent[silo]) if sent else None
    elif call == "reports":
        answer["report"] = link.reports(rnd)[silo]
    elif call in ("train", "evaluate"):
        getattr(link, call)(rnd)
    elif call == "checkpoint":
        pass  # saved by _handle, which knows the node's state-dir
    else:
        getattr(link, call)()
    answer["rows"], session.run.rows = session.run.rows, []
    return answer, upload


def _reply(message: Message, out: dict, arrays: dict | None = None) -> Message:
    content = RecordDict({"out": ConfigRecord({"json": json.dumps(out)}), **(arrays or {})})
    return Message(content, reply_to=message)


def client_app() -> ClientApp:
    """The ClientApp every silo runs."""
    app = ClientApp()

    @app.query("hello")
    def hello(message: Message, context: Context) -> Message:
        return _handle(message, context)

    @app.train("calls")
    def calls(message: Message, context: Context) -> Message:
        return _handle(message, context)

    return app
