"""The server's end of the Flower link: :class:`FlowerLink` answers the round loop's calls
(uploads, reports, deliveries, deployments; set up, train, evaluate, finish) with Flower
messages to the silos, queueing the calls whose answer the server does not need yet so that they
travel with the next call that needs one, and records what crossed the wire.

Part of :mod:`playerfl_core.flower.link` (whose docstring tells the whole story, and which
re-exports :class:`FlowerLink`); apart so that the conversation with the silos reads on its own,
and the loop that drives it (``serve``, ``simulate``) on its own.
"""

from __future__ import annotations

import json
import re
import threading
import time

import torch
from flwr.app import ArrayRecord, Message, RecordDict
from flwr.serverapp import Grid

from playerfl_core.fl.engine import Run
from playerfl_core.flower.wire import (
    PULL_EVERY_S,
    FlowerStopped,
    Job,
    SiloFailed,
    SiloLost,
    _header,
    record_tensors,
    tensors_record,
)


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
