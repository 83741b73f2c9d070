"""Model zoo. Every model declares its layer units in forward order.

A *layer unit* is a direct child module whose name is listed in ``model.units``; partial
federation (PLayer-FL, FedBABU, FedLP, ...) speaks only in units and prefixes of units, never in
substring matches of parameter names (the authors' substring matching is fragile, appendix §10.5).
"""

from __future__ import annotations

import math

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
            if m.bias is not None:
                nn.init.zeros_(m.bias)


def _conv_block(c_in: int, c_out: int, kernel: int, pool: bool) -> nn.Sequential:
    layers = [nn.Conv2d(c_in, c_out, kernel, padding=kernel // 2), nn.ReLU()]
    if pool:
        layers.append(nn.MaxPool2d(2))
    return nn.Sequential(*layers)


class CNN3(UnitModel):
    """``cnn3``, the paper's FMNIST/EMNIST CNN: three 5×5 conv units, global average pool, fc1,
    fc2. Any image size works (global pooling).

    ``width`` scales the channels (64, 128, 256 at width 1.0); the quick profile uses a
    narrower net with the same five units so it fits a 2-core CPU.
    """

    units = ("layer1", "layer2", "layer3", "fc1", "fc2")

    def __init__(self, num_classes: int, input_shape: tuple[int, ...], width: float = 1.0):
        super().__init__()
        in_channels = input_shape[0]
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


class MLP(UnitModel):
    """``mlp``, the paper's Heart MLP: fc1–fc3 with ReLU (50, 20, 20 hidden units) and the head
    fc4, on inputs flattened to ``prod(input_shape)`` features."""

    units = ("fc1", "fc2", "fc3", "fc4")

    def __init__(self, num_classes: int, input_shape: tuple[int, ...], width: float = 1.0):
        super().__init__()
        in_features = math.prod(input_shape)
        h1, h2, h3 = (max(1, round(h * width)) for h in (50, 20, 20))
        self.fc1 = nn.Sequential(nn.Linear(in_features, h1), nn.ReLU())
        self.fc2 = nn.Sequential(nn.Linear(h1, h2), nn.ReLU())
        self.fc3 = nn.Sequential(nn.Linear(h2, h3), nn.ReLU())
        self.fc4 = nn.Linear(h3, num_classes)
        _init_weights(self)


class SmallCNN(UnitModel):
    """``small_cnn``, for small images such as scikit-learn's 8×8 digits: two 3×3 conv units
    (the second pools by 2), fc1 (64), fc2."""

    units = ("conv1", "conv2", "fc1", "fc2")

    def __init__(self, num_classes: int, input_shape: tuple[int, ...], width: float = 1.0):
        super().__init__()
        in_channels, height, width_px = input_shape
        c1, c2 = (max(1, round(c * width)) for c in (16, 32))
        self.conv1 = _conv_block(in_channels, c1, 3, pool=False)
        self.conv2 = nn.Sequential(*_conv_block(c1, c2, 3, pool=True), nn.Flatten())
        self.fc1 = nn.Sequential(nn.Linear(c2 * (height // 2) * (width_px // 2), 64), nn.ReLU())
        self.fc2 = nn.Linear(64, num_classes)
        _init_weights(self)


class CNN5Pad2(UnitModel):
    """``cnn5_pad2``, the paper's CIFAR CNN (reference §3.2): five 3×3 conv units with the
    authors' padding 2 (each conv grows the map by 2 pixels), dropout 0.3, global average pool,
    fc1, fc2."""

    units = ("layer1", "layer2", "layer3", "layer4", "layer5", "fc1", "fc2")

    def __init__(self, num_classes: int, input_shape: tuple[int, ...], width: float = 1.0):
        super().__init__()
        in_channels = input_shape[0]
        c = [in_channels] + [max(1, round(k * width)) for k in (64, 128, 256, 512, 512)]
        pools = (False, True, False, True, False)
        for i, pool in enumerate(pools):
            layers = [nn.Conv2d(c[i], c[i + 1], 3, padding=2), nn.ReLU()]
            if pool:
                layers.append(nn.MaxPool2d(2))
            layers.append(nn.Dropout(0.3))
            if i == len(pools) - 1:
                layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
            setattr(self, f"layer{i + 1}", nn.Sequential(*layers))
        hidden = max(1, round(100 * width)) if width < 1 else 100
        self.fc1 = nn.Sequential(nn.Linear(c[-1], hidden), nn.ReLU())
        self.fc2 = nn.Linear(hidden, num_classes)
        _init_weights(self)


class CNN5(UnitModel):
    """``cnn5``, the paper's ISIC CNN (reference §3.3): five 3×3 conv units (the last three pool
    and drop out 0.2), global average pool, fc1 (256), fc2. Any input size works (global
    pooling)."""

    units = ("layer1", "layer2", "layer3", "layer4", "layer5", "fc1", "fc2")

    def __init__(self, num_classes: int, input_shape: tuple[int, ...], width: float = 1.0):
        super().__init__()
        in_channels = input_shape[0]
        c = [in_channels] + [max(1, round(k * width)) for k in (32, 64, 128, 256, 512)]
        for i in range(5):
            layers = [nn.Conv2d(c[i], c[i + 1], 3, padding=1), nn.ReLU()]
            if i >= 2:
                layers += [nn.MaxPool2d(2), nn.Dropout(0.2)]
            if i == 4:
                layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
            setattr(self, f"layer{i + 1}", nn.Sequential(*layers))
        hidden = max(1, round(256 * width))
        self.fc1 = nn.Sequential(nn.Linear(c[-1], hidden), nn.ReLU())
        self.fc2 = nn.Linear(hidden, num_classes)
        _init_weights(self)


PAD_INDEX = 0
"""Token index of padding in every text federation (``data_prep.text``): masked in attention."""


class SingleHeadAttention(nn.Module):
    """One attention head without biases; padded keys get zero weight (−∞ before softmax)."""

    def __init__(self, dim: int):
        super().__init__()
        self.key = nn.Linear(dim, dim, bias=False)
        self.query = nn.Linear(dim, dim, bias=False)
        self.value = nn.Linear(dim, dim, bias=False)

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        scores = self.query(x) @ self.key(x).transpose(-2, -1) / x.shape[-1] ** 0.5
        scores = scores.masked_fill(~keep[:, None, :], float("-inf"))
        return torch.softmax(scores, dim=-1) @ self.value(x)


def _unit_rows(weight: torch.Tensor) -> torch.Tensor:
    """Rows scaled to unit L2 norm; zero rows (padding) stay zero."""
    return weight / weight.norm(dim=1, keepdim=True).clamp_min(1e-12)


class TextTransformer(UnitModel):
    """The paper's one-block, single-head transformer (reference §3.5), padding masked.

    Input: token indices stored as float32 ``[B, T]`` (exact below 2^24; the data contract
    keeps every input float32), index ``PAD_INDEX`` = padding. The token table starts from the
    given static word embeddings (``embeddings`` ``[V, d]``, row 0 = padding = zeros), the
    position table (``max_len`` rows) from N(0, 1); both rows then L2-normalised, as the
    authors' init. x1 = x0 + proj1(attention1(x0)); x2 = x1 + resid1(fc1(x1)); fc2 reads x2 at
    position 0 ([CLS]). No LayerNorm, no dropout. ``width`` scales fc1's 4·d hidden units.
    """

    units = (
        "token_embedding_table1",
        "position_embedding_table1",
        "attention1",
        "proj1",
        "fc1",
        "resid1",
        "fc2",
    )

    def __init__(
        self,
        num_classes: int,
        input_shape: tuple[int, ...],
        embeddings: torch.Tensor,
        max_len: int,
        width: float = 1.0,
    ):
        super().__init__()
        seq_len = input_shape[0]
        if seq_len > max_len:
            raise ValueError(f"sequence length {seq_len} exceeds the position table ({max_len}).")
        vocab, dim = embeddings.shape
        self.token_embedding_table1 = nn.Embedding(vocab, dim)
        self.position_embedding_table1 = nn.Embedding(max_len, dim)
        self.attention1 = SingleHeadAttention(dim)
        self.proj1 = nn.Linear(dim, dim)
        self.fc1 = nn.Sequential(nn.Linear(dim, max(1, round(4 * dim * width))), nn.ReLU())
        self.resid1 = nn.Linear(self.fc1[0].out_features, dim)
        self.fc2 = nn.Linear(dim, num_classes)
        _init_weights(self)
        with torch.no_grad():
            self.token_embedding_table1.weight.copy_(_unit_rows(embeddings.float()))
            self.token_embedding_table1.weight[PAD_INDEX].zero_()
            nn.init.normal_(self.position_embedding_table1.weight)
            self.position_embedding_table1.weight.copy_(
                _unit_rows(self.position_embedding_table1.weight)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = x.long()
        keep = tokens != PAD_INDEX
        positions = torch.arange(tokens.shape[1], device=tokens.device).expand_as(tokens)
        h = self.token_embedding_table1(tokens) + self.position_embedding_table1(positions)
        h = h + self.proj1(self.attention1(h, keep))
        h = h + self.resid1(self.fc1(h))
        return self.fc2(h[:, 0])


MODELS: dict[str, type[UnitModel]] = {
    "mlp": MLP,
    "small_cnn": SmallCNN,
    "cnn3": CNN3,
    "cnn5": CNN5,
    "cnn5_pad2": CNN5Pad2,
    "text_transformer": TextTransformer,
}
"""Architecture name -> class ``cls(num_classes, input_shape, width, **model_args)``; a
federation's declaration names one (``data_prep.federation.Federation.model``)."""


def register_model(name: str, cls: type[UnitModel]) -> type[UnitModel]:
    """Add an architecture (a dataset file may bring its own for a new modality).

    ``cls`` subclasses :class:`UnitModel`, lists its layer ``units`` in forward order and takes
    ``(num_classes, input_shape, width=1.0)``. Registering the same class twice is harmless;
    another class under a taken name is refused.
    """
    if not (isinstance(cls, type) and issubclass(cls, UnitModel)) or not cls.units:
        raise ValueError(
            f"register_model({name!r}, ...): the model must subclass "
            "playerfl_core.fl.models.UnitModel and list its layer units in `units` (forward order)."
        )
    if MODELS.get(name, cls) is not cls:
        raise ValueError(f"model name {name!r} is taken by {MODELS[name].__name__}; pick another.")
    MODELS[name] = cls
    return cls


def build_model(
    name: str,
    num_classes: int,
    input_shape: tuple[int, ...],
    width: float,
    seed: int,
    **model_args,
) -> UnitModel:
    """Build a model with seeded weights, without touching the global RNG.

    The same ``seed`` gives bit-identical initial weights, so every algorithm of a run starts
    from the same model (the authors' code does not do this, appendix §10.1, defect 5).
    ``model_args`` are what the data fixes beyond shapes (``FederatedData.model_args``: a text
    federation's word embeddings and position-table size).
    """
    if name not in MODELS:
        raise ValueError(
            f"Unknown model {name!r}; available: {sorted(MODELS)}, or register your own with "
            "playerfl_core.fl.models.register_model."
        )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return MODELS[name](
            num_classes=num_classes, input_shape=tuple(input_shape), width=width, **model_args
        )


def model_for(data, width: float, seed: int) -> UnitModel:
    """The model ``data`` (a ``FederatedData``) trains, with seeded weights."""
    return build_model(
        data.model,
        data.num_classes,
        data.input_shape,
        width,
        seed,
        **(getattr(data, "model_args", None) or {}),
    )
