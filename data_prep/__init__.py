"""Real federated datasets as ready-split tensors: `load("heart")`, `load("fmnist")`, ...

Kept independent of the training engine so data can be inspected, tested and swapped
without touching training code.
"""

from .base import ClientData, DataError, FederatedData, data_root
from .registry import available_datasets, load

__all__ = [
    "ClientData",
    "DataError",
    "FederatedData",
    "available_datasets",
    "data_root",
    "load",
]
