"""PLayer-FL across real processes: a SuperLink (TLS, SuperNode authentication) and one
SuperNode per Heart hospital on loopback, each holding only its own silo's data file. A
SuperNode killed mid-run stops the run with a message naming its silo and leaves a sound
checkpoint; the restarted run resumes from it and ends with the in-process table, row for row
(round 0 from the first run, the rest from the resumed one). An unregistered SuperNode is
refused. Chapter 07 runs the uninterrupted recipe and compares its table too (nbval).

One federation serves the whole file (starting one costs about half a minute here); every wait
has a timeout, and the fixture stops every process it started, also when a test fails.
"""

from __future__ import annotations

import pickle
import re
import tomllib

import pandas as pd
import pytest
import torch
from cryptography import x509

from data_prep import load
from playerfl_core.fl.algorithms import get_algorithm
from playerfl_core.fl.engine import run_federated
from playerfl_core.fl.profiles import make_config
from playerfl_core.flower import silo_data
from playerfl_core.flower.checkpoints import ServerCheckpoint
from playerfl_core.flower.credentials import NodeKeys, make_credentials, write_node_keys
from playerfl_core.flower.deploy import RUN_CONFIG, job_from_config
from playerfl_core.flower.federation import (
    APP_DIR,
    REFUSED,
    Federation,
    FederationError,
    descendants,
)

ROUNDS = 2
RUN = {"dataset": "heart", "algorithm": "playerfl", "rounds": ROUNDS, "seed": 0}
RUN_TIMEOUT = 600.0


def _job(**run):
    return job_from_config({**RUN, **run})


@pytest.fixture(scope="module")
def expected() -> pd.DataFrame:
    """The in-process run of the same job (its config built without the app's code)."""
    config = make_config("heart", "quick", seed=0, rounds=ROUNDS, device="cpu")
    data = load("heart", profile="quick", seed=0)
    return run_federated(data, get_algorithm("playerfl"), config).table()


@pytest.fixture(scope="module")
def federation(tmp_path_factory):
    with Federation(tmp_path_factory.mktemp("silos"), silos=4) as fed:
        yield fed
    pids = [p.popen.pid for p in fed._procs]
    assert all(p.popen.poll() is not None for p in fed._procs)
    assert not [d for pid in pids for d in descendants(pid)]


def test_the_app_declares_the_run_config_the_server_reads():
    declared = tomllib.loads((APP_DIR / "pyproject.toml").read_text())["tool"]["flwr"]["app"]
    assert declared["config"] == RUN_CONFIG
    assert declared["components"] == {
        "serverapp": "playerfl_core.flower.deploy:server",
        "clientapp": "playerfl_core.flower.deploy:client",
    }


def test_the_server_certificate_is_the_cas_and_names_loopback(tmp_path):
    creds = make_credentials(tmp_path, silos=2)
    ca = x509.load_pem_x509_certificate(creds.ca_cert.read_bytes())
    cert = x509.load_pem_x509_certificate(creds.server_cert.read_bytes())
    cert.verify_directly_issued_by(ca)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)} == {"127.0.0.1"}
    assert sans.get_values_for_type(x509.DNSName) == ["localhost"]
    assert all(k.private.stat().st_mode & 0o077 == 0 for k in creds.nodes)
    assert creds.server_key.stat().st_mode & 0o077 == 0


@pytest.mark.slow  # a SuperLink and SuperNodes started
@pytest.mark.parametrize("credential", ["unregistered key", "another CA"])
def test_a_supernode_without_valid_credentials_is_refused(federation, tmp_path, credential):
    registered = {n["node-id"] for n in federation.nodes()}
    if credential == "unregistered key":
        stranger = NodeKeys(tmp_path / "stranger", tmp_path / "stranger.pub")
        write_node_keys(stranger)
        impostor, why = {"key": stranger.private}, "Failed to activate SuperNode"
    else:  # the right key, but it trusts a CA that did not sign the SuperLink's certificate
        impostor, why = {"ca": make_credentials(tmp_path, 1).ca_cert}, "CERTIFICATE_VERIFY_FAILED"
    name = "impostor_" + credential.replace(" ", "_")
    proc = federation.start_supernode(0, name=name, **impostor)
    try:
        code = proc.popen.wait(timeout=60)
    finally:
        proc.stop()
    log = proc.log.read_text()
    assert code != 0 and REFUSED in log and why in log
    assert {n["node-id"] for n in federation.nodes()} == registered


