"""The machine fingerprint, and the perturbation that `make test` runs nbval under: it must move
a run's last bits the way another CPU does, or the nbval check proves nothing."""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from playerfl_core.study import machine

RUN = """
import sys, torch
from data_prep import load
from playerfl_core import get_algorithm, make_config, run_federated
torch.set_num_threads(1)
data = load("digits", profile="quick", seed=0)
config = make_config("digits", "quick", seed=0, rounds=2, device="cpu", progress=False)
run_federated(data, get_algorithm("fedavg"), config).table().to_csv(sys.argv[1], index=False)
"""


def _run(path, extra_env):
    env = {**os.environ, "OMP_NUM_THREADS": "1", **extra_env}
    for name in machine.BIT_ENV:
        if name not in extra_env:
            env.pop(name, None)
    subprocess.run([sys.executable, "-c", RUN, str(path)], env=env, check=True, timeout=300)
    return pd.read_csv(path)


@pytest.mark.slow  # CNN runs under two kernel sets: 1.5 min
def test_the_perturbation_moves_a_cnn_run_like_another_cpu(tmp_path):
    plain = _run(tmp_path / "plain.csv", {})
    again = _run(tmp_path / "again.csv", {})
    moved = _run(tmp_path / "moved.csv", machine.perturbation())
    pd.testing.assert_frame_equal(plain, again, check_exact=True)  # same machine: identical
    keys = [c for c in plain.columns if c != "value"]
    pd.testing.assert_frame_equal(plain[keys], moved[keys])  # same rows,
    assert (plain["value"] - moved["value"]).abs().max() > 0  # other last bits


def test_the_perturbation_names_another_kernel_set():
    settings = machine.perturbation()
    native = machine.fingerprint()["torch_cpu_capability"]
    assert settings["ATEN_CPU_CAPABILITY"].upper() != native and settings["MKL_CBWR"]


def test_the_fingerprint_names_what_decides_last_bits(capsys):
    facts = machine.fingerprint(threads=3)
    for name in ("cpu", "isa", "torch_cpu_capability", "mkl", "onednn", "versions", "threads"):
        assert facts[name] not in (None, "", []), name
    assert facts["threads"] == 3 and facts["key"] == machine.key(facts)
    assert machine.main(["--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cpu"] == facts["cpu"]
    assert machine.main(["--perturbation"]) == 0
    assert "ATEN_CPU_CAPABILITY=" in capsys.readouterr().out
    assert machine.main(["--bogus"]) == 2
