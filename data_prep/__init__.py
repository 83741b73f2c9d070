"""Real federated datasets as ready-split tensors: `load("heart")`, `load("fmnist")`, ...

Kept independent of the training engine so data can be inspected, tested and swapped
without touching training code.

- ``registry``: name -> federation declaration, and the one entry point ``load``
- ``federation``: the declaration of a federation: everything known about one dataset
- ``base``: containers and file helpers every dataset module shares
- ``partition``: a pool of samples into clients, each client into train/val/test
- ``skew``: federations with controlled heterogeneity, named by what they vary
- ``eval_sets``: larger evaluation sets drawn from images no client trains on
- ``augment``: training-time image augmentation on the device
- ``idx``: reading the MNIST family's idx files
- ``text``: WordPiece tokens and word embeddings for the text federations
- ``prepare``: fetch, unpack or check every dataset's raw files once
- ``preregistered``: the federations and seeds of the pre-registered split-rule test
- ``heart``: UCI Heart Disease, four hospitals as clients
- ``digits``: scikit-learn's 8x8 handwritten digits
- ``fmnist``: Fashion-MNIST with Dirichlet label skew
- ``emnist``: EMNIST byclass with Dirichlet label skew
- ``cifar10``: CIFAR-10 with Dirichlet label skew
- ``isic2019``: Fed-ISIC-2019 dermoscopy images, four centres as clients
- ``sent140``: Sentiment140, single users' tweets as clients
- ``mimic3``: MIMIC-III clinical notes, four diagnosis groups as clients

May import: nothing of the engine or its wings (the ground floor). Every wing may import it.
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
