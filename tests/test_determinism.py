"""Deterministic CUDA kernels for the span of a run; settings restored after it."""

import os

import torch

from playerfl_core.fl.determinism import deterministic_kernels


def settings():
    cudnn = torch.backends.cudnn
    return (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        cudnn.deterministic,
        cudnn.benchmark,
    )


def test_cuda_runs_use_deterministic_kernels_and_restore_the_settings(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    before = settings()
    with deterministic_kernels("cuda:0"):
        assert settings() == (True, True, True, False)
    assert settings() == before


def test_a_cuda_run_keeps_the_users_cublas_setting(monkeypatch):
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8")
    with deterministic_kernels("cuda"):
        assert torch.are_deterministic_algorithms_enabled()
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":16:8"


def test_settings_restored_when_the_run_fails(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    before = settings()
    try:
        with deterministic_kernels("cuda"):
            raise RuntimeError("a run failed")
    except RuntimeError:
        pass
    assert settings() == before


def test_cpu_runs_change_nothing(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    before = settings()
    with deterministic_kernels("cpu"):
        assert settings() == before
    assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ
