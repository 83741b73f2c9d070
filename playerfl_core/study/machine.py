"""Which machine computed a number: the facts that decide a float32 run's last bits.

Float32 training is bit-identical only with the same instruction set, kernel libraries, versions
and thread count. :func:`fingerprint` records those facts with every stored run, archive and
executed chapter; :func:`key` condenses them: equal keys should agree bit for bit, others only
statistically.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import re
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch

UNKNOWN = "unknown"
"""The key of a run stored before machines were recorded."""

ISA_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile")
"""CPU features that select different kernels in MKL, oneDNN or ATen."""

BIT_ENV = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA")
"""Environment variables that change which kernels run, hence the last bits."""


def _cpuinfo() -> dict:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:  # not Linux: the platform module's word is all there is
        return {"model": platform.processor() or UNKNOWN, "vendor": UNKNOWN, "flags": []}
    first = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        name, _, value = line.partition(":")
        first[name.strip()] = value.strip()
    flags = set(first.get("flags", "").split())
    return {
        "model": first.get("model name", platform.processor() or UNKNOWN),
        "vendor": first.get("vendor_id", UNKNOWN),
        "flags": [f for f in ISA_FLAGS if f in flags],
    }


def _library(pattern: str, config: str) -> str:
    found = re.search(pattern, config)
    return found.group(1) if found else UNKNOWN


@functools.cache
def _static() -> dict:
    """The facts that cannot change within a process (read once)."""
    config = torch.__config__.show()
    cpu = _cpuinfo()
    return {
        "cpu": cpu["model"],
        "vendor": cpu["vendor"],
        "isa": cpu["flags"],
        "arch": platform.machine(),
        "system": platform.system(),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "blas": _library(r"BLAS_INFO=(\w+)", config),
        "mkl": _library(r"Math Kernel Library Version ([\w.\-]+)", config),
        "onednn": _library(r"MKL-DNN v([\w.]+)", config),
        "versions": {
            "python": sys.version.split()[0],
            "torch": torch.__version__,
            "numpy": np.__version__,
        },
    }


def fingerprint(threads: int | None = None) -> dict:
    """This machine's facts and key, with the thread count a run uses (default: torch's)."""
    facts = {
        **_static(),
        "threads": int(threads if threads else torch.get_num_threads()),
        "env": {k: os.environ[k] for k in BIT_ENV if os.environ.get(k)},
    }
    facts["key"] = key(facts)
    return facts


def key(facts: dict | str | None) -> str:
    """12 hex digits naming everything in ``facts`` that decides last bits; :data:`UNKNOWN`
    for a record without facts (stored before machines were recorded). A key is its own key."""
    if not facts:
        return UNKNOWN
    if isinstance(facts, str):
        return facts
    if "key" in facts and "cpu" not in facts:  # a record that kept the key alone
        return str(facts["key"])
    decisive = {k: facts.get(k) for k in ("cpu", "isa", "arch", "torch_cpu_capability", "blas")}
    decisive.update(
        mkl=facts.get("mkl"),
        onednn=facts.get("onednn"),
        torch=(facts.get("versions") or {}).get("torch"),
        threads=facts.get("threads"),
        env=facts.get("env") or {},
    )
    return hashlib.sha256(json.dumps(decisive, sort_keys=True).encode()).hexdigest()[:12]


def describe(facts: dict | None) -> str:
    """One line for people: CPU (instruction set, MKL, oneDNN), torch, threads [key]."""
    if not facts:
        return "an unrecorded machine (stored before machines were recorded)"
    threads = facts.get("threads")
    env = "".join(f", {k}={v}" for k, v in sorted((facts.get("env") or {}).items()))
    return (
        f"{facts.get('cpu', UNKNOWN)} ({facts.get('torch_cpu_capability', UNKNOWN)}, MKL "
        f"{facts.get('mkl', UNKNOWN)}, oneDNN {facts.get('onednn', UNKNOWN)}{env}), torch "
        f"{(facts.get('versions') or {}).get('torch', UNKNOWN)}, {threads} "
        f"thread{'s' if threads != 1 else ''} [{key(facts)}]"
    )


def perturbation() -> dict[str, str]:
    """Settings that move a run's last bits on this machine the way another CPU would (another ATen
    kernel set, MKL's compatible path); ``make test`` runs nbval under them."""
    current = torch.backends.cpu.get_cpu_capability()  # native, or what the env already chose
    return {
        "ATEN_CPU_CAPABILITY": "default" if current == "AVX2" else "avx2",
        "MKL_CBWR": "COMPATIBLE",
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m playerfl_core.study.machine``: this machine in one line; ``--perturbation``: the
    settings of :func:`perturbation` as shell assignments; ``--json``: every fact."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--perturbation"]:
        print(" ".join(f"{k}={v}" for k, v in perturbation().items()))
    elif args == ["--json"]:
        print(json.dumps(fingerprint(), indent=1))
    elif not args:
        print(describe(fingerprint()))
    else:
        usage = "usage: python -m playerfl_core.study.machine [--perturbation | --json]"
        print(usage, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


@contextmanager
def torch_threads(threads: int | None):
    """``threads`` torch threads within the block (None: as they are), the previous count after."""
    previous = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def one_thread():
    """One torch thread, in a worker or not: a run's last bits do not depend on where it ran."""
    return torch_threads(1)
