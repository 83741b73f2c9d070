"""Deterministic kernels on CUDA for the span of a run ("same seed, same machine, same numbers").

Every kernel the engine uses on the CPU is deterministic. On CUDA, cuDNN may pick convolution
algorithms that accumulate with atomics, so two runs of one seed drift apart from the first
backward pass: on an H200 every Fashion-MNIST algorithm did (``bench/cuda_check.py``), while
Heart's all-linear model did not. Inside :func:`deterministic_kernels` PyTorch picks
deterministic kernels wherever it has one, and warns, naming the operation, where it has none
(adaptive pooling's backward pass, for one): a run that cannot repeat bit for bit says so, and a
model that needs such an operation still trains.
"""

from __future__ import annotations

import contextlib
import os

import torch

CUBLAS_WORKSPACE = ":4096:8"
"""cuBLAS's deterministic workspace setting (PyTorch's reproducibility notes). It must be set
before cuBLAS starts, so it stays set after the run; a value the user set is kept."""


@contextlib.contextmanager
def deterministic_kernels(device):
    """On CUDA: deterministic algorithms (a warning where an operation has none), cuDNN
    deterministic and not benchmarking; the previous settings come back on exit. On the CPU:
    nothing to do."""
    if not str(device).startswith("cuda"):
        yield
        return
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)
    cudnn = torch.backends.cudnn
    before = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        cudnn.deterministic,
        cudnn.benchmark,
    )
    torch.use_deterministic_algorithms(True, warn_only=True)
    cudnn.deterministic, cudnn.benchmark = True, False
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])
        cudnn.deterministic, cudnn.benchmark = before[2], before[3]
