"""Federations with controlled heterogeneity, named by what they vary.

The book's base federations are all label skew at one Dirichlet alpha. To ask which kinds of
heterogeneity the split rule handles, these variants of an image federation change one thing:

* ``<base>_alpha<a>``: label skew at Dirichlet alpha ``a`` (e.g. ``fmnist_alpha0.05``).
* ``<base>_<kind>``: **feature skew**: labels IID (equal random parts), and client k of K sees
  its inputs through its own transformation (``KINDS``): ``rotate`` turns every image by
  k/(K−1)·180°, ``invert`` inverts the colours of every odd-numbered client, ``noise`` adds
  Gaussian noise of standard deviation k/(K−1)·0.5 of the pixel range.
* ``<base>_<kind>_alpha<a>``: **mixed**: the base's Dirichlet(a) label skew *and* the kind's
  per-client transformation.
* ``<base>_quantity``: **quantity skew**: labels IID and inputs untouched, but the clients'
  shares of the pooled samples are drawn from Dirichlet(``QUANTITY_BETA``) (at least
  ``QUANTITY_FLOOR`` each), the quantity-based skew of NIID-Bench (Li et al., 2022). Only the
  sizes differ between clients, so it has no ``_alpha`` form.
* ``<base>_swap``: **concept shift**: labels IID and inputs untouched, but every odd-numbered
  client swaps its labels in pairs (class 0 ↔ 1, 2 ↔ 3, …): the same input means another class
  at half of the silos (their annotators follow another convention). Features are common, the
  mapping from features to labels is not. No ``_alpha`` form.

A transformation applies to a client's train, validation and test data alike: it is a property
of the silo (its scanner, its camera), not augmentation. Transformations work in the base's own
pixel scale, found from the data (background = the smallest value, full ink = the largest), so
a base needs no extra declaration. The names encode every parameter, so a results table, a grid
and a stored run identify the federation by its name alone.
"""

from __future__ import annotations

import math
import re
import zlib
from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.nn.functional as F

from .base import DataError, FederatedData
from .partition import iid_partition, split_clients


def _rotate(x: torch.Tensor, k: int, n_clients: int, lo: float, hi: float, seed: int):
    angle = math.radians(180.0 * k / max(n_clients - 1, 1))
    cos, sin = math.cos(angle), math.sin(angle)
    theta = torch.tensor([[cos, -sin, 0.0], [sin, cos, 0.0]], dtype=x.dtype).expand(len(x), 2, 3)
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    # Rotate the ink above the background, so the corners fill with background, not grey.
    return F.grid_sample(x - lo, grid, align_corners=False, padding_mode="zeros") + lo


def _invert(x: torch.Tensor, k: int, n_clients: int, lo: float, hi: float, seed: int):
    return lo + hi - x if k % 2 == 1 else x.clone()


def _noise(x: torch.Tensor, k: int, n_clients: int, lo: float, hi: float, seed: int):
    sigma = 0.5 * (hi - lo) * k / max(n_clients - 1, 1)
    gen = torch.Generator().manual_seed(zlib.crc32(f"{seed}/{k}/noise".encode()))
    return x + sigma * torch.randn(x.shape, generator=gen, dtype=x.dtype)


KINDS = {"rotate": _rotate, "invert": _invert, "noise": _noise}
"""Per-client input transformations ``f(x, k, K, lo, hi, seed)`` for feature skew."""

QUANTITY = "quantity"
"""The kind that changes only how many samples each client holds (labels IID)."""
QUANTITY_BETA = 0.5
"""Dirichlet concentration of the clients' shares (NIID-Bench's β = 0.5)."""
QUANTITY_FLOOR = 0.05
"""The smallest share a client may draw: every client keeps enough samples to split."""
SWAP = "swap"
"""The kind that changes what the labels mean (concept shift): odd-numbered clients swap classes
in pairs."""
LABEL_KINDS = (QUANTITY, SWAP)
"""Kinds that keep inputs untouched and labels IID across clients (so no ``_alpha`` form)."""

