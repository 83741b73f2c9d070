"""Model zoo. Every model declares its layer units in forward order.

A *layer unit* is a direct child module whose name is listed in ``model.units``; partial
federation (PLayer-FL, FedBABU, FedLP, ...) speaks only in units and prefixes of units, never in
substring matches of parameter names (the authors' substring matching is fragile, appendix §10.5).
"""

from __future__ import annotations

import torch
from torch import nn


class UnitModel(nn.Module):
    """Base class: subclasses set ``units`` (forward order) and build one child per unit."""

    units: tuple[str, ...] = ()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for name in self.units:
            x = getattr(self, name)(x)
        return x


def _init_weights(model: nn.Module) -> None:
    """Kaiming-normal weights and zero biases, as in the authors' models (appendix §3)."""
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            nn.init.kaiming_normal_(m.weight)
            nn.init.zeros_(m.bias)


def _conv_block(c_in: int, c_out: int, kernel: int, pool: bool) -> nn.Sequential:
    layers = [nn.Conv2d(c_in, c_out, kernel, padding=kernel // 2), nn.ReLU()]
    if pool:
        layers.append(nn.MaxPool2d(2))
    return nn.Sequential(*layers)


class FMNISTCNN(UnitModel):
    """The paper's FMNIST CNN: three 5×5 conv units, global average pool, fc1, fc2.

    ``width`` scales the channels (64, 128, 256 at width 1.0); the quick profile uses a
    narrower net with the same five units so it fits a 2-core CPU.
    """

    units = ("layer1", "layer2", "layer3", "fc1", "fc2")

    def __init__(self, num_classes: int = 10, in_channels: int = 1, width: float = 1.0):
        super().__init__()
        c1, c2, c3 = (max(1, round(c * width)) for c in (64, 128, 256))
        hidden = max(1, round(100 * width)) if width < 1 else 100
        self.layer1 = _conv_block(in_channels, c1, 5, pool=True)
        self.layer2 = _conv_block(c1, c2, 5, pool=True)
        self.layer3 = nn.Sequential(
            *_conv_block(c2, c3, 5, pool=True), nn.AdaptiveAvgPool2d(1), nn.Flatten()
        )
        self.fc1 = nn.Sequential(nn.Linear(c3, hidden), nn.ReLU())
        self.fc2 = nn.Linear(hidden, num_classes)
        _init_weights(self)


class HeartMLP(UnitModel):
    """The paper's Heart MLP: fc1–fc3 with ReLU (50, 20, 20 hidden units) and the head fc4."""

    units = ("fc1", "fc2", "fc3", "fc4")

    def __init__(self, num_classes: int = 5, in_features: int = 10, width: float = 1.0):
        super().__init__()
        h1, h2, h3 = (max(1, round(h * width)) for h in (50, 20, 20))
        self.fc1 = nn.Sequential(nn.Linear(in_features, h1), nn.ReLU())
        self.fc2 = nn.Sequential(nn.Linear(h1, h2), nn.ReLU())
        self.fc3 = nn.Sequential(nn.Linear(h2, h3), nn.ReLU())
        self.fc4 = nn.Linear(h3, num_classes)
        _init_weights(self)


class DigitsCNN(UnitModel):
    """A small CNN for scikit-learn's 8×8 digits: two 3×3 conv units, fc1, fc2."""

    units = ("conv1", "conv2", "fc1", "fc2")

    def __init__(self, num_classes: int = 10, in_channels: int = 1, width: float = 1.0):
        super().__init__()
        c1, c2 = (max(1, round(c * width)) for c in (16, 32))
        self.conv1 = _conv_block(in_channels, c1, 3, pool=False)
        self.conv2 = nn.Sequential(*_conv_block(c1, c2, 3, pool=True), nn.Flatten())
        self.fc1 = nn.Sequential(nn.Linear(c2 * 16, 64), nn.ReLU())
        self.fc2 = nn.Linear(64, num_classes)
        _init_weights(self)


MODELS = {"fmnist_cnn": FMNISTCNN, "heart_mlp": HeartMLP, "digits_cnn": DigitsCNN}


def build_model(
    name: str, num_classes: int, input_shape: tuple[int, ...], width: float, seed: int
) -> UnitModel:
    """Build a model with seeded weights, without touching the global RNG.

    The same ``seed`` gives bit-identical initial weights, so every algorithm of a run starts
    from the same model (the authors' code does not do this, appendix §10.1 item 5).
    """
    if name not in MODELS:
        raise ValueError(f"Unknown model {name!r}; available: {sorted(MODELS)}.")
    channels_or_features = input_shape[0]
    kwarg = "in_features" if name == "heart_mlp" else "in_channels"
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return MODELS[name](num_classes=num_classes, width=width, **{kwarg: channels_or_features})
