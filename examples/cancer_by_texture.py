"""A federation of your own, in one file: breast-cancer biopsies split by tissue texture.

scikit-learn ships the Wisconsin Diagnostic Breast Cancer data (569 fine-needle aspirates, 30
image features each, malignant or benign). It has no hospital column, so the four clients are
the quartiles of one recorded attribute, the cells' *mean texture*: four clinics that each see a
different range of tissue. Malignancy rises with texture (8 % of the smoothest quarter, 66 % of
the coarsest), so the clients differ in both features and labels, as real sites do.

Use it with any chapter (``-p dataset_module examples/cancer_by_texture.py -p dataset cancer``)
or the CLI (``playerfl grid --dataset-module examples/cancer_by_texture.py --datasets cancer``).
"""

from __future__ import annotations

import numpy as np
import torch

from data_prep import FederatedData
from data_prep.federation import Federation
from data_prep.partition import split_clients


def load(root, seed: int, n_clients: int = 4) -> FederatedData:
    """Standardised features (train statistics would need the split first; the 30 features are
    measurements on comparable scales, so the pooled z-score is what a site would publish),
    clients by quantiles of mean texture, a seeded 64/16/20 split per client."""
    from sklearn.datasets import load_breast_cancer

    bunch = load_breast_cancer()
    x = bunch.data.astype(np.float32)
    x = (x - x.mean(0)) / x.std(0)
    texture = bunch.data[:, list(bunch.feature_names).index("mean texture")]
    edges = np.quantile(texture, np.linspace(0, 1, n_clients + 1)[1:-1])
    site = np.searchsorted(edges, texture, side="right")
    parts = [np.flatnonzero(site == k) for k in range(n_clients)]
    rng = np.random.default_rng(seed)
    names = [f"texture_q{k + 1}" for k in range(n_clients)]
    return FederatedData(
        name="cancer",
        clients=split_clients(
            torch.from_numpy(x), torch.from_numpy(bunch.target), parts, rng, names
        ),
        num_classes=2,
        input_shape=(30,),
        class_names=["malignant", "benign"],
        source="scikit-learn load_breast_cancer (UCI Wisconsin Diagnostic Breast Cancer)",
        notes=f"{n_clients} clients by quantiles of 'mean texture'; z-scored features.",
        params={"n_clients": n_clients},
    )


FEDERATION = Federation(
    name="cancer",
    load=load,
    model="mlp",
    label="Breast cancer by texture",
    training={"quick": {"rounds": 20, "batch_size": 32, "lr": 1e-2}},
    lr_grid={"quick": (3e-2, 1e-2, 3e-3)},
    seconds_per_run=0.5,
)