_SUFFIX = re.compile(
    rf"^(?:_(?P<kind>{'|'.join([*KINDS, *LABEL_KINDS])}))?(?:_alpha(?P<alpha>[^_]+))?$"
)


@dataclass(frozen=True)
class Variant:
    """A heterogeneity variant: base federation, feature-skew kind (or None), alpha (or None)."""

    name: str
    base: str
    kind: str | None
    alpha: float | None

    @property
    def label_skew(self) -> bool:
        return self.alpha is not None


def variant_name(base: str, kind: str | None = None, alpha: float | None = None) -> str:
    """The name of a variant, e.g. ``variant_name("fmnist", "rotate", 0.1)``."""
    name = base + (f"_{kind}" if kind else "") + (f"_alpha{alpha:g}" if alpha is not None else "")
    parse_variant(name, (base,))  # validates
    return name


def parse_variant(name: str, bases: tuple[str, ...]) -> Variant | None:
    """The variant a name denotes over the base federations ``bases`` (those declared with
    ``skew_variants``); None for a name that is not a variant (e.g. a base name).

    Raises DataError for a variant name with a bad alpha, naming the valid range.
    """
    base, _, rest = str(name).partition("_")
    match = _SUFFIX.match("_" + rest) if base in bases and rest else None
    if not match or (match["kind"] is None and match["alpha"] is None):
        return None
    if match["kind"] in LABEL_KINDS and match["alpha"] is not None:
        what = "quantity skew" if match["kind"] == QUANTITY else "concept shift"
        raise DataError(
            f"{name!r}: {what} keeps labels IID, so it has no _alpha form; use "
            f"'{base}_{match['kind']}' ({what}) or '{base}_alpha<a>' (label skew)"
        )
    alpha = None
    if match["alpha"] is not None:
        try:
            alpha = float(match["alpha"])
        except ValueError:
            alpha = float("nan")
        if not (alpha > 0 and math.isfinite(alpha)):
            raise DataError(
                f"{name!r}: the Dirichlet alpha must be a number > 0 (valid range: alpha > 0; "
                f"0.05 is strong label skew, 10 nearly IID), got {match['alpha']!r}"
            )
    return Variant(name, base, match["kind"], alpha)


def build(variant: Variant, load, root, seed: int, params: dict, with_eval=None) -> FederatedData:
    """Build ``variant`` with its base's ``load`` at the base's sizes. ``with_eval``
    (``clients -> clients``, ``data_prep.eval_sets``) replaces the clients' evaluation sets once
    they are partitioned, before the kind's transformation or relabelling applies to them."""
    params = dict(params)
    if variant.alpha is not None:
        params["alpha"] = variant.alpha
    base = load(root, seed, **params)
    with_eval = with_eval or (lambda clients: clients)
    if variant.kind is None:
        clients = with_eval(base.clients)
        partition = f"Dirichlet(alpha={variant.alpha:g}) label skew"
    elif variant.kind == QUANTITY:
        clients = with_eval(_iid_clients(base, seed, _quantity_shares(base.n_clients, seed)))
        partition = (
            f"labels IID, client shares drawn from Dirichlet({QUANTITY_BETA:g}) (each ≥ "
            f"{QUANTITY_FLOOR:g}): quantity skew"
        )
    elif variant.kind == SWAP:
        clients = _swapped(with_eval(_iid_clients(base, seed)), base.num_classes)
        partition = (
            "labels IID (equal parts), odd-numbered clients swap classes in pairs (0 ↔ 1, "
            "2 ↔ 3, …): concept shift"
        )
    else:
        clients = base.clients if variant.label_skew else _iid_clients(base, seed)
        partition = (
            f"Dirichlet(alpha={variant.alpha:g}) label skew"
            if variant.label_skew
            else "labels IID (a seeded permutation of the pooled samples, equal parts)"
        )
        bounds = _bounds(clients)
        clients = _transformed(with_eval(clients), variant.kind, seed, bounds)
    feature = (
        f"; feature skew '{variant.kind}' (client k of K transformed, see data_prep.skew.KINDS)"
        if variant.kind in KINDS
        else ""
    )
    return FederatedData(
        name=variant.name,
        clients=clients,
        num_classes=base.num_classes,
        input_shape=base.input_shape,
        model=base.model,
        class_names=base.class_names,
        source=base.source,
        notes=f"Variant {variant.name!r} of {variant.base}: {partition}{feature}. Base: "
        + base.notes,
        params={
            **base.params,
            "variant": variant.name,
            "kind": variant.kind,
            "alpha": variant.alpha,
        },
    )


