"""PLayer-FL across real processes on this machine: a SuperLink and one SuperNode per silo.

The recipe (``python -m playerfl_core.flower.federation`` or ``make silos``):

1. make a local CA, a TLS certificate for 127.0.0.1/localhost and one key pair per SuperNode
   (:mod:`playerfl_core.flower.credentials`);
2. start ``flower-superlink`` with TLS and ``--enable-supernode-auth`` (on a free loopback
   port; runtime dependency installation disabled: nothing is installed at run time) and
   register each SuperNode's public key with ``flwr supernode register``;
3. start one ``flower-supernode`` per silo, with its private key, its own node config
   (``partition-id``, ``num-partitions``; ``state-dir`` and ``data-dir``: its checkpoints and
   its data, in its own folder) and ``PLAYERFL_DATA`` set to that data folder;
4. write each silo's own part of the run's federation into its data folder (the recipe plays
   the data steward once: :mod:`playerfl_core.flower.silo_data`), submit the app in ``silos/`` with
   ``flwr run`` and wait for the server's ``status.json``;
5. read the results table, then stop every process it started (also on failure or Ctrl-C).

Every wait has a timeout. A SuperNode whose key was not registered is refused by the SuperLink
and exits, logging Flower's exit code 305. What each SuperNode reads: only its own silo's file
(its train/validation/test tensors and what the model needs); the raw files of the federation,
and so the other silos' rows, stay with the data steward. Heart's preprocessing pools a few
statistics of all four hospitals (training medians, z-score means and deviations): they are
already applied in each silo's file, as a deployment would agree on them before training.

Flower's CLI reads its connection settings from ``$FLWR_HOME/config.toml``: the recipe writes
one in its own folder, so the user's ``~/.flwr`` is left alone.

About 430 lines: one recipe, one class (:class:`Federation`) that starts, watches and stops its
processes in order; the processes themselves (ports, environment, stopping a process with its
children) are :mod:`~playerfl_core.flower.processes`.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import torch

from data_prep import registry
from playerfl_core.flower import silo_data
from playerfl_core.flower.credentials import Credentials, NodeKeys, make_credentials
from playerfl_core.flower.processes import (  # noqa: F401 (re-exported for tests)
    FederationError,
    Process,
    _bin,
    _environment,
    _toml,
    descendants,
    free_port,
)
from playerfl_core.stats.results import folder_problem

APP_DIR = Path(__file__).resolve().parents[2] / "silos"
"""The Flower App folder (``pyproject.toml``: components and run config)."""

REFUSED = "Exit Code: 305"
"""What a SuperNode the SuperLink did not admit logs before it exits (Flower's exit code 305,
ref-exit-codes/305; the process itself returns 1 after its web server shuts down)."""


@dataclass
class Federation:
    """A SuperLink and its SuperNodes under ``folder`` (credentials, logs, state, results).

    Use as a context manager: leaving it stops every process it started.
    """

    folder: Path
    silos: int
    wait_s: float = 90.0
    """Timeout of every wait for a process (start, registration, connection)."""
    credentials: Credentials | None = None
    port: int = 0
    superlink: Process | None = None
    supernodes: dict[int, Process] = field(default_factory=dict)
    node_ids: dict[int, str] = field(default_factory=dict)
    """Each silo's node id at the SuperLink (given when its key was registered)."""
    _procs: list[Process] = field(default_factory=list)

    def __post_init__(self):
        self.folder = Path(self.folder).resolve()
        self.env = _environment(self.folder / "flwr_home")

    # -- processes ---------------------------------------------------------------------------
    def _start(self, name: str, command: list[str], env: dict | None = None) -> Process:
        log = self.folder / "logs" / f"{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            popen = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**self.env, **(env or {})},
                cwd=self.folder,
                start_new_session=True,
            )
        proc = Process(name, popen, log)
        self._procs.append(proc)
        return proc

    def start(self) -> Federation:
        """Credentials, SuperLink, registrations, one SuperNode per silo, all online."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self.credentials = make_credentials(self.folder / "credentials", self.silos)
        self.start_superlink()
        for silo in range(self.silos):
            self.node_ids[silo] = self.register(self.credentials.nodes[silo])
        for silo in range(self.silos):
            self.start_supernode(silo)
        self.wait_online(self.silos)
        return self

    def start_superlink(self) -> None:
        c = self.credentials
        self.port = free_port()
        self.superlink = self._start(
            "superlink",
            [
                _bin("flower-superlink"),
                "--ssl-ca-certfile",
                str(c.ca_cert),
                "--ssl-certfile",
                str(c.server_cert),
                "--ssl-keyfile",
                str(c.server_key),
                "--enable-supernode-auth",
                "--disable-runtime-dependency-installation",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
            ],
        )
        home = Path(self.env["FLWR_HOME"])
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(
            '[superlink]\ndefault = "silos"\n\n[superlink.silos]\n'
            f'address = "127.0.0.1:{self.port}"\nroot-certificates = "{c.ca_cert}"\n'
        )
        self._wait(
            lambda: "Uvicorn running" in self.superlink.log.read_text(errors="replace"),
            self.superlink,
            "the SuperLink to listen",
        )

    def register(self, keys: NodeKeys) -> str:
        """Register a SuperNode's public key; its node id."""
        reply = self.flwr("supernode", "register", str(keys.public), "silos", "--format", "json")
        return str(json.loads(reply)["node-id"])

    def silo_folder(self, silo: int) -> Path:
        """Silo ``silo``'s own disk: its data (``data/``) and its checkpoints (``state/``)."""
        return self.folder / "silos" / f"silo{silo}"

    def supernode_command(self, silo: int, key: Path, ca: Path | None = None) -> list[str]:
        own = self.silo_folder(silo)
        config = (
            f"partition-id={silo} num-partitions={self.silos} "
            f"state-dir='{own / 'state'}' data-dir='{own / 'data'}'"
        )
        return [
            _bin("flower-supernode"),
            "--root-certificates",
            str(ca or self.credentials.ca_cert),
            "--superlink",
            f"127.0.0.1:{self.port}",
            "--auth-supernode-private-key",
            str(key),
            "--node-config",
            config,
            "--port",
            str(free_port()),
            "--max-retries",
            "3",
            "--max-wait-time",
            str(self.wait_s),
        ]

    def start_supernode(self, silo: int, key=None, ca=None, name: str | None = None):
        """Start silo ``silo``'s SuperNode with its own key; or an impostor with another
        ``key`` or trusting another ``ca`` (not counted among the silo's SuperNodes)."""
        own = key is None and ca is None
        key = key or self.credentials.nodes[silo].private
        # its data root is its own data folder: it cannot read any other silo's files
        data = {"PLAYERFL_DATA": str(self.silo_folder(silo) / "data")}
        command = self.supernode_command(silo, key, ca)
        proc = self._start(name or f"supernode_{silo}", command, data)
        if own:
            self.supernodes[silo] = proc
        return proc

    def kill_supernode(self, silo: int) -> None:
        """SIGKILL silo ``silo``'s SuperNode and everything it spawned (a machine lost)."""
        proc = self.supernodes.pop(silo)
        proc.kill(signal.SIGKILL)
        proc.popen.wait(timeout=self.wait_s)

    def restart_supernode(self, silo: int, timeout: float = 300.0) -> Process:
        """Start silo ``silo``'s SuperNode again after it was lost, and wait until it is online.

        The SuperLink admits a node again only once it has marked the lost one offline (its
        heartbeats stopped: about a minute in Flower 1.42); before that it refuses the restarted
        one, which then exits. So this waits for ``offline`` first, ``timeout`` seconds at most.
        """
        node = self.node_ids[silo]
        self._wait(
            lambda: self.status(node) != "online",
            self.superlink,
            f"the SuperLink to mark silo {silo}'s lost SuperNode offline",
            every=2.0,
            timeout=timeout,
        )
        proc = self.start_supernode(silo)

        def back():
            if not proc.alive():
                raise FederationError(
                    f"the restarted SuperNode of silo {silo} exited (code "
                    f"{proc.popen.returncode}):\n{proc.tail()}"
                )
            return self.status(node) == "online"

        self._wait(back, self.superlink, f"silo {silo}'s SuperNode to be online", every=1.0)
        return proc

    def status(self, node: str) -> str:
        """A node's status at the SuperLink (``online``, ``offline``, ``registered``, ...)."""
        return next(n["status"] for n in self.nodes() if n["node-id"] == node)

    def nodes(self) -> list[dict]:
        """The SuperLink's SuperNodes (``flwr supernode list``)."""
        return json.loads(self.flwr("supernode", "list", "silos", "--format", "json"))["nodes"]

    def wait_online(self, count: int) -> None:
        def ready():
            for silo, proc in self.supernodes.items():
                if not proc.alive():
                    raise FederationError(
                        f"SuperNode of silo {silo} exited (code {proc.popen.returncode}):\n"
                        + proc.tail()
                    )
            return sum(n["status"] == "online" for n in self.nodes()) >= count

        self._wait(ready, self.superlink, f"{count} SuperNodes to be online", every=2.0)

    def flwr(self, *args: str, timeout: float | None = None) -> str:
        """Run a ``flwr`` CLI command against this SuperLink; its stdout."""
        try:
            done = subprocess.run(
                [_bin("flwr"), *args],
                capture_output=True,
                text=True,
                env=self.env,
                cwd=self.folder,
                timeout=timeout or self.wait_s,
            )
        except subprocess.TimeoutExpired:
            raise FederationError(f"flwr {' '.join(args)} took over {self.wait_s:g} s.") from None
        if done.returncode != 0:
            raise FederationError(
                f"flwr {' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}"
            )
        return done.stdout

    def _wait(self, ok, proc: Process | None, what: str, every=0.5, timeout=None) -> None:
        """Poll ``ok()`` until true; raise if ``proc`` exits or ``timeout`` (``wait_s``) passes."""
        start, timeout = time.monotonic(), timeout or self.wait_s
        while not ok():
            if proc is not None and not proc.alive():
                raise FederationError(
                    f"{proc.name} exited while waiting for {what}:\n{proc.tail()}"
                )
            if time.monotonic() - start > timeout:
                raise FederationError(f"timed out after {timeout:g} s waiting for {what}.")
            time.sleep(every)

    # -- runs --------------------------------------------------------------------------------
    def submit(self, out: Path, **config) -> int:
        """Submit the app with ``config`` (run-config keys); return the run id. ``threads``
        defaults to this process's CPU threads: the silos then compute the bits an in-process
        run here gives."""
        config = {"threads": torch.get_num_threads(), **config, "out": str(Path(out).resolve())}
        self.provide_data(config)
        (Path(out) / "status.json").unlink(missing_ok=True)  # a previous run's
        pairs = " ".join(f"{k}={_toml(v)}" for k, v in config.items())
        reply = self.flwr("run", str(APP_DIR), "silos", "--run-config", pairs, "--format", "json")
        answer = json.loads(reply)
        if not answer.get("success"):
            raise FederationError(f"flwr run refused the run: {reply}")
        return int(answer["run-id"])

    def provide_data(self, config: dict) -> None:
        """Put each silo's own part of the run's federation into its data folder, unless it is
        there (on one machine the recipe plays the data steward: see ``silo_data``)."""
        from playerfl_core.flower.deploy import RUN_CONFIG  # deferred: deploy imports flwr (1 s)

        dataset, profile, seed = (
            {**RUN_CONFIG, **config}[k] for k in ("dataset", "profile", "seed")
        )
        folders = [self.silo_folder(k) / "data" for k in range(self.silos)]
        names = [silo_data.file_name(dataset, profile, seed, k) for k in range(self.silos)]
        if all((f / n).is_file() for f, n in zip(folders, names, strict=True)):
            return
        data = registry.load(dataset, profile=profile, seed=seed)
        if len(data.clients) != self.silos:
            raise FederationError(
                f"{dataset} has {len(data.clients)} silos, this federation {self.silos} SuperNodes."
            )
        silo_data.write(data, profile, seed, folders)

    def run_status(self, run_id: int) -> dict:
        reply = self.flwr("ls", "silos", "--run-id", str(run_id), "--format", "json")
        return json.loads(reply)["runs"][0]

    def wait_run(self, run_id: int, out: Path, timeout: float) -> dict:
        """Wait until the server wrote ``status.json`` or Flower says the run finished;
        return the status (``ok``, ``error``)."""
        status, start, checked = Path(out) / "status.json", time.monotonic(), time.monotonic()
        while not status.exists():
            if not self.superlink.alive():
                raise FederationError(f"the SuperLink exited:\n{self.superlink.tail()}")
            if time.monotonic() - start > timeout:
                raise FederationError(
                    f"run {run_id} did not finish within {timeout:g} s: allow it more time "
                    "(timeout; --timeout on the command line) or run fewer rounds."
                )
            if time.monotonic() - checked > 15:
                checked = time.monotonic()
                flower = self.run_status(run_id)
                if flower["status"].startswith("finished") and not status.exists():
                    return {"ok": False, "error": f"{flower['status']}: {flower['status-details']}"}
            time.sleep(1.0)
        return json.loads(status.read_text())

    def run(self, out: Path, timeout: float = 600.0, **config) -> pd.DataFrame:
        """Submit, wait, return the results table (a failed run raises, with its error)."""
        status = self.wait_run(self.submit(out, **config), out, timeout)
        if not status["ok"]:
            raise FederationError(f"the run failed: {status['error']}")
        return pd.read_parquet(Path(out) / "results.parquet")

    # -- lifetime ----------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop every process this federation started (SuperNodes first)."""
        errors = []
        for proc in reversed(self._procs):
            try:
                proc.stop()
            except FederationError as err:
                errors.append(str(err))
        self.supernodes.clear()
        if errors:
            raise FederationError("; ".join(errors))

    def __enter__(self) -> Federation:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m playerfl_core.flower.federation", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--out", default="_build/silos", help="folder for everything it makes")
    parser.add_argument("--algorithm", default="playerfl")
    parser.add_argument(
        "--dataset", default=None, help="default: the app's run config (silos/pyproject.toml)"
    )
    parser.add_argument("--silos", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=0, help="0: the profile's")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", default="quick")
    parser.add_argument(
        "--timeout",
        type=float,
        default=3600.0,
        help="seconds the whole run may take (Heart's 20 quick rounds: about 20 min on 2 cores)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the run stopped in --out from its last completed round",
    )
    args = parser.parse_args(argv)
    folder = Path(args.out).resolve()
    problem = folder_problem(folder)
    if problem:  # before any SuperNode starts
        print(f"federation: --out: cannot write into {args.out}: {problem}.", file=sys.stderr)
        return 2
    with Federation(folder, args.silos) as federation:
        print(f"SuperLink on 127.0.0.1:{federation.port} (TLS, SuperNode authentication)")
        print(f"{args.silos} SuperNodes online; logs in {folder / 'logs'}")
        chosen = {"dataset": args.dataset} if args.dataset else {}  # else the app's default
        table = federation.run(
            folder / "results",
            timeout=args.timeout,
            **chosen,
            algorithm=args.algorithm,
            rounds=args.rounds,
            seed=args.seed,
            profile=args.profile,
            silos=args.silos,
            resume=args.resume,
        )
    test = table.query("split == 'test' and metric == 'accuracy'")
    last = test[test["round"] == test["round"].max()]
    print(f"{len(table)} result rows in {folder / 'results' / 'results.parquet'}")
    print(last[["client", "round", "value"]].to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
