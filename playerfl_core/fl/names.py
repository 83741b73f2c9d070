"""The algorithms' display names: the one place a name a reader sees is made.

Low in the tree (cut out of :mod:`playerfl_core.book.style`, which re-exports them) because
both verdicts (``stats.claims``' reasons are read by people) and figures use them. Presentation
only: nothing here changes what a run computes, and the code fingerprint does not cover it.
"""

from __future__ import annotations

from playerfl_core.fl.algorithms.prefix import parse_prefix_name

ALGORITHM_NAMES = {
    "local": "Local",
    "fedavg": "FedAvg",
    "fedprox": "FedProx",
    "pfedme": "pFedMe",
    "ditto": "Ditto",
    "finetune": "Fine-tuning after FedAvg",
    "fedbabu": "FedBABU",
    "fedlp": "FedLP",
    "fedlama": "FedLAMA",
    "pfedla": "pFedLA",
    "playerfl": "PLayer-FL",
    "playerfl_random": "PLayer-FL-Random",
}
"""Display name of every registered algorithm (``playerfl_core.fl.algorithms.ALGORITHMS``)."""


def algorithm_label(name: str) -> str:
    """Display name of an algorithm: 'PLayer-FL', 'Fine-tuning after FedAvg', 'prefix p = 2';
    an unknown name is returned unchanged (e.g. a combined label such as 'Local = FedAvg')."""
    p = parse_prefix_name(name)
    if p is not None:
        return f"prefix p = {p}"
    return ALGORITHM_NAMES.get(name, name)


def tied_text(names) -> str:
    """Algorithms that share a place, by display name: 'Ditto', or 'Ditto and PLayer-FL-Random
    (tied)', so that naming one never hides the others."""
    labels = [algorithm_label(n) for n in names]
    if len(labels) < 2:
        return "".join(labels)
    return f"{', '.join(labels[:-1])} and {labels[-1]} (tied)"