@pytest.mark.slow  # waits out a lost silo: 7 min
def test_a_killed_supernode_stops_the_run_and_a_restart_ends_with_the_in_process_table(
    federation, expected, tmp_path
):
    out = tmp_path / "out"
    # On 2 loaded cores (the other test worker executing chapters) the live silos have missed a
    # 45 s deadline (every ClientApp call starts a process), so the run gives them 120 s.
    run_id = federation.submit(out, timeout=120.0, **RUN)
    checkpoint, status_file = out / ServerCheckpoint.FILE, out / "status.json"
    federation._wait(
        lambda: checkpoint.exists() or status_file.exists(),  # a run that stopped: say so now
        federation.superlink,
        "round 0's checkpoint",
        0.2,
        RUN_TIMEOUT,
    )
    assert checkpoint.exists(), f"the run stopped before round 0: {status_file.read_text()}"
    federation.kill_supernode(2)
    status = federation.wait_run(run_id, out, timeout=RUN_TIMEOUT)
    assert not status["ok"]
    # silo 2 is named; on a loaded machine the live silos may miss the same deadline too
    lost = re.search(r"silos \[([\d, ]+)\] did not answer", status["error"])
    assert lost and "2" in lost.group(1).split(", "), status["error"]
    assert not (out / "results.parquet").exists()

    point = ServerCheckpoint.load(out, _job())
    done = expected[expected["round"] <= point.round]
    assert point.round < ROUNDS - 1
    assert point.rows == list(expected.itertuples(index=False))[: len(point.rows)]
    assert len(point.rows) == len(done)  # every row of the completed rounds, nothing after
    pickle.loads(checkpoint.read_bytes())  # whole (written atomically)

    federation.restart_supernode(2)  # once the SuperLink marked the lost one offline
    resumed = federation.submit(out, resume=True, timeout=120.0, **RUN)
    status = federation.wait_run(resumed, out, timeout=RUN_TIMEOUT)
    assert status["ok"], status
    got = pd.read_parquet(out / "results.parquet")
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert (out / "status.json").read_text().count(f'"resumed_after": {point.round}') == 1
    last = ServerCheckpoint.load(out, _job())
    assert last.round == ROUNDS - 1 and last.rows == list(expected.itertuples(index=False))
    for silo in range(4):  # its own data file only: no raw file of the federation reached it
        own = silo_data.file_name("heart", "quick", 0, silo)
        files = sorted(p.name for p in (federation.silo_folder(silo) / "data").iterdir())
        assert files == [own, own + ".sha256"]


def test_the_job_computes_with_the_threads_it_is_given_or_the_servers():
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert _job().threads == 2 and _job(threads=3).threads == 3
    finally:
        torch.set_num_threads(before)
    with pytest.raises(ValueError, match="threads must be ≥ 0"):
        _job(threads=-1)


@pytest.mark.slow  # a SuperLink and SuperNodes started
def test_an_unknown_algorithm_fails_fast_with_the_valid_names(federation, tmp_path):
    with pytest.raises(FederationError, match="Unknown algorithm 'plyerfl'. Available: .*fedavg"):
        federation.run(tmp_path / "out", timeout=180.0, **{**RUN, "algorithm": "plyerfl"})


@pytest.mark.slow  # a SuperLink and SuperNodes started
def test_resume_without_a_checkpoint_says_so(federation, tmp_path):
    with pytest.raises(FederationError, match="no round of this run completed"):
        federation.run(tmp_path / "out", timeout=180.0, resume=True, **RUN)


def test_the_recipe_stops_its_processes_when_a_start_fails(tmp_path, monkeypatch):
    def refuse(self, keys):
        raise FederationError("registration refused")

    monkeypatch.setattr(Federation, "register", refuse)
    fed = Federation(tmp_path, silos=1, wait_s=60.0)
    with pytest.raises(FederationError, match="registration refused"):
        with fed:
            pass
    assert fed._procs and all(p.popen.poll() is not None for p in fed._procs)
    assert not [d for p in fed._procs for d in descendants(p.popen.pid)]


def test_the_flower_cli_prints_plain_json_from_a_notebook_kernel(monkeypatch, tmp_path):
    """Jupyter kernels set FORCE_COLOR, and Flower's CLI then wraps its JSON in colour codes:
    the recipe's processes run without it (chapter 07 starts the recipe from a kernel)."""
    from playerfl_core.flower.federation import _environment

    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("CLICOLOR_FORCE", "1")
    env = _environment(tmp_path)
    assert "FORCE_COLOR" not in env and "CLICOLOR_FORCE" not in env and env["NO_COLOR"] == "1"