def _iid_clients(base: FederatedData, seed: int, shares: np.ndarray | None = None):
    """The base's samples pooled and re-split IID into as many clients: equal parts, or parts of
    the given ``shares`` of the pool (quantity skew)."""
    x = torch.cat([torch.cat([c.x_train, c.x_val, c.x_test]) for c in base.clients])
    y = torch.cat([torch.cat([c.y_train, c.y_val, c.y_test]) for c in base.clients])
    rng = np.random.default_rng([seed, zlib.crc32(b"iid")])
    if shares is None:
        parts = iid_partition(len(y), base.n_clients, rng)
    else:
        cuts = np.round(np.cumsum(shares)[:-1] * len(y)).astype(int)
        parts = [np.sort(part) for part in np.split(rng.permutation(len(y)), cuts)]
    return split_clients(x, y, parts, rng, [c.name for c in base.clients])


def _swapped(clients, num_classes: int):
    """Odd-numbered clients relabel class y as its pair partner y ^ 1 (an odd last class of
    an odd number of classes keeps its label)."""
    pair = torch.arange(num_classes) ^ 1
    pair[pair >= num_classes] = num_classes - 1
    out = []
    for k, c in enumerate(clients):
        if k % 2 == 1:
            c = replace(
                c, **{f"y_{s}": pair[getattr(c, f"y_{s}")] for s in ("train", "val", "test")}
            )
        out.append(c)
    return out


def _quantity_shares(n_clients: int, seed: int) -> np.ndarray:
    """Seeded Dirichlet(``QUANTITY_BETA``) shares of the pool, redrawn until each is at least
    ``QUANTITY_FLOOR`` (a client with a handful of samples has no validation or test split)."""
    if n_clients * QUANTITY_FLOOR > 1:
        raise DataError(
            f"quantity skew needs at most {int(1 / QUANTITY_FLOOR)} clients (each keeps a share ≥ "
            f"{QUANTITY_FLOOR:g}); this federation has {n_clients}"
        )
    rng = np.random.default_rng([seed, zlib.crc32(b"quantity")])
    while True:
        shares = rng.dirichlet(np.full(n_clients, QUANTITY_BETA))
        if shares.min() >= QUANTITY_FLOOR:
            return shares


def _bounds(clients) -> tuple[float, float]:
    """The federation's pixel scale: (background, full ink), its smallest and largest value."""
    every = torch.cat([torch.cat([c.x_train, c.x_val, c.x_test]) for c in clients])
    return float(every.min()), float(every.max())


def _transformed(clients, kind: str, seed: int, bounds: tuple[float, float]):
    """Client k's data through the kind's transformation, on the scale ``bounds`` (taken
    before any evaluation set was replaced, so a client's training data never depends on it)."""
    lo, hi = bounds
    fn = KINDS[kind]
    out = []
    for k, c in enumerate(clients):
        new = {
            f"x_{s}": fn(getattr(c, f"x_{s}"), k, len(clients), lo, hi, seed + 7919 * i)
            for i, s in enumerate(("train", "val", "test"))
        }
        out.append(replace(c, **{name: t.contiguous() for name, t in new.items()}))
    return out
